/* agent_client.h — talking to a node's pfi-agent over HTTP (libcurl), as
 * pfi sweep and pfi-controller do, and reading the bearer token file.
 *
 * The token file holds one line (the token, 16..256 printable characters);
 * it must be a regular file not readable or writable by group or others
 * (mode 0600 or stricter), else it is refused: a leaked token lets anyone
 * on the network set caps. */
#ifndef PFI_AGENT_CLIENT_H
#define PFI_AGENT_CLIENT_H

#include <stddef.h>

#include "caps_request.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_TOKEN_MAX 256

pfi_status pfi_token_read(const char *path, char *token, size_t n, pfi_error *err);
/* The same rules for a secret of min..max characters (e.g. an OAuth2
 * client id and secret, 1..4096: vtn_client.h). */
pfi_status pfi_secret_read(const char *path, size_t min, size_t max, char *token, size_t n,
                           pfi_error *err);

typedef struct pfi_http_reply {
    long code;  /* HTTP status, 0 when no answer */
    char *body; /* malloc'd, NUL-terminated */
    size_t len;
    double retry_after_s; /* Retry-After (RFC 9110 10.2.3: seconds or an HTTP date), 0: none */
} pfi_http_reply;
void pfi_http_reply_dispose(pfi_http_reply *r);

/* GET url + path (e.g. "/v1/node"); timeout in wall seconds. A non-2xx
 * answer is returned in *r, not an error; no answer is PFI_EIO. */
pfi_status pfi_agent_get(const char *url, const char *path, double timeout_s, pfi_http_reply *r,
                         pfi_error *err);
/* Any request (method GET/POST/PUT/DELETE) to url (full), with an optional
 * bearer token and JSON body. */
pfi_status pfi_http_request(const char *method, const char *url, const char *token,
                            const char *body, double timeout_s, pfi_http_reply *r, pfi_error *err);
/* The same, with ca_file (PEM) as the trust anchors of an https url
 * (NULL: the system's), as the pfi CLI talks to pfi-controller. */
pfi_status pfi_http_request_ca(const char *method, const char *url, const char *token,
                               const char *body, const char *ca_file, double timeout_s,
                               pfi_http_reply *r, pfi_error *err);
/* The same with any headers (a NULL-terminated list of "Name: value"
 * lines, or NULL) and the body's Content-Type (e.g. a form's
 * "application/x-www-form-urlencoded"), as the OpenADR VTN client
 * (vtn_client.h) talks to a VTN and its token endpoint. */
pfi_status pfi_http_request_ex(const char *method, const char *url, const char *const *headers,
                               const char *body, const char *content_type, const char *ca_file,
                               double timeout_s, pfi_http_reply *r, pfi_error *err);
/* 1 if url's host is loopback: 127.0.0.0/8, [::1], localhost or
 * *.localhost (RFC 6761 6.3; curl resolves them to loopback itself). The
 * authority runs from "://" to the first '/', '?' or '#'; a URL with user
 * information ('@') is never loopback (http://127.0.0.1@host/). */
int pfi_url_loopback(const char *url);
/* 1 if a secret (a bearer token, client credentials) may be sent to url:
 * https://, or http:// to loopback, or any http:// when allow_insecure_http
 * (written down by an operator: a configuration key or a command-line
 * option); 0 for plain http to another host and for any other scheme or
 * none (curl would guess http). The one rule of the controller's
 * configuration, the VTN client (token URLs a VTN names included) and the
 * CLI: docs/security.md, "Tokens on the wire". */
int pfi_url_secret_ok(const char *url, int allow_insecure_http);

/* PUT /v1/caps with the bearer token. */
pfi_status pfi_agent_put_caps(const char *url, const char *token, const pfi_caps_request *req,
                              double timeout_s, pfi_http_reply *r, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
