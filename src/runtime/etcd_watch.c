/* etcd_watch.c — following a prefix (etcd.h, pfi_etcd_follow): one
 * streamed POST /v3/watch at a time, its messages one JSON object a line
 * (the gateway's stream), each change handed to the caller. A watch
 * cancelled for compaction, or a first call, reads the prefix whole at the
 * current revision R and watches on from R + 1 (etcd's own advice for a
 * compacted watcher); progress_notify makes etcd send the revision it has
 * reached even when nothing changes, so a quiet watch still moves *rev. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "etcd_internal.h"

typedef struct watch_ctx {
    pfi_etcd *e;
    char *buf;
    size_t n;
    long long *rev;
    pfi_etcd_change_fn cb;
    void *ud;
    int stopped;         /* a callback said stop */
    long long compacted; /* the watch was cancelled: compacted up to this revision */
    int bad;             /* an answer did not parse, or etcd refused the watch */
    char why[PFI_ERROR_MSG_MAX + 64];
} watch_ctx;

/* one line of the stream: 0 go on, -1 stop reading */
static int watch_line(watch_ctx *w, const char *line, size_t len)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_parse(line, len, "etcd watch", &a, &err)) {
        snprintf(w->why, sizeof w->why, "%.500s", err.msg);
        w->bad = 1;
        return -1;
    }
    int rc = 0;
    if (a.code) {
        snprintf(w->why, sizeof w->why, "etcd watch: %s (gRPC code %d)", a.message, a.code);
        w->bad = 1, rc = -1;
    } else if (a.compact_revision > 0) {
        w->compacted = a.compact_revision, rc = -1;
    } else if (a.canceled) {
        snprintf(w->why, sizeof w->why, "etcd cancelled the watch");
        w->bad = 1, rc = -1;
    }
    for (size_t i = 0; !rc && i < a.nevents; i++) {
        pfi_etcd_strip_prefix(w->e, &a.events[i].kv);
        if (a.events[i].kv.mod_revision > *w->rev) *w->rev = a.events[i].kv.mod_revision;
        if (w->cb(w->ud, &a.events[i])) w->stopped = 1, rc = -1;
    }
    /* a progress notification (no events): everything up to its revision was sent */
    if (!rc && !a.nevents && !a.created && a.revision > *w->rev) *w->rev = a.revision;
    pfi_etcd_answer_free(&a);
    return rc;
}

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *ud)
{
    watch_ctx *w = ud;
    size_t k = size * nmemb;
    if (w->n + k > 4 * (size_t)PFI_ETCD_MAX_VALUE) return 0; /* absurd: abort */
    char *q = realloc(w->buf, w->n + k + 1);
    if (!q) return 0;
    w->buf = q;
    memcpy(w->buf + w->n, ptr, k);
    w->n += k;
    w->buf[w->n] = 0;
    char *nl;
    while ((nl = memchr(w->buf, '\n', w->n))) {
        size_t len = (size_t)(nl - w->buf);
        int rc = len ? watch_line(w, w->buf, len) : 0;
        memmove(w->buf, nl + 1, w->n - len - 1);
        w->n -= len + 1;
        if (rc) return 0;
    }
    return k;
}

/* the prefix whole at the current revision: *rev moves there */
static pfi_status resync(pfi_etcd *e, const char *key_prefix, long long *rev,
                         pfi_etcd_snapshot_fn snapshot, void *ud, int *stop, pfi_error *err)
{
    pfi_etcd_answer a;
    pfi_status st = pfi_etcd_range_prefix(e, key_prefix, 0, &a, err);
    if (st) return st;
    *rev = a.revision;
    *stop = snapshot && snapshot(ud, &a);
    pfi_etcd_answer_free(&a);
    return PFI_OK;
}

static char *watch_body(pfi_etcd *e, const char *key_prefix, long long from)
{
    char *k = pfi_etcd_key64(e, key_prefix), *end = pfi_etcd_prefix_end64(e, key_prefix), r[32];
    snprintf(r, sizeof r, "%lld", from);
    json_t *j = k && end ? json_pack("{s{sssssssb}}", "create_request", "key", k, "range_end", end,
                                     "start_revision", r, "progress_notify", 1)
                         : NULL;
    free(k);
    free(end);
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return body;
}

pfi_status pfi_etcd_follow(pfi_etcd *e, const char *key_prefix, long long *rev, double wait_s,
                           pfi_etcd_change_fn cb, pfi_etcd_snapshot_fn snapshot, void *ud,
                           pfi_error *err)
{
    double end = pfi_wall_monotonic() + wait_s;
    int stop = 0;
    long long compacted = *rev <= 0;
    for (int fails = 0; !stop && end - pfi_wall_monotonic() >= 0.01;) {
        if (compacted) {
            pfi_status st = resync(e, key_prefix, rev, snapshot, ud, &stop, err);
            if (st) return st;
            compacted = 0;
            continue;
        }
        char *body = watch_body(e, key_prefix, *rev + 1);
        if (!body) return pfi_errorf(err, PFI_ENOMEM, "etcd watch: out of memory");
        watch_ctx w = {.e = e, .rev = rev, .cb = cb, .ud = ud};
        long code = 0;
        pthread_mutex_lock(&e->mu);
        size_t ep = e->cur;
        int r = pfi_etcd_post_with(e, ep, "/v3/watch", body, end - pfi_wall_monotonic(), on_stream,
                                   &w, &code, w.why, sizeof w.why);
        if (r == -1) e->cur = (e->cur + 1) % e->n; /* no answer: the next member */
        pthread_mutex_unlock(&e->mu);
        free(body);
        free(w.buf);
        stop = w.stopped;
        compacted = w.compacted;
        if (w.bad) return pfi_errorf(err, PFI_ESTATE, "%s", w.why);
        if (r == -1 && ++fails >= (int)e->n)
            return pfi_errorf(err, PFI_EIO, "etcd watch: %s", w.why);
        if (!r && !stop && !compacted) /* the stream ended: etcd closed it; watch again */
            continue;
    }
    return PFI_OK;
}
