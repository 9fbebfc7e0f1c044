/* manifest.h — run.json, the manifest of a run directory (one job at one
 * cap; docs/formats.md). The contract between `pfi synth`, `pfi sweep` and
 * `pfi ingest`:
 *
 *   {"group": "...", "gpu_model": "H200", "gpus": 8, "cap_w": 700,
 *    "arch": "dense", "task": "pt", "model": "...", "split": "headline",
 *    "hosts": ["node-1"], "interval_s": 5,
 *    "metadata": {"seq_len": 4096, ...},
 *    "telemetry": [{"path": "dcgm-node-1.prom", "format": "prometheus", "host": "node-1"}],
 *    "steplog": "steps.jsonl"}
 *
 * Formats: "prometheus" (text exposition, dcgm-exporter), "query_range"
 * (Prometheus API JSON), "nvidia-smi" (CSV). Paths are relative to the run
 * directory; absolute paths and ".." are refused. Unknown top-level keys are
 * warned about and ignored. The types are core (run_input.h): this header
 * parses them. */
#ifndef PFI_MANIFEST_H
#define PFI_MANIFEST_H

#include <stddef.h>

#include "pfi/api.h"
#include "pfi/run_input.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

PFI_API pfi_status pfi_manifest_parse(const char *json, size_t len, const char *name,
                                      pfi_manifest *m, pfi_log *log, pfi_error *err);
/* 1 if the relative path is acceptable (no "..", not absolute, not empty). */
PFI_API int pfi_manifest_path_ok(const char *p);

#ifdef __cplusplus
}
#endif
#endif
