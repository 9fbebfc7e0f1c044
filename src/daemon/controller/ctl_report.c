/* ctl_report.c — an event's measurement and verification (GET
 * /v1/events/ID/report, .png), from the samples in SQLite:
 *   requested vs achieved over time (budget, target, measured per period);
 *   time to target (first period at or below target + tolerance);
 *   the steady window — from ramp_s + two control periods after the start
 *   to the end — its mean achieved reduction and worst excess over target;
 *   the verdict (ctl_verdict): nothing to shed (no managed load at the
 *   start), not applicable (cancelled before any period shed anything),
 *   else met = every steady period at or below target + tolerance (and the share
 *   of steady periods that were: a job starting uncapped or an agent lost
 *   mid-event shows up here);
 *   energy shed (kWh) = integral of (baseline - measured) from the start to
 *   the end of the ramp down;
 *   per job: baseline and steady-window throughput, loss, its tier's allowed
 *   loss and whether it was kept (1 percentage point allowed for
 *   measurement noise);
 *   the GPUs an agent would not cap while it ran, and why (timeout, lost,
 *   mig, shared, module_scope, …: gpus_not_capped, from the running
 *   controller's memory, not the database).
 * Outside the controller's lock (issue 30): from a copy of the event, the
 * configuration (unchanged after start) and the readers' SQLite connection
 * (ctl_db_reader). The chart is drawn once per content: the last few PNGs
 * are kept, keyed by a hash of everything drawn (the samples, the event's
 * start and baseline), so clients reloading it in a loop cost a copy, and a
 * new sample (each period) draws it again. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_offer.h"
#include "event_kind.h"
#include "plot.h"
#include "vec.h"

typedef struct series {
    double *t, *b, *tg, *m;
    size_t n, cap;
} series;

static void free_series(series *s)
{
    free(s->t), free(s->b), free(s->tg), free(s->m);
}

/* the event's samples (none when they cannot be read); -1 when out of memory */
static int load_series(ctl *c, const char *id, series *s)
{
    memset(s, 0, sizeof *s);
    sqlite3_stmt *st;
    sqlite3 *db = ctl_db_reader(c);
    if (sqlite3_prepare_v2(
            db, "SELECT t,budget_w,target_w,measured_w FROM samples WHERE event_id=? ORDER BY t",
            -1, &st, NULL) != SQLITE_OK) {
        ctl_db_reader_done(c);
        return 0;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (s->n == s->cap) { /* four parallel arrays: one capacity */
            size_t nc = 0;
            if (pfi_vec_next_cap(s->cap, s->n + 1, sizeof(double), &nc, NULL) ||
                PFI_VEC_RESIZE(s->t, nc, NULL) || PFI_VEC_RESIZE(s->b, nc, NULL) ||
                PFI_VEC_RESIZE(s->tg, nc, NULL) || PFI_VEC_RESIZE(s->m, nc, NULL)) {
                sqlite3_finalize(st);
                ctl_db_reader_done(c);
                free_series(s);
                memset(s, 0, sizeof *s);
                return -1;
            }
            s->cap = nc;
        }
        s->t[s->n] = sqlite3_column_double(st, 0);
        s->b[s->n] = sqlite3_column_double(st, 1);
        s->tg[s->n] = sqlite3_column_double(st, 2);
        s->m[s->n] = sqlite3_column_double(st, 3);
        s->n++;
    }
    sqlite3_finalize(st);
    ctl_db_reader_done(c);
    return 0;
}

/* the steady window: from ramp_s + two control periods after the start to the end */
static double steady_start(const ctl *c, const ctl_event *e)
{
    return e->ev.start + e->ramp_s + 2 * c->cfg.period_s;
}

int ctl_event_never_started(const ctl_event *e)
{
    return e->status == CTL_EV_CANCELLED && !isfinite(e->baseline_w) && !e->cancelled;
}

const char *ctl_verdict_name(ctl_verdict v)
{
    static const char *const names[] = {
        "pending",           "met",      "not met", "nothing to shed", "not applicable",
        "no steady samples", "cancelled"};
    return (unsigned)v < sizeof names / sizeof *names ? names[v] : "pending";
}

ctl_verdict ctl_verdict_now(const ctl_cfg *cfg, const ctl_event *e, double measured_w,
                            const char *phase)
{
    if (!(e->baseline_w > 0)) return CTL_VERDICT_NOTHING;
    if (!phase || strcmp(phase, "steady") || !isfinite(measured_w)) return CTL_VERDICT_PENDING;
    return ctl_within_target(cfg, measured_w, e->target_w) ? CTL_VERDICT_MET : CTL_VERDICT_NOT_MET;
}

/* the verdict from the samples (ctl_report_verdict's rule) */
static ctl_verdict verdict_of(const ctl_event *e, int steady_n, int steady_ok, int shed_any)
{
    if (ctl_event_never_started(e)) return CTL_VERDICT_CANCELLED;
    if (!(e->baseline_w > 0)) return CTL_VERDICT_NOTHING;
    if (e->status == CTL_EV_CANCELLED && !shed_any) return CTL_VERDICT_NA;
    if (!steady_n) return CTL_VERDICT_NO_STEADY;
    return steady_ok ? CTL_VERDICT_MET : CTL_VERDICT_NOT_MET;
}

/* a period shed something: below the baseline by more than the tolerance */
static int shed(const ctl *c, const ctl_event *e, double measured_w)
{
    return measured_w < e->baseline_w * (1 - c->cfg.tolerance_pct / 100);
}

int ctl_report_verdict(ctl *c, const ctl_event *e, ctl_verdict *v, double *mean_w)
{
    series s;
    if (load_series(c, e->ev.id, &s)) return -1;
    double steady0 = steady_start(c, e), end = pfi_grid_event_end(&e->ev), sum = 0;
    int n = 0, ok = 1, shed_any = 0;
    for (size_t i = 0; i < s.n; i++) {
        shed_any |= shed(c, e, s.m[i]);
        if (s.t[i] >= steady0 && s.t[i] < end) {
            n++;
            sum += s.m[i];
            if (!ctl_within_target(&c->cfg, s.m[i], s.tg[i])) ok = 0;
        }
    }
    free_series(&s);
    *v = verdict_of(e, n, ok, shed_any);
    *mean_w = n ? sum / n : NAN;
    return n;
}

/* per job over the steady window: baseline and measured throughput, the
   loss against its tier's allowed loss */
static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* how the job's baseline was chosen (event_baselines; null: not stored,
   an event of an older controller) */
static json_t *base_how(sqlite3 *db, const char *event_id, const char *job_id, int tier)
{
    sqlite3_stmt *s;
    json_t *o = NULL;
    if (!job_id || sqlite3_prepare_v2(db,
                                      "SELECT how FROM event_baselines WHERE event_id=? AND "
                                      "job_id=? AND tier=?",
                                      -1, &s, NULL) != SQLITE_OK)
        return json_null();
    sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 3, tier);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        o = json_loads((const char *)sqlite3_column_text(s, 0), 0, NULL);
    sqlite3_finalize(s);
    return o ? o : json_null();
}

static json_t *jobs_json(ctl *c, const ctl_event *e, double steady0, double end)
{
    json_t *jobs = json_array();
    sqlite3_stmt *st;
    sqlite3 *db = ctl_db_reader(c);
    if (sqlite3_prepare_v2(db,
                           "SELECT job_id, MAX(tier), AVG(base_tokens), AVG(tokens_per_s), "
                           "AVG(power_w), AVG(base_w), AVG(cap_w), COUNT(*)"
                           " FROM job_samples WHERE event_id=? AND t>=? AND t<? GROUP BY job_id, "
                           "tier ORDER BY job_id, tier",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, e->ev.id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 2, steady0);
        sqlite3_bind_double(st, 3, end);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int tier = sqlite3_column_int(st, 1);
            double bt = sqlite3_column_double(st, 2), mt = sqlite3_column_double(st, 3);
            double loss = bt > 0 && sqlite3_column_type(st, 3) != SQLITE_NULL ? 1 - mt / bt : NAN;
            double allowed = pfi_sla_loss(tier);
            json_t *o = json_pack(
                "{s:s,s:i,s:f,s:f,s:f,s:i}", "job_id", (const char *)sqlite3_column_text(st, 0),
                "tier", tier, "baseline_w", sqlite3_column_double(st, 5), "mean_power_w",
                sqlite3_column_double(st, 4), "mean_cap_w", sqlite3_column_double(st, 6), "samples",
                sqlite3_column_int(st, 7));
            json_object_set_new(o, "baseline_tokens_per_s", bt > 0 ? json_real(bt) : json_null());
            json_object_set_new(o, "mean_tokens_per_s",
                                isfinite(mt) && sqlite3_column_type(st, 3) != SQLITE_NULL
                                    ? json_real(mt)
                                    : json_null());
            json_object_set_new(o, "throughput_loss_pct",
                                isfinite(loss) ? json_real(100 * loss) : json_null());
            json_object_set_new(o, "allowed_loss_pct",
                                tier >= 0 && allowed < 1 ? json_real(100 * allowed) : json_null());
            json_object_set_new(o, "sla_ok",
                                tier < 0 || !isfinite(loss) ? json_null()
                                                            : json_boolean(loss <= allowed + 0.01));
            json_object_set_new(
                o, "baseline_how",
                base_how(db, e->ev.id, (const char *)sqlite3_column_text(st, 0), tier));
            json_array_append_new(jobs, o);
        }
        sqlite3_finalize(st);
    }
    ctl_db_reader_done(c);
    return jobs;
}

/* what kept the event from shedding as planned, said, not silent: the GPUs
   an agent would not cap, the jobs held below the plan's cap by a limit not
   pfi's (issue 44) */
static void shortfalls_json(json_t *o, const ctl_event *e)
{
    json_t *nc = json_array();
    for (size_t k = 0; k < e->nnc; k++)
        json_array_append_new(nc, json_pack("{s:s,s:i,s:s}", "agent", e->nc[k].agent, "gpu",
                                            e->nc[k].g.gpu, "reason", e->nc[k].g.reason));
    json_object_set_new(o, "gpus_not_capped", nc);
    if (e->nc_more)
        json_object_set_new(o, "gpus_not_capped_more", json_integer((json_int_t)e->nc_more));
    /* the jobs held below the plan's cap by a limit not pfi's (issue 44) */
    json_t *cl = json_array();
    for (size_t k = 0; k < e->nclamp; k++)
        json_array_append_new(cl, json_pack("{s:s,s:i,s:f,s:f,s:s}", "job", e->clamp[k].job, "gpus",
                                            e->clamp[k].gpus, "planned_cap_w", e->clamp[k].cap_w,
                                            "limit_w", e->clamp[k].limit_w, "by",
                                            e->clamp[k].enforced ? "enforced" : "ceiling"));
    json_object_set_new(o, "clamped_jobs", cl);
    if (e->clamp_more)
        json_object_set_new(o, "clamped_jobs_more", json_integer((json_int_t)e->clamp_more));
}

char *ctl_report_json(ctl *c, const ctl_event *e)
{
    series s;
    if (load_series(c, e->ev.id, &s)) return NULL; /* out of memory: 500 */
    double start = e->ev.start, end = pfi_grid_event_end(&e->ev);
    double steady0 = steady_start(c, e);
    json_t *tl = json_array();
    double shed_j = 0, sum_red = 0, worst = -INFINITY;
    int nsteady = 0, met = 1, within = 0, shed_any = 0;
    for (size_t i = 0; i < s.n; i++) {
        shed_any |= shed(c, e, s.m[i]);
        json_array_append_new(tl, json_pack("{s:f,s:f,s:f,s:f}", "t_s", s.t[i] - start, "budget_kw",
                                            s.b[i] / 1000, "target_kw", s.tg[i] / 1000,
                                            "measured_kw", s.m[i] / 1000));
        if (i > 0)
            shed_j += 0.5 * ((e->baseline_w - s.m[i]) + (e->baseline_w - s.m[i - 1])) *
                      (s.t[i] - s.t[i - 1]);
        if (s.t[i] >= steady0 && s.t[i] < end) {
            nsteady++;
            sum_red += 1 - s.m[i] / e->baseline_w;
            double over = s.m[i] / s.tg[i] - 1;
            if (over > worst) worst = over;
            if (!ctl_within_target(&c->cfg, s.m[i], s.tg[i])) met = 0;
            else within++;
        }
    }
    if (!nsteady) met = 0;
    json_t *jobs = jobs_json(c, e, steady0, end);
    char t0[40];
    pfi_rfc3339_format(start, t0, sizeof t0);
    const char *kind = pfi_event_kind_of(e->ev.kind)->name; /* checked where it entered */
    double val = pfi_grid_event_value(&e->ev);
    /* an event cancelled before it started has no baseline nor target: null */
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:f,s:{s:s,s:f},s:o,s:o,s:f,s:o,s:o}", "id", e->ev.id,
                          "status", ctl_event_status_name(e->status), "source", e->ev.source,
                          "start", t0, "duration_s", 0.0, "requested", "kind", kind, "value", val,
                          "baseline_kw", num_or_null(e->baseline_w / 1000), "target_kw",
                          num_or_null(e->target_w / 1000), "requested_reduction_pct",
                          e->baseline_w > 0 ? 100 * (1 - e->target_w / e->baseline_w) : 0.0,
                          "timeline", tl, "jobs", jobs);
    /* an open-ended event that still runs has no duration yet */
    json_object_set_new(o, "duration_s", isfinite(end) ? json_real(e->ev.duration_s) : json_null());
    json_object_set_new(o, "time_to_target_s",
                        isfinite(e->reached_t) ? json_real(e->reached_t - start) : json_null());
    json_object_set_new(o, "achieved_reduction_pct",
                        nsteady ? json_real(100 * sum_red / nsteady) : json_null());
    json_object_set_new(o, "max_over_target_pct", nsteady ? json_real(100 * worst) : json_null());
    json_object_set_new(o, "steady_samples", json_integer(nsteady));
    /* the offer beside what was delivered (issue 44): the mean steady shed */
    json_object_set_new(o, "offer",
                        ctl_offer_event_json(e, nsteady && e->baseline_w > 0
                                                    ? e->baseline_w * sum_red / nsteady
                                                    : NAN));
    json_object_set_new(o, "steady_within_target_pct",
                        nsteady ? json_real(100.0 * within / nsteady) : json_null());
    json_object_set_new(o, "baseline_source", json_string(ctl_base_src_name(e->baseline_src)));
    /* the rule (docs/controller.md, "Baselines"); each job's windows and
       knee under jobs[].baseline_how */
    json_object_set_new(o, "baseline_rule",
                        json_string("each job: the lowest of its last 3 steady windows that "
                                    "ended by the announcement, at most the draw of its measured "
                                    "knee; no window: the estimate (0.97 x its GPUs' ceiling)"));
    double ann = isfinite(e->announced_t) ? e->announced_t : e->ev.start;
    char when[40];
    pfi_rfc3339_format(ann, when, sizeof when);
    json_object_set_new(o, "announced", json_string(when));
    json_object_set_new(o, "tolerance_pct", json_real(c->cfg.tolerance_pct));
    /* met only when there was load to shed and it was shed to target
       (issue 30: an event with nothing to shed was reported met) */
    ctl_verdict v = e->status == CTL_EV_ACTIVE && !(e->baseline_w > 0) ? CTL_VERDICT_NOTHING
                    : e->status == CTL_EV_ACTIVE                       ? CTL_VERDICT_PENDING
                                                 : verdict_of(e, nsteady, met, shed_any);
    json_object_set_new(o, "met",
                        json_boolean(v == CTL_VERDICT_MET || (v == CTL_VERDICT_PENDING && met)));
    json_object_set_new(o, "verdict", json_string(ctl_verdict_name(v)));
    json_object_set_new(o, "energy_shed_kwh", json_real(shed_j / 3.6e6));
    json_object_set_new(o, "dry_run", json_boolean(e->ev.dry_run || c->cfg.dry_run));
    json_object_set_new(o, "strategy", json_string(pfi_strategy_name(c->cfg.strategy)));
    shortfalls_json(o, e);
    ctl_event_who_json(o, e);
    char *txt = json_dumps(o, JSON_INDENT(1));
    json_decref(o);
    free_series(&s);
    return txt;
}

/* the chart's key: FNV-1a over everything it draws */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t chart_key(const ctl_event *e, const series *s)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, e->ev.id, strlen(e->ev.id) + 1);
    h = fnv(h, &e->ev.start, sizeof e->ev.start);
    h = fnv(h, &e->baseline_w, sizeof e->baseline_w);
    h = fnv(h, &s->n, sizeof s->n);
    h = fnv(h, s->t, s->n * sizeof *s->t);
    h = fnv(h, s->b, s->n * sizeof *s->b);
    h = fnv(h, s->tg, s->n * sizeof *s->tg);
    return fnv(h, s->m, s->n * sizeof *s->m);
}

/* the last charts drawn (cache_mu; held while one is drawn, so that a
 * second request for it waits and takes it) */
#define CHARTS 16
static struct chart {
    uint64_t key;
    char id[PFI_EVENT_ID_MAX + 1];
    char *png;
    size_t len;
    unsigned long long used;
} g_chart[CHARTS];
static unsigned long long g_chart_uses;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

/* a copy of the kept chart of key (cache_mu held): 1, 0 (none), -1 (out of memory) */
static int chart_kept(const ctl_event *e, uint64_t key, char **png, size_t *len)
{
    for (int i = 0; i < CHARTS; i++) {
        struct chart *k = &g_chart[i];
        if (!k->png || k->key != key || strcmp(k->id, e->ev.id)) continue;
        k->used = ++g_chart_uses;
        if (!(*png = malloc(k->len))) return -1;
        memcpy(*png, k->png, k->len);
        *len = k->len;
        return 1;
    }
    return 0;
}

/* keep a copy of a chart drawn (cache_mu held), in place of the least used */
static void chart_keep(const ctl_event *e, uint64_t key, const char *png, size_t len)
{
    struct chart *k = &g_chart[0];
    for (int i = 1; i < CHARTS; i++)
        if (g_chart[i].used < k->used) k = &g_chart[i];
    char *copy = malloc(len);
    if (!copy) return;
    memcpy(copy, png, len);
    free(k->png);
    k->png = copy, k->len = len, k->key = key, k->used = ++g_chart_uses;
    snprintf(k->id, sizeof k->id, "%s", e->ev.id);
}

/* a file's bytes (malloc'd): 0, or -1 */
static int read_all(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *b = n > 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n) : NULL;
    size_t got = b ? fread(b, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!b || got != (size_t)n) {
        free(b);
        return -1;
    }
    *out = b, *len = got;
    return 0;
}

/* the chart of e from its samples s (at least two) as PNG bytes */
static pfi_status draw(const ctl *c, const ctl_event *e, series *s, char **png, size_t *len,
                       pfi_error *err)
{
    double *x = malloc(s->n * sizeof *x), *bl = malloc(s->n * sizeof *bl);
    char dir[] = "/tmp/pfi-ctl-report-XXXXXX", base[64], path[80];
    if (!x || !bl) {
        free(x), free(bl);
        return pfi_errorf(err, PFI_ENOMEM, "event %s: out of memory for its chart", e->ev.id);
    }
    for (size_t i = 0; i < s->n; i++) {
        x[i] = (s->t[i] - e->ev.start) / 60;
        s->m[i] /= 1000, s->tg[i] /= 1000, s->b[i] /= 1000;
        bl[i] = e->baseline_w / 1000;
    }
    pfi_series se[4] = {{x, bl, s->n, "baseline (pre-event)", 7, PFI_PLOT_LINE},
                        {x, s->tg, s->n, "target", 3, PFI_PLOT_LINE},
                        {x, s->b, s->n, "budget (with ramps)", 2, PFI_PLOT_LINE},
                        {x, s->m, s->n, "measured GPU power", 0, PFI_PLOT_LINE | PFI_PLOT_POINTS}};
    char title[PFI_EVENT_ID_MAX + 96];
    snprintf(title, sizeof title, "Event %s: managed jobs' GPU power vs target (%s)", e->ev.id,
             pfi_strategy_name(c->cfg.strategy));
    pfi_panel p = {title,
                   "time since event start (min)",
                   "GPU power (kW)",
                   NAN,
                   NAN,
                   0,
                   NAN,
                   3,
                   NULL,
                   0,
                   0,
                   se,
                   4,
                   NULL};
    pfi_status st = PFI_OK;
    if (!mkdtemp(dir)) st = pfi_errorf(err, PFI_EIO, "cannot make a temporary directory");
    else {
        snprintf(base, sizeof base, "%s/r", dir);
        snprintf(path, sizeof path, "%s.png", base);
        st = pfi_plot_formats(base, 1000, 560, 1, 1, &p, 1, PFI_PLOT_PNG, err);
        if (!st && read_all(path, png, len))
            st = pfi_errorf(err, PFI_EIO, "%s: cannot read the chart", path);
        unlink(path);
        rmdir(dir);
    }
    free(x), free(bl);
    return st;
}

pfi_status ctl_report_png(ctl *c, const ctl_event *e, char **png, size_t *len, pfi_error *err)
{
    series s;
    if (load_series(c, e->ev.id, &s))
        return pfi_errorf(err, PFI_ENOMEM, "event %s: out of memory for its samples", e->ev.id);
    if (s.n < 2) {
        free_series(&s);
        return pfi_errorf(err, PFI_ESTATE, "event %s has fewer than two samples", e->ev.id);
    }
    uint64_t key = chart_key(e, &s);
    pfi_status st = PFI_OK;
    pthread_mutex_lock(&cache_mu);
    int kept = chart_kept(e, key, png, len);
    if (kept < 0)
        st = pfi_errorf(err, PFI_ENOMEM, "event %s: out of memory for its chart", e->ev.id);
    else if (!kept && !(st = draw(c, e, &s, png, len, err))) chart_keep(e, key, *png, *len);
    pthread_mutex_unlock(&cache_mu);
    free_series(&s);
    return st;
}
