/* gpu.c — backend selection and dispatch for gpu.h. Every call naming a
 * GPU is serialized, so the agent's sampler and HTTP threads can share a
 * backend: for a backend whose devices are independent (ops->per_device:
 * NVML, whose API is thread-safe and whose every call names its device)
 * each GPU's calls run in its own worker thread, each with a deadline
 * (gpu_worker.c: a hung GPU holds no caller and no other GPU); else (sim:
 * one model, one clock) under one mutex per pfi_gpu.
 *
 * pfi_gpu_set_caps and pfi_gpu_sample_all post every GPU's call to its
 * worker before waiting for any, so they take one call's time (at most
 * about one deadline) however many GPUs there are. Other backends run them
 * one after another (the sim is instant). The calls return only after
 * every GPU has answered or been abandoned at its deadline. */
#include <stdio.h>
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
    const char *opts;
    const pfi_gpu_backend_info *b = pfi_gpu_backend_of(spec, &opts);
    if (!b) {
        const pfi_gpu_backend_info *t;
        size_t n = pfi_gpu_backends(&t);
        char names[256] = "";
        for (size_t i = 0, k = 0; i < n && k < sizeof names; i++)
            k += (size_t)snprintf(names + k, sizeof names - k, "%s%s[:options]",
                                  i ? (i + 1 < n ? ", " : " or ") : "", t[i].name);
        return pfi_errorf(err, PFI_EINVAL, "unknown GPU backend '%s' (expected %s)", spec, names);
    }
    if ((rc = b->open(opts, recon, read_only, &ops, &st, err))) return rc;
    pfi_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        ops->close(st);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    g->ops = ops;
    g->st = st;
    g->read_only = read_only;
    pthread_mutex_init(&g->mu, NULL);
    if (ops->per_device && pfi_gpu_workers_start(g)) {
        pthread_mutex_destroy(&g->mu);
        ops->close(st);
        free(g);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
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
    /* a worker blocked in the driver still uses the backend: leave it open */
    if (!pfi_gpu_workers_stop(g)) return;
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

/* GPU i exists, else an error naming it */
#define CHECK_INDEX()                                                                              \
    do {                                                                                           \
        if (i >= g->ops->count(g->st))                                                             \
            return pfi_errorf(err, PFI_ENOTFOUND, "GPU %zu: no such GPU (%zu GPUs)", i,            \
                              g->ops->count(g->st));                                               \
    } while (0)

/* a backend without workers: under the one mutex */
#define LOCKED(expr)                                                                               \
    do {                                                                                           \
        pthread_mutex_lock(&g->mu);                                                                \
        pfi_status rc_ = (expr);                                                                   \
        pthread_mutex_unlock(&g->mu);                                                              \
        return rc_;                                                                                \
    } while (0)

pfi_status pfi_gpu_info_get(pfi_gpu *g, size_t i, pfi_gpu_info *info, pfi_error *err)
{
    CHECK_INDEX();
    if (g->w) return pfi_gpu_w_info(g, i, info, err);
    LOCKED(g->ops->info(g->st, i, info, err));
}

pfi_status pfi_gpu_sample_get(pfi_gpu *g, size_t i, pfi_gpu_sample *s, pfi_error *err)
{
    CHECK_INDEX();
    if (g->w) {
        pfi_status rc;
        pfi_error e;
        pfi_gpu_w_sample(g, &i, 1, s, &rc, &e);
        if (rc && err) *err = e;
        return rc;
    }
    LOCKED(g->ops->sample(g->st, i, s, err));
}

pfi_status pfi_gpu_sample_all(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_sample *s,
                              pfi_status *rc, pfi_error *errs)
{
    for (size_t k = 0; k < n; k++)
        if (idx[k] >= g->ops->count(g->st)) {
            pfi_error e;
            pfi_errorf(&e, PFI_ENOTFOUND, "GPU %zu: no such GPU", idx[k]);
            for (size_t q = 0; q < n; q++) {
                if (rc) rc[q] = PFI_ENOTFOUND;
                if (errs) errs[q] = e;
            }
            return PFI_ENOTFOUND;
        }
    if (g->w) return pfi_gpu_w_sample(g, idx, n, s, rc, errs);
    pfi_status first = PFI_OK;
    for (size_t k = 0; k < n; k++) {
        pfi_error e = {PFI_OK, ""};
        pfi_status r = pfi_gpu_sample_get(g, idx[k], &s[k], &e);
        if (rc) rc[k] = r;
        if (errs) errs[k] = e;
        if (r && !first) first = r;
    }
    return first;
}

pfi_status pfi_gpu_set_cap(pfi_gpu *g, size_t i, double cap_w, pfi_error *err)
{
    if (g->read_only)
        return pfi_errorf(err, PFI_EPERM, "GPU %zu: opened read-only: cap %g W not set", i, cap_w);
    CHECK_INDEX();
    if (g->w) {
        pfi_status rc;
        pfi_error e;
        pfi_gpu_w_set(g, &i, &cap_w, 1, &rc, &e);
        if (rc && err) *err = e;
        return rc;
    }
    LOCKED(g->ops->set_cap(g->st, i, cap_w, err));
}

pfi_status pfi_gpu_set_caps(pfi_gpu *g, const size_t *idx, const double *cap_w, size_t n,
                            pfi_status *rc, pfi_error *errs)
{
    pfi_status first = PFI_OK;
    int fanout = g->w && !g->read_only;
    for (size_t k = 0; k < n && fanout; k++)
        if (idx[k] >= g->ops->count(g->st)) fanout = 0; /* each answered below */
    if (fanout) return pfi_gpu_w_set(g, idx, cap_w, n, rc, errs);
    for (size_t k = 0; k < n; k++) {
        pfi_error e = {PFI_OK, ""};
        pfi_status r = pfi_gpu_set_cap(g, idx[k], cap_w[k], &e);
        if (rc) rc[k] = r;
        if (errs) errs[k] = e;
        if (r && !first) first = r;
    }
    return first;
}

pfi_status pfi_gpu_processes(pfi_gpu *g, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                             pfi_error *err)
{
    *n = 0;
    CHECK_INDEX();
    if (g->w) return pfi_gpu_w_procs(g, i, p, max, n, err);
    LOCKED(g->ops->processes(g->st, i, p, max, n, err));
}

const char *pfi_gpu_unsupported(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st)) return "";
    if (g->w) return pfi_gpu_w_unsupported(g, i);
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

pfi_gpu_avail pfi_gpu_avail_get(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st)) return PFI_GPU_UNKNOWN;
    if (g->w) return pfi_gpu_w_avail(g, i);
    if (!g->ops->avail) return PFI_GPU_OK;
    pthread_mutex_lock(&g->mu);
    pfi_gpu_avail a = g->ops->avail(g->st, i);
    pthread_mutex_unlock(&g->mu);
    return a;
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
    pfi_gpu_avail a = PFI_GPU_UNKNOWN;
    pfi_gpu_rescan_all(g, &i, 1, &a);
    return a;
}

void pfi_gpu_rescan_all(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_avail *av)
{
    int ok = 1;
    for (size_t k = 0; k < n; k++)
        if (idx[k] >= g->ops->count(g->st)) av[k] = PFI_GPU_UNKNOWN, ok = 0;
    if (!ok) return;
    if (g->w) {
        pfi_gpu_w_rescan(g, idx, n, av);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        pthread_mutex_lock(&g->mu);
        av[k] = g->ops->rescan  ? g->ops->rescan(g->st, idx[k])
                : g->ops->avail ? g->ops->avail(g->st, idx[k])
                                : PFI_GPU_OK;
        pthread_mutex_unlock(&g->mu);
    }
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
    CHECK_INDEX();
    if (g->w && g->ops->limit) return pfi_gpu_w_limit(g, i, cap_w, err);
    if (g->w) { /* from a sample */
        pfi_gpu_sample s;
        pfi_status rc = pfi_gpu_sample_get(g, i, &s, err);
        if (rc) return rc;
        if (!(s.have & PFI_GS_CAP))
            return pfi_errorf(err, PFI_EUNSUPP,
                              "GPU %zu: the device does not report its power limit", i);
        *cap_w = s.cap_w;
        return PFI_OK;
    }
    LOCKED(g->ops->limit ? g->ops->limit(g->st, i, cap_w, err)
                         : limit_from_sample(g, i, cap_w, err));
}

int pfi_gpu_persistence(pfi_gpu *g, size_t i)
{
    if (i >= g->ops->count(g->st) || !g->ops->persistence) return -1;
    if (g->w) return pfi_gpu_w_persistence(g, i);
    pthread_mutex_lock(&g->mu);
    int p = g->ops->persistence(g->st, i);
    pthread_mutex_unlock(&g->mu);
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
