/* offer.h — what a site can shed, and at what cost to its work, before the
 * grid asks (issue 44). Pure: the caller hands each job's baseline, its
 * measured points and predicted curve, and the allocation it would make at a
 * cut (a callback: the controller's response plan); this evaluates the
 * expected loss on a grid of whole percent of the baselines and reads the
 * offer at each cost off its monotone envelope (docs/controller.md,
 * "The offer").
 *
 *   L(k) = 1 - sum_j w_j T_j(target_j(k)) / sum_j w_j T_j(base_j)
 *
 * with w_j = 1 on tokens/s when every job reports its throughput, else the
 * normalized objective (T_j as a share of its own T_max, weighted by its
 * GPUs), as pfi_pc_allocate does. T_j comes from the job's measured points
 * (profile or remembered) within their range, linearly between them and
 * its baseline; below its lowest measured point, throughput in proportion
 * to power from that point (elasticity 1: a lower bound for any concave
 * curve, so the offer errs low); a job with no measured point takes its
 * predicted curve where it has one, else the same proportional bound from
 * its baseline. */
#ifndef PFI_OFFER_H
#define PFI_OFFER_H

#include <stddef.h>

#include "pfi/alloc.h"
#include "pfi/curve.h"
#include "pfi/status.h"

#define PFI_OFFER_NCOST 5
#define PFI_OFFER_GRID_MAX 90 /* percent of the baselines: a cut's bound */
/* the costs an offer is given at, as shares of throughput: 0.5, 1, 2, 5, 10% */
extern const double pfi_offer_costs[PFI_OFFER_NCOST];

typedef struct pfi_offer_job {
    int gpus;
    double base_w;                 /* aggregate baseline power (an event starting now would take) */
    double base_tokens;            /* its throughput there; <= 0 or NaN: unknown */
    const pfi_online_point *known; /* measured points (aggregate power, tokens/s) */
    size_t nknown;
    const pfi_curve *pred; /* predicted curve (aggregate power, tokens/s); NULL: none */
} pfi_offer_job;

/* The allocation at a cut of cut_pct percent of the jobs' summed baselines:
 * each job's aggregate target power into target_w. Returns 0, 1 when the
 * cut is below a tier floor (infeasible: the floors point is passed), -1 on
 * an error. */
typedef int (*pfi_offer_alloc_fn)(void *ud, double cut_pct, double *target_w);

/* what ended the grid: the floors point */
typedef enum pfi_offer_floor {
    PFI_OFFER_FLOOR_TIER = 0, /* the next cut breaks a tier floor (or an admin minimum) */
    PFI_OFFER_FLOOR_MEASURED, /* ... puts a measured job below its lowest measured point */
    PFI_OFFER_FLOOR_GRID,     /* PFI_OFFER_GRID_MAX reached */
} pfi_offer_floor;

typedef struct pfi_offer {
    double base_w;  /* the jobs' summed baselines */
    int floors_pct; /* the deepest whole-percent cut the allocation keeps within the floors */
    pfi_offer_floor floors_why;
    int normalized; /* the loss on the normalized objective (a job without throughput) */
    double loss[PFI_OFFER_GRID_MAX + 1]; /* L(k), k = 0..floors_pct */
    double
        measured[PFI_OFFER_GRID_MAX + 1]; /* the share of the shed at k backed by measured points */
    int cut_pct[PFI_OFFER_NCOST];         /* the offer at each cost, percent of base_w */
} pfi_offer;

/* job j's throughput at aggregate power_w as described above; *measured
 * (may be NULL) 1 when read between measured points or at the baseline */
double pfi_offer_tokens(const pfi_offer_job *j, double power_w, int *measured);

/* The largest k <= kmax such that loss[i] <= cost for every i <= k. */
int pfi_offer_envelope(const double *loss, int kmax, double cost);

/* Every grid cut from 1% until the allocation is infeasible, or puts a job
 * with measured points below its lowest one (no offer rests on a curve
 * read below what was measured: issue 44's "deep cuts without
 * extrapolation"), or 90%; then the envelope at each cost. target_w: room
 * for n doubles. */
pfi_status pfi_offer_compute(const pfi_offer_job *jobs, size_t n, pfi_offer_alloc_fn alloc,
                             void *ud, double *target_w, pfi_offer *out, pfi_error *err);

#endif
