/* gpu_save.c — saving and restoring device controls (gpu.h, "saving and
 * restoring device controls"): the saved caps in memory, the write-ahead
 * to a state file, the restore after a crash or at a writer's end. The
 * plain state file is pfi sweep's format (sweep_state.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"
#include "state_file.h"
#include "sweep_state.h"

double pfi_gpu_default_cap_w(const pfi_gpu_info *in)
{
    return isfinite(in->cap_default_w) ? in->cap_default_w : in->cap_max_w;
}

pfi_status pfi_gpu_cap_now(pfi_gpu *g, size_t i, int fallback_default, double *cap_w,
                           pfi_error *err)
{
    pfi_error e;
    e.msg[0] = '\0';
    if (pfi_gpu_limit_get(g, i, cap_w, &e) == PFI_OK) return PFI_OK;
    pfi_gpu_info in;
    if (fallback_default && pfi_gpu_info_get(g, i, &in, NULL) == PFI_OK) {
        *cap_w = in.cap_default_w;
        return PFI_OK;
    }
    return pfi_errorf(err, PFI_EIO, "GPU %zu: cannot read its current cap%s%s", i,
                      e.msg[0] ? ": " : "", e.msg);
}

pfi_saved_cap *pfi_gpu_saved_get(const pfi_gpu_saved_set *s, const char *uuid)
{
    for (size_t k = 0; k < *s->n; k++)
        if (!strcmp(s->gpu[k].uuid, uuid)) return &s->gpu[k];
    if (*s->n == s->max) return NULL;
    pfi_saved_cap *c = &s->gpu[(*s->n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->uuid, sizeof c->uuid, "%s", uuid);
    c->cap_w = NAN;
    c->index = -1;
    return c;
}

size_t pfi_gpu_saved_pending(const pfi_gpu_saved_set *s)
{
    size_t n = 0;
    for (size_t k = 0; k < *s->n; k++) n += s->gpu[k].changed != 0;
    return n;
}

pfi_status pfi_gpu_save_caps(pfi_gpu *g, const size_t *idx, size_t nidx, int fallback_default,
                             const pfi_gpu_saved_set *s, pfi_error *err)
{
    pfi_saved_cap *now[PFI_SAVED_CAPS_MAX];
    size_t m = 0, n0 = *s->n;
    pfi_status st = PFI_OK;
    for (size_t q = 0; q < nidx && !st; q++) {
        pfi_gpu_info in;
        double cap;
        if ((st = pfi_gpu_info_get(g, idx[q], &in, err))) break;
        pfi_saved_cap *c = pfi_gpu_saved_get(s, in.uuid);
        if (!c || m == PFI_SAVED_CAPS_MAX) {
            st = pfi_errorf(err, PFI_ENOMEM, "GPU %zu: more than %zu GPUs to save", idx[q], s->max);
            break;
        }
        if (c->changed) continue;
        if ((st = pfi_gpu_cap_now(g, idx[q], fallback_default, &cap, err))) break;
        c->changed = 1;
        c->baseline_w = cap;
        c->index = (long)idx[q];
        now[m++] = c;
    }
    if (st) { /* nothing saved */
        for (size_t q = 0; q < m; q++) now[q]->changed = 0;
        *s->n = n0;
    }
    return st;
}

static int in_range(double w, const pfi_gpu_info *in)
{
    return w >= in->cap_min_w - 1e-9 && w <= in->cap_max_w + 1e-9;
}

void pfi_gpu_check_saved(pfi_gpu *g, const pfi_gpu_saved_set *s, const pfi_gpu_restore_report *r)
{
    for (size_t k = 0; k < *s->n; k++) {
        pfi_saved_cap *c = &s->gpu[k];
        long i = pfi_gpu_find_uuid(g, c->uuid);
        pfi_gpu_info in;
        if (!c->changed || i < 0 || pfi_gpu_info_get(g, (size_t)i, &in, NULL)) continue;
        int base_ok = in_range(c->baseline_w, &in),
            cap_ok = isnan(c->cap_w) || in_range(c->cap_w, &in);
        if (!base_ok) {
            double d = pfi_gpu_default_cap_w(&in);
            if (r && r->out_of_range)
                r->out_of_range(r->ud, k, c, i, &in, "baseline_w", c->baseline_w, d);
            c->baseline_w = d;
        }
        if (!cap_ok) {
            if (r && r->out_of_range)
                r->out_of_range(r->ud, k, c, i, &in, "cap_w", c->cap_w, c->baseline_w);
            c->cap_w = c->baseline_w;
        }
    }
}

void pfi_gpu_saved_defaults(pfi_gpu *g, int only_not_default, const pfi_gpu_saved_set *s)
{
    *s->n = 0;
    for (size_t i = 0; i < pfi_gpu_count(g) && *s->n < s->max; i++) {
        pfi_gpu_info in;
        if (pfi_gpu_info_get(g, i, &in, NULL)) continue;
        double def = pfi_gpu_default_cap_w(&in), cur = NAN;
        if (only_not_default) {
            pfi_gpu_cap_now(g, i, 1, &cur, NULL);
            if (!isfinite(def) || fabs(cur - def) < 0.5) continue;
        }
        pfi_saved_cap *c = pfi_gpu_saved_get(s, in.uuid);
        if (!c) continue;
        c->changed = 1;
        c->baseline_w = def;
        c->cap_w = cur;
        c->index = (long)i;
    }
}

size_t pfi_gpu_restore_caps(pfi_gpu *g, const pfi_gpu_saved_set *s, int check_range,
                            int forget_missing, const pfi_gpu_restore_report *r)
{
    /* first each saved GPU's index and target, then every set at once
       (pfi_gpu_set_caps: one GPU that hangs delays none of the others),
       then the reports in the saved order */
    size_t n = *s->n, m = 0;
    size_t *kof = malloc((n ? n : 1) * sizeof *kof), *idx = malloc((n ? n : 1) * sizeof *idx);
    long *iof = malloc((n ? n : 1) * sizeof *iof);
    double *cap = malloc((n ? n : 1) * sizeof *cap);
    pfi_status *rc = malloc((n ? n : 1) * sizeof *rc);
    pfi_error *e = malloc((n ? n : 1) * sizeof *e);
    if (!kof || !idx || !iof || !cap || !rc || !e) {
        free(kof), free(idx), free(iof), free(cap), free(rc), free(e);
        return pfi_gpu_saved_pending(s); /* nothing restored: tried again later */
    }
    for (size_t k = 0; k < n; k++) {
        pfi_saved_cap *c = &s->gpu[k];
        iof[k] = -1;
        if (!c->changed) continue;
        long i = pfi_gpu_find_uuid(g, c->uuid);
        pfi_gpu_info in;
        if (i >= 0 && check_range && !pfi_gpu_info_get(g, (size_t)i, &in, NULL) &&
            !in_range(c->baseline_w, &in)) {
            double d = pfi_gpu_default_cap_w(&in);
            if (r && r->out_of_range)
                r->out_of_range(r->ud, k, c, i, &in, "baseline_w", c->baseline_w, d);
            c->baseline_w = d;
        }
        iof[k] = i;
        if (i >= 0) kof[m] = k, idx[m] = (size_t)i, cap[m++] = c->baseline_w;
    }
    pfi_gpu_set_caps(g, idx, cap, m, rc, e);
    for (size_t k = 0, q = 0; k < n; k++) {
        pfi_saved_cap *c = &s->gpu[k];
        if (!c->changed) continue;
        long i = iof[k];
        pfi_error nf, *why = &nf;
        int set = 0;
        if (i >= 0 && q < m && kof[q] == k) set = rc[q] == PFI_OK, why = &e[q], q++;
        if (!set) {
            if (i < 0) pfi_errorf(&nf, PFI_ENOTFOUND, "GPU %s is not on this node", c->uuid);
            if (r && r->failed) r->failed(r->ud, k, c, i, why);
            /* a GPU not found is forgotten only when every device
               enumerates and none has its UUID: an unavailable one
               (lost, no permission) may be it, so its baseline is kept */
            if (i < 0 && forget_missing && pfi_gpu_all_available(g)) c->changed = 0;
            continue;
        }
        if (r && r->restored) r->restored(r->ud, k, c, i, c->cap_w);
        c->changed = 0;
        c->cap_w = c->baseline_w;
    }
    free(kof), free(idx), free(iof), free(cap), free(rc), free(e);
    return pfi_gpu_saved_pending(s);
}

/* ---- the plain state file: pfi sweep's format ---- */
static pfi_status plain_load(const pfi_gpu_state_file *f, int *found, pfi_error *err)
{
    pfi_sweep_state *st = malloc(sizeof *st);
    if (!st) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    *f->saved.n = 0;
    pfi_status rc = pfi_sweep_state_load(f->path, st, found, err);
    for (size_t k = 0; !rc && k < st->n && k < f->saved.max; k++) {
        pfi_saved_cap *c = &f->saved.gpu[(*f->saved.n)++];
        memset(c, 0, sizeof *c);
        snprintf(c->uuid, sizeof c->uuid, "%s", st->gpu[k].uuid);
        c->changed = 1;
        c->baseline_w = st->gpu[k].cap_w;
        c->cap_w = NAN;
        c->index = st->gpu[k].index;
    }
    free(st);
    return rc;
}

static pfi_status plain_store(const pfi_gpu_state_file *f, pfi_error *err)
{
    pfi_sweep_state *st = calloc(1, sizeof *st);
    if (!st) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    st->pid = (long)getpid();
    for (size_t k = 0; k < *f->saved.n && st->n < PFI_SWEEP_STATE_MAX_GPUS; k++) {
        const pfi_saved_cap *c = &f->saved.gpu[k];
        if (!c->changed) continue;
        snprintf(st->gpu[st->n].uuid, sizeof st->gpu[st->n].uuid, "%s", c->uuid);
        st->gpu[st->n].index = c->index < 0 ? 0 : c->index;
        st->gpu[st->n++].cap_w = c->baseline_w;
    }
    char *t = pfi_sweep_state_format(st);
    free(st);
    pfi_status rc =
        t ? pfi_state_file_write(f->path, t, err) : pfi_errorf(err, PFI_ENOMEM, "out of memory");
    free(t);
    return rc;
}

void pfi_gpu_state_file_init(pfi_gpu_state_file *f, const char *path, pfi_saved_cap *gpu, size_t *n,
                             size_t max)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    f->saved.gpu = gpu;
    f->saved.n = n;
    f->saved.max = max;
    f->load = plain_load;
    f->store = plain_store;
}

pfi_status pfi_gpu_save(pfi_gpu *g, const size_t *idx, size_t nidx, const pfi_gpu_state_file *f,
                        pfi_error *err)
{
    size_t n0 = *f->saved.n;
    int was[PFI_SAVED_CAPS_MAX];
    for (size_t k = 0; k < n0 && k < PFI_SAVED_CAPS_MAX; k++) was[k] = f->saved.gpu[k].changed;
    pfi_status st = pfi_gpu_save_caps(g, idx, nidx, f->fallback_default, &f->saved, err);
    if (!st && (st = f->store(f, err))) { /* write-ahead failed: forget what this call saved */
        for (size_t k = 0; k < n0 && k < PFI_SAVED_CAPS_MAX; k++) f->saved.gpu[k].changed = was[k];
        *f->saved.n = n0;
    }
    return st;
}

pfi_status pfi_gpu_restore(pfi_gpu *g, const pfi_gpu_state_file *f, int from_file,
                           const pfi_gpu_restore_report *r, size_t *pending, pfi_error *err)
{
    int found = 1, lost = 0;
    pfi_error e;
    *pending = 0;
    if (from_file && f->load(f, &found, &e)) {
        if (r && r->lost) r->lost(r->ud, f->path, &e);
        pfi_gpu_saved_defaults(g, 0, &f->saved);
        lost = 1;
    } else if (!found) {
        return PFI_OK;
    } else if (from_file && r && r->found) {
        r->found(r->ud, f->path);
    }
    if ((*pending = pfi_gpu_restore_caps(g, &f->saved, from_file, 0, r)))
        return PFI_OK; /* the file still names them */
    if (lost) {
        char keep[4200];
        snprintf(keep, sizeof keep, "%s.corrupt", f->path);
        if (rename(f->path, keep) != 0)
            return pfi_errorf(err, PFI_EIO, "%s: cannot rename it to %s: %s", f->path, keep,
                              strerror(errno));
        return PFI_OK;
    }
    if (f->keep) return f->store(f, err);
    unlink(f->path);
    return PFI_OK;
}
