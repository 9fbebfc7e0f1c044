/* agent_http.c — pfi-agent's HTTP server (libmicrohttpd, one internal
 * polling thread): GET /metrics, GET /v1/node, PUT /v1/caps, GET /healthz.
 *
 * PUT /v1/caps needs "Authorization: Bearer TOKEN" (compared in constant
 * time). Bodies over --max-body bytes get 413 (a Content-Length above it is
 * refused before reading); bad JSON 400; a wrong or missing token 401;
 * unknown paths 404; other methods 405; lease conflicts 409; caps that no
 * device accepts 422. Every error answer is {"error": "..."} and changes
 * nothing. TLS with --tls-cert/--tls-key. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent.h"

typedef struct upload {
    char *p;
    size_t n;
    int too_big;
} upload;

static int token_ok(const agent *a, const char *hdr)
{
    if (!a->have_token || !hdr) return 0;
    static const char pre[] = "Bearer ";
    if (strncmp(hdr, pre, sizeof pre - 1)) return 0;
    const char *t = hdr + sizeof pre - 1;
    size_t lt = strlen(t), la = strlen(a->token);
    /* constant time in the token's content: every byte of the longer string is visited */
    size_t n = lt > la ? lt : la;
    unsigned char d = (unsigned char)(lt != la);
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < lt ? (unsigned char)t[i] : 0, y = i < la ? (unsigned char)a->token[i] : 0;
        d |= (unsigned char)(x ^ y);
    }
    return d == 0;
}

static enum MHD_Result reply(agent *a, struct MHD_Connection *c, unsigned code, const char *ctype, char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (code == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    pthread_mutex_lock(&a->mu);
    if (code < 300) a->req_2xx++;
    else if (code < 500) a->req_4xx++;
    else a->req_5xx++;
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static enum MHD_Result error(agent *a, struct MHD_Connection *c, unsigned code, const char *msg)
{
    /* msg is ours: plain ASCII without quotes or backslashes, except a JSON-escaped detail */
    size_t n = strlen(msg) * 2 + 32;
    char *b = malloc(n), *q = b;
    if (!b) return MHD_NO;
    q += sprintf(q, "{\"error\":\"");
    for (const char *s = msg; *s; s++) {
        if (*s == '"' || *s == '\\') *q++ = '\\';
        *q++ = (unsigned char)*s < 0x20 ? ' ' : *s;
    }
    q += sprintf(q, "\"}\n");
    return reply(a, c, code, "application/json", b, (size_t)(q - b));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                              const char *data, size_t *size, void **ctx)
{
    agent *a = cls;
    (void)version;
    int is_put = !strcmp(method, MHD_HTTP_METHOD_PUT), is_get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    if (!*ctx) {
        /* first call: headers only */
        if (is_put && !strcmp(url, "/v1/caps")) {
            const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
            if (cl && strtoull(cl, NULL, 10) > a->cfg.max_body) {
                *ctx = (void *)1; /* answered */
                char m[96];
                snprintf(m, sizeof m, "request body over %zu bytes", a->cfg.max_body);
                return error(a, c, 413, m);
            }
            if (!token_ok(a, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION))) {
                *ctx = (void *)1;
                return error(a, c, 401, a->have_token ? "missing or wrong bearer token" : "this agent has no token file: caps are read-only");
            }
            upload *u = calloc(1, sizeof *u);
            if (!u) return MHD_NO;
            *ctx = u;
            return MHD_YES;
        }
        *ctx = (void *)1;
        if (*size) return MHD_YES; /* a body on anything else: ignore it */
    }
    if (*ctx == (void *)1) {
        if (*size) {
            *size = 0;
            return MHD_YES;
        }
        if (!strcmp(url, "/metrics") || !strcmp(url, "/v1/node") || !strcmp(url, "/healthz")) {
            if (!is_get) return error(a, c, 405, "method not allowed (GET)");
            pthread_mutex_lock(&a->mu);
            size_t len = 0;
            char *body = NULL;
            const char *ctype = "application/json";
            if (!strcmp(url, "/metrics")) {
                body = agent_render_metrics(a, &len);
                ctype = "text/plain; version=0.0.4; charset=utf-8";
            } else if (!strcmp(url, "/v1/node")) {
                body = agent_render_node(a);
                len = body ? strlen(body) : 0;
            } else {
                body = strdup("{\"ok\":true}\n");
                len = body ? strlen(body) : 0;
            }
            pthread_mutex_unlock(&a->mu);
            if (!body) return error(a, c, 500, "out of memory");
            return reply(a, c, 200, ctype, body, len);
        }
        if (!strcmp(url, "/v1/caps")) return error(a, c, 405, "method not allowed (PUT)");
        return error(a, c, 404, "no such endpoint (GET /metrics, GET /v1/node, PUT /v1/caps, GET /healthz)");
    }
    upload *u = *ctx;
    if (*size) {
        if (u->n + *size > a->cfg.max_body) u->too_big = 1;
        else {
            char *p = realloc(u->p, u->n + *size + 1);
            if (!p) return MHD_NO;
            memcpy(p + u->n, data, *size);
            u->p = p;
            u->n += *size;
        }
        *size = 0;
        return MHD_YES;
    }
    if (u->too_big) {
        char m[96];
        snprintf(m, sizeof m, "request body over %zu bytes", a->cfg.max_body);
        return error(a, c, 413, m);
    }
    char *resp = NULL;
    pthread_mutex_lock(&a->mu);
    int code = agent_put_caps(a, u->p ? u->p : "", u->n, &resp);
    pthread_mutex_unlock(&a->mu);
    if (!resp) return error(a, c, 500, "out of memory");
    size_t len = strlen(resp);
    char *r2 = realloc(resp, len + 2);
    if (r2) resp = r2, resp[len++] = '\n', resp[len] = '\0';
    return reply(a, c, (unsigned)code, "application/json", resp, len);
}

static void done(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    if (*ctx && *ctx != (void *)1) {
        upload *u = *ctx;
        free(u->p);
        free(u);
    }
    *ctx = NULL;
}

static char *tls_cert_pem, *tls_key_pem; /* MHD keeps pointers to them while it runs */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc(1 << 20);
    size_t k = b ? fread(b, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (b) b[k] = '\0';
    return b;
}

int agent_http_start(agent *a)
{
    char host[256] = "127.0.0.1";
    int port = 9477;
    if (a->cfg.listen) {
        const char *colon = strrchr(a->cfg.listen, ':');
        if (!colon) {
            agent_log(a, "error: --listen %s: expected ADDRESS:PORT", a->cfg.listen);
            return -1;
        }
        snprintf(host, sizeof host, "%.*s", (int)(colon - a->cfg.listen), a->cfg.listen);
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || p < 0 || p > 65535) {
            agent_log(a, "error: --listen %s: bad port", a->cfg.listen);
            return -1;
        }
        port = (int)p;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        agent_log(a, "error: --listen %s: not an IPv4 address", host);
        return -1;
    }
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    char *cert = NULL, *key = NULL;
    if (a->cfg.tls_cert || a->cfg.tls_key) {
        if (!a->cfg.tls_cert || !a->cfg.tls_key || !(cert = slurp(a->cfg.tls_cert)) || !(key = slurp(a->cfg.tls_key))) {
            agent_log(a, "error: TLS needs both --tls-cert and --tls-key, readable");
            free(cert);
            free(key);
            return -1;
        }
        flags |= MHD_USE_TLS;
    }
    struct MHD_Daemon *d;
    if (cert)
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                             MHD_OPTION_NOTIFY_COMPLETED, done, a, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned)512, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY,
                             key, MHD_OPTION_END);
    else
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                             MHD_OPTION_NOTIFY_COMPLETED, done, a, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned)512, MHD_OPTION_END);
    int tls = cert != NULL;
    if (!d) {
        free(cert);
        free(key);
        agent_log(a, "error: cannot listen on %s:%d: %s", host, port, strerror(errno));
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    a->port = info ? info->port : port;
    a->httpd = d;
    tls_cert_pem = cert;
    tls_key_pem = key;
    agent_log(a, "listening on %s://%s:%d", tls ? "https" : "http", host, a->port);
    return 0;
}

void agent_http_stop(agent *a)
{
    if (a->httpd) MHD_stop_daemon(a->httpd);
    a->httpd = NULL;
    free(tls_cert_pem);
    free(tls_key_pem);
    tls_cert_pem = tls_key_pem = NULL;
}
