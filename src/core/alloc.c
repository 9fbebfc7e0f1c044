/* alloc.c — the allocator's entry points (see alloc.h): one allocation by
 * whichever strategy the table names (strategy.h), the oracle, curve-aware
 * and the Eq. 2 strategies' own entries, and the simulator's sweeps over
 * budgets. What they share is in alloc_base.c; the closed loop and
 * safe-online are in alloc_loop.c and alloc_online.c, exact branch and
 * bound in alloc_exact.c. */
#include "pfi/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "strategy.h"

/* ---- sweeps over budgets (the simulator's fast path) ---- */

pfi_status oracle_sweep(const pfi_alloc_job *jobs, size_t n, const double *budgets, size_t nb,
                        int normalized, double *totals, double *gaps, oracle_trace *tr,
                        pfi_error *err)
{
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = PFI_STRAT_ORACLE;
    o.normalized = normalized;
    prepared pj;
    pfi_status st = prep_jobs(jobs, n, &o, 1, &pj, err);
    if (st) return st;
    double *P = malloc((nb * n + 1) * sizeof *P), *env = malloc((nb ? nb : 1) * sizeof *env);
    int *feas = malloc((nb ? nb : 1) * sizeof *feas);
    if (!P || !env || !feas) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    if (!st) st = envelope_greedy(&pj, pj.jc, budgets, nb, P, env, feas, tr, err);
    for (size_t k = 0; !st && k < nb; k++) {
        double t = true_total(&pj, P + k * n, NULL, jobs);
        if (gaps) gaps[k] = env[k] - t > 0 ? env[k] - t : 0;
        if (!feas[k]) { /* the hard budget; the envelope bound no longer applies */
            hold_budget(&pj, jobs, NULL, budgets[k], P + k * n);
            t = true_total(&pj, P + k * n, NULL, jobs);
            if (gaps) gaps[k] = 0;
        }
        if (totals) totals[k] = t;
    }
    free(P), free(env), free(feas);
    prep_free(&pj);
    return st;
}

pfi_status pfi_oracle_sweep(const pfi_alloc_job *jobs, size_t n, const double *budgets, size_t nb,
                            int normalized, double *totals, double *gaps, pfi_error *err)
{
    return oracle_sweep(jobs, n, budgets, nb, normalized, totals, gaps, NULL, err);
}

pfi_status pfi_prop_sweep(const pfi_alloc_job *jobs, size_t n, const double *budgets, size_t nb,
                          const pfi_alloc_opts *o, double *totals, int *infeasible,
                          size_t *violations, pfi_error *err)
{
    prepared pj;
    pfi_status st = prep_jobs(jobs, n, o, 1, &pj, err);
    if (st) return st;
    double *P = malloc((nb * n + 1) * sizeof *P);
    int *feas = malloc((nb ? nb : 1) * sizeof *feas);
    if (!P || !feas) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    if (!st) st = strategy_sweep(jobs, &pj, budgets, nb, o, P, feas, NULL, err);
    for (size_t k = 0; !st && k < nb; k++) {
        size_t v;
        double t = true_total(&pj, P + k * n, &v, jobs);
        if (totals) totals[k] = t;
        if (infeasible) infeasible[k] = !feas[k];
        if (violations) violations[k] = v;
    }
    free(P), free(feas);
    prep_free(&pj);
    return st;
}

/* ---- one allocation (pfi_strategy_ops.allocate) ---- */

/* prepared, allocated at budget_w, capped; with_certificate: the envelope
 * greedy on the true curves directly, its certificate reported */
static pfi_status one_allocation(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                 const pfi_alloc_opts *o, int with_certificate, pfi_alloc_out *out,
                                 pfi_alloc_result *res, pfi_error *err)
{
    prepared pj;
    pfi_status st = prep_jobs(jobs, n, o, 1, &pj, err);
    if (st) return st;
    double *P = malloc(n * sizeof *P), env = 0;
    int feas = 1;
    if (!P) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    else if (with_certificate)
        st = envelope_greedy(&pj, pj.jc, &budget_w, 1, P, &env, &feas, NULL, err);
    else st = strategy_sweep(jobs, &pj, &budget_w, 1, o, P, &feas, NULL, err);
    if (!st && !feas && with_certificate) hold_budget(&pj, jobs, NULL, budget_w, P);
    if (!st) {
        alloc_caps(jobs, &pj, P, o, out, res);
        res->budget_w = budget_w;
        res->feasible = feas;
        if (with_certificate && feas) {
            double tt = 0;
            for (size_t i = 0; i < n; i++) tt += jc_at(&pj.jc[i], P[i]);
            res->certificate_gap = env - tt > 0 ? (env - tt) : 0;
        }
    }
    free(P);
    prep_free(&pj);
    return st;
}

pfi_status pfi_alloc_oracle(const pfi_alloc_job *jobs, size_t n, double budget_w,
                            const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res,
                            pfi_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].curve)
            return pfi_errorf(err, PFI_EINVAL, "the oracle needs every job's measured curve");
    return one_allocation(jobs, n, budget_w, o, 1, out, res, err);
}

pfi_status pfi_alloc_on_predicted(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                  const pfi_alloc_opts *o, pfi_alloc_out *out,
                                  pfi_alloc_result *res, pfi_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].pred_curve)
            return pfi_errorf(err, PFI_EINVAL,
                              "%s needs a predicted curve for every job (a curve model)",
                              pfi_strategy_name(o->strategy));
    return one_allocation(jobs, n, budget_w, o, 0, out, res, err);
}

pfi_status pfi_alloc_by_weight(const pfi_alloc_job *jobs, size_t n, double budget_w,
                               const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res,
                               pfi_error *err)
{
    return one_allocation(jobs, n, budget_w, o, 0, out, res, err);
}

pfi_status pfi_allocate(const pfi_alloc_job *jobs, size_t n, double budget_w,
                        const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res,
                        pfi_error *err)
{
    memset(res, 0, sizeof *res);
    res->budget_w = budget_w;
    if (n == 0) return pfi_errorf(err, PFI_EINVAL, "no jobs");
    const pfi_strategy_ops *t = pfi_strategy_get(o->strategy);
    if (!t) return pfi_errorf(err, PFI_EINVAL, "no strategy %d", (int)o->strategy);
    return t->allocate(jobs, n, budget_w, o, out, res, err);
}
