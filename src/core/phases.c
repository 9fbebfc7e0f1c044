/* phases.c — phase segmentation of a run's job-level series and the
 * cap check (see protocol.h). */
#include <math.h>

#include "pfi/protocol.h"

static int sustained_at(const double *util_min, size_t n, size_t i, const pfi_protocol_opts *o)
{
    size_t w = o->sustain_scrapes > 0 ? (size_t)o->sustain_scrapes : 1;
    if (i + w > n) return 0;
    for (size_t k = i; k < i + w; k++)
        if (!(util_min[k] > o->util_train_pct)) return 0;
    return 1;
}

void pfi_phases_segment(const double *fb, const double *util_avg, const double *util_min, size_t n,
                        const pfi_protocol_opts *o, pfi_phases *p)
{
    size_t i = 0;
    if (fb)
        while (i < n && !isnan(fb[i]) && fb[i] < o->fb_warmup_mib) i++;
    p->warmup_end = i;
    if (util_avg)
        while (i < n && util_avg[i] == 0) i++;
    p->startup_end = i;
    p->has_training = 0;
    p->train_begin = p->train_end = i;
    if (!util_min) return;
    size_t w = o->sustain_scrapes > 0 ? (size_t)o->sustain_scrapes : 1;
    size_t first = n, last_end = 0;
    for (size_t k = i; k + w <= n; k++)
        if (sustained_at(util_min, n, k, o)) {
            if (first == n) first = k;
            last_end = k + w;
        }
    if (first == n) return;
    p->has_training = 1;
    p->train_begin = first;
    p->train_end = last_end;
}

pfi_phase pfi_phase_of(const pfi_phases *p, size_t i)
{
    if (i < p->warmup_end) return PFI_PHASE_WARMUP;
    if (p->has_training) {
        if (i < p->train_begin) return PFI_PHASE_STARTUP;
        if (i < p->train_end) return PFI_PHASE_TRAINING;
        return PFI_PHASE_TAIL;
    }
    if (i < p->startup_end) return PFI_PHASE_STARTUP;
    return PFI_PHASE_TAIL;
}

const char *pfi_phase_name(pfi_phase p)
{
    switch (p) {
    case PFI_PHASE_WARMUP: return "warmup";
    case PFI_PHASE_STARTUP: return "startup";
    case PFI_PHASE_TRAINING: return "training";
    case PFI_PHASE_TAIL: return "tail";
    }
    return "?";
}

int pfi_cap_check(double enforced_w, double cap_w, double tol_w)
{
    if (isnan(enforced_w)) return 0;
    return fabs(enforced_w - cap_w) <= tol_w ? 0 : -1;
}
