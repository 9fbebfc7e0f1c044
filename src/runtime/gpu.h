/* gpu.h — one interface to a node's GPUs, with two backends:
 *
 *   "nvml"      NVIDIA's NVML, loaded at run time with dlopen (no build
 *               dependency; $PFI_NVML_LIBRARY overrides the library path,
 *               which is how the NVML test double is selected)
 *   "sim[:OPTS]" simulated GPUs driven by the reconstruction's physical
 *               model (physmodel.h), each optionally running a simulated
 *               training job whose power and throughput follow its cap with
 *               a first-order response delay and noise, on the pfi clock
 *               (clock.h). OPTS, comma-separated:
 *                 gpus=N (8), model=H200|H100 (H200),
 *                 job=ID:GROUP@A-B  a job of the reconstruction on GPUs A..B
 *                                   (repeatable; GROUP of data/reconstruction),
 *                 tau=S (2, response time constant, clock seconds),
 *                 load=S (15, seconds a started job spends loading before it trains),
 *                 noise=F (0.01, relative sd of power and throughput),
 *                 seed=N (1), state=FILE (the simulated hardware's caps,
 *                 kept across processes as a real GPU keeps its limit),
 *                 steplogs=DIR (each job writes DIR/ID.jsonl while training),
 *                 idle (jobs start stopped; pfi_gpu_sim_job_start starts them)
 *
 * Reading never fails for lack of support: each sample says which fields it
 * has (have bits); NVML's NOT_SUPPORTED / NO_PERMISSION on a read are noted
 * per device (pfi_gpu_unsupported) and are not errors. Setting a cap outside
 * the device's constraints is PFI_ERANGE; without permission PFI_EPERM.
 * Calls on one pfi_gpu are serialized by the backend (thread-safe). */
#ifndef PFI_GPU_H
#define PFI_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/metrics.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_gpu pfi_gpu;
struct pfi_recon;

typedef struct pfi_gpu_info {
    char uuid[96], name[96];
    double cap_min_w, cap_max_w, cap_default_w;
} pfi_gpu_info;

enum {
    PFI_GS_POWER = 1u << 0,    /* power_w */
    PFI_GS_ENERGY = 1u << 1,   /* energy_j (since an arbitrary start) */
    PFI_GS_CAP = 1u << 2,      /* cap_w: the management limit */
    PFI_GS_ENFORCED = 1u << 3, /* enforced_w */
    PFI_GS_CLOCKS = 1u << 4,   /* sm_clock_mhz, mem_clock_mhz */
    PFI_GS_UTIL = 1u << 5,     /* util_gpu_pct, util_mem_pct */
    PFI_GS_THROTTLE = 1u << 6, /* throttle_reasons (NVML clocks-event bits) */
    PFI_GS_MEM = 1u << 7,      /* fb_used_mib */
    PFI_GS_TEMP = 1u << 8,     /* temp_c */
    PFI_GS_PROF = 1u << 9,     /* prof[]: DCGM_FI_PROF_* (sim only; NVML has none) */
    PFI_GS_POWER_INSTANT = 1u << 10 /* power_instant_w (NVML field value 186) */
};

typedef struct pfi_gpu_sample {
    double t_s;                /* pfi clock */
    unsigned have;
    double power_w, power_instant_w, energy_j, cap_w, enforced_w;
    double sm_clock_mhz, mem_clock_mhz, util_gpu_pct, util_mem_pct, fb_used_mib, temp_c;
    uint64_t throttle_reasons;
    double prof[PFI_M_COUNT];  /* by pfi_metric; NaN where absent */
} pfi_gpu_sample;

typedef struct pfi_gpu_proc {
    unsigned pid;
    double used_mib;
    char job_id[64];           /* known to the backend (sim), else empty */
    char steplog[1024];        /* the job's $PFI_STEPLOG when the backend knows it */
} pfi_gpu_proc;

pfi_status pfi_gpu_open(const char *spec, const struct pfi_recon *recon, pfi_gpu **out, pfi_error *err);
void pfi_gpu_close(pfi_gpu *g);
const char *pfi_gpu_backend(const pfi_gpu *g); /* "nvml" or "sim" */
size_t pfi_gpu_count(const pfi_gpu *g);
pfi_status pfi_gpu_info_get(pfi_gpu *g, size_t i, pfi_gpu_info *info, pfi_error *err);
pfi_status pfi_gpu_sample_get(pfi_gpu *g, size_t i, pfi_gpu_sample *s, pfi_error *err);
pfi_status pfi_gpu_set_cap(pfi_gpu *g, size_t i, double cap_w, pfi_error *err);
pfi_status pfi_gpu_processes(pfi_gpu *g, size_t i, pfi_gpu_proc *p, size_t max, size_t *n, pfi_error *err);
/* Reads this device does not support, e.g. "clocks_event_reasons,field_values"; "" if none. */
const char *pfi_gpu_unsupported(pfi_gpu *g, size_t i);
/* Index of the GPU with this UUID, or -1. */
long pfi_gpu_find_uuid(pfi_gpu *g, const char *uuid);

/* ---- simulator only (PFI_EUNSUPP on NVML) ---- */
/* Start (or restart) job k: loading, then training; its step log goes to
 * steplog (NULL: the steplogs= directory or none). Stop: the GPUs idle. */
pfi_status pfi_gpu_sim_job_start(pfi_gpu *g, size_t k, const char *steplog, pfi_error *err);
pfi_status pfi_gpu_sim_job_stop(pfi_gpu *g, size_t k, pfi_error *err);
size_t pfi_gpu_sim_jobs(const pfi_gpu *g);
/* GPUs first..last of job k, its id and its reconstruction group name. */
pfi_status pfi_gpu_sim_job_info(pfi_gpu *g, size_t k, size_t *first, size_t *last, const char **id, const char **group,
                                pfi_error *err);
/* Throughput of job k now (noise-free), tokens/s; NaN when not training. */
double pfi_gpu_sim_tokens_per_s(pfi_gpu *g, size_t k);

#ifdef __cplusplus
}
#endif
#endif
