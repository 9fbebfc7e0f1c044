/* ctl_http.c — pfi-controller's HTTP API (docs/controller.md) on the shared
 * server (httpd.h). Who may do what is ctl_operators.c's: reading is open
 * (unless require_read_scope), every POST and DELETE needs an operator's
 * bearer token with the scope its endpoint needs (docs/controller.md,
 * "Operators"); the handler gets the operator's name (rq->who) and records
 * it on the events it creates, changes or cancels.
 *   GET  /                          status page (live power vs target;
 *                                   /page.js, /page.css: its script and style)
 *   GET  /v1/status                 what the page draws (JSON)
 *   GET  /metrics                   Prometheus text
 *   GET  /v1/events                 all events;  POST: a canonical event
 *   GET  /v1/events/ID              one event;   DELETE: cancel it
 *   GET  /v1/events/ID/report       measurement and verification (JSON)
 *   GET  /v1/events/ID/report.png   the same as a chart
 *   POST /v1/trigger                a grid trigger now: {"level": N} | {"reduction_pct": X}
 *                                   (ctl_trigger.c: the planned caps pushed at once)
 *   POST /openadr3/events           OpenADR 3.0.1/3.1 webhook (EVENTs, notifications)
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
#include "daemon_util.h"
#include "httpd.h"
#include "json_obj.h"
#include "pfi/prom.h"
#include "pfi/version.h"

int ctl_event_http_code(pfi_status st, int updated)
{
    switch (st) {
    case PFI_OK: return updated ? 200 : 201;
    case PFI_EINVAL: return 400;
    case PFI_ENOTFOUND: return 404;
    case PFI_ESTATE: return 409;
    case PFI_ERANGE: return 422;
    case PFI_ENOMEM: return 503;
    default: return 500;
    }
}

static void json_resp(pfi_http_resp *rs, int code, json_t *o)
{
    rs->body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!rs->body) return pfi_http_error(rs, 500, "out of memory");
    rs->len = strlen(rs->body);
    rs->code = code;
}

void ctl_event_who_json(json_t *o, const ctl_event *e)
{
    const char *k[3] = {"created_by", "changed_by", "cancelled_by"};
    const char *v[3] = {e->created_by, e->changed_by, e->cancelled_by};
    for (int i = 0; i < 3; i++)
        json_object_set_new(o, k[i], v[i][0] ? json_string(v[i]) : json_null());
}

json_t *ctl_event_json(const ctl_event *e)
{
    char *t = pfi_grid_event_format(&e->ev);
    json_t *o = t ? json_loads(t, 0, NULL) : NULL;
    free(t);
    if (!o) o = json_pack("{s:s}", "id", e->ev.id); /* never listed without its id */
    json_object_set_new(o, "status", json_string(ctl_event_status_name(e->status)));
    json_object_set_new(o, "source", json_string(e->ev.source));
    json_object_set_new(o, "baseline_w",
                        isfinite(e->baseline_w) ? json_real(e->baseline_w) : json_null());
    json_object_set_new(o, "target_w",
                        isfinite(e->target_w) ? json_real(e->target_w) : json_null());
    json_object_set_new(o, "baseline_source",
                        e->status == CTL_EV_SCHEDULED
                            ? json_null()
                            : json_string(ctl_base_src_name(e->baseline_src)));
    if (e->ended_by[0]) json_object_set_new(o, "ended_by", json_string(e->ended_by));
    ctl_event_who_json(o, e);
    return o;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* what the status page shows of an event beyond GET /v1/events: its end,
 * time left, achieved power, met / not met by the controller's one rule
 * (ctl_within_target: now while it runs, the report's steady-window verdict
 * once it ended) and whether it is the event whose budget the last period
 * used (several may overlap: the lowest budget wins) */
static json_t *status_event_json(ctl *c, ctl_event *e, double now)
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
                        json_boolean(active && c->st.gov_id[0] && !strcmp(c->st.gov_id, e->ev.id)));
    json_object_set_new(o, "tolerance_pct", json_real(c->cfg.tolerance_pct));
    json_t *achieved = json_null(), *met = json_null();
    const char *basis = NULL;
    ctl_verdict v = CTL_VERDICT_PENDING;
    if (active && c->st.active && isfinite(c->st.measured_w) && isfinite(e->target_w)) {
        achieved = json_real(c->st.measured_w);
        v = ctl_verdict_now(&c->cfg, e, c->st.measured_w, "steady");
        basis = "now";
    } else if (!scheduled && !active && isfinite(e->target_w)) {
        if (!e->verdict_known) {
            double w = NAN;
            ctl_verdict got;
            int n = ctl_report_verdict(c, e, &got, &w);
            if (n >= 0) {
                e->verdict_known = 1;
                e->verdict = got;
                e->verdict_steady = n;
                e->verdict_mean_w = w;
            }
        }
        if (e->verdict_known) {
            v = e->verdict;
            achieved = num_or_null(e->verdict_mean_w);
            basis = e->verdict_steady > 0 ? "steady window" : NULL;
        }
    }
    /* met / not met only where there was something to shed */
    if (v == CTL_VERDICT_MET || v == CTL_VERDICT_NOT_MET) met = json_boolean(v == CTL_VERDICT_MET);
    else basis = NULL;
    json_object_set_new(o, "achieved_w", achieved);
    json_object_set_new(o, "verdict", json_string(ctl_verdict_name(v)));
    json_object_set_new(o, "met", met);
    json_object_set_new(o, "met_basis", basis ? json_string(basis) : json_null());
    return o;
}

static json_t *status_json(ctl *c)
{
    json_t *ag = json_array(), *jobs = json_array(), *hist = json_array(), *evs = json_array();
    size_t shown = c->io.nagents < 64 ? c->io.nagents : 64, up = 0;
    for (size_t i = 0; i < c->io.nagents; i++) up += c->io.agent[i].up;
    double now = pfi_clock_now();
    for (size_t i = 0; i < shown; i++) {
        const ctl_agent *a = &c->io.agent[i];
        json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:I}", "name", a->name, "url", a->url, "up", a->up,
                              "error", a->err, "generation", (json_int_t)a->generation);
        json_object_set_new(o, "last_ok_age_s",
                            a->ever_up ? json_real(fmax(0, now - a->last_ok_t)) : json_null());
        json_array_append_new(ag, o);
    }
    for (size_t k = 0; k < c->st.njobs && k < 256; k++) {
        const ctl_job *j = &c->st.job[k];
        json_t *o = json_pack("{s:s,s:i,s:i,s:f,s:f,s:b}", "job_id", j->id, "tier", j->tier, "gpus",
                              j->gpus, "power_w", j->measured_w, "cap_w", j->cap_w, "reachable",
                              j->reachable);
        json_object_set_new(o, "tokens_per_s",
                            isfinite(j->tokens_per_s) ? json_real(j->tokens_per_s) : json_null());
        json_object_set_new(o, "alloc_w",
                            isfinite(j->alloc_w) ? json_real(j->alloc_w) : json_null());
        json_object_set_new(o, "alloc_cap_w",
                            j->alloc_cap_w > 0 ? json_real(j->alloc_cap_w) : json_null());
        json_object_set_new(o, "online_target_w",
                            num_or_null(ctl_online_target_w(&c->st, j->id, j->tier)));
        json_object_set_new(o, "pfi_predicted",
                            isfinite(j->pfi_pred) ? json_real(j->pfi_pred) : json_null());
        /* against its baseline while an event runs (the report's rule: its
           tier's allowed loss, 1 percentage point for measurement noise) */
        int during = c->st.active && isfinite(j->base_w);
        double loss = during && j->base_tokens > 0 && isfinite(j->tokens_per_s)
                          ? 1 - j->tokens_per_s / j->base_tokens
                          : NAN,
               allowed = pfi_sla_loss(j->tier);
        /* the event's baseline while one runs, else the one an event
           starting now would take (ctl_baseline.c), with its source */
        double bw = j->base_w, bt = j->base_tokens;
        ctl_base_src src = during ? j->base_src : ctl_baseline_now(&c->cfg, j, &bw, &bt);
        json_object_set_new(o, "baseline_w", num_or_null(bw));
        json_object_set_new(o, "baseline_tokens_per_s", bt > 0 ? json_real(bt) : json_null());
        json_object_set_new(o, "baseline_source", json_string(ctl_base_src_name(src)));
        json_object_set_new(o, "loss_pct", num_or_null(100 * loss));
        json_object_set_new(o, "allowed_loss_pct",
                            j->tier >= 0 && allowed < 1 ? json_real(100 * allowed) : json_null());
        json_object_set_new(
            o, "over_limit",
            j->tier < 0 || !isfinite(loss) ? json_null() : json_boolean(!(loss <= allowed + 0.01)));
        json_array_append_new(jobs, o);
    }
    for (size_t i = 0; i < c->hist_n; i++)
        json_array_append_new(hist,
                              json_pack("[f,f,f]", c->hist_t[i], c->hist_meas[i],
                                        isfinite(c->hist_target[i]) ? c->hist_target[i] : -1.0));
    for (size_t i = 0; i < c->st.nevents; i++)
        json_array_append_new(evs, status_event_json(c, &c->st.event[i], now));
    json_t *o =
        json_pack("{s:f,s:b,s:s,s:b,s:I,s:I,s:o,s:o,s:o,s:o}", "now", c->st.now, "active",
                  c->st.active, "strategy", pfi_strategy_name(c->cfg.strategy), "dry_run",
                  c->cfg.dry_run, "agents_total", (json_int_t)c->io.nagents, "agents_up",
                  (json_int_t)up, "agents", ag, "jobs", jobs, "history", hist, "events", evs);
    json_object_set_new(o, "budget_w",
                        isfinite(c->st.budget_w) ? json_real(c->st.budget_w) : json_null());
    json_object_set_new(o, "measured_w",
                        isfinite(c->st.measured_w) ? json_real(c->st.measured_w) : json_null());
    json_object_set_new(o, "unreachable_w",
                        isfinite(c->st.fixed_w) ? json_real(c->st.fixed_w) : json_null());
    json_object_set_new(o, "feedback_w", json_real(c->st.integral_w));
    json_object_set_new(o, "cycle_ms", json_real(1000 * c->cycle_s));
    json_object_set_new(o, "clock_now", json_real(now));
    json_object_set_new(o, "tolerance_pct", json_real(c->cfg.tolerance_pct));
    json_object_set_new(o, "governing_event",
                        c->st.gov_id[0] ? json_string(c->st.gov_id) : json_null());
    json_object_set_new(o, "feasible", c->st.active ? json_boolean(c->st.feasible) : json_null());
    json_object_set_new(o, "online", ctl_online_json(&c->st));
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

/* per event {event_id} (ids come from the grid operator: escaped): its
 * target, the power achieved (now while it runs; the steady window's mean
 * once it ended) and met (0/1, the controller's one rule; not during the
 * ramps, when the target is not yet or no longer due) */
static void event_metrics(ctl *c, pfi_buf *b)
{
    double now = pfi_clock_now();
    json_t *ev[CTL_LIST_EVENTS];
    size_t n = 0;
    for (size_t i = 0; i < c->st.nevents && n < CTL_LIST_EVENTS; i++) {
        ctl_event *e = &c->st.event[i];
        double end = pfi_grid_event_end(&e->ev);
        int active = (e->status == CTL_EV_ACTIVE);
        int recent = !active && (e->status != CTL_EV_SCHEDULED) && isfinite(e->target_w) &&
                     (!isfinite(end) || now - end <= CTL_METRICS_EVENT_AGE_S);
        if (active || recent) ev[n++] = status_event_json(c, e, now);
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
    char id[2 * PFI_EVENT_ID_MAX + 2];
    for (int q = 0; q < 4; q++) {
        head(b, name[q], "gauge", help[q]);
        for (size_t i = 0; i < n; i++) {
            json_t *o = ev[i], *v = NULL;
            if (q == 3) {
                const char *vd = json_string_value(json_object_get(o, "verdict"));
                if (vd && (!strcmp(vd, "nothing to shed") || !strcmp(vd, "not applicable")))
                    pfi_buf_printf(
                        b, "%s{event_id=\"%s\",reason=\"%s\"} 1\n", name[q],
                        pfi_prom_label(id, sizeof id, json_string_value(json_object_get(o, "id"))),
                        vd);
                continue;
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
            if (!isfinite(x)) continue;
            pfi_buf_printf(
                b, "%s{event_id=\"%s\"} %g\n", name[q],
                pfi_prom_label(id, sizeof id, json_string_value(json_object_get(o, "id"))), x);
        }
    }
    for (size_t i = 0; i < n; i++) json_decref(ev[i]);
}

/* the fast trigger datagrams' counters (ctl_agents.c), by kind */
static void fast_metrics(pfi_buf *b, const ctl *c)
{
    static const char *const kind[2] = {"caps", "view"};
    head(b, "pfi_ctl_fast_datagrams_total", "counter",
         "Fast trigger datagrams sent to agents: kind caps (PUT /v1/caps: a trigger's or a "
         "period's), view (a period's GET /v1/control).");
    for (int k = 0; k < 2; k++)
        pfi_buf_printf(b, "pfi_ctl_fast_datagrams_total{kind=\"%s\"} %llu\n", kind[k],
                       c->fast_sent[k]);
    head(b, "pfi_ctl_fast_answers_total", "counter",
         "Fast trigger datagrams the agents answered in time.");
    for (int k = 0; k < 2; k++)
        pfi_buf_printf(b, "pfi_ctl_fast_answers_total{kind=\"%s\"} %llu\n", kind[k],
                       c->fast_answered[k]);
    head(b, "pfi_ctl_fast_fallbacks_total", "counter",
         "Fast trigger datagrams not answered within fast_trigger_ack_s: sent again by HTTP.");
    for (int k = 0; k < 2; k++)
        pfi_buf_printf(b, "pfi_ctl_fast_fallbacks_total{kind=\"%s\"} %llu\n", kind[k],
                       c->fast_fallbacks[k]);
}

/* the cluster now: the budget, measured power, the agents */
static void cluster_metrics(ctl *c, pfi_buf *b)
{
    size_t up = 0;
    for (size_t i = 0; i < c->io.nagents; i++) up += c->io.agent[i].up;
    head(b, "pfi_build_info", "gauge", "The pfi build serving these metrics.");
    pfi_buf_printf(b, "pfi_build_info{version=\"%s\",program=\"pfi-controller\"} 1\n", PFI_VERSION);
    head(b, "pfi_ctl_event_active", "gauge",
         "1 while a grid event (or its ramp down) is being answered.");
    pfi_buf_printf(b, "pfi_ctl_event_active %d\n", c->st.active);
    head(b, "pfi_ctl_target_watts", "gauge", "The power budget this period (target with ramps).");
    if (isfinite(c->st.budget_w)) pfi_buf_printf(b, "pfi_ctl_target_watts %g\n", c->st.budget_w);
    head(b, "pfi_ctl_tolerance_ratio", "gauge",
         "How far above its target an event still counts as met (tolerance_pct / 100).");
    pfi_buf_printf(b, "pfi_ctl_tolerance_ratio %g\n", c->cfg.tolerance_pct / 100);
    head(b, "pfi_ctl_measured_watts", "gauge",
         "Measured GPU power of the managed jobs (unreachable ones as assumed).");
    double m = 0;
    for (size_t k = 0; k < c->st.njobs; k++) m += c->st.job[k].measured_w;
    pfi_buf_printf(b, "pfi_ctl_measured_watts %g\n",
                   isfinite(c->st.measured_w) ? c->st.measured_w : m);
    head(b, "pfi_ctl_unreachable_watts", "gauge", "Power assumed for jobs on unreachable agents.");
    pfi_buf_printf(b, "pfi_ctl_unreachable_watts %g\n",
                   isfinite(c->st.fixed_w) ? c->st.fixed_w : 0.0);
    head(b, "pfi_ctl_feedback_watts", "gauge", "The feedback term taken off the budget.");
    pfi_buf_printf(b, "pfi_ctl_feedback_watts %g\n", c->st.integral_w);
    head(b, "pfi_ctl_agents_up", "gauge", "Agents that answered this period.");
    pfi_buf_printf(b, "pfi_ctl_agents_up %zu\n", up);
    head(b, "pfi_ctl_agents_configured", "gauge", "Agents in the configuration.");
    pfi_buf_printf(b, "pfi_ctl_agents_configured %zu\n", c->io.nagents);
}

/* OpenADR: versions not acted on, reports refused */
static void openadr_metrics(ctl *c, pfi_buf *b)
{
    head(b, "pfi_ctl_openadr_rejected_total", "counter",
         "OpenADR event versions not acted on, by reason (each logged once, at most 20 lines a "
         "minute).");
    for (int r = 1; r < PFI_OADR_NREASONS; r++) {
        char rl[64];
        pfi_buf_printf(b, "pfi_ctl_openadr_rejected_total{reason=\"%s\"} %llu\n",
                       pfi_prom_label(rl, sizeof rl, pfi_oadr_reason_name((pfi_oadr_reason)r)),
                       c->oadr_rejected[r]);
    }
    head(b, "pfi_ctl_openadr_reports_refused_total", "counter",
         "REPORTs the VTN refused (4xx): logged, kept, not sent again.");
    pfi_buf_printf(b, "pfi_ctl_openadr_reports_refused_total %llu\n", c->reports_refused);
}

/* per job, {hpc_job, tier} */
static void job_metrics(ctl *c, pfi_buf *b)
{
    /* per job: {hpc_job, tier} (the same id under two tiers is two jobs: ctl_decide.c); the id
     * escaped although validated */
    char jl[2 * 64 + 1];
#define JOB_LABELS(k) pfi_prom_label(jl, sizeof jl, c->st.job[k].id), c->st.job[k].tier
#define JOB_FMT(name) name "{hpc_job=\"%s\",tier=\"%d\"} %g\n"
    head(b, "pfi_ctl_job_allocation_watts", "gauge", "A job's allocated aggregate GPU power.");
    for (size_t k = 0; k < c->st.njobs; k++)
        if (isfinite(c->st.job[k].alloc_w))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_allocation_watts"), JOB_LABELS(k),
                           c->st.job[k].alloc_w);
    head(b, "pfi_ctl_job_cap_watts", "gauge", "The per-GPU cap pushed for a job.");
    for (size_t k = 0; k < c->st.njobs; k++)
        if (c->st.job[k].alloc_cap_w > 0)
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_cap_watts"), JOB_LABELS(k),
                           c->st.job[k].alloc_cap_w);
    head(b, "pfi_ctl_job_power_watts", "gauge", "A job's measured GPU power.");
    for (size_t k = 0; k < c->st.njobs; k++)
        pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_power_watts"), JOB_LABELS(k),
                       c->st.job[k].measured_w);
    head(b, "pfi_ctl_job_tokens_per_second", "gauge", "A job's throughput.");
    for (size_t k = 0; k < c->st.njobs; k++)
        if (isfinite(c->st.job[k].tokens_per_s))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_tokens_per_second"), JOB_LABELS(k),
                           c->st.job[k].tokens_per_s);
    /* against its pre-event baseline while an event runs (the status page's and the
       report's rule) */
    head(b, "pfi_ctl_job_baseline_watts", "gauge",
         "A job's pre-event baseline power (while an event runs).");
    for (size_t k = 0; k < c->st.njobs; k++)
        if (c->st.active && isfinite(c->st.job[k].base_w))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_baseline_watts"), JOB_LABELS(k),
                           c->st.job[k].base_w);
    head(b, "pfi_ctl_job_baseline_tokens_per_second", "gauge",
         "A job's pre-event baseline throughput (while an event runs).");
    for (size_t k = 0; k < c->st.njobs; k++)
        if (c->st.active && isfinite(c->st.job[k].base_w) && c->st.job[k].base_tokens > 0)
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_baseline_tokens_per_second"), JOB_LABELS(k),
                           c->st.job[k].base_tokens);
    head(b, "pfi_ctl_job_throughput_loss_ratio", "gauge",
         "A job's throughput loss against its baseline, 1 - tokens/s / baseline (while an event "
         "runs).");
    for (size_t k = 0; k < c->st.njobs; k++) {
        const ctl_job *j = &c->st.job[k];
        if (c->st.active && isfinite(j->base_w) && j->base_tokens > 0 && isfinite(j->tokens_per_s))
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_throughput_loss_ratio"), JOB_LABELS(k),
                           1 - j->tokens_per_s / j->base_tokens);
    }
    head(b, "pfi_ctl_job_allowed_loss_ratio", "gauge",
         "The throughput loss a job's SLA tier allows (jobs with a limiting tier).");
    for (size_t k = 0; k < c->st.njobs; k++) {
        double allowed = pfi_sla_loss(c->st.job[k].tier);
        if (c->st.job[k].tier >= 0 && allowed < 1)
            pfi_buf_printf(b, JOB_FMT("pfi_ctl_job_allowed_loss_ratio"), JOB_LABELS(k), allowed);
    }
#undef JOB_FMT
#undef JOB_LABELS
}

/* the loop's timing and counters, triggers */
static void loop_metrics(ctl *c, pfi_buf *b)
{
    head(b, "pfi_ctl_cycle_seconds", "gauge", "Time of the last control computation.");
    pfi_buf_printf(b, "pfi_ctl_cycle_seconds %g\n", c->cycle_s);
    head(b, "pfi_ctl_period_seconds", "gauge",
         "Wall time of the last whole period: collect, compute, push.");
    pfi_buf_printf(b, "pfi_ctl_period_seconds %g\n", c->loop_s);
    head(b, "pfi_ctl_generation_rejects_total", "counter",
         "Pushes an agent refused (400) for their lease generation: an alarm.");
    pfi_buf_printf(b, "pfi_ctl_generation_rejects_total %llu\n", c->generation_rejects);
    head(b, "pfi_ctl_online_round", "gauge",
         "safe-online: measured rounds run in the current event (0: none, or another strategy).");
    pfi_buf_printf(b, "pfi_ctl_online_round %llu\n", ctl_online_rounds(&c->st));
    head(b, "pfi_ctl_cycles_total", "counter", "Control periods run.");
    pfi_buf_printf(b, "pfi_ctl_cycles_total %llu\n", c->cycles);
    head(b, "pfi_ctl_db_errors_total", "counter",
         "Control periods whose rows could not be stored (the caps went out all the same).");
    pfi_buf_printf(b, "pfi_ctl_db_errors_total %llu\n",
                   (unsigned long long)atomic_load(&c->db_errors));
    head(b, "pfi_ctl_pushes_total", "counter", "Caps pushes to agents.");
    pfi_buf_printf(b, "pfi_ctl_pushes_total %llu\n", c->pushes);
    head(b, "pfi_ctl_push_errors_total", "counter", "Caps pushes that failed.");
    pfi_buf_printf(b, "pfi_ctl_push_errors_total %llu\n", c->push_errors);
    /* triggers (ctl_trigger.c) */
    head(b, "pfi_ctl_triggers_total", "counter",
         "Triggers whose planned caps were pushed at once (POST /v1/trigger, events starting "
         "now).");
    pfi_buf_printf(b, "pfi_ctl_triggers_total %llu\n", c->triggers);
    fast_metrics(b, c);
    if (c->triggers && isfinite(c->trigger_push_s)) {
        head(b, "pfi_ctl_trigger_push_seconds", "gauge",
             "The last trigger: to its last cap written (the last successful PUT).");
        pfi_buf_printf(b, "pfi_ctl_trigger_push_seconds %g\n", c->trigger_push_s);
    }
}

static char *metrics(ctl *c, size_t *len)
{
    pfi_buf b = {0};
    cluster_metrics(c, &b);
    openadr_metrics(c, &b);
    event_metrics(c, &b);
    job_metrics(c, &b);
    loop_metrics(c, &b);
    return pfi_buf_take(&b, len); /* NULL (500) when out of memory */
}

static void png(ctl *c, const ctl_event *e, pfi_http_resp *rs)
{
    char dir[] = "/tmp/pfi-ctl-report-XXXXXX", base[64], path[80];
    if (!mkdtemp(dir)) return pfi_http_error(rs, 500, "cannot make a temporary directory");
    snprintf(base, sizeof base, "%s/r", dir);
    snprintf(path, sizeof path, "%s.png", base);
    pfi_error err;
    if (ctl_report_png(c, e, base, &err)) {
        rmdir(dir);
        return pfi_http_error(rs, 409, "%s", err.msg);
    }
    FILE *f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        rs->body = malloc((size_t)n + 1);
        rs->len = rs->body ? fread(rs->body, 1, (size_t)n, f) : 0;
        fclose(f);
    }
    unlink(path);
    snprintf(path, sizeof path, "%s.svg", base);
    unlink(path);
    rmdir(dir);
    if (!rs->body) return pfi_http_error(rs, 500, "cannot read the chart");
    rs->code = 200;
    rs->ctype = "image/png";
}

/* the caller's name (httpd.h: authorize's, ctl_operators.c) */
static const char *who(const pfi_http_req *rq)
{
    return rq->who ? rq->who : "";
}

/* DELETE /v1/events/ID: an operator with the scope events, or with
   control for a trigger's event (ctl_operators.c let both through) */
static int may_cancel(const ctl *c, const pfi_http_req *rq, const ctl_event *e)
{
    const struct ctl_cfg_operator *o = ctl_operator_find(c, who(rq));
    unsigned s = o ? o->scopes : 0;
    return (s & CTL_SCOPE_EVENTS) || ((s & CTL_SCOPE_CONTROL) && !strcmp(e->ev.source, "trigger"));
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
    st = ctl_event_add(c, &ev, who(rq), &updated, &e);
    if (st) return pfi_http_error(rs, ctl_event_http_code(st, 0), "%s", e.msg);
    json_t *a = ctl_event_json(ctl_event_find(c, ev.id));
    json_object_set_new(a, "fast_path", json_boolean(c->triggers > before));
    json_resp(rs, ctl_event_http_code(PFI_OK, updated), a);
}

/* /v1/events (GET the list, POST one) and /v1/events/ID[/report[.png]]
   (GET, DELETE: cancel) */
static void events_route(ctl *c, const pfi_http_req *rq, pfi_http_resp *rs, int get, int post,
                         int del)
{
    const char *u = rq->url;
    if (!strcmp(u, "/v1/events")) {
        if (get) {
            json_t *a = json_array();
            for (size_t i = 0; i < c->st.nevents; i++)
                json_array_append_new(a, ctl_event_json(&c->st.event[i]));
            json_resp(rs, 200, json_pack("{s:o}", "events", a));
        } else if (post) {
            pfi_grid_event ev;
            pfi_error e;
            int updated = 0;
            pfi_status st = PFI_OK;
            if (pfi_grid_event_parse(rq->body, rq->len, &ev, &e))
                pfi_http_error(rs, 400, "%s", e.msg);
            else if ((st = ctl_event_add(c, &ev, who(rq), &updated, &e)))
                pfi_http_error(rs, ctl_event_http_code(st, 0), "%s", e.msg);
            else
                json_resp(rs, ctl_event_http_code(PFI_OK, updated),
                          ctl_event_json(ctl_event_find(c, ev.id)));
        } else pfi_http_error(rs, 405, "method not allowed (GET, POST)");
    } else if (!strncmp(u, "/v1/events/", 11)) {
        char id[PFI_EVENT_ID_MAX + 32];
        snprintf(id, sizeof id, "%s", u + 11);
        int report = 0;
        char *sl = strchr(id, '/');
        if (sl) {
            report = !strcmp(sl, "/report") ? 1 : !strcmp(sl, "/report.png") ? 2 : -1;
            *sl = '\0';
        }
        ctl_event *e = ctl_event_find(c, id);
        if (report < 0) pfi_http_error(rs, 404, "no such endpoint");
        else if (!e) pfi_http_error(rs, 404, "no event %s", id);
        else if (del && !report && !may_cancel(c, rq, e))
            pfi_http_error(rs, 403,
                           "operator %s lacks the scope events (DELETE /v1/events/ID needs it; "
                           "control cancels a trigger's event only)",
                           who(rq));
        else if (del && !report) {
            pfi_error ce;
            pfi_status st = ctl_event_cancel(c, id, who(rq), &ce);
            if (st) pfi_http_error(rs, ctl_event_http_code(st, 0), "%s", ce.msg);
            else json_resp(rs, 200, ctl_event_json(e));
        } else if (!get) pfi_http_error(rs, 405, "method not allowed");
        else if (report == 1) {
            rs->body = ctl_report_json(c, e);
            rs->len = rs->body ? strlen(rs->body) : 0;
            rs->code = 200;
        } else if (report == 2) png(c, e, rs);
        else json_resp(rs, 200, ctl_event_json(e));
    }
}

static void handle(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    ctl *c = ud;
    int get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD"),
        post = !strcmp(rq->method, "POST"), del = !strcmp(rq->method, "DELETE");
    const char *u = rq->url;
    pthread_mutex_lock(&c->mu);
    const char *page = NULL, *ptype = NULL;
    if (!strcmp(u, "/") || !strcmp(u, "/index.html"))
        page = ctl_status_page, ptype = "text/html; charset=utf-8";
    else if (!strcmp(u, "/page.js")) page = ctl_page_js, ptype = "text/javascript; charset=utf-8";
    else if (!strcmp(u, "/page.css")) page = ctl_page_css, ptype = "text/css; charset=utf-8";
    if (page) {
        if (!get) pfi_http_error(rs, 405, "method not allowed (GET)");
        else {
            rs->body = strdup(page);
            rs->len = rs->body ? strlen(rs->body) : 0;
            rs->code = 200;
            rs->ctype = ptype;
            rs->csp = ctl_page_csp;
        }
    } else if (!strcmp(u, "/healthz")) {
        /* small, for benchmarks that poll each period: /metrics grows with the jobs */
        size_t up = 0;
        for (size_t i = 0; i < c->io.nagents; i++) up += c->io.agent[i].up != 0;
        json_resp(rs, 200,
                  json_pack("{s:b,s:I,s:f,s:f,s:I,s:I,s:{s:f,s:f,s:f,s:f}}", "ok", 1, "cycles",
                            (json_int_t)c->cycles, "period_s", c->loop_s, "trigger_push_s",
                            isfinite(c->trigger_push_s) ? c->trigger_push_s : -1.0, "triggers",
                            (json_int_t)c->triggers, "agents_up", (json_int_t)up, "phase_s",
                            "collect", c->phase_s[CTL_PH_COLLECT], "decide",
                            c->phase_s[CTL_PH_DECIDE], "persist", c->phase_s[CTL_PH_PERSIST],
                            "push", c->phase_s[CTL_PH_PUSH]));
    } else if (!strcmp(u, "/v1/status")) {
        if (!get) pfi_http_error(rs, 405, "method not allowed (GET)");
        else json_resp(rs, 200, status_json(c));
    } else if (!strcmp(u, "/metrics")) {
        rs->body = metrics(c, &rs->len);
        rs->code = 200;
        rs->ctype = "text/plain; version=0.0.4; charset=utf-8";
    } else if (!strncmp(u, "/v1/events", 10) && (!u[10] || u[10] == '/')) {
        events_route(c, rq, rs, get, post, del);
    } else if (!strcmp(u, "/v1/trigger")) {
        if (!post) pfi_http_error(rs, 405, "method not allowed (POST)");
        else trigger(c, rq, rs);
    } else if (!strcmp(u, "/openadr3/events")) {
        if (!post) pfi_http_error(rs, 405, "method not allowed (POST)");
        else {
            json_t *answer = NULL;
            pfi_error e;
            int code = ctl_openadr_take(c, rq->body, rq->len, "webhook", who(rq), &answer, &e);
            if (answer) json_resp(rs, code, answer);
            else pfi_http_error(rs, code, "%s", e.msg);
        }
    } else {
        pfi_http_error(rs, 404,
                       "no such endpoint (/, /v1/status, /metrics, /v1/events, /v1/trigger, "
                       "/openadr3/events)");
    }
    pthread_mutex_unlock(&c->mu);
}

int ctl_http_start(ctl *c)
{
    pfi_httpd_opts o = {.listen = c->cfg.listen,
                        .tls_cert = c->cfg.tls_cert[0] ? c->cfg.tls_cert : NULL,
                        .tls_key = c->cfg.tls_key[0] ? c->cfg.tls_key : NULL,
                        .max_body = 1 << 20,
                        .authorize = ctl_authorize,
                        .handle = handle,
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
