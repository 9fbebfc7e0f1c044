/* vtn_client.c — a VEN's conversation with an OpenADR 3 VTN: OAuth2 client
 * credentials, registration, subscription, events (vtn_client.h). */
#include "vtn_client.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "clock.h"

static pfi_status curl_send(void *ud, const char *method, const char *url,
                            const char *const *headers, const char *body, const char *content_type,
                            double timeout_s, pfi_http_reply *r, pfi_error *err)
{
    const char *ca = ud;
    return pfi_http_request_ex(method, url, headers, body, content_type, ca, timeout_s, r, err);
}

static double wall(void *ud)
{
    (void)ud;
    return pfi_wall_monotonic();
}

void pfi_vtn_init(pfi_vtn *v, const pfi_vtn_cfg *cfg)
{
    memset(v, 0, sizeof *v);
    v->cfg = *cfg;
    if (!v->cfg.send) {
        v->cfg.send = curl_send;
        v->cfg.ud = (void *)cfg->ca_file;
    }
    if (!v->cfg.clock) v->cfg.clock = wall;
    if (!(v->cfg.timeout_s > 0)) v->cfg.timeout_s = 10;
    if (cfg->token_url) snprintf(v->token_url, sizeof v->token_url, "%s", cfg->token_url);
    v->token_renew = -INFINITY;
}

void pfi_vtn_dispose(pfi_vtn *v)
{
    free(v->token);
    v->token = NULL;
}

int pfi_url_escape(const char *text, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        if (k + (plain ? 1 : 3) >= n) return -1;
        if (plain) out[k++] = (char)*p;
        else {
            out[k++] = '%';
            out[k++] = hex[*p >> 4];
            out[k++] = hex[*p & 15];
        }
    }
    if (k >= n) return -1;
    out[k] = '\0';
    return 0;
}

/* the token endpoint: configured, else the VTN's GET /auth/server */
static pfi_status discover(pfi_vtn *v, pfi_error *err)
{
    if (v->token_url[0]) return PFI_OK;
    char url[2048];
    snprintf(url, sizeof url, "%s/auth/server", v->cfg.vtn_url);
    const char *hdr[] = {"Accept: application/json", NULL};
    pfi_http_reply r;
    pfi_status st = v->cfg.send(v->cfg.ud, "GET", url, hdr, NULL, NULL, v->cfg.timeout_s, &r, err);
    if (st) return st;
    json_t *o = r.code == 200 ? json_loads(r.body, 0, NULL) : NULL;
    const char *t = json_string_value(json_object_get(o, "tokenURL"));
    if (!t || (strncmp(t, "https://", 8) && strncmp(t, "http://", 7)) ||
        strlen(t) >= sizeof v->token_url)
        st = pfi_errorf(err, PFI_EPARSE, "%s: HTTP %ld: no usable tokenURL", url, r.code);
    else if (!strncmp(v->cfg.vtn_url, "https://", 8) && strncmp(t, "https://", 8))
        /* the client secret would leave TLS because the answer said so */
        st = pfi_errorf(err, PFI_EPERM, "%s: tokenURL %.200s is not https like the VTN", url, t);
    else if (!pfi_url_secret_ok(t, v->cfg.allow_insecure_http))
        /* the configuration's rule for token_url, whoever names the URL */
        st = pfi_errorf(err, PFI_EPERM,
                        "%s: tokenURL %.200s: plain http to a non-loopback host would send the "
                        "client secret in cleartext (openadr.allow_insecure_http: false)",
                        url, t);
    else snprintf(v->token_url, sizeof v->token_url, "%s", t);
    json_decref(o);
    pfi_http_reply_dispose(&r);
    return st;
}

/* a token from the endpoint: printable, no spaces (it goes into a header) */
static int token_ok(const char *t)
{
    size_t n = strlen(t);
    if (n < 1 || n > PFI_VTN_SECRET_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f) return 0;
    return 1;
}

/* expires_in (RFC 6749 5.1: a number of seconds): a JSON number, or a
 * string of 1..9 digits as some token endpoints send it ("3599": issue 42,
 * seen against one VTN; counted when the token is taken); -1 otherwise */
static double expires_in(json_t *exp)
{
    if (json_is_number(exp)) return json_number_value(exp);
    const char *t = json_string_value(exp);
    size_t n = t ? strlen(t) : 0;
    if (!n || n > 9 || strspn(t, "0123456789") != n) return -1;
    return atof(t);
}

static pfi_status fetch_token(pfi_vtn *v, pfi_error *err)
{
    pfi_status st = discover(v, err);
    if (st) return st;
    if (!pfi_url_secret_ok(v->token_url, v->cfg.allow_insecure_http))
        return pfi_errorf(err, PFI_EPERM,
                          "token endpoint %.200s: plain http to a non-loopback host would send "
                          "the client secret in cleartext (openadr.allow_insecure_http: false)",
                          v->token_url);
    size_t n = 3 * (strlen(v->cfg.client_id) + strlen(v->cfg.client_secret)) + 128;
    char *form = malloc(n), *id = malloc(n), *secret = malloc(n);
    if (!form || !id || !secret) {
        free(form), free(id), free(secret);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    pfi_url_escape(v->cfg.client_id, id, n);
    pfi_url_escape(v->cfg.client_secret, secret, n);
    snprintf(form, n, "grant_type=client_credentials&client_id=%s&client_secret=%s", id, secret);
    memset(secret, 0, n);
    free(id), free(secret);
    const char *hdr[] = {"Accept: application/json", NULL};
    pfi_http_reply r;
    double t0 = v->cfg.clock(v->cfg.ud);
    st = v->cfg.send(v->cfg.ud, "POST", v->token_url, hdr, form,
                     "application/x-www-form-urlencoded", v->cfg.timeout_s, &r, err);
    memset(form, 0, strlen(form));
    free(form);
    v->last_code = st ? 0 : r.code;
    v->last_retry_after_s = st ? 0 : r.retry_after_s;
    if (st) return st;
    v->token_fetches++;
    json_t *o = r.code == 200 ? json_loads(r.body, 0, NULL) : NULL;
    const char *tok = json_string_value(json_object_get(o, "access_token"));
    const char *type = json_string_value(json_object_get(o, "token_type"));
    json_t *exp = json_object_get(o, "expires_in");
    if (r.code != 200)
        st = pfi_errorf(err, r.code == 400 || r.code == 401 ? PFI_EPERM : PFI_EIO,
                        "token endpoint %s: HTTP %ld", v->token_url, r.code);
    else if (!tok || !token_ok(tok))
        st = pfi_errorf(err, PFI_EPARSE, "token endpoint %s: no usable access_token", v->token_url);
    else if (type && strcasecmp(type, "Bearer"))
        st = pfi_errorf(err, PFI_EPARSE, "token endpoint %s: token_type %.32s, not Bearer",
                        v->token_url, type);
    else if (exp && !(expires_in(exp) > 0))
        st = pfi_errorf(err, PFI_EPARSE, "token endpoint %s: expires_in is not a positive number",
                        v->token_url);
    else {
        free(v->token);
        v->token = strdup(tok);
        if (!v->token) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        double e = exp ? expires_in(exp) : INFINITY;
        v->expires_in_strings += json_is_string(exp);
        /* ahead of the expiry: a tenth of its life, at most a minute */
        v->token_renew = t0 + e - fmin(60, 0.1 * e);
    }
    json_decref(o);
    pfi_http_reply_dispose(&r);
    return st;
}

pfi_status pfi_vtn_token(pfi_vtn *v, pfi_error *err)
{
    if (v->token && v->cfg.clock(v->cfg.ud) < v->token_renew) return PFI_OK;
    return fetch_token(v, err);
}

pfi_status pfi_vtn_request(pfi_vtn *v, const char *method, const char *path, const char *body,
                           pfi_http_reply *r, pfi_error *err)
{
    char url[4096];
    if ((size_t)snprintf(url, sizeof url, "%s%s", v->cfg.vtn_url, path) >= sizeof url)
        return pfi_errorf(err, PFI_ERANGE, "%s: URL too long", path);
    memset(r, 0, sizeof *r);
    for (int attempt = 0;; attempt++) {
        int oauth = v->cfg.client_id && v->cfg.client_id[0];
        /* the access token, and the callback token in a subscription */
        if (!pfi_url_secret_ok(url, v->cfg.allow_insecure_http))
            return pfi_errorf(err, PFI_EPERM,
                              "%.200s: plain http to a non-loopback host would send tokens in "
                              "cleartext (openadr.allow_insecure_http: false)",
                              v->cfg.vtn_url);
        unsigned long fetches = v->token_fetches;
        pfi_status st = oauth ? pfi_vtn_token(v, err) : PFI_OK;
        if (st) return st;
        int kept = v->token_fetches == fetches; /* sent a token fetched before this call */
        char *auth = NULL;
        const char *hdr[3] = {"Accept: application/json", NULL, NULL};
        if (oauth) {
            size_t n = strlen(v->token) + 32;
            if (!(auth = malloc(n))) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
            snprintf(auth, n, "Authorization: Bearer %s", v->token);
            hdr[1] = auth;
        }
        st = v->cfg.send(v->cfg.ud, method, url, hdr, body, body ? "application/json" : NULL,
                         v->cfg.timeout_s, r, err);
        free(auth);
        v->last_code = st ? 0 : r->code;
        v->last_retry_after_s = st ? 0 : r->retry_after_s;
        /* the token was revoked or expired early: one new token, one retry.
           RFC 6750 3.1 says 401 for an invalid or expired token; openleadr-rs
           answers 403 ("Invalid authentication token provided",
           openleadr-vtn/src/jwt.rs), so a 403 to a kept token is retried
           too (a 403 to a token just fetched is a real refusal) */
        if (st || !oauth || attempt || !(r->code == 401 || (r->code == 403 && kept))) return st;
        pfi_http_reply_dispose(r);
        free(v->token);
        v->token = NULL;
        v->retries_auth++;
    }
}

static pfi_status expect(const char *what, const pfi_http_reply *r, long lo, long hi,
                         pfi_error *err)
{
    if (r->code >= lo && r->code <= hi) return PFI_OK;
    char brief[160];
    snprintf(brief, sizeof brief, "%.150s", r->body ? r->body : "");
    for (char *p = brief; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return pfi_errorf(err, r->code == 401 || r->code == 403 ? PFI_EPERM : PFI_EIO,
                      "%s: HTTP %ld %s", what, r->code, brief);
}

/* the string id of o ("id"), when it is an objectID */
static int take_id(json_t *o, char *id, size_t n)
{
    const char *s = json_string_value(json_object_get(o, "id"));
    if (!s || !s[0] || strlen(s) >= n ||
        strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  "0123456789_-") != strlen(s))
        return 0;
    snprintf(id, n, "%s", s);
    return 1;
}

/* POST /vens refused (403: a VEN's token may not create one; 409: one
 * exists under another name; issue 42): the VEN object the business logic
 * made for this client, if it is the only one the VTN lets us see. The
 * 3.1.1 Definition ("Object Privacy"): a VEN sees only its own VEN object */
static pfi_status register_listed(pfi_vtn *v, pfi_error *err)
{
    pfi_http_reply r;
    pfi_status st = pfi_vtn_request(v, "GET", "/vens", NULL, &r, err);
    if (st || (st = expect("GET /vens", &r, 200, 200, err))) {
        pfi_http_reply_dispose(&r);
        return st;
    }
    json_t *a = json_loads(r.body, 0, NULL);
    pfi_http_reply_dispose(&r);
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    json_t *x = n == 1 ? json_array_get(a, 0) : NULL;
    const char *vn = json_string_value(json_object_get(x, "venName"));
    if (x && take_id(x, v->ven_id, sizeof v->ven_id)) {
        v->ven_listed = 1;
        snprintf(v->ven_name_listed, sizeof v->ven_name_listed, "%.128s", vn ? vn : "");
    } else
        st = pfi_errorf(err, PFI_ENOTFOUND,
                        "POST /vens refused and GET /vens lists %zu VEN%s: cannot tell which is "
                        "ours",
                        n, n == 1 ? " without a usable id" : "s");
    json_decref(a);
    return st;
}

pfi_status pfi_vtn_notifiers(pfi_vtn *v, int *webhook, pfi_error *err)
{
    *webhook = 0;
    pfi_http_reply r;
    pfi_status st = pfi_vtn_request(v, "GET", "/notifiers", NULL, &r, err);
    if (!st && !(st = expect("GET /notifiers", &r, 200, 200, err))) {
        json_t *o = json_loads(r.body, 0, NULL);
        *webhook = json_is_true(json_object_get(o, "WEBHOOK"));
        json_decref(o);
    }
    pfi_http_reply_dispose(&r);
    return st;
}

pfi_status pfi_vtn_ven_targets(pfi_vtn *v, char (*out)[129], size_t max, size_t *n, pfi_error *err)
{
    *n = 0;
    char path[16 + 3 * 128 + 1], esc[3 * 128 + 1];
    if (!v->ven_id[0] || pfi_url_escape(v->ven_id, esc, sizeof esc))
        return pfi_errorf(err, PFI_EINVAL, "no VEN id");
    snprintf(path, sizeof path, "/vens/%s", esc);
    pfi_http_reply r;
    pfi_status st = pfi_vtn_request(v, "GET", path, NULL, &r, err);
    if (!st && !(st = expect("GET /vens/{venID}", &r, 200, 200, err))) {
        json_t *o = json_loads(r.body, 0, NULL), *t;
        size_t i;
        json_array_foreach(json_object_get(o, "targets"), i, t)
        {
            const char *s = json_string_value(t); /* 3.1: a target is a string */
            if (s && s[0] && strlen(s) <= 128 && *n < max) snprintf(out[(*n)++], 129, "%s", s);
        }
        json_decref(o);
    }
    pfi_http_reply_dispose(&r);
    return st;
}

pfi_status pfi_vtn_register(pfi_vtn *v, pfi_error *err)
{
    char name[3 * 128 + 1], path[600];
    if (pfi_url_escape(v->cfg.ven_name, name, sizeof name))
        return pfi_errorf(err, PFI_EINVAL, "ven_name: longer than 128 characters");
    snprintf(path, sizeof path, "/vens?venName=%s", name);
    pfi_http_reply r;
    pfi_status st = pfi_vtn_request(v, "GET", path, NULL, &r, err);
    if (st || (st = expect("GET /vens", &r, 200, 200, err))) {
        pfi_http_reply_dispose(&r);
        return st;
    }
    json_t *a = json_loads(r.body, 0, NULL), *x;
    pfi_http_reply_dispose(&r);
    size_t i;
    v->ven_id[0] = '\0';
    json_array_foreach(json_is_array(a) ? a : NULL, i, x)
    {
        const char *vn = json_string_value(json_object_get(x, "venName"));
        if (vn && !strcmp(vn, v->cfg.ven_name) && take_id(x, v->ven_id, sizeof v->ven_id)) break;
    }
    json_decref(a);
    if (v->ven_id[0]) return PFI_OK;
    json_t *req = json_pack("{s:s,s:s}", "objectType", v->cfg.v301 ? "VEN" : "VEN_VEN_REQUEST",
                            "venName", v->cfg.ven_name);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    st = pfi_vtn_request(v, "POST", "/vens", body, &r, err);
    free(body);
    if (!st && (r.code == 403 || r.code == 409)) {
        pfi_http_reply_dispose(&r);
        return register_listed(v, err);
    }
    if (!st && !(st = expect("POST /vens", &r, 200, 201, err))) {
        json_t *o = json_loads(r.body, 0, NULL);
        if (!take_id(o, v->ven_id, sizeof v->ven_id))
            st = pfi_errorf(err, PFI_EPARSE, "POST /vens: the answer has no VEN id");
        json_decref(o);
    }
    pfi_http_reply_dispose(&r);
    return st;
}

/* 1 if subscription s sends to our callback URL */
static int ours(const pfi_vtn *v, json_t *s)
{
    size_t i;
    json_t *op;
    json_array_foreach(json_object_get(s, "objectOperations"), i, op)
    {
        const char *u = json_string_value(json_object_get(op, "callbackUrl"));
        if (u && !strcmp(u, v->cfg.callback_url)) return 1;
    }
    return 0;
}

pfi_status pfi_vtn_subscribe(pfi_vtn *v, int *created, pfi_error *err)
{
    *created = 0;
    char name[3 * 128 + 1], prog[3 * 128 + 1] = "", path[1000];
    if (pfi_url_escape(v->cfg.ven_name, name, sizeof name) ||
        (v->cfg.program_id && pfi_url_escape(v->cfg.program_id, prog, sizeof prog)))
        return pfi_errorf(err, PFI_EINVAL, "ven_name, program_id: at most 128 characters");
    snprintf(path, sizeof path, "/subscriptions?clientName=%s%s%s", name,
             prog[0] ? "&programID=" : "", prog);
    pfi_http_reply r;
    pfi_status st = pfi_vtn_request(v, "GET", path, NULL, &r, err);
    if (st || (st = expect("GET /subscriptions", &r, 200, 200, err))) {
        pfi_http_reply_dispose(&r);
        return st;
    }
    json_t *a = json_loads(r.body, 0, NULL), *x;
    pfi_http_reply_dispose(&r);
    size_t i;
    v->subscription_id[0] = '\0';
    json_array_foreach(json_is_array(a) ? a : NULL, i, x)
    {
        const char *cn = json_string_value(json_object_get(x, "clientName"));
        if (cn && !strcmp(cn, v->cfg.ven_name) && ours(v, x) &&
            take_id(x, v->subscription_id, sizeof v->subscription_id))
            break;
    }
    json_decref(a);
    if (v->subscription_id[0]) return PFI_OK;
    json_t *req = json_pack("{s:s,s:[{s:[s],s:[s,s,s],s:s,s:s}]}", "clientName", v->cfg.ven_name,
                            "objectOperations", "objects", "EVENT", "operations", "CREATE",
                            "UPDATE", "DELETE", "callbackUrl", v->cfg.callback_url, "bearerToken",
                            v->cfg.callback_token ? v->cfg.callback_token : "");
    if (req && v->cfg.program_id && v->cfg.program_id[0])
        json_object_set_new(req, "programID", json_string(v->cfg.program_id));
    if (req && v->cfg.v301) json_object_set_new(req, "objectType", json_string("SUBSCRIPTION"));
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    st = pfi_vtn_request(v, "POST", "/subscriptions", body, &r, err);
    free(body);
    if (!st && !(st = expect("POST /subscriptions", &r, 200, 201, err))) {
        json_t *o = json_loads(r.body, 0, NULL);
        if (!take_id(o, v->subscription_id, sizeof v->subscription_id))
            st = pfi_errorf(err, PFI_EPARSE, "POST /subscriptions: the answer has no id");
        else *created = 1;
        json_decref(o);
    }
    pfi_http_reply_dispose(&r);
    return st;
}

pfi_status pfi_vtn_events(pfi_vtn *v, char **body, pfi_error *err)
{
    return pfi_vtn_events_page(v, 0, body, err);
}

pfi_status pfi_vtn_events_page(pfi_vtn *v, size_t skip, char **body, pfi_error *err)
{
    *body = NULL;
    pfi_buf q = {.max = 64 << 10};
    char esc[3 * 128 + 1];
    int fail = pfi_buf_printf(&q, "/events");
    char sep = '?';
    if (v->cfg.program_id && v->cfg.program_id[0]) {
        fail |= pfi_url_escape(v->cfg.program_id, esc, sizeof esc) ||
                pfi_buf_printf(&q, "%cprogramID=%s", sep, esc);
        sep = '&';
    }
    if (v->cfg.ntargets && v->cfg.v301) {
        fail |= pfi_buf_printf(&q, "%ctargetType=GROUP", sep);
        sep = '&';
    }
    for (size_t i = 0; i < v->cfg.ntargets; i++) {
        fail |= pfi_url_escape(v->cfg.targets[i], esc, sizeof esc) ||
                pfi_buf_printf(&q, "%c%s=%s", sep, v->cfg.v301 ? "targetValues" : "targets", esc);
        sep = '&';
    }
    if (skip) fail |= pfi_buf_printf(&q, "%cskip=%zu", sep, skip), sep = '&';
    fail |= pfi_buf_printf(&q, "%climit=%d", sep, PFI_VTN_PAGE);
    size_t n;
    char *path = fail ? NULL : pfi_buf_take(&q, &n);
    if (!path) {
        pfi_buf_dispose(&q);
        return pfi_errorf(err, PFI_EINVAL, "GET /events: program_id or targets too long");
    }
    pfi_http_reply r;
    pfi_status st = pfi_vtn_request(v, "GET", path, NULL, &r, err);
    free(path);
    if (!st && !(st = expect("GET /events", &r, 200, 200, err))) {
        *body = r.body;
        r.body = NULL;
    }
    pfi_http_reply_dispose(&r);
    return st;
}
