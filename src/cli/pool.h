/* pool.h — sweep groups as allocation jobs (allocate, simulate): each
 * group's measured curve, uncapped (T_max, P_max), lowest measured power,
 * device cap limits, the PFI pfi-aware weights by (predicted: a model
 * file, or an in-sample fit of the pool as the paper did; or measured),
 * predicted curve (a curve model file, or an in-sample fit), raw
 * dram_copy_product, and whether it is MoE fine-tuning. */
#ifndef PFI_CLI_POOL_H
#define PFI_CLI_POOL_H

#include "sweeps.h"
#include "pfi/alloc.h"

typedef struct cli_pool {
    size_t n;
    pfi_alloc_job *jobs;
    int *is_ft;
    size_t *group;      /* index into the gset's groups */
    char **name;        /* "'group' (gpu_model)", the jobs' names in messages */
    pfi_curve *pred;    /* predicted curves (n == 0 when none) */
    int have_task;
} cli_pool;

/* where pfi-aware's PFI comes from (--pfi) */
typedef enum cli_pfi_source {
    CLI_PFI_PREDICTED = 0, /* a model file, or an in-sample fit (the paper) */
    CLI_PFI_MEASURED,      /* each group's own Eq. 1 PFI */
    CLI_PFI_MEASURED_ROBUST/* each group's robust PFI (verdict ok or noisy) */
} cli_pfi_source;

int cli_pfi_source_parse(const char *s, cli_pfi_source *out);
const char *cli_pfi_source_name(cli_pfi_source s);

typedef struct cli_pool_opts {
    const char *model, *curve_model; /* files, or NULL: fit in-sample */
    const char *features;            /* for in-sample fits (default dram_copy_product) */
    const char *target;              /* "pfi" or "robust" for the in-sample scalar fit */
    cli_pfi_source pfi;              /* --pfi */
    unsigned strategies;             /* bit per pfi_strategy: what the pool is built for; only
                                        what those need is required (a prediction, curves,
                                        dram_copy_product) */
} cli_pool_opts;

/* What the table lacks for strategy s, its column copied to col: 0 if it
 * has what s needs; CLI_LACK_DCP: dram_copy_product (dcgm); the in-sample
 * fit's features for a predicted PFI without --model (CLI_LACK_PFI_FIT) or
 * predicted curves without --curve-model (CLI_LACK_CURVE_FIT). */
enum { CLI_LACK_DCP = 1, CLI_LACK_PFI_FIT, CLI_LACK_CURVE_FIT };
int cli_pool_lacks(const cli_gset *S, const cli_pool_opts *o, pfi_strategy s, char *col, size_t ncol);

/* Jobs of the groups use[0..nuse); every job's PFI (when a strategy needs
 * one) is finite and positive, else a one-line error naming the groups. */
int cli_pool_build(const char *cmd, cli_gset *S, const size_t *use, size_t nuse, const cli_pool_opts *o,
                   cli_pool *P);
void cli_pool_free(cli_pool *P);

#endif
