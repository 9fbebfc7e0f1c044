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

/* a job curve in its own allocation with throughput left as measured (power made monotone in
 * cap): the raw curve that figures are reported beside; freed by jc_free */
pfi_status jc_build_raw(const pfi_curve *c, double scale, jcurve *j, pfi_error *err);
void jc_free(jcurve *j);
double jc_at(const jcurve *j, double p);
double jc_power_for(const jcurve *j, double t);
size_t jc_envelope(const jcurve *j, double lo, double hi, double *sp, double *st, size_t cap);

typedef struct prepared {
    size_t n;
    jcurve *jc;     /* true curves (n == 0 when unknown) */
    jcurve *belief; /* the strategy's curves (the oracle's: jc itself) */
    double *store;  /* the points of jc and belief */
    jcurve *raw;    /* true curves as measured (not isotonic); NULL unless asked for */
    double *floor, *hi, *weight, *scale, *tmax;
    double *lo;           /* lowest reachable power (floor without the SLA) */
    void *block;          /* jc, belief, the per-job numbers, store and scratch: one
                             allocation a workload (at 10^6 jobs a call's memory is fresh
                             pages, each a page fault) */
    void *scratch;        /* room for envelope_greedy on jc or belief (NULL: none) */
    size_t scratch_bytes; /* its size */
} prepared;

pfi_status prep_jobs(const pfi_alloc_job *jobs, size_t n, const pfi_alloc_opts *o, int want_true,
                     prepared *pj, pfi_error *err);
void prep_free(prepared *pj);
/* also the raw true curves (pj->raw) */
pfi_status prep_raw(const pfi_alloc_job *jobs, prepared *pj, pfi_error *err);
/* The hard budget: when the floors do not fit (sum floor > budget), P = the
 * floors lowered tier by tier toward the lowest reachable power, Flex 3 first,
 * then Flex 2, 1, 0, each tier in proportion to its jobs' room (floor - lo),
 * so that sum P = budget. Returns 0 when P holds the budget, -1 when even
 * every job at its lowest reachable power exceeds it (P = lo). floor: the
 * floors to start from (pj->floor when NULL). */
int hold_budget(const prepared *pj, const pfi_alloc_job *jobs, const double *floor, double budget,
                double *P);
/* raw total (measured curves) at P */
double raw_total(const prepared *pj, const double *P);
/* the pfi-op weight of job i at budget (the cut 1 - budget / sum P_max) */
double pfi_op_weight(const prepared *pj, const pfi_alloc_job *j, size_t i, double cut,
                     const pfi_alloc_opts *o);
/* sweeps with the hard budget: P[k * n + i] allocations, feasible[k] (floors fit),
 * over[k] (even the lowest reachable powers exceed the budget) */
pfi_status strategy_sweep(const pfi_alloc_job *jobs, const prepared *pj, const double *budgets,
                          size_t nb, const pfi_alloc_opts *o, double *P, int *feasible, int *over,
                          pfi_error *err);
/* which way envelope_greedy found its allocation (bench_alloc prints it) */
typedef enum oracle_path {
    ORACLE_SORTED,        /* several budgets: every segment sorted by slope */
    ORACLE_SELECT,        /* one budget: the selection on every segment (few of them) */
    ORACLE_BRACKET,       /* one budget: a sample brackets the threshold, the selection
                             runs on the segments between the brackets */
    ORACLE_BRACKET_MISSED /* one budget: the bracket missed, the selection on the segments
                             on the side it missed */
} oracle_path;
typedef struct oracle_trace {
    oracle_path path;
    size_t segments; /* of every job's envelope */
    size_t selected; /* the selection ran on these */
} oracle_trace;
/* tr may be NULL */
pfi_status envelope_greedy(const prepared *pj, const jcurve *curves, const double *budgets,
                           size_t nb, double *P, double *env_total, int *feasible, oracle_trace *tr,
                           pfi_error *err);
/* pfi_oracle_sweep with the path taken (tr may be NULL) */
pfi_status oracle_sweep(const pfi_alloc_job *jobs, size_t n, const double *budgets, size_t nb,
                        int normalized, double *totals, double *gaps, oracle_trace *tr,
                        pfi_error *err);
pfi_status water_fill(const prepared *pj, const double *budgets, size_t nb, double *P,
                      int *feasible, pfi_error *err);
double true_total(const prepared *pj, const double *P, size_t *violations,
                  const pfi_alloc_job *jobs);
pfi_status alloc_caps(const pfi_alloc_job *jobs, const prepared *pj, const double *P,
                      const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res);

/* safe-online simulated: P[r * n + i] after round r (r = 0: the reference),
 * r <= rounds; *feasible: the learned floors fit the budget at the end */
/* keep (may be NULL): every job's measured points at the end, at most
 * max per job (pts[i * max ..], n[i] of them): the memory of this event */
typedef struct online_keep {
    pfi_online_point *pts;
    size_t *n, max;
} online_keep;
pfi_status online_simulate(const pfi_alloc_job *jobs, size_t n, double budget_w,
                           const pfi_alloc_opts *o, const pfi_online_opts *oo, int rounds,
                           uint64_t seed, double *P, int *feasible, online_keep *keep,
                           pfi_error *err);

/* a segment of a job's concave envelope (the envelope greedy's unit) */
typedef struct seg {
    double slope, len;
    size_t job;
} seg;

/* the envelope greedy's scratch in bytes (alloc_greedy.c), for prep_jobs */
size_t greedy_scratch_bytes(size_t n, size_t cap, size_t widest);

/* a budget's shed, and its index, sorted (the envelope greedy's and water-filling's) */
typedef struct dref {
    double delta;
    size_t k;
} dref;

static inline int cmp_dref(const void *a, const void *b)
{
    double x = ((const dref *)a)->delta, y = ((const dref *)b)->delta;
    return (x > y) - (x < y);
}

#endif
