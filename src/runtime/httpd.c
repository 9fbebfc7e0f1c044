/* httpd.c — the daemons' HTTP server (httpd.h): libmicrohttpd with a thread
 * pool, a per-address connection limit, and a request-deadline watchdog. */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "buf.h"
#include "clock.h"

/* One open connection, as the watchdog sees it. Linked in on
 * MHD_CONNECTION_NOTIFY_STARTED, unlinked on ..._CLOSED, which libmicrohttpd
 * calls before it closes the socket: while the watchdog holds cmu, every fd
 * in the list is still open (never a reused number). */
typedef struct conn {
    struct conn *prev, *next;
    int fd;
    double deadline_s; /* pfi_wall_monotonic(): the next request must have arrived by then */
    int shut;
} conn;

struct pfi_httpd {
    pfi_httpd_opts o;
    struct MHD_Daemon *d;
    char *cert, *key, *ca; /* MHD keeps pointers to them while it runs */
    pthread_mutex_t mu;
    unsigned long long c2, c4, c5;
    pthread_mutex_t cmu; /* conns, slow_closed, stop */
    pthread_cond_t cv;
    conn *conns;
    unsigned long long slow_closed;
    int stop;
    double log_last_s;
    unsigned long long log_quiet;
    pthread_t watchdog;
    int have_watchdog;
};

typedef struct upload {
    pfi_buf body;
    int too_big, answered;
    char who[64]; /* authorize's name for the caller */
} upload;

static upload ANSWERED = {.answered = 1};

int pfi_bearer_ok(const char *hdr, const char *token)
{
    if (!token || !hdr) return 0;
    static const char pre[] = "Bearer ";
    if (strncmp(hdr, pre, sizeof pre - 1)) return 0;
    const char *t = hdr + sizeof pre - 1;
    size_t lt = strlen(t), la = strlen(token), n = lt > la ? lt : la;
    unsigned char d = (unsigned char)(lt != la);
    for (size_t i = 0; i < n; i++) { /* every byte of the longer string is visited */
        unsigned char x = i < lt ? (unsigned char)t[i] : 0,
                      y = i < la ? (unsigned char)token[i] : 0;
        d |= (unsigned char)(x ^ y);
    }
    return d == 0;
}

void pfi_http_error(pfi_http_resp *rs, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:s}", "error", msg);
    rs->body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    rs->len = rs->body ? strlen(rs->body) : 0;
    rs->code = code;
    rs->ctype = "application/json";
}

static enum MHD_Result send_resp(pfi_httpd *h, struct MHD_Connection *c, pfi_http_resp *rs)
{
    if (!rs->body) pfi_http_error(rs, 500, "no answer");
    if (!rs->body) return MHD_NO;
    /* JSON answers end in a newline, for curl users */
    const char *ct = rs->ctype ? rs->ctype : "application/json";
    if (!strncmp(ct, "application/json", 16) && (rs->len == 0 || rs->body[rs->len - 1] != '\n')) {
        char *b = realloc(rs->body, rs->len + 2);
        if (b) rs->body = b, b[rs->len++] = '\n', b[rs->len] = '\0';
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(rs->len, rs->body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(rs->body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ct);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    /* no answer may run script or load anything unless it says what (the status page) */
    MHD_add_response_header(r, "Content-Security-Policy", rs->csp ? rs->csp : PFI_HTTP_CSP_NONE);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (rs->code == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (rs->allow) MHD_add_response_header(r, "Allow", rs->allow);
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)rs->code, r);
    MHD_destroy_response(r);
    /* answered: a kept-alive connection's next request gets a fresh deadline */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context) {
        pthread_mutex_lock(&h->cmu);
        ((conn *)ci->socket_context)->deadline_s = pfi_wall_monotonic() + h->o.request_timeout_s;
        pthread_mutex_unlock(&h->cmu);
    }
    pthread_mutex_lock(&h->mu);
    if (rs->code < 300) h->c2++;
    else if (rs->code < 500) h->c4++;
    else h->c5++;
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* mTLS: the peer sent a certificate and it verifies against the trusted CA
 * (MHD_OPTION_HTTPS_MEM_TRUST makes the server ask for one) */
static int client_cert_ok(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session) return 0;
    gnutls_session_t s = (gnutls_session_t)ci->tls_session;
    unsigned n = 0;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0) return 0;
    /* a chain to the configured CA, for client use: a certificate that CA
       issued for a server (extended key usage without clientAuth) is refused */
    gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID,
                                     (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
    unsigned status = 1;
    return gnutls_certificate_verify_peers(s, &purpose, 1, &status) == 0 && status == 0;
}

/* may this request go on? The daemon's authorize, else its tokens by
 * is_protected: 0 (who set), or 1 with the refusal in rs */
static int refused(pfi_httpd *h, const char *method, const char *url, const char *auth, char *who,
                   pfi_http_resp *rs)
{
    if (h->o.authorize) {
        char msg[512] = "";
        int code =
            h->o.authorize(h->o.ud, method, url, auth, who, sizeof ANSWERED.who, msg, sizeof msg);
        if (!code) return 0;
        pfi_http_error(rs, code, "%s", msg[0] ? msg : "refused");
        return 1;
    }
    int need = h->o.is_protected ? h->o.is_protected(h->o.ud, method, url) : PFI_HTTP_OPEN;
    if (need == PFI_HTTP_CONTROL && !pfi_bearer_ok(auth, h->o.token)) {
        pfi_http_error(rs, 401,
                       h->o.token ? "missing or wrong bearer token"
                                  : "no token is configured: this endpoint is disabled");
        return 1;
    }
    if (need == PFI_HTTP_WEBHOOK && !pfi_bearer_ok(auth, h->o.token) &&
        !pfi_bearer_ok(auth, h->o.webhook_token)) {
        pfi_http_error(rs, 401, "missing or wrong bearer token");
        return 1;
    }
    if (need == PFI_HTTP_READ && h->o.read_token && !pfi_bearer_ok(auth, h->o.read_token) &&
        !pfi_bearer_ok(auth, h->o.token)) {
        pfi_http_error(rs, 401, "missing or wrong bearer token (the read or the control token)");
        return 1;
    }
    return 0;
}

/* the daemon's on_refused for a 401, 403, 405 or 409 in rs */
static void tell_refused(pfi_httpd *h, const pfi_http_resp *rs, const char *method, const char *url,
                         const char *who)
{
    if (!h->o.on_refused ||
        !(rs->code == 401 || rs->code == 403 || rs->code == 405 || rs->code == 409))
        return;
    json_t *o = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(o, "error"));
    h->o.on_refused(h->o.ud, rs->code, method, url, who ? who : "", m ? m : "");
    json_decref(o);
}

static int takes_body(const char *m)
{
    return !strcmp(m, "PUT") || !strcmp(m, "POST") || !strcmp(m, "DELETE");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ctx)
{
    pfi_httpd *h = cls;
    (void)version;
    pfi_http_resp rs = {0};
    if (!*ctx) { /* headers only */
        if (h->ca && !client_cert_ok(c)) {
            *ctx = &ANSWERED;
            pfi_http_error(&rs, 403,
                           "a client certificate signed by the configured CA is required");
            return send_resp(h, c, &rs);
        }
        /* a method neither daemon serves is refused before any
           authorization (RFC 9110 15.5.6: 405 with Allow; method names
           are case-sensitive, so "get" is one of them), so no route can
           be reached with a method its scope rules do not know */
        if (strcmp(method, "GET") && strcmp(method, "HEAD") && !takes_body(method)) {
            *ctx = &ANSWERED;
            rs.allow = "GET, HEAD, POST, PUT, DELETE";
            pfi_http_error(&rs, 405, "method %.32s is not allowed", method);
            tell_refused(h, &rs, method, url, "");
            return send_resp(h, c, &rs);
        }
        const char *auth =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        char who[sizeof ANSWERED.who] = "";
        if (refused(h, method, url, auth, who, &rs)) {
            *ctx = &ANSWERED;
            tell_refused(h, &rs, method, url, "");
            return send_resp(h, c, &rs);
        }
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > h->o.max_body) {
            *ctx = &ANSWERED;
            pfi_http_error(&rs, 413, "request body over %zu bytes", h->o.max_body);
            return send_resp(h, c, &rs);
        }
        upload *u = calloc(1, sizeof *u);
        if (!u) return MHD_NO;
        memcpy(u->who, who, sizeof u->who);
        *ctx = u;
        return MHD_YES;
    }
    upload *u = *ctx;
    if (u->answered) {
        *size = 0;
        return MHD_YES;
    }
    if (*size) {
        if (!takes_body(method) || u->body.n + *size > h->o.max_body)
            u->too_big = takes_body(method);
        else if (pfi_buf_add(&u->body, data, *size)) return MHD_NO;
        *size = 0;
        return MHD_YES;
    }
    if (u->too_big) {
        pfi_http_error(&rs, 413, "request body over %zu bytes", h->o.max_body);
        return send_resp(h, c, &rs);
    }
    pfi_http_req rq = {method, url, u->body.p ? u->body.p : "", u->body.n, u->who, c};
    h->o.handle(h->o.ud, &rq, &rs);
    tell_refused(h, &rs, method, url, u->who);
    return send_resp(h, c, &rs);
}

const char *pfi_http_arg(const pfi_http_req *rq, const char *key)
{
    return rq->conn ? MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key) : NULL;
}

static void done(void *cls, struct MHD_Connection *c, void **ctx,
                 enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    upload *u = *ctx;
    if (u && u != &ANSWERED) {
        pfi_buf_dispose(&u->body);
        free(u);
    }
    *ctx = NULL;
}

static void notify(void *cls, struct MHD_Connection *c, void **socket_ctx,
                   enum MHD_ConnectionNotificationCode code)
{
    pfi_httpd *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn *k = ci ? calloc(1, sizeof *k) : NULL;
        *socket_ctx = k;
        if (!k) return;
        k->fd = ci->connect_fd;
        pthread_mutex_lock(&h->cmu);
        k->deadline_s = pfi_wall_monotonic() + h->o.request_timeout_s;
        k->next = h->conns;
        if (h->conns) h->conns->prev = k;
        h->conns = k;
        pthread_mutex_unlock(&h->cmu);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn *k = *socket_ctx;
        if (!k) return;
        pthread_mutex_lock(&h->cmu);
        if (k->prev) k->prev->next = k->next;
        else h->conns = k->next;
        if (k->next) k->next->prev = k->prev;
        pthread_mutex_unlock(&h->cmu);
        free(k);
        *socket_ctx = NULL;
    }
}

/* Shut down connections past their request deadline; libmicrohttpd then
 * sees the socket end and closes it. Does no other I/O. */
static void *watchdog(void *arg)
{
    pfi_httpd *h = arg;
    pthread_mutex_lock(&h->cmu);
    while (!h->stop) {
        double now = pfi_wall_monotonic();
        for (conn *k = h->conns; k; k = k->next)
            if (!k->shut && now > k->deadline_s) {
                shutdown(k->fd, SHUT_RDWR);
                k->shut = 1;
                h->slow_closed++;
            }
        /* the condition variable's deadline is a timespec on its own clock
           (CLOCK_MONOTONIC, set below), not seconds: read here, as it wants */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 200 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&h->cv, &h->cmu, &ts);
    }
    pthread_mutex_unlock(&h->cmu);
    return NULL;
}

static void (*g_log_fn)(const char *msg);

void pfi_httpd_log_to(void (*fn)(const char *msg))
{
    g_log_fn = fn;
}

/* libmicrohttpd's own messages, at most one line a second: a flood of
 * "connection limit" refusals under attack must not flood the log */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    pfi_httpd *h = cls;
    double now = pfi_wall_monotonic();
    pthread_mutex_lock(&h->cmu);
    int show = now - h->log_last_s >= 1.0;
    unsigned long long quiet = h->log_quiet;
    if (show) h->log_last_s = now, h->log_quiet = 0;
    else h->log_quiet++;
    pthread_mutex_unlock(&h->cmu);
    if (!show) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t k = strlen(msg);
    while (k && (msg[k - 1] == '\n' || msg[k - 1] == '\r')) msg[--k] = '\0';
    char line[600];
    if (quiet)
        snprintf(line, sizeof line, "httpd: %s (%llu similar messages suppressed)", msg, quiet);
    else snprintf(line, sizeof line, "httpd: %s", msg);
    if (g_log_fn) g_log_fn(line);
    else fprintf(stderr, "%s\n", line);
}

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

pfi_status pfi_listen_addr(const char *listen, struct sockaddr_in *sa, pfi_error *err)
{
    char host[256];
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    if (!colon)
        return pfi_errorf(err, PFI_EINVAL, "listen address %s: expected ADDRESS:PORT",
                          listen ? listen : "(none)");
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return pfi_errorf(err, PFI_EINVAL, "listen address %s: bad port", listen);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return pfi_errorf(err, PFI_EINVAL, "listen address %s: not an IPv4 address", host);
    return PFI_OK;
}

pfi_status pfi_httpd_start(const pfi_httpd_opts *o, pfi_httpd **out, int *port_out, pfi_error *err)
{
    struct sockaddr_in sa;
    pfi_status lrc = pfi_listen_addr(o->listen, &sa, err);
    if (lrc) return lrc;
    pfi_httpd *h = calloc(1, sizeof *h);
    if (!h) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    h->o = *o;
    h->log_last_s = -1e9;
    if (!(h->o.request_timeout_s > 0)) h->o.request_timeout_s = 10;
    unsigned threads = o->threads ? o->threads : 4, per_ip = o->max_per_ip ? o->max_per_ip : 16;
    unsigned max_conn = o->max_connections ? o->max_connections : 512u;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->cmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (o->tls_cert || o->tls_key) {
        if (!o->tls_cert || !o->tls_key || !(h->cert = slurp(o->tls_cert)) ||
            !(h->key = slurp(o->tls_key))) {
            free(h->cert);
            free(h->key);
            free(h);
            return pfi_errorf(err, PFI_EINVAL, "TLS needs both --tls-cert and --tls-key, readable");
        }
        flags |= MHD_USE_TLS;
    }
    if (o->tls_client_ca && (!h->cert || !(h->ca = slurp(o->tls_client_ca)))) {
        free(h->cert);
        free(h->key);
        free(h);
        return pfi_errorf(err, PFI_EINVAL,
                          "a client CA (%s) needs TLS (--tls-cert, --tls-key) and a readable file",
                          o->tls_client_ca);
    }
    if (threads < 1 || threads > 64 || max_conn < threads) {
        free(h->cert);
        free(h->key);
        free(h);
        return pfi_errorf(err, PFI_EINVAL, "HTTP server: %u threads for %u connections", threads,
                          max_conn);
    }
    /* MHD_OPTION_ARRAY: the TLS options only when TLS is on */
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &sa},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)done, h},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, h},
        {MHD_OPTION_CONNECTION_TIMEOUT, 10, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)max_conn, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip == PFI_HTTPD_PER_IP_OFF ? 0 : (intptr_t)per_ip,
         NULL}, /* 0: none */
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL},
        {h->cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, h->cert},
        {h->cert ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, h->key},
        {h->ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, h->ca},
        {MHD_OPTION_END, 0, NULL},
    };
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
                            MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!h->d) {
        pfi_status st =
            pfi_errorf(err, PFI_EIO, "cannot listen on %s: %s", o->listen, strerror(errno));
        free(h->cert);
        free(h->key);
        free(h->ca);
        free(h);
        return st;
    }
    if (pthread_create(&h->watchdog, NULL, watchdog, h) == 0) h->have_watchdog = 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port_out = info ? info->port : (int)ntohs(sa.sin_port);
    *out = h;
    return PFI_OK;
}

void pfi_httpd_stop(pfi_httpd *h)
{
    if (!h) return;
    if (h->have_watchdog) {
        pthread_mutex_lock(&h->cmu);
        h->stop = 1;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->cmu);
        pthread_join(h->watchdog, NULL);
    }
    MHD_stop_daemon(h->d);
    free(h->cert);
    free(h->key);
    free(h->ca);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->cmu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

unsigned long long pfi_httpd_slow_closed(pfi_httpd *h)
{
    pthread_mutex_lock(&h->cmu);
    unsigned long long n = h->slow_closed;
    pthread_mutex_unlock(&h->cmu);
    return n;
}

void pfi_httpd_counts(pfi_httpd *h, unsigned long long *c2, unsigned long long *c4,
                      unsigned long long *c5)
{
    pthread_mutex_lock(&h->mu);
    *c2 = h->c2, *c4 = h->c4, *c5 = h->c5;
    pthread_mutex_unlock(&h->mu);
}
