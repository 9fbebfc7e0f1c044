/* gpu.c — backend selection and dispatch for gpu.h. Every call naming a
 * GPU holds a mutex, so the agent's sampler and HTTP threads can share a
 * backend: for a backend whose devices are independent (ops->per_device:
 * NVML, whose API is thread-safe and whose every call names its device)
 * one mutex per GPU, else (sim: one model, one clock) one per pfi_gpu.
 *
 * pfi_gpu_set_caps sets several GPUs at once. Locking choice: plain
 * per-GPU mutexes, no readers/writers scheme. On a per_device backend each
 * GPU's set runs in its own thread (the caller's thread runs the first)
 * holding only that GPU's mutex across the backend's call, so a sample or
 * another set on the same GPU waits for it while the other GPUs stay free;
 * no call ever holds two of them, so there is no lock order to keep. When
 * a thread cannot be created its set runs in the caller's thread (still
 * correct, only slower). Other backends set one after another (the sim is
 * instant). The call returns only after every set has finished. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

static pfi_status gpu_open(const char *spec, const struct pfi_recon *recon, int read_only,
                           pfi_gpu **out, pfi_error *err)
{
    *out = NULL;
    const pfi_gpu_ops *ops = NULL;
    void *st = NULL;
    pfi_status rc;
    if (!spec) spec = "nvml";
    if (!strcmp(spec, "nvml") || !strncmp(spec, "nvml:", 5))
        rc = pfi_gpu_nvml_open(spec[4] ? spec + 5 : "", read_only, &ops, &st, err);
    else if (!strcmp(spec, "sim") || !strncmp(spec, "sim:", 4))
        rc = pfi_gpu_sim_open(spec[3] ? spec + 4 : "", recon, &ops, &st, err);
    else
        return pfi_errorf(err, PFI_EINVAL,
                          "unknown GPU backend '%s' (expected nvml or sim[:options])", spec);
    if (rc) return rc;
    pfi_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        ops->close(st);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    g->ops = ops;
    g->st = st;
    g->read_only = read_only;
    pthread_mutex_init(&g->mu, NULL);
    if (ops->per_device) {
        size_t n = ops->count(st);
        g->dev_mu = calloc(n ? n : 1, sizeof *g->dev_mu);
        if (!g->dev_mu) {
            pthread_mutex_destroy(&g->mu);
            ops->close(st);
            free(g);
            return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++) pthread_mutex_init(&g->dev_mu[i], NULL);
    }
    *out = g;
    return PFI_OK;
}

pfi_status pfi_gpu_open(const char *spec, const struct pfi_recon *recon, pfi_gpu **out,
                        pfi_error *err)
{
    return gpu_open(spec, recon, 0, out, err);
}

pfi_status pfi_gpu_open_read_only(const char *spec, const struct pfi_recon *recon, pfi_gpu **out,
                                  pfi_error *err)
{
    return gpu_open(spec, recon, 1, out, err);
}

int pfi_gpu_is_read_only(const pfi_gpu *g)
{
    return g->read_only;
}

void pfi_gpu_close(pfi_gpu *g)
{
    if (!g) return;
    size_t n = g->dev_mu ? g->ops->count(g->st) : 0;
    g->ops->close(g->st);
    for (size_t i = 0; i < n; i++) pthread_mutex_destroy(&g->dev_mu[i]);
    free(g->dev_mu);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

const char *pfi_gpu_backend(const pfi_gpu *g)
{
    return g->ops->name;
}
size_t pfi_gpu_count(const pfi_gpu *g)
{
    return g->ops->count(g->st);
}

/* the mutex a call on GPU i (< count) holds */
static pthread_mutex_t *mu_of(pfi_gpu *g, size_t i)
{
    return g->dev_mu ? &g->dev_mu[i] : &g->mu;
}

#define LOCKED(expr)                                                                               \
    do {                                                                                           \
        if (i >= g->ops->count(g->st))                                                             \
            return pfi_errorf(err, PFI_ENOTFOUND, "GPU %zu: no such GPU (%zu GPUs)", i,            \
                              g->ops->count(g->st));                                               \
        pthread_mutex_lock(mu_of(g, i));                                                           \
        pfi_status rc_ = (expr);                                                                   \
        pthread_mutex_unlock(mu_of(g, i));                                                         \
        return rc_;                                                                                \
    } while (0)

pfi_status pfi_gpu_info_get(pfi_gpu *g, size_t i, pfi_gpu_info *info, pfi_error *err)
{
    LOCKED(g->ops->info(g->st, i, info, err));
}

pfi_status pfi_gpu_sample_get(pfi_gpu *g, size_t i, pfi_gpu_sample *s, pfi_error *err)
{
    LOCKED(g->ops->sample(g->st, i, s, err));
}

pfi_status pfi_gpu_set_cap(pfi_gpu *g, size_t i, double cap_w, pfi_error *err)
{
    if (g->read_only)
        return pfi_errorf(err, PFI_EPERM, "GPU %zu: opened read-only: cap %g W not set", i, cap_w);
    LOCKED(g->ops->set_cap(g->st, i, cap_w, err));
}

/* one GPU's set in pfi_gpu_set_caps */
typedef struct set_job {
    pfi_gpu *g;
    size_t i;
    double cap_w;
    pfi_status rc;
    pfi_error err;
    pthread_t th;
    int started; /* th runs it (joined), else the caller ran it */
} set_job;

static void *set_one(void *p)
{
    set_job *j = p;
    j->rc = pfi_gpu_set_cap(j->g, j->i, j->cap_w, &j->err);
    return NULL;
}

pfi_status pfi_gpu_set_caps(pfi_gpu *g, const size_t *idx, const double *cap_w, size_t n,
                            pfi_status *rc, pfi_error *errs)
{
    set_job job[PFI_GPU_SET_CAPS_MAX];
    pfi_status first = PFI_OK;
    for (size_t base = 0; base < n; base += PFI_GPU_SET_CAPS_MAX) {
        size_t m = n - base < PFI_GPU_SET_CAPS_MAX ? n - base : PFI_GPU_SET_CAPS_MAX;
        int threads = g->ops->per_device && !g->read_only && m > 1;
        for (size_t k = 0; k < m; k++) {
            set_job *j = &job[k];
            j->g = g, j->i = idx[base + k], j->cap_w = cap_w[base + k];
            j->rc = PFI_OK, j->err.code = PFI_OK, j->err.msg[0] = '\0', j->started = 0;
            /* the caller's thread runs the first itself (and any a thread cannot be made for) */
            if (threads && k > 0) j->started = pthread_create(&j->th, NULL, set_one, j) == 0;
        }
        for (size_t k = 0; k < m; k++)
            if (!job[k].started) set_one(&job[k]);
        for (size_t k = 0; k < m; k++) {
            if (job[k].started) pthread_join(job[k].th, NULL);
            if (rc) rc[base + k] = job[k].rc;
            if (errs) errs[base + k] = job[k].err;
            if (job[k].rc && !first) first = job[k].rc;
        }
    }
    return first;
}

pfi_status pfi_gpu_processes(pfi_gpu *g, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                             pfi_error *err)
{
    *n = 0;
    LOCKED(g->ops->processes(g->st, i, p, max, n, err));
}

const char *pfi_gpu_unsupported(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st)) return "";
    pthread_mutex_lock(mu_of(g, i));
    const char *s = g->ops->unsupported ? g->ops->unsupported(g->st, i) : "";
    pthread_mutex_unlock(mu_of(g, i));
    return s;
}

long pfi_gpu_find_uuid(pfi_gpu *g, const char *uuid)
{
    size_t n = pfi_gpu_count(g);
    for (size_t i = 0; i < n; i++) {
        pfi_gpu_info info;
        if (pfi_gpu_info_get(g, i, &info, NULL) == PFI_OK && !strcmp(info.uuid, uuid))
            return (long)i;
    }
    return -1;
}

pfi_gpu_avail pfi_gpu_avail_get(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st)) return PFI_GPU_UNKNOWN;
    if (!g->ops->avail) return PFI_GPU_OK;
    pthread_mutex_lock(mu_of(g, i));
    pfi_gpu_avail a = g->ops->avail(g->st, i);
    pthread_mutex_unlock(mu_of(g, i));
    return a;
}

const char *pfi_gpu_avail_name(pfi_gpu_avail a)
{
    switch (a) {
    case PFI_GPU_OK: return "ok";
    case PFI_GPU_LOST: return "lost";
    case PFI_GPU_NO_PERMISSION: return "no_permission";
    case PFI_GPU_NOT_SUPPORTED: return "not_supported";
    case PFI_GPU_RESET_REQUIRED: return "reset_required";
    case PFI_GPU_TIMEOUT: return "timeout";
    case PFI_GPU_OS_BLOCKED: return "os_blocked";
    default: return "unknown";
    }
}

int pfi_gpu_all_available(pfi_gpu *g)
{
    size_t n = pfi_gpu_count(g);
    for (size_t i = 0; i < n; i++)
        if (pfi_gpu_avail_get(g, i) != PFI_GPU_OK) return 0;
    return 1;
}

pfi_gpu_avail pfi_gpu_rescan(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st)) return PFI_GPU_UNKNOWN;
    if (!g->ops->rescan) return pfi_gpu_avail_get(g, i);
    pthread_mutex_lock(mu_of(g, i));
    pfi_gpu_avail a = g->ops->rescan(g->st, i);
    pthread_mutex_unlock(mu_of(g, i));
    return a;
}

static pfi_status limit_from_sample(pfi_gpu *g, size_t i, double *cap_w, pfi_error *err)
{
    pfi_gpu_sample s;
    pfi_status rc = g->ops->sample(g->st, i, &s, err);
    if (rc) return rc;
    if (!(s.have & PFI_GS_CAP))
        return pfi_errorf(err, PFI_EUNSUPP, "GPU %zu: the device does not report its power limit",
                          i);
    *cap_w = s.cap_w;
    return PFI_OK;
}

pfi_status pfi_gpu_limit_get(pfi_gpu *g, size_t i, double *cap_w, pfi_error *err)
{
    LOCKED(g->ops->limit ? g->ops->limit(g->st, i, cap_w, err)
                         : limit_from_sample(g, i, cap_w, err));
}

int pfi_gpu_persistence(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st) || !g->ops->persistence) return -1;
    pthread_mutex_lock(mu_of(g, i));
    int p = g->ops->persistence(g->st, i);
    pthread_mutex_unlock(mu_of(g, i));
    return p;
}

static int is_sim(const pfi_gpu *g)
{
    return !strcmp(g->ops->name, "sim");
}

pfi_status pfi_gpu_sim_job_start(pfi_gpu *g, size_t k, const char *steplog, pfi_error *err)
{
    if (!is_sim(g)) return pfi_errorf(err, PFI_EUNSUPP, "simulated jobs need the sim backend");
    pthread_mutex_lock(&g->mu);
    pfi_status rc = pfi_sim_job_start(g->st, k, steplog, err);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

pfi_status pfi_gpu_sim_job_stop(pfi_gpu *g, size_t k, pfi_error *err)
{
    if (!is_sim(g)) return pfi_errorf(err, PFI_EUNSUPP, "simulated jobs need the sim backend");
    pthread_mutex_lock(&g->mu);
    pfi_status rc = pfi_sim_job_stop(g->st, k, err);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

size_t pfi_gpu_sim_jobs(const pfi_gpu *g)
{
    return is_sim(g) ? pfi_sim_jobs(g->st) : 0;
}

double pfi_gpu_sim_tokens_per_s(pfi_gpu *g, size_t k)
{
    if (!is_sim(g)) return 0.0 / 0.0;
    pthread_mutex_lock(&g->mu);
    double v = pfi_sim_tokens_now(g->st, k);
    pthread_mutex_unlock(&g->mu);
    return v;
}

pfi_status pfi_gpu_sim_job_info(pfi_gpu *g, size_t k, size_t *first, size_t *last, const char **id,
                                const char **group, pfi_error *err)
{
    if (!is_sim(g)) return pfi_errorf(err, PFI_EUNSUPP, "simulated jobs need the sim backend");
    return pfi_sim_job_info(g->st, k, first, last, id, group, err);
}
