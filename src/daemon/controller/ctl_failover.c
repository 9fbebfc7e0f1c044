/* ctl_failover.c — the election, the lease and self-fencing of a
 * controller that fails over on etcd (ctl_failover.h). One thread per
 * controller: every TTL/3 it renews its lease (or asks for one) and, while
 * it does not lead, tries to create the leader key. The election is one
 * guarded transaction, not etcd's campaign call: it never blocks, and the
 * term is raised in the same transaction that makes the leader,
 *
 *   if create_revision(PREFIX/leader) == 0 and mod_revision(PREFIX/term) == m:
 *       put PREFIX/leader = NAME (under our lease); put PREFIX/term = t + 1
 *
 * so two controllers can never hold the same term. A standby notices a
 * dead leader within TTL/3 of etcd expiring its lease. */
#include "ctl_failover.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_client.h"
#include "clock.h"
#include "ctl_store.h"
#include "httpd.h"

/* the deadline's margin below the granted TTL: etcd counts the lease from
   when it received the keepalive, after we sent it; this covers the clock
   rates' difference and a scheduling delay */
static double margin_s(const ctl_failover *f)
{
    return fmax(0.25, 0.1 * (double)f->granted_s);
}

static double deadline(const ctl_failover *f)
{
    return f->ka_sent + (double)f->granted_s - margin_s(f);
}

/* give up leading (fo->mu held): the lease is revoked by the thread */
static void fence(ctl *c, ctl_failover *f, const char *why)
{
    if (!f->won) return;
    f->won = f->taken = 0;
    f->drop = 1; /* the thread revokes the lease: the leader key goes with it */
    f->fences++;
    ctl_log(c, "failover: %s no longer leads (term %lld): %s", c->cfg.fo.name, f->term, why);
}

void ctl_failover_resign(ctl *c, const char *why)
{
    ctl_failover *f = c->fo;
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    fence(c, f, why);
    f->no_campaign_until = pfi_wall_monotonic() + 3 * c->cfg.fo.ttl_s;
    pthread_mutex_unlock(&f->mu);
}

void ctl_failover_deposed(ctl *c, const char *why)
{
    ctl_failover *f = c->fo;
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    fence(c, f, why);
    pthread_mutex_unlock(&f->mu);
}

/* the store's schema (PREFIX/schema): 1 for the keys of ctl_store_etcd.c.
   A controller that finds a newer one does not lead (it would misread the
   store): a rolling upgrade upgrades the standbys first, then hands over */
#define CTL_STORE_SCHEMA 1

static int schema_newer(ctl *c, ctl_failover *f)
{
    pfi_etcd_answer s;
    pfi_error err = {0};
    if (pfi_etcd_get(f->ka, "schema", &s, &err)) return 1; /* unknown: not now */
    long long v = s.nkvs ? atoll(s.kvs[0].value) : 0;
    pfi_etcd_answer_free(&s);
    if (v > CTL_STORE_SCHEMA && !f->schema_newer)
        ctl_log(c,
                "ALARM: failover: the store's schema is %lld, newer than this controller's %d: it "
                "does not lead (upgrade it)",
                v, CTL_STORE_SCHEMA);
    f->schema_newer = v > CTL_STORE_SCHEMA;
    return f->schema_newer;
}

static void try_elect(ctl *c, ctl_failover *f)
{
    pfi_etcd_answer t, a;
    pfi_error err = {0};
    if (schema_newer(c, f) || pfi_wall_monotonic() < f->no_campaign_until) return;
    if (pfi_etcd_get(f->ka, "term", &t, &err)) {
        ctl_log(c, "warning: failover: reading the term: %s", err.msg);
        return;
    }
    long long term = 0, mod = 0;
    if (t.nkvs) {
        term = atoll(t.kvs[0].value);
        mod = t.kvs[0].mod_revision;
    }
    pfi_etcd_answer_free(&t);
    char next[32];
    snprintf(next, sizeof next, "%lld", term + 1);
    pthread_mutex_lock(&f->mu);
    long long lease = f->lease;
    pthread_mutex_unlock(&f->mu);
    pfi_etcd_cmp cmp[2] = {{"leader", PFI_ETCD_CREATE, 0, NULL}, {"term", PFI_ETCD_MOD, mod, NULL}};
    const char *hash = c->cfg.fo.config_hash, *schema = "1"; /* CTL_STORE_SCHEMA */
    pfi_etcd_op ok[4] = {
        {PFI_ETCD_OP_PUT, "leader", c->cfg.fo.name, strlen(c->cfg.fo.name), lease, 0},
        {PFI_ETCD_OP_PUT, "term", next, strlen(next), 0, 0},
        {PFI_ETCD_OP_PUT, "config_hash", hash, strlen(hash), 0, 0},
        {PFI_ETCD_OP_PUT, "schema", schema, 1, 0, 0}};
    pfi_etcd_op rd[2] = {{PFI_ETCD_OP_RANGE, "config_hash", NULL, 0, 0, 0},
                         {PFI_ETCD_OP_RANGE, "leader", NULL, 0, 0, 0}};
    if (pfi_etcd_txn(f->ka, cmp, 2, ok, 4, rd, 2, &a, &err)) {
        ctl_log(c, "warning: failover: the election: %s", err.msg);
        return;
    }
    pthread_mutex_lock(&f->mu);
    if (a.succeeded) {
        f->won = 1;
        f->taken = 0;
        f->term = term + 1;
        f->leader_rev = a.revision;
        f->elections_won++;
        snprintf(f->leader, sizeof f->leader, "%s", c->cfg.fo.name);
        ctl_log(c, "failover: %s leads, term %lld", c->cfg.fo.name, f->term);
    } else { /* the leader's configuration hash and name, in the ranges' order */
        const pfi_etcd_kv *h = NULL, *l = NULL;
        for (size_t i = 0; i < a.nkvs; i++)
            if (!strcmp(a.kvs[i].key, "config_hash")) h = &a.kvs[i];
            else if (!strcmp(a.kvs[i].key, "leader")) l = &a.kvs[i];
        snprintf(f->leader, sizeof f->leader, "%s", l ? l->value : "");
        int differs = l && h && strcmp(h->value, hash) != 0;
        if (differs && !f->config_differs)
            ctl_log(c,
                    "ALARM: failover: this controller's configuration (hash %s) differs from the "
                    "leader %s's (%s): make them the same (pfi_ctl_config_mismatch)",
                    hash, f->leader, h->value);
        f->config_differs = differs;
    }
    pthread_mutex_unlock(&f->mu);
    pfi_etcd_answer_free(&a);
    if (a.succeeded) { /* the loop pulls and runs a period at once */
        pthread_mutex_lock(&c->mu);
        c->wake = 1;
        pthread_mutex_unlock(&c->mu);
    }
}

/* one turn: renew or get the lease; past the deadline, fence */
static void renew(ctl *c, ctl_failover *f)
{
    pfi_error err = {0};
    pthread_mutex_lock(&f->mu);
    long long lease = f->lease;
    pthread_mutex_unlock(&f->mu);
    double t_send = pfi_wall_monotonic();
    long long ttl = 0, id = 0;
    pfi_status st;
    if (!lease) st = pfi_etcd_lease_grant(f->ka, (long long)ceil(c->cfg.fo.ttl_s), &id, &ttl, &err);
    else st = pfi_etcd_lease_keepalive(f->ka, lease, &ttl, &err);
    pthread_mutex_lock(&f->mu);
    if (!st && ttl > 0) {
        if (!lease) f->lease = id;
        f->granted_s = ttl;
        f->ka_sent = t_send;
    } else if (!st) { /* the lease is gone: so is the leader key */
        fence(c, f, "etcd let our lease expire");
        f->lease = 0;
    }
    /* a failing etcd is logged when it starts failing and when it answers again */
    if (st && !f->ka_failing) ctl_log(c, "warning: failover: lease: %s", err.msg);
    else if (!st && f->ka_failing) ctl_log(c, "failover: etcd answers again");
    f->ka_failing = st != PFI_OK;
    if (f->won && pfi_wall_monotonic() >= deadline(f))
        fence(c, f, "no keepalive answered within the lease");
    long long drop = f->drop ? f->lease : 0;
    if (f->drop) f->lease = 0, f->drop = 0;
    pthread_mutex_unlock(&f->mu);
    if (drop) pfi_etcd_lease_revoke(f->ka, drop, &err); /* best effort: etcd expires it anyway */
    pthread_mutex_lock(&f->mu);
    long long now_lease = f->lease, member = f->member_lease;
    pthread_mutex_unlock(&f->mu);
    if (now_lease && now_lease != member) { /* PREFIX/members/NAME: a warm controller */
        char key[96];
        snprintf(key, sizeof key, "members/%s", c->cfg.fo.name);
        pfi_etcd_answer a;
        if (!pfi_etcd_put(f->ka, key, c->cfg.fo.name, strlen(c->cfg.fo.name), now_lease, &a,
                          &err)) {
            pthread_mutex_lock(&f->mu);
            f->member_lease = now_lease;
            pthread_mutex_unlock(&f->mu);
        }
        pfi_etcd_answer_free(&a);
    }
}

/* the endpoint a client uses now, logged when it changed (a member that
   did not answer: the client went on to the next; the caller's thread) */
static void note_endpoint(ctl *c, pfi_etcd *e, char *last, size_t n, const char *what)
{
    const char *now = pfi_etcd_endpoint(e);
    if (last[0] && strcmp(last, now))
        ctl_log(c, "failover: etcd: %s now through %s (%s did not answer)", what, now, last);
    snprintf(last, n, "%s", now);
}

static void *failover_main(void *arg)
{
    ctl *c = arg;
    ctl_failover *f = c->fo;
    while (!atomic_load(&f->stop)) {
        double t0 = pfi_wall_monotonic();
        renew(c, f);
        pthread_mutex_lock(&f->mu);
        int elect = f->lease && !f->won;
        pthread_mutex_unlock(&f->mu);
        if (elect) try_elect(c, f);
        note_endpoint(c, f->ka, f->ep_ka, sizeof f->ep_ka, "the lease and the election");
        double wait_s = c->cfg.fo.ttl_s / 3 - (pfi_wall_monotonic() - t0);
        for (; wait_s > 0 && !atomic_load(&f->stop); wait_s -= 0.05) {
            struct timespec ts = {0, (long)(fmin(wait_s, 0.05) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static pfi_etcd *open_etcd(ctl *c, const char *password)
{
    const char *eps[16];
    for (size_t i = 0; i < c->cfg.fo.netcd; i++) eps[i] = c->cfg.fo.etcd[i];
    const ctl_cfg *g = &c->cfg;
    pfi_etcd_cfg ec = {.endpoints = eps,
                       .nendpoints = g->fo.netcd,
                       .prefix = g->fo.prefix,
                       .timeout_s = g->fo.timeout_s,
                       .ca_file = g->fo.ca_file[0] ? g->fo.ca_file : NULL,
                       .cert_file = g->fo.cert_file[0] ? g->fo.cert_file : NULL,
                       .key_file = g->fo.key_file[0] ? g->fo.key_file : NULL,
                       .user = g->fo.user[0] ? g->fo.user : NULL,
                       .password = g->fo.user[0] ? password : NULL};
    pfi_etcd *e = NULL;
    pfi_error err = {0};
    if (pfi_etcd_open(&ec, &e, &err)) ctl_log(c, "error: failover: %s", err.msg);
    return e;
}

int ctl_failover_start(ctl *c)
{
    if (!c->cfg.fo.netcd) return 0;
    /* lease_s must cover a takeover (docs/controller.md, "Election and self-fencing") */
    double need =
        2 * c->cfg.fo.ttl_s + c->cfg.agent_timeout_s + c->cfg.period_s / pfi_clock_scale() + 1;
    if (c->cfg.lease_s / pfi_clock_scale() < need) {
        ctl_log(c,
                "error: failover: lease_s %g s is below 2 x ttl_s + agent_timeout_s + the period "
                "+ 1 s = %g s: the agents' leases would lapse during a takeover",
                c->cfg.lease_s, need * pfi_clock_scale());
        return -1;
    }
    if (!c->cfg.fo.name[0]) gethostname(c->cfg.fo.name, sizeof c->cfg.fo.name - 1);
    char password[PFI_TOKEN_MAX + 1] = "";
    pfi_error err = {0};
    if (c->cfg.fo.password_file[0] &&
        pfi_token_read(c->cfg.fo.password_file, password, sizeof password, &err)) {
        ctl_log(c, "error: failover: %s", err.msg);
        return -1;
    }
    ctl_failover *f = calloc(1, sizeof *f);
    if (!f) return -1;
    pthread_mutex_init(&f->mu, NULL);
    f->reach_published = SIZE_MAX;
    f->kv = open_etcd(c, password);
    f->ka = open_etcd(c, password);
    memset(password, 0, sizeof password);
    c->fo = f;
    if (!f->kv || !f->ka) return -1;
    f->running = !pthread_create(&f->th, NULL, failover_main, c);
    if (!f->running) ctl_log(c, "error: failover: cannot start its thread");
    ctl_log(c, "failover: %s on etcd (%zu endpoints, prefix %s, TTL %g s)", c->cfg.fo.name,
            c->cfg.fo.netcd, c->cfg.fo.prefix, c->cfg.fo.ttl_s);
    return f->running ? 0 : -1;
}

void ctl_failover_stop(ctl *c)
{
    ctl_failover *f = c->fo;
    if (!f) return;
    atomic_store(&f->stop, 1);
    if (f->running) pthread_join(f->th, NULL);
    /* a stopped leader hands over at once: its lease (and the leader key) revoked */
    pfi_error err;
    if (f->lease && f->ka) pfi_etcd_lease_revoke(f->ka, f->lease, &err);
    pfi_etcd_close(f->kv);
    pfi_etcd_close(f->ka);
    free(f->last_baselines);
    free(f->last_caps);
    json_decref(f->takeover_caps);
    free(f->agg);
    for (size_t i = 0; i < f->nunresolved; i++) free(f->unresolved[i]);
    free(f->unresolved);
    pthread_mutex_destroy(&f->mu);
    free(f);
    c->fo = NULL;
}

int ctl_failover_may_push(ctl *c)
{
    ctl_failover *f = c->fo;
    if (!f) return 1;
    pthread_mutex_lock(&f->mu);
    int ok = f->won && f->taken && pfi_wall_monotonic() < deadline(f) - c->cfg.agent_timeout_s;
    pthread_mutex_unlock(&f->mu);
    return ok;
}

int ctl_failover_turn(ctl *c)
{
    ctl_failover *f = c->fo;
    if (!f) return 1;
    pthread_mutex_lock(&f->mu);
    int won = f->won, taken = f->taken;
    pthread_mutex_unlock(&f->mu);
    note_endpoint(c, f->kv, f->ep_kv, sizeof f->ep_kv, "the store");
    if (!won) { /* a follower: the leader's events, for its views */
        if (!ctl_store(c)->refresh(c)) {
            pthread_mutex_lock(&f->mu);
            f->refreshed = pfi_wall_monotonic();
            pthread_mutex_unlock(&f->mu);
        }
        return 0;
    }
    if (taken) return 1;
    if (ctl_store(c)->pull(c)) return 0; /* logged; tried again next turn */
    pthread_mutex_lock(&f->mu);
    f->taken = f->won; /* not when it was fenced meanwhile */
    int lead = f->taken;
    pthread_mutex_unlock(&f->mu);
    if (lead && ctl_store(c)->takeover) ctl_store(c)->takeover(c); /* the caps first */
    return lead;
}

const char *ctl_failover_role(ctl *c, char *leader, size_t n)
{
    ctl_failover *f = c->fo;
    if (leader && n) leader[0] = 0;
    if (!f) return "single";
    pthread_mutex_lock(&f->mu);
    int lead = f->won && f->taken;
    if (leader) snprintf(leader, n, "%s", f->leader);
    pthread_mutex_unlock(&f->mu);
    return lead ? "leader" : "follower";
}

int ctl_failover_may_write(ctl *c, struct pfi_http_resp *rs)
{
    char leader[64];
    if (!strcmp(ctl_failover_role(c, leader, sizeof leader), "follower")) {
        pfi_http_error(rs, 503, "this controller follows%s%s: write to the leader",
                       leader[0] ? "; the leader is " : "", leader);
        return 0;
    }
    return 1;
}

int ctl_failover_leads(ctl *c)
{
    return strcmp(ctl_failover_role(c, NULL, 0), "follower") != 0;
}

void ctl_failover_counts(ctl *c, ctl_fo_counts *out)
{
    ctl_failover *f = c->fo;
    memset(out, 0, sizeof *out);
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    out->on = 1;
    out->config_differs = f->config_differs;
    out->lag_s = f->won && f->taken ? 0
                 : f->refreshed > 0 ? pfi_wall_monotonic() - f->refreshed
                                    : NAN;
    out->elections_won = f->elections_won;
    out->fences = f->fences;
    pthread_mutex_unlock(&f->mu);
    out->nospace = atomic_load(&f->nospace);
}

int ctl_failover_handover(ctl *c, char *why, size_t n)
{
    ctl_failover *f = c->fo;
    if (!f || !ctl_failover_leads(c)) {
        snprintf(why, n, "this controller does not lead%s", f ? "" : " (no failover configured)");
        return -1;
    }
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(f->kv, "members/", 0, &a, &err)) {
        snprintf(why, n, "%s", err.msg);
        return -1;
    }
    char standby[64] = "";
    for (size_t i = 0; i < a.nkvs && !standby[0]; i++)
        if (strcmp(a.kvs[i].value, c->cfg.fo.name))
            snprintf(standby, sizeof standby, "%s", a.kvs[i].value);
    pfi_etcd_answer_free(&a);
    if (!standby[0]) {
        snprintf(why, n, "no standby controller is warm: nobody would take over");
        return -1;
    }
    ctl_failover_resign(c, "handover asked: a standby takes over");
    snprintf(why, n, "%s", standby);
    return 0;
}
