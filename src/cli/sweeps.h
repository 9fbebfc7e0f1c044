/* sweeps.h — what stats, fit, predict, allocate and simulate share: sweep
 * tables read into sweep groups with their targets (Eq. 1 and the robust
 * PFI; the set is core: src/core/groupset.h), and group
 * filters COLUMN=V1[,V2...] (OR within one filter, AND across filters) on
 * gpu_model, group, arch, task, model, split or any column of the group's
 * first row. */
#ifndef PFI_CLI_SWEEPS_H
#define PFI_CLI_SWEEPS_H

#include "groupset.h" /* the set itself is core: pfi_groupset */
#include "options.h"
#include "pool.h" /* and so is the pool of allocation jobs: pfi_pool */

typedef pfi_groupset cli_gset;

int cli_gset_load(const char *cmd, char **paths, int n, const char *gpu_model, cli_gset *s);
static inline void cli_gset_free(cli_gset *s) { pfi_groupset_free(s); }
/* 1 match, 0 no match, -1 malformed filter (message printed) */
int cli_group_match(const char *cmd, const cli_gset *s, const pfi_group *g, const char *filter);
int cli_group_match_all(const char *cmd, const cli_gset *s, const pfi_group *g, char **filters, int n);
/* The group's value of a text attribute ("" if none). */
static inline const char *cli_group_attr(const cli_gset *s, const pfi_group *g, const char *col) { return pfi_groupset_attr(s, g, col); }
/* The target chosen by --target: "pfi" or "robust". NULL on a bad name. */
static inline const double *cli_gset_target(const cli_gset *s, const char *name) { return pfi_groupset_target(s, name); }

/* ---- sweep groups as allocation jobs (allocate, simulate): the pool is
 * core (src/core/pool.h); the CLI reads the model files and prints ---- */
typedef pfi_pool cli_pool;
typedef pfi_pool_opts cli_pool_opts;
typedef pfi_pfi_source cli_pfi_source;
#define CLI_PFI_PREDICTED PFI_PFI_PREDICTED
#define CLI_PFI_MEASURED PFI_PFI_MEASURED
#define CLI_PFI_MEASURED_ROBUST PFI_PFI_MEASURED_ROBUST
#define CLI_LACK_DCP PFI_POOL_LACK_DCP
#define CLI_LACK_PFI_FIT PFI_POOL_LACK_PFI_FIT
#define CLI_LACK_CURVE_FIT PFI_POOL_LACK_CURVE_FIT
#define cli_pfi_source_parse pfi_pfi_source_parse
#define cli_pfi_source_name pfi_pfi_source_name
#define cli_pool_lacks pfi_pool_lacks
#define cli_pool_free pfi_pool_free
/* option callback: --pfi predicted|measured|measured-robust into a cli_pfi_source */
int cli_opt_pfi_source(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value);

/* Jobs of the groups use[0..nuse), the model files read when a step needs
 * them (pfi_pool_build's order); -1 with a one-line error printed. */
int cli_pool_build(const char *cmd, cli_gset *S, const size_t *use, size_t nuse, const cli_pool_opts *o, cli_pool *P);

#endif
