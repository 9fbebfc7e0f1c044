/* ctl_store_etcd.c — the store on etcd (ctl_store.h): the keys under the
 * configured prefix,
 *
 *   leader              the leading controller's name (under its lease)
 *   term                raised by one at each election (ctl_failover.c)
 *   base/AGENT          the agent's base generation: it is sent base + term
 *   events/ID           an event, the columns of SQLite's events table (JSON)
 *   meta/integral_w     the feedback term
 *   meta/ft_seq         the highest fast-trigger seq handed out (a new leader's start above it)
 *   baselines/EVENT     the jobs' baselines of an event: [[job, tier, base_w, base_tokens], ...]
 *   mem/TIER/GPUS/HW/ID  a job's remembered points (ctl_mem: profiles, events), put
 *                       when stored, deleted when forgotten (its job ended)
 *   agg/EVENT#k         an OpenADR event's report interval k: "SUM COUNT" of the
 *                       measured power sampled in it (ctl_store_agg.c)
 *   points/TIER/ID      what safe-online measured of a job in the running event:
 *                       {"points": [[power_w, power_se_w, tokens_per_s, tokens_se], ...]},
 *                       at most every CTL_STORE_POINTS_S per job; deleted at the
 *                       event's end (its points are then remembered: mem/)
 *   caps/NNNN           the caps last committed, {"AGENT": [[job, cap_w], ...], ...} in
 *                       chunks of at most CTL_STORE_CHUNK bytes; meta/caps_chunks
 *                       says how many are current (written when they change)
 *   reports/EVENT#k     a REPORT's intent and what the VTN answered (ctl_store_oadr.c)
 *   oadr_first/ID       what "now" meant for an OpenADR event id (ctl_store_oadr.c)
 *
 * A period's writes go in transactions of at most CTL_STORE_TXN_OPS
 * operations (etcd's limit is 128), each guarded by
 * create_revision(leader) == the revision that made this controller
 * leader: a deposed leader's rows are refused, and it stops pushing. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl_failover.h"
#include "ctl_jobidx.h"
#include "ctl_pool.h"
#include "ctl_store.h"
#include "vec.h"

#define CTL_STORE_TXN_OPS 120
/* a value's bytes at most: etcd takes 1.5 MiB a request, base64 adds a third */
#define CTL_STORE_CHUNK (256 * 1024)
/* a job's measured points committed at most this often (s): safe-online
   moves a job every few periods, and 12,500 jobs' points each period would
   be megabytes a second */
#define CTL_STORE_POINTS_S 30
/* and at most this many jobs' points a period (about 150 kB), so that a
   fleet's first points spread over periods instead of one period's spike */
#define CTL_STORE_POINTS_PER_PERIOD 500

typedef struct store_batch {
    pfi_etcd_op *op;
    size_t n, cap;
    char **mem; /* the keys and values the ops point to */
    size_t nmem, memcap;
} store_batch;

static void batch_free(store_batch *b)
{
    for (size_t i = 0; i < b->nmem; i++) free(b->mem[i]);
    free(b->mem);
    free(b->op);
}

/* queue a put of key (printf) = value (taken: freed with the batch) */
static int batch_put(store_batch *b, char *value, const char *fmt, const char *arg)
{
    char *key = malloc(strlen(fmt) + strlen(arg) + 1);
    if (!key || !value || PFI_VEC_RESERVE(b->op, b->cap, b->n + 1, NULL) ||
        PFI_VEC_RESERVE(b->mem, b->memcap, b->nmem + 2, NULL)) {
        free(key);
        free(value);
        return -1;
    }
    sprintf(key, fmt, arg);
    b->mem[b->nmem++] = key;
    b->mem[b->nmem++] = value;
    b->op[b->n++] = (pfi_etcd_op){PFI_ETCD_OP_PUT, key, value, strlen(value), 0, 0};
    return 0;
}

/* queue a delete of key (printf) */
static int batch_del(store_batch *b, const char *fmt, const char *arg)
{
    char *key = malloc(strlen(fmt) + strlen(arg) + 1);
    if (!key || PFI_VEC_RESERVE(b->op, b->cap, b->n + 1, NULL) ||
        PFI_VEC_RESERVE(b->mem, b->memcap, b->nmem + 1, NULL)) {
        free(key);
        return -1;
    }
    sprintf(key, fmt, arg);
    b->mem[b->nmem++] = key;
    b->op[b->n++] = (pfi_etcd_op){PFI_ETCD_OP_DELETE, key, NULL, 0, 0, 0};
    return 0;
}

static char *fmt_ll(long long v)
{
    char *s = malloc(24);
    if (s) snprintf(s, 24, "%lld", v);
    return s;
}

/* the batch in guarded transactions: 0; 1 refused (deposed); -1 failed */
static int batch_send(ctl *c, const store_batch *b, char *why, size_t n)
{
    ctl_failover *f = c->fo;
    pthread_mutex_lock(&f->mu);
    pfi_etcd_cmp guard = {"leader", PFI_ETCD_CREATE, f->leader_rev, NULL};
    pthread_mutex_unlock(&f->mu);
    for (size_t i = 0; i < b->n; i += CTL_STORE_TXN_OPS) {
        size_t k = b->n - i < CTL_STORE_TXN_OPS ? b->n - i : CTL_STORE_TXN_OPS;
        pfi_etcd_answer a;
        pfi_error err = {0};
        if (pfi_etcd_txn(f->kv, &guard, 1, b->op + i, k, NULL, 0, &a, &err)) {
            /* etcd's space quota reached: the leader steps down (it cannot
               commit; pfi_ctl_store_nospace_total counts it for an alert) */
            int full = pfi_etcd_nospace(&a);
            pfi_etcd_answer_free(&a);
            snprintf(why, n, "%s%s", full ? "etcd NOSPACE, stepping down: " : "", err.msg);
            if (full) atomic_fetch_add(&f->nospace, 1);
            return full ? 1 : -1;
        }
        int ok = a.succeeded;
        pfi_etcd_answer_free(&a);
        if (!ok) {
            snprintf(why, n, "the store refused the leader's write: another controller leads");
            return 1;
        }
    }
    return 0;
}

/* the sampled jobs' baselines of the period's event, when they changed */
static int put_baselines(ctl *c, const ctl_decision *d, store_batch *b)
{
    ctl_failover *f = c->fo;
    if (!d->sample || !d->sample_event[0]) return 0;
    json_t *a = json_array();
    for (size_t i = 0; a && i < d->nrows; i++) {
        const ctl_job_row *r = &d->rows[i];
        json_array_append_new(a, json_pack("[siff]", r->id, r->tier,
                                           isfinite(r->base_w) ? r->base_w : -1.0,
                                           isfinite(r->base_tokens) ? r->base_tokens : -1.0));
    }
    char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!s) return -1;
    if (f->last_baselines && !strcmp(f->last_baselines_event, d->sample_event) &&
        !strcmp(f->last_baselines, s)) {
        free(s);
        return 0;
    }
    free(f->last_baselines);
    f->last_baselines = strdup(s);
    snprintf(f->last_baselines_event, sizeof f->last_baselines_event, "%s", d->sample_event);
    return batch_put(b, s, "baselines/%s", d->sample_event);
}

/* the caps this period pushes, when they changed since the last commit:
 * in chunks, then their count (a reader takes chunks below the count) */
static int put_caps(ctl *c, store_batch *b)
{
    ctl_failover *f = c->fo;
    pthread_mutex_lock(&c->mu);
    char *s = ctl_push_caps_json(c);
    pthread_mutex_unlock(&c->mu);
    if (!s) return -1;
    if (f->last_caps && !strcmp(f->last_caps, s)) {
        free(s);
        return 0;
    }
    size_t len = strlen(s), k = 0;
    for (size_t at = 0; at < len; at += CTL_STORE_CHUNK, k++) {
        size_t m = len - at < CTL_STORE_CHUNK ? len - at : CTL_STORE_CHUNK;
        char *v = malloc(m + 1), no[16];
        if (v) memcpy(v, s + at, m), v[m] = 0;
        snprintf(no, sizeof no, "%04zu", k);
        if (batch_put(b, v, "caps/%s", no)) {
            free(s);
            return -1;
        }
    }
    free(f->last_caps);
    f->last_caps = s; /* a refused commit deposes us: no later compare with it */
    return batch_put(b, fmt_ll((long long)k), "meta/caps_chunks%s", "");
}

/* the decision's remembered points: each key put, or deleted when forgotten */
static int put_mem(const ctl_decision *d, store_batch *b)
{
    for (size_t i = 0; i < d->nmem_rows; i++) {
        const ctl_mem *m = &d->mem_rows[i];
        char key[CTL_JOB_ID_MAX + 64];
        snprintf(key, sizeof key, "%d/%d/%.0f/%s", m->tier, m->gpus, m->hw_max_w, m->id);
        if (m->forget ? batch_del(b, "mem/%s", key)
                      : batch_put(b, ctl_store_mem_format(m), "mem/%s", key))
            return -1;
    }
    return 0;
}

/* what safe-online measured in the running event, each job's when it has
 * more points than last committed (at most every CTL_STORE_POINTS_S); at
 * the event's end the keys go (what it measured is remembered then) */
static int put_points(ctl *c, const ctl_decision *d, store_batch *b)
{
    ctl_failover *f = c->fo;
    if (!d->active) {
        if (!f->points_put) return 0;
        f->points_put = 0;
        pthread_mutex_lock(&c->mu); /* the next event's points start again */
        for (size_t k = 0; k < c->st.njobs; k++) c->st.job[k].fo_npt = 0;
        pthread_mutex_unlock(&c->mu);
        if (PFI_VEC_RESERVE(b->op, b->cap, b->n + 1, NULL)) return -1;
        b->op[b->n++] = (pfi_etcd_op){PFI_ETCD_OP_DELETE, "points/", NULL, 0, 0, 1};
        return 0;
    }
    pfi_online_point pt[CTL_KNOWN_MAX * 2];
    int bad = 0;
    pthread_mutex_lock(&c->mu);
    double now = c->st.now;
    size_t put = 0;
    for (size_t k = 0; !bad && k < c->st.njobs && put < CTL_STORE_POINTS_PER_PERIOD; k++) {
        ctl_job *j = &c->st.job[k];
        size_t m = ctl_online_points(&c->st, j, pt, CTL_KNOWN_MAX * 2);
        if (m <= j->fo_npt || now - j->fo_t < CTL_STORE_POINTS_S) continue;
        json_t *a = json_array();
        for (size_t i = 0; a && i < m; i++)
            json_array_append_new(a, json_pack("[ffff]", pt[i].power_w, pt[i].power_se_w,
                                               pt[i].tokens_per_s, pt[i].tokens_se));
        json_t *o = a ? json_pack("{so}", "points", a) : NULL;
        char *v = o ? json_dumps(o, JSON_COMPACT) : NULL, key[CTL_JOB_ID_MAX + 16];
        json_decref(o);
        snprintf(key, sizeof key, "%d/%s", j->tier, j->id);
        bad = batch_put(b, v, "points/%s", key);
        j->fo_npt = m, j->fo_t = now;
        f->points_put = 1;
        put++;
    }
    pthread_mutex_unlock(&c->mu);
    return bad ? -1 : 0;
}

static int etcd_commit(ctl *c, const ctl_decision *d, char *why, size_t n)
{
    ctl_failover *f = c->fo;
    store_batch b = {0};
    int bad = 0;
    for (size_t i = 0; !bad && i < d->nevent_rows; i++)
        bad = batch_put(&b, ctl_store_event_format(&d->event_rows[i]), "events/%s",
                        d->event_rows[i].ev.id);
    pthread_mutex_lock(&f->mu);
    long long term = f->term;
    pthread_mutex_unlock(&f->mu);
    for (size_t i = 0; !bad && i < d->ngen_rows; i++) {
        const ctl_gen_row *r = &d->gen_rows[i];
        if (r->to != r->from)
            bad = batch_put(&b, fmt_ll(r->to - term), "base/%s", c->io.agent[r->agent].name);
    }
    char *iw = malloc(32);
    if (iw) snprintf(iw, 32, "%.17g", d->integral_w);
    if (!bad) bad = batch_put(&b, iw, "meta/integral_w%s", "");
    else free(iw);
    char *seq = malloc(24);
    if (seq && c->io.pool)
        snprintf(seq, 24, "%llu", (unsigned long long)ctl_fast_seq_high(c->io.pool));
    else if (seq) snprintf(seq, 24, "0");
    if (!bad) bad = batch_put(&b, seq, "meta/ft_seq%s", "");
    else free(seq);
    if (!bad) bad = put_baselines(c, d, &b);
    if (!bad) bad = put_caps(c, &b);
    if (!bad) bad = put_mem(d, &b);
    if (!bad) bad = put_points(c, d, &b);
    char agg_key[PFI_EVENT_ID_MAX + 24], *agg = NULL;
    if (!bad) bad = ctl_store_agg_sample(c, d, agg_key, sizeof agg_key, &agg);
    if (!bad && agg) bad = batch_put(&b, agg, "agg/%s", agg_key);
    int rc = bad ? -1 : batch_send(c, &b, why, n);
    if (bad) snprintf(why, n, "out of memory");
    if (rc) { /* not stored: written again at the next commit */
        free(f->last_caps), f->last_caps = NULL;
        free(f->last_baselines), f->last_baselines = NULL;
    }
    batch_free(&b);
    return rc;
}

static int etcd_event_put(ctl *c, const ctl_event *e)
{
    store_batch b = {0};
    char why[256];
    int rc = batch_put(&b, ctl_store_event_format(e), "events/%s", e->ev.id);
    if (!rc) rc = batch_send(c, &b, why, sizeof why);
    else snprintf(why, sizeof why, "out of memory");
    batch_free(&b);
    /* refused: the next period's commit is refused too, and deposes us */
    if (rc) ctl_log(c, "error: failover: event %s not stored in etcd: %s", e->ev.id, why);
    return rc ? -1 : 0;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const pfi_etcd_kv *)a)->key, ((const pfi_etcd_kv *)b)->key);
}

/* each agent's generation at the new term: base + term, or (no base yet:
   the first election) one above the local SQLite's, whose base is stored */
static int pull_generations(ctl *c, long long term)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(c->fo->kv, "base/", 0, &a, &err)) {
        ctl_log(c, "error: failover: reading the base generations: %s", err.msg);
        return -1;
    }
    if (a.nkvs) qsort(a.kvs, a.nkvs, sizeof *a.kvs, kv_cmp); /* none: kvs is NULL */
    store_batch b = {0};
    int bad = 0;
    for (size_t i = 0; !bad && i < c->io.nagents; i++) {
        ctl_agent *ag = &c->io.agent[i];
        char key[128];
        snprintf(key, sizeof key, "base/%s", ag->name);
        pfi_etcd_kv k = {.key = key},
                    *hit = a.nkvs ? bsearch(&k, a.kvs, a.nkvs, sizeof *a.kvs, kv_cmp) : NULL;
        long long g = 0;
        if (hit) g = atoll(hit->value) + term;
        else {
            long long local = 0;
            ctl_db_generation_get(c, ag->name, &local);
            g = local + 1;
            bad = batch_put(&b, fmt_ll(g - term), "base/%s", ag->name);
        }
        if (g < 1 || g > PFI_CAPS_GENERATION_MAX) g = 1; /* the agents' 400 then moves it */
        ag->generation = ag->generation_floor = g;
        ctl_db_generation_set(c, ag->name, g);
    }
    pfi_etcd_answer_free(&a);
    char why[256] = "out of memory";
    int rc = bad ? -1 : batch_send(c, &b, why, sizeof why);
    batch_free(&b);
    if (rc) ctl_log(c, "error: failover: storing the first base generations: %s", why);
    return rc ? -1 : 0;
}

/* the store's events into the local SQLite, then into the state */
static int pull_events(ctl *c)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(c->fo->kv, "events/", 0, &a, &err)) {
        ctl_log(c, "error: failover: reading the events: %s", err.msg);
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < a.nkvs; i++) {
        ctl_event e;
        char why[256];
        if (ctl_store_event_parse(a.kvs[i].value, a.kvs[i].value_len, &e, why, sizeof why))
            ctl_log(c, "warning: failover: etcd %s: %s; skipped", a.kvs[i].key, why);
        else if (ctl_db_event_row(c->io.db, &e, 1))
            ctl_log(c, "error: failover: event %s not copied into %s", e.ev.id, c->cfg.db);
    }
    int rc = ctl_db_load_events(c);
    ctl_events_forget_finished(&c->st);
    pthread_mutex_unlock(&c->mu);
    pfi_etcd_answer_free(&a);
    return rc;
}

/* a follower's turn: the changes to the store's events since its last
 * turn, by a watch from the revision it had reached (pfi_etcd_follow: a
 * first or compacted watch reads the prefix whole at a revision R and
 * watches on from R + 1), into its SQLite and state; a turn without a
 * change costs one short watch request and no parse. The watch waits at
 * most a quarter period (0.2 s at most): the kv client is the API
 * threads' too (a write to this follower waits that long at worst). */
typedef struct follow_ctx {
    char **val, **key; /* the changed events' values and keys, copied */
    size_t *len, n, cap, cap_k, cap_l;
    int bad;
} follow_ctx;

/* (the watch's callbacks run under the kv client's lock, which the API
   threads take under c->mu: they only copy, and the copies are applied
   once the watch is over, or the two locks would be taken in both orders) */
static void follow_one(follow_ctx *x, const pfi_etcd_kv *kv)
{
    if (PFI_VEC_RESERVE(x->val, x->cap, x->n + 1, NULL) ||
        PFI_VEC_RESERVE(x->key, x->cap_k, x->n + 1, NULL) ||
        PFI_VEC_RESERVE(x->len, x->cap_l, x->n + 1, NULL)) {
        x->bad = 1;
        return;
    }
    char *v = malloc(kv->value_len + 1), *k = strdup(kv->key);
    if (!v || !k) {
        free(v), free(k);
        x->bad = 1;
        return;
    }
    memcpy(v, kv->value, kv->value_len);
    v[kv->value_len] = 0;
    x->val[x->n] = v, x->key[x->n] = k, x->len[x->n++] = kv->value_len;
}

static int on_event_change(void *ud, const pfi_etcd_watch_event *ev)
{
    if (!ev->deleted) follow_one(ud, &ev->kv); /* events are never deleted */
    return 0;
}

static int on_events_snapshot(void *ud, const pfi_etcd_answer *a)
{
    for (size_t i = 0; i < a->nkvs; i++) follow_one(ud, &a->kvs[i]);
    return 0;
}

static int follow_events(ctl *c)
{
    ctl_failover *f = c->fo;
    follow_ctx x = {0};
    pfi_error err = {0};
    double wait_s = fmin(0.2, c->cfg.period_s / 4);
    long long rev = f->events_rev;
    int rc = 0;
    if (pfi_etcd_follow(f->kv, "events/", &rev, wait_s, on_event_change, on_events_snapshot, &x,
                        &err)) {
        ctl_log(c, "error: failover: watching the events: %s", err.msg);
        rc = -1;
    } else if (x.bad) {
        ctl_log(c, "error: failover: watching the events: out of memory");
        rc = -1; /* read again from the revision before */
    } else {
        f->events_rev = rev;
    }
    if (!rc && x.n) {
        pthread_mutex_lock(&c->mu);
        for (size_t i = 0; i < x.n; i++) {
            ctl_event e;
            char why[256];
            if (ctl_store_event_parse(x.val[i], x.len[i], &e, why, sizeof why))
                ctl_log(c, "warning: failover: etcd %s: %s; skipped", x.key[i], why);
            else if (ctl_db_event_row(c->io.db, &e, 1))
                ctl_log(c, "error: failover: event %s not copied into %s", e.ev.id, c->cfg.db);
        }
        rc = ctl_db_load_events(c);
        ctl_events_forget_finished(&c->st);
        pthread_mutex_unlock(&c->mu);
    }
    for (size_t i = 0; i < x.n; i++) free(x.val[i]), free(x.key[i]);
    free(x.val), free(x.key), free(x.len);
    return rc;
}

static void pull_baseline_rows(ctl *c, const ctl_event *e, json_t *rows)
{
    size_t i, n = 0;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *id = json_string_value(json_array_get(r, 0));
        if (!id || !json_is_integer(json_array_get(r, 1))) continue;
        int tier = (int)json_integer_value(json_array_get(r, 1));
        ctl_job *j = NULL;
        for (size_t k = 0; k < c->st.njobs && !j; k++)
            if (c->st.job[k].tier == tier && !strcmp(c->st.job[k].id, id)) j = &c->st.job[k];
        if (!j && !PFI_VEC_RESERVE(c->st.job, c->st.job_cap, c->st.njobs + 1, NULL)) {
            j = &c->st.job[c->st.njobs++];
            ctl_job_init(j, id, tier);
        }
        if (!j) break;
        double bw = json_number_value(json_array_get(r, 2));
        double bt = json_number_value(json_array_get(r, 3));
        j->base_src = e->baseline_src;
        j->base_w = bw >= 0 ? bw : NAN;
        j->base_tokens = bt >= 0 ? bt : NAN;
        j->seen = 1;
        n++;
    }
    ctl_log(c, "failover: taking over event %s (target %.0f W) with the baselines of %zu jobs",
            e->ev.id, e->target_w, n);
}

/* the feedback term and the running events' baselines into the state */
static void pull_state(ctl *c)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (!pfi_etcd_get(c->fo->kv, "meta/integral_w", &a, &err) && a.nkvs) {
        double v = strtod(a.kvs[0].value, NULL);
        pthread_mutex_lock(&c->mu);
        c->st.integral_w = isfinite(v) ? v : 0;
        pthread_mutex_unlock(&c->mu);
    }
    pfi_etcd_answer_free(&a);
    if (!pfi_etcd_get(c->fo->kv, "meta/ft_seq", &a, &err) && a.nkvs && c->io.pool) {
        unsigned long long seq = strtoull(a.kvs[0].value, NULL, 10);
        ctl_fast_seq_floor(c->io.pool, seq);
    }
    pfi_etcd_answer_free(&a);
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->st.nevents; i++) {
        ctl_event *e = &c->st.event[i];
        if (e->status != CTL_EV_ACTIVE) continue;
        char key[PFI_EVENT_ID_MAX + 16];
        snprintf(key, sizeof key, "baselines/%s", e->ev.id);
        if (pfi_etcd_get(c->fo->kv, key, &a, &err) || !a.nkvs) {
            pfi_etcd_answer_free(&a);
            continue;
        }
        json_t *rows = json_loadb(a.kvs[0].value, a.kvs[0].value_len, 0, NULL);
        if (json_is_array(rows)) pull_baseline_rows(c, e, rows);
        json_decref(rows);
        pfi_etcd_answer_free(&a);
    }
    pthread_mutex_unlock(&c->mu);
}

/* what the dead leader's safe-online measured in the running event: each
   job's known points (a job the baselines made, ctl_job), so the new
   leader's safe-online starts from them, not from nothing (lock not held) */
static void pull_points(ctl *c)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(c->fo->kv, "points/", 0, &a, &err)) {
        ctl_log(c, "warning: failover: reading the measured points: %s", err.msg);
        return;
    }
    size_t got = 0;
    ctl_jobidx idx = {0};
    pthread_mutex_lock(&c->mu);
    int have_idx = !ctl_jobidx_build(&idx, &c->st); /* one lookup a key, not a scan */
    for (size_t i = 0; have_idx && i < a.nkvs; i++) {
        const char *key = a.kvs[i].key + strlen("points/"), *slash = strchr(key, '/');
        int tier = slash ? atoi(key) : -99;
        json_t *o = slash ? json_loadb(a.kvs[i].value, a.kvs[i].value_len, 0, NULL) : NULL;
        json_t *pts = json_object_get(o, "points");
        pfi_online_point pt[CTL_KNOWN_MAX * 2];
        size_t m = 0, q;
        json_t *x;
        int ok = json_is_array(pts);
        json_array_foreach(pts, q, x)
        {
            double v[4];
            for (int r = 0; r < 4; r++) {
                json_t *e = json_array_get(x, (size_t)r);
                v[r] = json_is_number(e) ? json_number_value(e) : NAN;
                ok &= isfinite(v[r]);
            }
            ok &= json_array_size(x) == 4;
            if (ok && m < CTL_KNOWN_MAX * 2) pt[m++] = (pfi_online_point){v[0], v[1], v[2], v[3]};
        }
        json_decref(o);
        if (!ok) {
            ctl_log(c, "warning: failover: etcd %s: not a job's points; skipped", a.kvs[i].key);
            continue;
        }
        long k = ctl_jobidx_find(&idx, &c->st, slash + 1, tier);
        ctl_job *j = k >= 0 ? &c->st.job[k] : NULL;
        if (!j || m <= j->nknown) continue;
        ctl_known_set(j, pt, m);
        j->fo_npt = m, j->fo_t = c->st.now;
        got++;
    }
    pthread_mutex_unlock(&c->mu);
    ctl_jobidx_free(&idx);
    if (!have_idx) ctl_log(c, "error: out of memory: the measured points not taken over");
    pfi_etcd_answer_free(&a);
    if (got) ctl_log(c, "failover: what safe-online measured of %zu jobs taken over", got);
}

/* the remembered points into the state: the store's replace the local
   SQLite's of the same key (a key only the local SQLite has stays: its job
   ended while another controller led, and it is forgotten at 30 days) */
static void pull_mem(ctl *c)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(c->fo->kv, "mem/", 0, &a, &err)) {
        ctl_log(c, "warning: failover: reading the remembered points: %s", err.msg);
        return;
    }
    size_t got = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < a.nkvs; i++) {
        ctl_mem m;
        char why[256];
        if (ctl_store_mem_parse(a.kvs[i].value, a.kvs[i].value_len, &m, why, sizeof why))
            ctl_log(c, "warning: failover: etcd %s: %s; skipped", a.kvs[i].key, why);
        else if (!ctl_mem_put(&c->st, &m)) got++;
    }
    pthread_mutex_unlock(&c->mu);
    pfi_etcd_answer_free(&a);
    if (got) ctl_log(c, "failover: the remembered points of %zu jobs taken from the store", got);
}

/* the caps the last leader committed (meta/caps_chunks chunks of caps/),
   for etcd_takeover; none or unreadable: NULL (its first period decides) */
static json_t *pull_caps(ctl *c)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    long long k = -1;
    if (!pfi_etcd_get(c->fo->kv, "meta/caps_chunks", &a, &err) && a.nkvs) k = atoll(a.kvs[0].value);
    pfi_etcd_answer_free(&a);
    if (k <= 0 || pfi_etcd_range_prefix(c->fo->kv, "caps/", 0, &a, &err)) return NULL;
    if (a.nkvs) qsort(a.kvs, a.nkvs, sizeof *a.kvs, kv_cmp); /* caps/0000 ... in order */
    json_t *caps = NULL;
    char *s = NULL;
    size_t len = 0, cap = 0;
    int ok = a.nkvs >= (size_t)k;
    for (size_t i = 0; ok && i < (size_t)k; i++) {
        ok = !PFI_VEC_RESERVE(s, cap, len + a.kvs[i].value_len + 1, NULL);
        if (ok) memcpy(s + len, a.kvs[i].value, a.kvs[i].value_len), len += a.kvs[i].value_len;
    }
    json_error_t je;
    if (ok) caps = json_loadb(s, len, 0, &je);
    if (!json_is_object(caps))
        ctl_log(c,
                "warning: failover: the committed caps are unreadable (%lld chunks): "
                "the first period decides them",
                k);
    free(s);
    pfi_etcd_answer_free(&a);
    return json_is_object(caps) ? caps : (json_decref(caps), NULL);
}

/* a new leader's first push: the caps the last one committed, before its
   first period polls and decides (ctl_store.h) */
static void etcd_takeover(ctl *c)
{
    ctl_failover *f = c->fo;
    json_t *caps = f->takeover_caps;
    f->takeover_caps = NULL;
    if (!caps) return;
    double t0 = pfi_wall_monotonic();
    size_t n = ctl_push_committed(c, caps);
    ctl_log(c, "failover: the last committed caps pushed to %zu agents in %.0f ms", n,
            1000 * (pfi_wall_monotonic() - t0));
    json_decref(caps);
}

static int etcd_pull(ctl *c)
{
    ctl_failover *f = c->fo;
    pthread_mutex_lock(&f->mu);
    long long term = f->term;
    free(f->last_baselines);
    f->last_baselines = NULL;
    free(f->last_caps);
    f->last_caps = NULL;
    pthread_mutex_unlock(&f->mu);
    if (pull_generations(c, term) || pull_events(c)) return -1;
    pull_state(c);
    pull_mem(c);
    pull_points(c);
    ctl_store_agg_pull(c);
    ctl_store_oadr_pull(c);
    json_decref(f->takeover_caps);
    f->takeover_caps = pull_caps(c);
    ctl_log(c, "failover: %s took over at term %lld: %zu agents, %zu events", c->cfg.fo.name, term,
            c->io.nagents, c->st.nevents);
    return 0;
}

const ctl_store_ops ctl_store_etcd = {.name = "etcd",
                                      .commit = etcd_commit,
                                      .event_put = etcd_event_put,
                                      .pull = etcd_pull,
                                      .takeover = etcd_takeover,
                                      .refresh = follow_events,
                                      .report_intent = ctl_store_etcd_report_intent,
                                      .report_done = ctl_store_etcd_report_done,
                                      .buckets = ctl_store_etcd_buckets,
                                      .oadr_first = ctl_store_etcd_oadr_first};
