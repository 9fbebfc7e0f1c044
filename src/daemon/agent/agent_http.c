/* agent_http.c — pfi-agent's endpoints on the shared HTTP server (httpd.h):
 * GET /metrics, GET /v1/node, GET /healthz, PUT /v1/caps (bearer token).
 * Status codes and the error body: docs/agent.md. */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "pfi/httpd.h"

static int is_protected(void *ud, const char *method, const char *url)
{
    (void)ud;
    return !strcmp(url, "/v1/caps") && !strcmp(method, "PUT");
}

static void handle(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    agent *a = ud;
    int get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD");
    if (!strcmp(rq->url, "/metrics") || !strcmp(rq->url, "/v1/node") || !strcmp(rq->url, "/healthz")) {
        if (!get) return pfi_http_error(rs, 405, "method not allowed (GET)");
        pthread_mutex_lock(&a->mu);
        if (!strcmp(rq->url, "/metrics")) {
            rs->body = agent_render_metrics(a, &rs->len);
            rs->ctype = "text/plain; version=0.0.4; charset=utf-8";
        } else if (!strcmp(rq->url, "/v1/node")) {
            rs->body = agent_render_node(a);
            rs->len = rs->body ? strlen(rs->body) : 0;
        } else {
            rs->body = strdup("{\"ok\":true}");
            rs->len = rs->body ? strlen(rs->body) : 0;
        }
        pthread_mutex_unlock(&a->mu);
        rs->code = 200;
        if (!rs->body) pfi_http_error(rs, 500, "out of memory");
        return;
    }
    if (!strcmp(rq->url, "/v1/caps")) {
        if (strcmp(rq->method, "PUT")) return pfi_http_error(rs, 405, "method not allowed (PUT)");
        pthread_mutex_lock(&a->mu);
        rs->code = agent_put_caps(a, rq->body, rq->len, &rs->body);
        pthread_mutex_unlock(&a->mu);
        if (!rs->body) return pfi_http_error(rs, 500, "out of memory");
        rs->len = strlen(rs->body);
        return;
    }
    pfi_http_error(rs, 404, "no such endpoint (GET /metrics, GET /v1/node, PUT /v1/caps, GET /healthz)");
}

int agent_http_start(agent *a)
{
    pfi_httpd_opts o = {.listen = a->cfg.listen ? a->cfg.listen : "127.0.0.1:9477", .tls_cert = a->cfg.tls_cert, .tls_key = a->cfg.tls_key,
                        .max_body = a->cfg.max_body, .token = a->have_token ? a->token : NULL, .is_protected = is_protected,
                        .handle = handle, .ud = a};
    pfi_error e;
    pfi_httpd *h;
    if (pfi_httpd_start(&o, &h, &a->port, &e)) {
        agent_log(a, "error: %s", e.msg);
        return -1;
    }
    a->httpd = h;
    agent_log(a, "listening on %s://%s (port %d)", a->cfg.tls_cert ? "https" : "http", o.listen, a->port);
    return 0;
}

void agent_http_stop(agent *a)
{
    pfi_httpd_stop(a->httpd);
    a->httpd = NULL;
}
