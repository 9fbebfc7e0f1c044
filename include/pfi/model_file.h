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
 * Loading validates everything it uses and names the key that is wrong.
 * The model itself (pfi_modelfile) and its PFI (pfi_modelfile_pfi) are the
 * core's, in pfi/predictor.h; this header is io's: the file. */
#ifndef PFI_MODEL_FILE_H
#define PFI_MODEL_FILE_H

#include "pfi/api.h"
#include "pfi/predictor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* meta (a json_t* object, may be NULL) is stored beside the model's own keys;
 * the model takes a reference. */
PFI_API pfi_status pfi_modelfile_save(const pfi_modelfile *m, const char *path, pfi_error *err);
PFI_API pfi_status pfi_modelfile_load(const char *path, pfi_modelfile *m, pfi_error *err);
PFI_API void pfi_modelfile_dispose(pfi_modelfile *m);

#ifdef __cplusplus
}
#endif
#endif
