/* alloc_loop.c — the closed-loop strategy: start from pfi-aware; in each
 * round observe every job at its current power (true curve x (1 + noise),
 * power x (1 + noise)), update its curve estimate and re-optimize with the
 * oracle's optimizer on the estimates.
 *
 * Update rule: a job's estimate is its prior (the predicted curve, or the
 * straight line its predicted PFI implies: T/T_max = 1 - (1 - P/P_max)/PFI)
 * with every prior point closer than 5% of P_max to an observation replaced
 * by the observations; the uncapped point is measured and exact; isotonic
 * cleanup makes it monotone. So estimates converge to the true curve where
 * the loop has looked, which is where the optimum moves. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "strategy.h"
#include "util.h"

#define MAX_OBS 64

typedef struct est {
    double p[MAX_OBS], t[MAX_OBS];
    size_t n;
} est;

static pfi_status build_estimate(const pfi_alloc_job *j, const est *obs, pfi_curve *out,
                                 pfi_error *err)
{
    pfi_point pts[MAX_OBS + 32];
    size_t m = 0;
    double pmax = j->power_max_w;
    /* prior points */
    double pp[32], tt[32];
    size_t np = 0;
    if (j->pred_curve) {
        for (size_t k = 0; k < j->pred_curve->n && np < 32; k++) {
            pp[np] = j->pred_curve->pts[k].power_w;
            tt[np++] = j->pred_curve->pts[k].tokens_per_s;
        }
    } else {
        double pfi = j->pfi_pred > 0 ? j->pfi_pred : 1.0;
        double lo = j->power_min_w > 0 ? j->power_min_w : 0.3 * pmax;
        for (int k = 0; k <= 8; k++) {
            double p = lo + (pmax - lo) * k / 8.0;
            double t = j->tokens_per_s_max * (1 - (1 - p / pmax) / pfi);
            pp[np] = p;
            tt[np++] = t > 0 ? t : 0;
        }
    }
    for (size_t k = 0; k < np; k++) {
        int near = fabs(pp[k] - pmax) < 1e-9 * pmax;
        for (size_t q = 0; q < obs->n && !near; q++) near = fabs(pp[k] - obs->p[q]) < 0.05 * pmax;
        /* a predicted curve can be flat in power (isotonic pooling): keep one point per power */
        for (size_t q = 0; q < m && !near; q++) near = fabs(pp[k] - pts[q].cap_w) < 1e-9 * pmax;
        if (!near) pts[m++] = (pfi_point){pp[k], pp[k], tt[k], NAN, NAN, 1};
    }
    for (size_t q = 0; q < obs->n; q++) {
        int dup = 0;
        for (size_t k = 0; k < m && !dup; k++) dup = pts[k].cap_w == obs->p[q];
        if (!dup && obs->p[q] < pmax * (1 - 1e-9))
            pts[m++] = (pfi_point){obs->p[q], obs->p[q], obs->t[q], NAN, NAN, 1};
    }
    pts[m++] = (pfi_point){pmax, pmax, j->tokens_per_s_max, NAN, NAN, 1};
    return pfi_curve_init(out, pts, m, err);
}

pfi_status pfi_alloc_curve_estimate(const pfi_alloc_job *j, const double *power_w,
                                    const double *tokens_per_s, size_t n, pfi_curve *out,
                                    pfi_error *err)
{
    est o;
    o.n = 0;
    for (size_t k = 0; k < n && o.n < MAX_OBS; k++) {
        o.p[o.n] = power_w[k];
        o.t[o.n++] = tokens_per_s[k];
    }
    return build_estimate(j, &o, out, err);
}

/* the closed loop, with each round's SLA violations (viols: rounds + 1, or NULL) */
static pfi_status closed_loop(const pfi_alloc_job *jobs, size_t n, double budget_w,
                              const pfi_alloc_opts *o, int rounds, double noise_rel, uint64_t seed,
                              pfi_alloc_out *out, pfi_alloc_result *res, double *totals,
                              size_t *viols, pfi_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].curve)
            return pfi_errorf(err, PFI_EINVAL,
                              "closed-loop simulation needs each job's true curve");
    pfi_alloc_opts po = *o;
    po.strategy = PFI_STRAT_PFI_AWARE;
    prepared pj;
    pfi_status st = prep_jobs(jobs, n, &po, 1, &pj, err);
    if (st) return st;
    double *P = malloc(n * sizeof *P);
    est *obs = calloc(n, sizeof *obs);
    pfi_alloc_job *ej = malloc(n * sizeof *ej);
    pfi_curve *curves = calloc(n, sizeof *curves);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    if (!P || !obs || !ej || !curves || !rng) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    gsl_rng_set(rng, (unsigned long)pfi_mix64(seed ^ 0xc105edULL));
    int feas;
    if ((st = water_fill(&pj, &budget_w, 1, P, &feas, err))) goto out;
    if (!feas) hold_budget(&pj, jobs, NULL, budget_w, P);
    if (totals) totals[0] = true_total(&pj, P, viols, jobs);
    for (int r = 1; r <= rounds && !st; r++) {
        /* observe at the current powers */
        for (size_t i = 0; i < n; i++) {
            if (obs[i].n == MAX_OBS) continue;
            double t = jc_at(&pj.jc[i], P[i]) / pj.scale[i];
            obs[i].p[obs[i].n] = P[i] * (1 + gsl_ran_gaussian_ziggurat(rng, noise_rel));
            obs[i].t[obs[i].n] = t * (1 + gsl_ran_gaussian_ziggurat(rng, noise_rel));
            obs[i].n++;
        }
        for (size_t i = 0; i < n && !st; i++) {
            pfi_curve_dispose(&curves[i]);
            st = build_estimate(&jobs[i], &obs[i], &curves[i], err);
            ej[i] = jobs[i];
            ej[i].pred_curve = &curves[i];
        }
        if (st) break;
        pfi_alloc_opts co = *o;
        co.strategy = PFI_STRAT_CURVE_AWARE;
        prepared pc;
        if ((st = prep_jobs(ej, n, &co, 1, &pc, err))) break;
        st = envelope_greedy(&pc, pc.belief, &budget_w, 1, P, NULL, &feas, NULL, err);
        if (!st && !feas) hold_budget(&pc, ej, NULL, budget_w, P);
        prep_free(&pc);
        if (!st && totals) totals[r] = true_total(&pj, P, viols ? viols + r : NULL, jobs);
    }
    if (!st && (out || res)) {
        pfi_alloc_result local;
        pfi_alloc_result *rr = res ? res : &local;
        memset(rr, 0, sizeof *rr);
        if (out) alloc_caps(jobs, &pj, P, o, out, rr);
        else rr->total_tokens_true = true_total(&pj, P, &rr->sla_violations, jobs);
        rr->budget_w = budget_w;
        rr->feasible = feas;
    }
out:
    if (curves)
        for (size_t i = 0; i < n; i++) pfi_curve_dispose(&curves[i]);
    free(curves);
    free(P);
    free(obs);
    free(ej);
    if (rng) gsl_rng_free(rng);
    prep_free(&pj);
    return st;
}

pfi_status pfi_alloc_closed_loop(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                 const pfi_alloc_opts *o, int rounds, double noise_rel,
                                 uint64_t seed, pfi_alloc_out *out, pfi_alloc_result *res,
                                 double *totals, pfi_error *err)
{
    return closed_loop(jobs, n, budget_w, o, rounds, noise_rel, seed, out, res, totals, NULL, err);
}

pfi_status pfi_alloc_closed_loop_rounds(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                        const pfi_alloc_opts *o, int rounds, double noise_rel,
                                        uint64_t seed, pfi_alloc_result *res, double *totals,
                                        size_t *violations, pfi_error *err)
{
    return closed_loop(jobs, n, budget_w, o, rounds, noise_rel, seed, NULL, res, totals, violations,
                       err);
}

pfi_status pfi_alloc_loop_default(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                  const pfi_alloc_opts *o, pfi_alloc_out *out,
                                  pfi_alloc_result *res, pfi_error *err)
{
    return pfi_alloc_closed_loop(jobs, n, budget_w, o, PFI_LOOP_ROUNDS, PFI_LOOP_NOISE_REL,
                                 PFI_LOOP_SEED, out, res, NULL, err);
}
