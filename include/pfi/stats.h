/* stats.h — the statistics of the paper's analysis (docs/method.md, "Prediction from telemetry"):
 * ranks with ties, Spearman's rho with the t-approximation p-value (n-2
 * degrees of freedom), Pearson, simple OLS with R^2 and hat values,
 * Kruskal–Wallis with tie correction, Dunn's post-hoc z with the
 * tie-corrected variance, Holm–Bonferroni and Benjamini–Hochberg
 * adjustments, and a minimum-norm least-squares solver (SVD) for
 * rank-deficient fits. GSL supplies distributions and linear algebra. */
#ifndef PFI_STATS_H
#define PFI_STATS_H

#include <stddef.h>

#include "pfi/api.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Average ranks (1-based) of x; returns sum over tie groups of (t^3 - t). */
PFI_API double pfi_ranks(const double *x, size_t n, double *ranks);

/* Spearman's rho and its two-sided p (t = rho sqrt((n-2)/(1-rho^2)), t_{n-2}).
 * NaN when n < 3 or a variable is constant. */
PFI_API void pfi_spearman(const double *x, const double *y, size_t n, double *rho, double *p);
/* The two-sided p of a rho at n by the t approximation. */
PFI_API double pfi_spearman_pvalue(double rho, size_t n);
PFI_API double pfi_pearson(const double *x, const double *y, size_t n);

/* y = b0 + b1 x by least squares; r2 = 1 - SSE/SST. */
PFI_API void pfi_ols1(const double *x, const double *y, size_t n, double *b0, double *b1,
                      double *r2);
/* Hat values of the simple regression on x: 1/n + (x_i - mean)^2 / Sxx. */
PFI_API void pfi_hat_values(const double *x, size_t n, double *h);

/* Kruskal–Wallis H over k groups (labels 0..k-1), tie-corrected; df = k-1;
 * p from chi-square(df). */
PFI_API void pfi_kruskal(const double *x, const int *label, size_t n, int k, double *H, int *df,
                         double *p);

/* Dunn's test for every pair (a < b, in order (0,1),(0,2),...,(1,2),...):
 * z = (mean rank a - mean rank b) / sqrt(var), var tie-corrected; raw
 * two-sided p. Returns the number of pairs written. */
PFI_API size_t pfi_dunn(const double *x, const int *label, size_t n, int k, double *z,
                        double *p_raw);

/* Holm–Bonferroni step-down and Benjamini–Hochberg step-up adjustments. */
PFI_API void pfi_holm(const double *p, size_t m, double *adj);
PFI_API void pfi_bh(const double *p, size_t m, double *q);

/* Minimum-norm least squares: X is n x p row-major, y length n; beta
 * length p. Singular values below tol * s_max are dropped (tol <= 0: a
 * default). *rank gets the rank used. Works for n < p. */
PFI_API pfi_status pfi_lstsq(const double *X, size_t n, size_t p, const double *y, double *beta,
                             double tol, size_t *rank, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
