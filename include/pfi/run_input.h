/* run_input.h — what one run is made of, as data: its manifest (run.json:
 * who ran what at which cap, and where its telemetry and step log are) and
 * its step log (the training loop's throughput over time). The core's run
 * summary (run.h) and the generator (synth.h) work on these; parsing them
 * from files is io (manifest.h, steplog.h). */
#ifndef PFI_RUN_INPUT_H
#define PFI_RUN_INPUT_H

#include <stddef.h>

#include "pfi/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_tel_format {
    PFI_TEL_PROMETHEUS = 0,
    PFI_TEL_QUERY_RANGE,
    PFI_TEL_NVSMI
} pfi_tel_format;

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
    char *steplog; /* may be NULL */
} pfi_manifest;

/* Free what m holds and zero it (m itself is the caller's). */
PFI_API void pfi_manifest_dispose(pfi_manifest *m);
PFI_API const char *pfi_tel_format_name(pfi_tel_format f);

typedef struct pfi_steplog {
    size_t n, cap;
    double *t_s, *tokens_per_s, *mfu, *tflops; /* mfu/tflops NaN when absent */
    /* the line's "tokens" and "step" (NaN when absent: a line that gives
       tokens_per_s alone; a logger that does not number its steps): what the
       throughput estimator "rate" counts (protocol.h) */
    double *tokens, *step;
} pfi_steplog;

/* Free what s holds and zero it (s itself is the caller's). */
PFI_API void pfi_steplog_dispose(pfi_steplog *s);

#ifdef __cplusplus
}
#endif
#endif
