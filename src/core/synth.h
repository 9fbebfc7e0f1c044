/* synth.h — the generator of the reconstruction's raw runs (one job at one
 * cap): dcgm-exporter-style telemetry at 5 s scrapes for every GPU, and the
 * step log, over warmup, startup, 30 minutes of training (an evaluation at
 * ~10 min, a checkpoint at ~20 min) and a tail.
 *
 * Values are quantized as dcgm-exporter prints them (clocks, utilization,
 * framebuffer and temperature as integers, power to 1 mW, ratios to 1e-6),
 * so the text written by pfi synth parses back to exactly the numbers the
 * summary path (pfi_synth_summary) aggregates: synth -> ingest gives the
 * same sweep table as `pfi synth --summary`.
 *
 * Noise (keyed by seed, group, run and stream, independent of the model's
 * parameters): between runs, 0.4% on power and 0.5% on throughput (the
 * paper's repeat CVs); within a run, 0.5% per-scrape power noise common to
 * the job plus 0.5% per GPU, 1% per-step throughput noise, and small noise
 * on the other metrics. */
#ifndef PFI_SYNTH_H
#define PFI_SYNTH_H

#include <stdint.h>

#include "pfi/run.h"
#include "recon.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_synth_opts {
    uint64_t seed;             /* default 1 */
    double interval_s;         /* 5 */
    double train_s;            /* 1800 (30 min); shorter for quick runs */
    unsigned long metric_mask; /* which metrics to generate; PFI_SYNTH_ALL */
} pfi_synth_opts;

#define PFI_SYNTH_ALL (~0UL)
/* the metrics the protocol needs for power and phases (fast calibration) */
#define PFI_SYNTH_POWER_ONLY                                                                       \
    ((1UL << PFI_M_POWER_USAGE) | (1UL << PFI_M_GPU_UTIL) | (1UL << PFI_M_FB_USED) |               \
     (1UL << PFI_M_ENFORCED_LIMIT))

void pfi_synth_opts_default(pfi_synth_opts *o);
/* Decimal places a metric is quantized to (and printed with). */
int pfi_synth_decimals(pfi_metric m);
/* The metrics a synthetic scrape contains (the 13 features' DCGM fields,
 * NVLink TX and RX, the enforced limit). */
extern const pfi_metric pfi_synth_metrics[];
extern const int pfi_synth_nmetrics;

typedef struct pfi_synth_sink {
    /* one scrape of one host: v[g * PFI_M_COUNT + m] for its gpus (NaN: not emitted) */
    pfi_status (*scrape)(void *ud, int host, int64_t t_ms, const double *v, int ngpus,
                         pfi_error *err);
    pfi_status (*step)(void *ud, double t_s, double tokens_per_s, double mfu, double tflops,
                       long step, pfi_error *err);
    void *ud;
} pfi_synth_sink;

int pfi_synth_hosts(const pfi_recon_group *g); /* 8 GPUs per host */
int pfi_synth_gpus_per_host(const pfi_recon_group *g);
void pfi_synth_host_name(const pfi_recon_group *g, int host, char *buf, size_t n);
void pfi_synth_gpu_uuid(const pfi_recon_group *g, int host, int gpu, char *buf, size_t n);
int64_t pfi_synth_run_start_ms(const pfi_recon_group *g, int run);

/* Generate run `run` (cap = g->caps_w[run]) into the sink. */
pfi_status pfi_synth_run(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                         const pfi_synth_sink *sink, pfi_error *err);

/* The run's sweep-table summary through the protocol (pfi_summarize_run),
 * without any text: the manifest fields are filled from the group. */
pfi_status pfi_synth_summary(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                             pfi_run_summary *out, pfi_error *err);
/* Fill a manifest for run `run` of g (what run.json holds). */
pfi_status pfi_synth_manifest(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                              pfi_manifest *m, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
