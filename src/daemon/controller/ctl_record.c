/* ctl_record.c — pfi-controller --record FILE: every control period as one
 * JSON line, what the decision saw and what it decided, so that a period
 * can be replayed against the decision offline (tests/daemon/
 * test_ctl_replay.c; docs/controller.md, "Recording and replaying periods").
 *
 * The first line: {"record": 1, "config": the configuration file's text,
 * "integral_w", "jobs": the jobs a restart resumed [id, tier, base_w,
 * base_tokens]}. Then per period: {"t": the pfi clock, "agents": [{"up",
 * "lease_until", "node": its last view or null}], "events": the event table
 * before the period, "caps": [[id, tier, alloc_cap_w, alloc_w], ...],
 * "plan_cut_pct": [...], "plan": [[id, tier, cap_w per cut...], ...],
 * "budget_w", "integral_w", "generations": [[agent, from, to, why], ...]}.
 * Numbers are written with 17 digits (jansson's
 * default), so they read back exactly; NaN is null, infinities "inf" and
 * "-inf". The file is the operator's: appended, never truncated; a write
 * that fails is logged once and recording stops. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_record.h"
#include "event_kind.h"

static FILE *g_rec;
static json_t *g_pending; /* this period's inputs, until its decision is known */

json_t *ctl_record_num(double v)
{
    if (isnan(v)) return json_null();
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

double ctl_record_get_num(const json_t *v)
{
    if (json_is_string(v)) return !strcmp(json_string_value(v), "-inf") ? -INFINITY : INFINITY;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void put(ctl *c, json_t *line)
{
    if (!g_rec || !line) {
        json_decref(line);
        return;
    }
    if (json_dumpf(line, g_rec, JSON_COMPACT) || fputc('\n', g_rec) == EOF || fflush(g_rec)) {
        ctl_log(c, "error: --record: writing failed (%s); recording stops", strerror(errno));
        fclose(g_rec);
        g_rec = NULL;
    }
    json_decref(line);
}

int ctl_record_open(ctl *c, const char *path, const char *config_path)
{
    g_rec = fopen(path, "a");
    if (!g_rec) {
        ctl_log(c, "error: --record %s: %s", path, strerror(errno));
        return -1;
    }
    FILE *f = fopen(config_path, "r");
    char *text = NULL;
    size_t n = 0;
    if (f) {
        FILE *m = open_memstream(&text, &n);
        char b[4096];
        size_t k;
        while (m && (k = fread(b, 1, sizeof b, f)) > 0) fwrite(b, 1, k, m);
        if (m) fclose(m);
        fclose(f);
    }
    json_t *jobs = json_array();
    for (size_t k = 0; k < c->st.njobs; k++) {
        const ctl_job *j = &c->st.job[k];
        json_array_append_new(jobs, json_pack("[siOO]", j->id, j->tier, ctl_record_num(j->base_w),
                                              ctl_record_num(j->base_tokens)));
    }
    put(c, json_pack("{sisssOso}", "record", 1, "config", text ? text : "", "integral_w",
                     ctl_record_num(c->st.integral_w), "jobs", jobs));
    free(text);
    return 0;
}

json_t *ctl_record_event(const ctl_event *e)
{
    const pfi_grid_event *v = &e->ev;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(v->id));
    json_object_set_new(o, "start", ctl_record_num(v->start));
    json_object_set_new(o, "duration_s", ctl_record_num(v->duration_s));
    json_object_set_new(o, "open_ended", json_integer(v->open_ended));
    json_object_set_new(o, "kind", json_integer(v->kind));
    for (size_t k = 0; k < pfi_event_nkinds; k++) { /* every kind's field, whatever the kind */
        pfi_grid_event as = *v;
        as.kind = pfi_event_kinds[k].kind;
        double x = pfi_grid_event_value(&as);
        json_object_set_new(o, pfi_event_kinds[k].name,
                            pfi_event_kinds[k].integer ? json_integer((json_int_t)x)
                                                       : ctl_record_num(x));
    }
    json_object_set_new(o, "ev_ramp_s", ctl_record_num(v->ramp_s));
    json_object_set_new(o, "ev_ramp_down_s", ctl_record_num(v->ramp_down_s));
    json_object_set_new(o, "dry_run", json_integer(v->dry_run));
    json_object_set_new(o, "has_priority", json_integer(v->has_priority));
    json_object_set_new(o, "priority", json_integer(v->priority));
    json_object_set_new(o, "source", json_string(v->source));
    json_object_set_new(o, "status", json_string(ctl_event_status_name(e->status)));
    json_object_set_new(o, "baseline_w", ctl_record_num(e->baseline_w));
    json_object_set_new(o, "target_w", ctl_record_num(e->target_w));
    json_object_set_new(o, "ramp_s", ctl_record_num(e->ramp_s));
    json_object_set_new(o, "ramp_down_s", ctl_record_num(e->ramp_down_s));
    json_object_set_new(o, "reached_t", ctl_record_num(e->reached_t));
    json_object_set_new(o, "announced_t", ctl_record_num(e->announced_t));
    json_object_set_new(o, "cancelled", json_integer(e->cancelled));
    return o;
}

void ctl_record_generation_inputs(json_t *o, const ctl_agent_view *a)
{
    json_object_set_new(o, "generation", json_integer(a->generation));
    json_object_set_new(o, "generation_floor", json_integer(a->generation_floor));
    json_object_set_new(o, "gen_answer", json_integer(a->gen_answer));
}

json_t *ctl_record_generations(const ctl_decision *d)
{
    json_t *g = json_array();
    for (size_t i = 0; g && i < d->ngen_rows; i++) {
        const ctl_gen_row *r = &d->gen_rows[i];
        json_array_append_new(g, json_pack("[IIIs]", (json_int_t)r->agent, (json_int_t)r->from,
                                           (json_int_t)r->to, ctl_gen_why_name[r->why]));
    }
    return g;
}

void ctl_record_inputs(ctl *c)
{
    if (!g_rec) return;
    json_decref(g_pending);
    json_t *agents = json_array(), *events = json_array();
    for (size_t i = 0; i < c->io.nagents; i++) {
        const ctl_agent *a = &c->io.agent[i];
        json_t *o =
            json_pack("{sisOsO}", "up", a->up, "lease_until", ctl_record_num(a->lease_until),
                      "node", a->node ? a->node : json_null());
        if (o && i < c->io.in.nagents) ctl_record_generation_inputs(o, &c->io.in.agent[i]);
        json_array_append_new(agents, o);
    }
    for (size_t i = 0; i < c->st.nevents; i++)
        json_array_append_new(events, ctl_record_event(&c->st.event[i]));
    g_pending = json_pack("{soso}", "agents", agents, "events", events);
}

void ctl_record_decision(ctl *c)
{
    if (!g_rec || !g_pending) return;
    json_t *caps = json_array(), *plan = json_array(), *cuts = json_array();
    for (size_t k = 0; k < c->st.njobs; k++) {
        const ctl_job *j = &c->st.job[k];
        json_array_append_new(caps,
                              json_pack("[siOO]", j->id, j->tier, ctl_record_num(j->alloc_cap_w),
                                        ctl_record_num(j->alloc_w)));
        json_t *row = json_pack("[si]", j->id, j->tier);
        for (size_t p = 0; p < c->st.nplan; p++)
            json_array_append_new(row, ctl_record_num(j->plan_cap_w[p]));
        json_array_append_new(plan, row);
    }
    for (size_t p = 0; p < c->st.nplan; p++)
        json_array_append_new(cuts, ctl_record_num(c->st.plan_cut_pct[p]));
    json_object_set_new(g_pending, "t", ctl_record_num(c->st.now));
    json_object_set_new(g_pending, "caps", caps);
    json_object_set_new(g_pending, "plan_cut_pct", cuts);
    json_object_set_new(g_pending, "plan", plan);
    json_object_set_new(g_pending, "budget_w", ctl_record_num(c->st.budget_w));
    json_object_set_new(g_pending, "integral_w", ctl_record_num(c->st.integral_w));
    json_object_set_new(g_pending, "generations", ctl_record_generations(&c->io.dec));
    put(c, g_pending);
    g_pending = NULL;
}

void ctl_record_close(void)
{
    json_decref(g_pending);
    g_pending = NULL;
    if (g_rec) fclose(g_rec);
    g_rec = NULL;
}
