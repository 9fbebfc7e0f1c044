/* alloc.h — splitting a cluster power cut across jobs (docs/method.md, "Splitting a cut: Eq. 2").
 *
 * Input: jobs with their uncapped (T_max, P_max), their lowest reachable
 * power P_min, and what each strategy may know (the true curve; a predicted
 * PFI; a predicted curve; raw telemetry); a budget (total aggregate GPU
 * power); optional SLA tiers. Output per job: target aggregate power, the
 * per-GPU cap from the curve's inverse map (integer W within the device
 * limits, rounded down, slack reported), expected throughput, feasibility.
 *
 * Strategies
 *   oracle       maximum of total throughput over the jobs' piecewise-linear
 *                true curves: greedy on marginal tokens/s per W over each
 *                curve's concave envelope (exact for concave curves), with a
 *                certificate (envelope total - achieved) bounding the gap on
 *                non-concave curves; pfi_alloc_exact solves those exactly by
 *                branch and bound.
 *   equal, moe-ft-weighted, pfi-aware, dcgm
 *                the paper's Eq. 2: job i sheds C_i proportional to a weight
 *                (P_max; P_max x 2 for MoE fine-tuning; P_max / T_max x PFI;
 *                the raw dram_copy_product). The pfi-aware weight is per unit
 *                of efficiency, not of size: two jobs of equal T_max/P_max and
 *                PFI shed the same watts whatever their size. A share beyond
 *                what a job can shed is clipped and the excess handed to the
 *                others in proportion to their weights (water-filling);
 *                infeasible cuts are reported, never forced.
 *   curve-aware  the oracle's optimizer on predicted curves.
 *   closed-loop  pfi-aware, then K rounds of: observe each job at its
 *                current power (the true curve plus noise), add the point to
 *                its curve estimate, re-optimize (pfi_alloc_closed_loop).
 *   safe-online  from the reference (equal weight with the tier floors),
 *                rounds of measured, pessimistic moves (pfi_online_*; below).
 *   pfi-op       Eq. 2 weighted by the PFI at the operating point,
 *                (1 - P/P_max) / (1 - T/T_max) at P = (1 - cut) P_max on the
 *                predicted curve (or the true one: op_pfi_true).
 *
 * The budget is hard for every strategy: floors that do not fit are lowered
 * tier by tier (Flex 3 first; docs/allocation.md), the result flagged
 * infeasible; only when the lowest reachable powers exceed it is it exceeded.
 *
 * SLA tiers (Emerald's field trials): Flex 0 no reduction, Flex 1 <= 10%,
 * Flex 2 <= 25%, Flex 3 <= 50% throughput loss. The oracle obeys them exactly
 * (a power floor from the true curve); predicted strategies turn them into
 * power floors from their prediction with a safety margin (below). Every
 * result counts actual violations on the true curve.
 *
 * Objective: total tokens/s, or (normalized) the sum of T/T_max, under which
 * every strategy treats T_max as 1 (pfi-aware's weight becomes P_max x PFI). */
#ifndef PFI_ALLOC_H
#define PFI_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/api.h"
#include "pfi/curve.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_strategy {
    PFI_STRAT_ORACLE = 0,
    PFI_STRAT_EQUAL,
    PFI_STRAT_MOE_FT,
    PFI_STRAT_PFI_AWARE,
    PFI_STRAT_DCGM,
    PFI_STRAT_CURVE_AWARE,
    PFI_STRAT_CLOSED_LOOP,
    PFI_STRAT_SAFE_ONLINE, /* measured marginals, safe moves (alloc_online.c) */
    PFI_STRAT_PFI_OP,      /* Eq. 2 weighted by the PFI at the operating point */
    PFI_STRAT_COUNT
} pfi_strategy;

PFI_API const char *pfi_strategy_name(pfi_strategy s);
PFI_API int pfi_strategy_parse(const char *s, pfi_strategy *out);

/* allowed throughput loss of an SLA tier (0..3); -1 = no SLA */
PFI_API double pfi_sla_loss(int tier);

/* one measured operating point of a job (a profile at job start, a round of
 * an earlier event): aggregate power and tokens/s, means with their
 * standard errors (docs/allocation.md, "Profiles and memory") */
typedef struct pfi_online_point {
    double power_w, power_se_w;
    double tokens_per_s, tokens_se;
} pfi_online_point;

typedef struct pfi_alloc_job {
    int gpus;
    double tokens_per_s_max, power_max_w;
    double power_min_w;          /* lowest reachable aggregate power */
    const pfi_curve *curve;      /* true curve (oracle, evaluation); may be NULL online */
    const pfi_curve *pred_curve; /* predicted curve (curve-aware, closed-loop); may be NULL */
    double pfi_pred;             /* predicted PFI (pfi-aware) */
    double dcp;                  /* raw dram_copy_product (dcgm) */
    int moe_ft;                  /* MoE fine-tuning (moe-ft-weighted) */
    int sla_tier;                /* 0..3, or -1 */
    double cap_min_w, cap_max_w; /* per-GPU device limits for the cap mapping */
    const char *name;            /* for error messages; may be NULL (then the job's index) */
    /* what was measured of this job before the event (safe-online starts
     * from it: its floors and first moves read off these points); NULL/0:
     * nothing. Same units as tokens_per_s_max / power_max_w. */
    const pfi_online_point *known;
    size_t n_known;
    /* the prior's conservative bound (issue 44: pfi_curve_model_bound): for
     * a job with nothing measured, safe-online's first floor is where it
     * meets the tier (plus the margin) instead of the Lipschitz bound; no
     * allocation moves a job on it. NULL: none. */
    const pfi_curve *prior_curve;
} pfi_alloc_job;

typedef struct pfi_alloc_opts {
    pfi_strategy strategy;
    int normalized;          /* maximize sum T/T_max */
    double sla_ratio_floor;  /* pfi-aware SLA floors assume every per-cap ratio >= this
                                (default 0.8: below the lowest seen in training) */
    double sla_curve_margin; /* curve-aware SLA floors keep this much extra T/T_max (0.06) */
    int op_pfi_true;         /* pfi-op: the PFI at the operating point from the true curve
                                (else from the predicted curve) */
} pfi_alloc_opts;

PFI_API void pfi_alloc_opts_default(pfi_alloc_opts *o);

typedef struct pfi_alloc_out {
    double target_w;        /* aggregate power target */
    double cap_w;           /* per-GPU cap (integer W), NaN without a curve */
    double slack_w;         /* target - power at that cap (>= 0) */
    int cap_flags;          /* PFI_INV_* of the inverse map */
    double tokens_expected; /* what the strategy's own model expects */
    double tokens_true;     /* on the true curve (NaN without one) */
    int sla_violated;
} pfi_alloc_out;

typedef struct pfi_alloc_result {
    double budget_w, total_power_w;
    double total_tokens_true, total_tokens_expected;
    int feasible;           /* the budget was met within the jobs' bounds */
    double certificate_gap; /* oracle: envelope total - achieved (>= 0) */
    size_t sla_violations;
} pfi_alloc_result;

/* The Eq. 2 weight of every job is finite and positive for a proportional
 * strategy (equal, moe-ft-weighted: P_max; pfi-aware and closed-loop's
 * start: P_max / T_max x PFI; dcgm: dram_copy_product); other strategies
 * have no weight. A weight is never zeroed: a job that sheds nothing while
 * the others shed for it is a silent wrong answer. PFI_EINVAL names the
 * first jobs (name, else #index) with the value and how many in all.
 * pfi_allocate, the sweeps, the closed loop and pfi_allocsim_run check it. */
PFI_API pfi_status pfi_alloc_check_weights(const pfi_alloc_job *jobs, size_t n,
                                           const pfi_alloc_opts *o, pfi_error *err);

/* budget_w: total aggregate GPU power allowed (sum P_max x (1 - cut)). */
PFI_API pfi_status pfi_allocate(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res,
                                pfi_error *err);

/* Exact optimum over the true (possibly non-concave) curves by branch and
 * bound (small instances; max_nodes bounds the search: PFI_ERANGE if hit). */
PFI_API pfi_status pfi_alloc_exact(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                   int normalized, double *power_w, double *total, size_t max_nodes,
                                   pfi_error *err);

/* Closed loop: rounds of observe (true curve x (1 + noise)), update, re-optimize,
 * starting from pfi-aware. totals[k] = true total after round k (k = 0: the
 * pfi-aware start). */
PFI_API pfi_status pfi_alloc_closed_loop(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                         const pfi_alloc_opts *o, int rounds, double noise_rel,
                                         uint64_t seed, pfi_alloc_out *out, pfi_alloc_result *res,
                                         double *totals, pfi_error *err);

/* The closed loop's curve estimate of one job from observed (power,
 * tokens/s) points (at most 64), on its prior (pred_curve, else the line
 * of pfi_pred), through (power_max_w, tokens_per_s_max): what the online
 * controller's closed-loop strategy allocates on. */
PFI_API pfi_status pfi_alloc_curve_estimate(const pfi_alloc_job *j, const double *power_w,
                                            const double *tokens_per_s, size_t n, pfi_curve *out,
                                            pfi_error *err);

/* ---- safe-online (alloc_online.c; docs/allocation.md, "safe-online") ----
 * Starts from the reference (equal weight with the tier floors enforced) and,
 * once per control period (a round), moves watts only where the measured
 * evidence says it pays: each job's local marginal tokens/s per watt from the
 * secants between its measured operating points, with standard errors; a move
 * from job d to job r is made only if r's gain slope less z SE less a
 * curvature allowance exceeds d's loss slope plus z SE plus the allowance,
 * within a trust region. A round whose moved jobs' measured total dropped by
 * more than z SE is reverted. SLA floors are learned from measurements (a
 * Lipschitz bound from the best measured point); a measured violation forces
 * the job up. The budget is hard (tier rule of docs/allocation.md). */
typedef struct pfi_online_opts {
    int rounds;         /* simulation (pfi_alloc_safe_online): rounds (5) */
    double trust_frac;  /* trust region: largest move of one job in one round, x P_max (0.05) */
    double period_s;    /* one round = one control period, s (60) */
    double settle_s;    /* after a cap change, not measured, s (10) */
    double step_s;      /* training step time, s (1) */
    double step_jitter; /* coefficient of variation of one step's time (0.02) */
    double power_noise; /* coefficient of variation of one 1 s power average (0.02) */
    double z;           /* standard errors of caution (2) */
    double curvature;   /* allowance: |d2(T/T_max)/d(P/P_max)2| assumed at most this (0.3) */
    double lipschitz;   /* largest slope d(T/T_max)/d(P/P_max) (1.25): SLA floor bound */
    double merge_frac;  /* measurements closer than this x P_max are one point (0.005) */
    double sla_margin;  /* learned floors keep this x T_max above the tier (0.01) */
    /* below a job's lowest measured point, before a second chord measures how
     * its slope grows: the curvature allowed (3; about the 80th percentile that
     * a 5%-of-P_max step below the reference needs on Zeus A40 + V100) */
    double curvature_unverified;
} pfi_online_opts;

PFI_API void pfi_online_opts_default(pfi_online_opts *o);

typedef struct pfi_online pfi_online;

/* jobs: as for pfi_allocate (the true curve is not needed; the array is
 * copied, the curves it points to are not used after this call) */
PFI_API pfi_status pfi_online_new(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                  const pfi_alloc_opts *o, const pfi_online_opts *oo,
                                  pfi_online **out, pfi_error *err);
/* the aggregate power targets now (n values) */
PFI_API const double *pfi_online_targets(const pfi_online *s);
/* One round: the measurements of every job at its current target after the
 * cap settled (power_w: mean of 1 s averages; tokens_per_s: mean over steps;
 * their standard errors), the budget now; writes the next targets. A
 * budget changed by more than 0.1% restarts from the reference (keeping
 * what was learned). */
PFI_API pfi_status pfi_online_round(pfi_online *s, double budget_w, const double *power_w,
                                    const double *power_se_w, const double *tokens_per_s,
                                    const double *tokens_se, double *target_w, pfi_error *err);
/* A changing job set (the controller; docs/allocation.md, "The controller").
 * hold: job i stays at its target and is out of moves (an unreachable job;
 * its measurements are ignored), or back in (held 0). rebudget: a new budget
 * without a restart: the difference is spread by equal weight (P_max) over the
 * jobs not held, within their learned floors and P_max; the last move is not
 * judged. rejob: a new state for jobs (n), job i carrying what old's job
 * from[i] learned and its target (from[i] < 0: a new job, at its reference
 * share), then rebudget to budget_w; old is left as it was. */
PFI_API void pfi_online_hold(pfi_online *s, size_t i, int held);
PFI_API void pfi_online_rebudget(pfi_online *s, double budget_w);
PFI_API pfi_status pfi_online_rejob(const pfi_online *old, const pfi_alloc_job *jobs, size_t n,
                                    const long *from, double budget_w, pfi_online **out,
                                    pfi_error *err);
/* the job's learned SLA floor (aggregate W) */
PFI_API double pfi_online_floor(const pfi_online *s, size_t i);
/* the operating points job i has measured, its uncapped baseline included */
PFI_API size_t pfi_online_points(const pfi_online *s, size_t i);
/* job i's measured points (its known points and this state's rounds, the
 * uncapped baseline left out), at most max into out; returns how many:
 * what to remember for the next event (pfi_alloc_job.known) */
PFI_API size_t pfi_online_export(const pfi_online *s, size_t i, pfi_online_point *out, size_t max);
PFI_API void pfi_online_free(pfi_online *s);

/* Simulation on the true curves with the measurement model of oo (seeded):
 * totals[k] = true total after round k (k = 0: the reference). */
PFI_API pfi_status pfi_alloc_safe_online(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                         const pfi_alloc_opts *o, const pfi_online_opts *oo,
                                         int rounds, uint64_t seed, pfi_alloc_out *out,
                                         pfi_alloc_result *res, double *totals, pfi_error *err);

/* ---- fast paths for the simulator: every cut of one workload at once ---- */

/* Oracle over concave envelopes for budgets[k], k < nb (any order): totals
 * (on the true curves) and the certificate gaps; O(segments log segments + nb
 * x (log segments + jobs)). */
PFI_API pfi_status pfi_oracle_sweep(const pfi_alloc_job *jobs, size_t n, const double *budgets,
                                    size_t nb, int normalized, double *totals, double *gaps,
                                    pfi_error *err);
/* A proportional strategy for every budget: true totals, infeasible flags,
 * SLA violation counts (any of the out arrays may be NULL). */
PFI_API pfi_status pfi_prop_sweep(const pfi_alloc_job *jobs, size_t n, const double *budgets,
                                  size_t nb, const pfi_alloc_opts *o, double *totals,
                                  int *infeasible, size_t *violations, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
