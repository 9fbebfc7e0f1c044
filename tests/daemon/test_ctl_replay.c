/* test_ctl_replay.c — the golden replay (docs/controller.md, "Recording and
 * replaying periods"): periods that pfi-controller --record wrote before the
 * decision was a pure function (the .jsonl files of tests/data/golden: pfi demo and the
 * controller's shell tests, recorded from the controller of commit ee71f3a;
 * their decisions re-blessed for issue 30's baselines and issue 31's safe-online)
 * replayed through ctl_decide, which must give the same caps, the same
 * allocation and the same response plan, job by job and period by period.
 * Each period's event table is the recorded one (the API changes events
 * between periods); everything else — jobs, baselines, learned ratios,
 * the feedback term, safe-online — is carried by the decision itself from
 * the first period on. */
#include "../testutil.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_record.h"
#include "event_kind.h"
#include "vec.h"

#define GOLDEN PFI_SOURCE_DIR "/tests/data/golden"

static ctl_cfg g_cfg;
static ctl_state g_st;
static ctl_inputs g_in;
static ctl_decision g_dec;
static pfi_modelfile g_cm;
static int g_have_cm;

static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= 1e-9 * fmax(1, fabs(b));
}

static void take_header(const char *name, json_t *h)
{
    const char *text = json_string_value(json_object_get(h, "config"));
    assert_non_null(text);
    pfi_error e;
    if (ctl_config_parse(text, strlen(text), name, &g_cfg, &e)) fail_msg("%s: %s", name, e.msg);
    /* profiles at job start (issue 31) step caps and read the plant's answer
       to them: recorded inputs cannot answer a cap the recording never sent,
       so the recordings (from before profiles) replay with profiles off;
       the profiles' rules are tested against a plant in test_ctl_decide.c */
    g_cfg.profile = 0;
    g_have_cm = 0;
    if (g_cfg.curve_model[0]) { /* the model beside the recording, by its file name */
        const char *base = strrchr(g_cfg.curve_model, '/');
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", GOLDEN, base ? base + 1 : g_cfg.curve_model);
        if (pfi_modelfile_load(path, &g_cm, &e))
            fail_msg("%s: curve model %s: %s", name, path, e.msg);
        g_have_cm = 1;
    }
    memset(&g_st, 0, sizeof g_st);
    g_st.integral_w = ctl_record_get_num(json_object_get(h, "integral_w"));
    g_st.feasible = 1;
    g_st.plan_t = NAN;
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(h, "jobs"), i, j)
    { /* a restarted controller's resumed jobs (ctl_main.c) */
        assert_int_equal(PFI_VEC_RESERVE(g_st.job, g_st.job_cap, g_st.njobs + 1, NULL), PFI_OK);
        ctl_job *x = &g_st.job[g_st.njobs++];
        ctl_job_init(x, json_string_value(json_array_get(j, 0)),
                     (int)json_integer_value(json_array_get(j, 1)));
        x->base_w = ctl_record_get_num(json_array_get(j, 2));
        x->base_tokens = ctl_record_get_num(json_array_get(j, 3));
        x->seen = 1;
    }
}

static void take_events(json_t *events)
{
    g_st.nevents = 0;
    size_t i;
    json_t *o;
    json_array_foreach(events, i, o)
    {
        ctl_event *e = ctl_state_event_new(&g_st);
        assert_non_null(e);
        memset(e, 0, sizeof *e);
        pfi_grid_event *v = &e->ev;
        snprintf(v->id, sizeof v->id, "%s", json_string_value(json_object_get(o, "id")));
        v->start = ctl_record_get_num(json_object_get(o, "start"));
        v->duration_s = ctl_record_get_num(json_object_get(o, "duration_s"));
        v->open_ended = (int)json_integer_value(json_object_get(o, "open_ended"));
        for (size_t k = 0; k < pfi_event_nkinds; k++) { /* every kind's field (event_kind.c) */
            json_t *x = json_object_get(o, pfi_event_kinds[k].name);
            pfi_grid_event_set(v, pfi_event_kinds[k].kind,
                               pfi_event_kinds[k].integer ? (double)json_integer_value(x)
                                                          : ctl_record_get_num(x));
        }
        v->kind = (pfi_event_kind)json_integer_value(json_object_get(o, "kind"));
        v->ramp_s = ctl_record_get_num(json_object_get(o, "ev_ramp_s"));
        v->ramp_down_s = ctl_record_get_num(json_object_get(o, "ev_ramp_down_s"));
        v->dry_run = (int)json_integer_value(json_object_get(o, "dry_run"));
        v->has_priority = (int)json_integer_value(json_object_get(o, "has_priority"));
        v->priority = (int)json_integer_value(json_object_get(o, "priority"));
        snprintf(v->source, sizeof v->source, "%s",
                 json_string_value(json_object_get(o, "source")));
        assert_int_equal(
            ctl_event_status_parse(json_string_value(json_object_get(o, "status")), &e->status), 0);
        e->baseline_w = ctl_record_get_num(json_object_get(o, "baseline_w"));
        e->target_w = ctl_record_get_num(json_object_get(o, "target_w"));
        e->ramp_s = ctl_record_get_num(json_object_get(o, "ramp_s"));
        e->ramp_down_s = ctl_record_get_num(json_object_get(o, "ramp_down_s"));
        e->reached_t = ctl_record_get_num(json_object_get(o, "reached_t"));
        /* recordings from before format 4: none (the event's start stands for it) */
        e->announced_t = ctl_record_get_num(json_object_get(o, "announced_t"));
        e->cancelled = (int)json_integer_value(json_object_get(o, "cancelled"));
    }
}

static void take_agents(json_t *agents)
{
    size_t n = json_array_size(agents);
    if (g_in.nagents != n) {
        ctl_inputs_free(&g_in);
        g_in.agent = calloc(n + 1, sizeof *g_in.agent);
        assert_non_null(g_in.agent);
        g_in.nagents = n;
    }
    size_t i;
    json_t *a;
    json_array_foreach(agents, i, a)
    {
        ctl_agent_view *v = &g_in.agent[i];
        v->up = (int)json_integer_value(json_object_get(a, "up"));
        v->lease_until = ctl_record_get_num(json_object_get(a, "lease_until"));
        v->name = "recorded";
        v->njobs = 0;
        json_t *node = json_object_get(a, "node");
        int bad;
        if (!json_is_null(node)) assert_int_equal(ctl_inputs_read(&g_cfg, v, node, &bad), 0);
        /* the lease generation's inputs (issue 43); a recording from before
           them: ours taken as the agent's generation_max (what a push it
           accepted left there), so nothing changes */
        json_t *gm = json_object_get(node, "generation_max");
        v->generation_max = json_is_integer(gm) ? (long long)json_integer_value(gm) : -1;
        json_t *g = json_object_get(a, "generation");
        v->generation = json_is_integer(g)       ? (long long)json_integer_value(g)
                        : v->generation_max >= 0 ? v->generation_max
                                                 : 1;
        json_t *fl = json_object_get(a, "generation_floor");
        v->generation_floor =
            json_is_integer(fl) ? (long long)json_integer_value(fl) : v->generation;
        v->gen_answer = (int)json_integer_value(json_object_get(a, "gen_answer"));
    }
}

/* the decision's generations against the recorded ones (when recorded) */
static void compare_generations(const char *name, size_t period, json_t *rec)
{
    json_t *want = json_object_get(rec, "generations");
    if (!want) return;
    json_t *got = ctl_record_generations(&g_dec);
    if (!json_equal(want, got)) {
        char *w = json_dumps(want, JSON_COMPACT), *h = json_dumps(got, JSON_COMPACT);
        fail_msg("%s period %zu: generations %s, recorded %s", name, period, h, w);
    }
    json_decref(got);
}

static const ctl_job *job_of(const char *id, int tier)
{
    for (size_t k = 0; k < g_st.njobs; k++)
        if (!strcmp(g_st.job[k].id, id) && g_st.job[k].tier == tier) return &g_st.job[k];
    return NULL;
}

/* the period's caps and plan against the recorded ones; the count of caps compared */
static size_t compare(const char *name, size_t period, json_t *rec)
{
    json_t *caps = json_object_get(rec, "caps"), *plan = json_object_get(rec, "plan"),
           *cuts = json_object_get(rec, "plan_cut_pct");
    if (json_array_size(caps) != g_st.njobs)
        fail_msg("%s period %zu: %zu jobs recorded, %zu decided", name, period,
                 json_array_size(caps), g_st.njobs);
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(caps, i, c)
    {
        const char *id = json_string_value(json_array_get(c, 0));
        int tier = (int)json_integer_value(json_array_get(c, 1));
        const ctl_job *j = job_of(id, tier);
        if (!j) fail_msg("%s period %zu: job %s (tier %d) not decided", name, period, id, tier);
        double cap = ctl_record_get_num(json_array_get(c, 2)),
               alloc = ctl_record_get_num(json_array_get(c, 3));
        if (!same(j->alloc_cap_w, cap) || !same(j->alloc_w, alloc))
            fail_msg("%s period %zu: job %s: cap %.17g W, allocation %.17g W; recorded %.17g W, "
                     "%.17g W",
                     name, period, id, j->alloc_cap_w, j->alloc_w, cap, alloc);
        n += cap > 0;
    }
    if (json_array_size(cuts) != g_st.nplan)
        fail_msg("%s period %zu: plan of %zu cuts, recorded %zu", name, period, g_st.nplan,
                 json_array_size(cuts));
    for (size_t p = 0; p < g_st.nplan; p++)
        assert_true(same(g_st.plan_cut_pct[p], ctl_record_get_num(json_array_get(cuts, p))));
    json_array_foreach(plan, i, c)
    {
        const ctl_job *j = job_of(json_string_value(json_array_get(c, 0)),
                                  (int)json_integer_value(json_array_get(c, 1)));
        assert_non_null(j);
        for (size_t p = 0; p < g_st.nplan; p++)
            if (!same(j->plan_cap_w[p], ctl_record_get_num(json_array_get(c, p + 2))))
                fail_msg("%s period %zu: job %s: plan cap %.17g W for %g%%, recorded %.17g W", name,
                         period, j->id, j->plan_cap_w[p], g_st.plan_cut_pct[p],
                         ctl_record_get_num(json_array_get(c, p + 2)));
    }
    assert_true(same(g_st.integral_w, ctl_record_get_num(json_object_get(rec, "integral_w"))));
    return n;
}

/* PFI_REPLAY_BLESS=1: the period's decision written over the recorded one
 * (ctl_record_decision's fields), for a deliberate change of the decision
 * (docs/controller.md, "Recording and replaying periods", says when) */
static void bless(json_t *rec)
{
    json_t *caps = json_array(), *plan = json_array(), *cuts = json_array();
    for (size_t k = 0; k < g_st.njobs; k++) {
        const ctl_job *j = &g_st.job[k];
        json_array_append_new(caps,
                              json_pack("[siOO]", j->id, j->tier, ctl_record_num(j->alloc_cap_w),
                                        ctl_record_num(j->alloc_w)));
        json_t *row = json_pack("[si]", j->id, j->tier);
        for (size_t p = 0; p < g_st.nplan; p++)
            json_array_append_new(row, ctl_record_num(j->plan_cap_w[p]));
        json_array_append_new(plan, row);
    }
    for (size_t p = 0; p < g_st.nplan; p++)
        json_array_append_new(cuts, ctl_record_num(g_st.plan_cut_pct[p]));
    json_object_set_new(rec, "caps", caps);
    json_object_set_new(rec, "plan_cut_pct", cuts);
    json_object_set_new(rec, "plan", plan);
    json_object_set_new(rec, "budget_w", ctl_record_num(g_st.budget_w));
    json_object_set_new(rec, "integral_w", ctl_record_num(g_st.integral_w));
    json_object_set_new(rec, "generations", ctl_record_generations(&g_dec));
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(rec, "agents"), i, a)
        ctl_record_generation_inputs(a, &g_in.agent[i]);
}

/* one recording; the periods replayed and the caps compared */
static void replay(const char *name, size_t *periods, size_t *caps)
{
    char path[1200], blessed[1300];
    snprintf(path, sizeof path, "%s/%s", GOLDEN, name);
    snprintf(blessed, sizeof blessed, "%s.blessed", path);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    FILE *out = getenv("PFI_REPLAY_BLESS") ? fopen(blessed, "w") : NULL;
    char *line = NULL;
    size_t cap = 0, period = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *rec = json_loads(line, 0, &je);
        if (!rec) fail_msg("%s line %zu: %s", name, period + 1, je.text);
        if (json_object_get(rec, "record")) {
            take_header(name, rec);
        } else {
            take_events(json_object_get(rec, "events"));
            take_agents(json_object_get(rec, "agents"));
            double t = ctl_record_get_num(json_object_get(rec, "t"));
            ctl_decide(&g_cfg, g_have_cm ? &g_cm : NULL, &g_st, &g_in, t, &g_dec);
            if (out) bless(rec);
            *caps += compare(name, period, rec);
            compare_generations(name, period, rec);
            period++;
        }
        if (out) {
            char *text = json_dumps(rec, JSON_COMPACT);
            assert_non_null(text);
            fprintf(out, "%s\n", text);
            free(text);
        }
        json_decref(rec);
    }
    free(line);
    fclose(f);
    if (out) {
        assert_int_equal(fclose(out), 0);
        assert_int_equal(rename(blessed, path), 0);
    }
    *periods += period;
    ctl_state_free(&g_st);
    ctl_config_free(&g_cfg);
    if (g_have_cm) pfi_modelfile_dispose(&g_cm);
}

static void test_golden_replay(void **st)
{
    (void)st;
    DIR *d = opendir(GOLDEN);
    assert_non_null(d);
    struct dirent *de;
    size_t files = 0, periods = 0, caps = 0;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 6, ".jsonl")) continue;
        size_t p0 = periods, c0 = caps;
        replay(de->d_name, &periods, &caps);
        printf("%s: %zu periods, %zu caps the same\n", de->d_name, periods - p0, caps - c0);
        files++;
    }
    closedir(d);
    ctl_inputs_free(&g_in);
    ctl_decision_free(&g_dec);
    printf("golden replay: %zu recordings, %zu periods, %zu caps the same\n", files, periods, caps);
    assert_true(files >= 3);
    assert_true(caps > 100); /* the recordings hold events, not idle periods only */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden_replay)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
