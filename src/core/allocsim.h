/* allocsim.h — the paper's allocation experiment: W workloads of J jobs
 * drawn from a pool, cluster cuts 0..40% in 1% steps, every strategy, two
 * scenarios:
 *   random      jobs drawn uniformly with replacement from the pool;
 *   production  jobs drawn with the Acme trace's task mix (Hu et al.,
 *               NSDI'24: about 94% fine-tuning / 6% pretraining by job
 *               count among training jobs; a parameter), each keeping its
 *               group's GPU count, T_max, P_max and curve.
 * Per strategy and cut: mean total throughput, deficit vs the oracle, the
 * fraction of the equal-to-oracle gap closed, throughput per job recovered
 * over equal weight, SLA violations and infeasible cuts. The oracle and the
 * proportional strategies sweep all cuts of a workload at once. */
#ifndef PFI_ALLOCSIM_H
#define PFI_ALLOCSIM_H

#include "pfi/alloc.h"
#include "pfi/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_scenario { PFI_SCEN_RANDOM = 0, PFI_SCEN_PRODUCTION = 1 } pfi_scenario;

typedef struct pfi_allocsim_opts {
    size_t workloads, jobs;   /* 500, 100 */
    double cut_max, cut_step; /* 0.40, 0.01 */
    pfi_scenario scenario;
    double ft_share; /* production mix: 0.94 */
    uint64_t seed;
    int normalized;
    unsigned strategies;     /* bit per pfi_strategy */
    double sla_mix[4];       /* share of jobs in Flex 0..3; all 0: no SLAs */
    int loop_rounds;         /* closed loop: 5 */
    double loop_noise;       /* 0.005 */
    double sla_curve_margin; /* curve-aware SLA margin (pfi_alloc_opts default) */
    int op_pfi_true;         /* pfi-op: PFI at the operating point from the true curve */
    pfi_online_opts online;  /* safe-online (rounds: 15 here) */
    /* safe-online's knowledge before the event (docs/allocation.md, "Profiles
     * and memory"): every job profiled at job start (profile: 1 by default;
     * the measurement noise of online's step_jitter and power_noise), and
     * memory_events earlier events (each at a cut drawn uniformly in 5..30%,
     * online.rounds rounds) whose measured points it keeps */
    int profile;
    pfi_profile_opts prof;
    int memory_events;
    /* the study's floor margin: SLA violations are also counted where the
     * oracle still fits every floor raised by this x T_max (0.05: the
     * profile stops 4% above a tier, learned floors keep 1%) */
    double sla_floor_margin;
} pfi_allocsim_opts;

void pfi_allocsim_opts_default(pfi_allocsim_opts *o);

typedef struct pfi_allocsim_cell {
    double mean_total;      /* over workloads */
    double sla_violations;  /* total over workloads */
    double infeasible;      /* workloads where the cut could not be met */
    double certificate_gap; /* oracle only: mean envelope gap */
    double seconds;         /* CPU time spent in this strategy (all cuts) */
} pfi_allocsim_cell;

/* Scores per strategy, cut and round (static strategies: round 0 only; the
 * closed loop and safe-online: every round). The reference is equal weight
 * with the tier floors enforced (the equal strategy), the gap of a workload
 * is the oracle's total less the reference's. */
typedef struct pfi_allocsim_round {
    double mean_total;           /* on the isotonic true curves */
    double mean_total_raw;       /* on the curves as measured */
    double sla_violations;       /* jobs below their tier, summed over workloads */
    double sla_viol_ofeas;       /* ... in workloads where the oracle is feasible */
    double viol_workloads_ofeas; /* workloads with a violation among those */
    double sla_viol_ofeas_m;     /* ... in workloads where the oracle is feasible with every
                                    floor raised by sla_floor_margin x T_max */
    double viol_workloads_ofeas_m;
    /* issue 44: the workloads whose cut is within the floors point the
     * strategy's own plan would offer (its floors fit, and no job with
     * measured points planned below its lowest one: pfi_offer's floors
     * point), and the violations among them (strict; where the oracle fits
     * the margin floors) */
    double offered_workloads, sla_viol_offered, sla_viol_offered_m;
    double infeasible;        /* workloads whose floors did not fit (budget held) */
    double over_budget;       /* workloads where even the lowest powers exceed it */
    double below_5, below_20; /* workloads below the reference - 0.05 (0.2) x their gap */
    double worst;             /* min over workloads of (total - reference) / mean gap */
} pfi_allocsim_round;

/* the most rounds of the closed loop and of safe-online a study runs
   (issue 31: 15 was too few to study convergence) */
#define PFI_SIM_MAX_ROUNDS 100

typedef struct pfi_allocsim_result {
    size_t ncuts;
    double *cuts;
    pfi_allocsim_cell *cell;                        /* [strategy * ncuts + cut] */
    double loop_gap_closed[PFI_SIM_MAX_ROUNDS + 1]; /* closed loop: mean gap closed after
                                                        round k at the 30% cut */
    int loop_rounds;
    int max_rounds;               /* the larger of the closed loop's and safe-online's rounds */
    pfi_allocsim_round *rnd;      /* [(strategy * ncuts + cut) * (max_rounds + 1) + round] */
    int srounds[PFI_STRAT_COUNT]; /* rounds filled per strategy (0: static) */
    double mean_uncapped;         /* mean sum of T_max (normalized: of 1) */
    double *oracle_infeasible;    /* per cut: workloads where the oracle's floors do not fit */
    /* the profiles (profile on): jobs profiled, their points, the cost
     * (throughput given up on the true curve / the first hour's), points
     * measured below the tier on the true curve */
    double profiled_jobs, profile_points, profile_cost_sum, profile_cost_max;
    double profile_tier_violations, profile_jobs_all;
} pfi_allocsim_result;

/* pool[i].moe_ft and is_ft[i] (task) drive the scenarios. */
pfi_status pfi_allocsim_run(const pfi_alloc_job *pool, const int *is_ft, size_t npool,
                            const pfi_allocsim_opts *o, pfi_allocsim_result *r, pfi_error *err);
void pfi_allocsim_result_dispose(pfi_allocsim_result *r);

#ifdef __cplusplus
}
#endif
#endif
