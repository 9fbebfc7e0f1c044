/* model_file.h — the predictor model file (JSON; docs/formats.md), read by
 * `pfi predict`, the allocator, the agent and the controller.
 *
 *   {"format_version": 1, "kind": "pfi-ols" | "curve", "target": "pfi" | "pfi_robust",
 *    "features": [{"name", "unit", "computed", "min", "max"}],
 *    "pfi-ols":  "intercept", "coefficients": [...], "clamp": {"min", "max"},
 *    "curve":    "grid_cap_frac": [...], "throughput": [{"intercept", "coefficients"}],
 *                "power": [...],
 *    "solver", "rank", "n_train", "metrics": {...}, "trained_on": [...],
 *    "train_where", "provenance"}
 *
 * Loading validates everything it uses and names the key that is wrong. */
#ifndef PFI_MODEL_FILE_H
#define PFI_MODEL_FILE_H

#include "pfi/api.h"
#include "pfi/predictor.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* meta (a json_t* object, may be NULL) is stored beside the model's own keys;
 * the model takes a reference. */
PFI_API pfi_status pfi_modelfile_save(const pfi_modelfile *m, const char *path, pfi_error *err);
PFI_API pfi_status pfi_modelfile_load(const char *path, pfi_modelfile *m, pfi_error *err);
PFI_API void pfi_modelfile_dispose(pfi_modelfile *m);

/* The model's PFI for features x (OLS: clamped prediction; curve: Eq. 1
 * over the predicted normalized curve). */
PFI_API double pfi_modelfile_pfi(const pfi_modelfile *m, const double *x, int *clamped,
                                 int *out_of_range);

#ifdef __cplusplus
}
#endif
#endif
