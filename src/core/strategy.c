/* strategy.c — the table of allocation strategies (strategy.h). */
#include "strategy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Eq. 2 weights (NaN or <= 0 when a job has none: pfi_alloc_check_weights) ---- */

static double weight_p_max(const pfi_alloc_job *j, int normalized)
{
    (void)normalized;
    return j->power_max_w;
}

static double weight_moe_ft(const pfi_alloc_job *j, int normalized)
{
    (void)normalized;
    return j->power_max_w * (j->moe_ft ? 2.0 : 1.0);
}

static double weight_pfi(const pfi_alloc_job *j, int normalized)
{
    /* a PFI <= 0 with T_max <= 0 must not make a positive weight */
    if (!(j->pfi_pred > 0)) return NAN;
    return j->power_max_w / (normalized ? 1.0 : j->tokens_per_s_max) * j->pfi_pred;
}

static double weight_dcp(const pfi_alloc_job *j, int normalized)
{
    (void)normalized;
    return j->dcp;
}

/* Indexed by pfi_strategy. colour: the report's strategy figures (fig. 8,
 * SLA violations) draw the oracle in 9 and the others from 0 in this order. */
static const pfi_strategy_ops table[PFI_STRAT_COUNT] = {
    [PFI_STRAT_ORACLE] = {.id = PFI_STRAT_ORACLE,
                          .name = PFI_STRAT_NAME_ORACLE,
                          .summary = "the most throughput over the measured curves (envelope "
                                     "greedy, with its certificate)",
                          .needs = PFI_NEEDS_CURVE,
                          .traits = PFI_TRAIT_CURVES,
                          .believes = PFI_BELIEVES_MEASURED,
                          .shed = PFI_SHED_ENVELOPE,
                          .fallback = PFI_STRAT_ORACLE,
                          .runs_as = PFI_STRAT_ORACLE,
                          .color = 9,
                          .allocate = pfi_alloc_oracle},
    [PFI_STRAT_EQUAL] = {.id = PFI_STRAT_EQUAL,
                         .name = PFI_STRAT_NAME_EQUAL,
                         .summary = "Eq. 2 weighted by P_max: every job sheds the same fraction",
                         .traits = PFI_TRAIT_EQ2 | PFI_TRAIT_CONTROLLER,
                         .weight = weight_p_max,
                         .weight_of = "P_max",
                         .fallback = PFI_STRAT_EQUAL,
                         .runs_as = PFI_STRAT_EQUAL,
                         .color = 0,
                         .allocate = pfi_alloc_by_weight},
    [PFI_STRAT_MOE_FT] = {.id = PFI_STRAT_MOE_FT,
                          .name = PFI_STRAT_NAME_MOE_FT,
                          .summary = "Eq. 2 weighted by P_max, twice for MoE fine-tuning",
                          .traits = PFI_TRAIT_EQ2,
                          .weight = weight_moe_ft,
                          .weight_of = "P_max",
                          .fallback = PFI_STRAT_MOE_FT,
                          .runs_as = PFI_STRAT_MOE_FT,
                          .color = 1,
                          .allocate = pfi_alloc_by_weight},
    [PFI_STRAT_PFI_AWARE] = {.id = PFI_STRAT_PFI_AWARE,
                             .name = PFI_STRAT_NAME_PFI_AWARE,
                             .summary = "Eq. 2 weighted by P_max / T_max x PFI",
                             .needs = PFI_NEEDS_PFI,
                             .traits = PFI_TRAIT_EQ2 | PFI_TRAIT_CONTROLLER,
                             .weight = weight_pfi,
                             .weight_of = "PFI",
                             .fallback = PFI_STRAT_PFI_AWARE,
                             .runs_as = PFI_STRAT_PFI_AWARE,
                             .color = 2,
                             .allocate = pfi_alloc_by_weight},
    [PFI_STRAT_DCGM] = {.id = PFI_STRAT_DCGM,
                        .name = PFI_STRAT_NAME_DCGM,
                        .summary = "Eq. 2 weighted by the raw dram_copy_product",
                        .needs = PFI_NEEDS_COLUMN,
                        .column = "dram_copy_product",
                        .traits = PFI_TRAIT_EQ2,
                        .weight = weight_dcp,
                        .weight_of = "dram_copy_product",
                        .fallback = PFI_STRAT_DCGM,
                        .runs_as = PFI_STRAT_DCGM,
                        .color = 3,
                        .allocate = pfi_alloc_by_weight},
    [PFI_STRAT_CURVE_AWARE] = {.id = PFI_STRAT_CURVE_AWARE,
                               .name = PFI_STRAT_NAME_CURVE_AWARE,
                               .summary = "the oracle's greedy on the predicted curves",
                               .needs = PFI_NEEDS_PRED_CURVE,
                               .traits = PFI_TRAIT_CURVES | PFI_TRAIT_CONTROLLER,
                               .believes = PFI_BELIEVES_PREDICTED,
                               .shed = PFI_SHED_ENVELOPE,
                               .fallback = PFI_STRAT_PFI_AWARE,
                               .runs_as = PFI_STRAT_CURVE_AWARE,
                               .color = 4,
                               .allocate = pfi_alloc_on_predicted},
    /* sweeps shed as its start, pfi-aware (the simulator runs its rounds) */
    [PFI_STRAT_CLOSED_LOOP] = {.id = PFI_STRAT_CLOSED_LOOP,
                               .name = PFI_STRAT_NAME_CLOSED_LOOP,
                               .summary = "pfi-aware, then rounds of observing each job and the "
                                          "oracle's greedy on its curve estimate",
                               .needs = PFI_NEEDS_CURVE | PFI_NEEDS_PFI | PFI_NEEDS_PRED_CURVE,
                               .traits =
                                   PFI_TRAIT_CURVES | PFI_TRAIT_CLOSED_LOOP | PFI_TRAIT_CONTROLLER,
                               .weight = weight_pfi,
                               .weight_of = "PFI",
                               .believes = PFI_BELIEVES_PREDICTED,
                               .learns = PFI_LEARNS_FIT,
                               .shed = PFI_SHED_WEIGHT,
                               .fallback = PFI_STRAT_PFI_AWARE,
                               .runs_as = PFI_STRAT_CURVE_AWARE,
                               .color = 5,
                               .allocate = pfi_alloc_loop_default},
    [PFI_STRAT_SAFE_ONLINE] = {.id = PFI_STRAT_SAFE_ONLINE,
                               .name = PFI_STRAT_NAME_SAFE_ONLINE,
                               .summary = "from equal weight with the tier floors, rounds of "
                                          "measured, pessimistic moves",
                               .needs = PFI_NEEDS_CURVE,
                               .traits = PFI_TRAIT_CLOSED_LOOP | PFI_TRAIT_CONTROLLER,
                               .learns = PFI_LEARNS_ROUNDS,
                               .fallback = PFI_STRAT_SAFE_ONLINE,
                               .runs_as = PFI_STRAT_EQUAL,
                               .color = -1,
                               .allocate = pfi_alloc_online_default},
    [PFI_STRAT_PFI_OP] = {.id = PFI_STRAT_PFI_OP,
                          .name = PFI_STRAT_NAME_PFI_OP,
                          .summary = "Eq. 2 weighted by the PFI at the operating point",
                          .needs = PFI_NEEDS_OP_CURVE,
                          .traits = PFI_TRAIT_EQ2,
                          .believes = PFI_BELIEVES_AT_OP,
                          .shed = PFI_SHED_WEIGHT_AT_CUT,
                          .fallback = PFI_STRAT_PFI_OP,
                          .runs_as = PFI_STRAT_PFI_OP,
                          .color = -1,
                          .allocate = pfi_alloc_by_weight},
};

const pfi_strategy_ops *pfi_strategy_get(pfi_strategy s)
{
    return (unsigned)s < PFI_STRAT_COUNT ? &table[s] : NULL;
}

int pfi_strategy_needs(pfi_strategy s, unsigned needs)
{
    const pfi_strategy_ops *t = pfi_strategy_get(s);
    return t && (t->needs & needs) == needs;
}

int pfi_strategy_has(pfi_strategy s, unsigned traits)
{
    const pfi_strategy_ops *t = pfi_strategy_get(s);
    return t && (t->traits & traits) == traits;
}

const char *pfi_strategy_name(pfi_strategy s)
{
    const pfi_strategy_ops *t = pfi_strategy_get(s);
    return t ? t->name : "?";
}

int pfi_strategy_parse(const char *s, pfi_strategy *out)
{
    for (int i = 0; i < PFI_STRAT_COUNT; i++)
        if (!strcmp(s, table[i].name)) {
            *out = (pfi_strategy)i;
            return 0;
        }
    return -1;
}

pfi_strategy pfi_strategy_fallback(pfi_strategy s, int missing_curve)
{
    const pfi_strategy_ops *t = pfi_strategy_get(s);
    return t && missing_curve && (t->needs & PFI_NEEDS_PRED_CURVE) ? t->fallback : s;
}

pfi_strategy pfi_strategy_runs_as(pfi_strategy s)
{
    const pfi_strategy_ops *t = pfi_strategy_get(s);
    return t ? t->runs_as : s;
}

size_t pfi_strategy_list(unsigned traits, int first, const char *sep, const char *last, char *buf,
                         size_t size)
{
    const pfi_strategy_ops *pick[PFI_STRAT_COUNT];
    size_t n = 0, len = 0;
    if (first >= 0 && pfi_strategy_has((pfi_strategy)first, traits)) pick[n++] = &table[first];
    for (int i = 0; i < PFI_STRAT_COUNT; i++)
        if (i != first && (table[i].traits & traits) == traits) pick[n++] = &table[i];
    if (size) buf[0] = 0;
    for (size_t k = 0; k < n; k++) {
        const char *between = k == 0 ? "" : k + 1 == n ? last : sep;
        int w = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0, "%s%s",
                         between, pick[k]->name);
        if (w > 0) len += (size_t)w;
    }
    return len;
}
