/* gpu_internal.h — the backend table behind gpu.h: each backend fills a
 * pfi_gpu_ops and its own state; gpu.c dispatches and serializes calls
 * (per GPU for a backend that sets per_device, else per pfi_gpu). */
#ifndef PFI_GPU_INTERNAL_H
#define PFI_GPU_INTERNAL_H

#include <pthread.h>

#include "gpu.h"

typedef struct pfi_gpu_ops {
    const char *name;
    size_t (*count)(void *st);
    pfi_status (*info)(void *st, size_t i, pfi_gpu_info *info, pfi_error *err);
    pfi_status (*sample)(void *st, size_t i, pfi_gpu_sample *s, pfi_error *err);
    pfi_status (*set_cap)(void *st, size_t i, double cap_w, pfi_error *err);
    pfi_status (*processes)(void *st, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                            pfi_error *err);
    const char *(*unsupported)(void *st, size_t i);
    void (*close)(void *st);
    /* optional (NULL: the GPU is always available, the limit comes from a
     * sample, nothing to look for again) */
    pfi_gpu_avail (*avail)(void *st, size_t i);
    pfi_status (*limit)(void *st, size_t i, double *cap_w, pfi_error *err);
    pfi_gpu_avail (*rescan)(void *st, size_t i);
    /* optional: persistence mode (1 on, 0 off, -1 unknown) */
    int (*persistence)(void *st, size_t i);
    /* 1: calls on different devices may run at once (the library is
     * thread-safe and the backend's state for device i is touched only by
     * calls naming i), so gpu.c serializes per device and pfi_gpu_set_caps
     * sets devices from parallel threads; 0 (the default): one lock for all */
    int per_device;
} pfi_gpu_ops;

struct pfi_gpu {
    const pfi_gpu_ops *ops;
    void *st;
    pthread_mutex_t mu;      /* the whole backend (per_device = 0), or the sim extras */
    pthread_mutex_t *dev_mu; /* per_device: one per GPU (count of them), else NULL */
    int read_only;           /* pfi_gpu_open_read_only: set_cap refused */
};

/* read_only: the setters are never looked up */
pfi_status pfi_gpu_nvml_open(const char *opts, int read_only, const pfi_gpu_ops **ops, void **st,
                             pfi_error *err);
pfi_status pfi_gpu_sim_open(const char *opts, const struct pfi_recon *recon,
                            const pfi_gpu_ops **ops, void **st, pfi_error *err);
/* simulator extras (st is the sim's state) */
pfi_status pfi_sim_job_start(void *st, size_t k, const char *steplog, pfi_error *err);
pfi_status pfi_sim_job_stop(void *st, size_t k, pfi_error *err);
size_t pfi_sim_jobs(void *st);
pfi_status pfi_sim_job_info(void *st, size_t k, size_t *first, size_t *last, const char **id,
                            const char **group, pfi_error *err);
double pfi_sim_tokens_now(void *st, size_t k);

#endif
