/* gpu_internal.h — the backend table behind gpu.h: each backend fills a
 * pfi_gpu_ops and its own state; gpu.c dispatches and serializes calls
 * (a worker thread per GPU, with call deadlines, for a backend that sets
 * per_device: gpu_worker.c; else one mutex per pfi_gpu). */
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

/* a per_device backend's GPU: its worker thread and what reading must not
 * wait for (gpu_worker.c) */
typedef struct gpu_call gpu_call;
typedef struct gpu_worker {
    pthread_t th;
    int started;        /* else its calls run in the caller's thread, under mu */
    pthread_mutex_t mu; /* only without a worker */
    pthread_cond_t cv;  /* a call was posted (or quit) */
    gpu_call *cur;      /* the call posted or running; NULL: idle */
    int stuck;          /* cur was abandoned at its deadline and has not returned */
    double stuck_since_s;
    int in_episode;      /* abandoned while others were: the sick one is decided at the end */
    double ret_s;        /* when its last call returned (monotonic) */
    int hung;            /* overran: unavailable until a rescan answers */
    int solo_overruns;   /* overran alone (the sick one) since its last good rescan */
    pfi_gpu_avail avail; /* the backend's, after its last call */
    char unsupported[256];
    pfi_gpu_info info;
    int info_ok;
    char late[600]; /* an abandoned call's end, for the owner's log */
    int late_pending;
} gpu_worker;

struct pfi_gpu {
    const pfi_gpu_ops *ops;
    void *st;
    pthread_mutex_t mu; /* the whole backend (per_device = 0), or the sim extras */
    int read_only;      /* pfi_gpu_open_read_only: set_cap refused */
    /* per_device: one worker per GPU (gpu_worker.c), else NULL */
    gpu_worker *w;
    pthread_mutex_t wmu;    /* every worker's state */
    pthread_cond_t done_cv; /* a call returned */
    double call_timeout_s;  /* 0: no deadline */
    size_t nstuck;          /* abandoned calls not yet returned */
    int quit;
};

/* gpu_worker.c: the workers (start: PFI_ENOMEM only; stop: 0 when a
 * worker is still blocked in the driver, so the backend must stay open) */
pfi_status pfi_gpu_workers_start(pfi_gpu *g);
int pfi_gpu_workers_stop(pfi_gpu *g);
pfi_status pfi_gpu_w_sample(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_sample *s,
                            pfi_status *rc, pfi_error *err);
pfi_status pfi_gpu_w_set(pfi_gpu *g, const size_t *idx, const double *cap_w, size_t n,
                         pfi_status *rc, pfi_error *err);
pfi_status pfi_gpu_w_limit(pfi_gpu *g, size_t i, double *cap_w, pfi_error *err);
void pfi_gpu_w_rescan(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_avail *av);
pfi_status pfi_gpu_w_procs(pfi_gpu *g, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                           pfi_error *err);
int pfi_gpu_w_persistence(pfi_gpu *g, size_t i);
pfi_gpu_avail pfi_gpu_w_avail(pfi_gpu *g, size_t i);
const char *pfi_gpu_w_unsupported(pfi_gpu *g, size_t i);
pfi_status pfi_gpu_w_info(pfi_gpu *g, size_t i, pfi_gpu_info *info, pfi_error *err);

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
