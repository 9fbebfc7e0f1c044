/* sweeps.c — the CLI side of sweep groups and pools (sweeps.h): reading
 * tables and model files, filters, errors printed. */
#include "sweeps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "num.h"
#include "pfi/model_file.h"

int cli_gset_load(const char *cmd, char **paths, int n, const char *gpu_model, pfi_groupset *s)
{
    memset(s, 0, sizeof *s);
    pfi_table *t = cli_read_sweeps(cmd, paths, n, gpu_model);
    if (!t) return -1;
    pfi_error err;
    if (pfi_groupset_build(t, s, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        return -1;
    }
    return 0;
}

int cli_group_match(const char *cmd, const pfi_groupset *s, const pfi_group *g, const char *filter)
{
    const char *eq = strchr(filter, '=');
    if (!eq || eq == filter) {
        cli_usage_error(cmd, "filter '%s' is not COLUMN=VALUE[,VALUE...]", filter);
        return -1;
    }
    char col[128];
    snprintf(col, sizeof col, "%.*s", (int)(eq - filter), filter);
    long c = pfi_table_col(s->t, col);
    int numeric = c >= 0 && pfi_table_coltype(s->t, (size_t)c) == PFI_COL_NUM;
    if (c < 0 && strcmp(col, "gpu_model") && strcmp(col, "group")) {
        cli_error(cmd, "filter '%s': no column '%s'", filter, col);
        return -1;
    }
    const char *v = eq + 1;
    while (1) {
        const char *comma = strchr(v, ',');
        size_t len = comma ? (size_t)(comma - v) : strlen(v);
        if (numeric) {
            double want, have = pfi_group_uncapped_mean(s->t, g, (size_t)c);
            if (pfi_parse_double(v, len, &want) == PFI_NUM_OK && have == want) return 1;
        } else {
            const char *a = pfi_groupset_attr(s, g, col);
            if (strlen(a) == len && strncmp(a, v, len) == 0) return 1;
        }
        if (!comma) return 0;
        v = comma + 1;
    }
}

int cli_group_match_all(const char *cmd, const pfi_groupset *s, const pfi_group *g, char **filters,
                        int n)
{
    for (int i = 0; i < n; i++) {
        int m = cli_group_match(cmd, s, g, filters[i]);
        if (m <= 0) return m;
    }
    return 1;
}

int cli_opt_pfi_source(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    if (pfi_pfi_source_parse(arg, value)) return pfi_opts_bad_choice(ctx, o, arg), -1;
    return 0;
}

int cli_pool_build(const char *cmd, pfi_groupset *S, const size_t *use, size_t n,
                   const pfi_pool_opts *o, pfi_pool *P)
{
    pfi_error err;
    pfi_log lg = cli_log(cmd);
    pfi_modelfile M, CM;
    int have_m = 0, have_cm = 0;
    pfi_status st = pfi_pool_init(S, use, n, P, &err);
    if (!st) st = pfi_pool_check(S, o, &err);
    if (!st && pfi_pool_needs_pfi(o) && o->pfi == PFI_PFI_PREDICTED && o->model)
        have_m = !(st = pfi_modelfile_load(o->model, &M, &err));
    if (!st) st = pfi_pool_set_pfi(P, S, o, have_m ? &M : NULL, &lg, &err);
    if (!st && (pfi_pool_needs_curves(o) || o->prior) && o->curve_model)
        have_cm = !(st = pfi_modelfile_load(o->curve_model, &CM, &err));
    if (!st) st = pfi_pool_set_curves(P, S, o, have_cm ? &CM : NULL, &err);
    if (have_m) pfi_modelfile_dispose(&M);
    if (have_cm) pfi_modelfile_dispose(&CM);
    if (st) cli_error(cmd, "%s", err.msg);
    return st ? -1 : 0;
}
