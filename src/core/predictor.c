/* predictor.c — OLS (minimum-norm, standardized), cross-validation, the
 * scalar PFI model and the curve model (see predictor.h), and a loaded
 * model file's PFI (pfi_modelfile_pfi: computation, no I/O; the file is
 * io's, model_file.h). */
#include "pfi/predictor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/curve.h"
#include "pfi/pfi.h"
#include "pfi/stats.h"

void pfi_linear_dispose(pfi_linear *m)
{
    free(m->beta);
    m->beta = NULL;
}

static int row_ok(const double *X, const double *y, size_t i, size_t p)
{
    if (y && !isfinite(y[i])) return 0;
    for (size_t k = 0; k < p; k++)
        if (!isfinite(X[i * p + k])) return 0;
    return 1;
}

pfi_status pfi_linear_fit(const double *X, const double *y, size_t n, size_t p, pfi_linear *m,
                          size_t *n_used, pfi_error *err)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    m->beta = calloc(p ? p : 1, sizeof *m->beta);
    double *mean = calloc(p ? p : 1, sizeof *mean), *sd = calloc(p ? p : 1, sizeof *sd);
    size_t nu = 0;
    for (size_t i = 0; i < n; i++) nu += row_ok(X, y, i, p);
    if (n_used) *n_used = nu;
    double *Z = malloc((nu ? nu : 1) * (p ? p : 1) * sizeof *Z),
           *yc = malloc((nu ? nu : 1) * sizeof *yc);
    pfi_status st = PFI_OK;
    if (!m->beta || !mean || !sd || !Z || !yc) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    if (nu < 2) {
        st = pfi_errorf(err, PFI_EINVAL,
                        "fit needs at least 2 groups with the target and every feature (have %zu)",
                        nu);
        goto out;
    }
    double ym = 0;
    for (size_t i = 0; i < n; i++)
        if (row_ok(X, y, i, p)) {
            ym += y[i];
            for (size_t k = 0; k < p; k++) mean[k] += X[i * p + k];
        }
    ym /= (double)nu;
    for (size_t k = 0; k < p; k++) mean[k] /= (double)nu;
    for (size_t i = 0; i < n; i++)
        if (row_ok(X, y, i, p))
            for (size_t k = 0; k < p; k++)
                sd[k] += (X[i * p + k] - mean[k]) * (X[i * p + k] - mean[k]);
    for (size_t k = 0; k < p; k++) sd[k] = sqrt(sd[k] / (double)(nu > 1 ? nu - 1 : 1));
    size_t r = 0;
    for (size_t i = 0; i < n; i++) {
        if (!row_ok(X, y, i, p)) continue;
        for (size_t k = 0; k < p; k++)
            Z[r * p + k] = sd[k] > 0 ? (X[i * p + k] - mean[k]) / sd[k] : 0;
        yc[r] = y[i] - ym;
        r++;
    }
    double *bz = calloc(p ? p : 1, sizeof *bz);
    if (!bz) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    if (p > 0) st = pfi_lstsq(Z, nu, p, yc, bz, 0, &m->rank, err);
    if (!st) {
        m->intercept = ym;
        for (size_t k = 0; k < p; k++) {
            m->beta[k] = sd[k] > 0 ? bz[k] / sd[k] : 0;
            m->intercept -= m->beta[k] * mean[k];
        }
    }
    free(bz);
out:
    free(mean), free(sd), free(Z), free(yc);
    if (st) pfi_linear_dispose(m);
    return st;
}

double pfi_linear_eval(const pfi_linear *m, const double *x)
{
    double v = m->intercept;
    for (size_t k = 0; k < m->p; k++) v += m->beta[k] * x[k];
    return v;
}

void pfi_eval_metrics(const double *y, const double *yhat, size_t n, double sst_mean, pfi_eval *e)
{
    e->r2 = e->rmse = e->rho = NAN;
    e->n = 0;
    double *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return;
    }
    size_t m = 0;
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(y[i]) && isfinite(yhat[i])) {
            a[m] = y[i];
            b[m] = yhat[i];
            mean += y[i];
            m++;
        }
    e->n = m;
    if (m == 0) goto out;
    mean /= (double)m;
    if (isnan(sst_mean)) sst_mean = mean;
    double sse = 0, sst = 0;
    for (size_t i = 0; i < m; i++) {
        sse += (a[i] - b[i]) * (a[i] - b[i]);
        sst += (a[i] - sst_mean) * (a[i] - sst_mean);
    }
    e->rmse = sqrt(sse / (double)m);
    e->r2 = sst > 0 ? 1 - sse / sst : NAN;
    double p;
    if (m >= 3) pfi_spearman(a, b, m, &e->rho, &p);
out:
    free(a), free(b);
}

pfi_status pfi_cross_validate(const double *X, const double *y, size_t n, size_t p,
                              const int *cluster, double *yhat, pfi_error *err)
{
    double *Xt = malloc((n ? n : 1) * (p ? p : 1) * sizeof *Xt),
           *yt = malloc((n ? n : 1) * sizeof *yt);
    if (!Xt || !yt) {
        free(Xt), free(yt);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) yhat[i] = NAN;
    pfi_status st = PFI_OK;
    int kmax = -1;
    if (cluster)
        for (size_t i = 0; i < n; i++)
            if (cluster[i] > kmax) kmax = cluster[i];
    size_t folds = cluster ? (size_t)(kmax + 1) : n;
    for (size_t f = 0; f < folds && !st; f++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            int held = cluster ? cluster[i] == (int)f : i == f;
            if (held) continue;
            memcpy(Xt + m * p, X + i * p, p * sizeof *X);
            yt[m] = y[i];
            m++;
        }
        pfi_linear lin;
        size_t used;
        pfi_error e2;
        if (pfi_linear_fit(Xt, yt, m, p, &lin, &used, &e2) != PFI_OK)
            continue; /* fold not fittable */
        for (size_t i = 0; i < n; i++) {
            int held = cluster ? cluster[i] == (int)f : i == f;
            if (held && row_ok(X, NULL, i, p)) yhat[i] = pfi_linear_eval(&lin, X + i * p);
        }
        pfi_linear_dispose(&lin);
    }
    free(Xt), free(yt);
    return st;
}

pfi_status pfi_pfi_model_fit(const double *X, const double *y, size_t n, size_t p, pfi_pfi_model *m,
                             pfi_error *err)
{
    memset(m, 0, sizeof *m);
    pfi_status st = pfi_linear_fit(X, y, n, p, &m->lin, &m->n_train, err);
    if (st) return st;
    m->fmin = malloc((p ? p : 1) * sizeof *m->fmin);
    m->fmax = malloc((p ? p : 1) * sizeof *m->fmax);
    if (!m->fmin || !m->fmax) {
        pfi_pfi_model_dispose(m);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    double ylo = INFINITY, yhi = -INFINITY;
    for (size_t k = 0; k < p; k++) m->fmin[k] = INFINITY, m->fmax[k] = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!row_ok(X, y, i, p)) continue;
        if (y[i] < ylo) ylo = y[i];
        if (y[i] > yhi) yhi = y[i];
        for (size_t k = 0; k < p; k++) {
            if (X[i * p + k] < m->fmin[k]) m->fmin[k] = X[i * p + k];
            if (X[i * p + k] > m->fmax[k]) m->fmax[k] = X[i * p + k];
        }
    }
    double span = yhi - ylo;
    m->clamp_lo = fmax(0.05, ylo - 0.25 * span);
    m->clamp_hi = yhi + 0.25 * span;
    return PFI_OK;
}

void pfi_pfi_model_dispose(pfi_pfi_model *m)
{
    pfi_linear_dispose(&m->lin);
    free(m->fmin);
    free(m->fmax);
    m->fmin = m->fmax = NULL;
}

double pfi_pfi_model_predict(const pfi_pfi_model *m, const double *x, int *clamped,
                             int *out_of_range)
{
    int oor = 0;
    for (size_t k = 0; k < m->lin.p; k++)
        if (x[k] < m->fmin[k] || x[k] > m->fmax[k]) oor++;
    if (out_of_range) *out_of_range = oor;
    double v = pfi_linear_eval(&m->lin, x);
    int c = 0;
    if (!(v >= m->clamp_lo)) v = m->clamp_lo, c = 1;
    else if (v > m->clamp_hi) v = m->clamp_hi, c = 1;
    if (clamped) *clamped = c;
    return v;
}

/* ---- curves ---- */

int pfi_curve_point_at_frac(const pfi_curve *c, double f, double *t_frac, double *p_frac)
{
    if (c->n < 1) return 0;
    const pfi_point *u = pfi_curve_uncapped(c);
    double cap = f * u->cap_w;
    if (cap < c->pts[0].cap_w - 1e-9 || cap > u->cap_w + 1e-9) return 0;
    pfi_curve m;
    if (pfi_curve_copy(&m, c, NULL) != PFI_OK) return 0;
    pfi_curve_isotonic(&m);
    double pw;
    pfi_curve_power_at_cap(&m, cap, &pw, NULL);
    /* throughput at the same cap, interpolated in the cap like power */
    double tw;
    size_t j = 0;
    while (j + 2 < m.n && m.pts[j + 1].cap_w <= cap) j++;
    if (m.n == 1 || cap <= m.pts[0].cap_w) tw = m.pts[0].tokens_per_s;
    else if (cap >= m.pts[j + 1].cap_w) tw = m.pts[j + 1].tokens_per_s;
    else {
        double a = (cap - m.pts[j].cap_w) / (m.pts[j + 1].cap_w - m.pts[j].cap_w);
        tw = m.pts[j].tokens_per_s + a * (m.pts[j + 1].tokens_per_s - m.pts[j].tokens_per_s);
    }
    const pfi_point *mu = pfi_curve_uncapped(&m);
    *t_frac = tw / mu->tokens_per_s;
    *p_frac = pw / mu->power_w;
    pfi_curve_dispose(&m);
    return 1;
}

void pfi_curve_model_dispose(pfi_curve_model *m)
{
    for (size_t k = 0; k < m->ngrid; k++) {
        pfi_linear_dispose(&m->t[k]);
        pfi_linear_dispose(&m->pw[k]);
    }
    free(m->fmin);
    free(m->fmax);
    memset(m, 0, sizeof *m);
}

/* grid point k's prior: each fit's residual standard error over the rows
   it used (n_used - rank - 1 degrees of freedom), and the population's mean
   and standard deviation of the targets */
static void prior_at(const double *X, const double *yt, const double *yp, size_t n, size_t p,
                     pfi_curve_model *m, size_t k)
{
    const double *y[2] = {yt, yp};
    const pfi_linear *f[2] = {&m->t[k], &m->pw[k]};
    double *se[2] = {&m->t_se[k], &m->p_se[k]}, *mu[2] = {&m->pop_t[k], &m->pop_p[k]},
           *sd[2] = {&m->pop_t_sd[k], &m->pop_p_sd[k]};
    for (int w = 0; w < 2; w++) {
        double ssr = 0, s = 0, ss = 0;
        size_t nu = 0, ny = 0;
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(y[w][i])) continue;
            ny++, s += y[w][i], ss += y[w][i] * y[w][i];
            if (!row_ok(X, y[w], i, p)) continue;
            double r = y[w][i] - pfi_linear_eval(f[w], X + i * p);
            ssr += r * r, nu++;
        }
        double dof = (double)nu - (double)f[w]->rank - 1;
        *se[w] = dof > 0 ? sqrt(ssr / dof) : NAN;
        *mu[w] = ny ? s / ny : NAN;
        *sd[w] = ny > 1 ? sqrt(fmax(0, (ss - s * s / ny) / (ny - 1))) : NAN;
    }
}

pfi_status pfi_curve_model_fit(const double *X, const pfi_curve *const *curves, size_t n, size_t p,
                               pfi_curve_model *m, pfi_error *err)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    double *yt = malloc((n ? n : 1) * sizeof *yt), *yp = malloc((n ? n : 1) * sizeof *yp);
    m->fmin = malloc((p ? p : 1) * sizeof *m->fmin);
    m->fmax = malloc((p ? p : 1) * sizeof *m->fmax);
    pfi_status st = PFI_OK;
    if (!yt || !yp || !m->fmin || !m->fmax) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < p; k++) m->fmin[k] = INFINITY, m->fmax[k] = -INFINITY;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < p; k++)
            if (isfinite(X[i * p + k])) {
                if (X[i * p + k] < m->fmin[k]) m->fmin[k] = X[i * p + k];
                if (X[i * p + k] > m->fmax[k]) m->fmax[k] = X[i * p + k];
            }
    for (int gi = 0; gi <= 15; gi++) {
        double f = 0.25 + 0.05 * gi;
        if (gi == 15) f = 1.0;
        size_t have = 0;
        for (size_t i = 0; i < n; i++) {
            yt[i] = yp[i] = NAN;
            double a, b;
            if (pfi_curve_point_at_frac(curves[i], f, &a, &b)) {
                yt[i] = a;
                yp[i] = b;
                have++;
            }
        }
        if (have < p + 3 && f < 1.0) continue;
        size_t k = m->ngrid;
        m->frac[k] = f;
        if (f == 1.0) { /* the uncapped point is 1 by definition */
            m->t_se[k] = m->p_se[k] = m->pop_t_sd[k] = m->pop_p_sd[k] = 0;
            m->pop_t[k] = m->pop_p[k] = 1;
            m->t[k] = (pfi_linear){p, 1.0, calloc(p ? p : 1, sizeof(double)), 0};
            m->pw[k] = (pfi_linear){p, 1.0, calloc(p ? p : 1, sizeof(double)), 0};
            m->n_train[k] = have;
            m->ngrid++;
            break;
        }
        size_t u1, u2;
        if ((st = pfi_linear_fit(X, yt, n, p, &m->t[k], &u1, err))) goto out;
        if ((st = pfi_linear_fit(X, yp, n, p, &m->pw[k], &u2, err))) {
            pfi_linear_dispose(&m->t[k]);
            goto out;
        }
        m->n_train[k] = u1;
        prior_at(X, yt, yp, n, p, m, k);
        m->ngrid++;
    }
    if (m->ngrid < 2)
        st = pfi_errorf(err, PFI_EINVAL, "too few curves cover any cap fraction below 1");
out:
    free(yt), free(yp);
    if (st) pfi_curve_model_dispose(m);
    return st;
}

void pfi_curve_model_predict(const pfi_curve_model *m, const double *x, double *t_frac,
                             double *p_frac)
{
    for (size_t k = 0; k < m->ngrid; k++) {
        double a = pfi_linear_eval(&m->t[k], x), b = pfi_linear_eval(&m->pw[k], x);
        t_frac[k] = fmin(1, fmax(0.01, a));
        p_frac[k] = fmin(1, fmax(0.01, b));
    }
    pfi_isotonic_increasing(t_frac, NULL, m->ngrid);
    pfi_isotonic_increasing(p_frac, NULL, m->ngrid);
    t_frac[m->ngrid - 1] = p_frac[m->ngrid - 1] = 1;
    for (size_t k = 0; k + 1 < m->ngrid; k++) {
        if (t_frac[k] > 1) t_frac[k] = 1;
        if (p_frac[k] > 1) p_frac[k] = 1;
    }
}

pfi_status pfi_curve_model_curve(const pfi_curve_model *m, const double *x, double cap_max_w,
                                 double tokens_per_s_max, double power_max_w, pfi_curve *out,
                                 pfi_error *err)
{
    double t[PFI_CURVE_GRID_MAX], pw[PFI_CURVE_GRID_MAX];
    pfi_curve_model_predict(m, x, t, pw);
    pfi_point pts[PFI_CURVE_GRID_MAX];
    for (size_t k = 0; k < m->ngrid; k++)
        pts[k] = (pfi_point){
            m->frac[k] * cap_max_w, pw[k] * power_max_w, t[k] * tokens_per_s_max, NAN, NAN, 1};
    return pfi_curve_init(out, pts, m->ngrid, err);
}

pfi_status pfi_curve_model_bound(const pfi_curve_model *m, const double *x, double z,
                                 double cap_max_w, double tokens_per_s_max, double power_max_w,
                                 pfi_curve *out, pfi_error *err)
{
    double t[PFI_CURVE_GRID_MAX], pw[PFI_CURVE_GRID_MAX];
    if (x) pfi_curve_model_predict(m, x, t, pw);
    for (size_t k = 0; k < m->ngrid; k++) {
        double st = x ? m->t_se[k] : m->pop_t_sd[k], sp = x ? m->p_se[k] : m->pop_p_sd[k];
        if (!x) t[k] = m->pop_t[k], pw[k] = m->pop_p[k];
        if (!isfinite(st) || !isfinite(sp) || !isfinite(t[k]) || !isfinite(pw[k]))
            return pfi_errorf(err, PFI_ESTATE,
                              "the curve model carries no standard errors (fitted before them)");
        t[k] = fmin(1, fmax(0.01, t[k] - z * st));
        pw[k] = fmin(1, fmax(0.01, pw[k] + z * sp));
    }
    pfi_isotonic_increasing(t, NULL, m->ngrid);
    pfi_isotonic_increasing(pw, NULL, m->ngrid);
    t[m->ngrid - 1] = pw[m->ngrid - 1] = 1;
    pfi_point pts[PFI_CURVE_GRID_MAX];
    for (size_t k = 0; k < m->ngrid; k++)
        pts[k] = (pfi_point){
            m->frac[k] * cap_max_w, pw[k] * power_max_w, t[k] * tokens_per_s_max, NAN, NAN, 1};
    return pfi_curve_init(out, pts, m->ngrid, err);
}

double pfi_modelfile_pfi(const pfi_modelfile *m, const double *x, int *clamped, int *out_of_range)
{
    if (m->kind == PFI_MODELFILE_OLS)
        return pfi_pfi_model_predict(&m->ols, x, clamped, out_of_range);
    if (clamped) *clamped = 0;
    int oor = 0;
    for (size_t k = 0; k < m->p; k++)
        if (x[k] < m->curve.fmin[k] || x[k] > m->curve.fmax[k]) oor++;
    if (out_of_range) *out_of_range = oor;
    double t[PFI_CURVE_GRID_MAX], p[PFI_CURVE_GRID_MAX];
    pfi_curve_model_predict(&m->curve, x, t, p);
    pfi_point pts[PFI_CURVE_GRID_MAX];
    for (size_t k = 0; k < m->curve.ngrid; k++)
        pts[k] = (pfi_point){m->curve.frac[k], p[k], t[k], NAN, NAN, 1};
    pfi_curve c;
    if (pfi_curve_init(&c, pts, m->curve.ngrid, NULL) != PFI_OK) return NAN;
    pfi_eq1_result r;
    pfi_eq1(&c, &r);
    pfi_curve_dispose(&c);
    return r.pfi;
}
