/* run.h — one run (one job at one cap) from binned telemetry and its step
 * log to a sweep-table row: the protocol's phases, aggregation, step-log
 * window and checks, as one pure function shared by `pfi ingest` (which
 * bins parsed files) and `pfi synth --summary` (which bins generated
 * samples without printing them), so both give the same numbers. */
#ifndef PFI_RUN_H
#define PFI_RUN_H

#include "pfi/api.h"
#include "pfi/protocol.h"
#include "pfi/run_input.h"
#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_run_summary {
    pfi_manifest m; /* group, gpu_model, gpus, cap_w, metadata, ... */
    char *name;     /* run directory (for messages and the `run` column) */
    double power_w, power_w_sem;
    double tokens_per_s, tokens_per_s_sem;
    double mfu, mfu_sem, tflops;
    double metric[PFI_M_COUNT]; /* per-GPU averages; bytes summed over GPUs */
    double derived[PFI_D_COUNT];
    double enforced_limit_w;
    size_t n_train, n_bins, n_dropped, n_steps;
    double train_s; /* length of the training phase, s */
    int ngpus;
} pfi_run_summary;

/* s->m must hold the manifest (gpus and cap_w are checked against the
 * data). Errors name the run: GPU count mismatch, no utilization metric, no
 * training phase, a step log without samples in it, an enforced limit that
 * differs from cap_w (unless o->cap_check is 0). */
PFI_API pfi_status pfi_summarize_run(const pfi_bins *bins, const pfi_steplog *steps,
                                     const pfi_protocol_opts *o, pfi_run_summary *s, pfi_log *log,
                                     pfi_error *err);
PFI_API void pfi_run_summary_dispose(pfi_run_summary *s);

/* The sweep table of run summaries (docs/formats.md, "ingest output"):
 * fixed columns, then the metrics present in any run, then metadata. */
PFI_API pfi_status pfi_summaries_table(const pfi_run_summary *const *runs, size_t n,
                                       pfi_table **out, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
