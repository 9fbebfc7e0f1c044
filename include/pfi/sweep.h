/* sweep.h — the sweep table: one row per run (docs/formats.md).
 *
 * Required columns: group, gpu_model, gpus, cap_w, tokens_per_s, power_w.
 * Optional: tokens_per_s_sem, power_w_sem, arch (dense|moe), task (pt|ft),
 * model, split, telemetry columns named by DCGM field names (DCGM_FI_*) or
 * derived-feature names, and free metadata (kept as text).
 * The Zeus power-trace CSV is read directly and converted on the fly. */
#ifndef PFI_SWEEP_H
#define PFI_SWEEP_H

#include "pfi/api.h"
#include "pfi/reader.h"
#include "pfi/status.h"
#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Derived telemetry features with fixed names (the ingest issue's). */
PFI_API extern const char *const pfi_derived_features[];
PFI_API extern const size_t pfi_n_derived_features;

/* Column type by name: numeric for the required numbers, *_sem, DCGM_FI_*,
 * derived features and the few known numeric metadata; text otherwise. */
PFI_API pfi_coltype pfi_sweep_coltype(const char *name);
/* 1 if the column holds a telemetry metric or derived feature. */
PFI_API int pfi_sweep_is_telemetry(const char *name);

typedef struct pfi_sweep_read_opts {
    const char *gpu_model; /* for Zeus files whose name does not say it */
    size_t max_record;     /* 0 = PFI_READER_DEFAULT_MAX */
} pfi_sweep_read_opts;

/* Append the rows of a sweep-table CSV (or a Zeus trace) to t. path "-" is
 * standard input. Every error names file, line and column. */
PFI_API pfi_status pfi_sweep_read(pfi_table *t, const char *path, const pfi_sweep_read_opts *o,
                                  pfi_log *log, pfi_error *err);
PFI_API pfi_status pfi_sweep_read_reader(pfi_table *t, pfi_reader *r, const pfi_sweep_read_opts *o,
                                         pfi_log *log, pfi_error *err);

/* GPU model from a Zeus file name (summary_power_v100.csv -> "V100"); NULL if
 * the name does not follow that pattern. Writes into buf. */
PFI_API const char *pfi_zeus_gpu_model(const char *path, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
