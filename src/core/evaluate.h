/* evaluate.h — the predictor evaluated on sweep groups (what `pfi fit`
 * computes): the features of chosen groups, the OLS fit on the training
 * groups with its in-sample, leave-one-out and leave-one-cluster-out
 * metrics, its metrics on other groups, the paper's table-3 ablation, and
 * the curve predictor's errors per grid point (refitted per fold). Pure
 * computation on a group set (groupset.h); the CLI reads the tables and
 * the paper's values and prints. */
#ifndef PFI_EVALUATE_H
#define PFI_EVALUATE_H

#include <stddef.h>

#include "groupset.h"
#include "pfi/predictor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a fit is evaluated on. */
typedef struct pfi_fit_data {
    const pfi_groupset *S;
    const double *y;     /* the target of every group of S (pfi_groupset_target) */
    const size_t *train; /* the training groups (indices into S's groups) */
    size_t ntrain;
    const int *cluster; /* per training group: its LOCO cluster, 0..k-1 (pfi_fit_clusters) */
} pfi_fit_data;

/* LOCO clusters of the groups train[0..n): groups with the same value of
 * the attribute cluster_by (pfi_groupset_attr), or of arch-task when NULL,
 * share an id, numbered in order of first appearance (at most 256 ids;
 * later keys all get id 256). */
void pfi_fit_clusters(const pfi_groupset *S, const size_t *train, size_t n, const char *cluster_by,
                      int *cluster);

/* X[i * p + k] = feature k of group rows[i]. PFI_ENOTFOUND names a feature
 * that is neither a numeric column nor arch, task, log_gpus, power_frac. */
pfi_status pfi_fit_features(const pfi_groupset *S, char *const *feat, size_t p, const size_t *rows,
                            size_t n, double *X, pfi_error *err);

typedef struct pfi_fit_eval {
    pfi_eval in_sample, loo, loco;
} pfi_fit_eval;

/* The OLS model of the target on features feat[0..p) over the training
 * groups (*model, freed by the caller with pfi_pfi_model_dispose) and its
 * in-sample, LOO and LOCO metrics (R^2's SST about the mean of the finite
 * training targets). */
pfi_status pfi_fit_evaluate(const pfi_fit_data *d, char *const *feat, size_t p, pfi_fit_eval *ev,
                            pfi_pfi_model *model, pfi_error *err);

/* A fitted model's metrics on the groups rows[0..n) that have a finite
 * target (SST about their own mean); *n_used: how many those are,
 * *n_out_of_range: how many have a feature outside the training range. */
pfi_status pfi_fit_eval_on(const pfi_fit_data *d, char *const *feat, size_t p,
                           const pfi_pfi_model *m, const size_t *rows, size_t n, pfi_eval *ev,
                           size_t *n_used, size_t *n_out_of_range, pfi_error *err);

/* ---- table 3: the paper's seven predictor sets ---- */
#define PFI_ABLATION_SETS 7
typedef struct pfi_ablation_row {
    const char *name; /* as in the paper's table 3, e.g. "dram_copy_product+job_metadata" */
    size_t p;         /* number of features */
    pfi_fit_eval ev;
} pfi_ablation_row;

/* Every set fitted and evaluated on the training groups, in table 3's order. */
pfi_status pfi_fit_ablation(const pfi_fit_data *d, pfi_ablation_row rows[PFI_ABLATION_SETS],
                            pfi_error *err);

/* ---- the curve predictor ---- */
/* The curve model on the training groups' curves. */
pfi_status pfi_fit_curve(const pfi_fit_data *d, char *const *feat, size_t p, pfi_curve_model *m,
                         pfi_error *err);

/* Errors of normalized throughput and power per grid point of a model. */
typedef struct pfi_curve_errors {
    size_t ngrid;                    /* the model's grid */
    double frac[PFI_CURVE_GRID_MAX]; /* cap fraction */
    size_t n[PFI_CURVE_GRID_MAX];    /* points compared */
    double tokens_frac_rmse[PFI_CURVE_GRID_MAX],
        power_frac_rmse[PFI_CURVE_GRID_MAX]; /* NaN where n = 0 */
} pfi_curve_errors;

/* Leave-one-out (loco = 0) or leave-one-cluster-out (loco = 1): the model
 * refitted without each fold, its errors on the held-out training groups,
 * at the grid points of m (the model on all of them). */
pfi_status pfi_fit_curve_cv(const pfi_fit_data *d, char *const *feat, size_t p,
                            const pfi_curve_model *m, int loco, pfi_curve_errors *out,
                            pfi_error *err);
/* The errors of m on the groups rows[0..n). */
pfi_status pfi_fit_curve_eval_on(const pfi_fit_data *d, char *const *feat, size_t p,
                                 const pfi_curve_model *m, const size_t *rows, size_t n,
                                 pfi_curve_errors *out, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
