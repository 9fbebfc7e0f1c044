/* test_recon.c — the reconstruction's calibration targets, on the shipped
 * data/reconstruction/params.csv and the default seed, through the summary
 * path (the same protocol code as ingest): Eq. 1 per group against tables
 * 6, 7 (+-0.02), 9 (+-0.05, with the one documented exception) and 8
 * (+-0.03); group medians (+-0.03) and Kruskal-Wallis (p < 0.01); the
 * telemetry correlations; plausibility of power, throughput and clocks. */
#include "../testutil.h"

#include <stdio.h>

#include "calibrate.h"
#include "pfi/csv.h"
#include "pfi/pfi.h"
#include "pfi/stats.h"
#include "recon_io.h"
#include "util.h"

static pfi_recon R;
static pfi_synth_opts O;

typedef struct gres {
    double pfi, pfi4;
    pfi_run_summary unc; /* uncapped run */
    double sm_clock[PFI_RECON_MAX_CAPS], power_w[PFI_RECON_MAX_CAPS], tokens[PFI_RECON_MAX_CAPS];
} gres;
static gres *G;

static int setup(void **s)
{
    (void)s;
    pfi_error e;
    if (pfi_recon_load(PFI_SOURCE_DIR "/data/reconstruction/spec.csv",
                       PFI_SOURCE_DIR "/data/reconstruction/params.csv", &R, &e) != PFI_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    pfi_synth_opts_default(&O);
    G = calloc(R.n, sizeof *G);
    for (size_t i = 0; i < R.n; i++) {
        pfi_recon_group *g = &R.g[i];
        pfi_point pts[PFI_RECON_MAX_CAPS];
        for (int k = 0; k < g->ncaps; k++) {
            pfi_run_summary sm;
            if (pfi_synth_summary(g, k, &O, &sm, &e) != PFI_OK) {
                fprintf(stderr, "%s\n", e.msg);
                return -1;
            }
            pts[k] = (pfi_point){g->caps_w[k],   sm.power_w,          sm.tokens_per_s,
                                 sm.power_w_sem, sm.tokens_per_s_sem, 1};
            G[i].sm_clock[k] = sm.metric[PFI_M_SM_CLOCK];
            G[i].power_w[k] = sm.power_w;
            G[i].tokens[k] = sm.tokens_per_s;
            if (k == g->ncaps - 1) G[i].unc = sm;
            else pfi_run_summary_dispose(&sm);
        }
        pfi_curve c;
        pfi_curve_init(&c, pts, (size_t)g->ncaps, NULL);
        pfi_eq1_result r;
        pfi_eq1(&c, &r);
        G[i].pfi = r.pfi;
        G[i].pfi4 = NAN;
        static const double sub[] = {200, 500, 600, 700};
        pfi_curve c4;
        if (g->ncaps == 6 && pfi_curve_subgrid(&c, sub, 4, &c4, NULL) == PFI_OK) {
            pfi_eq1(&c4, &r);
            G[i].pfi4 = r.pfi;
            pfi_curve_dispose(&c4);
        }
        pfi_curve_dispose(&c);
    }
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    for (size_t i = 0; i < R.n; i++) pfi_run_summary_dispose(&G[i].unc);
    free(G);
    pfi_recon_dispose(&R);
    return 0;
}

static void all_groups_present(void **s)
{
    (void)s;
    size_t h = 0, v = 0, h100 = 0, runs = 0;
    for (size_t i = 0; i < R.n; i++) {
        assert_true(R.g[i].calibrated);
        h += !strcmp(R.g[i].split, "headline");
        v += !strcmp(R.g[i].split, "validation");
        h100 += !strcmp(R.g[i].split, "h100");
        runs += (size_t)R.g[i].ncaps;
    }
    assert_int_equal(h, 25);
    assert_int_equal(v, 4);
    assert_int_equal(h100, 6);
    assert_int_equal(runs, 189); /* 131 + 24 + 34 */
}

static void eq1_targets(void **s)
{
    (void)s;
    for (size_t i = 0; i < R.n; i++) {
        const pfi_recon_group *g = &R.g[i];
        double tol = !strcmp(g->split, "h100") ? 0.03 : 0.02;
        if (fabs(G[i].pfi - g->pfi_target) > tol)
            fail_msg("%s (%s): PFI %.4f, published %.2f (+-%.2f)", g->group, g->gpu_model, G[i].pfi,
                     g->pfi_target, tol);
    }
}

static void table9_targets(void **s)
{
    (void)s;
    int checked = 0;
    for (size_t i = 0; i < R.n; i++) {
        const pfi_recon_group *g = &R.g[i];
        if (isnan(g->pfi4_target)) continue;
        double e = fabs(G[i].pfi4 - g->pfi4_target);
        checked++;
        if (!strcmp(g->group, "moe-pt-gptoss20b-x8-ep1-nocompile")) {
            /* documented in docs/model.md: a 4-cap PFI below the 6-cap one needs
             * 300/400 W ratios above the 200/500/600 W ones, which a monotone
             * V-f curve cannot give; the reconstruction misses it by ~0.15 */
            assert_true(e > 0.05 && e < 0.17);
            continue;
        }
        if (e > 0.05)
            fail_msg("%s: 4-cap PFI %.4f, table 9 %.3f", g->group, G[i].pfi4, g->pfi4_target);
    }
    assert_int_equal(checked, 16);
}

static int family(const pfi_recon_group *g)
{
    if (!strcmp(g->arch, "dense")) return 0;
    return !strcmp(g->task, "pt") ? 1 : 2;
}

static void group_statistics(void **s)
{
    (void)s;
    double x[25];
    int lab[25], n = 0;
    double fam[3][25];
    int nf[3] = {0};
    for (size_t i = 0; i < R.n; i++) {
        if (strcmp(R.g[i].split, "headline")) continue;
        x[n] = G[i].pfi;
        lab[n] = family(&R.g[i]);
        fam[lab[n]][nf[lab[n]]++] = G[i].pfi;
        n++;
    }
    const double med[3] = {1.27, 1.43, 2.10};
    for (int f = 0; f < 3; f++) {
        double m = pfi_quantile_select(fam[f], (size_t)nf[f], 0.5);
        if (fabs(m - med[f]) > 0.03)
            fail_msg("family %d median %.4f, published %.2f", f, m, med[f]);
    }
    assert_int_equal(nf[0], 14);
    assert_int_equal(nf[1], 7);
    assert_int_equal(nf[2], 4);
    double H, p;
    int df;
    pfi_kruskal(x, lab, (size_t)n, 3, &H, &df, &p);
    print_message("Kruskal-Wallis H %.3f df %d p %.5f (paper 12.37, 0.0021)\n", H, df, p);
    assert_true(p < 0.01);
}

static void telemetry_targets(void **s)
{
    (void)s;
    double pfi[25], dcp[25], ten[25], dd[25], dp[25], md[25], mp[25];
    int n = 0, nd = 0, nm = 0;
    for (size_t i = 0; i < R.n; i++) {
        if (strcmp(R.g[i].split, "headline")) continue;
        pfi[n] = G[i].pfi;
        dcp[n] = G[i].unc.derived[PFI_D_DRAM_COPY_PRODUCT];
        ten[n] = G[i].unc.metric[PFI_M_PIPE_TENSOR_ACTIVE];
        if (!strcmp(R.g[i].arch, "dense")) dd[nd] = dcp[n], dp[nd++] = pfi[n];
        else md[nm] = dcp[n], mp[nm++] = pfi[n];
        n++;
    }
    double rho, p, b0, b1, r2;
    pfi_spearman(dcp, pfi, (size_t)n, &rho, &p);
    print_message("rho(dcp, PFI) %.3f p %.4f (paper 0.535, 0.006)\n", rho, p);
    assert_true(rho >= 0.45 && rho <= 0.62);
    pfi_spearman(dd, dp, (size_t)nd, &rho, &p);
    print_message("within dense %.3f (paper -0.178)\n", rho);
    assert_true(fabs(rho) < 0.3);
    pfi_spearman(md, mp, (size_t)nm, &rho, &p);
    print_message("within MoE %.3f (paper 0.509)\n", rho);
    assert_true(rho > 0);
    pfi_spearman(ten, pfi, (size_t)n, &rho, &p);
    assert_true(rho < 0);
    pfi_ols1(dcp, pfi, (size_t)n, &b0, &b1, &r2);
    print_message("OLS PFI ~ dcp: R^2 %.3f (paper 0.675)\n", r2);
    assert_true(fabs(r2 - 0.675) <= 0.07);
}

static void plausibility(void **s)
{
    (void)s;
    for (size_t i = 0; i < R.n; i++) {
        const pfi_recon_group *g = &R.g[i];
        const pfi_run_summary *u = &G[i].unc;
        double per_gpu = u->power_w / g->gpus;
        if (per_gpu < 350 || per_gpu > 700)
            fail_msg("%s: uncapped %.1f W per GPU", g->group, per_gpu);
        /* throughput per GPU follows MFU x peak / FLOPs per token: MFU 5%..60% */
        double mfu =
            u->tokens_per_s * g->job.flops_per_token / (g->gpus * g->hw->bf16_dense_tflops * 1e12);
        if (mfu < 0.05 || mfu > 0.6) fail_msg("%s: uncapped MFU %.3f", g->group, mfu);
        for (int k = 1; k < g->ncaps; k++) {
            if (G[i].sm_clock[k] < G[i].sm_clock[k - 1] - 1e-9)
                fail_msg("%s: SM clock falls from %.0f to %.0f MHz as the cap rises", g->group,
                         G[i].sm_clock[k - 1], G[i].sm_clock[k]);
            if (G[i].power_w[k] <= G[i].power_w[k - 1] ||
                G[i].tokens[k] <= G[i].tokens[k - 1] * 0.995)
                fail_msg("%s: power or throughput not increasing with the cap", g->group);
        }
        /* a cap is an upper bound on the measured power */
        for (int k = 0; k < g->ncaps; k++)
            if (G[i].power_w[k] > g->caps_w[k] * g->gpus * 1.02)
                fail_msg("%s: %.0f W over the %g W cap", g->group, G[i].power_w[k] / g->gpus,
                         g->caps_w[k]);
    }
}

static void deterministic(void **s)
{
    (void)s;
    pfi_run_summary a, b, c;
    pfi_synth_opts o2 = O;
    assert_int_equal(pfi_synth_summary(&R.g[3], 2, &O, &a, NULL), PFI_OK);
    assert_int_equal(pfi_synth_summary(&R.g[3], 2, &O, &b, NULL), PFI_OK);
    o2.seed = 2;
    assert_int_equal(pfi_synth_summary(&R.g[3], 2, &o2, &c, NULL), PFI_OK);
    assert_true(a.power_w == b.power_w && a.tokens_per_s == b.tokens_per_s);
    assert_true(a.power_w != c.power_w);
    /* the power-only mask used by calibration gives the same power and throughput */
    o2 = O;
    o2.metric_mask = PFI_SYNTH_POWER_ONLY;
    pfi_run_summary d;
    assert_int_equal(pfi_synth_summary(&R.g[3], 2, &o2, &d, NULL), PFI_OK);
    assert_true(d.power_w == a.power_w && d.tokens_per_s == a.tokens_per_s);
    pfi_run_summary_dispose(&a);
    pfi_run_summary_dispose(&b);
    pfi_run_summary_dispose(&c);
    pfi_run_summary_dispose(&d);
}

static void fleet(void **s)
{
    (void)s;
    pfi_recon f;
    assert_int_equal(pfi_recon_draw_fleet(&R, 40, 7, &f, NULL), PFI_OK);
    assert_int_equal(f.n, 40);
    int distinct_gpus = 0, seen[64] = {0};
    for (size_t i = 0; i < f.n; i++) {
        assert_true(f.g[i].job.phi > 0.1 && f.g[i].job.phi < 1);
        assert_string_equal(f.g[i].split, "fleet");
        if (!seen[f.g[i].gpus % 64]++) distinct_gpus++;
    }
    assert_true(distinct_gpus >= 2);
    pfi_run_summary sm;
    assert_int_equal(pfi_synth_summary(&f.g[0], 0, &O, &sm, NULL), PFI_OK);
    assert_true(!isnan(sm.derived[PFI_D_DRAM_COPY_PRODUCT]));
    pfi_run_summary_dispose(&sm);
    pfi_recon_dispose(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_groups_present), cmocka_unit_test(eq1_targets),
        cmocka_unit_test(table9_targets),     cmocka_unit_test(group_statistics),
        cmocka_unit_test(telemetry_targets),  cmocka_unit_test(plausibility),
        cmocka_unit_test(deterministic),      cmocka_unit_test(fleet),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
