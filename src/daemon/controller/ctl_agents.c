/* ctl_agents.c — the controller's side of the agents, the top of its
 * transfers (ctl_pool.h): every control period GET /v1/control (or
 * /v1/node) from all agents, by datagram where an agent answers them and
 * by HTTP otherwise, read into each agent's view (ctl_agents_collect); a
 * trigger's caps pushed at once, between periods too (ctl_agents_service,
 * ctl_agents_idle); the pool opened with the procs the transport calls
 * back. The parts below it: ctl_pool.c the transport (curl multi on one
 * epoll set, one kept-alive connection per agent, agent_concurrency
 * transfers in flight, each with its own deadline: an agent that misses it
 * is marked down and its caps left to its lease), ctl_agents_push.c the
 * writes (PUT /v1/caps, lease generations as stored), ctl_fast.c the
 * datagrams. Called without the lock; results are stored under it; only
 * the control loop's thread calls in here (a trigger from an HTTP handler
 * sets c->trigger_req and wakes the loop through the pool's eventfd). A
 * trigger cancels the period's PUTs that have not started (their caps
 * predate it). Issue 43 split this file (1,120 lines) along those parts. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "caps_request.h"
#include "clock.h"
#include "ctl.h"
#include "ctl_pool.h"
#include "fast_trigger.h"
#include "vec.h"

/* an agent's answer: at most 64 MiB */

int ctl_agents_open(ctl *c)
{
    ctl_pool *P = calloc(1, sizeof *P);
    if (!P) return -1;
    P->ep = P->wake_fd = P->ft_fd = -1;
    /* what the transport calls back (ctl_pool.h) */
    P->procs = (ctl_pool_procs){.put_done = ctl_push_done,
                                .put_result = ctl_push_result,
                                .take_trigger = ctl_push_take_trigger,
                                .ft_send = ctl_fast_send,
                                .ft_recv = ctl_fast_recv,
                                .ft_expire = ctl_fast_expire};
    c->io.pool = P;
    return 0;
}

/* Between periods (the control loop's thread): sleep on the epoll set
 * until wait_s wall seconds pass or something is due — the wake eventfd
 * (a trigger, an event that starts now, an OpenADR event: ctl_agents_wake),
 * a datagram, a kept-alive connection the agent closed (curl told at once:
 * a readable socket left alone would wake the loop again and again)
 * (ctl_pool_wait) — then a trigger's caps go out. Issue 43: the loop polled
 * every 2 ms between periods (about 470 wake-ups a second). */
void ctl_agents_idle(ctl *c, double wait_s)
{
    ctl_pool_wait(c, wait_s);
    ctl_agents_service(c);
}

void ctl_agents_service(ctl *c)
{
    ctl_pool *P = c->io.pool;
    if (ctl_pool_ensure(c, c->io.nagents) ||
        (!atomic_load(&c->trigger_req) && !P->pending[X_TRIGGER]))
        return;
    ctl_pool_run_until(c, X_TRIGGER);
}

/* each agent's way to its view this period: datagrams, or HTTP only after
 * 3 misses until the probe is due; client certificates: HTTPS only */
static void view_modes(ctl *c)
{
    double mono = pfi_wall_monotonic();
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *ag = &c->io.agent[i];
        /* HTTP only after 3 misses: one datagram again when the probe is due
           (answered: misses back to 0; missed: 3 again, next probe later) */
        if (ag->fast_misses >= 3 && ag->fast_probe_at > 0 && mono >= ag->fast_probe_at) {
            ag->fast_misses = 2;
            ag->fast_probe_at = mono + CTL_FAST_PROBE_S;
        }
        /* client certificates: a datagram carries none (the agent turns
           them off too and advertises no port; said once here) */
        if (!ctl_fast_allowed(c, ag) && ag->fast_port > 0 && !ag->fast_mtls_logged) {
            if (ag->client_cert)
                ctl_log(c,
                        "agent %s: client certificates in use: no fast trigger datagrams, HTTPS "
                        "only",
                        ag->name);
            else
                ctl_log(c,
                        "agent %s: https: no fast trigger datagrams (they are authenticated, not "
                        "encrypted); fast_path_cleartext: true allows them",
                        ag->name);

            ag->fast_mtls_logged = 1;
        }
    }
}

/* an agent without GET /v1/control (older than it): /v1/node from now on, at once */
static void views_again(ctl *c)
{
    ctl_pool *P = c->io.pool;
    size_t older = 0;
    for (size_t i = 0; i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        if (x->res != CURLE_OK || x->code != 404 || x->full_node || x->by_datagram) continue;
        char url[600];
        snprintf(url, sizeof url, "%s/v1/node", c->io.agent[i].url);
        curl_easy_setopt(x->h, CURLOPT_URL, url);
        x->full_node = 1;
        pthread_mutex_lock(&c->mu);
        ctl_log(c, "agent %s has no GET /v1/control (404): reading GET /v1/node",
                c->io.agent[i].name);
        pthread_mutex_unlock(&c->mu);
        ctl_pool_enqueue(x);
        older++;
    }
    if (older) ctl_pool_run_until(c, X_GET);
}

/* the parsed views into the agents (lock taken): up, back, unreachable */
static void take_views(ctl *c, json_t **node)
{
    ctl_pool *P = c->io.pool;
    double now = pfi_clock_now();
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        ctl_agent *a = &c->io.agent[i];
        json_t *nd = node ? node[i] : NULL;
        if (nd && json_is_array(json_object_get(nd, "gpus"))) {
            if (!a->up)
                ctl_log(c, "agent %s (%s) is %s", a->name, a->url, a->ever_up ? "back" : "up");
            json_decref(a->node);
            a->node = nd;
            /* where its fast trigger datagrams go: the address this GET reached */
            char *ip = NULL;
            struct in_addr in;
            json_t *fp = json_object_get(nd, "fast_trigger_port");
            if (!x->by_datagram) /* a view by datagram came from where we sent it */
                a->fast_ip = curl_easy_getinfo(x->h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip &&
                                     inet_pton(AF_INET, ip, &in) == 1
                                 ? in.s_addr
                                 : 0;
            a->fast_port =
                json_is_integer(fp) && json_integer_value(fp) > 0 && json_integer_value(fp) < 65536
                    ? (int)json_integer_value(fp)
                    : 0;
            a->up = a->ever_up = 1;
            a->last_ok_t = now;
            a->err[0] = '\0';
        } else {
            json_decref(nd);
            const char *why = x->res == CURLE_OK ? "bad answer" : curl_easy_strerror(x->res);
            if (a->up) ctl_log(c, "warning: agent %s (%s) unreachable: %s", a->name, a->url, why);
            snprintf(a->err, sizeof a->err, "%s", why);
            a->up = 0;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void ctl_agents_collect(ctl *c)
{
    ctl_pool *P = c->io.pool;
    if (ctl_pool_ensure(c, c->io.nagents)) return;
    ctl_fast_new_base(P);
    view_modes(c);
    for (size_t i = 0; i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        if (!x->set_up) {
            char url[600];
            snprintf(url, sizeof url, "%s/v1/control", c->io.agent[i].url);
            curl_easy_setopt(x->h, CURLOPT_URL, url);
            curl_easy_setopt(x->h, CURLOPT_HTTPGET, 1L);
            ctl_pool_tls(x->h, &c->io.agent[i]);
            /* reads carry the read token when one is configured (never the control token) */
            if (c->io.agent[i].read_token[0]) {
                char auth[PFI_TOKEN_MAX + 32];
                snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->io.agent[i].read_token);
                x->hdr = curl_slist_append(NULL, auth);
            }
            curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
            x->set_up = 1;
        }
        if (ctl_fast_view_usable(c, i)) ctl_fast_add(x);
        else ctl_pool_enqueue(x);
    }
    ctl_pool_run_until(c, X_GET);
    views_again(c);
    /* the answers parsed outside the lock */
    json_t **node = calloc(c->io.nagents + 1, sizeof *node);
    for (size_t i = 0; node && i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        node[i] =
            x->res == CURLE_OK && x->code == 200 ? json_loadb(x->buf.p, x->buf.n, 0, NULL) : NULL;
    }
    take_views(c, node);
    free(node);
}
