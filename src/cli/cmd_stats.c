/* cmd_stats.c — `pfi stats`: the paper's statistics on any sweep table
 * with telemetry (tables 10-13): per-feature Spearman correlations with PFI
 * (p by the t approximation, Benjamini-Hochberg q across all features), OLS
 * per feature, group tests (medians, Kruskal-Wallis, Dunn with Holm),
 * within-subgroup correlations and the leverage analysis. Long format:
 * section, subset, statistic, feature, value, n, p, q. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/features.h"
#include "pfi/metrics.h"
#include "pfi/stats.h"
#include "pfi/sweep.h"
#include "sweeps.h"
#include "util.h"

typedef struct stats_args {
    cli_out out;
    const char *target, *grouping, *key, *gpu_model;
    pfi_opt_list only;
} stats_args;

#define OPT_T stats_args
static const pfi_opt stats_options[] = {
    OPT_STRING_OF(0, "target", target, "pfi|robust", "PFI of Eq. 1 (default) or pfi's robust PFI"),
    OPT_LIST(0, "only", only, "COL=V[,V]",
             "use only matching groups (repeatable; e.g. split=headline)"),
    OPT_STRING(0, "grouping", grouping, "paper|COL",
               "paper: dense, moe-pt, moe-ft (from arch, task; default); COL: the values of a "
               "column (e.g. dataset)"),
    OPT_STRING(0, "key-feature", key, "NAME",
               "for subgroup and leverage (default dram_copy_product)"),
    CLI_OPT_GPU_MODEL,
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_stats_opts = CLI_OPTS(
    stats, .usage = "pfi stats [options] TABLE...",
    .description = "The paper's statistics (docs/method.md, 'Prediction from telemetry') on the "
                   "groups of sweep tables\n"
                   "with telemetry. Features are measured on each group's uncapped run.\n"
                   "  correlation  every telemetry metric and derived feature: Spearman rho with\n"
                   "               PFI, its p (t approximation, n-2 df), BH q across all features\n"
                   "               tested; OLS slope, intercept and R^2\n"
                   "  group        medians and means per group; Kruskal-Wallis H (tie-corrected);\n"
                   "               Dunn's z for every pair, p raw (p column) and Holm (q column)\n"
                   "  subgroup     rho of the key feature within subsets of the groups\n"
                   "  leverage     rho after dropping the k highest-leverage groups of the key\n"
                   "               feature's regression, k = 0..5\n",
    .options = stats_options, .operands = PFI_OPERANDS_FILES);

typedef struct out_t {
    pfi_rows *r;
} out_t;

static void row(pfi_rows *r, const char *section, const char *subset, const char *stat,
                const char *feature, double v, double n, double p, double q)
{
    size_t k = pfi_rows_add(r);
    pfi_rows_text(r, k, 0, section);
    pfi_rows_text(r, k, 1, subset);
    pfi_rows_text(r, k, 2, stat);
    pfi_rows_text(r, k, 3, feature);
    pfi_rows_num(r, k, 4, v);
    pfi_rows_num(r, k, 5, n);
    pfi_rows_num(r, k, 6, p);
    pfi_rows_num(r, k, 7, q);
}

/* rho of feature vs target over groups where mask[i] */
static void masked_rho(const double *x, const double *y, const int *mask, size_t n, double *rho,
                       double *p, size_t *m)
{
    double *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
    *m = 0;
    for (size_t i = 0; i < n; i++)
        if (mask[i] && isfinite(x[i]) && isfinite(y[i])) {
            a[*m] = x[i];
            b[*m] = y[i];
            (*m)++;
        }
    pfi_spearman(a, b, *m, rho, p);
    free(a), free(b);
}

/* what the sections share: the groups used (use[0..n)), their target y,
 * their grouping labels (lab: index into labels), scratch x, h, mask */
typedef struct stats_ctx {
    const char *cmd;
    const stats_args *a;
    pfi_groupset *S;
    const size_t *use;
    size_t n;
    double *y, *x, *h;
    int *lab, *mask;
    char labels[64][96];
    int k;
} stats_ctx;

/* each group's label of the grouping (paper: dense, moe-pt, moe-ft in that order) */
static int stats_labels(stats_ctx *c)
{
    const char *grouping = c->a->grouping;
    for (size_t i = 0; i < c->n; i++) {
        const pfi_group *g = &c->S->gs.g[c->use[i]];
        char name[96];
        if (!strcmp(grouping, "paper")) {
            if (!g->arch[0] || !g->task[0]) {
                cli_error(c->cmd, "group '%s' has no arch/task: use --grouping COLUMN", g->name);
                return -1;
            }
            snprintf(name, sizeof name, "%s",
                     !strcmp(g->arch, "dense") ? "dense"
                     : !strcmp(g->task, "pt")  ? "moe-pt"
                                               : "moe-ft");
        } else {
            if (pfi_table_col(c->S->t, grouping) < 0 && strcmp(grouping, "gpu_model")) {
                cli_error(c->cmd, "--grouping: no column '%s'", grouping);
                return -1;
            }
            snprintf(name, sizeof name, "%s", pfi_groupset_attr(c->S, g, grouping));
        }
        int j;
        for (j = 0; j < c->k; j++)
            if (!strcmp(c->labels[j], name)) break;
        if (j == c->k) {
            if (c->k == 64) {
                cli_error(c->cmd, "more than 64 groups in the grouping");
                return -1;
            }
            snprintf(c->labels[c->k++], sizeof c->labels[0], "%s", name);
        }
        c->lab[i] = j;
    }
    /* paper order: dense, moe-pt, moe-ft */
    if (!strcmp(grouping, "paper")) {
        static const char *const order[] = {"dense", "moe-pt", "moe-ft"};
        int remap[64], kk = 0;
        char nl[64][96];
        for (int o = 0; o < 3; o++)
            for (int j = 0; j < c->k; j++)
                if (!strcmp(c->labels[j], order[o])) {
                    remap[j] = kk;
                    memcpy(nl[kk++], c->labels[j], sizeof nl[0]);
                }
        for (size_t i = 0; i < c->n; i++) c->lab[i] = remap[c->lab[i]];
        memcpy(c->labels, nl, sizeof nl[0] * (size_t)kk);
        c->k = kk;
    }
    return 0;
}

/* correlations over every telemetry column and derived feature */
static void stats_correlations(stats_ctx *c, pfi_rows *R)
{
    pfi_groupset *S = c->S;
    size_t n = c->n;
    double *x = c->x, *y = c->y;
    size_t nc = pfi_table_ncols(S->t), nf = 0;
    const char **fname = malloc((nc + 1) * sizeof *fname);
    double *frho = malloc((nc + 1) * sizeof *frho), *fp = malloc((nc + 1) * sizeof *fp),
           *fq = malloc((nc + 1) * sizeof *fq);
    double *fb0 = malloc((nc + 1) * sizeof *fb0), *fb1 = malloc((nc + 1) * sizeof *fb1),
           *fr2 = malloc((nc + 1) * sizeof *fr2);
    size_t *fn = malloc((nc + 1) * sizeof *fn);
    for (size_t ci = 0; ci <= nc; ci++) {
        const char *cn = ci < nc ? pfi_table_colname(S->t, ci) : "power_frac";
        if (ci < nc &&
            (!pfi_sweep_is_telemetry(cn) || strstr(cn, "POWER_LIMIT") || strstr(cn, "MGMT_LIMIT")))
            continue;
        for (size_t i = 0; i < n; i++) {
            x[i] = pfi_feature_value(S->t, &S->gs.g[c->use[i]], cn, NULL);
            c->mask[i] = 1;
        }
        size_t m;
        double rho, p;
        masked_rho(x, y, c->mask, n, &rho, &p, &m);
        if (m < 3 || isnan(rho)) continue;
        double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        size_t q = 0;
        for (size_t i = 0; i < n; i++)
            if (isfinite(x[i])) a[q] = x[i], b[q++] = y[i];
        pfi_ols1(a, b, q, &fb0[nf], &fb1[nf], &fr2[nf]);
        free(a), free(b);
        fname[nf] = cn;
        frho[nf] = rho;
        fp[nf] = p;
        fn[nf] = m;
        nf++;
    }
    pfi_bh(fp, nf, fq);
    for (size_t f = 0; f < nf; f++) {
        row(R, "correlation", "all", "spearman_rho", fname[f], frho[f], (double)fn[f], fp[f],
            fq[f]);
        row(R, "correlation", "all", "ols_slope", fname[f], fb1[f], (double)fn[f], NAN, NAN);
        row(R, "correlation", "all", "ols_intercept", fname[f], fb0[f], (double)fn[f], NAN, NAN);
        row(R, "correlation", "all", "ols_r2", fname[f], fr2[f], (double)fn[f], NAN, NAN);
    }
    free(fname), free(frho), free(fp), free(fq), free(fb0), free(fb1), free(fr2), free(fn);
}

/* group tests: medians and means, Kruskal-Wallis, Dunn with Holm */
static void stats_groups(stats_ctx *c, pfi_rows *R)
{
    size_t n = c->n;
    const double *y = c->y;
    int k = c->k;
    for (int g = 0; g < k; g++) {
        double v[4096];
        size_t m = 0;
        double mean = 0;
        for (size_t i = 0; i < n && m < 4096; i++)
            if (c->lab[i] == g) v[m++] = y[i], mean += y[i];
        row(R, "group", c->labels[g], "median_pfi", "", pfi_quantile_select(v, m, 0.5), (double)m,
            NAN, NAN);
        row(R, "group", c->labels[g], "mean_pfi", "", mean / (double)m, (double)m, NAN, NAN);
    }
    if (k < 2) return;
    double H, p;
    int df;
    pfi_kruskal(y, c->lab, n, k, &H, &df, &p);
    char sub[64];
    snprintf(sub, sizeof sub, "%d groups (df %d)", k, df);
    row(R, "group", sub, "kruskal_wallis_H", "", H, (double)n, p, NAN);
    size_t npair = (size_t)k * (size_t)(k - 1) / 2;
    double *z = malloc(npair * sizeof *z), *pr = malloc(npair * sizeof *pr),
           *ph = malloc(npair * sizeof *ph);
    pfi_dunn(y, c->lab, n, k, z, pr);
    pfi_holm(pr, npair, ph);
    size_t m = 0;
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++, m++) {
            char pair[200];
            snprintf(pair, sizeof pair, "%.95s vs %.95s", c->labels[a], c->labels[b]);
            row(R, "group", pair, "dunn_z", "", z[m], NAN, pr[m], ph[m]);
        }
    free(z), free(pr), free(ph);
}

/* leverage: rho after dropping the k highest hat values of y ~ x, k = 0..5 */
static void stats_leverage(stats_ctx *c, pfi_rows *R)
{
    size_t n = c->n, q = 0, m;
    double rho, p;
    const char *key = c->a->key;
    double *xa = malloc(n * sizeof *xa), *ya = malloc(n * sizeof *ya), *h = c->h;
    for (size_t i = 0; i < n; i++)
        if (isfinite(c->x[i])) xa[q] = c->x[i], ya[q++] = c->y[i];
    pfi_hat_values(xa, q, h);
    for (int kdrop = 0; kdrop <= 5 && (size_t)kdrop + 3 <= q; kdrop++) {
        int *keep = malloc(q * sizeof *keep);
        for (size_t i = 0; i < q; i++) keep[i] = 1;
        for (int d = 0; d < kdrop; d++) { /* drop the d-th highest hat value */
            size_t best = q;
            for (size_t i = 0; i < q; i++)
                if (keep[i] && (best == q || h[i] > h[best])) best = i;
            keep[best] = 0;
        }
        masked_rho(xa, ya, keep, q, &rho, &p, &m);
        char sub[32];
        snprintf(sub, sizeof sub, "k=%d", kdrop);
        row(R, "leverage", sub, "spearman_rho_drop_k", key, rho, (double)m, p, NAN);
        free(keep);
    }
    free(xa), free(ya);
}

/* the key feature within subsets of the groups, then its leverage */
static void stats_subgroups(stats_ctx *c, pfi_rows *R)
{
    size_t n = c->n, m;
    double *x = c->x, *y = c->y, rho, p;
    int *mask = c->mask, *lab = c->lab;
    const char *key = c->a->key;
    int key_known = 0;
    for (size_t i = 0; i < n; i++)
        x[i] = pfi_feature_value(c->S->t, &c->S->gs.g[c->use[i]], key, &key_known);
    if (!key_known) {
        pfi_log lg = cli_log(c->cmd);
        pfi_warnf(&lg, "key feature '%s' not in the table: no subgroup or leverage analysis", key);
        return;
    }
    for (size_t i = 0; i < n; i++) mask[i] = 1;
    masked_rho(x, y, mask, n, &rho, &p, &m);
    row(R, "subgroup", "all", "spearman_rho", key, rho, (double)m, p, NAN);
    for (int g = 0; g < c->k; g++) {
        char sub[128];
        for (size_t i = 0; i < n; i++) mask[i] = lab[i] == g;
        masked_rho(x, y, mask, n, &rho, &p, &m);
        snprintf(sub, sizeof sub, "%s only", c->labels[g]);
        row(R, "subgroup", sub, "spearman_rho", key, rho, (double)m, p, NAN);
        for (size_t i = 0; i < n; i++) mask[i] = lab[i] != g;
        masked_rho(x, y, mask, n, &rho, &p, &m);
        snprintf(sub, sizeof sub, "all except %s", c->labels[g]);
        row(R, "subgroup", sub, "spearman_rho", key, rho, (double)m, p, NAN);
    }
    if (!strcmp(c->a->grouping, "paper")) {
        for (size_t i = 0; i < n; i++) mask[i] = strcmp(c->labels[lab[i]], "dense") != 0;
        masked_rho(x, y, mask, n, &rho, &p, &m);
        row(R, "subgroup", "moe only", "spearman_rho", key, rho, (double)m, p, NAN);
    }
    stats_leverage(c, R);
}

/* every section on the groups c->use[0..n) */
static int stats_sections(stats_ctx *c, const double *tgt)
{
    size_t n = c->n;
    c->y = malloc(n * sizeof *c->y), c->x = malloc(n * sizeof *c->x),
    c->h = malloc(n * sizeof *c->h);
    c->lab = malloc(n * sizeof *c->lab), c->mask = malloc(n * sizeof *c->mask);
    c->k = 0;
    for (size_t i = 0; i < n; i++) c->y[i] = tgt[c->use[i]];
    int rc = CLI_FAIL;
    if (stats_labels(c) == 0) {
        const char *names[] = {"section", "subset", "statistic", "feature", "value", "n", "p", "q"};
        pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT,
                                PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM};
        pfi_rows *R = pfi_rows_new(8, names, types);
        pfi_rows_table_fmt(R, 4, "%.4g");
        pfi_rows_table_fmt(R, 5, "%.0f");
        stats_correlations(c, R);
        stats_groups(c, R);
        stats_subgroups(c, R);
        rc = cli_save_rows(c->cmd, R, &c->a->out);
        pfi_rows_free(R);
    }
    free(c->y), free(c->x), free(c->h), free(c->lab), free(c->mask);
    return rc;
}

static int stats_run(const char *cmd, const stats_args *a, char **paths, int npaths)
{
    if (npaths < 1) return cli_usage_error(cmd, "no sweep table given");
    if (strcmp(a->target, "pfi") && strcmp(a->target, "robust"))
        return cli_usage_error(cmd, "--target: '%s' is not pfi or robust", a->target);
    pfi_groupset S;
    if (cli_gset_load(cmd, paths, npaths, a->gpu_model, &S)) return CLI_FAIL;
    size_t ng0 = S.gs.n;
    const double *tgt = pfi_groupset_target(&S, a->target);
    /* the groups used: matching --only, with a finite target */
    size_t *use = malloc((ng0 ? ng0 : 1) * sizeof *use), n = 0;
    int rc = CLI_OK;
    for (size_t i = 0; i < ng0 && rc == CLI_OK; i++) {
        int m = cli_group_match_all(cmd, &S, &S.gs.g[i], a->only.v, a->only.n);
        if (m < 0) rc = CLI_USAGE;
        else if (m && isfinite(tgt[i])) use[n++] = i;
    }
    if (rc == CLI_OK && n < 3) {
        cli_error(cmd, "only %zu groups with a finite %s target: need at least 3", n, a->target);
        rc = CLI_FAIL;
    }
    if (rc == CLI_OK) {
        stats_ctx c = {.cmd = cmd, .a = a, .S = &S, .use = use, .n = n};
        rc = stats_sections(&c, tgt);
    }
    free(use);
    pfi_groupset_dispose(&S);
    return rc;
}

int cmd_stats(int argc, char **argv)
{
    stats_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    a.target = "pfi";
    a.grouping = "paper";
    a.key = "dram_copy_product";
    int first, rc = cli_parse(&cmd_stats_opts, &a, argc, argv, &first);
    if (rc < 0) rc = stats_run("stats", &a, argv + first, argc - first);
    pfi_opts_dispose(&cmd_stats_opts, &a);
    return rc;
}
