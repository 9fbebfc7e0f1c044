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
 * warned about and ignored. */
#ifndef PFI_MANIFEST_H
#define PFI_MANIFEST_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_tel_format { PFI_TEL_PROMETHEUS = 0, PFI_TEL_QUERY_RANGE, PFI_TEL_NVSMI } pfi_tel_format;

typedef struct pfi_tel_ref {
    char *path;
    pfi_tel_format format;
    char *host; /* may be NULL */
} pfi_tel_ref;

typedef struct pfi_kv {
    char *key, *value;
} pfi_kv;

typedef struct pfi_manifest {
    char *group, *gpu_model, *arch, *task, *model, *split;
    int gpus;
    double cap_w;
    double interval_s; /* 0 = not given */
    char **hosts;
    size_t nhosts;
    pfi_kv *meta;
    size_t nmeta;
    pfi_tel_ref *tel;
    size_t ntel;
    char *steplog;     /* may be NULL */
} pfi_manifest;

pfi_status pfi_manifest_parse(const char *json, size_t len, const char *name, pfi_manifest *m,
                              pfi_log *log, pfi_error *err);
void pfi_manifest_free(pfi_manifest *m);
const char *pfi_tel_format_name(pfi_tel_format f);
/* 1 if the relative path is acceptable (no "..", not absolute, not empty). */
int pfi_manifest_path_ok(const char *p);

#ifdef __cplusplus
}
#endif
#endif
