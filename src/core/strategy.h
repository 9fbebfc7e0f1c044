/* strategy.h — the allocation strategies as one table, modelled on the GPU
 * backends' pfi_gpu_ops (src/runtime/gpu_internal.h): per strategy its
 * name, what each job must bring (the sweep table's columns behind it),
 * its traits, how the allocator treats it, and its entry point for one
 * allocation. The CLI's choices and help, the controller's configuration,
 * the report's legends, the pool and the allocator read it instead of
 * testing strategies one by one. Internal to pfi (not installed); the
 * public names stay pfi_strategy_name / pfi_strategy_parse (pfi/alloc.h).
 *
 * Files (docs/allocation.md, "Files"): strategy.c holds the table;
 * alloc_base.c the machinery every strategy shares (job curves, prepared
 * workloads, the envelope greedy, water-filling, the hard budget, caps);
 * alloc.c, alloc_loop.c and alloc_online.c the entry points on top of it
 * (one allocation, the closed loop, safe-online), alloc_exact.c branch and
 * bound. The entry points call alloc_base.c, never each other; pfi_allocate
 * reaches them through the table. */
#ifndef PFI_STRATEGY_H
#define PFI_STRATEGY_H

#include <stddef.h>

#include "pfi/alloc.h"

/* The names, as the CLI, the configuration and the CSVs spell them. */
#define PFI_STRAT_NAME_ORACLE "oracle"
#define PFI_STRAT_NAME_EQUAL "equal"
#define PFI_STRAT_NAME_MOE_FT "moe-ft-weighted"
#define PFI_STRAT_NAME_PFI_AWARE "pfi-aware"
#define PFI_STRAT_NAME_DCGM "dcgm"
#define PFI_STRAT_NAME_CURVE_AWARE "curve-aware"
#define PFI_STRAT_NAME_CLOSED_LOOP "closed-loop"
#define PFI_STRAT_NAME_SAFE_ONLINE "safe-online"
#define PFI_STRAT_NAME_PFI_OP "pfi-op"
/* Every name in pfi_strategy order, SEP between them: a constant, for the
 * option tables that help, man page and completions are generated from
 * (PFI_STRATEGY_NAMES("|") is an option's choices). test_strategy checks it
 * against the table. */
#define PFI_STRATEGY_NAMES(SEP)                                                                    \
    PFI_STRAT_NAME_ORACLE SEP PFI_STRAT_NAME_EQUAL SEP PFI_STRAT_NAME_MOE_FT SEP                   \
        PFI_STRAT_NAME_PFI_AWARE SEP PFI_STRAT_NAME_DCGM SEP PFI_STRAT_NAME_CURVE_AWARE SEP        \
            PFI_STRAT_NAME_CLOSED_LOOP SEP PFI_STRAT_NAME_SAFE_ONLINE SEP PFI_STRAT_NAME_PFI_OP
/* the bit set of every strategy (pfi_allocsim_opts.strategies, pfi_pool_opts.strategies) */
#define PFI_STRAT_ALL ((1u << PFI_STRAT_COUNT) - 1)

/* What each job must bring (pfi_alloc_job's fields; the pool's columns). */
enum {
    PFI_NEEDS_CURVE = 1u << 0,      /* its measured curve (curve): the oracle optimizes it, the
                                       closed loop's and safe-online's simulations measure it */
    PFI_NEEDS_PFI = 1u << 1,        /* a PFI (pfi_pred): predicted, or measured (--pfi) */
    PFI_NEEDS_PRED_CURVE = 1u << 2, /* a predicted curve (pred_curve): a curve model */
    PFI_NEEDS_OP_CURVE = 1u << 3,   /* a curve to read the PFI at the operating point from: the
                                       predicted one, or the measured one (op_pfi_true) */
    PFI_NEEDS_COLUMN = 1u << 4,     /* the raw column pfi_strategy_ops.column (dcp) */
};

/* Traits. */
enum {
    PFI_TRAIT_EQ2 = 1u << 0,         /* sheds by Eq. 2: in proportion to a weight, water-filled */
    PFI_TRAIT_CURVES = 1u << 1,      /* maximizes throughput over curves (the oracle's greedy) */
    PFI_TRAIT_CLOSED_LOOP = 1u << 2, /* online: learns from measurements, round by round */
    PFI_TRAIT_CONTROLLER = 1u << 3,  /* pfi-controller runs it (no measured curve needed) */
};

/* The curve a strategy optimizes on (prep_jobs builds it as pj->belief). */
typedef enum pfi_belief {
    PFI_BELIEVES_NOTHING = 0, /* a weight alone */
    PFI_BELIEVES_MEASURED,    /* the true curve: SLA floors exact */
    PFI_BELIEVES_PREDICTED,   /* the predicted curve: SLA floors with sla_curve_margin */
    PFI_BELIEVES_AT_OP,       /* the predicted curve (or none with op_pfi_true), read only for
                                 the PFI at the operating point: SLA floors by the ratio rule */
} pfi_belief;

/* How a sweep over budgets sheds (strategy_sweep, the simulator's path). */
typedef enum pfi_shed {
    PFI_SHED_WEIGHT = 0,    /* water-filling by the Eq. 2 weight */
    PFI_SHED_WEIGHT_AT_CUT, /* water-filling by a weight recomputed at each cut (pfi-op) */
    PFI_SHED_ENVELOPE,      /* the envelope greedy on the believed curves */
} pfi_shed;

/* How the controller learns online (its learners: the rows of
 * src/daemon/controller/ctl_learn.c, one per way, not per strategy): a new
 * learning strategy that learns as one of these is a row of strategy.c. */
typedef enum pfi_learning {
    PFI_LEARNS_NOTHING = 0, /* allocates on what `believes` names, each period afresh */
    PFI_LEARNS_FIT,         /* observes each job at its settled caps and fits a curve estimate
                               (the predicted curve its prior): closed-loop */
    PFI_LEARNS_ROUNDS,      /* rounds of measured, pessimistic moves (pfi_online_*) set the
                               jobs' targets each period: safe-online */
} pfi_learning;

typedef pfi_status (*pfi_strategy_allocate_fn)(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                               const pfi_alloc_opts *o, pfi_alloc_out *out,
                                               pfi_alloc_result *res, pfi_error *err);

typedef struct pfi_strategy_ops {
    pfi_strategy id;
    const char *name;
    const char *summary; /* how it splits a cut, one line */
    unsigned needs;      /* PFI_NEEDS_* */
    const char *column;  /* PFI_NEEDS_COLUMN: the sweep-table column it weights by */
    unsigned traits;     /* PFI_TRAIT_* */
    /* the Eq. 2 weight of job j (NULL: none; pfi-op's is per cut, pfi_op_weight),
     * and what it is taken from, for messages ("P_max", "PFI", ...) */
    double (*weight)(const pfi_alloc_job *j, int normalized);
    const char *weight_of;
    pfi_belief believes;
    pfi_learning learns; /* online, in the controller (PFI_TRAIT_CLOSED_LOOP: not NOTHING) */
    pfi_shed shed;
    /* online (the controller): what runs instead when a job lacks what this
     * strategy needs (a predicted curve): itself when nothing does */
    pfi_strategy fallback;
    /* what the controller's one-shot allocation (pfi_pc_allocate) runs for
     * it: closed-loop runs curve-aware on its curve estimates, safe-online
     * its reference (equal weight with the tier floors; its rounds are
     * pfi_online_*); every other strategy itself */
    pfi_strategy runs_as;
    int color; /* the report's colour index in the strategy figures; -1: not drawn there */
    pfi_strategy_allocate_fn allocate; /* entry point: one allocation (pfi_allocate) */
} pfi_strategy_ops;

/* the table's row of s, NULL when s is no strategy */
const pfi_strategy_ops *pfi_strategy_get(pfi_strategy s);
/* s has every bit of needs / traits */
int pfi_strategy_needs(pfi_strategy s, unsigned needs);
int pfi_strategy_has(pfi_strategy s, unsigned traits);

/* The controller's choice for one allocation. fallback: s's fallback when
 * some job lacks what s needs online (missing_curve: a job without a
 * predicted curve), else s. runs_as: what a one-shot allocation runs for s.
 * A period or a trigger plan allocates with
 * pfi_strategy_runs_as(pfi_strategy_fallback(configured, missing_curve)). */
pfi_strategy pfi_strategy_fallback(pfi_strategy s, int missing_curve);
pfi_strategy pfi_strategy_runs_as(pfi_strategy s);

/* The strategies with every bit of traits, in table order, joined by sep
 * with last before the final one ("a, b or c"); first (a strategy, or -1)
 * leads. Returns the length snprintf would (buf may be truncated). */
size_t pfi_strategy_list(unsigned traits, int first, const char *sep, const char *last, char *buf,
                         size_t size);

/* ---- the entry points (pfi_strategy_ops.allocate) ---- */

/* The closed loop of pfi_allocate: these rounds, this noise, this seed. */
enum { PFI_LOOP_ROUNDS = 5, PFI_LOOP_SEED = 1 };
#define PFI_LOOP_NOISE_REL 0.005 /* the observations' noise, relative */
/* safe-online's simulation in pfi_allocate: pfi_online_opts_default's rounds, this seed */
enum { PFI_ONLINE_SEED = 1 };

/* alloc.c: the oracle (every job's measured curve), the oracle's greedy on
 * the predicted curves (curve-aware), and one budget of strategy_sweep
 * (Eq. 2 strategies and pfi-op) */
pfi_status pfi_alloc_oracle(const pfi_alloc_job *jobs, size_t n, double budget_w,
                            const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res,
                            pfi_error *err);
pfi_status pfi_alloc_on_predicted(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                  const pfi_alloc_opts *o, pfi_alloc_out *out,
                                  pfi_alloc_result *res, pfi_error *err);
pfi_status pfi_alloc_by_weight(const pfi_alloc_job *jobs, size_t n, double budget_w,
                               const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res,
                               pfi_error *err);
/* alloc_loop.c: the closed loop (pfi_alloc_closed_loop) with every round's
 * total and SLA violations (rounds + 1 of each): what the study scores */
pfi_status pfi_alloc_closed_loop_rounds(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                        const pfi_alloc_opts *o, int rounds, double noise_rel,
                                        uint64_t seed, pfi_alloc_result *res, double *totals,
                                        size_t *violations, pfi_error *err);
/* alloc_loop.c: pfi_alloc_closed_loop with PFI_LOOP_ROUNDS, PFI_LOOP_NOISE_REL, PFI_LOOP_SEED */
pfi_status pfi_alloc_loop_default(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                  const pfi_alloc_opts *o, pfi_alloc_out *out,
                                  pfi_alloc_result *res, pfi_error *err);
/* alloc_online.c: pfi_alloc_safe_online with the default options and PFI_ONLINE_SEED */
pfi_status pfi_alloc_online_default(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                    const pfi_alloc_opts *o, pfi_alloc_out *out,
                                    pfi_alloc_result *res, pfi_error *err);

#endif
