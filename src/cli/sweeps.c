/* sweeps.c — see sweeps.h. */
#include "sweeps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "num.h"

int cli_gset_load(const char *cmd, char **paths, int n, const char *gpu_model, cli_gset *s)
{
    memset(s, 0, sizeof *s);
    s->t = cli_read_sweeps(cmd, paths, n, gpu_model);
    if (!s->t) return -1;
    pfi_error err;
    if (pfi_groups_build(s->t, &s->gs, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        pfi_table_free(s->t);
        s->t = NULL;
        return -1;
    }
    size_t ng = s->gs.n;
    s->pfi = malloc(ng * sizeof *s->pfi);
    s->robust = malloc(ng * sizeof *s->robust);
    s->verdict = malloc(ng * sizeof *s->verdict);
    if (!s->pfi || !s->robust || !s->verdict) {
        cli_error(cmd, "out of memory");
        cli_gset_free(s);
        return -1;
    }
    pfi_robust_opts ro;
    pfi_robust_opts_default(&ro);
    for (size_t i = 0; i < ng; i++) {
        pfi_eq1_result r;
        pfi_eq1(&s->gs.g[i].curve, &r);
        s->pfi[i] = r.pfi;
        pfi_robust_result rr;
        pfi_robust(&s->gs.g[i].curve, &ro, &rr);
        s->verdict[i] = rr.verdict;
        s->robust[i] = (rr.verdict == PFI_VERDICT_OK || rr.verdict == PFI_VERDICT_NOISY) ? rr.pfi_robust : NAN;
    }
    return 0;
}

void cli_gset_free(cli_gset *s)
{
    pfi_groups_free(&s->gs);
    pfi_table_free(s->t);
    free(s->pfi);
    free(s->robust);
    free(s->verdict);
    memset(s, 0, sizeof *s);
}

const char *cli_group_attr(const cli_gset *s, const pfi_group *g, const char *col)
{
    if (!strcmp(col, "gpu_model")) return g->gpu_model;
    if (!strcmp(col, "group")) return g->name;
    if (!strcmp(col, "arch")) return g->arch;
    if (!strcmp(col, "task")) return g->task;
    if (!strcmp(col, "model")) return g->model;
    if (!strcmp(col, "split")) return g->split;
    return pfi_group_text(s->t, g, col);
}

int cli_group_match(const char *cmd, const cli_gset *s, const pfi_group *g, const char *filter)
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
            const char *a = cli_group_attr(s, g, col);
            if (strlen(a) == len && strncmp(a, v, len) == 0) return 1;
        }
        if (!comma) return 0;
        v = comma + 1;
    }
}

int cli_group_match_all(const char *cmd, const cli_gset *s, const pfi_group *g, char **filters, int n)
{
    for (int i = 0; i < n; i++) {
        int m = cli_group_match(cmd, s, g, filters[i]);
        if (m <= 0) return m;
    }
    return 1;
}

const double *cli_gset_target(const cli_gset *s, const char *name)
{
    if (!strcmp(name, "pfi")) return s->pfi;
    if (!strcmp(name, "robust")) return s->robust;
    return NULL;
}
