/* profile.h — a job's power profile at job start (docs/allocation.md,
 * "Profiles and memory"): which power to visit next and when to stop. The
 * controller (online) and pfi simulate (the study) follow the same rule.
 *
 * The schedule steps a job's aggregate power down from its uncapped power
 * P_max in `points` equal steps to P_lo = max(the lowest reachable power,
 * low_frac x P_max), one point after another, each measured for `steps`
 * training steps after `settle_s` (the settling is not measured), then
 * back to the ceiling. Before each point the rule predicts the job's
 * tokens/s there pessimistically (the last chord's slope plus z standard
 * errors, at least the Lipschitz bound of safe-online from the uncapped
 * point) and does not go:
 *   - never for Flex 0 (tier 0) or a job without a throughput;
 *   - below its SLA tier: predicted tokens/s below (1 - loss) x T_max plus
 *     margin x T_max: the point where the prediction meets it instead,
 *     while that is a quarter step below the last ("tier floor" when not);
 *   - past its cost: the throughput given up so far plus the point's
 *     predicted loss x (settle_s + steps x step_s) over cost_max x T_max x
 *     3600 s, a fraction of the job's first hour ("cost").
 * Deep cuts (issue 44): once the schedule is done, deep_points more points
 * in equal steps from P_lo to the lowest reachable power (the admin's or
 * the hardware's minimum), under the same two rules: a job whose tier
 * allows it is measured below low_frac x P_max instead of extrapolated
 * there (the offer stops at a job's lowest measured point). */
#ifndef PFI_PROFILE_H
#define PFI_PROFILE_H

#include <stddef.h>

#include "pfi/alloc.h"
#include "pfi/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_profile_opts {
    int points;       /* powers below the ceiling (12) */
    int steps;        /* training steps measured at each (20) */
    double settle_s;  /* after each cap change, not measured (10) */
    double step_s;    /* one training step, s (1; the controller measures it) */
    double low_frac;  /* the schedule's lowest power, x P_max (0.5) */
    double cost_max;  /* throughput given up <= this x the first hour's (0.01) */
    double lipschitz; /* slope bound before a chord is measured, T_max / P_max (1.25) */
    double z;         /* standard errors of caution (2) */
    double margin;    /* a point is visited only if predicted >= tier + margin x T_max (0.04) */
    int deep_points;  /* after the schedule, points from P_lo down to the lowest reachable
                         power (4; 0: none), under the same tier and cost rules (issue 44) */
} pfi_profile_opts;

PFI_API void pfi_profile_opts_default(pfi_profile_opts *o);

typedef enum pfi_profile_stop {
    PFI_PROFILE_GO = 0,      /* *next_w: visit it */
    PFI_PROFILE_DONE,        /* every point of the schedule measured */
    PFI_PROFILE_TIER_FLOOR,  /* the next point would be below the tier */
    PFI_PROFILE_COST,        /* the next point would exceed the cost */
    PFI_PROFILE_NOT_ALLOWED, /* Flex 0, no throughput, no room below the ceiling */
} pfi_profile_stop;

PFI_API const char *pfi_profile_stop_name(pfi_profile_stop s);

/* The next power of job j's profile (j: gpus, tokens_per_s_max,
 * power_max_w, power_min_w, sla_tier) after the points measured so far
 * (done[0..ndone), in the schedule's order) and spent_token_s tokens
 * given up so far; *next_w set when PFI_PROFILE_GO. */
PFI_API pfi_profile_stop pfi_profile_next(const pfi_alloc_job *j, const pfi_profile_opts *o,
                                          const pfi_online_point *done, size_t ndone,
                                          double spent_token_s, double *next_w);

/* the seconds one point costs (settling and steps) */
PFI_API double pfi_profile_point_s(const pfi_profile_opts *o);

/* the cost allowed: cost_max x T_max x 3600, tokens */
PFI_API double pfi_profile_budget_tokens(const pfi_alloc_job *j, const pfi_profile_opts *o);

#ifdef __cplusplus
}
#endif
#endif
