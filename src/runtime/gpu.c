/* gpu.c — backend selection and dispatch for gpu.h; every call on one
 * pfi_gpu holds its mutex, so the agent's sampler and HTTP threads can share
 * a backend. */
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
    g->ops->close(g->st);
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

#define LOCKED(expr)                                                                               \
    do {                                                                                           \
        if (i >= g->ops->count(g->st))                                                             \
            return pfi_errorf(err, PFI_ENOTFOUND, "GPU %zu: no such GPU (%zu GPUs)", i,            \
                              g->ops->count(g->st));                                               \
        pthread_mutex_lock(&g->mu);                                                                \
        pfi_status rc_ = (expr);                                                                   \
        pthread_mutex_unlock(&g->mu);                                                              \
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

pfi_status pfi_gpu_processes(pfi_gpu *g, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                             pfi_error *err)
{
    *n = 0;
    LOCKED(g->ops->processes(g->st, i, p, max, n, err));
}

const char *pfi_gpu_unsupported(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st)) return "";
    pthread_mutex_lock(&g->mu);
    const char *s = g->ops->unsupported ? g->ops->unsupported(g->st, i) : "";
    pthread_mutex_unlock(&g->mu);
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
