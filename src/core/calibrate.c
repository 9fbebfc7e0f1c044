/* calibrate.c — per-group calibration of the reconstruction (see
 * calibrate.h). Eq. 1 falls as phi rises (a more compute-bound job loses
 * more throughput per watt), so phi is found by bisection for a target;
 * for table-9 groups an outer search over sm_w (which moves the uncapped
 * operating point relative to the voltage knee, and so the 500/600 W
 * ratios against the 300/400 W ones) matches the 4-cap PFI. */
#include "calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/pfi.h"

pfi_status pfi_recon_group_pfi(const pfi_recon_group *g, const pfi_synth_opts *o, double *pfi_own,
                               double *pfi4, pfi_error *err)
{
    pfi_point pts[PFI_RECON_MAX_CAPS];
    for (int i = 0; i < g->ncaps; i++) {
        pfi_run_summary s;
        pfi_status st = pfi_synth_summary(g, i, o, &s, err);
        if (st) return st;
        pts[i] = (pfi_point){g->caps_w[i],  s.power_w,          s.tokens_per_s,
                             s.power_w_sem, s.tokens_per_s_sem, 1};
        pfi_run_summary_dispose(&s);
    }
    pfi_curve c;
    pfi_status st = pfi_curve_init(&c, pts, (size_t)g->ncaps, err);
    if (st) return st;
    pfi_eq1_result r;
    pfi_eq1(&c, &r);
    *pfi_own = r.pfi;
    *pfi4 = NAN;
    if (g->ncaps == 6) {
        static const double sub[] = {200, 500, 600, 700};
        pfi_curve c4;
        if (pfi_curve_subgrid(&c, sub, 4, &c4, NULL) == PFI_OK) {
            pfi_eq1(&c4, &r);
            *pfi4 = r.pfi;
            pfi_curve_dispose(&c4);
        }
    }
    pfi_curve_dispose(&c);
    return PFI_OK;
}

/* set phi, sm_w and re-derive the priors that depend on them */
static void set_params(pfi_recon_group *g, double phi, double sm_w)
{
    g->job.phi = phi;
    g->job.sm_w = sm_w;
    pfi_recon_apply_priors(g);
}

/* bisection on phi for Eq. 1 = target at fixed sm_w; returns the PFIs at the solution */
static pfi_status solve_phi(pfi_recon_group *g, const pfi_synth_opts *o, double sm_w, double target,
                            double *p_own, double *p4, pfi_error *err)
{
    double lo = 0.03, hi = 0.995, a, b;
    pfi_status st;
    for (int it = 0; it < 30; it++) {
        double mid = 0.5 * (lo + hi);
        set_params(g, mid, sm_w);
        if ((st = pfi_recon_group_pfi(g, o, &a, &b, err))) return st;
        if (isnan(a) || a > target) lo = mid; /* too flexible: more compute-bound */
        else hi = mid;
    }
    set_params(g, 0.5 * (lo + hi), sm_w);
    return pfi_recon_group_pfi(g, o, p_own, p4, err);
}

static int family_of(const pfi_recon_group *g)
{
    return (strcmp(g->arch, "moe") == 0) * 2 + (strcmp(g->task, "ft") == 0);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

pfi_status pfi_calibrate_all(pfi_recon *r, const pfi_synth_opts *o, pfi_log *log, pfi_error *err)
{
    pfi_synth_opts fast = *o;
    fast.metric_mask = PFI_SYNTH_POWER_ONLY;
    double fam_sm[4][64];
    int nfam[4] = {0};
    pfi_status st;
    /* pass 1: groups with a 4-cap target: search sm_w, bisect phi */
    for (size_t i = 0; i < r->n; i++) {
        pfi_recon_group *g = &r->g[i];
        if (isnan(g->pfi4_target)) continue;
        double best_e = INFINITY, best_sm = 1300, best_phi = 0.5;
        for (int pass = 0; pass < 2; pass++) {
            double lo = pass ? best_sm - 40 : 700, hi = pass ? best_sm + 40 : 2300,
                   step = pass ? 5 : 50;
            for (double sm = lo; sm <= hi + 1e-9; sm += step) {
                double a, b;
                if ((st = solve_phi(g, &fast, sm, g->pfi_target, &a, &b, err))) return st;
                double e = fmax(fabs(a - g->pfi_target), fabs(b - g->pfi4_target));
                if (e < best_e) {
                    best_e = e;
                    best_sm = sm;
                    best_phi = g->job.phi;
                }
            }
        }
        set_params(g, best_phi, best_sm);
        g->calibrated = 1;
        int f = family_of(g);
        if (strcmp(g->gpu_model, "H200") == 0 && nfam[f] < 64) fam_sm[f][nfam[f]++] = best_sm;
        pfi_warnf(log, "calibrated %s (%s): phi %.4f sm_w %.0f (max |error| %.4f)", g->group,
                  g->gpu_model, best_phi, best_sm, best_e);
    }
    double all[256];
    int nall = 0;
    for (int f = 0; f < 4; f++)
        for (int k = 0; k < nfam[f]; k++) all[nall++] = fam_sm[f][k];
    double overall = 1300;
    if (nall) {
        qsort(all, (size_t)nall, sizeof *all, cmp_d);
        overall = all[nall / 2];
    }
    /* pass 2: the others with their family's median sm_w */
    for (size_t i = 0; i < r->n; i++) {
        pfi_recon_group *g = &r->g[i];
        if (!isnan(g->pfi4_target)) continue;
        int f = family_of(g);
        double sm = overall;
        if (nfam[f]) {
            qsort(fam_sm[f], (size_t)nfam[f], sizeof(double), cmp_d);
            sm = fam_sm[f][nfam[f] / 2];
        }
        double a, b;
        if ((st = solve_phi(g, &fast, sm, g->pfi_target, &a, &b, err))) return st;
        if (fabs(a - g->pfi_target) > 0.005) {
            /* the family's SM power cannot reach the target with any phi:
             * take the sm_w nearest the family's that can */
            double best_e = fabs(a - g->pfi_target), best_sm = sm, best_phi = g->job.phi;
            for (int k = 1; k <= 32 && best_e > 0.005; k++)
                for (int sgn = -1; sgn <= 1; sgn += 2) {
                    double s2 = sm + sgn * 40.0 * k;
                    if (s2 < 500 || s2 > 3000) continue;
                    if ((st = solve_phi(g, &fast, s2, g->pfi_target, &a, &b, err))) return st;
                    if (fabs(a - g->pfi_target) < best_e) {
                        best_e = fabs(a - g->pfi_target);
                        best_sm = s2;
                        best_phi = g->job.phi;
                    }
                }
            set_params(g, best_phi, best_sm);
            sm = best_sm;
            double b2;
            if ((st = pfi_recon_group_pfi(g, &fast, &a, &b2, err))) return st;
        }
        g->calibrated = 1;
        pfi_warnf(log, "calibrated %s (%s): phi %.4f sm_w %.0f (PFI %.4f, target %.2f)", g->group,
                  g->gpu_model, g->job.phi, sm, a, g->pfi_target);
    }
    return PFI_OK;
}
