/* ctl_view.c — the controller's open reads, GET /v1/status (what the
 * status page draws) and GET /metrics (Prometheus text), built outside the
 * controller's lock (issue 30: nothing unauthenticated takes the lock for
 * longer than a copy). Under the lock a view copies what the answer needs
 * (ctl_view_take: the loop's figures and counters, the agents shown, the
 * jobs — whole for the status page's 256, the few numbers /metrics prints
 * for all of them — the events, the history, safe-online's state as JSON);
 * the JSON or text is then written from the copy, and an ended event's
 * verdict read from SQLite through the readers' connection
 * (ctl_db_reader), then kept in the event under the lock again. The
 * configuration is read without the lock: nothing changes it after start. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "ctl.h"
#include "ctl_failover.h"
#include "ctl_offer.h"
#include "pfi/prom.h"
#include "pfi/version.h"

#define VIEW_AGENTS 64 /* agents on the status page */
#define VIEW_JOBS 256  /* jobs on the status page */

typedef struct view_agent {
    char name[64], url[512], err[256];
    int up, ever_up;
    double last_ok_t;
    long long generation;
} view_agent;

/* a job as /metrics prints it */
typedef struct view_job {
    char id[CTL_JOB_ID_MAX + 1];
    int tier;
    double alloc_w, alloc_cap_w, measured_w, tokens_per_s, base_w, base_tokens;
    int prof_points, profiling; /* its profile: points measured, running now */
    double prof_cost_ratio;
} view_job;

typedef struct view {
    const ctl_cfg *cfg;
    int for_status;
    view_agent *agent; /* the first VIEW_AGENTS (status) */
    size_t nshown, nagents, up;
    ctl_job *sjob; /* status: the first VIEW_JOBS jobs, whole (agent_idx not theirs: NULL) */
    double *sjob_online_w;
    view_job *job; /* metrics: every job */
    size_t njobs;
    double jobs_w; /* every job's measured power summed */
    ctl_event *event;
    size_t nevents;
    double hist_t[CTL_STATUS_HIST], hist_meas[CTL_STATUS_HIST], hist_target[CTL_STATUS_HIST];
    size_t hist_n;
    /* the last period */
    double now, budget_w, measured_w, fixed_w, integral_w, sla_shortfall_w;
    int active, feasible;
    char gov_id[PFI_EVENT_ID_MAX + 1];
    double cycle_s, loop_s, trigger_push_s;
    unsigned long long generation_changes[CTL_GEN_WHY_N];
    unsigned long long generation_rejects, online_rounds, cycles, db_errors, pushes, push_errors,
        triggers, fast_sent[2], fast_answered[2], fast_fallbacks[2],
        oadr_rejected[PFI_OADR_NREASONS], reports_refused, http_refused[4];
    double ingest_hold_max_s;
    ctl_vtn_seen vtn; /* the VTN conversation (ctl_vtn.c) */
    json_t *online;   /* status: safe-online's state (null: none) */
    const char *role; /* ctl_failover_role */
    ctl_fo_counts fo; /* ctl_failover_counts */
} view;

static void view_free(view *v)
{
    if (!v) return;
    free(v->agent), free(v->sjob), free(v->sjob_online_w), free(v->job), free(v->event);
    json_decref(v->online);
    free(v);
}

/* the jobs (lock held): whole for the status page's first VIEW_JOBS, a few
 * numbers each for /metrics; -1 when out of memory */
static int take_jobs(ctl *c, view *v)
{
    const ctl_state *s = &c->st;
    for (size_t k = 0; k < s->njobs; k++) v->jobs_w += s->job[k].measured_w;
    if (v->for_status) {
        v->njobs = s->njobs < VIEW_JOBS ? s->njobs : VIEW_JOBS;
        v->sjob = malloc((v->njobs ? v->njobs : 1) * sizeof *v->sjob);
        v->sjob_online_w = malloc((v->njobs ? v->njobs : 1) * sizeof *v->sjob_online_w);
        if (!v->sjob || !v->sjob_online_w) return -1;
        if (v->njobs) memcpy(v->sjob, s->job, v->njobs * sizeof *v->sjob);
        for (size_t k = 0; k < v->njobs; k++) {
            v->sjob[k].agent_idx = NULL;
            v->sjob_online_w[k] = ctl_online_target_w(s, s->job[k].id, s->job[k].tier);
        }
        return 0;
    }
    v->njobs = s->njobs;
    v->job = malloc((v->njobs ? v->njobs : 1) * sizeof *v->job);
    if (!v->job) return -1;
    for (size_t k = 0; k < v->njobs; k++) {
        const ctl_job *j = &s->job[k];
        view_job *q = &v->job[k];
        memcpy(q->id, j->id, sizeof q->id);
        q->tier = j->tier;
        q->alloc_w = j->alloc_w, q->alloc_cap_w = j->alloc_cap_w, q->measured_w = j->measured_w;
        q->tokens_per_s = j->tokens_per_s, q->base_w = j->base_w, q->base_tokens = j->base_tokens;
        q->prof_points = (int)j->prof.npt, q->profiling = j->prof.state == CTL_PROF_RUN;
        q->prof_cost_ratio = j->prof.cost_ratio;
    }
    return 0;
}

/* the agents (lock held): the count up, the first VIEW_AGENTS for the status page */
static int take_agents(ctl *c, view *v)
{
    v->nagents = c->io.nagents;
    for (size_t i = 0; i < c->io.nagents; i++) v->up += c->io.agent[i].up != 0;
    if (!v->for_status) return 0;
    v->nshown = v->nagents < VIEW_AGENTS ? v->nagents : VIEW_AGENTS;
    v->agent = calloc(v->nshown ? v->nshown : 1, sizeof *v->agent);
    if (!v->agent) return -1;
    for (size_t i = 0; i < v->nshown; i++) {
        const ctl_agent *a = &c->io.agent[i];
        view_agent *q = &v->agent[i];
        memcpy(q->name, a->name, sizeof q->name);
        memcpy(q->url, a->url, sizeof q->url);
        memcpy(q->err, a->err, sizeof q->err);
        q->up = a->up, q->ever_up = a->ever_up, q->last_ok_t = a->last_ok_t;
        q->generation = a->generation;
    }
    return 0;
}

/* the loop's figures and counters (lock held) */
static void take_figures(ctl *c, view *v)
{
    const ctl_state *s = &c->st;
    v->now = s->now, v->budget_w = s->budget_w, v->measured_w = s->measured_w;
    v->fixed_w = s->fixed_w, v->integral_w = s->integral_w, v->sla_shortfall_w = s->sla_shortfall_w;
    v->active = s->active, v->feasible = s->feasible;
    memcpy(v->gov_id, s->gov_id, sizeof v->gov_id);
    v->cycle_s = c->cycle_s, v->loop_s = c->loop_s, v->trigger_push_s = c->trigger_push_s;
    v->generation_rejects = c->generation_rejects, v->online_rounds = ctl_online_rounds(s);
    memcpy(v->generation_changes, c->generation_changes, sizeof v->generation_changes);
    v->role = ctl_failover_role(c, NULL, 0);
    ctl_failover_counts(c, &v->fo);
    v->cycles = c->cycles, v->db_errors = (unsigned long long)atomic_load(&c->db_errors);
    v->pushes = c->pushes, v->push_errors = c->push_errors, v->triggers = c->triggers;
    for (int k = 0; k < 2; k++) {
        v->fast_sent[k] = c->fast_sent[k], v->fast_answered[k] = c->fast_answered[k];
        v->fast_fallbacks[k] = c->fast_fallbacks[k];
    }
    memcpy(v->oadr_rejected, c->oadr_rejected, sizeof v->oadr_rejected);
    v->reports_refused = c->reports_refused;
    v->ingest_hold_max_s = c->ingest_hold_max_s;
    v->vtn = c->vtn;
    v->vtn.echoes = __atomic_load_n(&c->vtn.echoes, __ATOMIC_RELAXED);
    for (int k = 0; k < 4; k++)
        v->http_refused[k] = __atomic_load_n(&c->http_refused[k], __ATOMIC_RELAXED);
    v->hist_n = c->hist_n;
    memcpy(v->hist_t, c->hist_t, c->hist_n * sizeof *c->hist_t);
    memcpy(v->hist_meas, c->hist_meas, c->hist_n * sizeof *c->hist_meas);
    memcpy(v->hist_target, c->hist_target, c->hist_n * sizeof *c->hist_target);
}

/* what an answer needs, copied under the lock (taken and released here);
 * NULL when out of memory */
static view *view_take(ctl *c, int for_status)
{
    view *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->cfg = &c->cfg;
    v->for_status = for_status;
    pthread_mutex_lock(&c->mu);
    int bad = take_agents(c, v) || take_jobs(c, v);
    v->nevents = c->st.nevents;
    v->event = malloc((v->nevents ? v->nevents : 1) * sizeof *v->event);
    if (v->event && v->nevents) memcpy(v->event, c->st.event, v->nevents * sizeof *v->event);
    take_figures(c, v);
    if (for_status) v->online = ctl_online_json(&c->st);
    pthread_mutex_unlock(&c->mu);
    if (bad || !v->event) {
        view_free(v);
        return NULL;
    }
    return v;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* an ended event's verdict from its samples, kept in the copy and (under
 * the lock) in the table: a finished event's samples do not change */
static void ended_verdict(ctl *c, ctl_event *e)
{
    double w = NAN;
    ctl_verdict got;
    int n = ctl_report_verdict(c, e, &got, &w);
    if (n < 0) return;
    e->verdict_known = 1, e->verdict = got, e->verdict_steady = n, e->verdict_mean_w = w;
    pthread_mutex_lock(&c->mu);
    ctl_event *t = ctl_event_find(c, e->ev.id);
    if (t && !t->verdict_known && t->status == e->status) {
        t->verdict_known = 1, t->verdict = got, t->verdict_steady = n, t->verdict_mean_w = w;
    }
    pthread_mutex_unlock(&c->mu);
}

/* what the status page shows of an event beyond GET /v1/events: its end,
 * time left, achieved power, met / not met by the controller's one rule
 * (ctl_within_target: now while it runs, the report's steady-window verdict
 * once it ended) and whether it is the event whose budget the last period
 * used (several may overlap: the lowest budget wins) */
static json_t *status_event_json(ctl *c, const view *v, ctl_event *e, double now)
{
    json_t *o = ctl_event_json(e);
    double end = pfi_grid_event_end(&e->ev);
    char buf[40];
    int scheduled = (e->status == CTL_EV_SCHEDULED), active = (e->status == CTL_EV_ACTIVE);
    if (isfinite(end)) pfi_rfc3339_format(end, buf, sizeof buf);
    json_object_set_new(o, "end", isfinite(end) ? json_string(buf) : json_null());
    json_object_set_new(o, "until_cancelled", json_boolean(e->ev.open_ended && !isfinite(end)));
    json_object_set_new(o, "starts_in_s", scheduled ? json_real(e->ev.start - now) : json_null());
    json_object_set_new(o, "time_left_s",
                        (scheduled || active) && isfinite(end) ? json_real(fmax(0, end - now))
                                                               : json_null());
    const char *phase = !active                         ? NULL
                        : now >= end                    ? "ramp down"
                        : now < e->ev.start + e->ramp_s ? "ramp"
                                                        : "steady";
    json_object_set_new(o, "phase", phase ? json_string(phase) : json_null());
    json_object_set_new(o, "sets_target",
                        json_boolean(active && v->gov_id[0] && !strcmp(v->gov_id, e->ev.id)));
    json_object_set_new(o, "tolerance_pct", json_real(v->cfg->tolerance_pct));
    json_t *achieved = json_null(), *met = json_null();
    const char *basis = NULL;
    ctl_verdict vd = CTL_VERDICT_PENDING;
    if (active && v->active && isfinite(v->measured_w) && isfinite(e->target_w)) {
        achieved = json_real(v->measured_w);
        vd = ctl_verdict_now(v->cfg, e, v->measured_w, "steady");
        basis = "now";
    } else if (!scheduled && !active && isfinite(e->target_w)) {
        if (!e->verdict_known) ended_verdict(c, e);
        if (e->verdict_known) {
            vd = e->verdict;
            achieved = num_or_null(e->verdict_mean_w);
            basis = e->verdict_steady > 0 ? "steady window" : NULL;
        }
    } else if (ctl_event_never_started(e)) {
        vd = CTL_VERDICT_CANCELLED;
    }
    /* met / not met only where there was something to shed */
    if (vd == CTL_VERDICT_MET || vd == CTL_VERDICT_NOT_MET)
        met = json_boolean(vd == CTL_VERDICT_MET);
    else basis = NULL;
    json_object_set_new(o, "achieved_w", achieved);
    json_object_set_new(o, "verdict", json_string(ctl_verdict_name(vd)));
    json_object_set_new(o, "met", met);
    json_object_set_new(o, "met_basis", basis ? json_string(basis) : json_null());
    return o;
}

/* a job on the status page */
static json_t *status_job_json(const view *v, const ctl_job *j, double online_w)
{
    json_t *o =
        json_pack("{s:s,s:i,s:i,s:f,s:f,s:b}", "job_id", j->id, "tier", j->tier, "gpus", j->gpus,
                  "power_w", j->measured_w, "cap_w", j->cap_w, "reachable", j->reachable);
    json_object_set_new(o, "tokens_per_s", num_or_null(j->tokens_per_s));
    json_object_set_new(o, "alloc_w", num_or_null(j->alloc_w));
    json_object_set_new(o, "alloc_cap_w",
                        j->alloc_cap_w > 0 ? json_real(j->alloc_cap_w) : json_null());
    json_object_set_new(o, "online_target_w", num_or_null(online_w));
    json_object_set_new(o, "pfi_predicted", num_or_null(j->pfi_pred));
    /* against its baseline while an event runs (the report's rule: its
       tier's allowed loss, 1 percentage point for measurement noise) */
    int during = v->active && isfinite(j->base_w);
    double loss = during && j->base_tokens > 0 && isfinite(j->tokens_per_s)
                      ? 1 - j->tokens_per_s / j->base_tokens
                      : NAN,
           allowed = pfi_sla_loss(j->tier);
    /* the event's baseline while one runs, else the one an event
       starting now would take (ctl_baseline.c), with its source */
    double bw = j->base_w, bt = j->base_tokens;
    ctl_base_src src = during ? j->base_src : ctl_baseline_now(v->cfg, j, &bw, &bt);
    json_object_set_new(o, "baseline_w", num_or_null(bw));
    json_object_set_new(o, "baseline_tokens_per_s", bt > 0 ? json_real(bt) : json_null());
    json_object_set_new(o, "baseline_source", json_string(ctl_base_src_name(src)));
    json_object_set_new(o, "loss_pct", num_or_null(100 * loss));
    json_object_set_new(o, "allowed_loss_pct",
                        j->tier >= 0 && allowed < 1 ? json_real(100 * allowed) : json_null());
    json_object_set_new(o, "over_limit",
                        j->tier < 0 || !isfinite(loss) ? json_null()
                                                       : json_boolean(!(loss <= allowed + 0.01)));
    json_object_set_new(o, "profile", ctl_profile_json(j));
    return o;
}

static const char *vtn_state_name(int st)
{
    return st == CTL_VTN_DONE       ? "yes"
           : st == CTL_VTN_OFF      ? "off"
           : st == CTL_VTN_UNWANTED ? "not configured"
                                    : "trying";
}

/* the VTN conversation on /v1/status (null: no VTN configured) */
static json_t *vtn_json(const view *v)
{
    const ctl_vtn_seen *s = &v->vtn;
    if (!s->on) return json_null();
    json_t *nc = json_object();
    for (int k = 0; k < CTL_VTN_NC_N; k++)
        json_object_set_new(nc, ctl_vtn_nc_name[k], json_integer((json_int_t)s->nonconf[k]));
    char ts[40] = "";
    if (s->last_poll_ok > 0) pfi_rfc3339_format(s->last_poll_ok, ts, sizeof ts);
    json_t *o = json_pack("{s:s,s:s,s:b,s:f,s:o}", "registered", vtn_state_name(s->registered),
                          "subscribed", vtn_state_name(s->subscribed), "polling", s->polling,
                          "poll_s", v->cfg->openadr_poll_s, "nonconformant_accepted", nc);
    json_object_set_new(o, "ven_id", s->ven_id[0] ? json_string(s->ven_id) : json_null());
    json_object_set_new(o, "ven_name_listed",
                        s->ven_name_listed[0] ? json_string(s->ven_name_listed) : json_null());
    json_object_set_new(o, "last_poll_ok", ts[0] ? json_string(ts) : json_null());
    json_object_set_new(o, "retry_after_s",
                        s->retry_after_s > 0 ? json_real(s->retry_after_s) : json_null());
    json_object_set_new(o, "echo_challenges", json_integer((json_int_t)s->echoes));
    return o;
}

static json_t *status_json(ctl *c, view *v)
{
    json_t *ag = json_array(), *jobs = json_array(), *hist = json_array(), *evs = json_array();
    double now = pfi_clock_now();
    for (size_t i = 0; i < v->nshown; i++) {
        const view_agent *a = &v->agent[i];
        json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:I}", "name", a->name, "url", a->url, "up", a->up,
                              "error", a->err, "generation", (json_int_t)a->generation);
        json_object_set_new(o, "last_ok_age_s",
                            a->ever_up ? json_real(fmax(0, now - a->last_ok_t)) : json_null());
        json_array_append_new(ag, o);
    }
    for (size_t k = 0; k < v->njobs; k++)
        json_array_append_new(jobs, status_job_json(v, &v->sjob[k], v->sjob_online_w[k]));
    for (size_t i = 0; i < v->hist_n; i++)
        json_array_append_new(hist,
                              json_pack("[f,f,f]", v->hist_t[i], v->hist_meas[i],
                                        isfinite(v->hist_target[i]) ? v->hist_target[i] : -1.0));
    for (size_t i = 0; i < v->nevents; i++)
        json_array_append_new(evs, status_event_json(c, v, &v->event[i], now));
    json_t *o =
        json_pack("{s:f,s:b,s:s,s:b,s:I,s:I,s:o,s:o,s:o,s:o}", "now", v->now, "active", v->active,
                  "strategy", pfi_strategy_name(v->cfg->strategy), "dry_run", v->cfg->dry_run,
                  "agents_total", (json_int_t)v->nagents, "agents_up", (json_int_t)v->up, "agents",
                  ag, "jobs", jobs, "history", hist, "events", evs);
    json_object_set_new(o, "budget_w", num_or_null(v->budget_w));
    json_object_set_new(o, "measured_w", num_or_null(v->measured_w));
    json_object_set_new(o, "unreachable_w", num_or_null(v->fixed_w));
    /* the power the SLA floors need beyond the budget (kW; 0: they fit;
       null: no event, or not safe-online) */
    json_object_set_new(o, "sla_shortfall_kw", num_or_null(v->sla_shortfall_w / 1000));
    json_object_set_new(o, "feedback_w", json_real(v->integral_w));
    json_object_set_new(o, "cycle_ms", json_real(1000 * v->cycle_s));
    json_object_set_new(o, "clock_now", json_real(now));
    json_object_set_new(o, "tolerance_pct", json_real(v->cfg->tolerance_pct));
    json_object_set_new(o, "governing_event", v->gov_id[0] ? json_string(v->gov_id) : json_null());
    json_object_set_new(o, "feasible", v->active ? json_boolean(v->feasible) : json_null());
    json_object_set_new(o, "online", v->online ? json_incref(v->online) : json_null());
    json_object_set_new(o, "vtn", vtn_json(v));
    json_object_set_new(o, "offer", ctl_offer_json(c, 0));
    char leader[64];
    const char *role = ctl_failover_role(c, leader, sizeof leader);
    json_object_set_new(
        o, "failover",
        json_pack("{s:s,s:s,s:s}", "role", role, "name", c->cfg.fo.name, "leader", leader));
    ctl_fo_counts foc;
    ctl_failover_counts(c, &foc);
    json_object_set_new(json_object_get(o, "failover"), "lag_s", num_or_null(foc.lag_s));
    return o;
}

json_t *ctl_view_status(ctl *c)
{
    view *v = view_take(c, 1);
    if (!v) return NULL;
    json_t *o = status_json(c, v);
    view_free(v);
    return o;
}

/* one gauge's HELP and TYPE */
static void head(pfi_buf *b, const char *name, const char *type, const char *help)
{
    pfi_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* events on /metrics: the running ones and those ended within this long
 * (pfi clock), at most CTL_LIST_EVENTS; older ones are in /v1/events */
#define CTL_METRICS_EVENT_AGE_S 3600.0

/* one event's samples of the four gauges */
static void event_lines(pfi_buf *b, int q, const char *name, json_t *o)
{
    char id[2 * PFI_EVENT_ID_MAX + 2];
    const char *eid = json_string_value(json_object_get(o, "id"));
    json_t *v = NULL;
    if (q == 3) {
        const char *vd = json_string_value(json_object_get(o, "verdict"));
        if (vd && (!strcmp(vd, "nothing to shed") || !strcmp(vd, "not applicable")))
            pfi_buf_printf(b, "%s{event_id=\"%s\",reason=\"%s\"} 1\n", name,
                           pfi_prom_label(id, sizeof id, eid), vd);
        return;
    }
    if (q == 0) v = json_object_get(o, "target_w");
    else if (q == 1) v = json_object_get(o, "achieved_w");
    else {
        const char *ph = json_string_value(json_object_get(o, "phase"));
        if (!ph || !strcmp(ph, "steady")) v = json_object_get(o, "met");
    }
    double x = json_is_boolean(v)  ? (double)json_is_true(v)
               : json_is_number(v) ? json_number_value(v)
                                   : NAN;
    if (isfinite(x))
        pfi_buf_printf(b, "%s{event_id=\"%s\"} %g\n", name, pfi_prom_label(id, sizeof id, eid), x);
}

/* per event {event_id} (ids come from the grid operator: escaped): its
 * target, the power achieved (now while it runs; the steady window's mean
 * once it ended) and met (0/1, the controller's one rule; not during the
 * ramps, when the target is not yet or no longer due) */
static void event_metrics(ctl *c, view *v, pfi_buf *b)
{
    double now = pfi_clock_now();
    json_t *ev[CTL_LIST_EVENTS];
    size_t n = 0;
    for (size_t i = 0; i < v->nevents && n < CTL_LIST_EVENTS; i++) {
        ctl_event *e = &v->event[i];
        double end = pfi_grid_event_end(&e->ev);
        int active = (e->status == CTL_EV_ACTIVE);
        int recent = !active && (e->status != CTL_EV_SCHEDULED) && isfinite(e->target_w) &&
                     (!isfinite(end) || now - end <= CTL_METRICS_EVENT_AGE_S);
        if (active || recent) ev[n++] = status_event_json(c, v, e, now);
    }
    static const char *const name[4] = {"pfi_ctl_event_target_watts",
                                        "pfi_ctl_event_achieved_watts", "pfi_ctl_event_met",
                                        "pfi_ctl_event_not_applicable"};
    static const char *const help[4] = {
        "A running or recently ended grid event's power target (W).",
        "Power achieved against the event: measured now while it runs, the steady window's mean "
        "once it ended (W).",
        "1 when the event is met (measured at or below target plus tolerance), 0 when not; absent "
        "during its ramps and when there was nothing to shed.",
        "1 for an event that can be neither met nor missed: reason \"nothing to shed\" (no "
        "managed load when it started) or \"not applicable\" (cancelled before it shed "
        "anything)."};
    for (int q = 0; q < 4; q++) {
        head(b, name[q], "gauge", help[q]);
        for (size_t i = 0; i < n; i++) event_lines(b, q, name[q], ev[i]);
    }
    for (size_t i = 0; i < n; i++) json_decref(ev[i]);
}

/* the fast trigger datagrams' counters (ctl_agents.c), by kind */
static void fast_metrics(pfi_buf *b, const view *v)
{
    static const char *const kind[2] = {"caps", "view"};
    head(b, "pfi_ctl_fast_datagrams_total", "counter",
         "Fast trigger datagrams sent to agents: kind caps (PUT /v1/caps: a trigger's or a "
         "period's), view (a period's GET /v1/control).");
    for (int k = 0; k < 2; k++)
        pfi_buf_printf(b, "pfi_ctl_fast_datagrams_total{kind=\"%s\"} %llu\n", kind[k],
                       v->fast_sent[k]);
    head(b, "pfi_ctl_fast_answers_total", "counter",
         "Fast trigger datagrams the agents answered in time.");
    for (int k = 0; k < 2; k++)
        pfi_buf_printf(b, "pfi_ctl_fast_answers_total{kind=\"%s\"} %llu\n", kind[k],
                       v->fast_answered[k]);
    head(b, "pfi_ctl_fast_fallbacks_total", "counter",
         "Fast trigger datagrams not answered within fast_trigger_ack_s: sent again by HTTP.");
    for (int k = 0; k < 2; k++)
        pfi_buf_printf(b, "pfi_ctl_fast_fallbacks_total{kind=\"%s\"} %llu\n", kind[k],
                       v->fast_fallbacks[k]);
}

/* the cluster now: the budget, measured power, the agents */
static void cluster_metrics(const view *v, pfi_buf *b)
{
    head(b, "pfi_build_info", "gauge", "The pfi build serving these metrics.");
    pfi_buf_printf(b, "pfi_build_info{version=\"%s\",program=\"pfi-controller\"} 1\n", PFI_VERSION);
    head(b, "pfi_ctl_event_active", "gauge",
         "1 while a grid event (or its ramp down) is being answered.");
    pfi_buf_printf(b, "pfi_ctl_event_active %d\n", v->active);
    head(b, "pfi_ctl_target_watts", "gauge", "The power budget this period (target with ramps).");
    if (isfinite(v->budget_w)) pfi_buf_printf(b, "pfi_ctl_target_watts %g\n", v->budget_w);
    head(b, "pfi_ctl_tolerance_ratio", "gauge",
         "How far above its target an event still counts as met (tolerance_pct / 100).");
    pfi_buf_printf(b, "pfi_ctl_tolerance_ratio %g\n", v->cfg->tolerance_pct / 100);
    head(b, "pfi_ctl_measured_watts", "gauge",
         "Measured GPU power of the managed jobs (unreachable ones as assumed).");
    pfi_buf_printf(b, "pfi_ctl_measured_watts %g\n",
                   isfinite(v->measured_w) ? v->measured_w : v->jobs_w);
    head(b, "pfi_ctl_unreachable_watts", "gauge", "Power assumed for jobs on unreachable agents.");
    pfi_buf_printf(b, "pfi_ctl_unreachable_watts %g\n", isfinite(v->fixed_w) ? v->fixed_w : 0.0);
    head(b, "pfi_ctl_feedback_watts", "gauge", "The feedback term taken off the budget.");
    pfi_buf_printf(b, "pfi_ctl_feedback_watts %g\n", v->integral_w);
    head(b, "pfi_ctl_agents_up", "gauge", "Agents that answered this period.");
    pfi_buf_printf(b, "pfi_ctl_agents_up %zu\n", v->up);
    head(b, "pfi_ctl_agents_configured", "gauge", "Agents in the configuration.");
    pfi_buf_printf(b, "pfi_ctl_agents_configured %zu\n", v->nagents);
}

/* OpenADR: versions not acted on, reports refused */
static void openadr_metrics(const view *v, pfi_buf *b)
{
    head(b, "pfi_ctl_openadr_rejected_total", "counter",
         "OpenADR event versions not acted on, by reason (each logged once, at most 20 lines a "
         "minute).");
    for (int r = 1; r < PFI_OADR_NREASONS; r++) {
        char rl[64];
        pfi_buf_printf(b, "pfi_ctl_openadr_rejected_total{reason=\"%s\"} %llu\n",
                       pfi_prom_label(rl, sizeof rl, pfi_oadr_reason_name((pfi_oadr_reason)r)),
                       v->oadr_rejected[r]);
    }
    head(b, "pfi_ctl_openadr_reports_refused_total", "counter",
         "REPORTs the VTN refused (4xx): logged, kept, not sent again.");
    pfi_buf_printf(b, "pfi_ctl_openadr_reports_refused_total %llu\n", v->reports_refused);
    head(b, "pfi_ctl_lock_hold_max_seconds", "gauge",
         "The longest the controller's lock was held at once, by holder: openadr_ingest "
         "(booking a VTN poll's events, let go every 50 ms).");
    pfi_buf_printf(b, "pfi_ctl_lock_hold_max_seconds{holder=\"openadr_ingest\"} %g\n",
                   v->ingest_hold_max_s);
    head(b, "pfi_ctl_http_refused_total", "counter",
         "HTTP requests refused, by reason: unauthenticated (401), forbidden (403: a scope the "
         "operator lacks), method (405), conflict (409: an id already used); each logged with "
         "operator and path, at most 10 lines in 10 s.");
    for (int k = 0; k < 4; k++)
        pfi_buf_printf(b, "pfi_ctl_http_refused_total{reason=\"%s\"} %llu\n", ctl_refused_reason[k],
                       v->http_refused[k]);
}

/* pfi_ctl_http_refused_total's reason labels (ctl_http.c counts and logs
   by them) */
const char *const ctl_refused_reason[4] = {"unauthenticated", "forbidden", "method", "conflict"};

/* the VTN conversation (issue 42): only with a VTN configured */
static void vtn_metrics(const view *v, pfi_buf *b)
{
    const ctl_vtn_seen *s = &v->vtn;
    if (!s->on) return;
    head(b, "pfi_ctl_vtn_registered", "gauge",
         "1: the VEN is registered at the VTN (a VEN id); 0: not (yet, or given up: polls go on).");
    pfi_buf_printf(b, "pfi_ctl_vtn_registered %d\n", s->registered == CTL_VTN_DONE);
    head(b, "pfi_ctl_vtn_subscribed", "gauge",
         "1: subscribed to EVENT notifications; 0: not (trying, no webhooks, or none configured).");
    pfi_buf_printf(b, "pfi_ctl_vtn_subscribed %d\n", s->subscribed == CTL_VTN_DONE);
    head(b, "pfi_ctl_vtn_polling", "gauge", "1: the controller polls the VTN's events.");
    pfi_buf_printf(b, "pfi_ctl_vtn_polling %d\n", s->polling);
    head(b, "pfi_ctl_vtn_poll_interval_seconds", "gauge", "openadr.poll_s: the polls' period.");
    pfi_buf_printf(b, "pfi_ctl_vtn_poll_interval_seconds %g\n", v->cfg->openadr_poll_s);
    head(b, "pfi_ctl_vtn_last_poll_success_timestamp_seconds", "gauge",
         "Unix time of the last whole successful poll of the VTN's events (0: none yet).");
    pfi_buf_printf(b, "pfi_ctl_vtn_last_poll_success_timestamp_seconds %.3f\n", s->last_poll_ok);
    head(b, "pfi_ctl_vtn_retry_after_seconds", "gauge",
         "The last Retry-After the VTN asked for and the controller honoured (0: none).");
    pfi_buf_printf(b, "pfi_ctl_vtn_retry_after_seconds %g\n", s->retry_after_s);
    head(b, "pfi_ctl_vtn_nonconformant_accepted_total", "counter",
         "Forms of the VTN the specification does not allow that the controller accepted, by "
         "kind.");
    for (int k = 0; k < CTL_VTN_NC_N; k++)
        pfi_buf_printf(b, "pfi_ctl_vtn_nonconformant_accepted_total{kind=\"%s\"} %llu\n",
                       ctl_vtn_nc_name[k], s->nonconf[k]);
    head(b, "pfi_ctl_vtn_echo_challenges_total", "counter",
         "Webhook echo challenges answered (GET /openadr3/events?echo=...).");
    pfi_buf_printf(b, "pfi_ctl_vtn_echo_challenges_total %llu\n", s->echoes);
}

/* per job, {hpc_job, tier} (the same id under two tiers is two jobs:
 * ctl_decide.c); the id escaped although validated */
#define JOB_LABELS(k) pfi_prom_label(jl, sizeof jl, v->job[k].id), v->job[k].tier
#define JOB_FMT(name) name "{hpc_job=\"%s\",tier=\"%d\"} %g\n"

/* what the allocation and the agents say of each job */
static void job_power_metrics(const view *v, pfi_buf *b)
{
    char jl[2 * 64 + 1];
    head(b, "pfi_ctl_job_allocation_watts", "gauge", "A job's allocated aggregate GPU power.");
    for (size_t k = 0; k < v->njobs; k++)
        if (isfinite(v->job[k].alloc_w))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_allocation_watts"), JOB_LABELS(k),
                           v->job[k].alloc_w);
    head(b, "pfi_ctl_job_cap_watts", "gauge", "The per-GPU cap pushed for a job.");
    for (size_t k = 0; k < v->njobs; k++)
        if (v->job[k].alloc_cap_w > 0)
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_cap_watts"), JOB_LABELS(k),
                           v->job[k].alloc_cap_w);
    head(b, "pfi_ctl_job_power_watts", "gauge", "A job's measured GPU power.");
    for (size_t k = 0; k < v->njobs; k++)
        pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_power_watts"), JOB_LABELS(k), v->job[k].measured_w);
    head(b, "pfi_ctl_job_tokens_per_second", "gauge", "A job's throughput.");
    for (size_t k = 0; k < v->njobs; k++)
        if (isfinite(v->job[k].tokens_per_s))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_tokens_per_second"), JOB_LABELS(k),
                           v->job[k].tokens_per_s);
}

/* each job against its pre-event baseline while an event runs (the status
   page's and the report's rule), and its tier's allowed loss */
static void job_baseline_metrics(const view *v, pfi_buf *b)
{
    char jl[2 * 64 + 1];
    head(b, "pfi_ctl_job_baseline_watts", "gauge",
         "A job's pre-event baseline power (while an event runs).");
    for (size_t k = 0; k < v->njobs; k++)
        if (v->active && isfinite(v->job[k].base_w))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_baseline_watts"), JOB_LABELS(k),
                           v->job[k].base_w);
    head(b, "pfi_ctl_job_baseline_tokens_per_second", "gauge",
         "A job's pre-event baseline throughput (while an event runs).");
    for (size_t k = 0; k < v->njobs; k++)
        if (v->active && isfinite(v->job[k].base_w) && v->job[k].base_tokens > 0)
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_baseline_tokens_per_second"), JOB_LABELS(k),
                           v->job[k].base_tokens);
    head(b, "pfi_ctl_job_throughput_loss_ratio", "gauge",
         "A job's throughput loss against its baseline, 1 - tokens/s / baseline (while an event "
         "runs).");
    for (size_t k = 0; k < v->njobs; k++) {
        const view_job *j = &v->job[k];
        if (v->active && isfinite(j->base_w) && j->base_tokens > 0 && isfinite(j->tokens_per_s))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_throughput_loss_ratio"), JOB_LABELS(k),
                           1 - j->tokens_per_s / j->base_tokens);
    }
    head(b, "pfi_ctl_job_allowed_loss_ratio", "gauge",
         "The throughput loss a job's SLA tier allows (jobs with a limiting tier).");
    for (size_t k = 0; k < v->njobs; k++) {
        double allowed = pfi_sla_loss(v->job[k].tier);
        if (v->job[k].tier >= 0 && allowed < 1)
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_allowed_loss_ratio"), JOB_LABELS(k), allowed);
    }
}
/* each job's profile (ctl_profile.c) */
static void job_profile_metrics(const view *v, pfi_buf *b)
{
    char jl[2 * 64 + 1];
    head(b, "pfi_ctl_job_profile_points", "gauge",
         "Points measured by a job's profile at job start.");
    for (size_t k = 0; k < v->njobs; k++)
        pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_profile_points"), JOB_LABELS(k),
                       (double)v->job[k].prof_points);
    head(b, "pfi_ctl_job_profile_cost_ratio", "gauge",
         "Throughput a job's profile gave up, over its first hour's.");
    for (size_t k = 0; k < v->njobs; k++)
        pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_profile_cost_ratio"), JOB_LABELS(k),
                       v->job[k].prof_cost_ratio);
    head(b, "pfi_ctl_job_profiling", "gauge", "1 while a job's profile steps its caps.");
    for (size_t k = 0; k < v->njobs; k++)
        pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_profiling"), JOB_LABELS(k),
                       (double)v->job[k].profiling);
    head(b, "pfi_ctl_sla_shortfall_kw", "gauge",
         "Power the jobs' SLA floors need beyond the event's budget (0: they fit).");
    if (isfinite(v->sla_shortfall_w))
        pfi_buf_printf(b, "pfi_ctl_sla_shortfall_kw %g\n", v->sla_shortfall_w / 1000);
}
#undef JOB_FMT
#undef JOB_LABELS

/* the loop's timing and counters, triggers */
static void loop_metrics(const view *v, pfi_buf *b)
{
    head(b, "pfi_ctl_cycle_seconds", "gauge", "Time of the last control computation.");
    pfi_buf_printf(b, "pfi_ctl_cycle_seconds %g\n", v->cycle_s);
    head(b, "pfi_ctl_period_seconds", "gauge",
         "Wall time of the last whole period: collect, compute, push.");
    pfi_buf_printf(b, "pfi_ctl_period_seconds %g\n", v->loop_s);
    head(b, "pfi_ctl_generation_rejects_total", "counter",
         "Pushes an agent refused (400) for their lease generation: an alarm.");
    pfi_buf_printf(b, "pfi_ctl_generation_rejects_total %llu\n", v->generation_rejects);
    head(b, "pfi_ctl_generation_changes_total", "counter",
         "Lease generations changed by the decision and stored before a push carried them, by "
         "why: generation_max_above (an agent's is above ours), stale (a 409), out_of_reach (a "
         "400 about the generation).");
    for (int k = CTL_GEN_WHY_ABOVE; k <= CTL_GEN_WHY_OUT_OF_REACH; k++)
        pfi_buf_printf(b, "pfi_ctl_generation_changes_total{why=\"%s\"} %llu\n",
                       ctl_gen_why_name[k], v->generation_changes[k]);
    head(b, "pfi_ctl_online_round", "gauge",
         "safe-online: measured rounds run in the current event (0: none, or another strategy).");
    pfi_buf_printf(b, "pfi_ctl_online_round %llu\n", v->online_rounds);
    head(b, "pfi_ctl_leader", "gauge",
         "1 while this controller leads (failover; always 1 alone): a sum above 1 is two leaders.");
    pfi_buf_printf(b, "pfi_ctl_leader{role=\"%s\"} %d\n", v->role,
                   strcmp(v->role, "follower") != 0);
    if (v->fo.on) {
        head(b, "pfi_ctl_failover_elections_won_total", "counter",
             "Elections this controller won (failover on etcd).");
        pfi_buf_printf(b, "pfi_ctl_failover_elections_won_total %llu\n", v->fo.elections_won);
        head(b, "pfi_ctl_failover_fences_total", "counter",
             "Times this controller stopped leading: its lease lapsed, its keepalive deadline "
             "passed, or the store refused its write.");
        pfi_buf_printf(b, "pfi_ctl_failover_fences_total %llu\n", v->fo.fences);
        head(b, "pfi_ctl_store_nospace_total", "counter",
             "Commits etcd refused for its space quota (NOSPACE): the leader stepped down.");
        pfi_buf_printf(b, "pfi_ctl_store_nospace_total %llu\n", v->fo.nospace);
        head(b, "pfi_ctl_store_lag_seconds", "gauge",
             "A follower: seconds since its read-only views last read the store (0 leading; "
             "NaN before the first read).");
        if (isnan(v->fo.lag_s)) pfi_buf_printf(b, "pfi_ctl_store_lag_seconds NaN\n");
        else pfi_buf_printf(b, "pfi_ctl_store_lag_seconds %.3f\n", v->fo.lag_s);
        head(b, "pfi_ctl_config_mismatch", "gauge",
             "1 when the leader's configuration differs from this controller's (an alarm).");
        pfi_buf_printf(b, "pfi_ctl_config_mismatch %d\n", v->fo.config_differs);
    }
    head(b, "pfi_ctl_cycles_total", "counter", "Control periods run.");
    pfi_buf_printf(b, "pfi_ctl_cycles_total %llu\n", v->cycles);
    head(b, "pfi_ctl_db_errors_total", "counter",
         "Control periods whose rows could not be stored (the caps went out all the same).");
    pfi_buf_printf(b, "pfi_ctl_db_errors_total %llu\n", v->db_errors);
    head(b, "pfi_ctl_pushes_total", "counter", "Caps pushes to agents.");
    pfi_buf_printf(b, "pfi_ctl_pushes_total %llu\n", v->pushes);
    head(b, "pfi_ctl_push_errors_total", "counter", "Caps pushes that failed.");
    pfi_buf_printf(b, "pfi_ctl_push_errors_total %llu\n", v->push_errors);
    /* triggers (ctl_trigger.c) */
    head(b, "pfi_ctl_triggers_total", "counter",
         "Triggers whose planned caps were pushed at once (POST /v1/trigger, events starting "
         "now).");
    pfi_buf_printf(b, "pfi_ctl_triggers_total %llu\n", v->triggers);
    fast_metrics(b, v);
    if (v->triggers && isfinite(v->trigger_push_s)) {
        head(b, "pfi_ctl_trigger_push_seconds", "gauge",
             "The last trigger: to its last cap written (the last successful PUT).");
        pfi_buf_printf(b, "pfi_ctl_trigger_push_seconds %g\n", v->trigger_push_s);
    }
}

char *ctl_view_metrics(ctl *c, size_t *len)
{
    view *v = view_take(c, 0);
    if (!v) return NULL;
    pfi_buf b = {0};
    /* a follower (failover) leaves the cluster's, the events' and the jobs'
       series to the leader: its own are stale (it polls no agent), and its
       pfi_ctl_agents_up of 0 would fire PfiControllerAgentsUnreachable */
    int lead = strcmp(v->role, "follower") != 0;
    if (lead) cluster_metrics(v, &b);
    openadr_metrics(v, &b);
    vtn_metrics(v, &b);
    if (lead) {
        event_metrics(c, v, &b);
        job_power_metrics(v, &b);
        job_baseline_metrics(v, &b);
        job_profile_metrics(v, &b);
    }
    loop_metrics(v, &b);
    view_free(v);
    ctl_offer_metrics(c, &b);
    size_t n = 0; /* every value a valid exposition float, whatever a job's numbers made */
    char *t = pfi_buf_take(&b, &n), *f = pfi_prom_valid_values(t, n, len);
    free(t);
    return f; /* NULL (500) when out of memory */
}
