/* test_evaluate.c — pfi fit's evaluation in the core (evaluate.h) on a
 * synthetic sweep table whose feature is an exact linear function of each
 * group's PFI, and whose normalized curves are exactly linear in another
 * feature: LOCO clusters, an unknown feature, the OLS fit with in-sample /
 * LOO / LOCO metrics of an exact model, evaluation on other groups (NaN
 * targets left out, features outside the training range counted), the
 * ablation failing on a feature the table lacks, and the curve predictor's
 * LOO, LOCO and out-of-sample errors. */
#include "../testutil.h"

#include "evaluate.h"
#include "pfi/features.h"
#include "pfi/pfi.h"

#define NG 8

/* group g: caps 300, 500, 700 W on 8 GPUs; T(c) = T_max (1 - k (700 - c) / 400);
 * P = 0.95 x 8 x c; dram_copy_product = 2 PFI + 1; slope = k */
static pfi_groupset S;

static int setup(void **st)
{
    (void)st;
    pfi_table *t = pfi_table_new();
    pfi_table_add_file(t, "synthetic.csv");
    for (int g = 0; g < NG; g++) {
        char name[16];
        snprintf(name, sizeof name, "g%d", g);
        tu_linear_group(t, name, g % 2, g % 4 < 2, 0.15 + 0.08 * g, 1000 * (1 + g % 3));
    }
    pfi_error e;
    if (pfi_groupset_build(t, &S, &e) != PFI_OK) {
        print_message("%s\n", e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    pfi_groupset_dispose(&S);
    return 0;
}

static void clusters(void **st)
{
    (void)st;
    size_t train[NG];
    int cl[NG];
    for (size_t i = 0; i < NG; i++) train[i] = i;
    pfi_fit_clusters(&S, train, NG, NULL,
                     cl); /* arch-task: dense-ft, moe-ft, dense-pt, moe-pt, ... */
    for (size_t i = 0; i < NG; i++) assert_int_equal(cl[i], (int)(i % 4));
    pfi_fit_clusters(&S, train, NG, "group", cl);
    for (size_t i = 0; i < NG; i++) assert_int_equal(cl[i], (int)i);
    pfi_fit_clusters(&S, train + 2, 3, "arch", cl); /* dense, moe, dense */
    assert_int_equal(cl[0], 0);
    assert_int_equal(cl[1], 1);
    assert_int_equal(cl[2], 0);
}

static void features(void **st)
{
    (void)st;
    char *f[] = {"dram_copy_product", "task", "nosuch"};
    size_t rows[2] = {1, 2};
    double X[6];
    assert_int_equal(pfi_fit_features(&S, f, 2, rows, 2, X, NULL), PFI_OK);
    assert_near(X[0], 2 * S.pfi[1] + 1, 1e-9);
    assert_near(X[1], 1, 0); /* g1: ft */
    assert_near(X[3], 0, 0); /* g2: pt */
    pfi_error e;
    assert_int_equal(pfi_fit_features(&S, f, 3, rows, 2, X, &e), PFI_ENOTFOUND);
    assert_non_null(strstr(e.msg, "feature 'nosuch' is not a numeric column"));
}

static void ols_exact(void **st)
{
    (void)st;
    size_t train[NG];
    int cl[NG];
    for (size_t i = 0; i < NG; i++) train[i] = i;
    pfi_fit_clusters(&S, train, NG, NULL, cl);
    pfi_fit_data d = {&S, S.pfi, train, NG, cl};
    char *f[] = {"dram_copy_product"};
    pfi_fit_eval ev;
    pfi_pfi_model m;
    assert_int_equal(pfi_fit_evaluate(&d, f, 1, &ev, &m, NULL), PFI_OK);
    /* PFI = (x - 1) / 2 exactly */
    assert_near(m.lin.beta[0], 0.5, 1e-9);
    assert_near(m.lin.intercept, -0.5, 1e-9);
    assert_int_equal(ev.in_sample.n, NG);
    assert_near(ev.in_sample.r2, 1, 1e-9);
    assert_near(ev.loo.r2, 1, 1e-9);
    assert_near(ev.loco.r2, 1, 1e-9);
    assert_true(ev.loo.rmse < 1e-9 && ev.loco.rmse < 1e-9);
    assert_near(ev.loo.rho, 1, 1e-9);
    pfi_pfi_model_dispose(&m);
}

static void eval_other_groups(void **st)
{
    (void)st;
    /* train on the 5 groups of lowest feature value; evaluate on all 8, one of them without a
     * target */
    size_t order[NG], train[5];
    for (size_t i = 0; i < NG; i++) order[i] = i;
    for (size_t i = 1; i < NG; i++)
        for (size_t j = i; j > 0 && S.pfi[order[j]] < S.pfi[order[j - 1]]; j--) {
            size_t x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    memcpy(train, order, sizeof train);
    int cl[5] = {0, 1, 2, 3, 4};
    double y[NG];
    memcpy(y, S.pfi, sizeof y);
    y[order[7]] = NAN;
    pfi_fit_data d = {&S, y, train, 5, cl};
    char *f[] = {"dram_copy_product"};
    pfi_fit_eval ev;
    pfi_pfi_model m;
    assert_int_equal(pfi_fit_evaluate(&d, f, 1, &ev, &m, NULL), PFI_OK);
    size_t all[NG], used = 0, oor = 0;
    for (size_t i = 0; i < NG; i++) all[i] = i;
    pfi_eval e;
    assert_int_equal(pfi_fit_eval_on(&d, f, 1, &m, all, NG, &e, &used, &oor, NULL), PFI_OK);
    assert_int_equal(used, NG - 1);
    size_t want_oor = 0; /* above the training range (the NaN-target group is not evaluated) */
    for (size_t i = 5; i < 7; i++) want_oor += S.pfi[order[i]] > S.pfi[order[4]] + 1e-12;
    assert_int_equal(oor, want_oor);
    assert_int_equal(e.n, NG - 1);
    pfi_pfi_model_dispose(&m);
}

static void ablation_needs_columns(void **st)
{
    (void)st;
    size_t train[NG];
    int cl[NG];
    for (size_t i = 0; i < NG; i++) train[i] = i, cl[i] = (int)(i % 4);
    pfi_fit_data d = {&S, S.pfi, train, NG, cl};
    pfi_ablation_row rows[PFI_ABLATION_SETS];
    pfi_error e;
    assert_int_equal(pfi_fit_ablation(&d, rows, &e), PFI_ENOTFOUND);
    assert_non_null(strstr(e.msg, "feature 'arithmetic_intensity'"));
}

static void curve_errors(void **st)
{
    (void)st;
    size_t train[NG];
    int cl[NG];
    for (size_t i = 0; i < NG; i++) train[i] = i;
    pfi_fit_clusters(&S, train, NG, NULL, cl);
    pfi_fit_data d = {&S, S.pfi, train, NG, cl};
    char *f[] = {"slope"};
    pfi_curve_model m;
    assert_int_equal(pfi_fit_curve(&d, f, 1, &m, NULL), PFI_OK);
    assert_true(m.ngrid >= 2);
    for (int loco = 0; loco < 2; loco++) {
        pfi_curve_errors ce;
        assert_int_equal(pfi_fit_curve_cv(&d, f, 1, &m, loco, &ce, NULL), PFI_OK);
        assert_int_equal(ce.ngrid, m.ngrid);
        size_t points = 0;
        for (size_t k = 0; k < ce.ngrid; k++) {
            assert_near(ce.frac[k], m.frac[k], 0);
            points += ce.n[k];
            if (ce.n[k]) assert_true(ce.tokens_frac_rmse[k] < 1e-9 && ce.power_frac_rmse[k] < 1e-9);
            else assert_true(isnan(ce.tokens_frac_rmse[k]));
        }
        assert_true(points >= NG); /* every held-out group compared somewhere */
    }
    size_t rows[2] = {0, 5};
    pfi_curve_errors ce;
    assert_int_equal(pfi_fit_curve_eval_on(&d, f, 1, &m, rows, 2, &ce, NULL), PFI_OK);
    assert_int_equal(ce.n[ce.ngrid - 1], 2); /* both at the uncapped point */
    assert_true(ce.tokens_frac_rmse[ce.ngrid - 1] < 1e-9);
    pfi_curve_model_dispose(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clusters),
        cmocka_unit_test(features),
        cmocka_unit_test(ols_exact),
        cmocka_unit_test(eval_other_groups),
        cmocka_unit_test(ablation_needs_columns),
        cmocka_unit_test(curve_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
