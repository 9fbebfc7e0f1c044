/* stats.c — see stats.h. */
#include "pfi/stats.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct iv {
    double v;
    size_t i;
} iv;

static int cmp_iv(const void *a, const void *b)
{
    const iv *x = a, *y = b;
    if (x->v != y->v) return (x->v > y->v) - (x->v < y->v);
    return (x->i > y->i) - (x->i < y->i);
}

double pfi_ranks(const double *x, size_t n, double *ranks)
{
    iv *a = malloc((n ? n : 1) * sizeof *a);
    if (!a) return NAN;
    for (size_t i = 0; i < n; i++) a[i] = (iv){x[i], i};
    qsort(a, n, sizeof *a, cmp_iv);
    double ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && a[j + 1].v == a[i].v) j++;
        double r = 0.5 * (double)(i + j) + 1.0;
        for (size_t k = i; k <= j; k++) ranks[a[k].i] = r;
        double t = (double)(j - i + 1);
        ties += t * t * t - t;
        i = j + 1;
    }
    free(a);
    return ties;
}

double pfi_pearson(const double *x, const double *y, size_t n)
{
    if (n < 2) return NAN;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    if (sxx <= 0 || syy <= 0) return NAN;
    return sxy / sqrt(sxx * syy);
}

void pfi_spearman(const double *x, const double *y, size_t n, double *rho, double *p)
{
    *rho = *p = NAN;
    if (n < 3) return;
    double *rx = malloc(n * sizeof *rx), *ry = malloc(n * sizeof *ry);
    if (!rx || !ry) {
        free(rx), free(ry);
        return;
    }
    pfi_ranks(x, n, rx);
    pfi_ranks(y, n, ry);
    *rho = pfi_pearson(rx, ry, n);
    free(rx), free(ry);
    if (isnan(*rho)) return;
    *p = pfi_spearman_pvalue(*rho, n);
}

double pfi_spearman_pvalue(double r, size_t n)
{
    if (isnan(r) || n < 3) return NAN;
    if (fabs(r) >= 1) return 0;
    double df = (double)n - 2;
    double t = r * sqrt(df / (1 - r * r));
    return 2 * gsl_cdf_tdist_Q(fabs(t), df);
}

void pfi_ols1(const double *x, const double *y, size_t n, double *b0, double *b1, double *r2)
{
    *b0 = *b1 = *r2 = NAN;
    if (n < 2) return;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    if (sxx <= 0) return;
    *b1 = sxy / sxx;
    *b0 = my - *b1 * mx;
    *r2 = syy > 0 ? 1 - (syy - *b1 * sxy) / syy : NAN;
}

void pfi_hat_values(const double *x, size_t n, double *h)
{
    double m = 0, s = 0;
    for (size_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (size_t i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
    for (size_t i = 0; i < n; i++)
        h[i] = 1.0 / (double)n + (s > 0 ? (x[i] - m) * (x[i] - m) / s : 0);
}

void pfi_kruskal(const double *x, const int *label, size_t n, int k, double *H, int *df, double *p)
{
    *H = *p = NAN;
    *df = k - 1;
    double *r = malloc((n ? n : 1) * sizeof *r);
    double *rs = calloc((size_t)k, sizeof *rs);
    size_t *cnt = calloc((size_t)k, sizeof *cnt);
    if (!r || !rs || !cnt || n < 2 || k < 2) goto out;
    double ties = pfi_ranks(x, n, r);
    for (size_t i = 0; i < n; i++) {
        rs[label[i]] += r[i];
        cnt[label[i]]++;
    }
    double N = (double)n, s = 0;
    for (int g = 0; g < k; g++)
        if (cnt[g]) s += rs[g] * rs[g] / (double)cnt[g];
    double h = 12.0 / (N * (N + 1)) * s - 3 * (N + 1);
    double corr = 1 - ties / (N * N * N - N);
    if (corr > 0) h /= corr;
    *H = h;
    *p = gsl_cdf_chisq_Q(h, (double)(k - 1));
out:
    free(r), free(rs), free(cnt);
}

size_t pfi_dunn(const double *x, const int *label, size_t n, int k, double *z, double *p_raw)
{
    double *r = malloc((n ? n : 1) * sizeof *r);
    double *rs = calloc((size_t)k, sizeof *rs);
    size_t *cnt = calloc((size_t)k, sizeof *cnt);
    size_t m = 0;
    if (!r || !rs || !cnt) goto out;
    double ties = pfi_ranks(x, n, r);
    for (size_t i = 0; i < n; i++) {
        rs[label[i]] += r[i];
        cnt[label[i]]++;
    }
    double N = (double)n;
    double base = N * (N + 1) / 12.0 - ties / (12.0 * (N - 1));
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++) {
            double ma = cnt[a] ? rs[a] / (double)cnt[a] : NAN,
                   mb = cnt[b] ? rs[b] / (double)cnt[b] : NAN;
            double se = sqrt(base * (1.0 / (double)cnt[a] + 1.0 / (double)cnt[b]));
            z[m] = (ma - mb) / se;
            p_raw[m] = 2 * gsl_cdf_ugaussian_Q(fabs(z[m]));
            m++;
        }
out:
    free(r), free(rs), free(cnt);
    return m;
}

void pfi_holm(const double *p, size_t m, double *adj)
{
    iv *a = malloc((m ? m : 1) * sizeof *a);
    if (!a) return;
    for (size_t i = 0; i < m; i++) a[i] = (iv){p[i], i};
    qsort(a, m, sizeof *a, cmp_iv);
    double run = 0;
    for (size_t k = 0; k < m; k++) {
        double v = (double)(m - k) * a[k].v;
        if (v > 1) v = 1;
        if (v < run) v = run; /* monotone */
        run = v;
        adj[a[k].i] = v;
    }
    free(a);
}

void pfi_bh(const double *p, size_t m, double *q)
{
    iv *a = malloc((m ? m : 1) * sizeof *a);
    if (!a) return;
    for (size_t i = 0; i < m; i++) a[i] = (iv){p[i], i};
    qsort(a, m, sizeof *a, cmp_iv);
    double run = 1;
    for (size_t k = m; k-- > 0;) {
        double v = a[k].v * (double)m / (double)(k + 1);
        if (v > run) v = run;
        run = v;
        q[a[k].i] = v > 1 ? 1 : v;
    }
    free(a);
}

pfi_status pfi_lstsq(const double *X, size_t n, size_t p, const double *y, double *beta, double tol,
                     size_t *rank, pfi_error *err)
{
    if (n == 0 || p == 0) return pfi_errorf(err, PFI_EINVAL, "empty least-squares problem");
    int wide = n < p;
    /* decompose A = X (n >= p) or A = X^T (n < p); GSL needs rows >= cols */
    size_t rows = wide ? p : n, cols = wide ? n : p;
    gsl_matrix *A = gsl_matrix_alloc(rows, cols), *V = gsl_matrix_alloc(cols, cols);
    gsl_vector *S = gsl_vector_alloc(cols), *work = gsl_vector_alloc(cols);
    if (!A || !V || !S || !work) {
        if (A) gsl_matrix_free(A);
        if (V) gsl_matrix_free(V);
        if (S) gsl_vector_free(S);
        if (work) gsl_vector_free(work);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < p; j++) {
            if (wide) gsl_matrix_set(A, j, i, X[i * p + j]);
            else gsl_matrix_set(A, i, j, X[i * p + j]);
        }
    gsl_linalg_SV_decomp(A, V, S, work); /* A := U */
    double smax = gsl_vector_get(S, 0);
    if (tol <= 0) tol = 1e-10 * (double)(n > p ? n : p);
    size_t r = 0;
    for (size_t k = 0; k < cols; k++)
        if (gsl_vector_get(S, k) > tol * smax) r++;
    memset(beta, 0, p * sizeof *beta);
    /* X = U S V^T (tall) -> beta = V S^+ U^T y;  X^T = U S V^T (wide) -> X = V S U^T,
     * beta = U S^+ V^T y */
    for (size_t k = 0; k < r; k++) {
        double s = gsl_vector_get(S, k), c = 0;
        for (size_t i = 0; i < n; i++)
            c += (wide ? gsl_matrix_get(V, i, k) : gsl_matrix_get(A, i, k)) * y[i];
        c /= s;
        for (size_t j = 0; j < p; j++)
            beta[j] += c * (wide ? gsl_matrix_get(A, j, k) : gsl_matrix_get(V, j, k));
    }
    if (rank) *rank = r;
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(work);
    return PFI_OK;
}
