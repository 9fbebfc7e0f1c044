/* pool.h — sweep groups as allocation jobs (allocate, simulate): each
 * group's measured curve, uncapped (T_max, P_max), lowest measured power,
 * device cap limits, predicted PFI (a model file, or an in-sample fit of
 * the pool as the paper did), predicted curve (a curve model file, or an
 * in-sample fit), raw dram_copy_product, and whether it is MoE fine-tuning. */
#ifndef PFI_CLI_POOL_H
#define PFI_CLI_POOL_H

#include "groupset.h"
#include "pfi/alloc.h"

typedef struct cli_pool {
    size_t n;
    pfi_alloc_job *jobs;
    int *is_ft;
    size_t *group;      /* index into the gset's groups */
    pfi_curve *pred;    /* predicted curves (n == 0 when none) */
    int have_task;
} cli_pool;

typedef struct cli_pool_opts {
    const char *model, *curve_model; /* files, or NULL: fit in-sample */
    const char *features;            /* for in-sample fits (default dram_copy_product) */
    const char *target;              /* "pfi" or "robust" for the in-sample scalar fit */
    int want_curves;                 /* build predicted curves */
} cli_pool_opts;

int cli_pool_build(const char *cmd, cli_gset *S, const size_t *use, size_t nuse, const cli_pool_opts *o,
                   cli_pool *P);
void cli_pool_free(cli_pool *P);

#endif
