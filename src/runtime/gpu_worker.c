/* gpu_worker.c — a deadline on every call to a GPU (issue 40 (e)): one
 * worker thread per GPU of a per_device backend (NVML) runs that GPU's
 * backend calls; the caller waits for the answer until its deadline
 * (pfi_gpu_set_call_timeout; 0: no deadline) and no longer.
 *
 * Why: a hung GSP call blocks about 6 s per call, and the driver can
 * serialise other GPUs' controls behind it. A caller must not be held by
 * one sick GPU, and no second call may pile up behind a blocked one.
 *
 * The rules:
 *  - A call past its deadline is abandoned: the caller gets PFI_EIO naming
 *    the GPU and the deadline; the worker stays blocked in the driver and
 *    the GPU is "stuck": every call on it fails at once (availability
 *    PFI_GPU_TIMEOUT) until the blocked call returns. The abandoned call
 *    owns its own memory, so nothing the caller passed is touched later.
 *  - Calls overrun together when the driver serialises GPUs behind a hung
 *    one (the double's FAKE_NVML_STALL_GLOBAL). The calls abandoned while
 *    others are still blocked form one episode. When the last has
 *    returned, a GPU that overran alone is the sick one; after several,
 *    each stays unavailable (timeout) until a rescan of it answers within
 *    its deadline, and rescans go one GPU at a time, never while a call
 *    is blocked, so the healthy ones come back and the sick one is found
 *    alone (end_episode says why it cannot be told sooner).
 *  - An abandoned call's late result (a cap set that landed after its
 *    caller gave up) is kept for the owner to log (pfi_gpu_late_take); the
 *    owner's saved caps (written ahead of every set: gpu.h) still name the
 *    GPU, so a restore puts it back once it answers again.
 *  - The GPU's availability, unsupported reads and identity are cached
 *    after each call, so reading them never waits for a blocked worker.
 *  - A worker that cannot be started: that GPU's calls run in the caller's
 *    thread, under its own mutex, without a deadline (as before workers).
 *  - At close, a worker still blocked in the driver cannot be joined: the
 *    backend is then left open (its library still loaded) rather than
 *    closed under it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_internal.h"

typedef enum { GC_SAMPLE, GC_SET, GC_LIMIT, GC_PROCS, GC_RESCAN, GC_PERSIST } gc_kind;

struct gpu_call {
    gc_kind kind;
    size_t i;
    double cap_w; /* GC_SET: the cap; GC_LIMIT: the limit read */
    pfi_gpu_sample s;
    pfi_gpu_proc *procs;
    size_t max, nprocs;
    pfi_gpu_avail avail; /* GC_RESCAN */
    int persist;         /* GC_PERSIST */
    pfi_status rc;
    pfi_error err;
    int running, done, abandoned;
    double posted_s; /* when its worker got it */
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct timespec abs_ts(double t_s)
{
    struct timespec ts = {(time_t)t_s, (long)((t_s - (double)(time_t)t_s) * 1e9)};
    return ts;
}

static const char *kind_name(gc_kind k)
{
    switch (k) {
    case GC_SAMPLE: return "sample";
    case GC_SET: return "cap set";
    case GC_LIMIT: return "limit read";
    case GC_PROCS: return "process list";
    case GC_RESCAN: return "rescan";
    default: return "persistence read";
    }
}

/* the backend call itself (in the worker, or the caller's thread without one) */
static void run_call(pfi_gpu *g, gpu_call *c)
{
    const pfi_gpu_ops *o = g->ops;
    pfi_error *e = &c->err;
    switch (c->kind) {
    case GC_SAMPLE: c->rc = o->sample(g->st, c->i, &c->s, e); break;
    case GC_SET: c->rc = o->set_cap(g->st, c->i, c->cap_w, e); break;
    case GC_LIMIT: c->rc = o->limit(g->st, c->i, &c->cap_w, e); break;
    case GC_PROCS: c->rc = o->processes(g->st, c->i, c->procs, c->max, &c->nprocs, e); break;
    case GC_RESCAN:
        c->avail = o->rescan ? o->rescan(g->st, c->i) : PFI_GPU_OK;
        /* a GPU that hung answers a real call within its deadline before it counts again */
        if (c->avail == PFI_GPU_OK && o->limit && o->limit(g->st, c->i, &c->cap_w, e))
            c->avail = o->avail ? o->avail(g->st, c->i) : PFI_GPU_UNKNOWN;
        if (c->avail == PFI_GPU_OK && o->avail) c->avail = o->avail(g->st, c->i);
        c->rc = PFI_OK;
        break;
    case GC_PERSIST: c->persist = o->persistence ? o->persistence(g->st, c->i) : -1; break;
    }
}

/* the worker's caches of what reading must not wait for (worker thread, or
 * the caller's under the GPU's mutex): the backend's state for device i is
 * touched only by calls naming i */
static void refresh_cache(pfi_gpu *g, size_t i, gpu_worker *w)
{
    pfi_gpu_avail a = g->ops->avail ? g->ops->avail(g->st, i) : PFI_GPU_OK;
    const char *u = g->ops->unsupported ? g->ops->unsupported(g->st, i) : "";
    pfi_gpu_info in;
    int info_ok = g->ops->info(g->st, i, &in, NULL) == PFI_OK;
    pthread_mutex_lock(&g->wmu);
    w->avail = a;
    if (strcmp(w->unsupported, u)) snprintf(w->unsupported, sizeof w->unsupported, "%s", u);
    if (info_ok) w->info = in;
    w->info_ok = info_ok;
    pthread_mutex_unlock(&g->wmu);
}

/* under wmu: the last call of an episode has returned. One GPU alone
 * overran: it is the sick one. Several overran together (a driver that
 * serialises GPUs behind a hung one): which one hung cannot be told from
 * the outside (a sick GPU's sample of several calls returns last, its
 * single set first), so each is unavailable until a rescan of it answers;
 * rescans go one GPU at a time and never while a call is blocked
 * (pfi_gpu_w_rescan), so the sick one is found alone. */
static void end_episode(pfi_gpu *g)
{
    size_t n = g->ops->count(g->st), members = 0;
    for (size_t j = 0; j < n; j++) members += g->w[j].in_episode != 0;
    for (size_t j = 0; j < n; j++) {
        gpu_worker *w = &g->w[j];
        if (!w->in_episode) continue;
        w->in_episode = 0;
        w->hung = 1;
        size_t len = strlen(w->late);
        if (members == 1) w->solo_overruns++;
        if (members == 1)
            snprintf(w->late + len, sizeof w->late - len,
                     "; it alone overran: unavailable (timeout) until a rescan answers");
        else
            snprintf(w->late + len, sizeof w->late - len,
                     "; %zu GPUs' calls overran together (a driver-wide stall): each is "
                     "unavailable (timeout) until a rescan, one GPU at a time, answers",
                     members);
        w->late_pending = 1;
    }
}

/* under wmu: an abandoned call has returned */
static void abandoned_returned(pfi_gpu *g, gpu_worker *w, gpu_call *c, double started_s)
{
    snprintf(w->late, sizeof w->late,
             "a %s abandoned at its deadline returned after %.2f s (%s%s%.300s)",
             kind_name(c->kind), w->ret_s - started_s,
             c->kind == GC_SET ? (c->rc ? "not set" : "the cap landed late") : "discarded",
             c->rc ? ": " : "", c->rc ? c->err.msg : "");
    w->stuck = 0;
    if (--g->nstuck == 0) end_episode(g);
    free(c->procs);
    free(c);
}

typedef struct worker_arg {
    pfi_gpu *g;
    size_t i;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *wa = p;
    pfi_gpu *g = wa->g;
    size_t i = wa->i;
    free(wa);
    gpu_worker *w = &g->w[i];
    pthread_mutex_lock(&g->wmu);
    for (;;) {
        while (!g->quit && (!w->cur || w->cur->running)) pthread_cond_wait(&w->cv, &g->wmu);
        if (g->quit) break;
        gpu_call *c = w->cur;
        c->running = 1;
        double started_s = mono_s();
        pthread_mutex_unlock(&g->wmu);
        run_call(g, c);
        double ret_s = mono_s();
        refresh_cache(g, i, w);
        pthread_mutex_lock(&g->wmu);
        w->ret_s = ret_s;
        c->done = 1;
        w->cur = NULL;
        if (c->abandoned) abandoned_returned(g, w, c, started_s);
        else if (c->kind == GC_RESCAN && c->avail == PFI_GPU_OK) w->hung = 0, w->solo_overruns = 0;
        pthread_cond_broadcast(&g->done_cv);
    }
    pthread_mutex_unlock(&g->wmu);
    return NULL;
}

pfi_status pfi_gpu_workers_start(pfi_gpu *g)
{
    size_t n = g->ops->count(g->st);
    g->w = calloc(n ? n : 1, sizeof *g->w);
    if (!g->w) return PFI_ENOMEM;
    pthread_mutex_init(&g->wmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->done_cv, &ca);
    for (size_t i = 0; i < n; i++) {
        gpu_worker *w = &g->w[i];
        pthread_cond_init(&w->cv, &ca);
        pthread_mutex_init(&w->mu, NULL);
        refresh_cache(g, i, w);
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) wa->g = g, wa->i = i;
        w->started = wa && pthread_create(&w->th, NULL, worker, wa) == 0;
        if (!w->started) free(wa);
    }
    pthread_condattr_destroy(&ca);
    return PFI_OK;
}

int pfi_gpu_workers_stop(pfi_gpu *g)
{
    if (!g->w) return 1;
    size_t n = g->ops->count(g->st);
    int all = 1;
    pthread_mutex_lock(&g->wmu);
    g->quit = 1;
    for (size_t i = 0; i < n; i++) {
        pthread_cond_broadcast(&g->w[i].cv);
        if (g->w[i].stuck) all = 0;
    }
    pthread_mutex_unlock(&g->wmu);
    for (size_t i = 0; i < n; i++) {
        if (!g->w[i].started) continue;
        if (g->w[i].stuck) pthread_detach(g->w[i].th); /* blocked in the driver */
        else pthread_join(g->w[i].th, NULL);
    }
    if (!all) return 0; /* the blocked ones still use the backend and the locks */
    for (size_t i = 0; i < n; i++) {
        pthread_cond_destroy(&g->w[i].cv);
        pthread_mutex_destroy(&g->w[i].mu);
    }
    pthread_cond_destroy(&g->done_cv);
    pthread_mutex_destroy(&g->wmu);
    free(g->w);
    g->w = NULL;
    return 1;
}

/* under wmu: why GPU i takes no call now, or NULL */
static const char *refusal(pfi_gpu *g, size_t i, gc_kind kind, char *buf, size_t len)
{
    gpu_worker *w = &g->w[i];
    if (w->stuck) {
        snprintf(buf, len, "GPU %zu is unavailable: timeout (a call has not returned for %.1f s)",
                 i, mono_s() - w->stuck_since_s);
        return buf;
    }
    if (w->hung && kind != GC_RESCAN) {
        snprintf(buf, len, "GPU %zu is unavailable: timeout (a call overran its %g s deadline)", i,
                 g->call_timeout_s);
        return buf;
    }
    return NULL;
}

/* under wmu: wait for c (posted) until its deadline; 1 when it is
 * abandoned then (owned by its worker from now on: never read again) */
static int wait_call(pfi_gpu *g, gpu_call *c)
{
    gpu_worker *w = &g->w[c->i];
    double deadline_s = g->call_timeout_s > 0 ? c->posted_s + g->call_timeout_s : 0;
    while (!c->done) {
        if (deadline_s <= 0) {
            pthread_cond_wait(&g->done_cv, &g->wmu);
            continue;
        }
        struct timespec ts = abs_ts(deadline_s);
        if (pthread_cond_timedwait(&g->done_cv, &g->wmu, &ts) == ETIMEDOUT && !c->done) {
            c->abandoned = 1;
            w->stuck = 1;
            w->stuck_since_s = c->posted_s;
            w->in_episode = 1;
            g->nstuck++;
            return 1;
        }
    }
    return 0;
}

/* under wmu: post c to its worker (waiting, until deadline_s, for another
 * caller's call still within its own deadline); 0 when posted, else the
 * refusal in *rc, *err */
static int post_call(pfi_gpu *g, gpu_call *c, double deadline_s, pfi_status *rc, pfi_error *err)
{
    gpu_worker *w = &g->w[c->i];
    char why[200];
    for (;;) {
        const char *r = refusal(g, c->i, c->kind, why, sizeof why);
        if (r) {
            *rc = pfi_errorf(err, PFI_EIO, "%s", r);
            return 1;
        }
        if (!w->cur) break;
        if (deadline_s <= 0) {
            pthread_cond_wait(&g->done_cv, &g->wmu);
            continue;
        }
        struct timespec ts = abs_ts(deadline_s);
        if (pthread_cond_timedwait(&g->done_cv, &g->wmu, &ts) == ETIMEDOUT && w->cur &&
            !refusal(g, c->i, c->kind, why, sizeof why)) {
            *rc = pfi_errorf(err, PFI_EIO, "GPU %zu: busy past the %g s deadline", c->i,
                             g->call_timeout_s);
            return 1;
        }
    }
    c->posted_s = mono_s();
    w->cur = c;
    pthread_cond_signal(&w->cv);
    return 0;
}

/* runs calls c[0..n) (n <= PFI_GPU_SET_CAPS_MAX), all posted before any is
 * waited for, so the whole takes about one deadline (two when a GPU was
 * busy with another caller's call) however many GPUs hang. rc[k], err[k]:
 * each call's answer; an abandoned call becomes its worker's (c[k] set
 * NULL), the others are the caller's to read and free. */
static void run_calls(pfi_gpu *g, gpu_call **c, size_t n, pfi_status *rc, pfi_error *err)
{
    int posted[PFI_GPU_SET_CAPS_MAX];
    pthread_mutex_lock(&g->wmu);
    double t = g->call_timeout_s > 0 ? mono_s() + g->call_timeout_s : 0;
    for (size_t k = 0; k < n; k++) {
        posted[k] = 0;
        rc[k] = PFI_OK;
        err[k].code = PFI_OK, err[k].msg[0] = '\0';
        if (g->w[c[k]->i].started) posted[k] = post_call(g, c[k], t, &rc[k], &err[k]) == 0;
    }
    for (size_t k = 0; k < n; k++) {
        size_t i = c[k]->i;
        if (posted[k]) {
            if (wait_call(g, c[k])) {
                rc[k] = pfi_errorf(&err[k], PFI_EIO,
                                   "GPU %zu: no answer within %g s (--gpu-call-timeout): the %s is "
                                   "abandoned and the GPU takes no call until it returns",
                                   i, g->call_timeout_s, kind_name(c[k]->kind));
                c[k] = NULL;
            } else {
                rc[k] = c[k]->rc, err[k] = c[k]->err;
            }
        } else if (!g->w[i].started) { /* no worker: in this thread, no deadline */
            pthread_mutex_unlock(&g->wmu);
            pthread_mutex_lock(&g->w[i].mu);
            run_call(g, c[k]);
            refresh_cache(g, i, &g->w[i]);
            pthread_mutex_unlock(&g->w[i].mu);
            pthread_mutex_lock(&g->wmu);
            rc[k] = c[k]->rc, err[k] = c[k]->err;
        }
    }
    pthread_mutex_unlock(&g->wmu);
}

/* one kind of call on GPUs idx[0..n): results into the caller's arrays
 * (each optional); the status of the first that failed, or PFI_OK */
static pfi_status many(pfi_gpu *g, gc_kind kind, const size_t *idx, size_t n, const double *cap_in,
                       double *cap_out, pfi_gpu_sample *s, pfi_gpu_avail *av, pfi_status *rc_out,
                       pfi_error *err_out)
{
    gpu_call *c[PFI_GPU_SET_CAPS_MAX];
    pfi_status rc[PFI_GPU_SET_CAPS_MAX];
    pfi_error err[PFI_GPU_SET_CAPS_MAX];
    pfi_status first = PFI_OK;
    for (size_t base = 0; base < n; base += PFI_GPU_SET_CAPS_MAX) {
        size_t m = n - base < PFI_GPU_SET_CAPS_MAX ? n - base : PFI_GPU_SET_CAPS_MAX, made = 0;
        for (; made < m; made++) {
            c[made] = calloc(1, sizeof **c);
            if (!c[made]) break;
            c[made]->kind = kind, c[made]->i = idx[base + made];
            if (cap_in) c[made]->cap_w = cap_in[base + made];
        }
        if (made < m) {
            for (size_t k = 0; k < made; k++) free(c[k]);
            for (size_t k = 0; k < m; k++) {
                if (rc_out) rc_out[base + k] = PFI_ENOMEM;
                if (err_out) pfi_errorf(&err_out[base + k], PFI_ENOMEM, "out of memory");
                if (av) av[base + k] = PFI_GPU_UNKNOWN;
            }
            if (!first) first = PFI_ENOMEM;
            continue;
        }
        run_calls(g, c, m, rc, err);
        for (size_t k = 0; k < m; k++) {
            if (c[k] && !rc[k]) {
                if (s) s[base + k] = c[k]->s;
                if (cap_out) cap_out[base + k] = c[k]->cap_w;
            }
            if (av) av[base + k] = c[k] && !rc[k] ? c[k]->avail : PFI_GPU_TIMEOUT;
            if (rc_out) rc_out[base + k] = rc[k];
            if (err_out) err_out[base + k] = err[k];
            if (rc[k] && !first) first = rc[k];
            free(c[k]);
        }
    }
    return first;
}

pfi_status pfi_gpu_w_sample(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_sample *s,
                            pfi_status *rc, pfi_error *err)
{
    return many(g, GC_SAMPLE, idx, n, NULL, NULL, s, NULL, rc, err);
}

pfi_status pfi_gpu_w_set(pfi_gpu *g, const size_t *idx, const double *cap_w, size_t n,
                         pfi_status *rc, pfi_error *err)
{
    return many(g, GC_SET, idx, n, cap_w, NULL, NULL, NULL, rc, err);
}

pfi_status pfi_gpu_w_limit(pfi_gpu *g, size_t i, double *cap_w, pfi_error *err)
{
    pfi_status rc;
    pfi_error e;
    many(g, GC_LIMIT, &i, 1, NULL, cap_w, NULL, NULL, &rc, &e);
    if (rc && err) *err = e;
    return rc;
}

static void rescan_in_order(pfi_gpu *g, const size_t *idx, const size_t *ord, size_t n,
                            pfi_gpu_avail *av)
{
    for (size_t q = 0; q < n; q++) {
        size_t k = ord[q];
        pthread_mutex_lock(&g->wmu);
        int blocked = g->nstuck > 0;
        pthread_mutex_unlock(&g->wmu);
        if (blocked) {
            av[k] = pfi_gpu_w_avail(g, idx[k]);
            continue;
        }
        many(g, GC_RESCAN, &idx[k], 1, NULL, NULL, NULL, &av[k], NULL, NULL);
    }
}

/* one GPU after another, those that overran alone least often first (a
 * GPU that only waited behind a hung one before the one that hangs), and
 * none while a call is blocked (it may hold the driver: the probe would
 * overrun behind it and be taken for sick) */
void pfi_gpu_w_rescan(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_avail *av)
{
    size_t ord[PFI_GPU_SET_CAPS_MAX];
    for (size_t base = 0; base < n; base += PFI_GPU_SET_CAPS_MAX) {
        size_t m = n - base < PFI_GPU_SET_CAPS_MAX ? n - base : PFI_GPU_SET_CAPS_MAX;
        pthread_mutex_lock(&g->wmu);
        for (size_t k = 0; k < m; k++) { /* insertion sort of positions by solo_overruns */
            size_t q = k;
            for (; q > 0 &&
                   g->w[idx[base + ord[q - 1]]].solo_overruns > g->w[idx[base + k]].solo_overruns;
                 q--)
                ord[q] = ord[q - 1];
            ord[q] = k;
        }
        pthread_mutex_unlock(&g->wmu);
        rescan_in_order(g, idx + base, ord, m, av + base);
    }
}

pfi_status pfi_gpu_w_procs(pfi_gpu *g, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                           pfi_error *err)
{
    gpu_call *c = calloc(1, sizeof *c);
    pfi_gpu_proc *buf = calloc(max ? max : 1, sizeof *buf);
    if (!c || !buf) {
        free(c), free(buf);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    c->kind = GC_PROCS, c->i = i, c->procs = buf, c->max = max;
    pfi_status rc;
    pfi_error e;
    run_calls(g, &c, 1, &rc, &e);
    *n = 0;
    if (c && !rc) {
        *n = c->nprocs;
        memcpy(p, buf, c->nprocs * sizeof *p);
    }
    if (c) free(c->procs), free(c);
    if (rc && err) *err = e;
    return rc;
}

int pfi_gpu_w_persistence(pfi_gpu *g, size_t i)
{
    gpu_call *c = calloc(1, sizeof *c);
    if (!c) return -1;
    c->kind = GC_PERSIST, c->i = i, c->persist = -1;
    pfi_status rc;
    pfi_error e;
    run_calls(g, &c, 1, &rc, &e);
    int p = c && !rc ? c->persist : -1;
    free(c);
    return p;
}

pfi_gpu_avail pfi_gpu_w_avail(pfi_gpu *g, size_t i)
{
    pthread_mutex_lock(&g->wmu);
    const gpu_worker *w = &g->w[i];
    pfi_gpu_avail a = w->stuck || w->hung ? PFI_GPU_TIMEOUT : w->avail;
    pthread_mutex_unlock(&g->wmu);
    return a;
}

const char *pfi_gpu_w_unsupported(pfi_gpu *g, size_t i)
{
    return g->w[i].unsupported; /* rewritten only when a new read is noted (rare) */
}

pfi_status pfi_gpu_w_info(pfi_gpu *g, size_t i, pfi_gpu_info *info, pfi_error *err)
{
    char why[200];
    pthread_mutex_lock(&g->wmu);
    const gpu_worker *w = &g->w[i];
    const char *r = refusal(g, i, GC_SAMPLE, why, sizeof why);
    pfi_status rc = PFI_OK;
    if (r) rc = pfi_errorf(err, PFI_EIO, "%s", r);
    else if (!w->info_ok || w->avail != PFI_GPU_OK)
        rc =
            pfi_errorf(err, PFI_EIO, "GPU %zu is unavailable: %s", i, pfi_gpu_avail_name(w->avail));
    else *info = w->info;
    pthread_mutex_unlock(&g->wmu);
    return rc;
}

int pfi_gpu_calls_blocked(pfi_gpu *g)
{
    if (!g->w) return 0;
    pthread_mutex_lock(&g->wmu);
    int n = g->nstuck > 0;
    pthread_mutex_unlock(&g->wmu);
    return n;
}

int pfi_gpu_late_take(pfi_gpu *g, size_t i, char *buf, size_t len)
{
    if (!g->w || i >= g->ops->count(g->st)) return 0;
    pthread_mutex_lock(&g->wmu);
    gpu_worker *w = &g->w[i];
    int have = w->late_pending;
    if (have) snprintf(buf, len, "%s", w->late);
    w->late_pending = 0;
    pthread_mutex_unlock(&g->wmu);
    return have;
}

void pfi_gpu_set_call_timeout(pfi_gpu *g, double timeout_s)
{
    if (!g->w) return;
    pthread_mutex_lock(&g->wmu);
    g->call_timeout_s = timeout_s > 0 ? timeout_s : 0;
    pthread_mutex_unlock(&g->wmu);
}
