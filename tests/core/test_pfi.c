/* test_pfi.c — Eq. 1, its exclusion rule, the Appendix A variants, the
 * Monte Carlo CI (coverage on synthetic data with known noise), sub-grids,
 * and the robust estimate's verdicts. */
#include "../testutil.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "pfi/pfi.h"

static void eq1_hand_cases(void **s)
{
    (void)s;
    /* -5% power / -2% throughput -> 2.5 */
    double cap[] = {600, 700}, p[] = {950, 1000}, t[] = {98, 100};
    pfi_curve c = tu_curve(2, cap, p, t);
    pfi_eq1_result r;
    pfi_eq1(&c, &r);
    assert_near(r.pfi, 2.5, 1e-12);
    assert_int_equal(r.n_used, 1);
    assert_int_equal(r.n_excluded, 0);
    pfi_curve_dispose(&c);
    /* -5%/-5% -> 1 */
    double t2[] = {95, 100};
    c = tu_curve(2, cap, p, t2);
    pfi_eq1(&c, &r);
    assert_near(r.pfi, 1.0, 1e-12);
    pfi_curve_dispose(&c);
    /* mean over caps: ratios 2.5 (-5%/-2%) and 2 (-20%/-10%) -> 2.25 */
    double cap3[] = {500, 600, 700}, p3[] = {800, 950, 1000}, t3[] = {90, 98, 100};
    c = tu_curve(3, cap3, p3, t3);
    pfi_eq1(&c, &r);
    assert_near(r.pfi, 2.25, 1e-12);
    assert_near(r.ratio_min, 2.0, 1e-12);
    assert_near(r.ratio_max, 2.5, 1e-12);
    pfi_curve_dispose(&c);
}

static void eq1_exclusion(void **s)
{
    (void)s;
    /* a capped run equal to T_max and one faster are excluded and counted */
    double cap[] = {400, 500, 600, 700}, p[] = {800, 900, 950, 1000}, t[] = {90, 100, 101, 100};
    pfi_curve c = tu_curve(4, cap, p, t);
    pfi_eq1_result r;
    pfi_eq1(&c, &r);
    assert_int_equal(r.n_used, 1);
    assert_int_equal(r.n_excluded, 2);
    assert_near(r.pfi, 2.0, 1e-12);
    pfi_curve_dispose(&c);
    /* all excluded -> NaN */
    double t2[] = {100, 100, 101, 100};
    c = tu_curve(4, cap, p, t2);
    pfi_eq1(&c, &r);
    assert_true(isnan(r.pfi));
    assert_int_equal(r.n_excluded, 3);
    pfi_curve_dispose(&c);
    /* a single point: no capped run */
    double c1[] = {700}, p1[] = {1000}, t1[] = {100};
    c = tu_curve(1, c1, p1, t1);
    pfi_eq1(&c, &r);
    assert_true(isnan(r.pfi));
    assert_int_equal(r.n_used + r.n_excluded, 0);
    pfi_curve_dispose(&c);
}

static void area_variant(void **s)
{
    (void)s;
    /* a curve on the diagonal has area 0 */
    double cap[] = {200, 400, 700}, p[] = {200, 400, 700}, t[] = {2, 4, 7};
    pfi_curve c = tu_curve(3, cap, p, t);
    assert_near(pfi_area(&c), 0.0, 1e-12);
    pfi_curve_dispose(&c);
    /* hand computed: normalized points (0.5,0.8),(1,1):
     * trapezoids from (0,0): 0.5*0.8/2 = 0.2; (0.8+1)/2*0.5 = 0.45; total 0.65 - 0.5 = 0.15 */
    double cap2[] = {350, 700}, p2[] = {500, 1000}, t2[] = {80, 100};
    c = tu_curve(2, cap2, p2, t2);
    assert_near(pfi_area(&c), 0.15, 1e-12);
    pfi_curve_dispose(&c);
    /* sorted by power, not by cap: swapping which cap has which power is the same area */
    double cap3[] = {300, 350, 700}, p3[] = {600, 500, 1000}, t3[] = {85, 80, 100};
    double cap4[] = {300, 350, 700}, p4[] = {500, 600, 1000}, t4[] = {80, 85, 100};
    pfi_curve a = tu_curve(3, cap3, p3, t3), b = tu_curve(3, cap4, p4, t4);
    assert_near(pfi_area(&a), pfi_area(&b), 1e-12);
    pfi_curve_dispose(&a);
    pfi_curve_dispose(&b);
}

static void elasticity_variant(void **s)
{
    (void)s;
    /* T = k P^0.5 exactly -> a = 0.5, 1-a = 0.5, 1/a = 2 */
    double cap[4], p[4], t[4];
    for (int i = 0; i < 4; i++) {
        cap[i] = 400 + 100 * i;
        p[i] = 1000 + 500 * i;
        t[i] = 3.0 * sqrt(p[i]);
    }
    pfi_curve c = tu_curve(4, cap, p, t);
    pfi_elasticity_result r;
    assert_int_equal(pfi_elasticity(&c, &r, NULL), PFI_OK);
    assert_near(r.a, 0.5, 1e-12);
    assert_near(r.one_minus_a, 0.5, 1e-12);
    assert_near(r.inv_a, 2.0, 1e-12);
    assert_near(r.b, log(3.0), 1e-9);
    assert_near(r.r2, 1.0, 1e-12);
    pfi_curve_dispose(&c);
    /* all at one power -> error */
    double pc[] = {1000, 1000};
    double cc[] = {600, 700}, tc[] = {1, 2};
    c = tu_curve(2, cc, pc, tc);
    assert_int_not_equal(pfi_elasticity(&c, &r, NULL), PFI_OK);
    pfi_curve_dispose(&c);
}

/* CI coverage: true curve with known PFI, each trial draws measured points
 * with known SEMs; the 95% interval should contain the truth ~95% of the time. */
static void ci_coverage(void **s)
{
    (void)s;
    double cap[] = {200, 300, 400, 500, 600, 700};
    double ptrue[] = {1600, 2400, 3200, 4000, 4800, 5600};
    double ttrue[6];
    for (int i = 0; i < 6; i++) ttrue[i] = 1000.0 * pow(ptrue[i] / 5600.0, 0.6);
    pfi_curve truth = tu_curve(6, cap, ptrue, ttrue);
    pfi_eq1_result er;
    pfi_eq1(&truth, &er);
    double true_pfi = er.pfi;
    pfi_curve_dispose(&truth);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(rng, 42);
    pfi_ci_ctx *ctx = pfi_ci_ctx_new(2000);
    pfi_ci_opts o;
    pfi_ci_opts_default(&o);
    o.resamples = 2000;
    const int trials = 400;
    int covered = 0;
    const double rsp = 0.004, rst = 0.005;
    for (int k = 0; k < trials; k++) {
        pfi_point pts[6];
        for (int i = 0; i < 6; i++) {
            pts[i].cap_w = cap[i];
            pts[i].power_w = ptrue[i] * (1 + gsl_ran_gaussian(rng, rsp));
            pts[i].tokens_per_s = ttrue[i] * (1 + gsl_ran_gaussian(rng, rst));
            pts[i].power_w_sem = ptrue[i] * rsp;
            pts[i].tokens_per_s_sem = ttrue[i] * rst;
            pts[i].repeats = 1;
        }
        pfi_curve c;
        assert_int_equal(pfi_curve_init(&c, pts, 6, NULL), PFI_OK);
        pfi_ci_result r;
        assert_int_equal(pfi_eq1_ci(ctx, &c, &o, (uint64_t)k, &r, NULL), PFI_OK);
        assert_true(r.lo < r.hi);
        if (r.lo <= true_pfi && true_pfi <= r.hi) covered++;
        pfi_curve_dispose(&c);
    }
    double cov = (double)covered / trials;
    print_message("CI coverage %.3f over %d trials (true PFI %.4f)\n", cov, trials, true_pfi);
    assert_true(cov >= 0.91 && cov <= 0.99);
    pfi_ci_ctx_free(ctx);
    gsl_rng_free(rng);
}

static void ci_reproducible(void **s)
{
    (void)s;
    double cap[] = {500, 600, 700}, p[] = {800, 950, 1000}, t[] = {90, 98, 100};
    pfi_curve c = tu_curve(3, cap, p, t);
    pfi_ci_ctx *ctx = pfi_ci_ctx_new(10000);
    pfi_ci_opts o;
    pfi_ci_opts_default(&o);
    pfi_ci_result a, b, d;
    pfi_eq1_ci(ctx, &c, &o, 7, &a, NULL);
    pfi_eq1_ci(ctx, &c, &o, 7, &b, NULL);
    pfi_eq1_ci(ctx, &c, &o, 8, &d, NULL);
    assert_true(a.lo == b.lo && a.hi == b.hi);
    assert_true(a.lo != d.lo);
    assert_true(a.lo < 2.25 && 2.25 < a.hi);
    /* defaults: 0.04% / 0.05% relative SEM -> a narrow interval */
    assert_true(a.hi - a.lo < 0.2);
    /* a noise floor widens it */
    o.noise.rel_floor = 0.005;
    pfi_eq1_ci(ctx, &c, &o, 7, &d, NULL);
    assert_true(d.hi - d.lo > a.hi - a.lo);
    /* too many resamples for the context is an error */
    o.resamples = 20000;
    assert_int_equal(pfi_eq1_ci(ctx, &c, &o, 7, &d, NULL), PFI_EINVAL);
    pfi_ci_ctx_free(ctx);
    pfi_curve_dispose(&c);
}

/* A 13-cap curve flat until its lowest caps (the shape of a real V100
 * ShuffleNet sweep): nine capped runs at exactly T_max are excluded from
 * Eq. 1. Re-applying the exclusion per resample let them re-enter with
 * near-zero denominators and put the whole interval above the estimate. */
static void ci_flat_curve(void **s)
{
    (void)s;
    double cap[] = {100, 112.5, 125, 137.5, 150, 162.5, 175, 187.5, 200, 212.5, 225, 237.5, 250};
    double p[] = {100, 112, 124, 136, 148, 160, 171, 180, 188, 194, 198, 200, 201};
    double t[] = {700, 880, 985, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    pfi_curve c = tu_curve(13, cap, p, t);
    pfi_eq1_result e;
    pfi_eq1(&c, &e);
    assert_int_equal(e.n_excluded, 9);
    pfi_ci_ctx *ctx = pfi_ci_ctx_new(10000);
    pfi_ci_opts o;
    pfi_ci_opts_default(&o);
    pfi_ci_result r;
    assert_int_equal(pfi_eq1_ci(ctx, &c, &o, 1, &r, NULL), PFI_OK);
    assert_int_equal(r.verdict, PFI_CI_OK);
    assert_true(r.lo <= e.pfi && e.pfi <= r.hi);
    assert_true(r.hi < 1.2 * e.pfi); /* the excluded caps stay out */
    assert_int_equal(r.n_flip, 0);
    pfi_curve_dispose(&c);
    /* a used cap whose 0.01% slowdown is inside its 0.05% SEM: unbounded */
    t[8] = 999.9;
    c = tu_curve(13, cap, p, t);
    assert_int_equal(pfi_eq1_ci(ctx, &c, &o, 1, &r, NULL), PFI_OK);
    assert_int_equal(r.verdict, PFI_CI_UNSTABLE);
    assert_true(isnan(r.lo) && isnan(r.hi));
    assert_non_null(strstr(r.reason, "cap 200 W"));
    assert_string_equal(pfi_ci_verdict_name(r.verdict), "unstable");
    pfi_curve_dispose(&c);
    /* Eq. 1 undefined (no capped run slower): no interval, no verdict */
    double t0[] = {1000, 1000, 1000};
    c = tu_curve(3, cap, p, t0);
    assert_int_equal(pfi_eq1_ci(ctx, &c, &o, 1, &r, NULL), PFI_OK);
    assert_int_equal(r.verdict, PFI_CI_NONE);
    assert_true(isnan(r.lo) && isnan(r.hi));
    pfi_curve_dispose(&c);
    pfi_ci_ctx_free(ctx);
}

/* Property: over many random curves (flat, noisy, excluded caps, caps within
 * noise, SEMs from 0 to 5%), the interval contains Eq. 1's estimate, or is
 * empty with verdict unstable and a reason, or Eq. 1 is undefined. */
static void ci_contains_estimate(void **s)
{
    (void)s;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(rng, 2026);
    pfi_ci_ctx *ctx = pfi_ci_ctx_new(500);
    pfi_ci_opts o;
    pfi_ci_opts_default(&o);
    o.resamples = 500;
    int n_ok = 0, n_unstable = 0;
    for (int k = 0; k < 3000; k++) {
        size_t n = 2 + gsl_rng_uniform_int(rng, 12);
        double flat_frac = gsl_rng_uniform(rng), rel_sem = pow(10, -4 + 2.7 * gsl_rng_uniform(rng));
        pfi_point pts[13];
        for (size_t i = 0; i < n; i++) {
            double x = (double)(i + 1) / (double)n; /* cap as a fraction of the largest */
            pts[i].cap_w = 100 + 300 * x;
            pts[i].power_w = 100 + 300 * x * (0.5 + 0.5 * gsl_rng_uniform(rng));
            double slow = x >= 1 - flat_frac ? 0 : (1 - x) * gsl_rng_uniform(rng);
            pts[i].tokens_per_s = 1000 * (1 - slow) + gsl_ran_gaussian(rng, 1000 * rel_sem);
            int kind = (int)gsl_rng_uniform_int(rng, 3);
            pts[i].tokens_per_s_sem = kind == 0 ? NAN : kind == 1 ? 0 : 1000 * rel_sem;
            pts[i].power_w_sem = kind == 0 ? NAN : pts[i].power_w * rel_sem;
            pts[i].repeats = 1;
        }
        pfi_curve c;
        assert_int_equal(pfi_curve_init(&c, pts, n, NULL), PFI_OK);
        o.noise.rel_floor = gsl_rng_uniform(rng) < 0.5 ? 0 : rel_sem;
        pfi_eq1_result e;
        pfi_eq1(&c, &e);
        pfi_ci_result r;
        assert_int_equal(pfi_eq1_ci(ctx, &c, &o, (uint64_t)k, &r, NULL), PFI_OK);
        if (isnan(e.pfi)) {
            assert_int_equal(r.verdict, PFI_CI_NONE);
            assert_true(isnan(r.lo) && isnan(r.hi));
        } else if (r.verdict == PFI_CI_OK) {
            assert_true(r.lo <= e.pfi && e.pfi <= r.hi);
            n_ok++;
        } else {
            assert_int_equal(r.verdict, PFI_CI_UNSTABLE);
            assert_true(isnan(r.lo) && isnan(r.hi));
            assert_true(r.reason[0] != '\0');
            n_unstable++;
        }
        pfi_curve_dispose(&c);
    }
    print_message("random curves: %d ok, %d unstable\n", n_ok, n_unstable);
    assert_true(n_ok > 300 && n_unstable > 300); /* both branches exercised */
    pfi_ci_ctx_free(ctx);
    gsl_rng_free(rng);
}

static void subgrid(void **s)
{
    (void)s;
    double cap[] = {200, 300, 400, 500, 600, 700};
    double p[] = {1600, 2300, 3000, 3800, 4600, 5000};
    double t[] = {500, 700, 850, 930, 980, 1000};
    pfi_curve c = tu_curve(6, cap, p, t), sub;
    double g4[] = {200, 500, 600, 700};
    assert_int_equal(pfi_curve_subgrid(&c, g4, 4, &sub, NULL), PFI_OK);
    assert_int_equal(sub.n, 4);
    pfi_eq1_result r;
    pfi_eq1(&sub, &r);
    double expect = ((1 - 1600 / 5000.) / (1 - 0.5) + (1 - 3800 / 5000.) / (1 - 0.93) +
                     (1 - 4600 / 5000.) / (1 - 0.98)) /
                    3;
    assert_near(r.pfi, expect, 1e-12);
    pfi_curve_dispose(&sub);
    double bad[] = {200, 550, 700};
    pfi_error e;
    assert_int_equal(pfi_curve_subgrid(&c, bad, 3, &sub, &e), PFI_ENOTFOUND);
    assert_non_null(strstr(e.msg, "550"));
    pfi_curve_dispose(&c);
}

static void robust_verdicts(void **s)
{
    (void)s;
    pfi_robust_opts o;
    pfi_robust_opts_default(&o);
    pfi_robust_result r;
    /* power-bound, elastic: loss = reduction / 2 exactly -> PFI 2, ok */
    double cap[] = {100, 150, 200, 250}, p[] = {100, 150, 200, 250};
    double t[] = {1 - 0.6 / 2, 1 - 0.4 / 2, 1 - 0.2 / 2, 1};
    pfi_curve c = tu_curve(4, cap, p, t);
    pfi_robust(&c, &o, &r);
    assert_int_equal(r.verdict, PFI_VERDICT_OK);
    assert_near(r.pfi_robust, 2.0, 1e-9);
    assert_near(r.pfi_noise_aware, 2.0, 1e-9);
    assert_int_equal(r.n_fit, 3);
    pfi_curve_dispose(&c);
    /* job never reaches its cap: power flat -> not-power-bound */
    double pf[] = {120, 121, 119, 120}, tf[] = {1.02, 0.98, 1.01, 1};
    c = tu_curve(4, cap, pf, tf);
    pfi_robust(&c, &o, &r);
    assert_int_equal(r.verdict, PFI_VERDICT_NOT_POWER_BOUND);
    assert_true(isnan(r.pfi_robust));
    pfi_curve_dispose(&c);
    /* sheds power but throughput rises -> non-positive-slope with a finite lower bound */
    double tr[] = {1.01, 1.02, 1.01, 1};
    c = tu_curve(4, cap, p, tr);
    pfi_robust(&c, &o, &r);
    assert_int_equal(r.verdict, PFI_VERDICT_NON_POSITIVE_SLOPE);
    assert_true(isfinite(r.pfi_robust_lo) && r.pfi_robust_lo > 0);
    pfi_curve_dispose(&c);
    /* one small reduction with a loss inside the noise -> noisy */
    double cap2[] = {225, 250}, p2[] = {230, 250}, t2[] = {0.99, 1};
    c = tu_curve(2, cap2, p2, t2);
    pfi_robust(&c, &o, &r);
    assert_int_equal(r.verdict, PFI_VERDICT_NOISY);
    assert_true(isfinite(r.pfi_robust));
    assert_true(isnan(r.pfi_noise_aware)); /* loss not beyond 2 SE */
    pfi_curve_dispose(&c);
    /* one point only */
    double c1[] = {250}, p1[] = {250}, t1[] = {1};
    c = tu_curve(1, c1, p1, t1);
    pfi_robust(&c, &o, &r);
    assert_int_equal(r.verdict, PFI_VERDICT_TOO_FEW_POINTS);
    pfi_curve_dispose(&c);
    /* SEM columns are used when present: tiny SEMs make a 1% loss significant */
    pfi_point pts[2] = {{225, 230, 0.99, 0.01, 0.0001, 1}, {250, 250, 1, 0.01, 0.0001, 1}};
    pfi_curve_init(&c, pts, 2, NULL);
    pfi_robust(&c, &o, &r);
    assert_int_equal(r.verdict, PFI_VERDICT_OK);
    assert_near(r.pfi_robust, 8.0, 1e-6);
    pfi_curve_dispose(&c);
}

static void noise_estimate(void **s)
{
    (void)s;
    /* two groups whose caps never bind: power 100 +- known deviations */
    double cap[] = {200, 250, 300}, p1[] = {99, 100, 101}, t1[] = {1, 1, 1};
    double p2[] = {100, 100, 100}, t2[] = {0.98, 1.00, 1.02};
    pfi_curve a = tu_curve(3, cap, p1, t1), b = tu_curve(3, cap, p2, t2);
    const pfi_curve *cv[] = {&a, &b};
    pfi_noise_estimate ne;
    pfi_estimate_noise(cv, NULL, 2, 1.2, &ne);
    assert_int_equal(ne.n_groups, 2);
    assert_int_equal(ne.n_points, 6);
    /* power: deviations (-0.01,0,0.01) and zeros, dof 4 -> sqrt(0.0002/4) */
    assert_near(ne.rel_sd_power, sqrt(0.0002 / 4), 1e-12);
    assert_near(ne.rel_sd_tokens, sqrt(0.0008 / 4), 1e-12);
    pfi_curve_dispose(&a);
    pfi_curve_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eq1_hand_cases), cmocka_unit_test(eq1_exclusion),
        cmocka_unit_test(area_variant),   cmocka_unit_test(elasticity_variant),
        cmocka_unit_test(ci_coverage),    cmocka_unit_test(ci_reproducible),
        cmocka_unit_test(ci_flat_curve),  cmocka_unit_test(ci_contains_estimate),
        cmocka_unit_test(subgrid),        cmocka_unit_test(robust_verdicts),
        cmocka_unit_test(noise_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
