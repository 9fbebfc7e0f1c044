/* summary.c — the "paper vs pfi" table (see report.h). Rows come in the
 * paper's table order; `kind` says whether the reconstruction was
 * calibrated to the number (target), the number is an outcome of the
 * reconstruction that was never tuned (outcome), or it goes beyond the
 * paper (beyond). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/csvtable.h"
#include "pfi/rows.h"
#include "pfi/stats.h"
#include "pfi/util.h"
#include "report.h"

typedef struct cache {
    char name[64];
    pfi_table *t;
} cache;

typedef struct ctx {
    const char *outdir, *datadir;
    cache c[32];
    int nc;
    pfi_summary *s;
    pfi_error *err;
    int failed;
} ctx;

static pfi_table *tab(ctx *x, const char *dir, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", dir == x->datadir ? "paper/" : "", name);
    for (int i = 0; i < x->nc; i++)
        if (!strcmp(x->c[i].name, key)) return x->c[i].t;
    if (x->nc == 32) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, dir == x->datadir ? "paper/" : "data/", name);
    pfi_table *t = NULL;
    pfi_error e;
    if (pfi_csv_load(path, &t, &e) != PFI_OK) {
        if (!x->failed) pfi_errorf(x->err, e.code, "%s", e.msg);
        x->failed = 1;
        return NULL;
    }
    snprintf(x->c[x->nc].name, sizeof x->c[0].name, "%s", key);
    x->c[x->nc++].t = t;
    return t;
}

/* value in run output `file` at the row with k1=v1 (& k2=v2), column col */
static double out_val(ctx *x, const char *file, const char *k1, const char *v1, const char *k2, const char *v2,
                      const char *col, char *src, size_t n)
{
    pfi_table *t = tab(x, x->outdir, file);
    if (!t) return NAN;
    long r = pfi_table_find_row(t, k1, v1, k2, v2);
    if (k2) snprintf(src, n, "%s|%s=%s&%s=%s|%s", file, k1, v1, k2, v2, col);
    else snprintf(src, n, "%s|%s=%s|%s", file, k1, v1, col);
    return pfi_table_get(t, r, col);
}

static void add(ctx *x, const char *section, const char *item, double paper, double pfi, const char *kind,
                const char *source, const char *fmt, ...)
{
    pfi_summary *s = x->s;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 128;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
    }
    pfi_srow *r = &s->r[s->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->section, sizeof r->section, "%s", section);
    snprintf(r->item, sizeof r->item, "%s", item);
    r->paper = paper;
    r->pfi = pfi;
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    snprintf(r->source, sizeof r->source, "%s", source ? source : "");
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->note, sizeof r->note, fmt, ap);
        va_end(ap);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

pfi_status pfi_report_summary(const char *outdir, const char *datadir, pfi_summary *s, pfi_error *err)
{
    memset(s, 0, sizeof *s);
    ctx x;
    memset(&x, 0, sizeof x);
    x.outdir = outdir;
    x.datadir = datadir;
    x.s = s;
    x.err = err;
    char src[300];
    /* ---- table 6 and 7: Eq. 1 per group ---- */
    pfi_table *t6 = tab(&x, datadir, "table6_h200_pfi.csv");
    for (size_t r = 0; t6 && r < pfi_table_nrows(t6); r++) {
        const char *g = pfi_table_text(t6, (size_t)pfi_table_col(t6, "group_id"), r);
        double v = out_val(&x, "recon_index.csv", "group", g, "gpu_model", "H200", "pfi", src, sizeof src);
        add(&x, "table 6", g, pfi_table_get(t6, (long)r, "pfi"), v, "target", src, NULL);
    }
    pfi_table *t7 = tab(&x, datadir, "table7_h200_validation_pfi.csv");
    for (size_t r = 0; t7 && r < pfi_table_nrows(t7); r++) {
        const char *g = pfi_table_text(t7, (size_t)pfi_table_col(t7, "group_id"), r);
        double v = out_val(&x, "recon_index.csv", "group", g, "gpu_model", "H200", "pfi", src, sizeof src);
        add(&x, "table 7", g, pfi_table_get(t7, (long)r, "pfi"), v, "target", src, NULL);
    }
    /* ---- table 8: H100 (group names from the spec's h100 rows, in table order) ---- */
    pfi_table *t8 = tab(&x, datadir, "table8_h100_vs_h200.csv");
    char path[4096];
    snprintf(path, sizeof path, "%s/reconstruction/spec.csv", datadir);
    pfi_table *spec = NULL;
    pfi_error e2;
    if (pfi_csv_load(path, &spec, &e2) == PFI_OK && t8) {
        double h1[16], h2[16];
        int k = 0;
        long cs = pfi_table_col(spec, "split"), cg = pfi_table_col(spec, "group_id");
        for (size_t r = 0; r < pfi_table_nrows(spec) && k < 16; r++) {
            if (strcmp(pfi_table_text(spec, (size_t)cs, r), "h100")) continue;
            const char *g = pfi_table_text(spec, (size_t)cg, r);
            double v = out_val(&x, "recon_index.csv", "group", g, "gpu_model", "H100", "pfi", src, sizeof src);
            char item[160];
            snprintf(item, sizeof item, "H100 %s", g);
            add(&x, "table 8", item, pfi_table_get(t8, k, "pfi_h100"), v, "target", src, NULL);
            h1[k] = v;
            h2[k] = out_val(&x, "recon_index.csv", "group", g, "gpu_model", "H200", "pfi", src, sizeof src);
            k++;
        }
        double rho, p;
        pfi_spearman(h1, h2, (size_t)k, &rho, &p);
        add(&x, "table 8", "H100/H200 PFI rank correlation (6 groups)", 0.943, rho, "outcome",
            "recon_index.csv|gpu_model=H100,H200|pfi", "Spearman over the matched groups");
        double r2 = out_val(&x, "recon_fit.csv", "evaluation", "eval:split=h100", NULL, NULL, "r2", src, sizeof src);
        add(&x, "table 8", "H200-fit predictor R^2 on the H100 groups", 0.56, r2, "outcome", src, NULL);
        pfi_table_free(spec);
    }
    /* ---- table 9: 4-cap grid ---- */
    pfi_table *t9 = tab(&x, datadir, "table9_grid_sensitivity.csv");
    double d6[32], d4[32], dd[32];
    int n9 = 0;
    for (size_t r = 0; t9 && r < pfi_table_nrows(t9) && n9 < 32; r++) {
        const char *g = pfi_table_text(t9, (size_t)pfi_table_col(t9, "group_id"), r);
        double paper4 = pfi_table_get(t9, (long)r, "pfi_6caps") + pfi_table_get(t9, (long)r, "delta");
        double v = out_val(&x, "recon_index_4caps.csv", "group", g, "gpu_model", "H200", "pfi", src, sizeof src);
        int miss = !strcmp(g, "moe-pt-gptoss20b-x8-ep1-nocompile");
        add(&x, "table 9", g, paper4, v, "target", src,
            miss ? "not reachable with a monotone V-f curve (docs/model.md)" : NULL);
        d4[n9] = v;
        d6[n9] = out_val(&x, "recon_index.csv", "group", g, "gpu_model", "H200", "pfi", src, sizeof src);
        dd[n9] = d4[n9] - d6[n9];
        n9++;
    }
    if (n9) {
        double rho, p;
        pfi_spearman(d6, d4, (size_t)n9, &rho, &p);
        qsort(dd, (size_t)n9, sizeof *dd, cmp_d);
        double med = pfi_quantile_select(dd, (size_t)n9, 0.5);
        add(&x, "table 9", "median PFI increase, 6 -> 4 caps (8-GPU groups)", 0.154, med, "outcome",
            "recon_index_4caps.csv,recon_index.csv|8-GPU groups|pfi", NULL);
        add(&x, "table 9", "rank correlation 6-cap vs 4-cap PFI", 0.940, rho, "outcome",
            "recon_index_4caps.csv,recon_index.csv|8-GPU groups|pfi", NULL);
    }
    /* ---- tables 10-13: group statistics ---- */
    struct { const char *item, *subset, *stat, *feature, *col; double paper; const char *kind; } st10[] = {
        {"median PFI, dense (n=14)", "dense", "median_pfi", "", "value", 1.27, "target"},
        {"median PFI, MoE pretraining (n=7)", "moe-pt", "median_pfi", "", "value", 1.43, "target"},
        {"median PFI, MoE fine-tuning (n=4)", "moe-ft", "median_pfi", "", "value", 2.10, "target"},
        {"Kruskal-Wallis H", "3 groups (df 2)", "kruskal_wallis_H", "", "value", 12.37, "outcome"},
        {"Kruskal-Wallis p (target < 0.01)", "3 groups (df 2)", "kruskal_wallis_H", "", "p", 0.0021, "target"},
        {"Dunn z, dense vs MoE FT", "dense vs moe-ft", "dunn_z", "", "value", -3.44, "outcome"},
        {"Dunn p (Holm), dense vs MoE FT", "dense vs moe-ft", "dunn_z", "", "q", 0.0017, "outcome"},
        {"Dunn z, MoE PT vs MoE FT", "moe-pt vs moe-ft", "dunn_z", "", "value", -1.90, "outcome"},
        {"Dunn z, dense vs MoE PT", "dense vs moe-pt", "dunn_z", "", "value", -1.64, "outcome"},
        {"rho(dram_copy_product, PFI), all (target 0.45..0.62)", "all", "spearman_rho", "dram_copy_product", "value", 0.535, "target"},
        {"p of rho, all", "all", "spearman_rho", "dram_copy_product", "p", 0.006, "outcome"},
        {"rho, dense only (target |rho| < 0.3)", "dense only", "spearman_rho", "dram_copy_product", "value", -0.178, "target"},
        {"rho, MoE only (target > 0)", "moe only", "spearman_rho", "dram_copy_product", "value", 0.509, "target"},
        {"rho, all except MoE FT", "all except moe-ft", "spearman_rho", "dram_copy_product", "value", 0.347, "outcome"},
    };
    for (size_t i = 0; i < sizeof st10 / sizeof *st10; i++) {
        pfi_table *ts = tab(&x, outdir, "recon_stats.csv");
        double v = NAN;
        /* the whole-set rho is in section correlation; the rest in group / subgroup */
        const char *sect = !strcmp(st10[i].subset, "all") ? "correlation" : st10[i].feature[0] ? "subgroup" : "group";
        if (ts) {
            long cs = pfi_table_col(ts, "subset"), ct = pfi_table_col(ts, "statistic"), cf = pfi_table_col(ts, "feature");
            long cse = pfi_table_col(ts, "section");
            for (size_t r = 0; r < pfi_table_nrows(ts); r++)
                if (!strcmp(pfi_table_text(ts, (size_t)cse, r), sect) && !strcmp(pfi_table_text(ts, (size_t)cs, r), st10[i].subset) &&
                    !strcmp(pfi_table_text(ts, (size_t)ct, r), st10[i].stat) &&
                    !strcmp(pfi_table_text(ts, (size_t)cf, r), st10[i].feature)) {
                    v = pfi_table_get(ts, (long)r, st10[i].col);
                    break;
                }
        }
        snprintf(src, sizeof src, "recon_stats.csv|section=%s&subset=%s&statistic=%s&feature=%s|%s", sect, st10[i].subset, st10[i].stat,
                 st10[i].feature, st10[i].col);
        add(&x, "tables 10-13", st10[i].item, st10[i].paper, v, st10[i].kind, src, NULL);
    }
    static const double lev[6] = {0.535, 0.477, 0.406, 0.321, 0.438, 0.463};
    for (int k = 0; k <= 5; k++) {
        char sub[16], item[64];
        snprintf(sub, sizeof sub, "k=%d", k);
        snprintf(item, sizeof item, "rho after dropping the %d highest-leverage groups", k);
        double v = out_val(&x, "recon_stats.csv", "subset", sub, "statistic", "spearman_rho_drop_k", "value", src, sizeof src);
        add(&x, "tables 10-13", item, lev[k], v, "outcome", src, NULL);
        snprintf(s->r[s->n - 1].series, sizeof s->r[0].series, "rho after dropping k highest-leverage groups, k=0..5");
    }
    /* ---- table 3: the predictor ablation ---- */
    pfi_table *ab = tab(&x, outdir, "recon_ablation.csv");
    static const char *const cols[7] = {"r2_in", "loo_r2", "loo_rmse", "loo_rho", "loco_r2", "loco_rmse", "loco_rho"};
    for (size_t r = 0; ab && r < pfi_table_nrows(ab); r++) {
        const char *pred = pfi_table_text(ab, (size_t)pfi_table_col(ab, "predictors"), r);
        for (int k = 0; k < 7; k++) {
            char pc[32], item[200];
            snprintf(pc, sizeof pc, "paper_%s", cols[k]);
            snprintf(item, sizeof item, "%s: %s", pred, cols[k]);
            snprintf(src, sizeof src, "recon_ablation.csv|predictors=%s|%s", pred, cols[k]);
            int target = !strcmp(pred, "dram_copy_product") && k == 0;
            add(&x, "table 3", item, pfi_table_get(ab, (long)r, pc), pfi_table_get(ab, (long)r, cols[k]),
                target ? "target" : "outcome", src, NULL);
        }
    }
    /* ---- the headline allocation figure ---- */
    {
        double rec;
        /* the row at the 30% cut */
        pfi_table *sm = tab(&x, outdir, "recon_simulate.csv");
        rec = NAN;
        double gap = NAN;
        if (sm) {
            long csc = pfi_table_col(sm, "scenario"), cst = pfi_table_col(sm, "strategy");
            for (size_t r = 0; r < pfi_table_nrows(sm); r++)
                if (!strcmp(pfi_table_text(sm, (size_t)csc, r), "production") && !strcmp(pfi_table_text(sm, (size_t)cst, r), "pfi-aware") &&
                    fabs(pfi_table_get(sm, (long)r, "cut") - 0.30) < 1e-9) {
                    rec = pfi_table_get(sm, (long)r, "recovered_per_job");
                    gap = pfi_table_get(sm, (long)r, "gap_closed");
                }
        }
        add(&x, "allocation", "pfi-aware over equal, 30% cut, production: tokens/s per job", 1500, rec, "outcome",
            "recon_simulate.csv|scenario=production&strategy=pfi-aware&cut=0.3|recovered_per_job", NULL);
        add(&x, "allocation", "pfi-aware: share of the equal-to-oracle gap closed", 0.63, gap, "outcome",
            "recon_simulate.csv|scenario=production&strategy=pfi-aware&cut=0.3|gap_closed", NULL);
        /* the paper: pfi-aware is never worse than equal weight, at any cut, in either scenario */
        if (sm) {
            long csc = pfi_table_col(sm, "scenario"), cst = pfi_table_col(sm, "strategy");
            size_t worse = 0, cells = 0;
            for (size_t r = 0; r < pfi_table_nrows(sm); r++) {
                if (strcmp(pfi_table_text(sm, (size_t)cst, r), "pfi-aware")) continue;
                const char *scn = pfi_table_text(sm, (size_t)csc, r);
                double cut = pfi_table_get(sm, (long)r, "cut"), mine = pfi_table_get(sm, (long)r, "total_tokens_per_s");
                for (size_t q = 0; q < pfi_table_nrows(sm); q++)
                    if (!strcmp(pfi_table_text(sm, (size_t)cst, q), "equal") && !strcmp(pfi_table_text(sm, (size_t)csc, q), scn) &&
                        fabs(pfi_table_get(sm, (long)q, "cut") - cut) < 1e-9) {
                        cells++;
                        worse += mine < pfi_table_get(sm, (long)q, "total_tokens_per_s") * (1 - 1e-12);
                    }
            }
            add(&x, "allocation", "cuts where pfi-aware is below equal weight (both scenarios)", 0, (double)worse, "outcome",
                "recon_simulate.csv|strategy=pfi-aware,equal|count(total_tokens_per_s below equal)", "of %zu scenario-cut cells", cells);
        }
        /* beyond: the other strategies at the same point */
        static const char *const strat[] = {"curve-aware", "closed-loop", "moe-ft-weighted", "dcgm"};
        for (int k = 0; sm && k < 4; k++) {
            double g = NAN;
            long csc = pfi_table_col(sm, "scenario"), cst = pfi_table_col(sm, "strategy");
            for (size_t r = 0; r < pfi_table_nrows(sm); r++)
                if (!strcmp(pfi_table_text(sm, (size_t)csc, r), "production") && !strcmp(pfi_table_text(sm, (size_t)cst, r), strat[k]) &&
                    fabs(pfi_table_get(sm, (long)r, "cut") - 0.30) < 1e-9)
                    g = pfi_table_get(sm, (long)r, "gap_closed");
            char item[160], s2[300];
            snprintf(item, sizeof item, "%s: share of the equal-to-oracle gap closed", strat[k]);
            snprintf(s2, sizeof s2, "recon_simulate.csv|scenario=production&strategy=%s&cut=0.3|gap_closed", strat[k]);
            add(&x, k < 2 ? "beyond the paper" : "allocation", item, NAN, g, k < 2 ? "beyond" : "outcome", s2, NULL);
        }
    }
    /* ---- beyond the paper ---- */
    pfi_table *zi = tab(&x, outdir, "zeus_index.csv");
    if (zi) {
        static const char *const gpus[] = {"A40", "V100", "P100", "RTX6000"};
        for (int k = 0; k < 4; k++) {
            size_t n = 0, okc = 0, npb = 0;
            double lo = INFINITY, hi = -INFINITY, rlo = INFINITY, rhi = -INFINITY;
            long cg = pfi_table_col(zi, "gpu_model"), cv = pfi_table_col(zi, "verdict");
            for (size_t r = 0; r < pfi_table_nrows(zi); r++) {
                if (strcmp(pfi_table_text(zi, (size_t)cg, r), gpus[k])) continue;
                n++;
                const char *v = pfi_table_text(zi, (size_t)cv, r);
                okc += !strcmp(v, "ok") || !strcmp(v, "noisy");
                npb += !strcmp(v, "not-power-bound");
                double e = pfi_table_get(zi, (long)r, "pfi"), rb = pfi_table_get(zi, (long)r, "pfi_robust");
                if (isfinite(e)) lo = fmin(lo, e), hi = fmax(hi, e);
                if (isfinite(rb)) rlo = fmin(rlo, rb), rhi = fmax(rhi, rb);
            }
            char item[200], s2[300];
            snprintf(item, sizeof item, "%s (%s): groups with a finite robust PFI", gpus[k], k < 2 ? "development" : "held out");
            snprintf(s2, sizeof s2, "zeus_index.csv|gpu_model=%s|count(verdict in ok,noisy)", gpus[k]);
            add(&x, "Zeus (real)", item, NAN, (double)okc, "beyond", s2,
                "%zu of %zu groups ok/noisy, %zu not power-bound; Eq. 1 spans %.2f..%.2f, robust %.2f..%.2f", okc, n, npb, lo, hi, rlo, rhi);
        }
    }
    double zr = out_val(&x, "zeus_fit.csv", "evaluation", "eval:gpu_model=P100", NULL, NULL, "r2", src, sizeof src);
    add(&x, "Zeus (real)", "predictor (power_frac, fit on A40+V100): R^2 on P100", NAN, zr, "beyond", src, NULL);
    zr = out_val(&x, "zeus_fit.csv", "evaluation", "eval:gpu_model=RTX6000", NULL, NULL, "r2", src, sizeof src);
    add(&x, "Zeus (real)", "predictor (power_frac, fit on A40+V100): R^2 on RTX 6000", NAN, zr, "beyond", src, NULL);
    double v = out_val(&x, "recon_fit.csv", "evaluation", "eval:split=validation", NULL, NULL, "r2", src, sizeof src);
    add(&x, "beyond the paper", "H200 predictor R^2 on the 4 validation groups", NAN, v, "beyond", src, NULL);
    /* curve predictor: mean LOCO throughput error over the grid */
    pfi_table *cf = tab(&x, outdir, "recon_curve_fit.csv");
    if (cf) {
        double sum = 0, mx = 0;
        int m = 0;
        long ce = pfi_table_col(cf, "evaluation");
        for (size_t r = 0; r < pfi_table_nrows(cf); r++)
            if (!strcmp(pfi_table_text(cf, (size_t)ce, r), "loco")) {
                double e = pfi_table_get(cf, (long)r, "tokens_frac_rmse");
                sum += e;
                mx = fmax(mx, e);
                m++;
            }
        add(&x, "beyond the paper", "curve predictor, LOCO RMSE of T/T_max (mean over caps)", NAN, m ? sum / m : NAN,
            "beyond", "recon_curve_fit.csv|evaluation=loco|mean(tokens_frac_rmse)", "largest %.3f", mx);
    }
    pfi_table *lc = tab(&x, outdir, "recon_closed_loop.csv");
    if (lc) {
        long cs = pfi_table_col(lc, "scenario");
        for (size_t r = 0; r < pfi_table_nrows(lc); r++) {
            if (strcmp(pfi_table_text(lc, (size_t)cs, r), "production")) continue;
            char item[120], s2[300];
            int rd = (int)pfi_table_get(lc, (long)r, "round");
            snprintf(item, sizeof item, "closed loop, gap closed after round %d (30%% cut, production)", rd);
            snprintf(s2, sizeof s2, "recon_closed_loop.csv|scenario=production&round=%d|gap_closed", rd);
            add(&x, "beyond the paper", item, NAN, pfi_table_get(lc, (long)r, "gap_closed"), "beyond", s2, NULL);
            snprintf(s->r[s->n - 1].series, sizeof s->r[0].series, "closed loop, gap closed by round (30%% cut, production)");
        }
    }
    static const char *const oos[][3] = {{"recon_simulate_oos.csv", "pfi-aware", "validation+H100 jobs: pfi-aware"},
                                         {"recon_simulate_oos.csv", "curve-aware", "validation+H100 jobs: curve-aware"},
                                         {"fleet_simulate.csv", "pfi-aware", "fresh synth fleet: pfi-aware"},
                                         {"fleet_simulate.csv", "curve-aware", "fresh synth fleet: curve-aware"},
                                         {"zeus_simulate.csv", "pfi-aware", "Zeus P100+RTX6000 (normalized): pfi-aware"},
                                         {"zeus_simulate.csv", "curve-aware", "Zeus P100+RTX6000 (normalized): curve-aware"}};
    for (int k = 0; k < 6; k++) {
        pfi_table *sm = tab(&x, outdir, oos[k][0]);
        double g = NAN;
        const char *scen = strstr(oos[k][0], "zeus") ? "random" : "production";
        if (sm) {
            long csc = pfi_table_col(sm, "scenario"), cst = pfi_table_col(sm, "strategy");
            for (size_t r = 0; r < pfi_table_nrows(sm); r++)
                if (!strcmp(pfi_table_text(sm, (size_t)csc, r), scen) && !strcmp(pfi_table_text(sm, (size_t)cst, r), oos[k][1]) &&
                    fabs(pfi_table_get(sm, (long)r, "cut") - 0.30) < 1e-9)
                    g = pfi_table_get(sm, (long)r, "gap_closed");
        }
        char item[200], s2[300];
        snprintf(item, sizeof item, "gap closed at 30%%, %s", oos[k][2]);
        snprintf(s2, sizeof s2, "%s|scenario=%s&strategy=%s&cut=0.3|gap_closed", oos[k][0], scen, oos[k][1]);
        add(&x, "out of sample", item, NAN, g, "beyond", s2, NULL);
    }
    pfi_table *sl = tab(&x, outdir, "recon_simulate_sla.csv");
    if (sl) {
        /* violations where every strategy can meet the budget (10%), and how
           often the floors cannot be met at all at the 30% cut */
        static const char *const strat[] = {"oracle", "equal", "pfi-aware", "curve-aware", "closed-loop"};
        static const struct { double cut; const char *col, *what; } q[2] = {
            {0.10, "sla_violations", "jobs below their SLA floor, 10%% cut (all workloads): %s"},
            {0.30, "infeasible_workloads", "workloads whose floors cannot meet a 30%% cut: %s"}};
        for (int m = 0; m < 2; m++)
            for (int k = 0; k < 5; k++) {
                double vio = NAN;
                long csc = pfi_table_col(sl, "scenario"), cst = pfi_table_col(sl, "strategy");
                for (size_t r = 0; r < pfi_table_nrows(sl); r++)
                    if (!strcmp(pfi_table_text(sl, (size_t)csc, r), "production") && !strcmp(pfi_table_text(sl, (size_t)cst, r), strat[k]) &&
                        fabs(pfi_table_get(sl, (long)r, "cut") - q[m].cut) < 1e-9)
                        vio = pfi_table_get(sl, (long)r, q[m].col);
                char item[160], s2[300];
                snprintf(item, sizeof item, q[m].what, strat[k]);
                snprintf(s2, sizeof s2, "recon_simulate_sla.csv|scenario=production&strategy=%s&cut=%g|%s", strat[k], q[m].cut, q[m].col);
                add(&x, "SLA tiers", item, NAN, vio, "beyond", s2, NULL);
            }
    }
    for (int i = 0; i < x.nc; i++) pfi_table_free(x.c[i].t);
    if (x.failed) {
        pfi_summary_free(s);
        return err ? err->code : PFI_EIO;
    }
    return PFI_OK;
}

void pfi_summary_free(pfi_summary *s)
{
    free(s->r);
    memset(s, 0, sizeof *s);
}

pfi_status pfi_summary_save(const pfi_summary *s, const char *path, pfi_error *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return pfi_errorf(err, PFI_EIO, "%s: cannot create", path);
    fprintf(f, "section,item,paper,pfi,difference,kind,source,note\n");
    for (size_t i = 0; i < s->n; i++) {
        const pfi_srow *r = &s->r[i];
        pfi_csv_write_text(f, r->section);
        fputc(',', f);
        pfi_csv_write_text(f, r->item);
        char a[64] = "", b[64] = "", d[64] = "";
        if (isfinite(r->paper)) pfi_fmt_num(a, sizeof a, r->paper);
        if (isfinite(r->pfi)) pfi_fmt_num(b, sizeof b, r->pfi);
        if (isfinite(r->paper) && isfinite(r->pfi)) pfi_fmt_num(d, sizeof d, r->pfi - r->paper);
        fprintf(f, ",%s,%s,%s,", a, b, d);
        pfi_csv_write_text(f, r->kind);
        fputc(',', f);
        pfi_csv_write_text(f, r->source);
        fputc(',', f);
        pfi_csv_write_text(f, r->note);
        fputc('\n', f);
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) return pfi_errorf(err, PFI_EIO, "%s: write failed", path);
    return PFI_OK;
}

/* table 3 as one sub-table: R^2 in-sample, LOO, LOCO, paper and pfi */
static size_t print_table3(const pfi_summary *s, size_t i, FILE *f)
{
    fprintf(f, "\ntable 3 (predictor ablation, outcome except dram_copy_product in-sample)\n");
    fprintf(f, "  %-40s %15s %15s %15s\n", "", "R^2 in-sample", "LOO R^2", "LOCO R^2");
    fprintf(f, "  %-40s %7s %7s %7s %7s %7s %7s\n", "predictors", "paper", "pfi", "paper", "pfi", "paper", "pfi");
    while (i < s->n && !strcmp(s->r[i].section, "table 3")) {
        char pred[160];
        snprintf(pred, sizeof pred, "%s", s->r[i].item);
        char *colon = strrchr(pred, ':');
        if (colon) *colon = '\0';
        double v[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
        for (; i < s->n && !strcmp(s->r[i].section, "table 3") && !strncmp(s->r[i].item, pred, strlen(pred)) &&
               s->r[i].item[strlen(pred)] == ':';
             i++) {
            const char *c = s->r[i].item + strlen(pred) + 2;
            int k = !strcmp(c, "r2_in") ? 0 : !strcmp(c, "loo_r2") ? 1 : !strcmp(c, "loco_r2") ? 2 : -1;
            if (k >= 0) v[2 * k] = s->r[i].paper, v[2 * k + 1] = s->r[i].pfi;
        }
        fprintf(f, "  %-40.40s %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f\n", pred, v[0], v[1], v[2], v[3], v[4], v[5]);
    }
    fputc('\n', f);
    return i;
}

static size_t print_series(const pfi_summary *s, size_t i, FILE *f)
{
    const pfi_srow *r = &s->r[i];
    size_t j = i;
    while (j < s->n && !strcmp(s->r[j].series, r->series)) j++;
    fprintf(f, "%-16s %s\n", r->section, r->series);
    if (isfinite(r->paper)) {
        fprintf(f, "%-16s   paper", "");
        for (size_t k = i; k < j; k++) fprintf(f, " %6.3f", s->r[k].paper);
        fputc('\n', f);
    }
    fprintf(f, "%-16s   pfi  ", "");
    for (size_t k = i; k < j; k++) fprintf(f, " %6.3f", s->r[k].pfi);
    fprintf(f, "   (%s)\n", r->kind);
    return j;
}

void pfi_summary_print(const pfi_summary *s, FILE *f)
{
    /* per-group tables collapse to their largest deviation; series to one line */
    fprintf(f, "\npaper vs pfi  (target: the reconstruction was calibrated to it; outcome: not tuned, "
               "follows from the model; beyond: not in the paper)\n");
    fprintf(f, "%-16s %-64s %9s %9s %9s  %s\n", "", "", "paper", "pfi", "diff", "kind");
    for (size_t i = 0; i < s->n;) {
        const pfi_srow *r = &s->r[i];
        if (!strcmp(r->section, "table 3")) {
            i = print_table3(s, i, f);
            continue;
        }
        if (r->series[0]) {
            i = print_series(s, i, f);
            continue;
        }
        int per_group = !strcmp(r->section, "table 6") || !strcmp(r->section, "table 7") ||
                        (!strcmp(r->section, "table 8") && !strncmp(r->item, "H100 ", 5)) ||
                        (!strcmp(r->section, "table 9") && !strchr(r->item, ' '));
        if (per_group) {
            size_t j = i, n = 0, worst = i;
            double wd = -1, sum = 0;
            while (j < s->n && !strcmp(s->r[j].section, r->section) &&
                   (!strcmp(r->section, "table 9") ? !strchr(s->r[j].item, ' ')
                    : !strcmp(r->section, "table 8") ? !strncmp(s->r[j].item, "H100 ", 5)
                                                     : 1)) {
                double d = fabs(s->r[j].pfi - s->r[j].paper);
                if (!(d <= wd)) wd = d, worst = j;
                sum += d;
                n++;
                j++;
            }
            char item[200];
            snprintf(item, sizeof item, "PFI of %zu groups: mean |diff| %.3f; largest at", n, n ? sum / (double)n : NAN);
            fprintf(f, "%-16s %-64s\n", r->section, item);
            fprintf(f, "%-16s   %-62.62s %9.3f %9.3f %+9.3f  %s\n", "", s->r[worst].item, s->r[worst].paper, s->r[worst].pfi,
                    s->r[worst].pfi - s->r[worst].paper, r->kind);
            i = j;
            continue;
        }
        if (isfinite(r->paper))
            fprintf(f, "%-16s %-64.64s %9.4g %9.4g %+9.3g  %s\n", r->section, r->item, r->paper, r->pfi, r->pfi - r->paper, r->kind);
        else
            fprintf(f, "%-16s %-64.64s %9s %9.4g %9s  %s%s%s\n", r->section, r->item, "-", r->pfi, "", r->kind,
                    r->note[0] ? "; " : "", r->note);
        i++;
    }
}
