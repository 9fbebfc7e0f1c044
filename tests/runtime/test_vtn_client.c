/* test_vtn_client.c — the OpenADR 3 VTN client (vtn_client.h) against a
 * fake VTN in place of libcurl: the token endpoint found through
 * /auth/server, client credentials form-encoded in the body, the bearer
 * token on every request, the token fetched again before it expires and
 * after a 401 or a 403 to a kept token (exactly one new token and one
 * retry), registration only when the VEN is not listed, the subscription with our callback URL and
 * token, the events filters of 3.1 and 3.0.1; secrets over plain http only
 * to loopback (pfi_url_secret_ok), a token URL the VTN names included,
 * unless allow_insecure_http. */
#include "../testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtn_client.h"

typedef struct fake {
    double now;
    double expires_in;    /* 0: the token endpoint sends none */
    int issued;           /* tokens issued: "tok-<issued>" */
    int valid;            /* the token the VTN accepts (0: none, always 401) */
    int refuse_all;       /* every bearer token is refused */
    int bad_status;       /* the answer to a refused token: 0 = 401 (RFC 6750 3.1);
                             403 as openleadr-rs answers (openleadr-vtn/src/jwt.rs) */
    int listed;           /* GET /vens lists our VEN */
    int expires_string;   /* expires_in as a string of digits (issue 42) */
    long vens_post;       /* POST /vens answers this (0: 201) */
    const char *vens_all; /* GET /vens without a filter (NULL: []) */
    int requests;         /* to the VTN (not the token endpoint) */
    char last_url[512], last_body[2048], last_auth[256], form[512], form_type[128];
} fake;

static double fake_clock(void *ud)
{
    return ((fake *)ud)->now;
}

static void answer(pfi_http_reply *r, long code, const char *body)
{
    r->code = code;
    r->body = strdup(body);
    r->len = strlen(body);
}

static pfi_status fake_send(void *ud, const char *method, const char *url,
                            const char *const *headers, const char *body, const char *ctype,
                            double timeout_s, pfi_http_reply *r, pfi_error *err)
{
    (void)timeout_s, (void)err;
    fake *f = ud;
    memset(r, 0, sizeof *r);
    if (!strcmp(url, "http://vtn.test/api/auth/server")) {
        answer(r, 200, "{\"tokenURL\":\"http://auth.test/token\"}");
        return PFI_OK;
    }
    if (!strcmp(url, "http://auth.test/token")) {
        assert_string_equal(method, "POST");
        snprintf(f->form, sizeof f->form, "%s", body);
        snprintf(f->form_type, sizeof f->form_type, "%s", ctype);
        char b[128];
        f->issued++;
        f->valid = f->refuse_all ? 0 : f->issued;
        if (f->expires_in > 0)
            snprintf(b, sizeof b,
                     f->expires_string ? "{\"access_token\":\"tok-%d\",\"token_type\":\"Bearer\","
                                         "\"expires_in\":\"%g\"}"
                                       : "{\"access_token\":\"tok-%d\",\"token_type\":\"Bearer\","
                                         "\"expires_in\":%g}",
                     f->issued, f->expires_in);
        else
            snprintf(b, sizeof b, "{\"access_token\":\"tok-%d\",\"token_type\":\"Bearer\"}",
                     f->issued);
        answer(r, 200, b);
        return PFI_OK;
    }
    f->requests++;
    snprintf(f->last_url, sizeof f->last_url, "%s %s", method, url);
    snprintf(f->last_body, sizeof f->last_body, "%s", body ? body : "");
    f->last_auth[0] = '\0';
    for (size_t i = 0; headers && headers[i]; i++)
        if (!strncmp(headers[i], "Authorization: ", 15))
            snprintf(f->last_auth, sizeof f->last_auth, "%s", headers[i] + 15);
    char want[64];
    snprintf(want, sizeof want, "Bearer tok-%d", f->valid);
    if (!f->valid || strcmp(f->last_auth, want)) {
        answer(r, f->bad_status ? f->bad_status : 401, "{\"title\":\"unauthorized\"}");
        return PFI_OK;
    }
    if (!strncmp(url, "http://vtn.test/api/vens?", 25) && !strcmp(method, "GET"))
        answer(r, 200, f->listed ? "[{\"id\":\"ven-7\",\"venName\":\"ven 1\"}]" : "[]");
    else if (!strcmp(url, "http://vtn.test/api/vens") && !strcmp(method, "POST") && f->vens_post)
        answer(r, f->vens_post, "{\"title\":\"refused\"}");
    else if (!strcmp(url, "http://vtn.test/api/vens") && !strcmp(method, "POST"))
        answer(r, 201, "{\"id\":\"ven-1\",\"objectType\":\"VEN\",\"venName\":\"ven 1\"}");
    else if (!strcmp(url, "http://vtn.test/api/vens"))
        answer(r, 200, f->vens_all ? f->vens_all : "[]");
    else if (!strcmp(url, "http://vtn.test/api/vens/bl-7"))
        answer(r, 200,
               "{\"id\":\"bl-7\",\"venName\":\"bl\",\"targets\":[\"group1\",5,\"\",\"g2\"]}");
    else if (!strcmp(url, "http://vtn.test/api/notifiers"))
        answer(r, 200, "{\"WEBHOOK\":true,\"MQTT\":{}}");
    else if (!strncmp(url, "http://vtn.test/api/subscriptions?", 34))
        answer(r, 200,
               "[{\"id\":\"sub-0\",\"clientName\":\"ven 1\",\"objectOperations\":"
               "[{\"callbackUrl\":\"https://elsewhere/cb\"}]}]");
    else if (!strcmp(url, "http://vtn.test/api/subscriptions"))
        answer(r, 201, "{\"id\":\"sub-1\"}");
    else if (!strncmp(url, "http://vtn.test/api/events", 26)) answer(r, 200, "[{\"id\":\"e1\"}]");
    else answer(r, 404, "{}");
    return PFI_OK;
}

static pfi_vtn_cfg cfg_for(fake *f)
{
    static const char *targets[] = {"group 1", "site-2"};
    pfi_vtn_cfg c = {.vtn_url = "http://vtn.test/api",
                     .client_id = "ven client",
                     .client_secret = "s&cret=1",
                     .ven_name = "ven 1",
                     .program_id = "prog-1",
                     .callback_url = "http://127.0.0.1:9480/openadr3/events",
                     .callback_token = "cbtoken-0123456789abcdef",
                     .targets = targets,
                     .ntargets = 2,
                     .allow_insecure_http = 1, /* the fake's hosts are plain http */
                     .send = fake_send,
                     .clock = fake_clock,
                     .ud = f};
    return c;
}

static void conversation(void **s)
{
    (void)s;
    fake f = {.expires_in = 3600};
    pfi_vtn_cfg c = cfg_for(&f);
    pfi_vtn v;
    pfi_vtn_init(&v, &c);
    pfi_error e;
    assert_int_equal(pfi_vtn_register(&v, &e), PFI_OK);
    assert_string_equal(v.token_url, "http://auth.test/token");
    assert_string_equal(f.form, "grant_type=client_credentials&client_id=ven%20client"
                                "&client_secret=s%26cret%3D1");
    assert_string_equal(f.form_type, "application/x-www-form-urlencoded");
    assert_string_equal(v.ven_id, "ven-1"); /* not listed: posted */
    assert_string_equal(f.last_url, "POST http://vtn.test/api/vens");
    assert_string_equal(f.last_body, "{\"objectType\":\"VEN_VEN_REQUEST\",\"venName\":\"ven 1\"}");
    assert_string_equal(f.last_auth, "Bearer tok-1");
    int created;
    assert_int_equal(pfi_vtn_subscribe(&v, &created, &e), PFI_OK);
    assert_int_equal(created, 1); /* the listed one sends elsewhere */
    assert_string_equal(v.subscription_id, "sub-1");
    assert_non_null(
        strstr(f.last_body, "\"callbackUrl\":\"http://127.0.0.1:9480/openadr3/events\""));
    assert_non_null(strstr(f.last_body, "\"bearerToken\":\"cbtoken-0123456789abcdef\""));
    assert_non_null(strstr(f.last_body, "\"programID\":\"prog-1\""));
    assert_non_null(strstr(f.last_body, "\"objects\":[\"EVENT\"]"));
    char *body;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    assert_string_equal(body, "[{\"id\":\"e1\"}]");
    free(body);
    assert_string_equal(f.last_url, "GET http://vtn.test/api/events?programID=prog-1"
                                    "&targets=group%201&targets=site-2&limit=50");
    assert_int_equal(v.token_fetches, 1); /* one token for all of it */
    /* listed VEN: kept, nothing posted */
    f.listed = 1;
    assert_int_equal(pfi_vtn_register(&v, &e), PFI_OK);
    assert_string_equal(v.ven_id, "ven-7");
    assert_string_equal(f.last_url, "GET http://vtn.test/api/vens?venName=ven%201");
    pfi_vtn_dispose(&v);
}

/* issue 42: POST /vens refused (403, 409) while the VTN holds our VEN
   object under a name its business logic chose: the one VEN listed is
   ours, several are not guessed between; its targets (the grants) read;
   expires_in as a string of digits taken and counted; GET /notifiers */
static void registration_by_listing(void **s)
{
    (void)s;
    long codes[] = {409, 403};
    for (int k = 0; k < 2; k++) {
        fake f = {.expires_in = 3600,
                  .expires_string = 1,
                  .vens_post = codes[k],
                  .vens_all = "[{\"id\":\"bl-7\",\"venName\":\"bl\"}]"};
        pfi_vtn_cfg c = cfg_for(&f);
        pfi_vtn v;
        pfi_vtn_init(&v, &c);
        pfi_error e;
        assert_int_equal(pfi_vtn_register(&v, &e), PFI_OK);
        assert_string_equal(v.ven_id, "bl-7");
        assert_int_equal(v.ven_listed, 1);
        assert_string_equal(v.ven_name_listed, "bl");
        assert_string_equal(f.last_url, "GET http://vtn.test/api/vens");
        /* each token taken counted (a 403 to a kept token fetches one more first) */
        assert_int_equal(v.expires_in_strings, v.token_fetches);
        assert_int_equal(v.token_fetches, codes[k] == 403 ? 2 : 1);
        assert_true(v.token_renew > 3000 && v.token_renew < 3600);
        char t[4][129];
        size_t n;
        assert_int_equal(pfi_vtn_ven_targets(&v, t, 4, &n, &e), PFI_OK);
        assert_int_equal(n, 2); /* strings only, not empty */
        assert_string_equal(t[0], "group1");
        assert_string_equal(t[1], "g2");
        int webhook = 0;
        assert_int_equal(pfi_vtn_notifiers(&v, &webhook, &e), PFI_OK);
        assert_int_equal(webhook, 1);
        pfi_vtn_dispose(&v);
        /* two VENs listed, or none: not ours to pick */
        const char *lists[] = {
            "[{\"id\":\"a\",\"venName\":\"x\"},{\"id\":\"b\",\"venName\":\"y\"}]", "[]"};
        for (int j = 0; j < 2; j++) {
            f.vens_all = lists[j];
            pfi_vtn_init(&v, &c);
            assert_int_equal(pfi_vtn_register(&v, &e), PFI_ENOTFOUND);
            assert_string_equal(v.ven_id, "");
            pfi_vtn_dispose(&v);
        }
    }
}

static void renewed_before_expiry(void **s)
{
    (void)s;
    fake f = {.expires_in = 100};
    pfi_vtn_cfg c = cfg_for(&f);
    c.token_url = "http://auth.test/token"; /* configured: no discovery */
    pfi_vtn v;
    pfi_vtn_init(&v, &c);
    pfi_error e;
    char *body;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    f.now = 89; /* renewed at 100 - min(60, 10) = 90 */
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    assert_int_equal(v.token_fetches, 1);
    f.now = 91;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    assert_int_equal(v.token_fetches, 2);
    assert_string_equal(f.last_auth, "Bearer tok-2");
    assert_int_equal(v.retries_auth, 0); /* never sent an expired token */
    pfi_vtn_dispose(&v);
}

static void one_refresh_one_retry_on_401(void **s)
{
    (void)s;
    fake f = {.expires_in = 0}; /* no expires_in: kept until a 401 */
    pfi_vtn_cfg c = cfg_for(&f);
    pfi_vtn v;
    pfi_vtn_init(&v, &c);
    pfi_error e;
    char *body;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    f.now = 1e6;
    f.valid = 0; /* the VTN revoked tok-1 */
    f.requests = 0;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    assert_int_equal(f.requests, 2); /* refused, then retried */
    assert_int_equal(v.token_fetches, 2);
    assert_int_equal(v.retries_auth, 1);
    assert_string_equal(f.last_auth, "Bearer tok-2");
    /* a VTN that refuses every token: one new token, one retry, then the 401 */
    f.refuse_all = 1;
    f.valid = 0;
    f.requests = 0;
    pfi_http_reply r;
    assert_int_equal(pfi_vtn_request(&v, "GET", "/programs", NULL, &r, &e), PFI_OK);
    assert_int_equal(r.code, 401);
    pfi_http_reply_dispose(&r);
    assert_int_equal(f.requests, 2);
    assert_int_equal(v.token_fetches, 3);
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_EPERM);
    assert_null(body);
    assert_non_null(strstr(e.msg, "GET /events: HTTP 401"));
    pfi_vtn_dispose(&v);
}

/* openleadr-rs answers an invalid or expired token 403: one new token, one
 * retry; a 403 to a token fetched for this very request is not retried */
static void one_retry_on_403_to_a_kept_token(void **s)
{
    (void)s;
    fake f = {.expires_in = 0, .bad_status = 403};
    pfi_vtn_cfg c = cfg_for(&f);
    pfi_vtn v;
    pfi_vtn_init(&v, &c);
    pfi_error e;
    char *body;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    f.valid = 0; /* tok-1 revoked */
    f.requests = 0;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    assert_int_equal(f.requests, 2);
    assert_int_equal(v.retries_auth, 1);
    assert_string_equal(f.last_auth, "Bearer tok-2");
    /* a new client whose first token is refused 403: no retry */
    pfi_vtn_dispose(&v);
    fake g = {.expires_in = 0, .bad_status = 403, .refuse_all = 1};
    c = cfg_for(&g);
    pfi_vtn_init(&v, &c);
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_EPERM);
    assert_int_equal(g.requests, 1);
    assert_int_equal(v.token_fetches, 1);
    assert_int_equal(v.retries_auth, 0);
    assert_non_null(strstr(e.msg, "HTTP 403"));
    pfi_vtn_dispose(&v);
}

static void v301_bodies(void **s)
{
    (void)s;
    fake f = {.expires_in = 3600};
    pfi_vtn_cfg c = cfg_for(&f);
    c.v301 = 1;
    pfi_vtn v;
    pfi_vtn_init(&v, &c);
    pfi_error e;
    assert_int_equal(pfi_vtn_register(&v, &e), PFI_OK);
    assert_string_equal(f.last_body, "{\"objectType\":\"VEN\",\"venName\":\"ven 1\"}");
    char *body;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_OK);
    free(body);
    assert_string_equal(f.last_url,
                        "GET http://vtn.test/api/events?programID=prog-1"
                        "&targetType=GROUP&targetValues=group%201&targetValues=site-2&limit=50");
    assert_int_equal(pfi_vtn_events_page(&v, 100, &body, &e), PFI_OK);
    free(body);
    assert_non_null(strstr(f.last_url, "&skip=100&limit=50"));
    pfi_vtn_dispose(&v);
}

static pfi_status https_vtn_send(void *ud, const char *method, const char *url,
                                 const char *const *headers, const char *body, const char *ctype,
                                 double timeout_s, pfi_http_reply *r, pfi_error *err)
{
    fake *f = ud;
    f->requests++;
    memset(r, 0, sizeof *r);
    if (strstr(url, "/auth/server")) answer(r, 200, "{\"tokenURL\":\"http://auth.test/token\"}");
    else answer(r, 200, "{\"access_token\":\"t\",\"token_type\":\"Bearer\"}");
    return PFI_OK;
}

/* an https VTN that names a plain http token endpoint: the secret is not sent */
static void token_url_stays_https(void **s)
{
    (void)s;
    fake f = {0};
    pfi_vtn_cfg c = cfg_for(&f);
    c.vtn_url = "https://vtn.test/api";
    c.send = https_vtn_send;
    pfi_vtn v;
    pfi_vtn_init(&v, &c);
    pfi_error e;
    assert_int_equal(pfi_vtn_token(&v, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "is not https like the VTN"));
    assert_int_equal(f.requests, 1); /* /auth/server only */
    pfi_vtn_dispose(&v);
}

/* the tokenURL the fake VTN names in /auth/server; every other request is
 * the token endpoint's answer */
static const char *named_token_url;

static pfi_status named_token_send(void *ud, const char *method, const char *url,
                                   const char *const *headers, const char *body, const char *ctype,
                                   double timeout_s, pfi_http_reply *r, pfi_error *err)
{
    (void)method, (void)headers, (void)ctype, (void)timeout_s, (void)err;
    fake *f = ud;
    f->requests++;
    memset(r, 0, sizeof *r);
    if (strstr(url, "/auth/server")) {
        char b[256];
        snprintf(b, sizeof b, "{\"tokenURL\":\"%s\"}", named_token_url);
        answer(r, 200, b);
    } else {
        snprintf(f->form, sizeof f->form, "%s", body ? body : "");
        answer(r, 200, "{\"access_token\":\"t\",\"token_type\":\"Bearer\"}");
    }
    return PFI_OK;
}

/* a plain http VTN on loopback that names a plain http token endpoint
 * elsewhere: the client secret is not sent, as the configuration refuses
 * the same token_url; a loopback one, or allow_insecure_http, is taken */
static void named_token_url_plain_http(void **s)
{
    (void)s;
    static const struct {
        const char *url;
        int allow, ok;
    } cases[] = {
        {"http://auth.example/token", 0, 0}, {"http://127.0.0.1@auth.example/token", 0, 0},
        {"http://auth.example/token", 1, 1}, {"http://127.0.0.1:8080/token", 0, 1},
        {"http://[::1]:8080/token", 0, 1},   {"https://auth.example/token", 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fake f = {0};
        pfi_vtn_cfg c = cfg_for(&f);
        c.vtn_url = "http://127.0.0.1:9/api";
        c.allow_insecure_http = cases[i].allow;
        c.send = named_token_send;
        named_token_url = cases[i].url;
        pfi_vtn v;
        pfi_vtn_init(&v, &c);
        pfi_error e;
        pfi_status st = pfi_vtn_token(&v, &e);
        if (cases[i].ok) {
            assert_int_equal(st, PFI_OK);
            assert_int_equal(f.requests, 2);
            assert_non_null(strstr(f.form, "client_secret="));
        } else {
            assert_int_equal(st, PFI_EPERM);
            assert_non_null(strstr(e.msg, "would send the client secret in cleartext"));
            assert_int_equal(f.requests, 1); /* /auth/server only: no secret sent */
            assert_string_equal(f.form, "");
        }
        pfi_vtn_dispose(&v);
    }
}

/* the same rule for a configured token URL and the VTN itself: nothing is
 * sent to plain http elsewhere (the bearer token would go with it) */
static void configured_plain_http_refused(void **s)
{
    (void)s;
    fake f = {.expires_in = 3600};
    pfi_vtn_cfg c = cfg_for(&f);
    c.allow_insecure_http = 0;
    pfi_vtn v;
    pfi_vtn_init(&v, &c);
    pfi_error e;
    char *body;
    assert_int_equal(pfi_vtn_events(&v, &body, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "in cleartext"));
    assert_int_equal(f.requests, 0);
    assert_int_equal(f.issued, 0);
    pfi_vtn_dispose(&v);
    c.vtn_url = "http://localhost:9/api";
    c.token_url = "http://auth.test/token";
    pfi_vtn_init(&v, &c);
    assert_int_equal(pfi_vtn_token(&v, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "would send the client secret in cleartext"));
    assert_int_equal(f.issued, 0);
    pfi_vtn_dispose(&v);
}

/* the one loopback rule (agent_client.h): the controller's configuration,
 * the VTN client and the CLI call it */
static void secret_url_rules(void **s)
{
    (void)s;
    static const struct {
        const char *url;
        int ok, ok_allowed;
    } cases[] = {
        {"https://vtn.example/api", 1, 1},
        {"HTTPS://vtn.example/api", 1, 1},
        {"http://127.0.0.1:9480/", 1, 1},
        {"http://127.8.9.10/", 1, 1},
        {"http://[::1]:9480/x", 1, 1},
        {"http://localhost:9480", 1, 1},
        {"http://LocalHost/", 1, 1},
        {"http://ctl.localhost/", 1, 1},
        {"HTTP://127.0.0.1/", 1, 1},
        {"http://vtn.example/", 0, 1},
        {"http://128.0.0.1/", 0, 1},
        {"http://127.0.0.1@vtn.example/", 0, 1},
        {"http://localhost.example/", 0, 1},
        {"http://[::2]/", 0, 1},
        {"http://[::1/", 0, 1},
        {"http://0x7f000001/", 0, 1},
        {"vtn.example:80/", 0, 0}, /* curl would guess http */
        {"ftp://127.0.0.1/", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (pfi_url_secret_ok(cases[i].url, 0) != cases[i].ok ||
            pfi_url_secret_ok(cases[i].url, 1) != cases[i].ok_allowed)
            fail_msg("%s: expected %d / %d (allowed)", cases[i].url, cases[i].ok,
                     cases[i].ok_allowed);
    }
    assert_int_equal(pfi_url_loopback("https://127.0.0.1/"), 1);
    assert_int_equal(pfi_url_loopback("https://vtn.example/"), 0);
}

static void url_escape(void **s)
{
    (void)s;
    char url[16];
    assert_int_equal(pfi_url_escape("a b/c", url, sizeof url), 0);
    assert_string_equal(url, "a%20b%2Fc");
    assert_int_equal(pfi_url_escape("0123456789", url, 10), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conversation),
        cmocka_unit_test(registration_by_listing),
        cmocka_unit_test(renewed_before_expiry),
        cmocka_unit_test(one_refresh_one_retry_on_401),
        cmocka_unit_test(one_retry_on_403_to_a_kept_token),
        cmocka_unit_test(v301_bodies),
        cmocka_unit_test(url_escape),
        cmocka_unit_test(token_url_stays_https),
        cmocka_unit_test(named_token_url_plain_http),
        cmocka_unit_test(configured_plain_http_refused),
        cmocka_unit_test(secret_url_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
