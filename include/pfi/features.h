/* features.h — per-group predictor inputs and targets from a sweep table.
 *
 * A feature is measured on the group's uncapped run (what production has):
 *   - any numeric column (telemetry DCGM_FI_*, derived features such as
 *     dram_copy_product, numeric metadata): the mean over the uncapped rows;
 *   - job metadata: `arch` (moe = 1, dense = 0), `task` (ft = 1, pt = 0),
 *     `log_gpus` (log2 of the GPU count);
 *   - `power_frac`: uncapped aggregate power / (GPUs x the largest cap), the
 *     only telemetry the Zeus traces carry.
 * Named sets: `job_metadata` = arch,task,log_gpus; `all_dcgm_metrics` = the
 * 13 features of the reconstruction issue (DCGM_FI_DEV_GPU_UTIL ... DRAM_ACTIVE
 * and nvlink_bytes). */
#ifndef PFI_FEATURES_H
#define PFI_FEATURES_H

#include "pfi/api.h"
#include "pfi/groups.h"
#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

PFI_API extern const char *const pfi_all_dcgm_features[13];

/* Expand a comma list with named sets into feature names (caller frees
 * each and the array). */
PFI_API pfi_status pfi_features_expand(const char *list, char ***names, size_t *n, pfi_error *err);
PFI_API void pfi_features_free(char **names, size_t n);
/* A short description of how a feature is computed (for model files). */
PFI_API const char *pfi_feature_source(const char *name);
/* The unit of a feature ("%", "fraction (0..1)", "MiB", "W", ...). */
PFI_API const char *pfi_feature_unit(const char *name);

/* X[g * p + k] = feature k of group g; NaN if the group lacks it. Errors:
 * a name that is neither a column nor a known feature. */
PFI_API pfi_status pfi_features_extract(const pfi_table *t, const pfi_groups *gs,
                                        char *const *names, size_t p, double *X, pfi_error *err);
/* One feature of one group (NaN if unavailable). */
PFI_API double pfi_feature_value(const pfi_table *t, const pfi_group *g, const char *name,
                                 int *known);
/* A model feature by its sweep-table column name from a job's metric
 * values m[PFI_M_COUNT] (job values, as pfi_derived_value takes them; NaN
 * where not measured): a metric's DCGM name gives its value, a derived
 * feature's name pfi_derived_value's. Any other name (job metadata,
 * power_frac: not telemetry) is NaN with *known = 0 (known may be NULL).
 * What the agent and the controller compute a job's features with. */
PFI_API double pfi_feature_from_metrics(const char *name, const double *m, int *known);

#ifdef __cplusplus
}
#endif
#endif
