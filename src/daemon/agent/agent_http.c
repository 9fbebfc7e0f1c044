/* agent_http.c — pfi-agent's endpoints on the shared HTTP server (httpd.h):
 * GET /metrics, GET /v1/node, GET /v1/control (a controller's compact view of
 * /v1/node), GET /healthz, PUT /v1/caps (bearer token).
 * With --control-listen the control API (PUT /v1/caps, with the controller's
 * reads GET /v1/control and /v1/node, and GET /healthz) is served on a second
 * listener, with its own threads and connection budget, and the main
 * listener refuses PUT: scrapes and slow clients on the main port cannot
 * starve the controller's pushes, and a controller whose url names the
 * control port collects there too. Status codes and the
 * error body: docs/agent.md. */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "fast_trigger.h"
#include "httpd.h"

/* PUT /v1/caps needs the control token; /healthz is open; every other
 * read needs the read (or control) token when --read-token-file is given */
static int is_protected(void *ud, const char *method, const char *url)
{
    (void)ud;
    if (!strcmp(url, "/v1/caps") && !strcmp(method, "PUT")) return PFI_HTTP_CONTROL;
    if (!strcmp(url, "/healthz")) return PFI_HTTP_OPEN;
    return PFI_HTTP_READ;
}

static void handle_caps(agent *a, const pfi_http_req *rq, pfi_http_resp *rs)
{
    if (strcmp(rq->method, "PUT")) return pfi_http_error(rs, 405, "method not allowed (PUT)");
    if (a->cfg.read_only)
        return pfi_http_error(rs, 403, "this agent runs --read-only: no cap is ever set");
    pthread_mutex_lock(&a->mu);
    /* a fast trigger datagram sent before this PUT (held back, or retried by the network)
       must not undo it: the next one taken must be newer than now (agent_fast.c) */
    uint64_t now_us = pfi_ft_now_us();
    if (now_us > a->fast_last_seq) a->fast_last_seq = now_us;
    rs->code = agent_put_caps(a, rq->body, rq->len, &rs->body);
    pthread_mutex_unlock(&a->mu);
    if (!rs->body) return pfi_http_error(rs, 500, "out of memory");
    rs->len = strlen(rs->body);
}

/* the control listener: the control API and a health check, nothing else */
static int serve_read(agent *a, const pfi_http_req *rq, pfi_http_resp *rs);

/* the control listener: what a controller needs, and nothing a scraper
 * does — PUT /v1/caps, its reads of the node (GET /v1/control, /v1/node:
 * a controller whose url names this port collects here too) and /healthz */
static void handle_control(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    agent *a = ud;
    if (!strcmp(rq->url, "/v1/caps")) return handle_caps(a, rq, rs);
    if (strcmp(rq->url, "/metrics") && serve_read(a, rq, rs)) return;
    pfi_http_error(rs, 404,
                   "no such endpoint on the control listener (PUT /v1/caps, GET /v1/control, "
                   "GET /v1/node, GET /healthz)");
}

static void handle(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    agent *a = ud;
    if (serve_read(a, rq, rs)) return;
    if (!strcmp(rq->url, "/v1/caps")) {
        if (a->cfg.control_listen)
            return pfi_http_error(
                rs, 404, "the control API is served on the control listener (--control-listen)");
        return handle_caps(a, rq, rs);
    }
    pfi_http_error(
        rs, 404,
        "no such endpoint (GET /metrics, GET /v1/node, GET /v1/control, PUT /v1/caps, GET "
        "/healthz)");
}

/* the reads (GET /metrics, /v1/node, /v1/control, /healthz): 1 when rq was
 * one of them (answered), 0 otherwise */
static int serve_read(agent *a, const pfi_http_req *rq, pfi_http_resp *rs)
{
    int get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD");
    if (!strcmp(rq->url, "/metrics") || !strcmp(rq->url, "/v1/node") ||
        !strcmp(rq->url, "/v1/control") || !strcmp(rq->url, "/healthz")) {
        if (!get) return pfi_http_error(rs, 405, "method not allowed (GET)"), 1;
        pthread_mutex_lock(&a->mu);
        if (!strcmp(rq->url, "/metrics")) {
            rs->body = agent_render_metrics(a, &rs->len);
            rs->ctype = "text/plain; version=0.0.4; charset=utf-8";
        } else if (!strcmp(rq->url, "/v1/node")) {
            rs->body = agent_render_node(a);
            rs->len = rs->body ? strlen(rs->body) : 0;
        } else if (!strcmp(rq->url, "/v1/control")) {
            rs->body = agent_render_control(a);
            rs->len = rs->body ? strlen(rs->body) : 0;
        } else {
            rs->body = strdup("{\"ok\":true}");
            rs->len = rs->body ? strlen(rs->body) : 0;
        }
        pthread_mutex_unlock(&a->mu);
        rs->code = 200;
        if (!rs->body) pfi_http_error(rs, 500, "out of memory");
        return 1;
    }
    return 0;
}

int agent_http_start(agent *a)
{
    pfi_httpd_opts o = {.listen = a->cfg.listen ? a->cfg.listen : "127.0.0.1:9477",
                        .tls_cert = a->cfg.tls_cert,
                        .tls_key = a->cfg.tls_key,
                        .max_body = a->cfg.max_body,
                        .token = a->have_token ? a->token : NULL,
                        .is_protected = is_protected,
                        .read_token = a->have_read_token ? a->read_token : NULL,
                        .tls_client_ca = a->cfg.tls_client_ca,
                        .handle = handle,
                        .ud = a};
    pfi_error e;
    pfi_httpd *h;
    if (pfi_httpd_start(&o, &h, &a->port, &e)) {
        agent_log(a, "error: %s", e.msg);
        return -1;
    }
    a->httpd = h;
    agent_log(a, "listening on %s://%s (port %d)", a->cfg.tls_cert ? "https" : "http", o.listen,
              a->port);
    if (a->cfg.control_listen) {
        o.listen = a->cfg.control_listen;
        o.handle = handle_control;
        o.threads = 2;
        o.max_connections = 64;
        if (pfi_httpd_start(&o, &a->control_httpd, &a->control_port, &e)) {
            agent_log(a, "error: --control-listen: %s", e.msg);
            return -1;
        }
        agent_log(a, "control API on %s://%s (port %d)", a->cfg.tls_cert ? "https" : "http",
                  o.listen, a->control_port);
    }
    return 0;
}

void agent_http_stop(agent *a)
{
    pfi_httpd_stop(a->control_httpd);
    a->control_httpd = NULL;
    pfi_httpd_stop(a->httpd);
    a->httpd = NULL;
}
