/* power_control.h — the online control law of pfi-controller, as pure
 * functions (the controller does the I/O; tests drive these with a
 * simulated plant).
 *
 * Each control period during an event:
 *   budget(t)   the target, ramped linearly from the pre-event baseline over
 *               ramp_s after the start, and back over ramp_down_s after the end;
 *   allocation  the offline allocator (alloc.h) splits budget - fixed - I
 *               across the managed jobs (fixed: power the controller cannot
 *               steer, e.g. unreachable agents; I: the feedback term);
 *   caps        a job's per-GPU cap = its target / (GPUs x r), r the job's
 *               learned ratio of drawn power to cap while it is power-bound
 *               (starts at 0.97, updated only from power-bound samples);
 *   feedback    I += (measured - budget) when over; when under, I decays
 *               (never below 0); I is at most 30% of the budget.
 * Anti-windup: caps, not measured power, are budgeted, and I never goes
 * negative, so power a job leaves unused in an evaluation or checkpoint dip
 * is never handed to others: when training resumes the total cannot exceed
 * the budget. r is frozen while a job is not power-bound (a dip), so the dip
 * cannot raise its cap either. */
#ifndef PFI_POWER_CONTROL_H
#define PFI_POWER_CONTROL_H

#include <stddef.h>

#include "pfi/alloc.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_pc_job {
    int gpus;
    double cap_min_w, cap_max_w;  /* per GPU */
    double baseline_w;            /* pre-event aggregate power (uncapped) */
    double baseline_tokens_per_s; /* pre-event throughput (NaN: unknown) */
    double pfi_pred;              /* NaN: unknown (treated as 1) */
    const pfi_curve *pred_curve;  /* curve-aware / closed-loop (may be NULL) */
    int sla_tier;                 /* -1: none */
    /* measured this period */
    double measured_w, cap_w; /* aggregate power; current per-GPU cap */
    /* state kept across periods */
    double ratio; /* drawn / (cap x GPUs) when power-bound; 0: not learned yet */
    /* > 0: this aggregate power target instead of the allocator's (safe-online
       runs outside, in the controller); used only when every job has one.
       fixed_floor_w: its SLA floor (aggregate W; 0: none), shed to last */
    double fixed_target_w, fixed_floor_w;
} pfi_pc_job;

typedef struct pfi_pc_out {
    double target_w; /* the job's allocated aggregate power */
    double cap_w;    /* per-GPU cap to push (integer W) */
} pfi_pc_out;

/* Budget at time t of an event [start, end) with ramps, from baseline to target. */
double pfi_pc_budget(double baseline_w, double target_w, double t, double start, double end,
                     double ramp_s, double ramp_down_s);

/* Learn r from this period's measurement (power-bound: drawing >= 85% of
 * cap x GPUs); leaves r unchanged otherwise. */
void pfi_pc_learn_ratio(pfi_pc_job *j);

/* Feedback: update *integral_w from this period's total measured power. */
void pfi_pc_feedback(double *integral_w, double measured_total_w, double budget_w);

/* One allocation: budget_w for the managed jobs (fixed_w already outside
 * them, integral_w the feedback term). *feasible = 0 when even every job at
 * its lowest cap exceeds the budget (then every job gets its lowest cap).
 * With a fixed_target_w on every job the targets are those (an online
 * strategy's, computed for budget_w - fixed_w), less the feedback term and
 * any excess over budget_w - fixed_w - integral_w, shed by equal weight
 * (P_max) down to each job's fixed_floor_w, then (the budget is hard) down
 * to the lowest powers tier by tier, Flex 3 first (then *feasible = 0); the
 * caps from the learned ratios. The strategy runs as the table's runs_as
 * (strategy.h): safe-online without them as the reference (equal weight
 * with the tier floors), where it starts; closed-loop as curve-aware on the
 * curve estimates in the jobs' pred_curve. */
pfi_status pfi_pc_allocate(const pfi_pc_job *jobs, size_t n, double budget_w, double fixed_w,
                           double integral_w, const pfi_alloc_opts *o, pfi_pc_out *out,
                           int *feasible, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
