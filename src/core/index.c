/* index.c — per-group PFI computation behind `pfi index` (see index.h). */
#include "pfi/index.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void pfi_index_opts_default(pfi_index_opts *o)
{
    memset(o, 0, sizeof *o);
    o->want_ci = 1;
    pfi_ci_opts_default(&o->ci);
    pfi_robust_opts_default(&o->robust);
}

/* A throughput SEM of exactly 0 (e.g. a constant per-step throughput) makes
 * the CI treat that throughput as exact, collapsing the interval: say so,
 * once per group, naming its caps. */
static void warn_zero_sem(const pfi_group *g, const pfi_curve *c, const pfi_noise_opts *noise,
                          pfi_log *log)
{
    char caps[256];
    size_t len = 0, nzero = 0;
    caps[0] = '\0';
    for (size_t i = 0; i < c->n; i++) {
        const pfi_point *p = &c->pts[i];
        if (!(p->tokens_per_s_sem == 0) || pfi_point_sem_tokens(p, noise) > 0) continue;
        if (len < sizeof caps) {
            int k = snprintf(caps + len, sizeof caps - len, "%s%g", nzero ? ", " : "", p->cap_w);
            len += k > 0 ? (size_t)k : 0;
        }
        nzero++;
    }
    if (nzero)
        pfi_warnf(log,
                  "group '%s' (%s): throughput SEM is 0 at cap%s %s W (constant per-run "
                  "throughput?): the CI treats it as exact; --noise-floor sets a minimum",
                  g->name, g->gpu_model, nzero > 1 ? "s" : "", caps);
}

pfi_status pfi_index_run(const pfi_groups *gs, const pfi_index_opts *o, pfi_index_row *rows,
                         pfi_log *log, pfi_error *err)
{
    pfi_ci_ctx *ctx = NULL;
    if (o->want_ci) {
        ctx = pfi_ci_ctx_new(o->ci.resamples);
        if (!ctx)
            return pfi_errorf(err, PFI_ENOMEM, "out of memory for %zu resamples", o->ci.resamples);
    }
    memset(rows, 0, gs->n * sizeof *rows);
    pfi_status st = PFI_OK;
    for (size_t i = 0; i < gs->n && !st; i++) {
        const pfi_group *g = &gs->g[i];
        pfi_index_row *r = &rows[i];
        r->g = g;
        r->area = NAN;
        r->ci.lo = r->ci.hi = NAN;
        if (o->caps_w) {
            pfi_error e2;
            if (pfi_curve_subgrid(&g->curve, o->caps_w, o->ncaps, &r->curve, &e2) != PFI_OK) {
                pfi_warnf(log, "group '%s' (%s) skipped: %s", g->name, g->gpu_model, e2.msg);
                r->skipped = 1;
                pfi_eq1(&(pfi_curve){0, NULL}, &r->eq1);
                pfi_robust(&(pfi_curve){0, NULL}, &o->robust, &r->robust);
                continue;
            }
        } else if ((st = pfi_curve_copy(&r->curve, &g->curve, err)) != PFI_OK) {
            break;
        }
        const pfi_curve *c = &r->curve;
        if (c->n < 2)
            pfi_warnf(log, "group '%s' (%s) has no capped run (only %g W): no PFI", g->name,
                      g->gpu_model, c->pts[0].cap_w);
        pfi_eq1(c, &r->eq1);
        r->area = pfi_area(c);
        r->el_ok = pfi_elasticity(c, &r->el, NULL) == PFI_OK;
        if (ctx && c->n >= 2) {
            warn_zero_sem(g, c, &o->ci.noise, log);
            st = pfi_eq1_ci(ctx, c, &o->ci, pfi_group_key(g), &r->ci, err);
        }
        pfi_robust(c, &o->robust, &r->robust);
    }
    pfi_ci_ctx_free(ctx);
    return st;
}

void pfi_index_rows_dispose(pfi_index_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) pfi_curve_dispose(&rows[i].curve);
}
