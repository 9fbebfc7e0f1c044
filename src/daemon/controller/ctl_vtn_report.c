/* ctl_vtn_report.c — pfi-controller's REPORTs to its VTN (docs/controller.md
 * "OpenADR 3: the VTN", "Reports"), the VTN thread's (ctl_vtn.c) one part
 * that writes to it.
 *
 * When an OpenADR event has run (done, or cancelled after it started; and
 * while it runs, each report interval once it is over), its REPORT — per
 * report_interval_s of the event: DEMAND (mean measured GPU power, kW),
 * BASELINE (the event's baseline, kW), DELTA_USAGE (measured less baseline
 * energy, kWh) of the resource "pfi-gpus", or what its reportDescriptors
 * ask for — is kept in SQLite (vtn_reports) and sent (POST /reports) until
 * the VTN accepts it (2xx with an id), a failed try again after 1 s,
 * doubling up to 5 minutes, or after the VTN's Retry-After (at most 5
 * minutes). A 3.0.1 report names its program: the
 * configured program_id, else the event's own programID, read from the VTN
 * (GET /events/{id}) when the report is sent (issue 42: a 3.0.1 VEN
 * polling without program_id sent no report). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_store.h"
#include "ctl_vtn.h"

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
    size_t n = 0;
    /* failover: the store's per-interval aggregates, whichever controller
       sampled the interval (ctl_store_agg.c); else this one's samples */
    if (t && m && sum && cnt && ctl_store(c)->buckets)
        ctl_store(c)->buckets(c, e->ev.id, sum, cnt, nb);
    else if (t && m && sum && cnt) n = ctl_db_samples(c, e->ev.id, t, m, max);
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
        if (r && v301) { /* programID "": the event's, filled in when sent */
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
                if (put == 0 && body) {
                    ctl_log(c, "VTN: report for event %s kept until the VTN accepts it", key);
                    ctl_store(c)->report_intent(c, key, body); /* failover: a new leader sends it */
                }
                free(body);
                if (put) break;
            }
            e->reports_kept = k + 1;
        }
    }
}

/* a 3.0.1 report whose programID is "" (no program_id configured): the
 * event's own programID, which every 3.0.1 event carries (its schema
 * requires it), read from the VTN. 0: filled in, or nothing to fill; -1:
 * not answered (*why; the report is sent again later) */
static int program_of_event(pfi_vtn *v, char **body, char *why, size_t n)
{
    json_t *o = json_loads(*body, 0, NULL);
    const char *pid = json_string_value(json_object_get(o, "programID"));
    const char *eid = json_string_value(json_object_get(o, "eventID"));
    char path[16 + 3 * PFI_OADR_ID_MAX + 1], esc[3 * PFI_OADR_ID_MAX + 1];
    if (!pid || pid[0] || !eid || pfi_url_escape(eid, esc, sizeof esc)) {
        json_decref(o);
        return 0;
    }
    snprintf(path, sizeof path, "/events/%s", esc);
    pfi_http_reply r;
    pfi_error e;
    pfi_status st = pfi_vtn_request(v, "GET", path, NULL, &r, &e);
    json_t *ev = !st && r.code == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    const char *got = json_string_value(json_object_get(ev, "programID"));
    char *text = NULL;
    if (got && got[0]) {
        json_object_set_new(o, "programID", json_string(got));
        text = json_dumps(o, JSON_COMPACT);
    }
    if (text) free(*body), *body = text;
    else
        snprintf(why, n, "its programID: GET %.200s: %.200s", path,
                 st    ? e.msg
                 : got ? "out of memory"
                       : "no programID");
    if (!st) pfi_http_reply_dispose(&r);
    json_decref(ev), json_decref(o);
    return text ? 0 : -1;
}

/* a report that may be at the VTN already, asked of it by its reportName
 * (GET /reports?eventID=&clientName=, up to 10 pages of 50): one the dead
 * leader kept and may have POSTed (failover; ctl_store_oadr.c), or one a
 * POST of got 409 (openleadr-rs: the name is taken). 1 found (done, with
 * the VTN's id), 0 not there (send it), -1 the VTN did not answer (later) */
static int resolve(ctl *c, pfi_vtn *v, const char *key, const char *body)
{
    json_t *o = json_loads(body, 0, NULL);
    const char *eid = json_string_value(json_object_get(o, "eventID"));
    const char *client = json_string_value(json_object_get(o, "clientName"));
    const char *name = json_string_value(json_object_get(o, "reportName"));
    char e1[3 * PFI_OADR_ID_MAX + 1], e2[3 * 128 + 1], path[sizeof e1 + sizeof e2 + 64];
    int found = 0;
    if (!eid || !client || !name || pfi_url_escape(eid, e1, sizeof e1) ||
        pfi_url_escape(client, e2, sizeof e2)) {
        json_decref(o);
        return 0;
    }
    for (int page = 0; page < 10 && !found; page++) {
        snprintf(path, sizeof path, "/reports?eventID=%s&clientName=%s&skip=%d&limit=50", e1, e2,
                 50 * page);
        pfi_http_reply r = {0};
        pfi_error e = {0};
        pfi_status st = pfi_vtn_request(v, "GET", path, NULL, &r, &e);
        if (st || r.code != 200) {
            if (!st) snprintf(e.msg, sizeof e.msg, "HTTP %ld", r.code), pfi_http_reply_dispose(&r);
            pthread_mutex_lock(&c->mu);
            ctl_log(c, "warning: VTN GET /reports for report %s: %s; asked again later", key,
                    e.msg);
            pthread_mutex_unlock(&c->mu);
            json_decref(o);
            return -1;
        }
        json_t *a = json_loadb(r.body, r.len, 0, NULL);
        size_t i, n = json_array_size(a);
        json_t *it;
        json_array_foreach(a, i, it)
        {
            const char *rn = json_string_value(json_object_get(it, "reportName"));
            const char *rid = json_string_value(json_object_get(it, "id"));
            if (!found && rn && rid && !strcmp(rn, name)) {
                pthread_mutex_lock(&c->mu);
                ctl_db_report_done(c, key, rid);
                ctl_log(c,
                        "VTN: report for event %s found at the VTN (report %.128s), sent "
                        "before: not sent again",
                        key, rid);
                pthread_mutex_unlock(&c->mu);
                ctl_store(c)->report_done(c, key, rid);
                found = 1;
            }
        }
        json_decref(a);
        pfi_http_reply_dispose(&r);
        if (n < 50) break;
    }
    json_decref(o);
    return found;
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
    char why[512];
    if (c->cfg.openadr_version == PFI_OADR_V3_0_1 && program_of_event(v, &body, why, sizeof why)) {
        free(body);
        pthread_mutex_lock(&c->mu);
        ctl_log(c, "warning: VTN POST /reports for event %s: %s; kept, sent again later", id, why);
        pthread_mutex_unlock(&c->mu);
        return -1;
    }
    if (pfi_oadr_report_check(body, strlen(body), (pfi_oadr_version)c->cfg.openadr_version, &e)) {
        free(body); /* a strict VTN must refuse it: never sent */
        pthread_mutex_lock(&c->mu);
        ctl_db_report_refused(c, id);
        c->reports_refused++;
        ctl_log(c, "error: report for event %s fails the OpenADR schema (%s): not sent", id, e.msg);
        pthread_mutex_unlock(&c->mu);
        return 1;
    }
    int known = ctl_store_report_unresolved(c, id) ? resolve(c, v, id, body) : 0;
    if (known) { /* found at the VTN (1), or it did not answer (-1) */
        if (known > 0) ctl_store_report_resolved(c, id);
        free(body);
        return known;
    }
    ctl_store_report_resolved(c, id);
    if (ctl_store(c)->report_intent(c, id, body)) { /* failover: committed before it is sent */
        free(body);
        return -1;
    }
    pfi_status st = pfi_vtn_request(v, "POST", "/reports", body, &r, &e);
    if (!st && r.code == 409) {
        /* openleadr-rs keeps reportName unique: 409 may say that a report
           of this name is there (sent before, by us or a dead leader): asked
           by name, found, it is accepted; not found (the other 409: its
           event unknown), refused below; not answered, later */
        int found = resolve(c, v, id, body);
        if (found) {
            free(body);
            pfi_http_reply_dispose(&r);
            return found;
        }
    }
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
        snprintf(why, sizeof why,
                 r.code >= 200 && r.code < 300 ? "HTTP %ld without a report id" : "HTTP %ld",
                 r.code);
        ctl_log(c, "warning: VTN POST /reports for event %s: %s; kept, sent again later", id,
                st ? e.msg : why);
    }
    pthread_mutex_unlock(&c->mu);
    if (rid || refused) ctl_store(c)->report_done(c, id, rid); /* failover: answered */
    json_decref(o);
    if (!st) pfi_http_reply_dispose(&r);
    return rid || refused ? 1 : -1;
}

/* the reports due, kept and sent; the next try after a failure backs off
 * from 1 s doubling to 5 min */
void ctl_vtn_report_due(ctl *c, pfi_vtn *v, int v301, double *next_report, double *backoff)
{
    pthread_mutex_lock(&c->mu);
    keep_reports(c, v301);
    pthread_mutex_unlock(&c->mu);
    int k = send_report(c, v);
    if (k < 0) { /* the VTN's Retry-After (a 429, a 503) where it gave one */
        double w = v->last_retry_after_s > 0 ? fmin(v->last_retry_after_s, 300) : *backoff;
        *next_report = pfi_wall_monotonic() + w;
        *backoff = fmin(2 * *backoff, 300);
    } else {
        *backoff = 1;
        /* a report is due at most a control period after its interval ends */
        *next_report = pfi_wall_monotonic() + (k ? 0 : fmin(1, c->cfg.period_s / 2));
    }
}
