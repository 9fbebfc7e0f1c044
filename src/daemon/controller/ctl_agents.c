/* ctl_agents.c — the controller's side of the agents: every control period
 * GET /v1/node from all agents at once, and PUT /v1/caps to those whose
 * caps change, with libcurl's multi interface (one kept-alive connection
 * per agent, all transfers in parallel: a period's cost does not grow with
 * the slowest agent times the number of agents). Called without the lock;
 * results are stored under it.
 *
 * Lease generations are kept per agent (ctl_agent.generation, persisted):
 * what one agent answers never changes what is sent to another. An agent
 * whose generation_max is above ours (a restart, another writer) is
 * continued above it; a 409 moves that agent one above what it reported; a
 * 400 about the generation (ours is too far ahead: the agent's state was
 * reset) is an alarm, counted in /metrics, and that agent's count restarts
 * one above its generation_max; so is an agent whose generation_max is out
 * of every controller's reach (2^53, persisted before the agents' bound). */
#include <curl/curl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "caps_request.h"
#include "clock.h"
#include "ctl.h"
#include "vec.h"

/* an agent's answer: at most 64 MiB */
#define XFER_MAX_BYTES ((64u << 20) - 1)

typedef struct xfer {
    CURL *h;
    pfi_buf buf; /* the answer */
    struct curl_slist *hdr;
    char *body;
} xfer;

static xfer *g_get, *g_put;
static CURLM *g_multi;
static size_t g_n;

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    xfer *x = ud;
    size_t k = sz * nm;
    return pfi_buf_add(&x->buf, p, k) ? 0 : k; /* too large or out of memory: the transfer fails */
}

static void xfer_init(xfer *x)
{
    memset(x, 0, sizeof *x);
    x->buf.max = XFER_MAX_BYTES;
    x->h = curl_easy_init();
}

/* transfers for n agents; -1 (logged) when out of memory */
static int ensure(ctl *c, size_t n)
{
    if (g_n >= n) return 0;
    if (!g_multi && (g_multi = curl_multi_init())) {
        curl_multi_setopt(g_multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
        curl_multi_setopt(g_multi, CURLMOPT_MAXCONNECTS, (long)(n + 16));
    }
    int bad = !g_multi || PFI_VEC_RESIZE(g_get, n, NULL) || PFI_VEC_RESIZE(g_put, n, NULL);
    for (; !bad && g_n < n; g_n++) {
        xfer_init(&g_get[g_n]);
        xfer_init(&g_put[g_n]);
        if (!g_get[g_n].h || !g_put[g_n].h) {
            curl_easy_cleanup(g_get[g_n].h);
            curl_easy_cleanup(g_put[g_n].h);
            bad = 1;
            break;
        }
    }
    if (bad)
        ctl_log(
            c,
            "error: out of memory for the transfers to %zu agents; skipping this period's requests",
            n);
    return bad ? -1 : 0;
}

/* run the transfers added to the multi handle until all are done */
static void run_all(double timeout_s)
{
    int running = 1;
    double t0 = pfi_wall_monotonic();
    while (running) {
        curl_multi_perform(g_multi, &running);
        if (!running) break;
        if (pfi_wall_monotonic() - t0 > timeout_s + 1) break;
        curl_multi_poll(g_multi, NULL, 0, 50, NULL);
    }
}

/* TLS to an agent: its CA (else the system's) and our client certificate (mTLS) */
static void tls_opts(CURL *h, const ctl_agent *a)
{
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (a->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, a->ca_file);
    if (a->client_cert) curl_easy_setopt(h, CURLOPT_SSLCERT, a->client_cert);
    if (a->client_key) curl_easy_setopt(h, CURLOPT_SSLKEY, a->client_key);
}

void ctl_agents_collect(ctl *c, double timeout_s)
{
    if (ensure(c, c->nagents)) return;
    for (size_t i = 0; i < c->nagents; i++) {
        xfer *x = &g_get[i];
        char url[600];
        snprintf(url, sizeof url, "%s/v1/node", c->agent[i].url);
        pfi_buf_clear(&x->buf);
        curl_easy_setopt(x->h, CURLOPT_URL, url);
        curl_easy_setopt(x->h, CURLOPT_HTTPGET, 1L);
        tls_opts(x->h, &c->agent[i]);
        /* reads carry the read token when one is configured (never the control token) */
        curl_slist_free_all(x->hdr);
        x->hdr = NULL;
        if (c->agent[i].read_token[0]) {
            char auth[PFI_TOKEN_MAX + 32];
            snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->agent[i].read_token);
            x->hdr = curl_slist_append(NULL, auth);
        }
        curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
        curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
        curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_s * 1000));
        curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(x->h, CURLOPT_PRIVATE, (void *)(uintptr_t)i);
        curl_multi_add_handle(g_multi, x->h);
    }
    run_all(timeout_s);
    CURLcode res[CTL_MAX_AGENTS];
    for (size_t i = 0; i < c->nagents; i++) res[i] = CURLE_OPERATION_TIMEDOUT;
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(g_multi, &left)))
        if (m->msg == CURLMSG_DONE) {
            void *p;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &p);
            res[(uintptr_t)p] = m->data.result;
        }
    double now = pfi_clock_now();
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nagents; i++) {
        xfer *x = &g_get[i];
        curl_multi_remove_handle(g_multi, x->h);
        ctl_agent *a = &c->agent[i];
        long code = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        json_t *node =
            res[i] == CURLE_OK && code == 200 ? json_loadb(x->buf.p, x->buf.n, 0, NULL) : NULL;
        if (node && json_is_array(json_object_get(node, "gpus"))) {
            if (!a->up)
                ctl_log(c, "agent %s (%s) is %s", a->name, a->url, a->ever_up ? "back" : "up");
            json_decref(a->node);
            a->node = node;
            a->up = a->ever_up = 1;
            a->last_ok_t = now;
            a->err[0] = '\0';
        } else {
            json_decref(node);
            if (a->up)
                ctl_log(c, "warning: agent %s (%s) unreachable: %s", a->name, a->url,
                        res[i] == CURLE_OK ? "bad answer" : curl_easy_strerror(res[i]));
            snprintf(a->err, sizeof a->err, "%s",
                     res[i] == CURLE_OK ? "bad answer" : curl_easy_strerror(res[i]));
            a->up = 0;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

/* the agent's generation_max from its last /v1/node; -1 if unknown */
static long long agent_generation_max(const ctl_agent *a)
{
    json_t *g = a->node ? json_object_get(a->node, "generation_max") : NULL;
    return json_is_integer(g) && json_integer_value(g) >= 0 ? (long long)json_integer_value(g) : -1;
}

static void set_generation(ctl *c, ctl_agent *a, long long g, const char *why)
{
    if (g > PFI_CAPS_GENERATION_MAX) { /* an agent raised before the 2^20 bound existed */
        c->generation_rejects++;
        ctl_log(c,
                "ALARM: agent %s needs generation %lld, above %lld, which no agent accepts: reset "
                "its generation "
                "(\"Resetting an agent's generation\" in docs/agent.md)",
                a->name, g, PFI_CAPS_GENERATION_MAX);
        return;
    }
    if (g == a->generation || g < 0) return;
    ctl_log(c, "agent %s: generation %lld -> %lld (%s)", a->name, a->generation, g, why);
    a->generation = g;
    ctl_db_generation_set(c, a->name, g);
}

void ctl_agents_push(ctl *c, int release)
{
    if (ensure(c, c->nagents)) return;
    pthread_mutex_lock(&c->mu);
    size_t added = 0;
    char host[64] = "controller";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    for (size_t i = 0; i < c->nagents; i++) {
        ctl_agent *a = &c->agent[i];
        if (!a->up || (release && !a->pushed)) continue;
        pfi_caps_request rq;
        memset(&rq, 0, sizeof rq);
        rq.lease_s = release ? 1 : c->cfg.lease_s;
        snprintf(rq.controller, sizeof rq.controller, "pfi-controller@%.100s", host);
        long long gm = agent_generation_max(a);
        if (gm > a->generation) set_generation(c, a, gm + 1, "its generation_max is above ours");
        rq.generation = a->generation;
        for (size_t k = 0; !release && k < c->njobs && rq.njobs < PFI_CAPS_MAX_ENTRIES; k++) {
            ctl_job *j = &c->job[k];
            if (!j->seen || !j->reachable || !(j->alloc_cap_w > 0)) continue;
            for (int q = 0; q < j->nagent; q++)
                if (j->agent_idx[q] == (int)i) {
                    snprintf(rq.jobs[rq.njobs].job_id, sizeof rq.jobs[0].job_id, "%s", j->id);
                    rq.jobs[rq.njobs].index = -1;
                    rq.jobs[rq.njobs++].cap_w = j->alloc_cap_w;
                }
        }
        xfer *x = &g_put[i];
        free(x->body);
        x->body = pfi_caps_request_format(&rq);
        if (!x->body) continue;
        char url[600], auth[PFI_TOKEN_MAX + 32];
        snprintf(url, sizeof url, "%s/v1/caps", a->url);
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->token);
        curl_slist_free_all(x->hdr);
        x->hdr = curl_slist_append(NULL, auth);
        x->hdr = curl_slist_append(x->hdr, "Content-Type: application/json");
        pfi_buf_clear(&x->buf);
        curl_easy_setopt(x->h, CURLOPT_URL, url);
        tls_opts(x->h, a);
        curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, x->body);
        curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
        curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, 5000L);
        curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(x->h, CURLOPT_PRIVATE, (void *)(uintptr_t)i);
        curl_multi_add_handle(g_multi, x->h);
        added++;
    }
    double lease = c->cfg.lease_s;
    pthread_mutex_unlock(&c->mu);
    if (!added) return;
    run_all(5);
    CURLMsg *m;
    int left;
    pthread_mutex_lock(&c->mu);
    double now = pfi_clock_now();
    while ((m = curl_multi_info_read(g_multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        void *p;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &p);
        size_t i = (uintptr_t)p;
        ctl_agent *a = &c->agent[i];
        long code = 0;
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
        if (m->data.result == CURLE_OK && code == 200) {
            c->pushes++;
            a->pushed = !release;
            if (!release) a->lease_until = now + lease;
        } else {
            c->push_errors++;
            ctl_log(c, "warning: agent %s: PUT /v1/caps failed: %s %.200s", a->name,
                    m->data.result == CURLE_OK ? "HTTP" : curl_easy_strerror(m->data.result),
                    g_put[i].buf.p ? g_put[i].buf.p : "");
            long long gm = agent_generation_max(a);
            if (code == 409) {
                /* someone wrote a newer generation: continue above it, on this agent only */
                set_generation(c, a, (gm > a->generation ? gm : a->generation) + 1,
                               "409 from the agent");
            } else if (code == 400 && g_put[i].buf.p && strstr(g_put[i].buf.p, "generation")) {
                c->generation_rejects++;
                ctl_log(c,
                        "ALARM: agent %s rejected our generation %lld (its generation_max: %lld): "
                        "its lease state was reset or "
                        "is out of reach; see \"Resetting generations\" in docs/controller.md",
                        a->name, a->generation, gm);
                if (gm >= 0 && gm + 1 < a->generation)
                    set_generation(c, a, gm + 1, "continuing above the agent's generation_max");
            }
        }
        curl_multi_remove_handle(g_multi, m->easy_handle);
    }
    /* handles that never finished */
    for (size_t i = 0; i < c->nagents; i++) curl_multi_remove_handle(g_multi, g_put[i].h);
    pthread_mutex_unlock(&c->mu);
}
