/* event_kind.c — the table of grid event kinds and what reads it
 * (event_kind.h). */
#include "event_kind.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_obj.h"

static double reduction_cut(const pfi_grid_event *ev, const double *level_cut_pct, double base_w)
{
    (void)level_cut_pct, (void)base_w;
    return ev->reduction_pct;
}

static double level_cut(const pfi_grid_event *ev, const double *level_cut_pct, double base_w)
{
    (void)base_w;
    return ev->level >= 0 && ev->level < PFI_EVENT_LEVELS ? level_cut_pct[ev->level] : NAN;
}

static double target_kw_w(const pfi_grid_event *ev)
{
    return ev->target_kw * 1000;
}

const pfi_event_kind_row pfi_event_kinds[] = {
    {PFI_EV_REDUCTION, "reduction_pct", 0, offsetof(pfi_grid_event, reduction_pct), 0, 90,
     PFI_J_LO_OPEN, "expected a number in (0, 90]", "%g%%", .cut_pct = reduction_cut},
    {PFI_EV_TARGET_KW, "target_kw", 0, offsetof(pfi_grid_event, target_kw), 0,
     PFI_EVENT_MAX_TARGET_KW, PFI_J_HI_OPEN, "expected 0 or more kW, below 1e6", "%g kW",
     .target_w = target_kw_w},
    {PFI_EV_LEVEL, "level", 1, offsetof(pfi_grid_event, level), 0, PFI_EVENT_LEVELS - 1, 0,
     "expected an integer 0..3", "level %g", .cut_pct = level_cut},
};
const size_t pfi_event_nkinds = sizeof pfi_event_kinds / sizeof *pfi_event_kinds;

const pfi_event_kind_row *pfi_event_kind_of(pfi_event_kind kind)
{
    for (size_t k = 0; k < pfi_event_nkinds; k++)
        if (pfi_event_kinds[k].kind == kind) return &pfi_event_kinds[k];
    return NULL;
}

double pfi_grid_event_value(const pfi_grid_event *ev)
{
    const pfi_event_kind_row *r = pfi_event_kind_of(ev->kind);
    if (!r) return NAN;
    const char *field = (const char *)ev + r->offset;
    if (r->integer) {
        int v;
        memcpy(&v, field, sizeof v);
        return v;
    }
    double v;
    memcpy(&v, field, sizeof v);
    return v;
}

void pfi_grid_event_set(pfi_grid_event *ev, pfi_event_kind kind, double v)
{
    const pfi_event_kind_row *r = pfi_event_kind_of(kind);
    if (!r) return;
    ev->kind = kind;
    char *field = (char *)ev + r->offset;
    if (r->integer) {
        int i = isfinite(v) && fabs(v) < 1e9 ? (int)v : -1; /* out of range: the check says so */
        memcpy(field, &i, sizeof i);
    } else {
        memcpy(field, &v, sizeof v);
    }
}

void pfi_event_kind_list(char *buf, size_t n, const char *sep, const char *last)
{
    size_t used = 0;
    if (n) buf[0] = 0;
    for (size_t k = 0; k < pfi_event_nkinds && used < n; k++) {
        const char *before = k == 0 ? "" : k + 1 == pfi_event_nkinds ? last : sep;
        int w = snprintf(buf + used, n - used, "%s%s", before, pfi_event_kinds[k].name);
        if (w < 0) return;
        used += (size_t)w;
    }
}

pfi_event_cut pfi_grid_event_cut(const pfi_grid_event *ev, const double *level_cut_pct,
                                 double base_w)
{
    pfi_event_cut c = {NAN, NAN};
    const pfi_event_kind_row *r = pfi_event_kind_of(ev->kind);
    if (!r) return c;
    if (r->target_w) {
        c.target_w = r->target_w(ev);
        c.cut_pct = base_w > 0 ? 100 * (1 - c.target_w / base_w) : NAN;
    } else {
        c.cut_pct = r->cut_pct(ev, level_cut_pct, base_w);
        c.target_w = base_w * (1 - c.cut_pct / 100);
    }
    return c;
}
