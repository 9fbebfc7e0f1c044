/* test_curve.c — curves: normalization, isotonic cleanup, interpolation,
 * the power->cap inverse map (including flat curves), the concave envelope,
 * and the selection helpers used for quantiles. */
#include "../testutil.h"

#include "util.h"

static void normalized(void **s)
{
    (void)s;
    double cap[] = {500, 700}, p[] = {800, 1000}, t[] = {90, 100}, pf[2], tf[2];
    pfi_curve c = tu_curve(2, cap, p, t);
    pfi_curve_normalized(&c, pf, tf);
    assert_near(pf[0], 0.8, 1e-15);
    assert_near(tf[0], 0.9, 1e-15);
    assert_near(pf[1], 1.0, 0);
    pfi_curve_dispose(&c);
}

static void sorts_and_rejects_duplicates(void **s)
{
    (void)s;
    double cap[] = {700, 200, 500}, p[] = {1000, 300, 800}, t[] = {100, 40, 90};
    pfi_curve c = tu_curve(3, cap, p, t);
    assert_near(c.pts[0].cap_w, 200, 0);
    assert_near(pfi_curve_uncapped(&c)->cap_w, 700, 0);
    pfi_curve_dispose(&c);
    pfi_point pts[2] = {{500, 1, 1, NAN, NAN, 1}, {500, 2, 2, NAN, NAN, 1}};
    pfi_error e;
    assert_int_equal(pfi_curve_init(&c, pts, 2, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "duplicate"));
}

static void isotonic_pava(void **s)
{
    (void)s;
    double y[] = {1, 3, 2, 4};
    assert_int_equal(pfi_isotonic_increasing(y, NULL, 4), 1);
    assert_near(y[1], 2.5, 1e-15);
    assert_near(y[2], 2.5, 1e-15);
    double w[] = {1, 3, 1, 1};
    double z[] = {1, 3, 2, 4};
    pfi_isotonic_increasing(z, w, 4);
    assert_near(z[1], (3 * 3 + 2) / 4.0, 1e-15);
    double m[] = {1, 2, 3};
    assert_int_equal(pfi_isotonic_increasing(m, NULL, 3), 0);
    /* a chain of violations pools all the way back */
    double v[] = {5, 4, 3, 2, 1};
    pfi_isotonic_increasing(v, NULL, 5);
    for (int i = 0; i < 5; i++) assert_near(v[i], 3, 1e-15);
    /* curve cleanup flags which series changed */
    double cap[] = {200, 300, 400}, p[] = {300, 290, 500}, t[] = {1, 2, 3};
    pfi_curve c = tu_curve(3, cap, p, t);
    assert_false(pfi_curve_is_monotone(&c));
    assert_int_equal(pfi_curve_isotonic(&c), 2);
    assert_true(pfi_curve_is_monotone(&c));
    assert_near(c.pts[0].power_w, 295, 1e-12);
    pfi_curve_dispose(&c);
}

static void interpolation(void **s)
{
    (void)s;
    double cap[] = {200, 400, 700}, p[] = {1000, 2000, 3000}, t[] = {50, 80, 100};
    pfi_curve c = tu_curve(3, cap, p, t);
    double v;
    assert_int_equal(pfi_curve_tokens_at_power(&c, 1500, &v, NULL), PFI_OK);
    assert_near(v, 65, 1e-12);
    assert_int_equal(pfi_curve_tokens_at_power(&c, 3000, &v, NULL), PFI_OK);
    assert_near(v, 100, 0);
    assert_int_equal(pfi_curve_tokens_at_power(&c, 1000, &v, NULL), PFI_OK);
    assert_near(v, 50, 0);
    assert_int_equal(pfi_curve_tokens_at_power(&c, 999, &v, NULL), PFI_ERANGE);
    assert_int_equal(pfi_curve_tokens_at_power(&c, 3001, &v, NULL), PFI_ERANGE);
    assert_int_equal(pfi_curve_power_at_cap(&c, 550, &v, NULL), PFI_OK);
    assert_near(v, 2500, 1e-9);
    assert_int_equal(pfi_curve_power_at_cap(&c, 100, &v, NULL), PFI_ERANGE);
    pfi_curve_dispose(&c);
    /* non-monotone curves are refused until cleaned */
    double p2[] = {1000, 900, 3000};
    c = tu_curve(3, cap, p2, t);
    assert_int_equal(pfi_curve_tokens_at_power(&c, 2000, &v, NULL), PFI_EINVAL);
    pfi_curve_dispose(&c);
    /* equal power at two caps: that power buys the higher throughput */
    double p3[] = {1000, 1000, 3000};
    c = tu_curve(3, cap, p3, t);
    assert_int_equal(pfi_curve_tokens_at_power(&c, 1000, &v, NULL), PFI_OK);
    assert_near(v, 80, 0);
    pfi_curve_dispose(&c);
}

static void inverse_map(void **s)
{
    (void)s;
    double cap[] = {200, 400, 700}, p[] = {1000, 2000, 3000}, t[] = {50, 80, 100};
    pfi_curve c = tu_curve(3, cap, p, t);
    pfi_inverse inv;
    /* target 2500 W -> cap 550 exactly */
    assert_int_equal(pfi_curve_cap_for_power(&c, 2500, &inv, NULL), PFI_OK);
    assert_near(inv.cap_w, 550, 0);
    assert_near(inv.slack_w, 0, 1e-9);
    assert_int_equal(inv.flags, PFI_INV_EXACT);
    /* target 2501 W -> 550 (551 would need 2503.33 W); slack reported */
    pfi_curve_cap_for_power(&c, 2501, &inv, NULL);
    assert_near(inv.cap_w, 550, 0);
    assert_near(inv.slack_w, 1, 1e-9);
    /* below the lowest cap's power: lowest cap, flagged */
    pfi_curve_cap_for_power(&c, 900, &inv, NULL);
    assert_near(inv.cap_w, 200, 0);
    assert_true(inv.flags & PFI_INV_BELOW_RANGE);
    assert_true(inv.slack_w < 0);
    /* above the top: top cap */
    pfi_curve_cap_for_power(&c, 5000, &inv, NULL);
    assert_near(inv.cap_w, 700, 0);
    pfi_curve_dispose(&c);
    /* flat curve (job never reaches its caps): no unique inverse */
    double pf[] = {1000, 1000, 1000};
    c = tu_curve(3, cap, pf, t);
    pfi_curve_cap_for_power(&c, 1000, &inv, NULL);
    assert_true(inv.flags & PFI_INV_FLAT);
    assert_near(inv.cap_w, 700, 0);
    pfi_curve_dispose(&c);
    /* non-integer caps: result stays within [ceil(min), floor(max)] */
    double capf[] = {100.5, 250.5}, pf2[] = {100, 250}, tf2[] = {1, 2};
    c = tu_curve(2, capf, pf2, tf2);
    pfi_curve_cap_for_power(&c, 90, &inv, NULL);
    assert_near(inv.cap_w, 101, 0);
    pfi_curve_cap_for_power(&c, 1e9, &inv, NULL);
    assert_near(inv.cap_w, 250, 0);
    pfi_curve_dispose(&c);
}

static void envelope(void **s)
{
    (void)s;
    /* convex kink at x=1 is removed; concave points stay */
    double x[] = {0, 1, 2, 3, 4}, y[] = {0, 0.5, 2, 2.5, 2.7};
    size_t idx[5];
    size_t m = pfi_concave_envelope(x, y, 5, idx);
    assert_int_equal(m, 4);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    assert_int_equal(idx[3], 4);
    /* collinear middle points are dropped */
    double x2[] = {0, 1, 2}, y2[] = {0, 1, 2};
    assert_int_equal(pfi_concave_envelope(x2, y2, 3, idx), 2);
    assert_int_equal(pfi_concave_envelope(x2, y2, 1, idx), 1);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void selection(void **s)
{
    (void)s;
    uint64_t st = 12345;
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 1 + (size_t)(pfi_mix64(st++) % 300);
        double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        for (size_t i = 0; i < n; i++) x[i] = (double)(pfi_mix64(st++) % 50); /* many ties */
        memcpy(y, x, n * sizeof *x);
        qsort(y, n, sizeof *y, cmpd);
        size_t k = (size_t)(pfi_mix64(st++) % n);
        double *z = malloc(n * sizeof *z);
        memcpy(z, x, n * sizeof *x);
        assert_true(pfi_select_kth(z, n, k) == y[k]);
        double q = (double)(pfi_mix64(st++) % 1001) / 1000.0;
        memcpy(z, x, n * sizeof *x);
        double h = (double)(n - 1) * q;
        size_t lo = (size_t)h;
        double expect = lo + 1 < n ? y[lo] + (h - (double)lo) * (y[lo + 1] - y[lo]) : y[lo];
        assert_near(pfi_quantile_select(z, n, q), expect, 1e-12);
        free(x), free(y), free(z);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(normalized),    cmocka_unit_test(sorts_and_rejects_duplicates),
        cmocka_unit_test(isotonic_pava), cmocka_unit_test(interpolation),
        cmocka_unit_test(inverse_map),   cmocka_unit_test(envelope),
        cmocka_unit_test(selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
