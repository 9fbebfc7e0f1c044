/* ctl_store_agg.c — the per-interval aggregates REPORTs are built from, on
 * etcd (issue 45, "what lives where"; ctl_store.h).
 *
 * A REPORT gives, per report interval (report_interval_s from the event's
 * start), the mean measured GPU power of the interval (ctl_vtn_report.c).
 * With one controller it is the mean of that controller's samples in its
 * SQLite. With failover the samples of an interval may have been taken by
 * two controllers (the takeover spans it) or by a dead one alone (it died
 * before it kept the interval's report), so the leader also keeps, for each
 * OpenADR event it samples, each interval's sum and count of measured
 * power, adds its period's sample to the current interval and commits that
 * interval with the period's rows: PREFIX/agg/EVENTID#k = "SUM COUNT". A
 * new leader pulls them and continues them, and builds every REPORT from
 * them, never from another host's samples. Entries of events no longer in
 * the state are dropped from memory (their keys stay: about 40 bytes an
 * interval). Lock order: c->mu, then f->mu. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_failover.h"
#include "ctl_store.h"
#include "vec.h"

/* the interval of event id k: its index in f->agg, or -1 (f->mu held) */
static long agg_find(const ctl_failover *f, const char *id, size_t k)
{
    for (size_t i = 0; i < f->nagg; i++)
        if (f->agg[i].k == k && !strcmp(f->agg[i].event, id)) return (long)i;
    return -1;
}

/* set (or add to) event id's interval k: 0, or -1 out of memory (f->mu held) */
static int agg_add(ctl_failover *f, const char *id, size_t k, double sum, double cnt, int add)
{
    long at = agg_find(f, id, k);
    if (at < 0) {
        if (PFI_VEC_RESERVE(f->agg, f->agg_cap, f->nagg + 1, NULL)) return -1;
        at = (long)f->nagg++;
        snprintf(f->agg[at].event, sizeof f->agg[at].event, "%s", id);
        f->agg[at].k = k, f->agg[at].sum_w = 0, f->agg[at].count = 0;
    }
    if (!add) f->agg[at].sum_w = 0, f->agg[at].count = 0;
    f->agg[at].sum_w += sum, f->agg[at].count += cnt;
    return 0;
}

/* the OpenADR event id of the state (lock held), or NULL */
static const ctl_event *oadr_event(const ctl *c, const char *id)
{
    for (size_t i = 0; i < c->st.nevents; i++)
        if (!strcmp(c->st.event[i].ev.id, id))
            return strcmp(c->st.event[i].ev.source, "openadr") ? NULL : &c->st.event[i];
    return NULL;
}

int ctl_store_agg_sample(ctl *c, const ctl_decision *d, char *key, size_t kn, char **value)
{
    ctl_failover *f = c->fo;
    double R = c->cfg.vtn.report_s;
    *value = NULL;
    if (!d->sample || !d->sample_event[0] || !isfinite(d->measured_w) || !(R > 0)) return 0;
    pthread_mutex_lock(&c->mu);
    const ctl_event *e = oadr_event(c, d->sample_event);
    double start = e ? e->ev.start : NAN, end = e ? pfi_grid_event_end(&e->ev) : NAN;
    pthread_mutex_unlock(&c->mu);
    if (!(d->t >= start && d->t < end)) return 0;
    size_t k = (size_t)((d->t - start) / R);
    pthread_mutex_lock(&f->mu);
    int rc = agg_add(f, d->sample_event, k, d->measured_w, 1, 1);
    long at = rc ? -1 : agg_find(f, d->sample_event, k);
    char *v = at >= 0 ? malloc(64) : NULL;
    if (v) snprintf(v, 64, "%.17g %.0f", f->agg[at].sum_w, f->agg[at].count);
    pthread_mutex_unlock(&f->mu);
    if (!v) return -1;
    snprintf(key, kn, "%s#%zu", d->sample_event, k);
    *value = v;
    return 0;
}

void ctl_store_agg_pull(ctl *c)
{
    ctl_failover *f = c->fo;
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(f->kv, "agg/", 0, &a, &err)) {
        ctl_log(c, "warning: failover: reading the reports' aggregates: %s", err.msg);
        return;
    }
    size_t got = 0;
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&f->mu);
    f->nagg = 0;
    for (size_t i = 0; i < a.nkvs; i++) {
        const char *key = a.kvs[i].key + strlen("agg/"), *hash = strrchr(key, '#');
        double sum, cnt;
        char id[PFI_EVENT_ID_MAX + 1], *end;
        if (!hash || hash - key > PFI_EVENT_ID_MAX) continue;
        snprintf(id, sizeof id, "%.*s", (int)(hash - key), key);
        unsigned long long k = strtoull(hash + 1, &end, 10);
        if (*end || !oadr_event(c, id)) continue; /* not an event of the state: not needed */
        if (sscanf(a.kvs[i].value, "%lf %lf", &sum, &cnt) != 2 || !isfinite(sum) ||
            !(cnt >= 0 && cnt < 1e9)) {
            ctl_log(c, "warning: failover: etcd %s: not \"SUM COUNT\"; skipped", a.kvs[i].key);
            continue;
        }
        if (!agg_add(f, id, (size_t)k, sum, cnt, 0)) got++;
    }
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_unlock(&c->mu);
    pfi_etcd_answer_free(&a);
    if (got) ctl_log(c, "failover: the reports' aggregates of %zu intervals taken over", got);
}

int ctl_store_etcd_buckets(ctl *c, const char *event_id, double *sum_w, double *count, size_t nb)
{
    ctl_failover *f = c->fo;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nagg; i++)
        if (f->agg[i].k < nb && !strcmp(f->agg[i].event, event_id))
            sum_w[f->agg[i].k] = f->agg[i].sum_w, count[f->agg[i].k] = f->agg[i].count;
    pthread_mutex_unlock(&f->mu);
    return 0;
}
