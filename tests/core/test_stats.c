/* test_stats.c — every statistic against a textbook answer or a hand
 * computation: Spearman (Wikipedia's IQ/TV example; the paper's p-values
 * at n = 25 and n = 11), Kruskal–Wallis (R's kruskal.test example), Dunn's
 * z by hand, Holm and BH (R's p.adjust), OLS, hat values, min-norm lstsq. */
#include "../testutil.h"

#include "pfi/stats.h"

static void ranks_ties(void **s)
{
    (void)s;
    double x[] = {10, 20, 20, 30, 20}, r[5];
    double t = pfi_ranks(x, 5, r);
    assert_near(r[0], 1, 0);
    assert_near(r[1], 3, 0);
    assert_near(r[2], 3, 0);
    assert_near(r[4], 3, 0);
    assert_near(r[3], 5, 0);
    assert_near(t, 24, 0); /* one tie group of 3: 27 - 3 */
}

static void spearman(void **s)
{
    (void)s;
    double iq[] = {106, 86, 100, 101, 99, 103, 97, 113, 112, 110};
    double tv[] = {7, 0, 27, 50, 28, 29, 20, 12, 6, 17};
    double rho, p;
    pfi_spearman(iq, tv, 10, &rho, &p);
    assert_near(rho, -29.0 / 165.0, 1e-12);
    assert_near(p, 0.6272, 5e-4);
    double x[25], y[25];
    for (int i = 0; i < 25; i++) x[i] = y[i] = i;
    pfi_spearman(x, y, 25, &rho, &p);
    assert_near(rho, 1, 1e-12);
    assert_near(p, 0, 0);
    /* constant -> NaN; n < 3 -> NaN */
    double c[3] = {1, 1, 1};
    pfi_spearman(x, c, 3, &rho, &p);
    assert_true(isnan(rho));
    pfi_spearman(x, y, 2, &rho, &p);
    assert_true(isnan(rho));
}

/* the t approximation reproduces the paper's p = 0.006 at n = 25 (rho 0.535)
 * and p = 0.11 at n = 11 (rho 0.509) */
static void paper_pvalues(void **s)
{
    (void)s;
    assert_near(pfi_spearman_pvalue(0.535, 25), 0.006, 0.0005);
    assert_near(pfi_spearman_pvalue(0.509, 11), 0.11, 0.005);
    assert_near(pfi_spearman_pvalue(-0.535, 25), pfi_spearman_pvalue(0.535, 25), 1e-15);
}

static void kruskal(void **s)
{
    (void)s;
    /* R: kruskal.test(list(c(2.9,3.0,2.5,2.6,3.2), c(3.8,2.7,4.0,2.4), c(2.8,3.4,3.7,2.2,2.0)))
     * Kruskal-Wallis chi-squared = 0.77143, df = 2, p-value = 0.68 */
    double x[] = {2.9, 3.0, 2.5, 2.6, 3.2, 3.8, 2.7, 4.0, 2.4, 2.8, 3.4, 3.7, 2.2, 2.0};
    int g[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2};
    double H, p;
    int df;
    pfi_kruskal(x, g, 14, 3, &H, &df, &p);
    assert_near(H, 0.771428571, 1e-6);
    assert_int_equal(df, 2);
    assert_near(p, 0.68, 0.005);
    /* ties change H by the correction factor */
    double xt[] = {1, 1, 2, 2, 3, 3};
    int gt[] = {0, 0, 1, 1, 2, 2};
    pfi_kruskal(xt, gt, 6, 3, &H, &df, &p);
    /* ranks 1.5,1.5,3.5,3.5,5.5,5.5: uncorrected 12/42*(9+49+121)/2*... computed: */
    double unc = 12.0 / (6 * 7) * (3.0 * 3.0 / 2 + 7.0 * 7.0 / 2 + 11.0 * 11.0 / 2) - 3 * 7;
    double corr = 1 - 3 * 6.0 / (216 - 6);
    assert_near(H, unc / corr, 1e-12);
}

static void dunn(void **s)
{
    (void)s;
    double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int g[] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
    double z[3], p[3];
    assert_int_equal(pfi_dunn(x, g, 9, 3, z, p), 3);
    /* mean ranks 2, 5, 8; var = N(N+1)/12 * (1/3 + 1/3) = 7.5 * 2/3 = 5 */
    assert_near(z[0], (2.0 - 5.0) / sqrt(5.0), 1e-12);
    assert_near(z[1], (2.0 - 8.0) / sqrt(5.0), 1e-12);
    assert_near(z[2], (5.0 - 8.0) / sqrt(5.0), 1e-12);
    assert_near(p[0], 2 * 0.5 * erfc(3 / sqrt(5.0) / sqrt(2.0)), 1e-9);
}

static void adjustments(void **s)
{
    (void)s;
    double p[] = {0.01, 0.02, 0.03, 0.04, 0.05}, a[5];
    pfi_bh(p, 5, a); /* R: p.adjust(..., "BH") -> all 0.05 */
    for (int i = 0; i < 5; i++) assert_near(a[i], 0.05, 1e-12);
    pfi_holm(p, 5, a); /* R: 0.05 0.08 0.09 0.09 0.09 */
    double h[] = {0.05, 0.08, 0.09, 0.09, 0.09};
    for (int i = 0; i < 5; i++) assert_near(a[i], h[i], 1e-12);
    double p2[] = {0.0006, 0.0568, 0.1020}; /* the paper's Dunn p_raw */
    pfi_holm(p2, 3, a);
    assert_near(a[0], 0.0018, 1e-9); /* paper: p_holm 0.0017 from unrounded p */
    assert_near(a[1], 0.1136, 1e-9); /* paper: 0.1137 */
    assert_near(a[2], 0.1136, 1e-9); /* monotone: max(0.1136, 0.1020) */
}

static void ols(void **s)
{
    (void)s;
    double x[] = {1, 2, 3, 4}, y[] = {3, 5, 7, 9.5}, b0, b1, r2;
    pfi_ols1(x, y, 4, &b0, &b1, &r2);
    assert_near(b1, 2.15, 1e-12);
    assert_near(b0, 0.75, 1e-12);
    double sse = 0, sst = 0, m = 6.125;
    for (int i = 0; i < 4; i++) {
        double e = y[i] - (b0 + b1 * x[i]);
        sse += e * e;
        sst += (y[i] - m) * (y[i] - m);
    }
    assert_near(r2, 1 - sse / sst, 1e-12);
    double h[4];
    pfi_hat_values(x, 4, h);
    assert_near(h[0], 0.25 + 2.25 / 5, 1e-12);
    double sum = 0;
    for (int i = 0; i < 4; i++) sum += h[i];
    assert_near(sum, 2, 1e-12); /* trace of the hat matrix = parameters */
}

static void lstsq(void **s)
{
    (void)s;
    /* tall, full rank: same as OLS */
    double X[] = {1, 1, 1, 2, 1, 3, 1, 4}, y[] = {3, 5, 7, 9.5}, b[2];
    size_t r;
    assert_int_equal(pfi_lstsq(X, 4, 2, y, b, 0, &r, NULL), PFI_OK);
    assert_int_equal(r, 2);
    assert_near(b[0], 0.75, 1e-10);
    assert_near(b[1], 2.15, 1e-10);
    /* wide: one equation, two unknowns -> minimum norm */
    double W[] = {1, 1}, yw[] = {2}, bw[2];
    assert_int_equal(pfi_lstsq(W, 1, 2, yw, bw, 0, &r, NULL), PFI_OK);
    assert_int_equal(r, 1);
    assert_near(bw[0], 1, 1e-12);
    assert_near(bw[1], 1, 1e-12);
    /* tall, rank deficient (duplicated column): min norm splits the weight */
    double D[] = {1, 1, 2, 2, 3, 3}, yd[] = {2, 4, 6}, bd[2];
    pfi_lstsq(D, 3, 2, yd, bd, 0, &r, NULL);
    assert_int_equal(r, 1);
    assert_near(bd[0], 1, 1e-10);
    assert_near(bd[1], 1, 1e-10);
    /* 3 x 5 underdetermined: the solution interpolates and has minimum norm */
    double U[] = {1, 0, 2, 0, 1, 0, 1, 0, 3, 1, 1, 1, 1, 1, 1}, yu[] = {1, 2, 3}, bu[5];
    pfi_lstsq(U, 3, 5, yu, bu, 0, &r, NULL);
    assert_int_equal(r, 3);
    for (int i = 0; i < 3; i++) {
        double v = 0;
        for (int j = 0; j < 5; j++) v += U[i * 5 + j] * bu[j];
        assert_near(v, yu[i], 1e-10);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranks_ties), cmocka_unit_test(spearman), cmocka_unit_test(paper_pvalues),
        cmocka_unit_test(kruskal),    cmocka_unit_test(dunn),     cmocka_unit_test(adjustments),
        cmocka_unit_test(ols),        cmocka_unit_test(lstsq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
