/* predictor.h — predicting PFI, and the whole normalized curve, from
 * telemetry of the uncapped run (docs/method.md, "Prediction from telemetry", and beyond).
 *
 * OLS model: PFI = b0 + sum_k b_k F_k, solved as minimum-norm least squares
 * (SVD) on standardized features, so nearly or fully underdetermined fits
 * (13 metrics on 15 groups, the regime of the paper's -18.5 and -104) have a
 * well-defined answer. Predictions are clamped to the training targets' range
 * widened by 25% (and at least 0.05): an OLS line can cross zero, and a
 * non-positive PFI would be a negative weight for the allocator.
 *
 * Curve model (pfi's own): for each point of a grid of cap fractions (cap /
 * the GPU's largest cap), one OLS for the normalized throughput T/T_max and
 * one for the normalized power P/P_max, on the same features. Training
 * points come from each group's curve by interpolation within its measured
 * range only, never extrapolation. Predictions are clamped to [0, 1] and
 * made non-decreasing in the cap. The lowest grid point the model covers is
 * the lowest reachable power online, where there is no sweep.
 *
 * Evaluation: in-sample, leave-one-out and leave-one-cluster-out; R^2 = 1 -
 * SSE/SST with SST about the full-sample mean (table 3's convention). */
#ifndef PFI_PREDICTOR_H
#define PFI_PREDICTOR_H

#include <stddef.h>

#include "pfi/api.h"
#include "pfi/curve.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_linear {
    size_t p;
    double intercept;
    double *beta; /* raw-scale coefficients */
    size_t rank;
} pfi_linear;

PFI_API void pfi_linear_dispose(pfi_linear *m);
/* Fit on rows with finite y and finite features; returns the count used. */
PFI_API pfi_status pfi_linear_fit(const double *X, const double *y, size_t n, size_t p,
                                  pfi_linear *m, size_t *n_used, pfi_error *err);
PFI_API double pfi_linear_eval(const pfi_linear *m, const double *x);

typedef struct pfi_eval {
    double r2, rmse, rho;
    size_t n;
} pfi_eval;

/* Metrics of predictions yhat for y (NaN pairs skipped); SST about sst_mean
 * (NaN: about the mean of these y). */
PFI_API void pfi_eval_metrics(const double *y, const double *yhat, size_t n, double sst_mean,
                              pfi_eval *e);

/* Cross-validated predictions: cluster == NULL -> leave-one-out; else
 * leave-one-cluster-out (cluster ids 0..k-1; a negative id is never held
 * out). yhat[i] NaN where not predictable. */
PFI_API pfi_status pfi_cross_validate(const double *X, const double *y, size_t n, size_t p,
                                      const int *cluster, double *yhat, pfi_error *err);

/* ---- the scalar PFI model ---- */
typedef struct pfi_pfi_model {
    pfi_linear lin;
    double *fmin, *fmax; /* training ranges per feature */
    double clamp_lo, clamp_hi;
    size_t n_train;
} pfi_pfi_model;

PFI_API pfi_status pfi_pfi_model_fit(const double *X, const double *y, size_t n, size_t p,
                                     pfi_pfi_model *m, pfi_error *err);
PFI_API void pfi_pfi_model_dispose(pfi_pfi_model *m);
/* Clamped prediction; *clamped set when the clamp acted; *out_of_range
 * counts features outside the training range. */
PFI_API double pfi_pfi_model_predict(const pfi_pfi_model *m, const double *x, int *clamped,
                                     int *out_of_range);

/* ---- the curve model ---- */
#define PFI_CURVE_GRID_MAX 32

typedef struct pfi_curve_model {
    size_t ngrid;
    double frac[PFI_CURVE_GRID_MAX]; /* cap / largest cap, ascending, last = 1 */
    pfi_linear t[PFI_CURVE_GRID_MAX], pw[PFI_CURVE_GRID_MAX];
    size_t n_train[PFI_CURVE_GRID_MAX];
    double *fmin, *fmax;
    size_t p;
    /* the prior (issue 44), per grid point, normalized like t and pw: the
     * fit's residual standard errors (t_se, p_se), and the population's
     * mean and standard deviation over the training curves, for a job
     * without features (pop_t, pop_p, pop_t_sd, pop_p_sd). NaN: not known
     * (a model file from before them). */
    double t_se[PFI_CURVE_GRID_MAX], p_se[PFI_CURVE_GRID_MAX];
    double pop_t[PFI_CURVE_GRID_MAX], pop_p[PFI_CURVE_GRID_MAX];
    double pop_t_sd[PFI_CURVE_GRID_MAX], pop_p_sd[PFI_CURVE_GRID_MAX];
} pfi_curve_model;

/* Normalized training targets of one curve at cap fraction f, by
 * interpolation inside its measured caps only (0 if outside: no point). */
PFI_API int pfi_curve_point_at_frac(const pfi_curve *c, double f, double *t_frac, double *p_frac);

/* curves[g] for each of n groups with features X[g*p..]. Grid: 0.25, 0.30,
 * ..., 1.00 kept where at least p + 3 groups have a point. */
PFI_API pfi_status pfi_curve_model_fit(const double *X, const pfi_curve *const *curves, size_t n,
                                       size_t p, pfi_curve_model *m, pfi_error *err);
PFI_API void pfi_curve_model_dispose(pfi_curve_model *m);
/* Predicted normalized curve at the grid: t_frac[k], p_frac[k]. */
PFI_API void pfi_curve_model_predict(const pfi_curve_model *m, const double *x, double *t_frac,
                                     double *p_frac);
/* The predicted curve in absolute units for a job with uncapped (T_max,
 * P_max) on a GPU whose largest cap is cap_max_w: points at the grid caps. */
PFI_API pfi_status pfi_curve_model_curve(const pfi_curve_model *m, const double *x,
                                         double cap_max_w, double tokens_per_s_max,
                                         double power_max_w, pfi_curve *out, pfi_error *err);
/* The prior's conservative bound (issue 44: the offer of a job with nothing
 * measured): the predicted curve for features x, or with x NULL the
 * population's mean curve, with throughput z standard errors (deviations)
 * lower and power z higher at each grid point (throughput at least 1% of
 * T_max, power at most P_max; both non-decreasing, 1 uncapped). PFI_ESTATE
 * when the model carries no standard errors (an older model file). */
PFI_API pfi_status pfi_curve_model_bound(const pfi_curve_model *m, const double *x, double z,
                                         double cap_max_w, double tokens_per_s_max,
                                         double power_max_w, pfi_curve *out, pfi_error *err);

/* A trained model as a model file holds it (pfi/model_file.h reads and
 * writes it: io), a scalar PFI model or a curve model with the names of its
 * features; and its PFI (computation, no I/O: core). */
typedef enum pfi_modelfile_kind {
    PFI_MODELFILE_OLS = 0,
    PFI_MODELFILE_CURVE = 1
} pfi_modelfile_kind;

typedef struct pfi_modelfile {
    pfi_modelfile_kind kind;
    char target[32];
    size_t p;
    char **features;
    pfi_pfi_model ols;     /* kind OLS */
    pfi_curve_model curve; /* kind CURVE */
    void *meta;            /* the extra JSON (metrics, provenance); json_t* */
} pfi_modelfile;

/* The model's PFI for features x (OLS: clamped prediction; curve: Eq. 1
 * over the predicted normalized curve). */
PFI_API double pfi_modelfile_pfi(const pfi_modelfile *m, const double *x, int *clamped,
                                 int *out_of_range);

#ifdef __cplusplus
}
#endif
#endif
