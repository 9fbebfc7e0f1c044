/* ctl_http.c — pfi-controller's HTTP API (docs/controller.md) on the shared
 * server (httpd.h). Who may do what is ctl_operators.c's: reading is open
 * (unless require_read_scope), every POST and DELETE needs an operator's
 * bearer token with the scope its endpoint needs (docs/controller.md,
 * "Operators"); the handler gets the operator's name (rq->who) and records
 * it on the events it creates, changes or cancels. The open reads hold the
 * controller's lock only to copy what they answer from (ctl_view.c,
 * ctl_report.c build the answers after it).
 *   GET  /                          status page (live power vs target;
 *                                   /page.js, /page.css: its script and style)
 *   GET  /v1/status                 what the page draws (JSON)
 *   GET  /metrics                   Prometheus text
 *   GET  /v1/events                 all events;  POST: a canonical event
 *   GET  /v1/events/ID              one event;   DELETE: cancel it
 *   GET  /v1/events/ID/report       measurement and verification (JSON)
 *   GET  /v1/events/ID/report.png   the same as a chart
 *   POST /v1/trigger                a grid trigger now: {"level": N} | {"reduction_pct": X}
 *   POST /v1/failover/handover      the leader hands over to a warm standby (failover)
 *                                   (ctl_trigger.c: the planned caps pushed at once)
 *   POST /openadr3/events           OpenADR 3.0.1/3.1 webhook (EVENTs, notifications)
 *   GET  /openadr3/events[/echo]    the webhook's echo challenge (?echo=V), open
 *   GET  /healthz */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "ctl.h"
#include "ctl_failover.h"
#include "ctl_inbox.h"
#include "ctl_offer.h"
#include "daemon_util.h"
#include "httpd.h"
#include "json_obj.h"
#include "pfi/prom.h"
#include "pfi/version.h"

static void json_resp(pfi_http_resp *rs, int code, json_t *o)
{
    rs->body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!rs->body) return pfi_http_error(rs, 500, "out of memory");
    rs->len = strlen(rs->body);
    rs->code = code;
}

/* GET /v1/events/ID/report.png: drawn from the copy e, outside the lock */
static void png(ctl *c, const ctl_event *e, pfi_http_resp *rs)
{
    pfi_error err;
    pfi_status st = ctl_report_png(c, e, &rs->body, &rs->len, &err);
    if (st) return pfi_http_error(rs, st == PFI_ESTATE ? 409 : 500, "%s", err.msg);
    rs->code = 200;
    rs->ctype = "image/png";
}

/* the caller's name (httpd.h: authorize's, ctl_operators.c) */
static const char *who(const pfi_http_req *rq)
{
    return rq->who ? rq->who : "";
}

/* an id another event holds (ctl_event_id_taken): 409 */
static int id_taken(ctl *c, const char *id, int api_change_ok, pfi_http_resp *rs)
{
    pfi_error e;
    if (!ctl_event_id_taken(c, id, api_change_ok, &e)) return 0;
    pfi_http_error(rs, 409, "%s", e.msg);
    return 1;
}

/* POST /v1/trigger: {"level": 1..3} or {"reduction_pct": (0, 90]}, optional
 * "id" and "duration_s" (default: until cancelled with DELETE /v1/events/ID);
 * never a ramp. It is an event that starts now (listed, reported, cancelled
 * as any other) whose caps the fast path pushes at once. */
static void trigger(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs)
{
    pfi_grid_event ev;
    memset(&ev, 0, sizeof ev);
    int level = 0, have_level = 0, have_pct = 0, have_dur = 0;
    json_error_t je;
    json_t *o = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &je);
    const pfi_jkey keys[] = {
        {"level", PFI_J_INTEGER, 0, &level, sizeof level, .lo = 1, .hi = 3,
         .expect = "expected an integer 1..3", .seen = &have_level},
        {"reduction_pct", PFI_J_NUMBER, PFI_J_LO_OPEN, &ev.reduction_pct, .lo = 0, .hi = 90,
         .expect = "expected a number in (0, 90]", .seen = &have_pct},
        {"id", PFI_J_STRING, 0, ev.id, .size = sizeof ev.id},
        {"duration_s", PFI_J_NUMBER, 0, &ev.duration_s, .lo = 1, .hi = 604800,
         .expect = "expected 1..604800 seconds", .seen = &have_dur},
    };
    pfi_jopts jo = {.prefix = "trigger",
                    .unknown_text = "unknown field (expected level | reduction_pct, id, "
                                    "duration_s)"};
    pfi_error e;
    if (!o) {
        pfi_http_error(rs, 400, "trigger: line %d column %d: %s", je.line, je.column, je.text);
        return;
    }
    pfi_status st = json_is_object(o) ? PFI_JSON_OBJ_READ(o, keys, &jo, &e)
                                      : pfi_errorf(&e, PFI_EINVAL, "trigger: expected an object");
    json_decref(o);
    if (!st && have_level + have_pct != 1)
        st = pfi_errorf(&e, PFI_EINVAL, "trigger: give exactly one of level and reduction_pct");
    if (!st && have_level && !(c->cfg.level_cut_pct[level] > 0))
        st = pfi_errorf(&e, PFI_EINVAL, "trigger.level: level %d cuts nothing (levels_pct)", level);
    if (st) {
        for (char *p = e.msg; *p; p++)
            if ((unsigned char)*p < 0x20) *p = '?';
        pfi_http_error(rs, 400, "%s", e.msg);
        return;
    }
    double now = pfi_clock_now();
    if (!ev.id[0]) snprintf(ev.id, sizeof ev.id, "trigger-%.0f-%llu", now * 1000, c->triggers + 1);
    ev.start = now;
    ev.open_ended = !have_dur;
    ev.kind = have_level ? PFI_EV_LEVEL : PFI_EV_REDUCTION;
    ev.level = level;
    ev.ramp_s = 0;
    ev.ramp_down_s = NAN;
    snprintf(ev.source, sizeof ev.source, "trigger");
    int updated = 0;
    unsigned long long before = c->triggers;
    if (!ctl_failover_leads(c)) return ctl_inbox_event(c, &ev, who(rq), rs);
    if (id_taken(c, ev.id, 0, rs)) return;
    st = ctl_event_add(c, &ev, who(rq), &updated, &e);
    if (st) return pfi_http_error(rs, ctl_event_http_code(st, 0), "%s", e.msg);
    json_t *a = ctl_event_json(ctl_event_find(c, ev.id));
    json_object_set_new(a, "fast_path", json_boolean(c->triggers > before));
    json_resp(rs, ctl_event_http_code(PFI_OK, updated), a);
}

/* GET /v1/events: the table copied under the lock, listed after it */
static void events_list(ctl *c, pfi_http_resp *rs)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->st.nevents;
    ctl_event *copy = malloc((n ? n : 1) * sizeof *copy);
    if (copy && n) memcpy(copy, c->st.event, n * sizeof *copy);
    pthread_mutex_unlock(&c->mu);
    if (!copy) return pfi_http_error(rs, 500, "out of memory");
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, ctl_event_json(&copy[i]));
    free(copy);
    json_resp(rs, 200, json_pack("{s:o}", "events", a));
}

/* POST /v1/events: a canonical event (lock held) */
static void event_post(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs)
{
    pfi_grid_event ev;
    pfi_error e;
    int updated = 0;
    pfi_status st = PFI_OK;
    if (pfi_grid_event_parse(rq->body, rq->len, &ev, &e)) pfi_http_error(rs, 400, "%s", e.msg);
    else if (!ctl_failover_leads(c)) ctl_inbox_event(c, &ev, who(rq), rs);
    else if (id_taken(c, ev.id, 1, rs)) return;
    else if ((st = ctl_event_add(c, &ev, who(rq), &updated, &e)))
        pfi_http_error(rs, ctl_event_http_code(st, 0), "%s", e.msg);
    else
        json_resp(rs, ctl_event_http_code(PFI_OK, updated),
                  ctl_event_json(ctl_event_find(c, ev.id)));
}

/* GET /v1/events/ID (what 0), its report (1) or chart (2): the event
   copied under the lock, the answer built after it */
static void event_get(ctl *c, const char *id, int what, pfi_http_resp *rs)
{
    ctl_event e;
    pthread_mutex_lock(&c->mu);
    const ctl_event *t = ctl_event_find(c, id);
    int found = t != NULL;
    if (found) e = *t;
    pthread_mutex_unlock(&c->mu);
    if (!found) return pfi_http_error(rs, 404, "no event %s", id);
    if (what == 1) {
        rs->body = ctl_report_json(c, &e);
        rs->len = rs->body ? strlen(rs->body) : 0;
        rs->code = 200;
    } else if (what == 2) png(c, &e, rs);
    else json_resp(rs, 200, ctl_event_json(&e));
}

/* /v1/events (GET the list, POST one) and /v1/events/ID[/report[.png]]
   (GET, DELETE: cancel); the lock only for what changes the table or
   copies from it */
static void events_route(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs, int get, int post,
                         int del)
{
    const char *u = rq->url;
    if (!strcmp(u, "/v1/events")) {
        if (get) events_list(c, rs);
        else if (post) {
            pthread_mutex_lock(&c->mu);
            event_post(c, rq, rs);
            pthread_mutex_unlock(&c->mu);
        } else pfi_http_error(rs, 405, "method not allowed (GET, POST)");
        return;
    }
    char id[PFI_EVENT_ID_MAX + 32];
    snprintf(id, sizeof id, "%s", u + 11);
    int report = 0;
    char *sl = strchr(id, '/');
    if (sl) {
        report = !strcmp(sl, "/report") ? 1 : !strcmp(sl, "/report.png") ? 2 : -1;
        *sl = '\0';
    }
    if (report < 0) return pfi_http_error(rs, 404, "no such endpoint");
    if (get) return event_get(c, id, report, rs);
    pthread_mutex_lock(&c->mu);
    ctl_event *e = ctl_event_find(c, id);
    if (del && !report && !ctl_failover_leads(c)) ctl_inbox_cancel(c, id, who(rq), rs);
    else if (!e) pfi_http_error(rs, 404, "no event %s", id);
    else if (del && !report && !ctl_operator_may_cancel(c, who(rq), e))
        pfi_http_error(rs, 403,
                       "operator %s lacks the scope events (DELETE /v1/events/ID needs it; "
                       "control cancels a trigger's event only)",
                       who(rq));
    else if (del && !report) {
        pfi_error ce;
        pfi_status st = ctl_event_cancel(c, id, who(rq), &ce);
        if (st) pfi_http_error(rs, ctl_event_http_code(st, 0), "%s", ce.msg);
        else json_resp(rs, 200, ctl_event_json(e));
    } else pfi_http_error(rs, 405, "method not allowed");
    pthread_mutex_unlock(&c->mu);
}

/* GET /healthz: small, for benchmarks that poll each period (/metrics grows
   with the jobs); its figures copied under the lock */
static void healthz(ctl *c, pfi_http_resp *rs)
{
    pthread_mutex_lock(&c->mu);
    size_t up = 0;
    for (size_t i = 0; i < c->io.nagents; i++) up += c->io.agent[i].up != 0;
    json_int_t cycles = (json_int_t)c->cycles, triggers = (json_int_t)c->triggers;
    double loop_s = c->loop_s, push_s = c->trigger_push_s, ph[4];
    memcpy(ph, c->phase_s, sizeof ph);
    pthread_mutex_unlock(&c->mu);
    json_resp(rs, 200,
              json_pack("{s:b,s:I,s:f,s:f,s:I,s:I,s:{s:f,s:f,s:f,s:f}}", "ok", 1, "cycles", cycles,
                        "period_s", loop_s, "trigger_push_s", isfinite(push_s) ? push_s : -1.0,
                        "triggers", triggers, "agents_up", (json_int_t)up, "phase_s", "collect",
                        ph[CTL_PH_COLLECT], "decide", ph[CTL_PH_DECIDE], "persist",
                        ph[CTL_PH_PERSIST], "push", ph[CTL_PH_PUSH]));
}

/* the status page, its script and style (constant: no lock); 0 when url is none of them */
static int static_page(const char *u, int get, pfi_http_resp *rs)
{
    const char *page = NULL, *ptype = NULL;
    if (!strcmp(u, "/") || !strcmp(u, "/index.html"))
        page = ctl_status_page, ptype = "text/html; charset=utf-8";
    else if (!strcmp(u, "/page.js")) page = ctl_page_js, ptype = "text/javascript; charset=utf-8";
    else if (!strcmp(u, "/page.css")) page = ctl_page_css, ptype = "text/css; charset=utf-8";
    if (!page) return 0;
    if (!get) pfi_http_error(rs, 405, "method not allowed (GET)");
    else {
        rs->body = strdup(page);
        rs->len = rs->body ? strlen(rs->body) : 0;
        rs->code = 200;
        rs->ctype = ptype;
        rs->csp = ctl_page_csp;
    }
    return 1;
}

/* POST /openadr3/events (lock held) */
static void webhook(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs)
{
    json_t *answer = NULL;
    pfi_error e;
    if (!ctl_failover_leads(c)) return ctl_inbox_webhook(c, rq->body, rq->len, who(rq), rs);
    int code = ctl_openadr_take(c, rq->body, rq->len, "webhook", who(rq), &answer, &e);
    if (answer) json_resp(rs, code, answer);
    else pfi_http_error(rs, code, "%s", e.msg);
}

/* GET /openadr3/events?echo=V and GET /openadr3/events/echo?echo=V: the
 * webhook's echo challenge. The OpenADR 3.1.1 Definition ("Webhooks"):
 * before it creates a subscription the VTN MUST GET the callback URL with
 * a query parameter echo, and the VEN MUST answer 200 with that value as
 * the body; the Alliance's reference VTN (oadr3-org/openadr3-vtn-reference-
 * implementation) GETs {callback}/echo?echo=V (issue 42). Open whatever
 * require_read_scope says (ctl_operators.c: the VTN holds no operator
 * token); V is answered only when it is 1..256 characters of
 * [A-Za-z0-9._~-] (an unreserved URL character: nothing a page, a header
 * or a log could take as markup), as text/plain (httpd.c adds nosniff to
 * every answer); else 400. */
static void echo_challenge(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs)
{
    const char *v = pfi_http_arg(rq, "echo");
    size_t n = v ? strlen(v) : 0;
    if (!n || n > 256 ||
        strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-") != n)
        return pfi_http_error(rs, 400, "echo: expected 1..256 characters of [A-Za-z0-9._~-]");
    if (!(rs->body = strdup(v))) return pfi_http_error(rs, 503, "out of memory");
    rs->len = n;
    rs->code = 200;
    rs->ctype = "text/plain; charset=utf-8";
    __atomic_add_fetch(&c->vtn.echoes, 1, __ATOMIC_RELAXED);
}

/* The open reads (GET, HEAD) are answered one at a time, behind a gate of
 * their own, never the controller's lock: however many clients read in a
 * loop and however many server threads take their requests, building the
 * answers takes at most one core, and the control loop, a trigger and the
 * agents keep the others. An answer is a copy and some formatting (a kept
 * chart: about 0.3 ms), so the gate costs readers little. */
static pthread_mutex_t g_read_gate = PTHREAD_MUTEX_INITIALIZER;

static void route(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs, int get);

/* a write a follower commits to the store's inbox (ctl_inbox.h): POST
   /v1/events, /v1/trigger, /openadr3/events; DELETE /v1/events/ID */
static int inbox_write(const char *u, int post)
{
    if (!post) return !strncmp(u, "/v1/events/", 11) && !strchr(u + 11, '/');
    return !strcmp(u, "/v1/events") || !strcmp(u, "/v1/trigger") || !strcmp(u, "/openadr3/events");
}

static void handle(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    int get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD");
    if (get) pthread_mutex_lock(&g_read_gate);
    route(ud, rq, rs, get);
    if (get) pthread_mutex_unlock(&g_read_gate);
}

/* Each route takes the lock itself: the changes (POST, DELETE: the token)
   for as long as they take, the open reads only to copy (ctl_view.c) */
static void route(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs, int get)
{
    int post = !strcmp(rq->method, "POST"), del = !strcmp(rq->method, "DELETE");
    const char *u = rq->url;
    if (static_page(u, get, rs)) return;
    if (!strcmp(u, "/healthz")) healthz(c, rs);
    else if ((post || del) && !inbox_write(u, post) && !ctl_failover_may_write(c, rs))
        return; /* a follower takes only the inbox's writes (ctl_inbox.h) */
    else if (!strcmp(u, "/v1/status")) {
        if (!get) pfi_http_error(rs, 405, "method not allowed (GET)");
        else json_resp(rs, 200, ctl_view_status(c));
    } else if (!strcmp(u, "/v1/offer/history")) {
        if (!get) pfi_http_error(rs, 405, "method not allowed (GET)");
        else json_resp(rs, 200, ctl_offer_history_json(c));
    } else if (!strcmp(u, "/v1/offer")) {
        if (!get) pfi_http_error(rs, 405, "method not allowed (GET)");
        else json_resp(rs, 200, ctl_offer_json(c, 1));
    } else if (!strcmp(u, "/metrics")) {
        if (!get) { /* GET and HEAD only (issue 41: any method was served) */
            rs->allow = "GET, HEAD";
            return pfi_http_error(rs, 405, "method not allowed (GET)");
        }
        rs->body = ctl_view_metrics(c, &rs->len);
        rs->code = 200;
        rs->ctype = "text/plain; version=0.0.4; charset=utf-8";
    } else if (!strncmp(u, "/v1/events", 10) && (!u[10] || u[10] == '/')) {
        events_route(c, rq, rs, get, post, del);
    } else if (get && (!strcmp(u, "/openadr3/events") || !strcmp(u, "/openadr3/events/echo"))) {
        echo_challenge(c, rq, rs);
    } else if (!strcmp(u, "/v1/failover/handover")) {
        if (!post) return pfi_http_error(rs, 405, "method not allowed (POST)");
        char why[256];
        if (ctl_failover_handover(c, why, sizeof why))
            return pfi_http_error(rs, 409, "no handover: %s", why);
        json_resp(rs, 200, json_pack("{s:b,s:s}", "handed_over", 1, "standby", why));
    } else if (!strcmp(u, "/v1/trigger") || !strcmp(u, "/openadr3/events")) {
        if (!post) {
            rs->allow = u[1] == 'v' ? "POST" : "GET, HEAD, POST";
            return pfi_http_error(rs, 405, "method not allowed (%s)", rs->allow);
        }
        pthread_mutex_lock(&c->mu);
        if (u[1] == 'v') trigger(c, rq, rs);
        else webhook(c, rq, rs);
        pthread_mutex_unlock(&c->mu);
    } else {
        pfi_http_error(rs, 404,
                       "no such endpoint (/, /v1/status, /v1/offer, /metrics, /v1/events, "
                       "/v1/trigger, "
                       "/openadr3/events)");
    }
}

/* every 401, 403, 405, 409 (httpd.h on_refused): counted by reason, and
   logged with the operator and the path, at most 10 lines in 10 s (an
   unauthenticated flood cannot fill the log; the lines left out are
   counted in the next one) */
static void on_refused(void *ud, int code, const char *method, const char *url, const char *who,
                       const char *msg)
{
    ctl *c = ud;
    int r = code == 401 ? 0 : code == 403 ? 1 : code == 405 ? 2 : 3;
    __atomic_add_fetch(&c->http_refused[r], 1, __ATOMIC_RELAXED);
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    double now = pfi_wall_monotonic();
    if (now - c->refused_log_t >= 10) {
        if (c->refused_quiet)
            ctl_log(c, "refused: %u more requests in the last window (not logged one by one)",
                    c->refused_quiet);
        c->refused_log_t = now, c->refused_logged = 0, c->refused_quiet = 0;
    }
    int say = c->refused_logged < 10;
    if (say) c->refused_logged++;
    else c->refused_quiet++;
    pthread_mutex_unlock(&mu);
    if (!say) return;
    char m[40], path[160];
    /* the request line is the client's: control bytes never reach the log */
    snprintf(m, sizeof m, "%.32s", method);
    snprintf(path, sizeof path, "%.150s", url);
    for (char *p = m; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    for (char *p = path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    ctl_log(c, "refused %d (%s): %s %s by %s: %s", code, ctl_refused_reason[r], m, path,
            who[0] ? who : "an unknown caller", msg);
}

int ctl_http_start(ctl *c)
{
    pfi_httpd_opts o = {.listen = c->cfg.listen,
                        .tls_cert = c->cfg.tls_cert[0] ? c->cfg.tls_cert : NULL,
                        .tls_key = c->cfg.tls_key[0] ? c->cfg.tls_key : NULL,
                        .max_body = 1 << 20,
                        .authorize = ctl_authorize,
                        .handle = handle,
                        .on_refused = on_refused,
                        .ud = c};
    pfi_error e;
    if (pfi_httpd_start(&o, &c->io.httpd, &c->io.port, &e)) {
        ctl_log(c, "error: %s", e.msg);
        return -1;
    }
    ctl_log(c, "listening on %s (port %d)", c->cfg.listen, c->io.port);
    return 0;
}

void ctl_http_stop(ctl *c)
{
    pfi_httpd_stop(c->io.httpd);
    c->io.httpd = NULL;
}
