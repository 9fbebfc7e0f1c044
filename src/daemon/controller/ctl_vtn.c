/* ctl_vtn.c — pfi-controller as an OpenADR 3 VEN talking to its VTN
 * (docs/controller.md "OpenADR 3: the VTN"; the client is vtn_client.h,
 * the REPORTs ctl_vtn_report.c).
 *
 * At start-up the callback token — the bearer token the subscription gives
 * the VTN, which the webhook POST /openadr3/events then accepts besides the
 * controller's own token — is read from callback_token_file, or made (32
 * random bytes as hex) and written there with mode 0600 when the file does
 * not exist. A thread then, until the controller stops, keeps each part of
 * the conversation on a clock of its own (issue 42: a VTN that refuses a
 * subscription or a registration stopped pfi polling and reporting):
 *   - polls GET /events every poll_s wall seconds from the start, handing
 *     each event to the OpenADR parser (ctl_openadr_ingest_page); a failed
 *     poll is tried again after 1 s doubling up to poll_s, or after the
 *     VTN's Retry-After (capped at poll_s);
 *   - registers the VEN (vtn_register: given up, with one error, when
 *     POST /vens is refused and the VTN lists not exactly one VEN);
 *   - subscribes when callback_url is set (vtn_subscribe: the rules for a
 *     VTN without webhooks, 429, 5xx and other refusals);
 *   - reads the VEN object's targets hourly (3.1: the grants that decide
 *     which events are ours, User Guide 8.13);
 *   - keeps and sends the REPORTs (ctl_vtn_report.c).
 * Each is logged once done ("VTN: ..."; a poll when the number of events
 * listed changed) and its state is in /v1/status "vtn" and /metrics. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_failover.h"
#include "ctl_vtn.h"
#include "vec.h"

/* a secret file: the token file's rules (regular, not a symlink, mode 0600
 * or stricter, one line without spaces); the callback token 16..256
 * characters like every token, a client id or secret 1..4096 (the spec) */
static int read_secret(ctl *c, const char *key, const char *path, size_t min, size_t max, char *out,
                       size_t n)
{
    pfi_error e;
    if (pfi_secret_read(path, min, max, out, n, &e) == PFI_OK) return 0;
    ctl_log(c, "error: openadr.%s: %s", key, e.msg);
    return -1;
}

/* the callback token: read, or made and written when the file is absent */
static int callback_token(ctl *c)
{
    const char *path = c->cfg.vtn.callback_token_file;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        unsigned char r[32];
        char hex[65];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            ctl_log(c, "error: openadr.callback_token_file: no random bytes: %s", strerror(errno));
            return -1;
        }
        for (size_t i = 0; i < sizeof r; i++) snprintf(hex + 2 * i, 3, "%02x", r[i]);
        hex[64] = '\n';
        /* created here, 0600 from the start; never through a symlink */
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int bad = fd < 0 || write(fd, hex, 65) != 65 || fsync(fd) != 0;
        int why = errno;
        if (fd >= 0) close(fd);
        if (bad) {
            if (fd >= 0) unlink(path);
            ctl_log(c, "error: openadr.callback_token_file: %s: %s", path, strerror(why));
            return -1;
        }
        ctl_log(c, "VTN: callback token made in %s (mode 0600)", path);
    }
    return read_secret(c, "callback_token_file", path, 16, PFI_TOKEN_MAX, c->io.callback_token,
                       sizeof c->io.callback_token);
}

const char *const ctl_vtn_nc_name[CTL_VTN_NC_N] = {"local_timestamp", "expires_in_string",
                                                   "subscription_refused", "ven_listed"};

typedef struct vtn_run {
    ctl *c;
    char id[PFI_VTN_SECRET_MAX + 1], secret[PFI_VTN_SECRET_MAX + 1];
    const char *targets[16];
} vtn_run;

/* sleep up to s wall seconds, less when the controller stops */
static void nap(ctl *c, double s)
{
    double end = pfi_wall_monotonic() + s;
    while (!c->io.vtn_stop && pfi_wall_monotonic() < end) usleep(50 * 1000);
}

/* the ids a page of GET /events lists, appended to *ids (a growable list
   of malloc'd strings); the page's length, or -1 when it is not a JSON
   array */
static long page_ids(const char *body, char ***ids, size_t *n, size_t *cap)
{
    json_t *a = json_loads(body, 0, NULL);
    if (!json_is_array(a)) {
        json_decref(a);
        return -1;
    }
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
    {
        const char *id = json_string_value(json_object_get(x, "id"));
        if (!id || PFI_VEC_RESERVE(*ids, *cap, *n + 1, NULL)) continue;
        char *d = strdup(id);
        if (d) (*ids)[(*n)++] = d;
    }
    long len = (long)json_array_size(a);
    json_decref(a);
    return len;
}

static int listed_has(char *const *ids, size_t n, const char *id, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(ids[i]) == len && !strncmp(ids[i], id, len)) return 1;
    return 0;
}

/* the grid's pending events that a complete listing lacks, at most max
   (lock held): their OpenADR ids into out[] */
static size_t absent_events(ctl *c, char *const *ids, size_t n, char out[][PFI_OADR_ID_MAX + 1],
                            size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < c->st.nevents && k < max; i++) {
        const ctl_event *e = &c->st.event[i];
        if (strcmp(e->ev.source, "openadr") || e->status == CTL_EV_DONE ||
            e->status == CTL_EV_CANCELLED || e->cancelled)
            continue;
        const char *dot = strrchr(e->ev.id, '.');
        size_t len = dot ? (size_t)(dot - e->ev.id) : strlen(e->ev.id);
        if (len > PFI_OADR_ID_MAX || listed_has(ids, n, e->ev.id, len)) continue;
        int dup = 0;
        for (size_t j = 0; j < k; j++)
            dup |= strlen(out[j]) == len && !strncmp(out[j], e->ev.id, len);
        if (dup) continue;
        memcpy(out[k], e->ev.id, len);
        out[k++][len] = '\0';
    }
    return k;
}

/* User Guide 7.9: an event the VTN deleted is discarded, with its ramp
 * down. Only when a complete listing lacked it and GET /events/{id}
 * answers 404: a filter that hides it, or a VTN that failed half-way,
 * discards nothing. */
static void reconcile(ctl *c, pfi_vtn *v, char *const *ids, size_t n)
{
    char gone[16][PFI_OADR_ID_MAX + 1];
    pthread_mutex_lock(&c->mu);
    size_t k = absent_events(c, ids, n, gone, 16);
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < k; i++) {
        char path[16 + 3 * PFI_OADR_ID_MAX + 1], esc[3 * PFI_OADR_ID_MAX + 1];
        if (pfi_url_escape(gone[i], esc, sizeof esc)) continue;
        snprintf(path, sizeof path, "/events/%s", esc);
        pfi_http_reply r;
        pfi_error e;
        if (pfi_vtn_request(v, "GET", path, NULL, &r, &e)) continue;
        long code = r.code;
        pfi_http_reply_dispose(&r);
        if (code != 404) continue;
        pthread_mutex_lock(&c->mu);
        for (size_t j = 0; j < c->st.nevents; j++) {
            ctl_event *x = &c->st.event[j];
            size_t len = strlen(gone[i]);
            if (strcmp(x->ev.source, "openadr") || strncmp(x->ev.id, gone[i], len) ||
                (x->ev.id[len] && x->ev.id[len] != '.') || x->status == CTL_EV_DONE ||
                x->status == CTL_EV_CANCELLED || x->cancelled)
                continue;
            if (ctl_event_cancel(c, x->ev.id, "grid", NULL) == PFI_OK)
                snprintf(x->ended_by, sizeof x->ended_by, "deleted at the VTN");
        }
        ctl_db_oadr_forget(c, gone[i]);
        ctl_log(c,
                "OpenADR event %s: deleted at the VTN (absent from a complete listing, GET "
                "/events/%s: 404): discarded, its caps ramp down",
                gone[i], gone[i]);
        c->wake = 1;
        ctl_agents_wake(c);
        pthread_mutex_unlock(&c->mu);
    }
}

/* the VTN's events, page after page (skip, limit=PFI_VTN_PAGE), each into
 * the controller. The listing goes on while a page is not empty and at
 * least as long as the first (a VTN may serve fewer than the limit asked:
 * issue 42, a short page is no end), and ends at an empty or shorter page;
 * past 40 pages (2,000 events at the limit) it is logged as truncated. A
 * complete listing (every page 2xx and read, ended by an empty or shorter
 * page) reconciles what the VTN deleted; *listed: the count of the last
 * poll (logged when it changes) */
static pfi_status poll_events(ctl *c, pfi_vtn *v, long long *listed, pfi_error *e)
{
    char *body, **ids = NULL;
    size_t n = 0, nids = 0, cap = 0;
    long first = -1, len = 0;
    pfi_status st = PFI_OK;
    int whole = 1, ended = 0, page = 0;
    for (; !st && !ended && page < 40; page++) {
        if ((st = pfi_vtn_events_page(v, n, &body, e))) break;
        len = page_ids(body, &ids, &nids, &cap);
        whole &= len >= 0;
        if (first < 0) first = len;
        ctl_openadr_ingest_page(c, body, PFI_VTN_PAGE, c->cfg.vtn.vtn_url);
        free(body);
        n += len > 0 ? (size_t)len : 0;
        ended = len <= 0 || len < first;
    }
    if (!st && !ended) {
        whole = 0;
        pthread_mutex_lock(&c->mu);
        ctl_log(c,
                "warning: VTN GET /events: more than %d pages (%zu events): the listing is "
                "truncated, deleted events not reconciled",
                40, n);
        pthread_mutex_unlock(&c->mu);
    }
    if (!st && whole) reconcile(c, v, ids, nids);
    for (size_t i = 0; i < nids; i++) free(ids[i]);
    free(ids);
    if (st) return st;
    if ((long long)n != *listed) { /* the first poll, then changes only */
        pthread_mutex_lock(&c->mu);
        ctl_log(c, "VTN: polled events: %zu listed", n);
        pthread_mutex_unlock(&c->mu);
    }
    *listed = (long long)n;
    return PFI_OK;
}

/* the program's payloadDescriptors (the units of its events' payloads),
 * fetched with each poll when program_id is set; a change is logged and
 * every event read again at the next poll (the book forgets the versions) */
static void program_follow(ctl *c, pfi_vtn *v)
{
    const char *pid = c->cfg.vtn.program_id;
    char path[16 + 3 * 128 + 1], esc[3 * 128 + 1];
    if (!pid[0] || pfi_url_escape(pid, esc, sizeof esc)) return;
    snprintf(path, sizeof path, "/programs/%s", esc);
    pfi_http_reply r;
    pfi_error e;
    if (pfi_vtn_request(v, "GET", path, NULL, &r, &e)) return;
    json_t *o = r.code == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    pfi_http_reply_dispose(&r);
    json_t *d = json_object_get(o, "payloadDescriptors");
    char *text = json_is_array(d) ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text) return; /* not answered or none: the last known stays */
    pthread_mutex_lock(&c->mu);
    if (!c->io.program_descriptors || strcmp(c->io.program_descriptors, text)) {
        ctl_log(c, "VTN: program %s: payloadDescriptors %s", pid,
                c->io.program_descriptors ? "changed: its events are read again" : "read");
        if (c->io.program_descriptors) pfi_oadr_book_free(&c->oadr_book);
        free(c->io.program_descriptors);
        c->io.program_descriptors = text;
        text = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(text);
}

/* new access tokens and 401/403 retries since the last turn, logged */
static void log_tokens(ctl *c, const pfi_vtn *v, unsigned long *fetches, unsigned long *retries)
{
    if (v->token_fetches == *fetches && v->retries_auth == *retries) return;
    pthread_mutex_lock(&c->mu);
    if (v->retries_auth != *retries)
        ctl_log(c, "VTN: a request was refused (401 or 403): new token, request retried once");
    if (v->token_fetches != *fetches)
        ctl_log(c, "VTN: access token fetched from %s (%lu so far)", v->token_url,
                v->token_fetches);
    pthread_mutex_unlock(&c->mu);
    *fetches = v->token_fetches, *retries = v->retries_auth;
}

/* the thread's clocks: each part of the conversation on its own (issue 42:
 * polling and reporting wait on neither registration nor subscription) */
typedef struct vtn_clock {
    double next_reg, reg_backoff;
    double next_sub, sub_backoff;
    double next_notifiers; /* subscriptions off: when GET /notifiers is asked again */
    double next_poll, poll_backoff;
    double next_targets; /* the VEN object's targets, read again */
    double next_report, report_backoff;
    long long listed; /* events the last poll listed */
} vtn_clock;

#define VTN_HOUR 3600.0

/* the wait after a failed request: Retry-After where the VTN gave one
 * (RFC 6585 4, RFC 9110 10.2.3; capped at cap), else *backoff, which
 * doubles up to cap (lock not held) */
static double vtn_wait(ctl *c, const pfi_vtn *v, double *backoff, double cap)
{
    double w = *backoff;
    if (v->last_retry_after_s > 0) {
        w = fmin(v->last_retry_after_s, cap);
        pthread_mutex_lock(&c->mu);
        c->vtn.retry_after_s = v->last_retry_after_s;
        pthread_mutex_unlock(&c->mu);
    }
    *backoff = fmin(2 * *backoff, cap);
    return w;
}

/* the VEN object's targets (3.1: the business logic's grants, User Guide
 * 8.13), at registration and hourly; a change has every event read again */
static void vtn_targets(ctl *c, pfi_vtn *v, vtn_clock *k)
{
    char t[16][129];
    size_t n = 0;
    pfi_error e;
    k->next_targets = pfi_wall_monotonic() + VTN_HOUR;
    if (pfi_vtn_ven_targets(v, t, 16, &n, &e)) return;
    pthread_mutex_lock(&c->mu);
    int changed = n != c->nven_targets || memcmp(t, c->ven_targets, n * sizeof t[0]);
    memcpy(c->ven_targets, t, n * sizeof t[0]);
    c->nven_targets = n;
    if (changed && n)
        ctl_log(c, "VTN: the VEN object's targets: %zu (events for them are ours)", n);
    pthread_mutex_unlock(&c->mu);
}

/* registration: done, or given up (POST /vens refused and the listing
 * does not tell which VEN is ours: one error, polls go on without a VEN
 * id), or retried after a wait */
static void vtn_register(ctl *c, pfi_vtn *v, vtn_clock *k)
{
    pfi_error e;
    pfi_status st = pfi_vtn_register(v, &e);
    pthread_mutex_lock(&c->mu);
    if (!st) {
        c->vtn.registered = CTL_VTN_DONE;
        snprintf(c->vtn.ven_id, sizeof c->vtn.ven_id, "%s", v->ven_id);
        if (v->ven_listed) {
            c->vtn.nonconf[CTL_VTN_NC_VEN_LISTED]++;
            snprintf(c->vtn.ven_name_listed, sizeof c->vtn.ven_name_listed, "%s",
                     v->ven_name_listed);
            ctl_log(c,
                    "VTN: POST /vens refused (403 or 409): the only VEN the VTN lists is ours: "
                    "venName %s (id %s)",
                    v->ven_name_listed, v->ven_id);
        } else ctl_log(c, "VTN: registered as VEN %s (id %s)", c->cfg.openadr_ven_name, v->ven_id);
        k->next_targets = 0; /* read below, before the next poll */
    } else if (st == PFI_ENOTFOUND) {
        c->vtn.registered = CTL_VTN_OFF;
        ctl_log(c, "error: VTN registration: %s; polling goes on without a VEN id", e.msg);
    }
    pthread_mutex_unlock(&c->mu);
    if (!st && !v->cfg.v301) vtn_targets(c, v, k);
    if (st && st != PFI_ENOTFOUND) {
        double w = vtn_wait(c, v, &k->reg_backoff, c->cfg.openadr_poll_s);
        k->next_reg = pfi_wall_monotonic() + w;
        pthread_mutex_lock(&c->mu);
        ctl_log(c, "warning: VTN registration: %s; again in %g s", e.msg, w);
        pthread_mutex_unlock(&c->mu);
    }
}

/* subscription (issue 42): a VTN without webhooks (404, 405, 501) is not
 * asked again until restart or until GET /notifiers says WEBHOOK true
 * (asked hourly); 429 and 5xx back off from 1 s doubling to an hour
 * (Retry-After honoured); another 4xx (a refused echo challenge among
 * them) is retried hourly. Each change of state is logged once. */
static void vtn_subscribe(ctl *c, pfi_vtn *v, vtn_clock *k)
{
    pfi_error e;
    int created;
    pfi_status st = pfi_vtn_subscribe(v, &created, &e);
    long code = v->last_code;
    double now = pfi_wall_monotonic();
    pthread_mutex_lock(&c->mu);
    int was = c->vtn.subscribed;
    if (!st) {
        c->vtn.subscribed = CTL_VTN_DONE;
        k->sub_backoff = 1;
        ctl_log(c, "VTN: subscribed to EVENT (subscription %s, %s), callback %s",
                v->subscription_id, created ? "created" : "already there", c->cfg.vtn.callback_url);
    } else if (code == 404 || code == 405 || code == 501) {
        c->vtn.subscribed = CTL_VTN_OFF;
        c->vtn.nonconf[CTL_VTN_NC_NO_WEBHOOKS]++;
        k->next_notifiers = now + VTN_HOUR;
        ctl_log(c,
                "warning: VTN subscription: %s: the VTN takes no webhooks; polling every %g s "
                "instead (asked again when GET /notifiers says WEBHOOK, or at restart)",
                e.msg, c->cfg.openadr_poll_s);
    } else {
        int later = code == 429 || code >= 500 || code == 0;
        pthread_mutex_unlock(&c->mu);
        double w = later ? vtn_wait(c, v, &k->sub_backoff, VTN_HOUR) : VTN_HOUR;
        pthread_mutex_lock(&c->mu);
        k->next_sub = now + w;
        if (was != CTL_VTN_TRYING || k->sub_backoff <= 2 || !later)
            ctl_log(c, "warning: VTN subscription: %s; again in %g s (polling meanwhile)", e.msg,
                    w);
    }
    pthread_mutex_unlock(&c->mu);
}

/* subscriptions off: does the VTN take webhooks now? */
static void vtn_notifiers(ctl *c, pfi_vtn *v, vtn_clock *k)
{
    int webhook = 0;
    pfi_error e;
    k->next_notifiers = pfi_wall_monotonic() + VTN_HOUR;
    if (pfi_vtn_notifiers(v, &webhook, &e) || !webhook) return;
    pthread_mutex_lock(&c->mu);
    c->vtn.subscribed = CTL_VTN_TRYING;
    ctl_log(c, "VTN: GET /notifiers says WEBHOOK: subscribing again");
    pthread_mutex_unlock(&c->mu);
    k->next_sub = 0, k->sub_backoff = 1;
}

static void vtn_poll(ctl *c, pfi_vtn *v, vtn_clock *k)
{
    pfi_error e;
    program_follow(c, v);
    if (!poll_events(c, v, &k->listed, &e)) {
        k->next_poll = pfi_wall_monotonic() + c->cfg.openadr_poll_s;
        k->poll_backoff = 1;
        pthread_mutex_lock(&c->mu);
        c->vtn.last_poll_ok = pfi_clock_now();
        pthread_mutex_unlock(&c->mu);
        return;
    }
    double w = vtn_wait(c, v, &k->poll_backoff, c->cfg.openadr_poll_s);
    k->next_poll = pfi_wall_monotonic() + w;
    pthread_mutex_lock(&c->mu);
    ctl_log(c, "warning: VTN GET /events: %s; again in %g s", e.msg, w);
    pthread_mutex_unlock(&c->mu);
}

static void *vtn_thread(void *arg)
{
    vtn_run *run = arg;
    ctl *c = run->c;
    const ctl_cfg *g = &c->cfg;
    pfi_vtn_cfg vc = {.vtn_url = g->vtn.vtn_url,
                      .v301 = g->openadr_version == PFI_OADR_V3_0_1,
                      .token_url = g->vtn.token_url,
                      .client_id = run->id,
                      .client_secret = run->secret,
                      .ven_name = g->openadr_ven_name,
                      .program_id = g->vtn.program_id,
                      .callback_url = g->vtn.callback_url,
                      .callback_token = c->io.callback_token,
                      .targets = run->targets,
                      .ntargets = g->vtn.ntargets,
                      .ca_file = g->vtn.ca_file[0] ? g->vtn.ca_file : NULL,
                      .allow_insecure_http = g->vtn.allow_insecure_http,
                      .timeout_s = 10};
    pfi_vtn v;
    pfi_vtn_init(&v, &vc);
    vtn_clock k = {.reg_backoff = 1,
                   .sub_backoff = 1,
                   .poll_backoff = 1,
                   .report_backoff = 1,
                   .next_targets = INFINITY,
                   .listed = -1};
    int v301 = g->openadr_version == PFI_OADR_V3_0_1;
    unsigned long fetches = 0, retries = 0, strings = 0;
    pthread_mutex_lock(&c->mu);
    c->vtn.on = 1, c->vtn.polling = 1;
    c->vtn.subscribed = g->vtn.callback_url[0] ? CTL_VTN_TRYING : CTL_VTN_UNWANTED;
    pthread_mutex_unlock(&c->mu);
    while (!c->io.vtn_stop) {
        if (!ctl_failover_leads(c)) { /* failover: only the leader talks to the VTN */
            nap(c, 0.2);
            continue;
        }
        double now = pfi_wall_monotonic();
        pthread_mutex_lock(&c->mu);
        int reg = c->vtn.registered, sub = c->vtn.subscribed;
        pthread_mutex_unlock(&c->mu);
        if (reg == CTL_VTN_TRYING && now >= k.next_reg) vtn_register(c, &v, &k);
        else if (reg == CTL_VTN_DONE && !v301 && now >= k.next_targets) vtn_targets(c, &v, &k);
        if (sub == CTL_VTN_TRYING && reg != CTL_VTN_TRYING && now >= k.next_sub)
            vtn_subscribe(c, &v, &k);
        else if (sub == CTL_VTN_OFF && now >= k.next_notifiers) vtn_notifiers(c, &v, &k);
        if (pfi_wall_monotonic() >= k.next_poll) vtn_poll(c, &v, &k);
        log_tokens(c, &v, &fetches, &retries);
        if (v.expires_in_strings != strings) {
            pthread_mutex_lock(&c->mu);
            c->vtn.nonconf[CTL_VTN_NC_EXPIRES_STRING] += v.expires_in_strings - strings;
            pthread_mutex_unlock(&c->mu);
            strings = v.expires_in_strings;
        }
        /* reports on their own backoff: also while polling fails */
        if (pfi_wall_monotonic() >= k.next_report)
            ctl_vtn_report_due(c, &v, v301, &k.next_report, &k.report_backoff);
        nap(c, fmax(0, fmin(k.next_poll - pfi_wall_monotonic(), 0.2)));
    }
    pfi_vtn_dispose(&v);
    memset(run->secret, 0, sizeof run->secret);
    free(run);
    return NULL;
}

int ctl_vtn_start(ctl *c)
{
    const ctl_cfg *g = &c->cfg;
    if (!g->vtn.vtn_url[0]) return 0;
    /* the callback token is the grid's, never an operator's (ctl_operators.c) */
    if (g->vtn.callback_url[0] && (callback_token(c) || ctl_operators_grid_check(c))) return -1;
    vtn_run *run = calloc(1, sizeof *run);
    if (!run) {
        ctl_log(c, "error: out of memory");
        return -1;
    }
    run->c = c;
    if (read_secret(c, "client_id_file", g->vtn.client_id_file, 1, PFI_VTN_SECRET_MAX, run->id,
                    sizeof run->id) ||
        read_secret(c, "client_secret_file", g->vtn.client_secret_file, 1, PFI_VTN_SECRET_MAX,
                    run->secret, sizeof run->secret)) {
        free(run);
        return -1;
    }
    for (size_t i = 0; i < g->vtn.ntargets; i++) run->targets[i] = g->vtn.targets[i];
    c->io.vtn_stop = 0;
    if (pthread_create(&c->io.vtn_thread, NULL, vtn_thread, run)) {
        ctl_log(c, "error: cannot start the VTN thread");
        free(run);
        return -1;
    }
    c->io.vtn_running = 1;
    ctl_log(c, "VTN: %s (OpenADR %s), VEN %s", g->vtn.vtn_url,
            g->openadr_version == PFI_OADR_V3_0_1 ? "3.0.1" : "3.1", g->openadr_ven_name);
    return 0;
}

void ctl_vtn_stop(ctl *c)
{
    if (!c->io.vtn_running) return;
    c->io.vtn_stop = 1;
    pthread_join(c->io.vtn_thread, NULL);
    c->io.vtn_running = 0;
}
