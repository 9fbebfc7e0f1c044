/* vtn_client.h — a VEN's conversation with an OpenADR 3 VTN (3.0.1 or
 * 3.1.1; docs/controller.md "OpenADR 3: the VTN"), as pfi-controller holds
 * it:
 *
 *   token         OAuth2 client credentials: POST grant_type=client_credentials
 *                 with client_id and client_secret form-encoded in the body
 *                 (the spec's clientCredentialRequest) to the token endpoint
 *                 (configured, else GET {vtn}/auth/server's tokenURL, which
 *                 must be https when the VTN is); the client secret and
 *                 the bearer token go over plain http only to loopback
 *                 unless allow_insecure_http (pfi_url_secret_ok: the
 *                 configuration's rule, also for a token URL the VTN
 *                 names); the
 *                 token is kept and fetched again before it expires
 *                 (expires_in: a number, or a string of digits as some
 *                 VTNs send it, counted); a 401 from any request fetches a new token
 *                 once and retries that request once.
 *   registration  GET /vens?venName=NAME; POST /vens when no VEN of that
 *                 name is listed; the VEN's id is kept (403/409 to the
 *                 POST: see pfi_vtn_register).
 *   subscription  GET /subscriptions?clientName=NAME; POST /subscriptions
 *                 (EVENT: CREATE, UPDATE, DELETE to the callback URL with the
 *                 VEN's own bearer token) when none has our callback URL.
 *   events        GET /events (programID, targets filters; pages of 50 with
 *                 skip and limit), the body as is.
 *
 * Every request to the VTN carries the bearer token. The transport is a
 * function (libcurl by default) so that tests can stand in for the VTN. */
#ifndef PFI_VTN_CLIENT_H
#define PFI_VTN_CLIENT_H

#include <stddef.h>

#include "agent_client.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_VTN_SECRET_MAX 4096 /* client id and secret: the spec's maxLength */

typedef pfi_status (*pfi_vtn_send_fn)(void *ud, const char *method, const char *url,
                                      const char *const *headers, const char *body,
                                      const char *content_type, double timeout_s, pfi_http_reply *r,
                                      pfi_error *err);
typedef double (*pfi_vtn_clock_fn)(void *ud); /* wall seconds, monotonic */

typedef struct pfi_vtn_cfg {
    const char *vtn_url;   /* base URL, e.g. https://vtn.example/openadr3/3.1.0 */
    int v301;              /* 1: 3.0.1's bodies; 0: 3.1's */
    const char *token_url; /* NULL or "": GET {vtn_url}/auth/server */
    const char *client_id; /* NULL: no OAuth2 (requests carry no token) */
    const char *client_secret;
    const char *ven_name;       /* registered (and the subscription's clientName) */
    const char *program_id;     /* NULL or "": all programs */
    const char *callback_url;   /* NULL or "": no subscription */
    const char *callback_token; /* the bearer token the VTN sends to callback_url */
    const char *const *targets; /* events filter, ntargets strings */
    size_t ntargets;
    const char *ca_file;     /* https trust anchors; NULL: the system's */
    int allow_insecure_http; /* secrets over plain http to a host other than loopback
                                (openadr.allow_insecure_http); 0: never (pfi_url_secret_ok) */
    double timeout_s;        /* per request; 0: 10 s */
    pfi_vtn_send_fn send;    /* NULL: libcurl (pfi_http_request_ex) */
    pfi_vtn_clock_fn clock;  /* NULL: pfi_wall_monotonic */
    void *ud;
} pfi_vtn_cfg;

typedef struct pfi_vtn {
    pfi_vtn_cfg cfg; /* strings as given: the caller keeps them alive */
    char token_url[2048];
    char *token;        /* malloc'd access token; NULL: none yet */
    double token_renew; /* clock time to fetch a new one (INFINITY: no expiry) */
    unsigned long token_fetches, retries_auth;
    unsigned long expires_in_strings; /* tokens whose expires_in came as a numeric string */
    char ven_id[129], subscription_id[129];
    /* registration found the VEN by listing every VEN (POST /vens 403/409):
       the venName the VTN's business logic gave it */
    int ven_listed;
    char ven_name_listed[129];
    /* the last answer of any request: its status (0: none) and Retry-After */
    long last_code;
    double last_retry_after_s;
} pfi_vtn;

void pfi_vtn_init(pfi_vtn *v, const pfi_vtn_cfg *cfg);
void pfi_vtn_dispose(pfi_vtn *v);

/* A valid access token (fetched when none is kept or it is due). */
pfi_status pfi_vtn_token(pfi_vtn *v, pfi_error *err);
/* method to {vtn_url}{path} (path with its query) with the bearer token and
 * an optional JSON body; a 401 fetches a new token once and retries once.
 * A non-2xx answer is in *r, not an error. */
pfi_status pfi_vtn_request(pfi_vtn *v, const char *method, const char *path, const char *body,
                           pfi_http_reply *r, pfi_error *err);
/* registration: v->ven_id. When POST /vens answers 403 or 409 (a VEN
 * object exists under a name the VTN's business logic chose, so the
 * venName filter found nothing), GET /vens without a filter: exactly one
 * VEN visible is ours (v->ven_listed, v->ven_name_listed); none or several
 * is PFI_ENOENT (the caller goes on without a VEN id) */
pfi_status pfi_vtn_register(pfi_vtn *v, pfi_error *err);
/* GET /notifiers: *webhook 1 when the VTN says WEBHOOK true */
pfi_status pfi_vtn_notifiers(pfi_vtn *v, int *webhook, pfi_error *err);
/* GET /vens/{v->ven_id}: the VEN object's targets (3.1: strings; the
 * business logic's grants, User Guide 8.13) into out[max][129]; *n how many */
pfi_status pfi_vtn_ven_targets(pfi_vtn *v, char (*out)[129], size_t max, size_t *n, pfi_error *err);
/* the subscription to EVENT operations: v->subscription_id (*created: 1 if
 * posted now, 0 if one was there) */
pfi_status pfi_vtn_subscribe(pfi_vtn *v, int *created, pfi_error *err);
#define PFI_VTN_PAGE 50 /* events per page: the spec's largest limit */
/* GET /events with the filters, limit=PFI_VTN_PAGE: *body (malloc'd) a JSON
 * array of EVENTs; _page: from the skip-th on (skip=N) */
pfi_status pfi_vtn_events(pfi_vtn *v, char **body, pfi_error *err);
pfi_status pfi_vtn_events_page(pfi_vtn *v, size_t skip, char **body, pfi_error *err);

/* text with every character outside [A-Za-z0-9-._~] as %XX, into out[n];
 * -1 if it does not fit */
int pfi_url_escape(const char *text, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
