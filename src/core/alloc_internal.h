/* alloc_internal.h — what the allocator's files share (not public API):
 * a job's curve cleaned for optimization (isotonic, strictly increasing
 * power, throughput possibly scaled by 1/T_max) and a workload prepared for
 * one strategy (allowed power domain [floor, hi], Eq. 2 weights, the curve
 * the strategy believes). */
#ifndef PFI_ALLOC_INTERNAL_H
#define PFI_ALLOC_INTERNAL_H

#include "pfi/alloc.h"

typedef struct jcurve {
    size_t n;
    double *p, *t; /* one allocation: t = p + capacity */
    double lo, hi;
} jcurve;

pfi_status jc_build(const pfi_curve *c, double scale, jcurve *j, pfi_error *err);
void jc_free(jcurve *j);
double jc_at(const jcurve *j, double p);
double jc_power_for(const jcurve *j, double t);
size_t jc_envelope(const jcurve *j, double lo, double hi, double *sp, double *st, size_t cap);

typedef struct prepared {
    size_t n;
    jcurve *jc;     /* true curves (n == 0 when unknown) */
    jcurve *belief; /* the strategy's curves (the oracle's: views of jc) */
    double *store;  /* the points of every curve above, one block */
    double *floor, *hi, *weight, *scale, *tmax;
} prepared;

pfi_status prep_jobs(const pfi_alloc_job *jobs, size_t n, const pfi_alloc_opts *o, int want_true,
                     prepared *pj, pfi_error *err);
void prep_free(prepared *pj);
pfi_status envelope_greedy(const prepared *pj, const jcurve *curves, const double *budgets,
                           size_t nb, double *P, double *env_total, int *feasible, pfi_error *err);
pfi_status water_fill(const prepared *pj, const double *budgets, size_t nb, double *P,
                      int *feasible, pfi_error *err);
double true_total(const prepared *pj, const double *P, size_t *violations,
                  const pfi_alloc_job *jobs);
pfi_status alloc_caps(const pfi_alloc_job *jobs, const prepared *pj, const double *P,
                      const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res);

#endif
