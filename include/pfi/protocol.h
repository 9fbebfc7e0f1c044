/* protocol.h — the paper's measurement protocol (docs/method.md, "Measurement protocol"), each
 * rule a named function with the paper's defaults as options:
 *
 *   alignment    pfi_bins_*: samples binned by scrape interval (absolute
 *                bins of interval_s since the epoch, so out-of-phase hosts
 *                share bins); a GPU's last value is carried for at most one
 *                interval; bins still missing a GPU's power are dropped (and
 *                counted). Per bin, power and bytes are summed over the
 *                job's GPUs; ratios, utilizations, clocks, temperature and
 *                framebuffer are averaged.
 *   phases       pfi_phases_segment: warmup (framebuffer used below a
 *                threshold, default 10 GiB per GPU), startup (GPU
 *                utilization 0), training (from the first to the last
 *                sustained window: every GPU above 50% for 3 consecutive
 *                scrapes; dips inside stay inside), tail.
 *   aggregation  pfi_aggregate: the mean of the top 10% of training-phase
 *                samples (or mean, or median), with the SEM of the samples
 *                kept.
 *   cap check    pfi_cap_check: the enforced limit seen must match the cap.
 *
 * Everything here is pure computation on numbers; readers live in io/. */
#ifndef PFI_PROTOCOL_H
#define PFI_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/api.h"
#include "pfi/metrics.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PFI_AGG_RATE: throughput only (pfi_throughput_rate) — tokens counted over
 * the wall time they took; elsewhere it is the mean */
typedef enum pfi_agg_mode {
    PFI_AGG_TOP = 0,
    PFI_AGG_MEAN,
    PFI_AGG_MEDIAN,
    PFI_AGG_RATE
} pfi_agg_mode;

typedef struct pfi_protocol_opts {
    double interval_s;     /* scrape interval: 5 */
    double fb_warmup_mib;  /* warmup while framebuffer used per GPU is below: 10240 MiB */
    double util_train_pct; /* training: every GPU above this utilization: 50 */
    int sustain_scrapes;   /* ... for this many consecutive scrapes: 3 */
    pfi_agg_mode agg;      /* top10 */
    double top_frac;       /* 0.10 */
    pfi_agg_mode tput_agg; /* throughput: top10 (the paper's); pfi ingest: rate */
    double cap_tol_w;      /* 1 W */
    int cap_check;         /* 1 */
    size_t max_bins;       /* span limit of one run: 2,000,000 bins */
    size_t max_gpus;       /* GPUs per run: 4096 */
} pfi_protocol_opts;

PFI_API void pfi_protocol_opts_default(pfi_protocol_opts *o);

/* ---- alignment ---------------------------------------------------------------- */

typedef struct pfi_bins pfi_bins;

PFI_API pfi_bins *pfi_bins_new(const pfi_protocol_opts *o);
PFI_API void pfi_bins_free(pfi_bins *b);
/* GPU index for a key (UUID, or host:index); new keys are added. -1 if the
 * run would exceed max_gpus. */
PFI_API int pfi_bins_gpu(pfi_bins *b, const char *key, size_t len);
PFI_API size_t pfi_bins_ngpus(const pfi_bins *b);
/* Add one sample. Errors: the run's span exceeds max_bins, out of memory. */
PFI_API pfi_status pfi_bins_add(pfi_bins *b, int gpu, pfi_metric m, int64_t t_ms, double v,
                                pfi_error *err);
PFI_API size_t pfi_bins_nsamples(const pfi_bins *b);

/* The job-level series: one entry per kept bin, in time order. */
typedef struct pfi_series {
    size_t n;
    int64_t *t_ms;               /* bin start */
    double *power_w;             /* sum over GPUs */
    double *util_min;            /* min over GPUs of GPU_UTIL (NaN if absent) */
    double *metric[PFI_M_COUNT]; /* job value: sum or average over GPUs; NaN if a GPU lacks it */
    double *derived[PFI_D_COUNT];
    size_t n_bins_seen, n_dropped, n_carried;
    size_t n_gpus;
} pfi_series;

PFI_API pfi_status pfi_bins_series(const pfi_bins *b, pfi_series *s, pfi_error *err);
PFI_API void pfi_series_dispose(pfi_series *s);

/* ---- phases --------------------------------------------------------------------- */

typedef enum pfi_phase {
    PFI_PHASE_WARMUP = 0,
    PFI_PHASE_STARTUP,
    PFI_PHASE_TRAINING,
    PFI_PHASE_TAIL
} pfi_phase;

typedef struct pfi_phases {
    size_t warmup_end, startup_end; /* indices into the series: [0,warmup_end) warmup, ... */
    size_t train_begin, train_end;  /* training = [train_begin, train_end) */
    int has_training;
} pfi_phases;

/* fb_per_gpu_mib and util_min may be NULL/NaN (that rule is then skipped;
 * without utilization there is no training phase). */
PFI_API void pfi_phases_segment(const double *fb_per_gpu_mib, const double *util_avg,
                                const double *util_min, size_t n, const pfi_protocol_opts *o,
                                pfi_phases *out);
PFI_API pfi_phase pfi_phase_of(const pfi_phases *p, size_t i);
PFI_API const char *pfi_phase_name(pfi_phase p);

/* ---- aggregation -------------------------------------------------------------------- */

/* Aggregate x[0..n) (NaN skipped): top fraction (mean of the ceil(frac*n)
 * largest), mean or median. *sem = SD of the samples used / sqrt(count), NaN
 * for fewer than 2. Returns the number of samples used (0: *value NaN). */
PFI_API size_t pfi_aggregate(const double *x, size_t n, pfi_agg_mode mode, double top_frac,
                             double *value, double *sem);
PFI_API int pfi_agg_mode_parse(const char *s, pfi_agg_mode *m);

/* The throughput a training loop itself measures — its tokens over the wall
 * time they took — from the step log's lines in a window (t_s ascending):
 * the tokens of lines 2..n (a line's "tokens", times the steps since the
 * line before when both carry "step"; a line with tokens_per_s alone counts
 * tokens_per_s x the time since the line before) over t_n - t_1. *sem from
 * the per-interval rates. tokens and step may be NULL (none carried).
 * Fewer than two lines: the mean of tokens_per_s. Returns the lines used. */
PFI_API size_t pfi_throughput_rate(const double *t_s, const double *tokens_per_s,
                                   const double *tokens, const double *step, size_t n,
                                   double *value, double *sem);

/* ---- cap check ------------------------------------------------------------------------ */

/* 0 if |enforced_w - cap_w| <= tol_w (or enforced is NaN: nothing to check). */
PFI_API int pfi_cap_check(double enforced_w, double cap_w, double tol_w);

#ifdef __cplusplus
}
#endif
#endif
