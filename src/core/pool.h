/* pool.h — sweep groups as allocation jobs (pfi allocate, pfi simulate):
 * each group's measured curve, uncapped (T_max, P_max), lowest measured
 * power, device cap limits, the PFI pfi-aware weights by (predicted: a
 * model, or an in-sample fit of the pool as the paper did; or measured),
 * predicted curve (a curve model, or an in-sample fit), raw
 * dram_copy_product, and whether it is MoE fine-tuning. Pure computation:
 * model files are read by the caller (model_file.h) and handed in, in the
 * order the steps below need them (pfi_pool_build runs them all). */
#ifndef PFI_POOL_H
#define PFI_POOL_H

#include <stddef.h>

#include "groupset.h"
#include "pfi/alloc.h"
#include "pfi/predictor.h" /* pfi_modelfile: core defines it; model_file.h is io's */
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_pool {
    size_t n;
    pfi_alloc_job *jobs;
    int *is_ft;
    size_t *group;    /* index into the set's groups */
    char **name;      /* "'group' (gpu_model)", the jobs' names in messages */
    pfi_curve *pred;  /* predicted curves (NULL when none) */
    pfi_curve *prior; /* the prior's bounds (NULL when none; pfi_pool_opts.prior) */
    int have_task;
} pfi_pool;

/* where pfi-aware's PFI comes from */
typedef enum pfi_pfi_source {
    PFI_PFI_PREDICTED = 0,  /* a model, or an in-sample fit (the paper) */
    PFI_PFI_MEASURED,       /* each group's own Eq. 1 PFI */
    PFI_PFI_MEASURED_ROBUST /* each group's robust PFI (verdict ok or noisy) */
} pfi_pfi_source;

/* "predicted", "measured", "measured-robust"; parse: 0, or -1 on another name */
int pfi_pfi_source_parse(const char *s, pfi_pfi_source *out);
const char *pfi_pfi_source_name(pfi_pfi_source s);

typedef struct pfi_pool_opts {
    const char *model,
        *curve_model;     /* the model files (their names in messages), or NULL: fit in-sample */
    const char *features; /* for in-sample fits (default dram_copy_product) */
    const char *target;   /* "pfi" or "robust" for the in-sample scalar fit */
    pfi_pfi_source pfi;
    unsigned strategies; /* bit per pfi_strategy: what the pool is built for; only
                            what those need is required (a prediction, curves,
                            dram_copy_product) */
    int prior;           /* each job's prior_curve: the curve model's conservative bound
                            for its features (issue 44; pfi simulate --prior) */
} pfi_pool_opts;

/* The strategies need a PFI (pfi-aware, closed-loop) / predicted curves
 * (curve-aware, closed-loop; pfi-op with a predicted PFI): the strategy
 * table's needs (strategy.h). */
int pfi_pool_needs_pfi(const pfi_pool_opts *o);
int pfi_pool_needs_curves(const pfi_pool_opts *o);

/* What the table lacks for strategy s, its column copied to col: 0 if it
 * has what s needs; PFI_POOL_LACK_COLUMN: the raw column s weights by (the
 * strategy table's column: dcgm's dram_copy_product); the in-sample fit's
 * features for a predicted PFI without a model (PFI_POOL_LACK_PFI_FIT) or
 * predicted curves without a curve model (PFI_POOL_LACK_CURVE_FIT). */
enum { PFI_POOL_LACK_COLUMN = 1, PFI_POOL_LACK_PFI_FIT, PFI_POOL_LACK_CURVE_FIT };
int pfi_pool_lacks(const pfi_groupset *S, const pfi_pool_opts *o, pfi_strategy s, char *col,
                   size_t ncol);

/* The steps, in order:
 * 1. the jobs of groups use[0..n), nothing predicted yet (*P is always
 *    valid for pfi_pool_dispose, also on failure); */
pfi_status pfi_pool_init(const pfi_groupset *S, const size_t *use, size_t n, pfi_pool *P,
                         pfi_error *err);
/* 2. one error naming what the first strategy that cannot run lacks; */
pfi_status pfi_pool_check(const pfi_groupset *S, const pfi_pool_opts *o, pfi_error *err);
/* 3. every job's PFI when a strategy weights by it: measured, the model
 *    (o->model names it; NULL: an in-sample fit), finite and positive, or
 *    an error naming the groups; features outside the model's training
 *    range are a warning; */
pfi_status pfi_pool_set_pfi(pfi_pool *P, const pfi_groupset *S, const pfi_pool_opts *o,
                            const pfi_modelfile *model, pfi_log *log, pfi_error *err);
/* 4. every job's predicted curve when a strategy needs one: the curve
 *    model (o->curve_model names it; NULL: an in-sample fit). */
pfi_status pfi_pool_set_curves(pfi_pool *P, const pfi_groupset *S, const pfi_pool_opts *o,
                               const pfi_modelfile *curve_model, pfi_error *err);
/* All four; model / curve_model as in steps 3 and 4. */
pfi_status pfi_pool_build(const pfi_groupset *S, const size_t *use, size_t n,
                          const pfi_pool_opts *o, const pfi_modelfile *model,
                          const pfi_modelfile *curve_model, pfi_pool *P, pfi_log *log,
                          pfi_error *err);
void pfi_pool_dispose(pfi_pool *P);

#ifdef __cplusplus
}
#endif
#endif
