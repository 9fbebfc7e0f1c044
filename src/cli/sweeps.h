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

int cli_gset_load(const char *cmd, char **paths, int n, const char *gpu_model, pfi_groupset *s);
/* 1 match, 0 no match, -1 malformed filter (message printed) */
int cli_group_match(const char *cmd, const pfi_groupset *s, const pfi_group *g, const char *filter);
int cli_group_match_all(const char *cmd, const pfi_groupset *s, const pfi_group *g, char **filters,
                        int n);

/* ---- sweep groups as allocation jobs (allocate, simulate): the pool is
 * core (src/core/pool.h); the CLI reads the model files and prints ---- */
/* option callback: --pfi predicted|measured|measured-robust into a pfi_pfi_source */
int cli_opt_pfi_source(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value);

/* Jobs of the groups use[0..nuse), the model files read when a step needs
 * them (pfi_pool_build's order); -1 with a one-line error printed. */
int cli_pool_build(const char *cmd, pfi_groupset *S, const size_t *use, size_t nuse,
                   const pfi_pool_opts *o, pfi_pool *P);

#endif
