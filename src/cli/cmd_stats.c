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
#include "sweeps.h"
#include "pfi/features.h"
#include "pfi/metrics.h"
#include "pfi/stats.h"
#include "pfi/sweep.h"
#include "util.h"

const char cmd_stats_usage[] =
    "usage: pfi stats [options] TABLE...\n"
    "\n"
    "The paper's statistics (METHOD.md section 5) on the groups of sweep tables\n"
    "with telemetry. Features are measured on each group's uncapped run.\n"
    "  correlation  every telemetry metric and derived feature: Spearman rho with\n"
    "               PFI, its p (t approximation, n-2 df), BH q across all features\n"
    "               tested; OLS slope, intercept and R^2\n"
    "  group        medians and means per group; Kruskal-Wallis H (tie-corrected);\n"
    "               Dunn's z for every pair, p raw (p column) and Holm (q column)\n"
    "  subgroup     rho of the key feature within subsets of the groups\n"
    "  leverage     rho after dropping the k highest-leverage groups of the key\n"
    "               feature's regression, k = 0..5\n"
    "\n"
    "options:\n"
    "  --target pfi|robust     PFI of Eq. 1 (default) or pfi's robust PFI\n"
    "  --only COL=V[,V]        use only matching groups (repeatable; e.g. split=headline)\n"
    "  --grouping paper|COL    paper: dense, moe-pt, moe-ft (from arch, task; default);\n"
    "                          COL: the values of a column (e.g. dataset)\n"
    "  --key-feature NAME      for subgroup and leverage (default dram_copy_product)\n"
    "  --gpu-model NAME, --format csv|json|table, --json, -o FILE\n";

typedef struct out_t {
    pfi_rows *r;
} out_t;

static void row(pfi_rows *r, const char *section, const char *subset, const char *stat, const char *feature,
                double v, double n, double p, double q)
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
static void masked_rho(const double *x, const double *y, const int *mask, size_t n, double *rho, double *p, size_t *m)
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

int cmd_stats(int argc, char **argv)
{
    const char *cmd = "stats";
    enum { O_TARGET = 1, O_ONLY, O_GROUPING, O_KEY, O_GPU };
    static const struct option lo[] = {{"target", required_argument, NULL, O_TARGET},
                                       {"only", required_argument, NULL, O_ONLY},
                                       {"grouping", required_argument, NULL, O_GROUPING},
                                       {"key-feature", required_argument, NULL, O_KEY},
                                       {"gpu-model", required_argument, NULL, O_GPU},
                                       CLI_COMMON_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    cli_out out;
    cli_out_init(&out);
    const char *target = "pfi", *grouping = "paper", *key = "dram_copy_product", *gpu_model = NULL;
    char **only = calloc((size_t)argc + 1, sizeof *only);
    int nonly = 0, c, rc = CLI_OK;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, lo, NULL)) != -1) {
        int h = cli_common_opt(cmd, c, optarg, &out);
        if (h < 0) { rc = CLI_USAGE; goto done; }
        if (h) continue;
        switch (c) {
        case 'h': rc = cli_help(cmd); goto done;
        case O_TARGET: target = optarg; break;
        case O_ONLY: only[nonly++] = optarg; break;
        case O_GROUPING: grouping = optarg; break;
        case O_KEY: key = optarg; break;
        case O_GPU: gpu_model = optarg; break;
        default: rc = cli_bad_option(cmd, argv); goto done;
        }
    }
    if (optind >= argc) { rc = cli_usage_error(cmd, "no sweep table given"); goto done; }
    if (strcmp(target, "pfi") && strcmp(target, "robust")) {
        rc = cli_usage_error(cmd, "--target: '%s' is not pfi or robust", target);
        goto done;
    }
    cli_gset S;
    if (cli_gset_load(cmd, argv + optind, argc - optind, gpu_model, &S)) { rc = CLI_FAIL; goto done; }
    size_t ng0 = S.gs.n;
    const double *tgt = cli_gset_target(&S, target);
    /* the groups used: matching --only, with a finite target */
    size_t *use = malloc((ng0 ? ng0 : 1) * sizeof *use), n = 0;
    for (size_t i = 0; i < ng0; i++) {
        int m = cli_group_match_all(cmd, &S, &S.gs.g[i], only, nonly);
        if (m < 0) { rc = CLI_USAGE; goto free_all; }
        if (m && isfinite(tgt[i])) use[n++] = i;
    }
    if (n < 3) {
        cli_error(cmd, "only %zu groups with a finite %s target: need at least 3", n, target);
        rc = CLI_FAIL;
        goto free_all;
    }
    double *y = malloc(n * sizeof *y), *x = malloc(n * sizeof *x), *h = malloc(n * sizeof *h);
    int *lab = malloc(n * sizeof *lab), *mask = malloc(n * sizeof *mask);
    char labels[64][96];
    int k = 0;
    for (size_t i = 0; i < n; i++) y[i] = tgt[use[i]];
    /* grouping labels */
    for (size_t i = 0; i < n; i++) {
        const pfi_group *g = &S.gs.g[use[i]];
        char name[96];
        if (!strcmp(grouping, "paper")) {
            if (!g->arch[0] || !g->task[0]) {
                cli_error(cmd, "group '%s' has no arch/task: use --grouping COLUMN", g->name);
                rc = CLI_FAIL;
                goto free_more;
            }
            snprintf(name, sizeof name, "%s", !strcmp(g->arch, "dense") ? "dense" : !strcmp(g->task, "pt") ? "moe-pt" : "moe-ft");
        } else {
            if (pfi_table_col(S.t, grouping) < 0 && strcmp(grouping, "gpu_model")) {
                cli_error(cmd, "--grouping: no column '%s'", grouping);
                rc = CLI_FAIL;
                goto free_more;
            }
            snprintf(name, sizeof name, "%s", cli_group_attr(&S, g, grouping));
        }
        int j;
        for (j = 0; j < k; j++)
            if (!strcmp(labels[j], name)) break;
        if (j == k) {
            if (k == 64) { cli_error(cmd, "more than 64 groups in the grouping"); rc = CLI_FAIL; goto free_more; }
            snprintf(labels[k++], sizeof labels[0], "%s", name);
        }
        lab[i] = j;
    }
    /* paper order: dense, moe-pt, moe-ft */
    if (!strcmp(grouping, "paper")) {
        static const char *const order[] = {"dense", "moe-pt", "moe-ft"};
        int remap[64], kk = 0;
        char nl[64][96];
        for (int o = 0; o < 3; o++)
            for (int j = 0; j < k; j++)
                if (!strcmp(labels[j], order[o])) {
                    remap[j] = kk;
                    memcpy(nl[kk++], labels[j], sizeof nl[0]);
                }
        for (size_t i = 0; i < n; i++) lab[i] = remap[lab[i]];
        memcpy(labels, nl, sizeof nl[0] * (size_t)kk);
        k = kk;
    }
    const char *names[] = {"section", "subset", "statistic", "feature", "value", "n", "p", "q"};
    pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT,
                            PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM};
    pfi_rows *R = pfi_rows_new(8, names, types);
    pfi_rows_table_fmt(R, 4, "%.4g");
    pfi_rows_table_fmt(R, 5, "%.0f");
    /* --- correlations over every telemetry column and derived feature */
    size_t nc = pfi_table_ncols(S.t), nf = 0;
    const char **fname = malloc((nc + 1) * sizeof *fname);
    double *frho = malloc((nc + 1) * sizeof *frho), *fp = malloc((nc + 1) * sizeof *fp), *fq = malloc((nc + 1) * sizeof *fq);
    double *fb0 = malloc((nc + 1) * sizeof *fb0), *fb1 = malloc((nc + 1) * sizeof *fb1), *fr2 = malloc((nc + 1) * sizeof *fr2);
    size_t *fn = malloc((nc + 1) * sizeof *fn);
    for (size_t ci = 0; ci <= nc; ci++) {
        const char *cn = ci < nc ? pfi_table_colname(S.t, ci) : "power_frac";
        if (ci < nc && (!pfi_sweep_is_telemetry(cn) || strstr(cn, "POWER_LIMIT") || strstr(cn, "MGMT_LIMIT"))) continue;
        for (size_t i = 0; i < n; i++) {
            x[i] = pfi_feature_value(S.t, &S.gs.g[use[i]], cn, NULL);
            mask[i] = 1;
        }
        size_t m;
        double rho, p;
        masked_rho(x, y, mask, n, &rho, &p, &m);
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
        row(R, "correlation", "all", "spearman_rho", fname[f], frho[f], (double)fn[f], fp[f], fq[f]);
        row(R, "correlation", "all", "ols_slope", fname[f], fb1[f], (double)fn[f], NAN, NAN);
        row(R, "correlation", "all", "ols_intercept", fname[f], fb0[f], (double)fn[f], NAN, NAN);
        row(R, "correlation", "all", "ols_r2", fname[f], fr2[f], (double)fn[f], NAN, NAN);
    }
    /* --- group tests */
    for (int g = 0; g < k; g++) {
        double v[4096];
        size_t m = 0;
        double mean = 0;
        for (size_t i = 0; i < n && m < 4096; i++)
            if (lab[i] == g) v[m++] = y[i], mean += y[i];
        row(R, "group", labels[g], "median_pfi", "", pfi_quantile_select(v, m, 0.5), (double)m, NAN, NAN);
        row(R, "group", labels[g], "mean_pfi", "", mean / (double)m, (double)m, NAN, NAN);
    }
    if (k >= 2) {
        double H, p;
        int df;
        pfi_kruskal(y, lab, n, k, &H, &df, &p);
        char sub[64];
        snprintf(sub, sizeof sub, "%d groups (df %d)", k, df);
        row(R, "group", sub, "kruskal_wallis_H", "", H, (double)n, p, NAN);
        size_t npair = (size_t)k * (size_t)(k - 1) / 2;
        double *z = malloc(npair * sizeof *z), *pr = malloc(npair * sizeof *pr), *ph = malloc(npair * sizeof *ph);
        pfi_dunn(y, lab, n, k, z, pr);
        pfi_holm(pr, npair, ph);
        size_t m = 0;
        for (int a = 0; a < k; a++)
            for (int b = a + 1; b < k; b++, m++) {
                char pair[200];
                snprintf(pair, sizeof pair, "%.95s vs %.95s", labels[a], labels[b]);
                row(R, "group", pair, "dunn_z", "", z[m], NAN, pr[m], ph[m]);
            }
        free(z), free(pr), free(ph);
    }
    /* --- subgroups and leverage on the key feature */
    int key_known = 0;
    for (size_t i = 0; i < n; i++) x[i] = pfi_feature_value(S.t, &S.gs.g[use[i]], key, &key_known);
    if (key_known) {
        double rho, p;
        size_t m;
        for (size_t i = 0; i < n; i++) mask[i] = 1;
        masked_rho(x, y, mask, n, &rho, &p, &m);
        row(R, "subgroup", "all", "spearman_rho", key, rho, (double)m, p, NAN);
        for (int g = 0; g < k; g++) {
            char sub[128];
            for (size_t i = 0; i < n; i++) mask[i] = lab[i] == g;
            masked_rho(x, y, mask, n, &rho, &p, &m);
            snprintf(sub, sizeof sub, "%s only", labels[g]);
            row(R, "subgroup", sub, "spearman_rho", key, rho, (double)m, p, NAN);
            for (size_t i = 0; i < n; i++) mask[i] = lab[i] != g;
            masked_rho(x, y, mask, n, &rho, &p, &m);
            snprintf(sub, sizeof sub, "all except %s", labels[g]);
            row(R, "subgroup", sub, "spearman_rho", key, rho, (double)m, p, NAN);
        }
        if (!strcmp(grouping, "paper")) {
            for (size_t i = 0; i < n; i++) mask[i] = strcmp(labels[lab[i]], "dense") != 0;
            masked_rho(x, y, mask, n, &rho, &p, &m);
            row(R, "subgroup", "moe only", "spearman_rho", key, rho, (double)m, p, NAN);
        }
        /* leverage: hat values of y ~ x over groups with x */
        size_t q = 0;
        double *xa = malloc(n * sizeof *xa), *ya = malloc(n * sizeof *ya);
        for (size_t i = 0; i < n; i++)
            if (isfinite(x[i])) xa[q] = x[i], ya[q++] = y[i];
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
    } else {
        pfi_log lg = cli_log(cmd);
        pfi_warnf(&lg, "key feature '%s' not in the table: no subgroup or leverage analysis", key);
    }
    rc = cli_save_rows(cmd, R, &out);
    pfi_rows_free(R);
    free(fname), free(frho), free(fp), free(fq), free(fb0), free(fb1), free(fr2), free(fn);
free_more:
    free(y), free(x), free(h), free(lab), free(mask);
free_all:
    free(use);
    cli_gset_free(&S);
done:
    free(only);
    return rc;
}
