/* test_ctl_decide.c — the controller's decision (ctl_decide.c, ctl_plan.c)
 * as the pure function it is, in the style of tests/core/test_control.c:
 * plain inputs in, caps, event states, rows and notes out, no daemon, no
 * network, no clock. Each test is one rule of docs/controller.md ("The
 * control loop", "Faults", "Triggers"): overlapping events, ramps in and
 * out, tiers and infeasible floors under the hard budget, jobs arriving and
 * leaving mid-event, an agent lost and back, an event with nothing to shed,
 * a trigger within and beyond the plan; baselines (ctl_baseline.c): start-up
 * and dips left out, the steps of one event and back-to-back events sharing
 * the last steady uncapped baseline, the recovery after an event left out,
 * and where a job without a steady window gets its baseline; profiles at
 * job start (ctl_profile.c): the schedule under the tier and the cost
 * bound (a point ended where the cost reaches it), caps in whole watts, a cap the GPUs do not
 * take (an administrator's limit) ending it, never Flex 0 or an opted-out job, paused by an
 * event due or running and resumed after, remembered by key and not repeated, not used for a job
 * whose telemetry differs. */
#include "../testutil.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps_request.h"
#include "ctl.h"

#define NA 2 /* agents */
static ctl_cfg g_cfg;
static ctl_state g_st;
static ctl_inputs g_in;
static ctl_agent_view g_agent[NA];
static ctl_job_view g_view[NA][8];
static ctl_decision g_dec;

static void config(const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"agents\": [{\"name\": \"n1\", \"url\": \"http://127.0.0.1:1\", \"token_file\": "
             "\"/t\"}, {\"name\": \"n2\", \"url\": \"http://127.0.0.1:2\", \"token_file\": "
             "\"/t\"}], \"control_period_s\": 1, \"baseline_window_s\": 10, \"ramp_s\": 0, "
             "\"ramp_down_s\": 0%s}",
             extra);
    pfi_error e;
    if (ctl_config_parse(text, strlen(text), "test", &g_cfg, &e)) fail_msg("%s", e.msg);
}

static int setup(void **st)
{
    (void)st;
    memset(&g_st, 0, sizeof g_st);
    memset(g_agent, 0, sizeof g_agent);
    g_st.feasible = 1;
    g_st.plan_t = NAN;
    for (size_t i = 0; i < NA; i++) {
        g_agent[i].up = 1;
        g_agent[i].lease_until = NAN;
        g_agent[i].name = i ? "n2" : "n1";
        g_agent[i].job = g_view[i];
        g_agent[i].job_cap = 8;
    }
    g_in.agent = g_agent;
    g_in.nagents = NA;
    config(", \"strategy\": \"pfi-aware\", \"profile\": false");
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    ctl_state_free(&g_st);
    ctl_decision_free(&g_dec);
    ctl_config_free(&g_cfg);
    return 0;
}

/* job id on agent a: gpus GPUs (200..700 W, uncapped at 700 W) drawing power_w */
static void job(size_t a, const char *id, int tier, int gpus, double power_w, double tokens_per_s,
                double pfi)
{
    ctl_job_view *v = &g_view[a][g_agent[a].njobs++];
    memset(v, 0, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", id);
    v->tier = tier;
    v->gpus = gpus;
    v->cap_min_w = 200;
    v->hw_max_w = v->ceiling_w = v->cap_w = 700;
    v->power_w = power_w;
    v->tokens_per_s = tokens_per_s;
    v->pfi_pred = pfi;
    v->sm_clock_mhz = v->sm_active = NAN;
}

static ctl_event *event(const char *id, double start, double dur, double cut_pct)
{
    ctl_event *e = ctl_state_event_new(&g_st);
    assert_non_null(e);
    memset(e, 0, sizeof *e);
    snprintf(e->ev.id, sizeof e->ev.id, "%s", id);
    e->ev.start = start;
    e->ev.duration_s = dur;
    e->ev.kind = PFI_EV_REDUCTION;
    e->ev.reduction_pct = cut_pct;
    e->ev.ramp_s = e->ev.ramp_down_s = NAN;
    e->status = CTL_EV_SCHEDULED;
    e->baseline_w = e->target_w = e->reached_t = NAN;
    e->announced_t = NAN; /* announced at its start */
    e->ramp_s = g_cfg.ramp_s;
    e->ramp_down_s = g_cfg.ramp_down_s;
    return e;
}

static const pfi_modelfile *g_cm; /* the curve model decide() passes (NULL: none) */

static void decide(double now)
{
    assert_int_equal(ctl_decide(&g_cfg, g_cm, &g_st, &g_in, now, &g_dec), 0);
}

/* the agents show the caps of the last decision (a settled plant) */
static void apply_caps(double ratio)
{
    for (size_t a = 0; a < NA; a++)
        for (size_t q = 0; q < g_agent[a].njobs; q++) {
            ctl_job_view *v = &g_view[a][q];
            for (size_t k = 0; k < g_st.njobs; k++) {
                const ctl_job *j = &g_st.job[k];
                if (strcmp(j->id, v->id) || j->tier != v->tier || !(j->alloc_cap_w > 0)) continue;
                v->cap_w = j->alloc_cap_w;
                v->power_w = fmin(v->power_w, v->gpus * j->alloc_cap_w * ratio);
            }
        }
}

static const ctl_job *find(const char *id)
{
    for (size_t k = 0; k < g_st.njobs; k++)
        if (!strcmp(g_st.job[k].id, id)) return &g_st.job[k];
    return NULL;
}

static int noted(const char *what)
{
    for (size_t i = 0; i < g_dec.notes.n; i++)
        if (strstr(g_dec.notes.line[i], what)) return 1;
    return 0;
}

static double alloc_sum(void)
{
    double s = 0;
    for (size_t k = 0; k < g_st.njobs; k++)
        if (isfinite(g_st.job[k].alloc_w)) s += g_st.job[k].alloc_w;
    return s;
}

/* the jobs seen from t = 70: settled (baseline_settle_s 10) at 80, a steady
   window (baseline_window_s 10) by 100, when the event starts */
static void warm_up(void)
{
    for (int t = 70; t < 100; t++) decide(t);
}

/* jobs a (agent n1) and b (n2) of tier and PFIs given, 4 GPUs at 2400 W
 * each, and event id of cut_pct from t = 100 for dur_s, started at t = 100
 * after the baseline window */
static void two_jobs_event(int tier, double pfi_a, double pfi_b, const char *id, double dur_s,
                           double cut_pct)
{
    job(0, "a", tier, 4, 2400, 1000, pfi_a);
    job(1, "b", tier, 4, 2400, 1000, pfi_b);
    event(id, 100, dur_s, cut_pct);
    warm_up();
    decide(100);
}

static void test_event_starts_and_caps(void **st)
{
    (void)st;
    two_jobs_event(-1, 0.5, 1.5, "e1", 60, 20); /* no SLA tier: the weights alone decide */
    assert_true(g_dec.active);
    assert_int_equal(g_st.event[0].status, CTL_EV_ACTIVE);
    assert_true(fabs(g_st.event[0].baseline_w - 4800) < 1e-6);
    assert_true(fabs(g_st.event[0].target_w - 3840) < 1e-6);
    assert_true(noted("event e1 started: baseline 4800 W of 2 jobs, target 3840 W (20.0% cut)"));
    /* the start is to be stored, with the period's sample and both jobs' rows */
    assert_int_equal(g_dec.nevent_rows, 1);
    assert_int_equal(g_dec.event_rows[0].status, CTL_EV_ACTIVE);
    assert_true(g_dec.sample);
    assert_string_equal(g_dec.sample_event, "e1");
    assert_int_equal(g_dec.nrows, 2);
    /* caps for both; the job with the higher PFI loses more (pfi-aware) */
    const ctl_job *a = find("a"), *b = find("b");
    assert_true(a->alloc_cap_w >= 200 && a->alloc_cap_w < 700);
    assert_true(b->alloc_cap_w >= 200 && b->alloc_cap_w < 700);
    assert_true(b->alloc_w < a->alloc_w);
    assert_true(alloc_sum() <= 3840 + 1e-6);
}

static void test_overlapping_events(void **st)
{
    (void)st;
    job(0, "a", 2, 4, 2400, 1000, 1);
    job(1, "b", 2, 4, 2400, 1000, 1);
    event("mild", 100, 60, 10);
    event("deep", 100, 60, 30);
    ctl_event *urgent = event("urgent", 100, 60, 5);
    urgent->ev.has_priority = 1;
    urgent->ev.priority = 0; /* outranks both, though it cuts less */
    warm_up();
    decide(100);
    assert_string_equal(g_st.gov_id, "urgent");
    assert_true(fabs(g_st.budget_w - 4800 * 0.95) < 1e-6);
    /* without it, the most stringent of the rest governs */
    urgent->status = CTL_EV_CANCELLED;
    decide(101);
    assert_string_equal(g_st.gov_id, "deep");
    assert_true(fabs(g_st.budget_w - 4800 * 0.70) < 1e-6);
    assert_true(alloc_sum() <= 4800 * 0.70 + 1e-6);
}

static void test_ramps_in_and_out(void **st)
{
    (void)st;
    job(0, "a", 2, 8, 4800, 1000, 1);
    ctl_event *e = event("r", 100, 100, 50);
    e->ramp_s = 40;
    e->ramp_down_s = 20;
    warm_up();
    decide(100);
    assert_true(fabs(g_st.budget_w - 4800) < 1e-6); /* the ramp starts from no cut */
    decide(120);
    assert_true(fabs(g_st.budget_w - 3600) < 1e-6); /* halfway down */
    decide(150);
    assert_true(fabs(g_st.budget_w - 2400) < 1e-6);
    decide(210);
    assert_true(fabs(g_st.budget_w - 3600) < 1e-6); /* halfway back up */
    assert_true(g_dec.active);
    assert_int_equal(e->status, CTL_EV_ACTIVE);
    decide(220); /* ramped down: done, nothing capped, the GPUs handed back */
    assert_false(g_dec.active);
    assert_int_equal(e->status, CTL_EV_DONE);
    assert_true(noted("event r finished"));
    assert_int_equal(g_dec.nevent_rows, 1);
    assert_true(isnan(g_st.budget_w));
    assert_true(find("a")->alloc_cap_w == 0);
}

static void test_tiers_and_infeasible_floors(void **st)
{
    (void)st;
    job(0, "flex0", 0, 4, 2400, 1000, 1);
    job(1, "flex3", 3, 4, 2400, 1000, 1);
    event("deep", 100, 60, 60);
    warm_up();
    decide(100);
    const ctl_job *f0 = find("flex0"), *f3 = find("flex3");
    /* the budget is hard: the floors give way, Flex 3 first */
    assert_true(alloc_sum() <= 4800 * 0.4 + 1e-6);
    assert_true(f3->alloc_w < f0->alloc_w);
    assert_false(g_st.feasible);
    assert_true(noted("cannot be met within the jobs' SLA floors"));
    /* noted once, not every period */
    decide(101);
    assert_false(noted("cannot be met"));
}

static void test_jobs_arrive_and_leave(void **st)
{
    (void)st;
    two_jobs_event(2, 1, 1, "e", 600, 20);
    apply_caps(0.97);
    decide(101);
    /* b leaves; c arrives, uncapped, drawing 1200 W of a possible 2800 */
    g_agent[1].njobs = 0;
    job(1, "c", 2, 4, 1200, 500, 1);
    decide(102);
    assert_true(noted("job b is gone"));
    assert_null(find("b"));
    const ctl_job *c = find("c");
    assert_non_null(c);
    assert_true(c->late);
    assert_true(fabs(c->base_w - 1200) < 1e-6);
    /* it ramps up while still uncapped: its baseline follows the most it drew */
    g_view[1][0].power_w = 2000;
    g_view[1][0].cap_w = 700;
    decide(103);
    assert_true(fabs(find("c")->base_w - 2000) < 1e-6);
    assert_true(find("c")->alloc_cap_w > 0);
}

static void test_agent_lost_and_back(void **st)
{
    (void)st;
    two_jobs_event(2, 1, 1, "e", 600, 20);
    double cap_b = find("b")->alloc_cap_w;
    apply_caps(0.97);
    decide(101);
    double b_w = g_view[1][0].power_w;
    /* n2 stops answering; our lease on it holds until t = 130 */
    g_agent[1].up = 0;
    g_agent[1].lease_until = 130;
    decide(110);
    assert_false(find("b")->reachable);
    assert_true(fabs(g_st.fixed_w - b_w) < 1e-6); /* its last reading, while the lease holds */
    assert_true(find("a")->alloc_w <= g_st.budget_w - b_w + 1e-6);
    decide(131); /* the lease expired: its caps are gone, it is assumed uncapped */
    assert_true(fabs(g_st.fixed_w - 4 * 700 * 0.97) < 1e-6);
    assert_true(find("a")->alloc_cap_w < cap_b + 1e-9); /* a is cut further */
    /* back: steered again at once */
    g_agent[1].up = 1;
    decide(132);
    assert_true(find("b")->reachable);
    assert_true(fabs(g_st.fixed_w) < 1e-9);
    assert_true(find("b")->alloc_cap_w > 0);
}

static void test_nothing_to_shed(void **st)
{
    (void)st;
    event("empty", 100, 60, 20); /* an agent, but no job mapped */
    warm_up();
    decide(100);
    assert_true(g_dec.active);
    assert_true(fabs(g_st.event[0].baseline_w) < 1e-9);
    assert_true(noted("event empty started: baseline 0 W of 0 jobs"));
    assert_true(noted("warning: event empty: nothing to shed (no managed load"));
    assert_int_equal(g_st.event[0].baseline_src, CTL_BASE_NONE);
    assert_int_equal(g_st.njobs, 0);
    assert_int_equal(g_dec.nrows, 0);
    assert_true(g_dec.sample); /* the period is still recorded: the report shows it */
    assert_true(fabs(g_dec.measured_w) < 1e-9);
}

/* a job's view this period: power and throughput (NaN: none) */
static void set_view(size_t a, const char *id, double power_w, double tokens_per_s, double cap_w)
{
    for (size_t q = 0; q < g_agent[a].njobs; q++)
        if (!strcmp(g_view[a][q].id, id)) {
            g_view[a][q].power_w = power_w;
            g_view[a][q].tokens_per_s = tokens_per_s;
            g_view[a][q].cap_w = cap_w;
        }
}

/* start-up (loading: low power, no throughput) and an evaluation dip are
   not the baseline; the old mean of the window was 1,875 W */
static void test_baseline_startup_and_dips(void **st)
{
    (void)st;
    g_cfg.baseline_window_s = 30;
    job(0, "a", -1, 4, 300, NAN, 1);
    event("e", 100, 60, 20);
    for (int t = 70; t < 100; t++) {
        if (t == 85) set_view(0, "a", 2400, 1000, 700); /* training */
        if (t == 92) set_view(0, "a", 1500, 0, 700);    /* evaluation */
        if (t == 94) set_view(0, "a", 2400, 1000, 700);
        decide(t);
    }
    decide(100);
    assert_true(fabs(g_st.event[0].baseline_w - 2400) < 1e-6);
    assert_int_equal(g_st.event[0].baseline_src, CTL_BASE_STEADY); /* 80..99: 19 s of 30 */
    assert_true(fabs(find("a")->base_tokens - 1000) < 1e-6);
    assert_true(noted("event e started: baseline 2400 W of 1 jobs, target 1920 W"));
}

/* the steps of one event, and an event soon after, share the last steady
   uncapped baseline: the cut does not compound on the capped draw */
static void test_baseline_shared_by_steps(void **st)
{
    (void)st;
    job(0, "a", -1, 4, 2400, 1000, 1);
    job(1, "b", -1, 4, 2400, 1000, 1);
    event("s.0", 100, 30, 20);
    event("s.1", 130, 30, 20);
    event("later", 175, 30, 20); /* 15 s after s.1: still recovering */
    warm_up();
    for (int t = 100; t < 175; t++) {
        decide(t);
        if (g_dec.active) apply_caps(1.0);
        else { /* the caps handed back: the draw recovers over 20 s */
            double w = fmin(2400, 1920 + 24 * (t - 160));
            set_view(0, "a", w, 1000 * w / 2400, 700);
            set_view(1, "b", w, 1000 * w / 2400, 700);
        }
    }
    decide(175);
    for (size_t i = 0; i < 3; i++) {
        const ctl_event *e = &g_st.event[i];
        if (fabs(e->baseline_w - 4800) > 1e-6)
            fail_msg("%s: baseline %g W, not the steady 4800 W", e->ev.id, e->baseline_w);
        assert_int_equal(e->baseline_src, CTL_BASE_STEADY);
        assert_true(fabs(e->target_w - 3840) < 1e-6);
    }
}

/* no steady window before the announcement (20 s of a 60 s window): the
   steps of one event share the estimate (issue 41: the rule when nothing
   steady was measured before the event was known), flagged, never the
   capped draw */
static void test_baseline_no_window_shared_by_steps(void **st)
{
    (void)st;
    g_cfg.baseline_window_s = 60;
    job(0, "a", -1, 4, 2400, 1000, 1);
    event("s.0", 100, 30, 20);
    event("s.1", 130, 30, 30);
    for (int t = 70; t < 160; t++) {
        decide(t);
        if (g_dec.active) apply_caps(1.0);
    }
    for (size_t i = 0; i < 2; i++) {
        const ctl_event *e = &g_st.event[i];
        if (fabs(e->baseline_w - 4 * 700 * 0.97) > 1e-6)
            fail_msg("%s: baseline %g W, not the estimate 2716 W", e->ev.id, e->baseline_w);
        assert_int_equal(e->baseline_src, CTL_BASE_ESTIMATE);
    }
    assert_true(fabs(g_st.event[1].target_w - 4 * 700 * 0.97 * 0.7) < 1e-6);
}

/* a job seen seconds before the event: no uncapped window yet; its GPUs at
   0.97 of their ceiling, flagged as an estimate */
static void test_baseline_estimate(void **st)
{
    (void)st;
    job(0, "a", -1, 4, 600, NAN, 1);
    event("e", 100, 60, 20);
    for (int t = 95; t <= 100; t++) decide(t);
    assert_int_equal(g_st.event[0].baseline_src, CTL_BASE_ESTIMATE);
    assert_true(fabs(g_st.event[0].baseline_w - 4 * 700 * 0.97) < 1e-6);
    assert_true(noted("(steady 0, short window 0, estimate 1)"));
}

static void test_trigger_plan(void **st)
{
    (void)st;
    job(0, "a", 2, 4, 2400, 1000, 0.5);
    job(1, "b", 2, 4, 2400, 1000, 1.5);
    warm_up(); /* the plan: levels 10, 20, 30 % */
    assert_int_equal(g_st.nplan, 3);
    assert_true(fabs(g_st.plan_base_w - 4800) < 1e-6);
    const char *how;
    assert_int_equal(ctl_plan_trigger(&g_cfg, &g_st, 20, &how), 2);
    assert_string_equal(how, "plan");
    assert_true(find("a")->trig_cap_w == floor(find("a")->plan_cap_w[1]));
    assert_int_equal(ctl_plan_trigger(&g_cfg, &g_st, 15, &how), 2);
    assert_string_equal(how, "interpolated");
    double mid = (find("a")->plan_cap_w[0] + find("a")->plan_cap_w[1]) / 2;
    assert_true(fabs(find("a")->trig_cap_w - floor(mid)) <= 1);
    /* beyond the plan: equal weight, every job's power cut by the same share */
    assert_int_equal(ctl_plan_trigger(&g_cfg, &g_st, 50, &how), 2);
    assert_string_equal(how, "equal weight");
    double eq = floor(2400 * 0.5 / (4 * 0.97));
    assert_true(find("a")->trig_cap_w == eq && find("b")->trig_cap_w == eq);
    /* a deeper cut never yields a higher cap */
    assert_true(find("a")->plan_cap_w[2] <= find("a")->plan_cap_w[0]);
}

static void test_curve_strategy_falls_back(void **st)
{
    (void)st;
    ctl_config_free(&g_cfg);
    config(", \"strategy\": \"curve-aware\"");
    two_jobs_event(2, 0.5, 1.5, "e", 60, 20);
    /* no curve model: the period allocates as pfi-aware does */
    double a_w = find("a")->alloc_w, b_w = find("b")->alloc_w;
    ctl_state_free(&g_st);
    ctl_config_free(&g_cfg);
    setup(NULL);
    two_jobs_event(2, 0.5, 1.5, "e", 60, 20);
    assert_true(fabs(find("a")->alloc_w - a_w) < 1e-9);
    assert_true(fabs(find("b")->alloc_w - b_w) < 1e-9);
}

/* the controller learns by the strategy row's `learns` (ctl_learn.c), not by
   which strategy it is: closed-loop keeps the settled periods' points,
   safe-online runs rounds, pfi-aware does neither */
static int learned(const char *strategy, size_t *nobs)
{
    ctl_state_free(&g_st);
    ctl_config_free(&g_cfg);
    setup(NULL);
    char extra[128];
    snprintf(extra, sizeof extra, ", \"strategy\": \"%s\", \"profile\": false", strategy);
    ctl_config_free(&g_cfg);
    config(extra);
    two_jobs_event(-1, 0.5, 1.5, "e", 60, 20);
    for (int t = 101; t < 106; t++) {
        apply_caps(1.0);
        decide(t);
    }
    *nobs = find("a")->nobs + find("b")->nobs;
    return (int)ctl_online_rounds(&g_st);
}

static void test_learners_by_row(void **st)
{
    (void)st;
    size_t nobs;
    assert_int_equal(learned("pfi-aware", &nobs), 0);
    assert_int_equal(nobs, 0);
    assert_int_equal(learned("closed-loop", &nobs), 0);
    assert_true(nobs >= 2); /* both jobs, settled at their caps */
    assert_true(learned("safe-online", &nobs) > 0);
    assert_int_equal(nobs, 0);
}

/* the profile tests' plant: each job's GPUs draw min(2400 W, its cap x
   GPUs) and train at 1000 x sqrt(power / 2400) tokens/s */
static void plant(void)
{
    for (size_t a = 0; a < NA; a++)
        for (size_t q = 0; q < g_agent[a].njobs; q++) {
            ctl_job_view *v = &g_view[a][q];
            const ctl_job *j = find(v->id);
            v->cap_w = j && j->alloc_cap_w > 0 ? j->alloc_cap_w : 700;
            v->power_w = fmin(2400, v->gpus * v->cap_w);
            v->tokens_per_s = 1000 * sqrt(v->power_w / 2400);
        }
}

/* the schedule's tests run without the deep points (test_profile_deep) */
static void profile_config(const char *extra)
{
    ctl_config_free(&g_cfg);
    char text[256];
    snprintf(text, sizeof text,
             ", \"strategy\": \"safe-online\", \"profile_samples\": 3, \"profile_settle_periods\": "
             "1%s%s",
             strstr(extra, "profile_deep_points") ? "" : ", \"profile_deep_points\": 0", extra);
    config(text);
}

/* run from t0 to t1 (exclusive), the plant following the caps; 1 if some
   period had a profile's caps out */
static int run_until(int t0, int t1)
{
    int profiling = 0;
    for (int t = t0; t < t1; t++) {
        decide(t);
        profiling |= g_dec.profiling;
        plant();
    }
    return profiling;
}

/* decide from t = 70, the plant following (step), until job id's profile
   runs (by t = 100); the next period's time */
static int until_profiling(const char *id, void (*step)(void))
{
    int t = 70;
    while (find(id) == NULL || find(id)->prof.state != CTL_PROF_RUN) {
        decide(t++);
        step();
        assert_true(t < 100);
    }
    return t;
}

static void test_profile_rule(void **st)
{
    (void)st;
    profile_config(", \"profile_opt_out\": [\"o\"]");
    job(0, "a", 3, 4, 2400, 1000, 1);
    job(0, "f", 2, 4, 2400, 1000, 1); /* its tier stops the schedule */
    job(1, "z", 0, 4, 2400, 1000, 1); /* Flex 0 */
    job(1, "o", 3, 4, 2400, 1000, 1); /* opted out */
    int capped_a = 0;
    size_t rows = 0, rows_a = 0;
    for (int t = 70; t < 200; t++) {
        decide(t);
        capped_a |= find("a")->alloc_cap_w > 0 && g_dec.profiling;
        for (size_t i = 0; i < g_dec.nmem_rows; i++, rows++)
            rows_a += !strcmp(g_dec.mem_rows[i].id, "a");
        assert_true(find("z")->alloc_cap_w == 0 && find("o")->alloc_cap_w == 0);
        plant();
    }
    assert_true(capped_a);
    const ctl_job *a = find("a"), *f = find("f");
    assert_int_equal(a->prof.state, CTL_PROF_DONE);
    assert_string_equal(a->prof.why, "done");
    assert_int_equal(a->prof.npt, 4); /* 4 points to 0.5 x P_max, above the tier's 0.5 + 0.04 */
    for (size_t i = 0; i < a->prof.npt; i++) {
        const pfi_online_point *x = &a->prof.pt[i];
        assert_true(x->power_w < 2400 - 1 && x->power_w >= 1200 - 1);
        assert_true(fabs(x->tokens_per_s - 1000 * sqrt(x->power_w / 2400)) < 1e-6);
        if (i) assert_true(x->power_w < a->prof.pt[i - 1].power_w);
    }
    /* the throughput given up: 4 points x 4 periods below 1000 tokens/s */
    assert_true(a->prof.cost_ratio > 0 && a->prof.cost_ratio <= 0.01);
    assert_int_equal(f->prof.state, CTL_PROF_DONE);
    assert_string_equal(f->prof.why, "tier floor");
    for (size_t i = 0; i < f->prof.npt; i++) /* never below its tier (0.75 x T_max) */
        assert_true(f->prof.pt[i].tokens_per_s >= 750);
    assert_true(f->prof.npt >= 1 && f->prof.npt < 4);
    assert_int_equal(find("z")->prof.state, CTL_PROF_OFF);
    assert_string_equal(find("z")->prof.why, "Flex 0");
    assert_int_equal(find("o")->prof.state, CTL_PROF_OFF);
    assert_string_equal(find("o")->prof.why, "opted out");
    /* back at the ceiling, remembered once each, known to the next event */
    assert_true(a->alloc_cap_w == 0 && !g_dec.profiling);
    assert_int_equal(rows, 2);
    assert_int_equal(rows_a, 1);
    assert_int_equal(a->nknown, 4);
    assert_int_equal(g_st.nmem, 2);
}

/* deep cuts (issue 44): after the schedule's 4 points to 0.5 x P_max, a
   Flex 3 job (floor 0.5 + 0.04 of T_max on a sqrt curve: 0.29 x P_max)
   steps on towards its lowest reachable power (4 GPUs x 200 W x 0.97) in 4
   equal steps and stops at its tier: 3 deep points measured, none below
   the tier, within the cost bound; a Flex 2 job stops at its tier before
   the schedule ends, as without them */
static void test_profile_deep(void **st)
{
    (void)st;
    profile_config(", \"profile_deep_points\": 4");
    job(0, "a", 3, 4, 2400, 1000, 1);
    job(0, "f", 2, 4, 2400, 1000, 1);
    run_until(70, 260);
    const ctl_job *a = find("a"), *f = find("f");
    assert_int_equal(a->prof.state, CTL_PROF_DONE);
    assert_string_equal(a->prof.why, "tier floor");
    assert_int_equal(a->prof.npt, 7);
    size_t below_half = 0;
    for (size_t i = 0; i < a->prof.npt; i++) {
        const pfi_online_point *x = &a->prof.pt[i];
        below_half += x->power_w < 1200 - 1;
        assert_true(x->tokens_per_s >= 540);
        if (i) assert_true(x->power_w < a->prof.pt[i - 1].power_w);
    }
    assert_int_equal(below_half, 3);
    assert_true(a->prof.cost_ratio > 0 && a->prof.cost_ratio <= 0.01);
    assert_int_equal(a->nknown, 7);
    assert_string_equal(f->prof.why, "tier floor");
    assert_true(f->prof.npt >= 1 && f->prof.npt < 4);
}

/* the cost bound as it goes: a tiny budget ends the profile at "cost",
   within one period's loss of it, the caps back at the ceiling */
static void test_profile_cost_bound(void **st)
{
    (void)st;
    profile_config(", \"profile_cost_frac\": 0.0003");
    job(0, "a", 3, 4, 2400, 1000, 1);
    run_until(70, 200);
    const ctl_job *a = find("a");
    assert_int_equal(a->prof.state, CTL_PROF_DONE);
    assert_string_equal(a->prof.why, "cost");
    assert_true(a->prof.npt >= 1 && a->prof.npt < 4);
    /* one period at the schedule's lowest point loses at most 1 - sqrt(0.5) of T_max */
    assert_true(a->prof.cost_ratio <= 0.0003 + (1 - sqrt(0.5)) / 3600);
    assert_true(a->alloc_cap_w == 0 && !g_dec.profiling);
}

static void test_profile_paused_by_events(void **st)
{
    (void)st;
    profile_config("");
    job(0, "a", 3, 4, 2400, 1000, 1);
    int t = until_profiling("a", plant);
    /* an event due in 5 s: the profile gives way at once */
    event("e", t + 5, 20, 20);
    decide(t);
    assert_true(noted("job a: profile paused (an event is due)"));
    assert_false(g_dec.profiling);
    assert_true(find("a")->alloc_cap_w == 0);
    plant();
    run_until(t + 1, t + 5);
    run_until(t + 5, t + 25); /* the event: its caps, not the profile's */
    assert_int_equal(find("a")->prof.state, CTL_PROF_RUN);
    assert_true(find("a")->prof.paused);
    /* after it, the profile resumes where it was and finishes */
    assert_true(run_until(t + 25, t + 120));
    assert_int_equal(find("a")->prof.state, CTL_PROF_DONE);
    assert_int_equal(find("a")->prof.npt, 4);
    assert_true(find("a")->nknown >= 4);
}

/* the telemetry a claim is checked against, as an agent's view carries
   it: a clock in (0, 1e4) MHz and an activity in (0, 1], else unknown
   (an agent's word is not trusted further) */
static void test_claims_telemetry_bounds(void **st)
{
    (void)st;
    static const char *const views[] = {
        "{\"gpus\": [[200, 700, 700, 700]], \"jobs\": [{\"job_id\": \"a\", \"gpus\": [0], "
        "\"power_w\": 500, \"sm_clock_mhz\": 1755, \"sm_active\": 0.5}]}",
        "{\"gpus\": [[200, 700, 700, 700]], \"jobs\": [{\"job_id\": \"a\", \"gpus\": [0], "
        "\"power_w\": 500, \"sm_clock_mhz\": 1e300, \"sm_active\": 5}]}",
        "{\"gpus\": [[200, 700, 700, 700]], \"jobs\": [{\"job_id\": \"a\", \"gpus\": [0], "
        "\"power_w\": 500, \"sm_clock_mhz\": -3, \"sm_active\": \"x\"}]}",
        "{\"gpus\": [[200, 700, 700, 700]], \"jobs\": [{\"job_id\": \"a\", \"gpus\": [0], "
        "\"power_w\": 500}]}"};
    for (size_t i = 0; i < 4; i++) {
        json_t *v = json_loads(views[i], 0, NULL);
        assert_non_null(v);
        ctl_agent_view a;
        memset(&a, 0, sizeof a);
        int bad;
        assert_int_equal(ctl_inputs_read(&g_cfg, &a, v, &bad), 0);
        assert_int_equal(a.njobs, 1);
        if (i == 0) {
            assert_true(fabs(a.job[0].sm_clock_mhz - 1755) < 1e-9);
            assert_true(fabs(a.job[0].sm_active - 0.5) < 1e-9);
        } else {
            assert_true(isnan(a.job[0].sm_clock_mhz));
            assert_true(isnan(a.job[0].sm_active));
        }
        free(a.job), free(a.nc);
        json_decref(v);
    }
}

/* a fresh state holding m, the job a in view again */
static void state_with(const ctl_mem *m)
{
    ctl_state_free(&g_st);
    memset(&g_st, 0, sizeof g_st);
    g_st.feasible = 1;
    g_st.plan_t = NAN;
    assert_int_equal(ctl_mem_put(&g_st, m), 0);
}

static void test_profile_remembered(void **st)
{
    (void)st;
    profile_config("");
    job(0, "a", 3, 4, 2400, 1000, 1);
    g_view[0][0].feat_sm = 0.8;
    run_until(70, 200);
    assert_int_equal(g_st.nmem, 1);
    ctl_mem m = g_st.mem[0];
    assert_int_equal(m.npt, 4);
    assert_true(m.profiled);
    assert_true(fabs(m.feat[3] - 0.8) < 1e-12);
    /* the job again (a restart, a new controller): not profiled again */
    state_with(&m);
    int capped = 0;
    for (int t = 300; t < 400; t++) {
        decide(t);
        capped |= g_dec.profiling;
        plant();
    }
    assert_false(capped);
    assert_int_equal(find("a")->prof.state, CTL_PROF_DONE);
    assert_string_equal(find("a")->prof.why, "remembered");
    assert_int_equal(find("a")->nknown, 4);
    /* a job whose telemetry differs by more than 15%: another job */
    state_with(&m);
    g_view[0][0].feat_sm = 0.5;
    int warned = 0;
    capped = 0;
    for (int t = 300; t < 400; t++) {
        decide(t);
        warned |= noted("differs by more than 15%");
        capped |= g_dec.profiling;
        plant();
    }
    assert_true(warned && capped);
    assert_int_equal(find("a")->prof.npt, 4);
    assert_true(fabs(g_st.mem[0].feat[3] - 0.5) < 1e-12); /* its own replaced them */
}

/* issue 41 (D): remembered points end with their job (the key holds no
   submit time: a later job under the id cannot be told apart), are not
   used older than 30 days, nor where no telemetry can tell jobs apart */
static void test_memory_ends(void **st)
{
    (void)st;
    profile_config("");
    job(0, "a", 3, 4, 2400, 1000, 1);
    g_view[0][0].feat_sm = 0.8;
    run_until(70, 200);
    assert_int_equal(g_st.nmem, 1);
    ctl_mem m = g_st.mem[0];
    /* the job ends: its row is forgotten, in the table and in SQLite */
    g_agent[0].njobs = 0;
    decide(200);
    assert_true(noted("job a is gone"));
    assert_int_equal(g_st.nmem, 0);
    assert_int_equal(g_dec.nmem_rows, 1);
    assert_true(g_dec.mem_rows[0].forget);
    assert_string_equal(g_dec.mem_rows[0].id, "a");
    /* remembered 31 days ago: profiled again */
    g_agent[0].njobs = 1;
    m.t = 400 - 31 * 86400.0;
    state_with(&m);
    int capped = 0, old = 0;
    for (int t = 300; t < 400; t++) {
        decide(t);
        capped |= g_dec.profiling;
        old |= noted("its remembered points are 31 days old: not used");
        plant();
    }
    assert_true(capped && old);
    /* no telemetry on the job: the key cannot tell jobs apart */
    m.t = 250;
    state_with(&m);
    g_view[0][0].feat_sm = 0;
    int again = 0;
    capped = 0;
    for (int t = 300; t < 400; t++) {
        decide(t);
        capped |= g_dec.profiling;
        again |= noted("no telemetry to tell the jobs apart: profiled again");
        plant();
    }
    assert_true(capped && again);
}

/* a plant that keeps whole watts, as an agent or driver may (the
   benchmark's farm prints caps with %.0f; NVML takes milliwatts, but a
   driver may clamp), with an administrator's lower limit (0: none) that
   the GPUs keep whatever is asked: 2-GPU jobs drawing min(1400 W, cap x
   GPUs), 1000 x sqrt(power / 1400) tokens/s */
static void plant_whole(double admin_min_w)
{
    for (size_t a = 0; a < NA; a++)
        for (size_t q = 0; q < g_agent[a].njobs; q++) {
            ctl_job_view *v = &g_view[a][q];
            const ctl_job *j = find(v->id);
            v->cap_w = fmax(round(j && j->alloc_cap_w > 0 ? j->alloc_cap_w : 700), admin_min_w);
            v->power_w = fmin(1400, v->gpus * v->cap_w);
            v->tokens_per_s = 1000 * sqrt(v->power_w / 1400);
        }
}

/* ... under an administrator's lower limit of 650 W */
static void plant_admin(void)
{
    plant_whole(650);
}

/* a point's cap is a whole watt: 2 GPUs at 1400 W step by 175 W, so the
   schedule's caps are 612.5 and 437.5 W; before, such a cap read back as
   613 W was never "at the cap" and the profile spent its budget unmeasured */
static void test_profile_whole_watts(void **st)
{
    (void)st;
    profile_config("");
    job(0, "a", 3, 2, 1400, 1000, 1);
    for (int t = 70; t < 200; t++) {
        decide(t);
        const ctl_job *a = find("a");
        if (a && a->prof.state == CTL_PROF_RUN && a->prof.cap_w > 0)
            assert_true(a->prof.cap_w == floor(a->prof.cap_w));
        plant_whole(0);
    }
    const ctl_job *a = find("a");
    assert_int_equal(a->prof.state, CTL_PROF_DONE);
    assert_string_equal(a->prof.why, "done");
    assert_int_equal(a->prof.npt, 4);
    assert_true(a->prof.cost_ratio > 0 && a->prof.cost_ratio <= 0.01);
}

/* GPUs that keep an administrator's limit above the point's cap never show
   it: the profile stops ("cap not taken") after 5 periods off the cap
   rather than spend its budget, and the caps go back to the ceiling */
static void test_profile_cap_not_taken(void **st)
{
    (void)st;
    profile_config("");
    job(0, "a", 3, 2, 1400, 1000, 1);
    int t = until_profiling("a", plant_admin), t_run = t;
    while (find("a")->prof.state == CTL_PROF_RUN) {
        decide(t++);
        plant_admin();
        assert_true(t < t_run + 10);
    }
    const ctl_job *a = find("a");
    assert_string_equal(a->prof.why, "cap not taken");
    assert_int_equal(a->prof.npt, 0);
    assert_true(noted("(stopped: cap not taken)"));
    /* 7 periods at 1300 W (the admin's 650 W x 2) at most */
    assert_true(a->prof.cost_ratio <= 7 * (1 - sqrt(1300.0 / 1400)) * 1000 / (1000 * 3600) + 1e-12);
    assert_true(a->alloc_cap_w == 0 && !g_dec.profiling);
}

/* issue 41 (D): a job that raises its draw once an event is announced (on
   the open GET /v1/events) gains nothing: the event's baseline is the
   lowest of its last 3 steady windows that ended by the announcement
   (before, the last steady window: the raised draw) */
static void test_baseline_before_announcement(void **st)
{
    (void)st;
    job(0, "a", -1, 4, 2400, 1000, 1);
    ctl_event *e = event("e", 200, 60, 20);
    e->announced_t = 120;
    for (int t = 70; t < 200; t++) {
        if (t == 120) set_view(0, "a", 2800, 1000, 700); /* +400 W: waste, same throughput */
        decide(t);
    }
    decide(200);
    const ctl_job *j = find("a");
    if (fabs(g_st.event[0].baseline_w - 2400) > 1e-6)
        fail_msg("baseline %g W, not the 2400 W drawn before the announcement",
                 g_st.event[0].baseline_w);
    assert_int_equal(j->base_how.nwin, 3);
    for (size_t i = 0; i < j->base_how.nwin; i++) assert_true(j->base_how.win_end[i] <= 120);
    assert_true(fabs(j->base_how.announced_t - 120) < 1e-9);
    /* the report's row of how it was chosen */
    assert_int_equal(g_dec.nbase_rows, 1);
    assert_string_equal(g_dec.base_rows[0].job_id, "a");
}

/* a job that burns 400 W uncapped beyond what its throughput needs: its
   measured points show it at its plateau at 2400 W, so its baseline is
   2400 W, not its 2800 W draw; its honest twin, whose points fall below
   the plateau as soon as it is capped, keeps its own draw */
static void test_baseline_knee(void **st)
{
    (void)st;
    job(0, "a", -1, 4, 2800, 1000, 1);
    job(1, "b", -1, 4, 2400, 1000, 1);
    event("e", 100, 60, 20);
    decide(70);
    pfi_online_point ka[] = {{2400, 5, 999, 5}, {2100, 5, 948, 5}, {1800, 5, 891, 5}};
    pfi_online_point kb[] = {{2100, 5, 948, 5}, {1800, 5, 891, 5}, {1500, 5, 829, 5}};
    ctl_known_set((ctl_job *)find("a"), ka, 3);
    ctl_known_set((ctl_job *)find("b"), kb, 3);
    for (int t = 71; t <= 100; t++) decide(t);
    const ctl_job *a = find("a"), *b = find("b");
    assert_true(a->base_how.knee_capped);
    if (fabs(a->base_w - 2400) > 1e-6)
        fail_msg("a's baseline %g W, not its knee 2400 W", a->base_w);
    assert_true(fabs(a->base_how.plateau_w - 2800) < 1e-6);
    assert_false(b->base_how.knee_capped);
    assert_true(fabs(b->base_w - 2400) < 1e-6);
    assert_true(fabs(g_st.event[0].baseline_w - 4800) < 1e-6); /* the waste is not shed */
}

/* the plant of the claims test: caps followed; power min(2400, 4 x cap);
   the SM clock 1980 MHz x (power / 2400)^0.4; a claims (p/2400)^3 x 1000
   tokens/s, b truly (p/2400)^0.4 x 1000 */
static void claims_plant(void)
{
    for (size_t a = 0; a < NA; a++)
        for (size_t q = 0; q < g_agent[a].njobs; q++) {
            ctl_job_view *v = &g_view[a][q];
            const ctl_job *j = find(v->id);
            v->cap_w = j && j->alloc_cap_w > 0 ? j->alloc_cap_w : 700;
            v->power_w = fmin(2400, v->gpus * v->cap_w);
            double r = v->power_w / 2400;
            v->sm_clock_mhz = 1980 * pow(r, 0.4);
            v->tokens_per_s = 1000 * pow(r, strcmp(v->id, "a") ? 0.4 : 3);
        }
}

/* issue 41 (D): a job whose step log claims a steeper curve than its SM
   clock allows is not believed after 3 settled capped periods: its claims
   are set aside (noted), and it is allocated as a job that reports no
   throughput; its honest twin's claims stand */
static void test_claims_not_corroborated(void **st)
{
    (void)st;
    ctl_config_free(&g_cfg);
    config(", \"strategy\": \"safe-online\", \"profile\": false");
    job(0, "a", -1, 4, 2400, 1000, 1);
    job(1, "b", -1, 4, 2400, 1000, 1);
    event("e", 100, 100, 20);
    int warned = 0;
    for (int t = 70; t < 130; t++) {
        decide(t);
        warned |= noted("warning: job a: its step log claims");
        claims_plant();
    }
    const ctl_job *a = find("a"), *b = find("b");
    assert_true(a->untrusted);
    assert_false(b->untrusted);
    assert_true(warned);
    assert_false(noted("warning: job b"));
    assert_true(isnan(a->tokens_per_s)); /* set aside */
    assert_true(b->tokens_per_s > 0);
    /* the clamp: throughput never falls faster than power */
    assert_true(fabs(ctl_claim_clamp(100, 1200, 1000, 2400) - 500) < 1e-9);
    assert_true(fabs(ctl_claim_clamp(900, 1200, 1000, 2400) - 900) < 1e-9);
    assert_true(fabs(ctl_claim_clamp(100, 3000, 1000, 2400) - 1000) < 1e-9);
}

/* safe-online's first floor for job a (its reference's, before any round) */
static double first_floor(const pfi_modelfile *cm)
{
    ctl_config_free(&g_cfg);
    config(", \"strategy\": \"safe-online\", \"profile\": false");
    g_cm = cm;
    job(0, "a", 3, 4, 2400, 1000, 1);
    job(1, "b", 3, 4, 2400, 1000, 1);
    event("e", 100, 60, 30);
    for (int t = 70; t <= 101; t++) decide(t);
    g_cm = NULL;
    json_t *o = ctl_online_json(&g_st);
    double f = json_number_value(
        json_object_get(json_array_get(json_object_get(o, "jobs"), 0), "floor_w"));
    json_decref(o);
    return f;
}

/* issue 44: the prior sets a job's first floor. With nothing measured, a
   Flex 3 job (floor 0.5 T_max) starts from the Lipschitz bound,
   2400 (1 - 0.5 / 1.25) = 1440 W; with a curve model whose curve (its
   coefficients 0: the same for any features) keeps 0.8 - 2 x 0.02 of
   T_max at half its power, from the prior's lowest point, 1200 W. A model
   without the prior's standard errors changes nothing. */
static void test_prior_first_floor(void **st)
{
    (void)st;
    double lip = first_floor(NULL);
    assert_true(fabs(lip - 2400 * (1 - 0.5 / 1.25)) < 1);
    teardown(NULL), setup(NULL);
    static char *feat[] = {"dram_copy_product"};
    static double fmin_[1] = {0}, fmax_[1] = {1}, beta[3][2];
    pfi_modelfile cm = {.kind = PFI_MODELFILE_CURVE, .p = 1, .features = feat};
    pfi_curve_model *m = &cm.curve;
    m->ngrid = 3, m->p = 1, m->fmin = fmin_, m->fmax = fmax_;
    static const double frac[3] = {0.5, 0.75, 1}, t[3] = {0.8, 0.92, 1}, sd[3] = {0.02, 0.01, 0};
    for (int k = 0; k < 3; k++) {
        m->frac[k] = frac[k];
        m->t[k] = (pfi_linear){1, t[k], beta[k], 1};
        m->pw[k] = (pfi_linear){1, frac[k], beta[k] + 1, 1};
        m->t_se[k] = m->pop_t_sd[k] = sd[k];
        m->p_se[k] = m->pop_p_sd[k] = 0;
        m->pop_t[k] = t[k], m->pop_p[k] = frac[k];
    }
    double pr = first_floor(&cm);
    if (fabs(pr - 1200) > 1) fail_msg("the first floor with the prior: %g W, not 1200 W", pr);
    teardown(NULL), setup(NULL);
    for (int k = 0; k < 3; k++) m->t_se[k] = m->pop_t_sd[k] = NAN; /* an older model file */
    double old = first_floor(&cm);
    if (fabs(old - lip) > 1e-9) fail_msg("an older model file: %g W, not %g W", old, lip);
}

/* The lease-generation rule (ctl_generation.c, issue 43): a takeover, a
   409 (stale), a 400 out of reach, a restart, a second controller, may_raise
   off, the 2^53 bound, never below the run's floor */
static void test_generation_rule(void **st)
{
    (void)st;
    int why;
    /* an agent whose generation_max is above ours (someone took it): one above */
    assert_int_equal(ctl_generation_next(5, 5, 9, CTL_GEN_ANSWER_NONE, 1, &why), 10);
    assert_int_equal(why, CTL_GEN_WHY_ABOVE);
    /* ours is current, the agent busy or silent: nothing changes */
    assert_int_equal(ctl_generation_next(5, 5, 5, CTL_GEN_ANSWER_NONE, 1, &why), 5);
    assert_int_equal(why, CTL_GEN_WHY_NONE);
    assert_int_equal(ctl_generation_next(5, 5, -1, CTL_GEN_ANSWER_NONE, 1, &why), 5);
    /* a 409: one above the larger of the agent's and ours */
    assert_int_equal(ctl_generation_next(5, 5, 5, CTL_GEN_ANSWER_STALE, 1, &why), 6);
    assert_int_equal(why, CTL_GEN_WHY_STALE);
    assert_int_equal(ctl_generation_next(5, 5, 7, CTL_GEN_ANSWER_STALE, 1, &why), 8);
    /* a 400 (ours too far ahead: the agent's state reset): one above its max */
    assert_int_equal(ctl_generation_next(1, 1100000, 5, CTL_GEN_ANSWER_OUT_OF_REACH, 1, &why), 6);
    assert_int_equal(why, CTL_GEN_WHY_OUT_OF_REACH);
    assert_int_equal(ctl_generation_next(1, 900, -1, CTL_GEN_ANSWER_OUT_OF_REACH, 1, &why), 900);
    /* ... whatever the run's floor: the agent forgot every generation */
    assert_int_equal(ctl_generation_next(1100000, 1100000, 0, CTL_GEN_ANSWER_OUT_OF_REACH, 1, &why),
                     1);
    /* a restart: one above the last run's (the floor), the agent still at the last run's */
    assert_int_equal(ctl_generation_next(11, 11, 10, CTL_GEN_ANSWER_NONE, 1, &why), 11);
    assert_int_equal(why, CTL_GEN_WHY_NONE);
    /* never below the floor, whatever was stored */
    assert_int_equal(ctl_generation_next(5, 3, -1, CTL_GEN_ANSWER_NONE, 1, &why), 5);
    /* a second controller pushed 20: a single controller continues above it;
       with may_raise off (a deposed controller under failover) it never does */
    assert_int_equal(ctl_generation_next(11, 11, 20, CTL_GEN_ANSWER_NONE, 1, &why), 21);
    assert_int_equal(ctl_generation_next(11, 11, 20, CTL_GEN_ANSWER_NONE, 0, &why), 11);
    assert_int_equal(why, CTL_GEN_WHY_ABOVE);
    assert_int_equal(ctl_generation_next(11, 11, 20, CTL_GEN_ANSWER_STALE, 0, &why), 11);
    /* beyond what any agent accepts: an alarm, ours kept */
    assert_int_equal(
        ctl_generation_next(1, 7, PFI_CAPS_GENERATION_MAX, CTL_GEN_ANSWER_NONE, 1, &why), 7);
    assert_int_equal(why, CTL_GEN_WHY_BEYOND);
}

/* the decision carries the generations to store: one row per agent whose
   generation changes, with the old and the new; nothing of the inputs changed */
static void test_generation_decided(void **st)
{
    (void)st;
    job(0, "a", 3, 4, 2400, 1000, 1);
    for (size_t i = 0; i < NA; i++) g_agent[i].generation = g_agent[i].generation_floor = 4;
    g_agent[0].generation_max = 4, g_agent[0].gen_answer = CTL_GEN_ANSWER_STALE;
    g_agent[1].generation_max = 9;
    decide(10);
    assert_int_equal(g_dec.ngen_rows, 2);
    assert_int_equal(g_dec.gen_rows[0].agent, 0);
    assert_int_equal(g_dec.gen_rows[0].from, 4);
    assert_int_equal(g_dec.gen_rows[0].to, 5);
    assert_int_equal(g_dec.gen_rows[0].why, CTL_GEN_WHY_STALE);
    assert_int_equal(g_dec.gen_rows[1].agent, 1);
    assert_int_equal(g_dec.gen_rows[1].to, 10);
    assert_int_equal(g_dec.gen_rows[1].why, CTL_GEN_WHY_ABOVE);
    assert_int_equal(g_agent[0].generation, 4); /* stored by the period, not here */
    /* once stored and answered, nothing more */
    g_agent[0].generation = 5, g_agent[0].generation_max = 5, g_agent[0].gen_answer = 0;
    g_agent[1].generation = 10, g_agent[1].generation_max = 10;
    decide(11);
    assert_int_equal(g_dec.ngen_rows, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_event_starts_and_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ramps_in_and_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tiers_and_infeasible_floors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs_arrive_and_leave, setup, teardown),
        cmocka_unit_test_setup_teardown(test_agent_lost_and_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_to_shed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trigger_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_startup_and_dips, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_shared_by_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_no_window_shared_by_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_estimate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_before_announcement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_knee, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims_not_corroborated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims_telemetry_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_curve_strategy_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_learners_by_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_deep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prior_first_floor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_cost_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_paused_by_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_remembered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_whole_watts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_cap_not_taken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generation_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generation_decided, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
