/* httpd.h — the small HTTP server both daemons use (libmicrohttpd with a
 * pool of 4 threads, 512 connections and 16 per client address unless told,
 * 10 s idle timeout, optional TLS). Against slow clients (slowloris) a
 * watchdog shuts down every connection whose request has not fully arrived
 * within request_timeout_s of its start (or of the previous answer on a
 * kept-alive connection): libmicrohttpd 0.9.75 only has an idle timeout,
 * which a byte every few seconds keeps resetting. The daemon gives a
 * handler that sees whole requests (called from several threads: it must
 * lock what it shares); this layer does the rest that must be right
 * everywhere: bodies only on
 * PUT/POST/DELETE and at most max_body bytes (a larger Content-Length is
 * refused with 413 before reading), the bearer token checked in constant
 * time before a protected request's body is read (401; or the daemon's own
 * check, authorize, which may also answer 403 and names the caller to the
 * handler), errors as
 * {"error": "..."}, counters by status class, and a Content-Security-Policy
 * (nothing runs unless the answer allows it) and nosniff on every answer. */
#ifndef PFI_HTTPD_H
#define PFI_HTTPD_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_http_req {
    const char *method, *url;
    const char *body; /* NUL-terminated; len bytes */
    size_t len;
    const char *who; /* whom authorize named ("": nobody, or no authorize) */
    void *conn;      /* the server's connection (pfi_http_arg); NULL in tests */
} pfi_http_req;

/* the query argument key of the request, percent-decoded (NULL: absent) */
const char *pfi_http_arg(const pfi_http_req *rq, const char *key);

/* the Content-Security-Policy of every answer that sets none: nothing runs or loads */
#define PFI_HTTP_CSP_NONE                                                                          \
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

typedef struct pfi_http_resp {
    int code;
    const char *ctype; /* default application/json */
    const char *csp;   /* Content-Security-Policy; default PFI_HTTP_CSP_NONE */
    char *body;        /* malloc'd; the server frees it */
    size_t len;
    const char *allow; /* an Allow header (405; NULL: none) */
} pfi_http_resp;

typedef struct pfi_httpd_opts {
    const char *listen; /* ADDR:PORT (IPv4); port 0 picks one */
    const char *tls_cert, *tls_key;
    size_t max_body;
    unsigned max_connections;  /* 0: 512 */
    unsigned max_per_ip;       /* connections from one client address; 0: 16;
                                  PFI_HTTPD_PER_IP_OFF: no limit (a farm of fake
                                  agents on loopback, bench_controller) */
    double request_timeout_s;  /* a request must arrive within this; 0: 10 s */
    unsigned threads;          /* 0: 4 */
    const char *tls_client_ca; /* PEM CA file: every request must present a client
                                  certificate it signed (mTLS); needs TLS */
    const char *token;         /* control token; NULL: control requests get 401 */
    const char *read_token;    /* NULL: read requests are open */
    const char *webhook_token; /* PFI_HTTP_WEBHOOK: accepted besides the control token
                                  (e.g. the bearer token an OpenADR VTN was given) */
    /* what this request needs: PFI_HTTP_OPEN, PFI_HTTP_READ (the read or the
       control token, when a read token is configured), PFI_HTTP_CONTROL or
       PFI_HTTP_WEBHOOK (the control or the webhook token) */
    int (*is_protected)(void *ud, const char *method, const char *url);
    /* instead of the tokens and is_protected: the daemon decides, from the
       request line and the Authorization header's value (NULL: none), before
       the body is read. 0: go on, with who (who_n bytes) naming the caller
       for the handler (pfi_http_req.who); else the HTTP status to answer
       (401, 403) with the reason in msg (msg_n bytes). Called from several
       threads. */
    int (*authorize)(void *ud, const char *method, const char *url, const char *authorization,
                     char *who, size_t who_n, char *msg, size_t msg_n);
    void (*handle)(void *ud, const pfi_http_req *rq, pfi_http_resp *rs);
    /* optional: every answer 401, 403, 405 or 409, whoever gave it (the
       authorization, the method check, the handler), after it is decided:
       who "" when the caller is not known; msg the answer's error text.
       Called from several threads. */
    void (*on_refused)(void *ud, int code, const char *method, const char *url, const char *who,
                       const char *msg);
    void *ud;
} pfi_httpd_opts;

#define PFI_HTTPD_PER_IP_OFF 0xffffffffu

enum { PFI_HTTP_OPEN = 0, PFI_HTTP_CONTROL = 1, PFI_HTTP_READ = 2, PFI_HTTP_WEBHOOK = 3 };

typedef struct pfi_httpd pfi_httpd;

pfi_status pfi_httpd_start(const pfi_httpd_opts *o, pfi_httpd **out, int *port, pfi_error *err);
/* "ADDR:PORT" (an IPv4 address, port 0..65535) as the listeners take it, into *sa;
 * PFI_EINVAL naming what is wrong (the fast trigger socket uses it too) */
struct sockaddr_in;
pfi_status pfi_listen_addr(const char *listen, struct sockaddr_in *sa, pfi_error *err);
void pfi_httpd_stop(pfi_httpd *h);
/* Where libmicrohttpd's own messages go (at most one a second per server),
 * for the whole process: fn gets one line without a newline; NULL (the
 * default): "httpd: MESSAGE" on stderr. Set it before starting a server
 * (the daemons send them to their log). */
void pfi_httpd_log_to(void (*fn)(const char *msg));
/* counters: 2xx, 4xx, 5xx */
void pfi_httpd_counts(pfi_httpd *h, unsigned long long *c2, unsigned long long *c4,
                      unsigned long long *c5);
/* connections shut down because their request did not arrive in time */
unsigned long long pfi_httpd_slow_closed(pfi_httpd *h);

/* constant-time equality of a "Bearer TOKEN" header value with token */
int pfi_bearer_ok(const char *header, const char *token);
/* fill rs with {"error": msg} */
void pfi_http_error(pfi_http_resp *rs, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif
