/* ctl_reach.c — publishing what each controller reaches, and the leader
 * resigning to a standby that reaches more agents (ctl_reach.h). */
#include "ctl_reach.h"

#include <curl/curl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl_failover.h"

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p, (void)ud;
    return size * n;
}

/* every agent's open GET /healthz at once, each within agent_timeout_s, all
   within within_s: how many answered 200 */
static size_t probe(ctl *c, double within_s)
{
    size_t n = c->io.nagents, up = 0;
    CURLM *m = curl_multi_init();
    CURL **h = calloc(n ? n : 1, sizeof *h);
    if (!m || !h) {
        free(h);
        if (m) curl_multi_cleanup(m);
        return 0;
    }
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)CTL_REACH_PARALLEL);
    long timeout_ms = (long)(1000 * c->cfg.agent_timeout_s);
    for (size_t i = 0; i < n; i++) {
        const ctl_agent *a = &c->io.agent[i];
        char url[600];
        snprintf(url, sizeof url, "%s/healthz", a->url);
        if (!(h[i] = curl_easy_init())) continue;
        curl_easy_setopt(h[i], CURLOPT_URL, url); /* copied by curl */
        curl_easy_setopt(h[i], CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h[i], CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(h[i], CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
        curl_easy_setopt(h[i], CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h[i], CURLOPT_WRITEFUNCTION, discard);
        if (a->ca_file) curl_easy_setopt(h[i], CURLOPT_CAINFO, a->ca_file);
        if (a->client_cert) curl_easy_setopt(h[i], CURLOPT_SSLCERT, a->client_cert);
        if (a->client_key) curl_easy_setopt(h[i], CURLOPT_SSLKEY, a->client_key);
        curl_multi_add_handle(m, h[i]);
    }
    double end = pfi_wall_monotonic() + within_s;
    int running = 1;
    while (running && pfi_wall_monotonic() < end) {
        if (curl_multi_perform(m, &running) != CURLM_OK) break;
        if (running) curl_multi_poll(m, NULL, 0, 50, NULL);
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
        long code = 0;
        if (msg->msg != CURLMSG_DONE || msg->data.result != CURLE_OK) continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
        up += code == 200;
    }
    for (size_t i = 0; i < n; i++)
        if (h[i]) {
            curl_multi_remove_handle(m, h[i]);
            curl_easy_cleanup(h[i]);
        }
    curl_multi_cleanup(m);
    free(h);
    return up;
}

/* PREFIX/reach/NAME = "REACHED TOTAL" under our lease; 0, or -1 */
static int publish(ctl *c, ctl_failover *f, size_t reached)
{
    pthread_mutex_lock(&f->mu);
    long long lease = f->lease;
    pthread_mutex_unlock(&f->mu);
    if (!lease) return -1;
    char key[96], value[48];
    snprintf(key, sizeof key, "reach/%s", c->cfg.fo.name);
    snprintf(value, sizeof value, "%zu %zu", reached, c->io.nagents);
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_put(f->kv, key, value, strlen(value), lease, &a, &err)) return -1;
    pfi_etcd_answer_free(&a);
    f->reach_published = reached;
    return 0;
}

/* an entry's "REACHED TOTAL": 0, or -1 */
static int entry(const pfi_etcd_kv *kv, size_t *reached, size_t *total)
{
    unsigned long long r, t;
    char extra;
    if (sscanf(kv->value, "%llu %llu%c", &r, &t, &extra) != 2 || r > t) return -1;
    *reached = (size_t)r, *total = (size_t)t;
    return 0;
}

/* how many more agents a standby must reach: one in a thousand, at least
   one (an agent that flaps is no reason to hand over; a rack of 32 lost
   out of 12,500 is) */
static size_t margin(size_t total)
{
    return total / 1000 > 1 ? total / 1000 : 1;
}

static void lead_turn(ctl *c, ctl_failover *f)
{
    pthread_mutex_lock(&c->mu);
    size_t up = 0;
    for (size_t i = 0; i < c->io.nagents; i++) up += c->io.agent[i].up != 0;
    pthread_mutex_unlock(&c->mu);
    if (up != f->reach_published) publish(c, f, up);
    if (++f->reach_turns_led <= 2) return; /* the agents' state is still the pull's */
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(f->kv, "reach/", 0, &a, &err)) return;
    const char *better = NULL;
    size_t best = up + margin(c->io.nagents) - 1; /* more by the margin */
    int fresh = 0; /* a follower's entry written since the previous read */
    for (size_t i = 0; i < a.nkvs; i++) {
        size_t r, t;
        const char *name = a.kvs[i].key + strlen("reach/");
        if (!strcmp(name, c->cfg.fo.name) || entry(&a.kvs[i], &r, &t) || t != c->io.nagents ||
            a.kvs[i].mod_revision <= f->reach_rev)
            continue;
        fresh = 1;
        if (r > best) best = r, better = name;
    }
    /* a turn without a new entry changes nothing (a follower's probe may
       take longer than a period); one that is not better starts again */
    if (up == c->io.nagents || (fresh && !better)) f->reach_outreached = 0;
    else if (better) f->reach_outreached++;
    f->reach_rev = a.revision;
    if (better && f->reach_outreached >= CTL_REACH_TURNS) {
        char why[200];
        snprintf(why, sizeof why, "%s reaches %zu of %zu agents, this controller %zu: it resigns",
                 better, best, c->io.nagents, up);
        ctl_failover_resign(c, why);
        f->reach_outreached = 0;
    }
    pfi_etcd_answer_free(&a);
}

static void follow_turn(ctl *c, ctl_failover *f)
{
    f->reach_turns_led = 0;
    f->reach_outreached = 0;
    f->reach_published = SIZE_MAX; /* as leader, it publishes at its first turn */
    char leader[64];
    ctl_failover_role(c, leader, sizeof leader);
    if (!leader[0]) return;
    char key[96];
    snprintf(key, sizeof key, "reach/%s", leader);
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_get(f->kv, key, &a, &err)) return;
    size_t r = 0, t = 0;
    int short_of_all = a.nkvs && !entry(&a.kvs[0], &r, &t) && r < t;
    pfi_etcd_answer_free(&a);
    if (short_of_all)
        publish(c, f, probe(c, fmax(c->cfg.agent_timeout_s, c->cfg.period_s / pfi_clock_scale())));
}

void ctl_reach_turn(ctl *c, int leading)
{
    ctl_failover *f = c->fo;
    if (!f) return;
    if (leading) lead_turn(c, f);
    else follow_turn(c, f);
}
