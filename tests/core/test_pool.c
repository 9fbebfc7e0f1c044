/* test_pool.c — sweep groups as allocation jobs in the core (pool.h), on a
 * synthetic sweep table: the jobs' bounds and names, what a strategy needs
 * that the table lacks, the PFI from measurement, an in-sample fit or a
 * model built in memory (all agree when the feature is exact), an invalid
 * weight named, predicted curves from an in-sample fit and the refusal of
 * a scalar model as a curve model. */
#include "../testutil.h"

#include "pfi/pfi.h"
#include "pool.h"

#define NG 6
#define BIT(s) (1u << (s))

/* group g: caps 300, 500, 700 W on 8 GPUs (H200); T(c) = T_max (1 - k (700 - c) / 400);
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
        tu_linear_group(t, name, g % 2, g < 3, 0.2 + 0.1 * g, 1000 * (1 + g));
    }
    return pfi_groupset_build(t, &S, NULL) == PFI_OK ? 0 : -1;
}

static int teardown(void **st)
{
    (void)st;
    pfi_groupset_dispose(&S);
    return 0;
}

static const size_t use_all[NG] = {0, 1, 2, 3, 4, 5};

static void jobs(void **st)
{
    (void)st;
    pfi_pool P;
    pfi_pool_opts o = {.target = "pfi", .strategies = BIT(PFI_STRAT_ORACLE) | BIT(PFI_STRAT_EQUAL)};
    assert_int_equal(pfi_pool_build(&S, use_all + 1, 3, &o, NULL, NULL, &P, NULL, NULL), PFI_OK);
    assert_int_equal(P.n, 3);
    assert_int_equal(P.group[0], 1);
    const pfi_alloc_job *j = &P.jobs[0]; /* g1: moe, ft */
    assert_int_equal(j->gpus, 8);
    assert_near(j->tokens_per_s_max, 2000, 1e-9);
    assert_near(j->power_max_w, 0.95 * 8 * 700, 1e-9);
    assert_near(j->power_min_w, 0.95 * 8 * 300, 1e-9);
    assert_near(j->cap_min_w, 200, 0); /* the H200's limits */
    assert_near(j->cap_max_w, 700, 0);
    assert_true(j->moe_ft);
    assert_false(P.jobs[1].moe_ft); /* g2: dense */
    assert_true(P.is_ft[1] && !P.is_ft[2]);
    assert_true(P.have_task);
    assert_string_equal(j->name, "'g1' (H200)");
    assert_true(isnan(j->pfi_pred)); /* no strategy weights by the PFI */
    assert_near(j->dcp, 2 * S.pfi[1] + 1, 1e-9);
    assert_null(P.pred);
    pfi_pool_dispose(&P);
}

static void lacks(void **st)
{
    (void)st;
    char col[64];
    pfi_pool_opts o = {.target = "pfi", .features = "slope,nosuch"};
    assert_int_equal(pfi_pool_lacks(&S, &o, PFI_STRAT_PFI_AWARE, col, sizeof col),
                     PFI_POOL_LACK_PFI_FIT);
    assert_string_equal(col, "nosuch");
    assert_int_equal(pfi_pool_lacks(&S, &o, PFI_STRAT_CURVE_AWARE, col, sizeof col),
                     PFI_POOL_LACK_CURVE_FIT);
    assert_int_equal(pfi_pool_lacks(&S, &o, PFI_STRAT_DCGM, col, sizeof col), 0);
    o.model = "m.json"; /* a model needs no in-sample features */
    assert_int_equal(pfi_pool_lacks(&S, &o, PFI_STRAT_PFI_AWARE, col, sizeof col), 0);
    o.strategies = BIT(PFI_STRAT_CLOSED_LOOP);
    pfi_error e;
    assert_int_equal(pfi_pool_check(&S, &o, &e), PFI_ENOTFOUND);
    assert_non_null(
        strstr(e.msg, "closed-loop needs predicted curves: the table has no column 'nosuch'"));
    pfi_pfi_source s;
    assert_int_equal(pfi_pfi_source_parse("measured-robust", &s), 0);
    assert_int_equal(s, PFI_PFI_MEASURED_ROBUST);
    assert_int_equal(pfi_pfi_source_parse("oracle", &s), -1);
}

static void pfi_sources_agree(void **st)
{
    (void)st;
    pfi_pool_opts o = {
        .target = "pfi", .strategies = BIT(PFI_STRAT_PFI_AWARE), .pfi = PFI_PFI_MEASURED};
    pfi_pool A, B, C;
    assert_int_equal(pfi_pool_build(&S, use_all, NG, &o, NULL, NULL, &A, NULL, NULL), PFI_OK);
    o.pfi = PFI_PFI_PREDICTED; /* in-sample fit of dram_copy_product: exact */
    assert_int_equal(pfi_pool_build(&S, use_all, NG, &o, NULL, NULL, &B, NULL, NULL), PFI_OK);
    /* a model in memory (what a model file holds) */
    double X[NG];
    for (int i = 0; i < NG; i++) X[i] = 2 * S.pfi[i] + 1;
    char *feat[] = {"dram_copy_product"};
    pfi_modelfile M;
    memset(&M, 0, sizeof M);
    M.kind = PFI_MODELFILE_OLS;
    M.p = 1;
    M.features = feat;
    assert_int_equal(pfi_pfi_model_fit(X, S.pfi, NG, 1, &M.ols, NULL), PFI_OK);
    o.model = "m.json";
    pfi_log lg = {NULL, NULL, 0};
    assert_int_equal(pfi_pool_build(&S, use_all, NG, &o, &M, NULL, &C, &lg, NULL), PFI_OK);
    assert_int_equal(lg.n_warnings, 0);
    for (int i = 0; i < NG; i++) {
        assert_near(A.jobs[i].pfi_pred, S.pfi[i], 0);
        assert_near(B.jobs[i].pfi_pred, S.pfi[i], 1e-9);
        assert_near(C.jobs[i].pfi_pred, S.pfi[i], 1e-9);
    }
    pfi_pool_dispose(&A);
    pfi_pool_dispose(&B);
    pfi_pool_dispose(&C);
    /* the model needs a feature the table lacks: named with the model */
    char *bad[] = {"nosuch"};
    M.features = bad;
    pfi_error e;
    assert_int_equal(pfi_pool_build(&S, use_all, NG, &o, &M, NULL, &C, NULL, &e), PFI_ENOTFOUND);
    assert_string_equal(e.msg, "m.json needs feature 'nosuch': the table has no such column");
    pfi_pool_dispose(&C);
    pfi_pfi_model_dispose(&M.ols);
}

static void bad_weight_named(void **st)
{
    (void)st;
    double keep = S.robust[2];
    S.robust[2] = NAN;
    pfi_pool_opts o = {
        .target = "pfi", .strategies = BIT(PFI_STRAT_PFI_AWARE), .pfi = PFI_PFI_MEASURED_ROBUST};
    pfi_pool P;
    pfi_error e;
    assert_int_not_equal(pfi_pool_build(&S, use_all, NG, &o, NULL, NULL, &P, NULL, &e), PFI_OK);
    S.robust[2] = keep;
    assert_non_null(strstr(e.msg, "--pfi measured-robust (each group's robust PFI"));
    assert_non_null(strstr(e.msg, "'g2' (H200)"));
    pfi_pool_dispose(&P);
}

static void predicted_curves(void **st)
{
    (void)st;
    pfi_pool_opts o = {
        .target = "pfi", .features = "slope", .strategies = BIT(PFI_STRAT_CURVE_AWARE)};
    pfi_pool P;
    assert_int_equal(pfi_pool_build(&S, use_all, NG, &o, NULL, NULL, &P, NULL, NULL), PFI_OK);
    assert_non_null(P.pred);
    for (int i = 0; i < NG; i++) {
        const pfi_curve *c = P.jobs[i].pred_curve;
        assert_ptr_equal(c, &P.pred[i]);
        /* exact at the uncapped point, and T/T_max linear in the slope: exact below it too */
        const pfi_point *u = pfi_curve_uncapped(c);
        assert_near(u->tokens_per_s, P.jobs[i].tokens_per_s_max, 1e-6);
        double k = 0.2 + 0.1 * i;
        for (size_t q = 0; q < c->n; q++)
            assert_near(c->pts[q].tokens_per_s,
                        P.jobs[i].tokens_per_s_max * (1 - k * (700 - c->pts[q].cap_w) / 400),
                        1e-6 * P.jobs[i].tokens_per_s_max);
    }
    pfi_pool_dispose(&P);
    /* a scalar model is no curve model */
    pfi_modelfile M;
    memset(&M, 0, sizeof M);
    M.kind = PFI_MODELFILE_OLS;
    o.curve_model = "m.json";
    pfi_error e;
    assert_int_equal(pfi_pool_build(&S, use_all, NG, &o, NULL, &M, &P, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "m.json: not a curve model (kind \"curve\")");
    pfi_pool_dispose(&P);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jobs),
        cmocka_unit_test(lacks),
        cmocka_unit_test(pfi_sources_agree),
        cmocka_unit_test(bad_weight_named),
        cmocka_unit_test(predicted_curves),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
