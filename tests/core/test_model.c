/* test_model.c — the predictor: OLS through the minimum-norm solver on
 * known data, cross-validation against hand refits, the clamp, the curve
 * model on exact synthetic curves, and the model file's round trip and
 * validation errors. */
#include "../testutil.h"

#include <stdio.h>
#include <unistd.h>

#include "pfi/model_file.h"
#include "pfi/predictor.h"

static void linear_exact(void **s)
{
    (void)s;
    /* y = 1 + 2 x1 - 0.5 x2 exactly */
    double X[20], y[10];
    for (int i = 0; i < 10; i++) {
        X[2 * i] = i;
        X[2 * i + 1] = (i * 7) % 5;
        y[i] = 1 + 2 * X[2 * i] - 0.5 * X[2 * i + 1];
    }
    pfi_linear m;
    size_t used;
    assert_int_equal(pfi_linear_fit(X, y, 10, 2, &m, &used, NULL), PFI_OK);
    assert_int_equal(used, 10);
    assert_near(m.intercept, 1, 1e-9);
    assert_near(m.beta[0], 2, 1e-9);
    assert_near(m.beta[1], -0.5, 1e-9);
    pfi_linear_dispose(&m);
    /* rows with NaN are skipped */
    y[3] = NAN;
    assert_int_equal(pfi_linear_fit(X, y, 10, 2, &m, &used, NULL), PFI_OK);
    assert_int_equal(used, 9);
    pfi_linear_dispose(&m);
    /* more features than rows: still a solution that interpolates */
    double W[3 * 5] = {1, 0, 2, 1, 3, 0, 1, 1, 2, 0, 2, 2, 0, 1, 1}, yw[3] = {1, 2, 3};
    assert_int_equal(pfi_linear_fit(W, yw, 3, 5, &m, &used, NULL), PFI_OK);
    for (int i = 0; i < 3; i++) assert_near(pfi_linear_eval(&m, W + 5 * i), yw[i], 1e-9);
    pfi_linear_dispose(&m);
}

static void cross_validation(void **s)
{
    (void)s;
    double X[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {2.1, 3.9, 6.2, 8.1, 9.8, 12.2, 13.9, 16.1},
           yh[8];
    assert_int_equal(pfi_cross_validate(X, y, 8, 1, NULL, yh, NULL), PFI_OK);
    /* hand refit without point 0 */
    pfi_linear m;
    assert_int_equal(pfi_linear_fit(X + 1, y + 1, 7, 1, &m, NULL, NULL), PFI_OK);
    assert_near(yh[0], pfi_linear_eval(&m, X), 1e-12);
    pfi_linear_dispose(&m);
    int cl[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    pfi_cross_validate(X, y, 8, 1, cl, yh, NULL);
    assert_int_equal(pfi_linear_fit(X + 2, y + 2, 6, 1, &m, NULL, NULL), PFI_OK);
    assert_near(yh[1], pfi_linear_eval(&m, X + 1), 1e-12);
    pfi_linear_dispose(&m);
    pfi_eval e;
    pfi_eval_metrics(y, y, 8, NAN, &e);
    assert_near(e.r2, 1, 1e-12);
    assert_near(e.rmse, 0, 1e-12);
    /* SST about a given mean (table 3's convention) */
    double yh2[2] = {1, 1}, yy[2] = {0, 2};
    pfi_eval_metrics(yy, yh2, 2, 0.0, &e);
    assert_near(e.r2, 1 - 2.0 / 4.0, 1e-12);
}

static void clamp_and_ranges(void **s)
{
    (void)s;
    double X[4] = {0, 1, 2, 3}, y[4] = {1.0, 1.5, 2.0, 2.5};
    pfi_pfi_model m;
    assert_int_equal(pfi_pfi_model_fit(X, y, 4, 1, &m, NULL), PFI_OK);
    int cl, oor;
    double x = 1.5;
    assert_near(pfi_pfi_model_predict(&m, &x, &cl, &oor), 1.75, 1e-9);
    assert_int_equal(cl, 0);
    assert_int_equal(oor, 0);
    x = -10; /* the line crosses zero: clamped to the widened training range */
    double v = pfi_pfi_model_predict(&m, &x, &cl, &oor);
    assert_int_equal(cl, 1);
    assert_int_equal(oor, 1);
    assert_near(v, fmax(0.05, 1.0 - 0.25 * 1.5), 1e-12);
    assert_true(v > 0);
    pfi_pfi_model_dispose(&m);
}

/* curves whose normalized throughput is f^a with a = feature: exact at every grid point */
static void curve_model(void **s)
{
    (void)s;
    enum { N = 12 };
    pfi_curve c[N];
    const pfi_curve *cp[N];
    double X[N];
    for (int i = 0; i < N; i++) {
        double a = 0.3 + 0.05 * i;
        X[i] = a;
        pfi_point pts[6];
        for (int k = 0; k < 6; k++) {
            double f = (200.0 + 100 * k) / 700.0;
            pts[k] = (pfi_point){200.0 + 100 * k, 5600 * f, 1000 * (1 - a * (1 - f)), NAN, NAN, 1};
        }
        pfi_curve_init(&c[i], pts, 6, NULL);
        cp[i] = &c[i];
    }
    pfi_curve_model m;
    assert_int_equal(pfi_curve_model_fit(X, cp, N, 1, &m, NULL), PFI_OK);
    assert_true(m.ngrid >= 10);
    assert_near(m.frac[m.ngrid - 1], 1.0, 0);
    double t[PFI_CURVE_GRID_MAX], p[PFI_CURVE_GRID_MAX];
    double xq = 0.52;
    pfi_curve_model_predict(&m, &xq, t, p);
    for (size_t k = 0; k < m.ngrid; k++) {
        assert_near(t[k], 1 - xq * (1 - m.frac[k]), 1e-6); /* linear in the feature: exact */
        assert_near(p[k], m.frac[k], 1e-6);
        if (k) assert_true(t[k] >= t[k - 1]);
    }
    /* no extrapolation: a group measured only from 500 W contributes no 0.3 point */
    double tf, pf;
    assert_int_equal(pfi_curve_point_at_frac(&c[0], 0.25, &tf, &pf), 0);
    assert_int_equal(pfi_curve_point_at_frac(&c[0], 0.5, &tf, &pf), 1);
    pfi_curve out;
    assert_int_equal(pfi_curve_model_curve(&m, &xq, 700, 2000, 5000, &out, NULL), PFI_OK);
    assert_near(pfi_curve_uncapped(&out)->tokens_per_s, 2000, 1e-9);
    pfi_curve_dispose(&out);
    /* the model file round trip gives the same predictions */
    pfi_modelfile M = {0};
    M.kind = PFI_MODELFILE_CURVE;
    snprintf(M.target, sizeof M.target, "pfi");
    M.p = 1;
    char *fname = strdup("a");
    M.features = &fname;
    M.curve = m;
    char path[] = "/tmp/pfi-model-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(pfi_modelfile_save(&M, path, NULL), PFI_OK);
    pfi_modelfile L;
    assert_int_equal(pfi_modelfile_load(path, &L, NULL), PFI_OK);
    assert_int_equal(L.kind, PFI_MODELFILE_CURVE);
    double t2[PFI_CURVE_GRID_MAX], p2[PFI_CURVE_GRID_MAX];
    pfi_curve_model_predict(&L.curve, &xq, t2, p2);
    for (size_t k = 0; k < m.ngrid; k++) assert_near(t2[k], t[k], 1e-12);
    assert_true(isfinite(pfi_modelfile_pfi(&L, &xq, NULL, NULL)));
    pfi_modelfile_dispose(&L);
    unlink(path);
    free(fname);
    pfi_curve_model_dispose(&m);
    for (int i = 0; i < N; i++) pfi_curve_dispose(&c[i]);
}

/* the prior (issue 44): curves f^a-like with a deterministic wobble the
   feature does not explain. The residual standard error is the wobble's
   spread; the bound lies below the prediction in throughput and above it
   in power; without features, the population's curve; both survive the
   model file, and a model file without them gives no bound */
static void curve_prior(void **s)
{
    (void)s;
    enum { N = 16 };
    pfi_curve c[N];
    const pfi_curve *cp[N];
    double X[N];
    for (int i = 0; i < N; i++) {
        double a = 0.3 + 0.03 * i, wob = (i % 2 ? 1 : -1) * 0.02;
        X[i] = a;
        pfi_point pts[6];
        for (int k = 0; k < 6; k++) {
            double f = (200.0 + 100 * k) / 700.0;
            double t = k == 5 ? 1 : 1 - a * (1 - f) + wob;
            pts[k] = (pfi_point){200.0 + 100 * k, 5600 * f, 1000 * t, NAN, NAN, 1};
        }
        pfi_curve_init(&c[i], pts, 6, NULL);
        cp[i] = &c[i];
    }
    pfi_curve_model m;
    assert_int_equal(pfi_curve_model_fit(X, cp, N, 1, &m, NULL), PFI_OK);
    size_t mid = m.ngrid / 2;
    /* the wobble is +-0.02 around the line: a residual SE near 0.02 */
    assert_true(m.t_se[mid] > 0.015 && m.t_se[mid] < 0.03);
    assert_near(m.t_se[m.ngrid - 1], 0, 0);
    assert_true(m.pop_t_sd[mid] > m.t_se[mid]); /* the feature explains most of the spread */
    double xq = 0.5, t[PFI_CURVE_GRID_MAX], p[PFI_CURVE_GRID_MAX];
    pfi_curve_model_predict(&m, &xq, t, p);
    pfi_curve b, pop;
    assert_int_equal(pfi_curve_model_bound(&m, &xq, 2, 700, 1000, 5600, &b, NULL), PFI_OK);
    assert_int_equal(pfi_curve_model_bound(&m, NULL, 2, 700, 1000, 5600, &pop, NULL), PFI_OK);
    for (size_t k = 0; k + 1 < m.ngrid; k++) {
        assert_true(b.pts[k].tokens_per_s < 1000 * t[k]);
        assert_near(b.pts[k].tokens_per_s, 1000 * fmax(0.01, t[k] - 2 * m.t_se[k]), 1e-6);
        assert_true(b.pts[k].power_w >= 5600 * p[k]);
        assert_true(pop.pts[k].tokens_per_s <= 1000 * m.pop_t[k]);
    }
    assert_near(pfi_curve_uncapped(&b)->tokens_per_s, 1000, 1e-9);
    pfi_curve_dispose(&b);
    /* the model file keeps it */
    pfi_modelfile M = {0};
    M.kind = PFI_MODELFILE_CURVE;
    snprintf(M.target, sizeof M.target, "pfi");
    M.p = 1;
    char *fname = strdup("a");
    M.features = &fname;
    M.curve = m;
    char path[] = "/tmp/pfi-model-XXXXXX";
    close(mkstemp(path));
    assert_int_equal(pfi_modelfile_save(&M, path, NULL), PFI_OK);
    pfi_modelfile L;
    assert_int_equal(pfi_modelfile_load(path, &L, NULL), PFI_OK);
    for (size_t k = 0; k < m.ngrid; k++) {
        assert_near(L.curve.t_se[k], m.t_se[k], 1e-12);
        assert_near(L.curve.pop_p_sd[k], m.pop_p_sd[k], 1e-12);
    }
    pfi_curve pop2;
    assert_int_equal(pfi_curve_model_bound(&L.curve, NULL, 2, 700, 1000, 5600, &pop2, NULL),
                     PFI_OK);
    for (size_t k = 0; k < m.ngrid; k++)
        assert_near(pop2.pts[k].tokens_per_s, pop.pts[k].tokens_per_s, 1e-9);
    pfi_curve_dispose(&pop), pfi_curve_dispose(&pop2);
    /* a model file from before the prior: no bound */
    for (size_t k = 0; k < L.curve.ngrid; k++) L.curve.t_se[k] = NAN;
    assert_int_equal(pfi_modelfile_save(&L, path, NULL), PFI_OK);
    pfi_modelfile_dispose(&L);
    assert_int_equal(pfi_modelfile_load(path, &L, NULL), PFI_OK);
    assert_true(isnan(L.curve.t_se[0]) && isnan(L.curve.pop_t[0]));
    assert_int_equal(pfi_curve_model_bound(&L.curve, &xq, 2, 700, 1000, 5600, &pop2, NULL),
                     PFI_ESTATE);
    pfi_modelfile_dispose(&L);
    unlink(path);
    free(fname);
    pfi_curve_model_dispose(&m);
    for (int i = 0; i < N; i++) pfi_curve_dispose(&c[i]);
}

static void model_file_errors(void **s)
{
    (void)s;
    const char *cases[][2] = {
        {"{", "invalid JSON"},
        {"{\"format_version\": 2}", "'format_version': expected 1"},
        {"{\"format_version\": 1, \"kind\": \"tree\"}", "'kind'"},
        {"{\"format_version\": 1, \"kind\": \"pfi-ols\", \"features\": []}", "'features'"},
        {"{\"format_version\": 1, \"kind\": \"pfi-ols\", \"features\": [{\"name\": \"x\", \"min\": "
         "0, \"max\": 1}],"
         " \"intercept\": 1, \"coefficients\": [\"a\"], \"clamp\": {\"min\": 0.1, \"max\": 3}}",
         "'coefficients'[0]: not a finite number"},
        {"{\"format_version\": 1, \"kind\": \"pfi-ols\", \"features\": [{\"name\": \"x\", \"min\": "
         "0, \"max\": 1}],"
         " \"intercept\": 1, \"coefficients\": [2], \"clamp\": {\"min\": -1, \"max\": 3}}",
         "'clamp': needs 0 < min < max"},
        {"{\"format_version\": 1, \"kind\": \"curve\", \"features\": [{\"name\": \"x\", \"min\": "
         "0, \"max\": 1}],"
         " \"grid_cap_frac\": [0.5, 0.9], \"throughput\": [], \"power\": []}",
         "must end at 1"},
        {"{\"format_version\": 1, \"kind\": \"curve\", \"features\": [{\"name\": \"x\", \"min\": "
         "0, \"max\": 1}], \"grid_cap_frac\": [0.5, 1], \"throughput\": [{\"intercept\": 0.5, "
         "\"coefficients\": [0]}, {\"intercept\": 1, \"coefficients\": [0]}], \"power\": "
         "[{\"intercept\": 0.5, \"coefficients\": [0]}, {\"intercept\": 1, \"coefficients\": "
         "[0]}], "
         "\"prior\": {\"throughput_se\": [0.1, -1]}}",
         "'prior.throughput_se'[1]: expected 0..10"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[] = "/tmp/pfi-badmodel-XXXXXX";
        int fd = mkstemp(path);
        assert_true(write(fd, cases[i][0], strlen(cases[i][0])) == (ssize_t)strlen(cases[i][0]));
        close(fd);
        pfi_modelfile m;
        pfi_error e;
        if (pfi_modelfile_load(path, &m, &e) == PFI_OK) fail_msg("accepted %s", cases[i][0]);
        if (!strstr(e.msg, cases[i][1])) fail_msg("'%s' lacks '%s'", e.msg, cases[i][1]);
        assert_non_null(strstr(e.msg, path));
        unlink(path);
    }
    pfi_modelfile m;
    pfi_error e;
    assert_int_equal(pfi_modelfile_load("/nonexistent/model.json", &m, &e), PFI_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_exact),     cmocka_unit_test(cross_validation),
        cmocka_unit_test(clamp_and_ranges), cmocka_unit_test(curve_model),
        cmocka_unit_test(curve_prior),      cmocka_unit_test(model_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
