/* figures.c — the report's figures, each drawn from CSV files the run
 * wrote under OUT/data (see report.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvtable.h"
#include "plot.h"
#include "report.h"
#include "strategy.h"

#define MAXP 8192

typedef struct arr {
    double x[MAXP], y[MAXP];
    size_t n;
} arr;

static pfi_table *load(const char *outdir, const char *name, pfi_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data/%s", outdir, name);
    pfi_table *t = NULL;
    if (pfi_csv_load(path, &t, err) != PFI_OK) return NULL;
    return t;
}

static const char *txt(const pfi_table *t, const char *col, size_t r)
{
    long c = pfi_table_col(t, col);
    if (c < 0 || pfi_table_coltype(t, (size_t)c) != PFI_COL_TEXT) return "";
    return pfi_table_text(t, (size_t)c, r);
}

static int family(const char *arch, const char *task)
{
    return (!strcmp(arch, "moe")) * 2 + (!strcmp(task, "ft"));
}
static const char *const famname[4] = {"dense PT", "dense FT", "MoE PT", "MoE FT"};

static void base(char *b, size_t n, const char *outdir, const char *name)
{
    snprintf(b, n, "%s/%s", outdir, name);
}

/* paper fig. 3: curves raw (per GPU) and normalized, the 25 headline groups */
static pfi_status fig_curves(const char *outdir, pfi_error *err)
{
    pfi_table *t = load(outdir, "recon_sweep.csv", err);
    if (!t) return err->code;
    static arr raw[64], nor[64];
    pfi_series sr[64], sn[64];
    int ns = 0, labelled[4] = {0};
    size_t nr = pfi_table_nrows(t);
    char seen[64][96];
    for (size_t r = 0; r < nr; r++) {
        if (strcmp(txt(t, "split", r), "headline")) continue;
        const char *g = txt(t, "group", r);
        int k;
        for (k = 0; k < ns; k++)
            if (!strcmp(seen[k], g)) break;
        if (k == ns) {
            if (ns == 64) continue;
            snprintf(seen[ns], sizeof seen[0], "%.95s", g);
            raw[ns].n = nor[ns].n = 0;
            int f = family(txt(t, "arch", r), txt(t, "task", r));
            sr[ns] = (pfi_series){raw[ns].x, raw[ns].y,
                                  0,         labelled[f]++ ? NULL : famname[f],
                                  f,         PFI_PLOT_LINE | PFI_PLOT_POINTS};
            sn[ns] = sr[ns];
            sn[ns].x = nor[ns].x;
            sn[ns].y = nor[ns].y;
            ns++;
        }
        double gpus = pfi_table_get(t, (long)r, "gpus");
        arr *a = &raw[k];
        a->x[a->n] = pfi_table_get(t, (long)r, "power_w") / gpus;
        a->y[a->n] = pfi_table_get(t, (long)r, "tokens_per_s") / gpus;
        a->n++;
    }
    /* normalize by each group's largest-power point (the uncapped run) */
    for (int k = 0; k < ns; k++) {
        arr *a = &raw[k];
        double pm = 0, tm = 0;
        for (size_t i = 0; i < a->n; i++)
            if (a->x[i] > pm) pm = a->x[i], tm = a->y[i];
        for (size_t i = 0; i < a->n; i++) {
            nor[k].x[i] = a->x[i] / pm;
            nor[k].y[i] = a->y[i] / tm;
        }
        nor[k].n = a->n;
        sr[k].n = sn[k].n = a->n;
    }
    pfi_panel p[2] = {{"Power-throughput curves (per GPU)", "GPU power per GPU (W)",
                       "tokens/s per GPU", NAN, NAN, 0, NAN, 1, NULL, 0, 0, sr, (size_t)ns, NULL},
                      {"Normalized (dashed: T proportional to P)", "power P / P_max",
                       "throughput T / T_max", 0, 1.05, 0, 1.05, 4, NULL, 0, 1, sn, (size_t)ns,
                       NULL}};
    p[1].legend = 0;
    char b[4096];
    base(b, sizeof b, outdir, "fig3_curves");
    pfi_status st = pfi_plot(b, 1500, 620, 2, 1, p, 2, err);
    pfi_table_free(t);
    return st;
}

/* paper fig. 4: PFI by architecture x task, with medians */
static pfi_status fig_families(const char *outdir, pfi_error *err)
{
    pfi_table *t = load(outdir, "recon_index.csv", err);
    if (!t) return err->code;
    static arr pts[4], med[4];
    pfi_series s[8];
    for (int f = 0; f < 4; f++) pts[f].n = med[f].n = 0;
    for (size_t r = 0; r < pfi_table_nrows(t); r++) {
        if (strcmp(txt(t, "split", r), "headline")) continue;
        int f = family(txt(t, "arch", r), txt(t, "task", r));
        double jit = ((double)(pts[f].n % 7) - 3) * 0.045;
        pts[f].x[pts[f].n] = f + jit;
        pts[f].y[pts[f].n] = pfi_table_get(t, (long)r, "pfi");
        pts[f].n++;
    }
    for (int f = 0; f < 4; f++) {
        double v[64];
        size_t n = pts[f].n;
        memcpy(v, pts[f].y, n * sizeof *v);
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && v[j] < v[j - 1]; j--) {
                double tt = v[j];
                v[j] = v[j - 1];
                v[j - 1] = tt;
            }
        double m = n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : NAN;
        med[f].x[0] = f - 0.3;
        med[f].x[1] = f + 0.3;
        med[f].y[0] = med[f].y[1] = m;
        med[f].n = 2;
        s[f] = (pfi_series){pts[f].x, pts[f].y, pts[f].n, NULL, f, PFI_PLOT_POINTS};
        s[4 + f] = (pfi_series){med[f].x, med[f].y, 2, f == 0 ? "median" : NULL, 9, PFI_PLOT_LINE};
    }
    static const char *const cats[4] = {"dense PT", "dense FT", "MoE PT", "MoE FT"};
    pfi_panel p = {"PFI by architecture and task (25 headline groups)",
                   "",
                   "PFI (Eq. 1)",
                   NAN,
                   NAN,
                   NAN,
                   NAN,
                   1,
                   cats,
                   4,
                   0,
                   s,
                   8,
                   NULL};
    char b[4096];
    base(b, sizeof b, outdir, "fig4_pfi_by_family");
    pfi_status st = pfi_plot(b, 900, 620, 1, 1, &p, 1, err);
    pfi_table_free(t);
    return st;
}

/* uncapped-run feature per group from the sweep table */
static double uncapped_feature(const pfi_table *sw, const char *gpu, const char *group,
                               const char *col)
{
    double best_cap = -1, v = NAN;
    for (size_t r = 0; r < pfi_table_nrows(sw); r++) {
        if (strcmp(txt(sw, "group", r), group) || strcmp(txt(sw, "gpu_model", r), gpu)) continue;
        double c = pfi_table_get(sw, (long)r, "cap_w");
        if (c > best_cap) best_cap = c, v = pfi_table_get(sw, (long)r, col);
    }
    return v;
}

/* paper fig. 5: PFI vs telemetry features of the uncapped run, with rho */
static pfi_status fig_features(const char *outdir, pfi_error *err)
{
    pfi_table *ix = load(outdir, "recon_index.csv", err),
              *sw = ix ? load(outdir, "recon_sweep.csv", err) : NULL;
    pfi_table *stt = sw ? load(outdir, "recon_stats.csv", err) : NULL;
    if (!stt) {
        pfi_table_free(ix);
        pfi_table_free(sw);
        return err->code;
    }
    static const char *const feat[4] = {"dram_copy_product", "DCGM_FI_PROF_DRAM_ACTIVE",
                                        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "arithmetic_intensity"};
    static const char *const lab[4] = {"DRAM copy product (fraction)", "DRAM active (fraction)",
                                       "tensor pipe active (fraction)",
                                       "arithmetic intensity (tensor / DRAM)"};
    static arr a[4][4];
    pfi_series s[4][4];
    pfi_panel p[4];
    static char notes[4][64];
    for (int k = 0; k < 4; k++) {
        for (int f = 0; f < 4; f++) a[k][f].n = 0;
        for (size_t r = 0; r < pfi_table_nrows(ix); r++) {
            if (strcmp(txt(ix, "split", r), "headline")) continue;
            int f = family(txt(ix, "arch", r), txt(ix, "task", r));
            arr *q = &a[k][f];
            q->x[q->n] =
                uncapped_feature(sw, txt(ix, "gpu_model", r), txt(ix, "group", r), feat[k]);
            q->y[q->n] = pfi_table_get(ix, (long)r, "pfi");
            q->n++;
        }
        for (int f = 0; f < 4; f++)
            s[k][f] = (pfi_series){a[k][f].x, a[k][f].y,      a[k][f].n, k == 0 ? famname[f] : NULL,
                                   f,         PFI_PLOT_POINTS};
        long row = pfi_table_find_row(stt, "feature", feat[k], "statistic", "spearman_rho");
        snprintf(notes[k], sizeof notes[k], "Spearman rho = %.2f (25 groups)",
                 pfi_table_get(stt, row, "value"));
        p[k] =
            (pfi_panel){notes[k], lab[k], "PFI (Eq. 1)", NAN, NAN, NAN, NAN, k == 0 ? 3 : 0, NULL,
                        0,        0,      s[k],          4,   NULL};
    }
    char b[4096];
    base(b, sizeof b, outdir, "fig5_pfi_vs_features");
    pfi_status st = pfi_plot(b, 1400, 1000, 2, 2, p, 4, err);
    pfi_table_free(ix);
    pfi_table_free(sw);
    pfi_table_free(stt);
    return st;
}

/* paper fig. 7: predicted vs measured PFI */
static pfi_status fig_predicted(const char *outdir, pfi_error *err)
{
    pfi_table *t = load(outdir, "recon_predict.csv", err);
    if (!t) return err->code;
    static arr a[3];
    static const char *const sp[3] = {"headline", "validation", "h100"};
    static const char *const lb[3] = {"headline (training)", "validation (held out)",
                                      "H100 (held out)"};
    pfi_series s[3];
    for (int k = 0; k < 3; k++) {
        a[k].n = 0;
        for (size_t r = 0; r < pfi_table_nrows(t); r++)
            if (!strcmp(txt(t, "split", r), sp[k])) {
                a[k].x[a[k].n] = pfi_table_get(t, (long)r, "pfi");
                a[k].y[a[k].n] = pfi_table_get(t, (long)r, "pfi_predicted");
                a[k].n++;
            }
        s[k] = (pfi_series){a[k].x, a[k].y, a[k].n, lb[k], k == 0 ? 0 : k + 2, PFI_PLOT_POINTS};
    }
    pfi_panel p = {"Predicted vs measured PFI (dram_copy_product, fit on headline groups)",
                   "measured PFI (Eq. 1)",
                   "predicted PFI",
                   1.0,
                   2.8,
                   1.0,
                   2.8,
                   1,
                   NULL,
                   0,
                   1,
                   s,
                   3,
                   NULL};
    char b[4096];
    base(b, sizeof b, outdir, "fig7_predicted_vs_measured");
    pfi_status st = pfi_plot(b, 900, 760, 1, 1, &p, 1, err);
    pfi_table_free(t);
    return st;
}

/* paper fig. 8: deficit vs the oracle by strategy across cuts */
static pfi_status fig_deficit(const char *outdir, const char *file, const char *out,
                              const char *unit, double per, int scenarios, const char *title,
                              pfi_error *err)
{
    pfi_table *t = load(outdir, file, err);
    if (!t) return err->code;
    static arr a[2][PFI_STRAT_COUNT];
    pfi_series s[2][PFI_STRAT_COUNT];
    pfi_panel p[2];
    static const char *const sc[2] = {"random", "production"};
    static char titles[2][160];
    int np = 0;
    for (int k = 0; k < 2; k++) {
        if (!(scenarios & (1 << k))) continue;
        int ns = 0;
        for (int q = 0; q < PFI_STRAT_COUNT; q++) {
            /* the strategies the table gives a colour, less the oracle: the reference */
            const pfi_strategy_ops *so = pfi_strategy_get((pfi_strategy)q);
            if (so->color < 0 || q == PFI_STRAT_ORACLE) continue;
            arr *x = &a[np][ns];
            x->n = 0;
            for (size_t r = 0; r < pfi_table_nrows(t); r++) {
                if (strcmp(txt(t, "scenario", r), sc[k]) || strcmp(txt(t, "strategy", r), so->name))
                    continue;
                x->x[x->n] = 100 * pfi_table_get(t, (long)r, "cut");
                x->y[x->n] = pfi_table_get(t, (long)r, "deficit_vs_oracle") / per;
                x->n++;
            }
            if (x->n == 0) continue;
            s[np][ns] = (pfi_series){x->x, x->y, x->n, so->name, so->color, PFI_PLOT_LINE};
            ns++;
        }
        snprintf(titles[np], sizeof titles[np], "%s: %s mix", title, sc[k]);
        p[np] = (pfi_panel){titles[np], "cluster power cut (%)",
                            unit,       0,
                            NAN,        NAN,
                            NAN,        1,
                            NULL,       0,
                            0,          s[np],
                            (size_t)ns, NULL};
        np++;
    }
    char b[4096];
    base(b, sizeof b, outdir, out);
    pfi_status st = pfi_plot(b, np == 2 ? 1500 : 900, 620, np, 1, p, (size_t)np, err);
    pfi_table_free(t);
    return st;
}

static pfi_status fig_sla(const char *outdir, pfi_error *err)
{
    pfi_table *t = load(outdir, "recon_simulate_sla.csv", err);
    if (!t) return err->code;
    static arr a[PFI_STRAT_COUNT];
    pfi_series s[PFI_STRAT_COUNT];
    int ns = 0;
    for (int q = 0; q < PFI_STRAT_COUNT; q++) { /* the strategies the table gives a colour */
        const pfi_strategy_ops *so = pfi_strategy_get((pfi_strategy)q);
        if (so->color < 0) continue;
        a[ns].n = 0;
        for (size_t r = 0; r < pfi_table_nrows(t); r++)
            if (!strcmp(txt(t, "scenario", r), "production") &&
                !strcmp(txt(t, "strategy", r), so->name)) {
                a[ns].x[a[ns].n] = 100 * pfi_table_get(t, (long)r, "cut");
                a[ns].y[a[ns].n] = pfi_table_get(t, (long)r, "sla_violations");
                a[ns].n++;
            }
        if (!a[ns].n) continue;
        s[ns] = (pfi_series){a[ns].x, a[ns].y, a[ns].n, so->name, so->color, PFI_PLOT_LINE};
        ns++;
    }
    pfi_panel p = {"SLA violations by strategy (production mix, Flex 0/1/2/3 = 10/30/30/30%)",
                   "cluster power cut (%)",
                   "jobs over their allowed loss (all workloads)",
                   0,
                   NAN,
                   NAN,
                   NAN,
                   1,
                   NULL,
                   0,
                   0,
                   s,
                   (size_t)ns,
                   NULL};
    char b[4096];
    base(b, sizeof b, outdir, "fig_sla_violations");
    pfi_status st = pfi_plot(b, 900, 620, 1, 1, &p, 1, err);
    pfi_table_free(t);
    return st;
}

static pfi_status fig_zeus_pfi(const char *outdir, pfi_error *err)
{
    pfi_table *t = load(outdir, "zeus_index.csv", err);
    if (!t) return err->code;
    static const char *const g[4] = {"A40", "V100", "P100", "RTX6000"};
    static arr a[4];
    pfi_series s[4];
    for (int k = 0; k < 4; k++) {
        a[k].n = 0;
        for (size_t r = 0; r < pfi_table_nrows(t); r++) {
            if (strcmp(txt(t, "gpu_model", r), g[k])) continue;
            double e = pfi_table_get(t, (long)r, "pfi"),
                   rb = pfi_table_get(t, (long)r, "pfi_robust");
            if (!isfinite(e) || !isfinite(rb)) continue;
            a[k].x[a[k].n] = fmax(-4, fmin(20, e));
            a[k].y[a[k].n] = fmin(6, rb);
            a[k].n++;
        }
        s[k] = (pfi_series){a[k].x, a[k].y, a[k].n, g[k], k, PFI_PLOT_POINTS};
    }
    pfi_panel p = {"Zeus traces (real measurements): Eq. 1 vs robust PFI",
                   "Eq. 1 PFI (clipped to -4..20)",
                   "robust PFI (clipped at 6)",
                   -4.5,
                   20.5,
                   0,
                   6.2,
                   2,
                   NULL,
                   0,
                   0,
                   s,
                   4,
                   NULL};
    char b[4096];
    base(b, sizeof b, outdir, "fig_zeus_pfi");
    pfi_status st = pfi_plot(b, 900, 620, 1, 1, &p, 1, err);
    pfi_table_free(t);
    return st;
}

static pfi_status fig_loop(const char *outdir, pfi_error *err)
{
    pfi_table *t = load(outdir, "recon_closed_loop.csv", err);
    if (!t) return err->code;
    static arr a[2];
    static const char *const sc[2] = {"random", "production"};
    pfi_series s[2];
    for (int k = 0; k < 2; k++) {
        a[k].n = 0;
        for (size_t r = 0; r < pfi_table_nrows(t); r++)
            if (!strcmp(txt(t, "scenario", r), sc[k])) {
                a[k].x[a[k].n] = pfi_table_get(t, (long)r, "round");
                a[k].y[a[k].n] = 100 * pfi_table_get(t, (long)r, "gap_closed");
                a[k].n++;
            }
        s[k] = (pfi_series){a[k].x, a[k].y, a[k].n, sc[k], k, PFI_PLOT_LINE | PFI_PLOT_POINTS};
    }
    pfi_panel p = {"Closed loop: share of the equal-to-oracle gap closed (30% cut)",
                   "control round (0 = pfi-aware start)",
                   "gap closed (%)",
                   -0.2,
                   NAN,
                   0,
                   105,
                   4,
                   NULL,
                   0,
                   0,
                   s,
                   2,
                   NULL};
    char b[4096];
    base(b, sizeof b, outdir, "fig_closed_loop");
    pfi_status st = pfi_plot(b, 900, 620, 1, 1, &p, 1, err);
    pfi_table_free(t);
    return st;
}

pfi_status pfi_report_figures(const char *outdir, pfi_error *err)
{
    pfi_status st;
    if ((st = fig_curves(outdir, err))) return st;
    if ((st = fig_families(outdir, err))) return st;
    if ((st = fig_features(outdir, err))) return st;
    if ((st = fig_predicted(outdir, err))) return st;
    if ((st = fig_deficit(outdir, "recon_simulate.csv", "fig8_deficit",
                          "deficit vs oracle (1000 tokens/s per job)", 100e3, 3,
                          "Throughput deficit vs the oracle", err)))
        return st;
    if ((st = fig_deficit(outdir, "zeus_simulate.csv", "fig_zeus_deficit",
                          "deficit vs oracle (T/T_max per job)", 100, 1,
                          "Zeus P100 + RTX 6000 (real traces), normalized", err)))
        return st;
    if ((st = fig_sla(outdir, err))) return st;
    if ((st = fig_zeus_pfi(outdir, err))) return st;
    return fig_loop(outdir, err);
}
