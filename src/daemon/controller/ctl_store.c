/* ctl_store.c — the store's interface (ctl_store.h): which backend, the
 * SQLite one (one controller: its database already holds everything), and
 * an event's form in the store. */
#include "ctl_store.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sqlite_commit(ctl *c, const ctl_decision *d, char *why, size_t n)
{
    (void)c, (void)d, (void)why, (void)n;
    return 0; /* ctl_persist's transaction was the commit */
}

static int sqlite_event_put(ctl *c, const ctl_event *e)
{
    (void)c, (void)e;
    return 0; /* ctl_db_put_event stored it */
}

static int sqlite_pull(ctl *c)
{
    (void)c;
    return 0; /* never a follower */
}

static int sqlite_report_intent(ctl *c, const char *key, const char *body)
{
    (void)c, (void)key, (void)body;
    return 0; /* ctl_db_report_put kept it */
}

static void sqlite_report_done(ctl *c, const char *key, const char *rid)
{
    (void)c, (void)key, (void)rid;
}

static void sqlite_oadr_first(ctl *c, const char *id, double first_s)
{
    (void)c, (void)id, (void)first_s; /* ctl_db_oadr_first_put stored it */
}

const ctl_store_ops ctl_store_sqlite = {.name = "sqlite",
                                        .commit = sqlite_commit,
                                        .event_put = sqlite_event_put,
                                        .pull = sqlite_pull,
                                        .takeover = NULL,
                                        .refresh = sqlite_pull,
                                        .report_intent = sqlite_report_intent,
                                        .report_done = sqlite_report_done,
                                        .buckets = NULL,
                                        .oadr_first = sqlite_oadr_first};

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

char *ctl_store_event_format(const ctl_event *e)
{
    char *ev = pfi_grid_event_format(&e->ev);
    if (!ev) return NULL;
    json_t *j = json_pack(
        "{ss ss ss so so so so so so ss ss ss ss}", "event", ev, "source", e->ev.source, "status",
        ctl_event_status_name(e->status), "baseline_w", num(e->baseline_w), "target_w",
        num(e->target_w), "ramp_s", num(e->ramp_s), "ramp_down_s", num(e->ramp_down_s), "reached_t",
        num(e->reached_t), "announced_t", num(e->announced_t), "baseline_source",
        e->status == CTL_EV_SCHEDULED ? "" : ctl_base_src_name(e->baseline_src), "created_by",
        e->created_by, "changed_by", e->changed_by, "cancelled_by", e->cancelled_by);
    free(ev);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

static double get_num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void get_str(json_t *o, const char *k, char *out, size_t n)
{
    const char *v = json_string_value(json_object_get(o, k));
    snprintf(out, n, "%s", v ? v : "");
}

int ctl_store_event_parse(const char *text, size_t len, ctl_event *e, char *why, size_t n)
{
    memset(e, 0, sizeof *e);
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    const char *ev = json_string_value(json_object_get(j, "event"));
    const char *status = json_string_value(json_object_get(j, "status"));
    pfi_error err = {0};
    int rc = -1;
    if (!j) snprintf(why, n, "not JSON: %s", je.text);
    else if (!ev || pfi_grid_event_parse(ev, strlen(ev), &e->ev, &err))
        snprintf(why, n, "event: %s", ev ? err.msg : "missing");
    else if (!status || ctl_event_status_parse(status, &e->status))
        snprintf(why, n, "status: not one of the event states");
    else rc = 0;
    if (!rc) {
        get_str(j, "source", e->ev.source, sizeof e->ev.source);
        e->baseline_w = get_num(j, "baseline_w");
        e->target_w = get_num(j, "target_w");
        e->ramp_s = get_num(j, "ramp_s");
        e->ramp_down_s = get_num(j, "ramp_down_s");
        e->reached_t = get_num(j, "reached_t");
        e->announced_t = get_num(j, "announced_t");
        char src[32];
        get_str(j, "baseline_source", src, sizeof src);
        if (src[0]) ctl_base_src_parse(src, &e->baseline_src);
        get_str(j, "created_by", e->created_by, sizeof e->created_by);
        get_str(j, "changed_by", e->changed_by, sizeof e->changed_by);
        get_str(j, "cancelled_by", e->cancelled_by, sizeof e->cancelled_by);
    }
    json_decref(j);
    return rc;
}

char *ctl_store_mem_format(const ctl_mem *m)
{
    json_t *pts = json_array(), *feat = json_array();
    for (size_t i = 0; pts && i < m->npt; i++)
        json_array_append_new(pts, json_pack("[ffff]", m->pt[i].power_w, m->pt[i].power_se_w,
                                             m->pt[i].tokens_per_s, m->pt[i].tokens_se));
    for (int i = 0; feat && i < 4; i++) json_array_append_new(feat, num(m->feat[i]));
    json_t *j = pts && feat ? json_pack("{ss si si so so si so so so}", "id", m->id, "tier",
                                        m->tier, "gpus", m->gpus, "hw_max_w", num(m->hw_max_w),
                                        "feat", feat, "profiled", m->profiled, "cost_ratio",
                                        num(m->cost_ratio), "t", num(m->t), "points", pts)
                            : NULL;
    if (!j) json_decref(pts), json_decref(feat);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

int ctl_store_mem_parse(const char *text, size_t len, ctl_mem *m, char *why, size_t n)
{
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je), *pts = json_object_get(j, "points");
    const char *id = json_string_value(json_object_get(j, "id"));
    int rc = -1;
    if (!j) snprintf(why, n, "not JSON: %s", je.text);
    else if (!id || strlen(id) > CTL_JOB_ID_MAX) snprintf(why, n, "id: missing or too long");
    else if (!json_is_integer(json_object_get(j, "tier")) ||
             !json_is_integer(json_object_get(j, "gpus")))
        snprintf(why, n, "tier, gpus: not integers");
    else if (!json_is_array(pts) || json_array_size(pts) > CTL_KNOWN_MAX)
        snprintf(why, n, "points: not an array of at most %d", CTL_KNOWN_MAX);
    else rc = 0;
    size_t i;
    json_t *x;
    json_array_foreach(pts, i, x)
    {
        if (rc) break;
        double v[4];
        for (int q = 0; q < 4; q++) {
            json_t *e = json_array_get(x, q);
            v[q] = json_is_number(e) ? json_number_value(e) : NAN;
            if (!isfinite(v[q])) rc = -1;
        }
        if (rc) snprintf(why, n, "points[%zu]: not four finite numbers", i);
        else m->pt[m->npt++] = (pfi_online_point){v[0], v[1], v[2], v[3]};
    }
    if (!rc) {
        snprintf(m->id, sizeof m->id, "%s", id);
        m->tier = (int)json_integer_value(json_object_get(j, "tier"));
        m->gpus = (int)json_integer_value(json_object_get(j, "gpus"));
        m->hw_max_w = get_num(j, "hw_max_w");
        for (int q = 0; q < 4; q++) {
            json_t *f = json_array_get(json_object_get(j, "feat"), (size_t)q);
            m->feat[q] = json_is_number(f) ? json_number_value(f) : 0;
        }
        m->profiled = json_is_true(json_object_get(j, "profiled")) ||
                      json_integer_value(json_object_get(j, "profiled")) != 0;
        m->cost_ratio = get_num(j, "cost_ratio");
        m->t = get_num(j, "t");
    }
    json_decref(j);
    return rc;
}
