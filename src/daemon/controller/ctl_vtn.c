/* ctl_vtn.c — pfi-controller as an OpenADR 3 VEN talking to its VTN
 * (docs/controller.md "OpenADR 3: the VTN"; the client is vtn_client.h).
 *
 * At start-up the callback token — the bearer token the subscription gives
 * the VTN, which the webhook POST /openadr3/events then accepts besides the
 * controller's own token — is read from callback_token_file, or made (32
 * random bytes as hex) and written there with mode 0600 when the file does
 * not exist. A thread then, until the controller stops: fetches a token,
 * registers the VEN, subscribes to EVENT operations (when callback_url is
 * set) and polls GET /events every poll_s wall seconds as a fallback,
 * handing each event to the OpenADR parser like the plain poller
 * (ctl_openadr_ingest). A step that fails is retried after 1 s, doubling
 * up to poll_s. Each step is logged once done ("VTN: ..."; a poll when
 * the number of events listed changed).
 *
 * Reports: when an OpenADR event has run (done, or cancelled after it
 * started), its REPORT — per report_interval_s of the event: DEMAND (mean
 * measured GPU power, kW), BASELINE (the event's baseline, kW), DELTA_USAGE
 * (measured less baseline energy, kWh) of the resource "pfi-gpus" — is kept
 * in SQLite (vtn_reports) and sent (POST /reports) until the VTN accepts it
 * (2xx with an id), a failed try again after 1 s, doubling up to an hour. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "vec.h"
#include "vtn_client.h"

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

typedef struct vtn_run {
    ctl *c;
    char id[PFI_VTN_SECRET_MAX + 1], secret[PFI_VTN_SECRET_MAX + 1];
    const char *targets[16];
} vtn_run;

/* the REPORT of event e's report intervals [b_lo, b_hi) (each
 * report_interval_s long, from the event's start; lock held): a malloc'd
 * JSON text, or NULL when it has nothing to report (no sample, no
 * baseline) */
static char *build_report(ctl *c, const ctl_event *e, int v301, size_t b_lo, size_t b_hi)
{
    const ctl_cfg *g = &c->cfg;
    double start = e->ev.start, end = pfi_grid_event_end(&e->ev), R = g->vtn.report_s;
    if (!isfinite(e->baseline_w) || !(end > start)) return NULL;
    size_t nb = (size_t)fmin(ceil((end - start) / R), 10000), max = 200000;
    double *t = malloc(max * sizeof *t), *m = malloc(max * sizeof *m);
    double *sum = calloc(nb, sizeof *sum), *cnt = calloc(nb, sizeof *cnt);
    char *out = NULL;
    size_t n = t && m && sum && cnt ? ctl_db_samples(c, e->ev.id, t, m, max) : 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(m[i]) || t[i] < start || t[i] >= end) continue;
        size_t b = (size_t)((t[i] - start) / R);
        if (b < nb) sum[b] += m[i], cnt[b]++;
    }
    /* the VTN's own event id and the interval's own id (issue 29): a step of
       a multi-interval event is "ID.k" here, which the VTN does not know */
    char vid[PFI_OADR_ID_MAX + 1];
    long long iid = 0;
    if (ctl_db_oadr_step_get(c, e->ev.id, vid, sizeof vid, &iid)) {
        const char *dot = strrchr(e->ev.id, '.');
        size_t len = dot ? (size_t)(dot - e->ev.id) : strlen(e->ev.id);
        snprintf(vid, sizeof vid, "%.*s", (int)(len < PFI_OADR_ID_MAX ? len : PFI_OADR_ID_MAX),
                 e->ev.id);
        iid = dot ? strtoll(dot + 1, NULL, 10) : 0;
    }
    json_t *iv = json_array();
    double base_kw = e->baseline_w / 1000;
    /* what the event's reportDescriptors ask for (all three without them) */
    unsigned want = e->report_mask ? e->report_mask : PFI_OADR_REPORT_DEFAULT;
    const char *types[] = {"DEMAND", "BASELINE", "DELTA_USAGE", "READING", "USAGE"};
    const char *units[] = {"KW", "KW", "KWH", "KW", "KWH"};
    /* BASELINE: the mean of a steady uncapped window, else an estimate
       (ctl_baseline.c; the Definition's reading types, Table 3) */
    const char *reading[] = {"MEAN", e->baseline_src == CTL_BASE_STEADY ? "MEAN" : "ESTIMATED",
                             "SUMMED", "MEAN", "SUMMED"};
    for (size_t b = b_lo; b < nb && b < b_hi && iv && !(want & PFI_OADR_REPORT_NONE); b++) {
        if (!cnt[b]) continue;
        double b0 = start + (double)b * R, len = fmin(R, end - b0), kw = sum[b] / cnt[b] / 1000;
        double v[5] = {kw, base_kw, (kw - base_kw) * len / 3600, kw, kw * len / 3600};
        char ts[40], dur[40];
        pfi_rfc3339_format(b0, ts, sizeof ts);
        snprintf(dur, sizeof dur, "PT%.0fS", fmax(1, round(len)));
        json_t *pl = json_array();
        for (int k = 0; k < 5; k++)
            if (want & (1u << k))
                json_array_append_new(pl,
                                      json_pack("{s:s,s:[f]}", "type", types[k], "values", v[k]));
        json_array_append_new(iv, json_pack("{s:I,s:{s:s,s:s},s:o}", "id", (json_int_t)iid,
                                            "intervalPeriod", "start", ts, "duration", dur,
                                            "payloads", pl));
    }
    if (iv && json_array_size(iv)) {
        json_t *desc = json_array();
        for (size_t i = 0; i < 5; i++)
            if (want & (1u << i))
                json_array_append_new(desc, json_pack("{s:s,s:s,s:s,s:s}", "objectType",
                                                      "REPORT_PAYLOAD_DESCRIPTOR", "payloadType",
                                                      types[i], "readingType", reading[i], "units",
                                                      units[i]));
        /* unique per report: openleadr-rs keeps a unique index on reportName
           (a second report of the same name is 409 there) */
        char name[sizeof e->ev.id + 32];
        snprintf(name, sizeof name, "pfi %s#%zu", e->ev.id, b_lo);
        json_t *r = json_pack("{s:s,s:s,s:s,s:o,s:[{s:s,s:O}]}", "eventID", vid, "clientName",
                              g->openadr_ven_name, "reportName", name, "payloadDescriptors", desc,
                              "resources", "resourceName", "pfi-gpus", "intervals", iv);
        if (r && v301) {
            json_object_set_new(r, "objectType", json_string("REPORT"));
            json_object_set_new(r, "programID", json_string(g->vtn.program_id));
        }
        out = r ? json_dumps(r, JSON_COMPACT) : NULL;
        json_decref(r);
    }
    json_decref(iv);
    free(t), free(m), free(sum), free(cnt);
    return out;
}

/* keep a report for every report interval of every OpenADR event that has
 * ended: while an event runs, each interval once it is over (so a report
 * goes out within a second or two of its interval's end: the VTN thread
 * looks every second); when the event is done or cancelled, the rest, the
 * last one short. Each is kept under "EVENTID#k" (k: the interval); an
 * interval without samples is kept as nothing to send (lock held). */
static void keep_reports(ctl *c, int v301)
{
    double now = pfi_clock_now(), R = c->cfg.vtn.report_s;
    for (size_t i = 0; i < c->st.nevents; i++) {
        ctl_event *e = &c->st.event[i];
        int active = (e->status == CTL_EV_ACTIVE);
        if (strcmp(e->ev.source, "openadr") || !isfinite(e->baseline_w) ||
            (!active && (e->status != CTL_EV_DONE) && (e->status != CTL_EV_CANCELLED)))
            continue;
        double start = e->ev.start, end = pfi_grid_event_end(&e->ev);
        double span = active ? fmin(end, now) - start : end - start;
        if (!(span > 0)) continue;
        size_t due = (size_t)fmin(active ? floor(span / R) : ceil(span / R), 10000);
        /* intervals below reports_kept are in the table already: a finished
           event costs nothing here once its last interval is kept */
        for (size_t k = e->reports_kept; k < due; k++) {
            char key[sizeof e->ev.id + 24];
            snprintf(key, sizeof key, "%s#%zu", e->ev.id, k);
            int have = ctl_db_report_has(c, key);
            if (have < 0) break; /* the database: tried again next time */
            if (!have) {
                char *body = build_report(c, e, v301, k, k + 1);
                int put = ctl_db_report_put(c, key, body ? body : "");
                if (put == 0 && body)
                    ctl_log(c, "VTN: report for event %s kept until the VTN accepts it", key);
                free(body);
                if (put) break;
            }
            e->reports_kept = k + 1;
        }
    }
}

/* send the oldest report not yet accepted: 1 sent and accepted, 0 none
 * due, -1 failed (logged) */
static int send_report(ctl *c, pfi_vtn *v)
{
    char id[sizeof(((ctl_event *)0)->ev.id) + 24]; /* "EVENTID#k" */
    pthread_mutex_lock(&c->mu);
    char *body = ctl_db_report_next(c, id, sizeof id);
    pthread_mutex_unlock(&c->mu);
    if (!body) return 0;
    pfi_http_reply r;
    pfi_error e;
    if (pfi_oadr_report_check(body, strlen(body), (pfi_oadr_version)c->cfg.openadr_version, &e)) {
        free(body); /* a strict VTN must refuse it: never sent */
        pthread_mutex_lock(&c->mu);
        ctl_db_report_refused(c, id);
        c->reports_refused++;
        ctl_log(c, "error: report for event %s fails the OpenADR schema (%s): not sent", id, e.msg);
        pthread_mutex_unlock(&c->mu);
        return 1;
    }
    pfi_status st = pfi_vtn_request(v, "POST", "/reports", body, &r, &e);
    free(body);
    json_t *o = !st && r.code >= 200 && r.code < 300 ? json_loads(r.body, 0, NULL) : NULL;
    const char *rid = json_string_value(json_object_get(o, "id"));
    pthread_mutex_lock(&c->mu);
    /* a 4xx (401 was retried with a new token already; 408 and 429 say
       "later") will not change by sending the same report again */
    int refused = !st && r.code >= 400 && r.code < 500 && r.code != 408 && r.code != 429;
    if (rid) {
        ctl_db_report_done(c, id, rid);
        ctl_log(c, "VTN: report for event %s accepted (report %.128s)", id, rid);
    } else if (refused) {
        ctl_db_report_refused(c, id);
        c->reports_refused++;
        char said[201]; /* the VTN's answer, one line, printable */
        size_t k = 0;
        for (size_t i = 0; r.body && i < r.len && k + 1 < sizeof said; i++)
            said[k++] = (unsigned char)r.body[i] < 0x20 || (unsigned char)r.body[i] >= 0x7f
                            ? '?'
                            : r.body[i];
        said[k] = '\0';
        ctl_log(c,
                "warning: VTN POST /reports for event %s: HTTP %ld: refused, not sent again; the "
                "VTN said: %s",
                id, r.code, k ? said : "(nothing)");
    } else {
        ctl_db_report_done(c, id, NULL);
        char why[64];
        snprintf(why, sizeof why,
                 r.code >= 200 && r.code < 300 ? "HTTP %ld without a report id" : "HTTP %ld",
                 r.code);
        ctl_log(c, "warning: VTN POST /reports for event %s: %s; kept, sent again later", id,
                st ? e.msg : why);
    }
    pthread_mutex_unlock(&c->mu);
    json_decref(o);
    if (!st) pfi_http_reply_dispose(&r);
    return rid || refused ? 1 : -1;
}

/* sleep up to s wall seconds, less when the controller stops */
static void nap(ctl *c, double s)
{
    double end = pfi_wall_monotonic() + s;
    while (!c->io.vtn_stop && pfi_wall_monotonic() < end) usleep(50 * 1000);
}

/* the ids a page of GET /events lists, appended to *ids (a growable list
   of malloc'd strings); -1 when the page is not a JSON array */
static int page_ids(const char *body, char ***ids, size_t *n, size_t *cap)
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
    json_decref(a);
    return 0;
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
        pthread_mutex_unlock(&c->mu);
    }
}

/* the VTN's events, page after page (skip, limit=PFI_VTN_PAGE) until a
 * short page, at most 40 pages (2,000 events), each into the controller;
 * a complete listing (every page 2xx, the last one short) reconciles what
 * the VTN deleted; *listed: the count of the last poll (logged when it
 * changes) */
static pfi_status poll_events(ctl *c, pfi_vtn *v, long long *listed, pfi_error *e)
{
    char *body, **ids = NULL;
    size_t n = 0, k = PFI_VTN_PAGE, nids = 0, cap = 0;
    pfi_status st = PFI_OK;
    int whole = 1;
    for (int page = 0; !st && k == PFI_VTN_PAGE && page < 40; page++) {
        if (!(st = pfi_vtn_events_page(v, n, &body, e))) {
            whole &= page_ids(body, &ids, &nids, &cap) == 0;
            k = ctl_openadr_ingest_page(c, body, PFI_VTN_PAGE, c->cfg.vtn.vtn_url);
            n += k;
            free(body);
        }
    }
    if (!st && whole && k < PFI_VTN_PAGE) reconcile(c, v, ids, nids);
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

/* the reports due, kept and sent; the next try after a failure backs off
 * from 1 s doubling to 5 min */
static void report_due(ctl *c, pfi_vtn *v, int v301, double *next_report, double *backoff)
{
    pthread_mutex_lock(&c->mu);
    keep_reports(c, v301);
    pthread_mutex_unlock(&c->mu);
    int k = send_report(c, v);
    if (k < 0) {
        *next_report = pfi_wall_monotonic() + *backoff;
        *backoff = fmin(2 * *backoff, 300);
    } else {
        *backoff = 1;
        /* a report is due at most a control period after its interval ends */
        *next_report = pfi_wall_monotonic() + (k ? 0 : fmin(1, c->cfg.period_s / 2));
    }
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
    int registered = 0, subscribed = !g->vtn.callback_url[0];
    double backoff = 1, next_poll = 0, report_backoff = 1, next_report = 0;
    int v301 = g->openadr_version == PFI_OADR_V3_0_1;
    int reports = !v301 || g->vtn.program_id[0]; /* a 3.0.1 report names its program */
    unsigned long fetches = 0, retries = 0;
    long long listed = -1; /* events the last poll listed */
    while (!c->io.vtn_stop) {
        pfi_error e;
        pfi_status st = PFI_OK;
        const char *step = "";
        if (!registered) {
            step = "registration";
            if (!(st = pfi_vtn_register(&v, &e))) {
                registered = 1;
                pthread_mutex_lock(&c->mu);
                ctl_log(c, "VTN: registered as VEN %s (id %s)", g->openadr_ven_name, v.ven_id);
                pthread_mutex_unlock(&c->mu);
            }
        } else if (!subscribed) {
            step = "subscription";
            int created;
            if (!(st = pfi_vtn_subscribe(&v, &created, &e))) {
                subscribed = 1;
                pthread_mutex_lock(&c->mu);
                ctl_log(c, "VTN: subscribed to EVENT (subscription %s, %s), callback %s",
                        v.subscription_id, created ? "created" : "already there",
                        g->vtn.callback_url);
                pthread_mutex_unlock(&c->mu);
            }
        } else if (pfi_wall_monotonic() >= next_poll) {
            step = "GET /events";
            program_follow(c, &v);
            if (!(st = poll_events(c, &v, &listed, &e)))
                next_poll = pfi_wall_monotonic() + g->openadr_poll_s;
        }
        log_tokens(c, &v, &fetches, &retries);
        /* reports on their own backoff: also while polling fails */
        if (registered && subscribed && reports && pfi_wall_monotonic() >= next_report)
            report_due(c, &v, v301, &next_report, &report_backoff);
        if (st) {
            pthread_mutex_lock(&c->mu);
            ctl_log(c, "warning: VTN %s: %s; again in %g s", step, e.msg, backoff);
            pthread_mutex_unlock(&c->mu);
            nap(c, backoff);
            backoff = fmin(2 * backoff, g->openadr_poll_s);
            continue;
        }
        backoff = 1;
        if (registered && subscribed) nap(c, fmax(0, fmin(next_poll - pfi_wall_monotonic(), 0.2)));
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
