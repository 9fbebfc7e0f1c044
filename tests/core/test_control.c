/* test_control.c — the online control law against a simulated plant:
 * budgets with ramps; jobs drawing r x cap x GPUs while power-bound;
 * convergence to the target within two periods after the ramp; an
 * evaluation dip (a job drawing 40% for a while) that must not cause an
 * overshoot when training resumes (anti-windup); ratio learning only from
 * power-bound samples; infeasible targets; SLA floors. And the grid-event
 * parsers: canonical events, OpenADR 3 notifications, RFC 3339 and ISO 8601
 * durations, every error naming its field. */
#include "../testutil.h"

#include "grid_event.h"
#include "openadr.h"
#include "power_control.h"

/* the controller's OpenADR model (openadr.h): the first step, or the id of a DELETE */
static pfi_oadr_event adr_ev;
static pfi_status adr_parse(const char *j, double offset_kw, pfi_grid_event *ev, int *del,
                            pfi_error *e)
{
    pfi_oadr_opts o = {.now = 1.7e9, .non_gpu_offset_kw = offset_kw};
    pfi_status st = pfi_oadr_parse(j, strlen(j), &o, &adr_ev, e);
    if (st) return st;
    *del = adr_ev.op == PFI_OADR_OP_DELETE;
    memset(ev, 0, sizeof *ev);
    if (*del || adr_ev.nsteps == 0) snprintf(ev->id, sizeof ev->id, "%s", adr_ev.id);
    else *ev = adr_ev.step[0];
    return PFI_OK;
}

static void budget_ramps(void **s)
{
    (void)s;
    assert_near(pfi_pc_budget(100, 70, 5, 10, 50, 10, 20), 100, 1e-12); /* before */
    assert_near(pfi_pc_budget(100, 70, 15, 10, 50, 10, 20), 85, 1e-12); /* half the ramp */
    assert_near(pfi_pc_budget(100, 70, 30, 10, 50, 10, 20), 70, 1e-12);
    assert_near(pfi_pc_budget(100, 70, 60, 10, 50, 10, 20), 85, 1e-12); /* ramping down */
    assert_near(pfi_pc_budget(100, 70, 80, 10, 50, 10, 20), 100, 1e-12);
    assert_near(pfi_pc_budget(100, 70, 10, 10, 50, 0, 0), 70, 1e-12); /* no ramp: at once */
}

/* the plant: job i draws min(uncapped_i, true_r_i x cap x gpus) x dip_i */
typedef struct plant {
    double uncapped[4], true_r[4], dip[4];
} plant;

static double draw(const plant *p, int i, const pfi_pc_job *j)
{
    return fmin(p->uncapped[i], p->true_r[i] * j->cap_w * j->gpus) * p->dip[i];
}

static void closed_loop_with_dip(void **s)
{
    (void)s;
    plant P = {{5400, 5400, 5000, 4800}, {0.96, 0.98, 0.95, 0.97}, {1, 1, 1, 1}};
    pfi_pc_job J[4];
    memset(J, 0, sizeof J);
    double pfi[4] = {2.2, 1.3, 1.5, 1.2};
    double base = 0;
    for (int i = 0; i < 4; i++) {
        J[i].gpus = 8;
        J[i].cap_min_w = 200;
        J[i].cap_max_w = 700;
        J[i].baseline_w = P.uncapped[i];
        J[i].baseline_tokens_per_s = 1000 * (i + 1);
        J[i].pfi_pred = pfi[i];
        J[i].sla_tier = -1;
        J[i].cap_w = 700;
        base += P.uncapped[i];
    }
    double target = 0.7 * base, I = 0;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = PFI_STRAT_PFI_AWARE;
    pfi_pc_out out[4];
    int feasible;
    double worst_after = 0;
    for (int period = 0; period < 40; period++) {
        /* an evaluation dip of job 0 from period 10 to 14 */
        P.dip[0] = period >= 10 && period < 15 ? 0.4 : 1.0;
        double meas = 0;
        for (int i = 0; i < 4; i++) {
            J[i].measured_w = draw(&P, i, &J[i]);
            meas += J[i].measured_w;
            pfi_pc_learn_ratio(&J[i]);
        }
        if (period >= 2) {
            double over = meas / target - 1;
            if (over > worst_after) worst_after = over;
        }
        if (period > 0) pfi_pc_feedback(&I, meas, target);
        assert_int_equal(pfi_pc_allocate(J, 4, target, 0, I, &o, out, &feasible, NULL), PFI_OK);
        assert_true(feasible);
        for (int i = 0; i < 4; i++) J[i].cap_w = out[i].cap_w;
    }
    print_message("worst excess over target after two periods: %.3f%%; feedback term %.1f W\n",
                  100 * worst_after, I);
    assert_true(worst_after <=
                0.02); /* within target + 2% two periods after the start, and after the dip */
    /* the learned ratios are the plant's (the dip did not disturb them) */
    for (int i = 0; i < 4; i++)
        if (J[i].cap_w < 699) assert_near(J[i].ratio, P.true_r[i], 0.01);
    /* pfi-aware: the high-PFI job sheds more */
    assert_true(out[0].cap_w < out[3].cap_w);
}

static void sla_and_infeasible(void **s)
{
    (void)s;
    pfi_pc_job J[2];
    memset(J, 0, sizeof J);
    for (int i = 0; i < 2; i++) {
        J[i].gpus = 4;
        J[i].cap_min_w = 200;
        J[i].cap_max_w = 700;
        J[i].baseline_w = 2600;
        J[i].baseline_tokens_per_s = 100;
        J[i].pfi_pred = 2;
        J[i].cap_w = 700;
    }
    J[0].sla_tier = 0; /* Flex 0: no reduction */
    J[1].sla_tier = 3;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = PFI_STRAT_PFI_AWARE;
    pfi_pc_out out[2];
    int feasible;
    assert_int_equal(pfi_pc_allocate(J, 2, 4400, 0, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_true(feasible);
    assert_near(out[0].cap_w, 700, 0); /* Flex 0 keeps the device maximum */
    assert_near(out[0].target_w, 2600, 1);
    assert_near(out[0].target_w + out[1].target_w, 4400, 1);
    /* Flex 3's floor (P_max (1 - 0.8 x 0.5)) makes 4000 W infeasible */
    assert_int_equal(pfi_pc_allocate(J, 2, 4000, 0, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_false(feasible);
    /* below every floor: infeasible, each job at its floor */
    assert_int_equal(pfi_pc_allocate(J, 2, 1000, 0, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_false(feasible);
    assert_true(out[1].cap_w >= 200);
    /* fixed load (an unreachable agent) comes off the budget */
    J[0].sla_tier = J[1].sla_tier = -1;
    assert_int_equal(pfi_pc_allocate(J, 2, 4000, 1000, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_near(out[0].target_w + out[1].target_w, 3000, 1);
    /* ratio learning ignores samples that are not power-bound */
    pfi_pc_job k = J[0];
    k.ratio = 0;
    k.cap_w = 500;
    k.measured_w = 0.5 * 500 * 4; /* a dip */
    pfi_pc_learn_ratio(&k);
    assert_near(k.ratio, 0, 0);
    k.measured_w = 0.95 * 500 * 4;
    pfi_pc_learn_ratio(&k);
    assert_near(k.ratio, 0.95, 1e-12);
    double I = 0;
    pfi_pc_feedback(&I, 1100, 1000);
    assert_near(I, 100, 1e-12);
    pfi_pc_feedback(&I, 900, 1000);
    assert_near(I, 50, 1e-12);
    pfi_pc_feedback(&I, 500, 1000);
    assert_near(I, 0, 1e-12); /* never negative: unused power is not handed around */
    pfi_pc_feedback(&I, 5000, 1000);
    assert_near(I, 300, 1e-12); /* at most 30% of the budget */
}

/* an online strategy's targets handed over as fixed targets: kept as they
 * are when they fit, the feedback term shed by equal weight (P_max) above
 * each job's lowest power, caps from the learned ratio; a job without one:
 * the allocator decides for all */
static void fixed_targets(void **s)
{
    (void)s;
    pfi_pc_job J[2];
    memset(J, 0, sizeof J);
    for (int i = 0; i < 2; i++) {
        J[i].gpus = 4;
        J[i].cap_min_w = 200;
        J[i].cap_max_w = 700;
        J[i].baseline_tokens_per_s = 100;
        J[i].sla_tier = -1;
        J[i].cap_w = 700;
        J[i].ratio = 0.9;
    }
    J[0].baseline_w = 2400;
    J[1].baseline_w = 1200;
    J[0].fixed_target_w = 1500;
    J[1].fixed_target_w = 1100;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = PFI_STRAT_EQUAL;
    pfi_pc_out out[2];
    int feasible;
    assert_int_equal(pfi_pc_allocate(J, 2, 3000, 100, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_true(feasible);
    assert_near(out[0].target_w, 1500, 1e-9);
    assert_near(out[1].target_w, 1100, 1e-9);
    assert_near(out[0].cap_w, floor(1500 / (4 * 0.9)), 0);
    /* 300 W of feedback over a 2600 W budget: 300 W shed, 2:1 by P_max */
    assert_int_equal(pfi_pc_allocate(J, 2, 2700, 100, 300, &o, out, &feasible, NULL), PFI_OK);
    assert_true(feasible);
    assert_near(out[0].target_w, 1300, 1e-6);
    assert_near(out[1].target_w, 1000, 1e-6);
    /* one job cannot shed its share (its lowest power 4 x 200 x 0.9 = 720 W):
       the other sheds the rest */
    J[1].fixed_target_w = 760;
    assert_int_equal(pfi_pc_allocate(J, 2, 1900, 0, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_near(out[1].target_w, 720, 1e-6);
    assert_near(out[0].target_w + out[1].target_w, 1900, 1e-6);
    /* an SLA floor: the other job sheds first; below every floor, infeasible */
    J[1].fixed_target_w = 1100;
    J[1].fixed_floor_w = 1100;
    assert_int_equal(pfi_pc_allocate(J, 2, 2400, 0, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_true(feasible);
    assert_near(out[1].target_w, 1100, 1e-6);
    assert_near(out[0].target_w, 1300, 1e-6);
    J[0].fixed_floor_w = 1500;
    J[0].sla_tier = 0;
    J[1].sla_tier = 3;
    assert_int_equal(pfi_pc_allocate(J, 2, 2400, 0, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_false(feasible);
    assert_near(out[0].target_w + out[1].target_w, 2400, 1e-6); /* the budget holds */
    assert_near(out[0].target_w, 1500, 1e-6); /* Flex 3 goes below its floor, Flex 0 not */
    J[0].sla_tier = J[1].sla_tier = -1;
    J[0].fixed_floor_w = J[1].fixed_floor_w = 0;
    /* without a target on every job: the allocator (equal weight) for all */
    J[1].fixed_target_w = 0;
    assert_int_equal(pfi_pc_allocate(J, 2, 2700, 0, 0, &o, out, &feasible, NULL), PFI_OK);
    assert_near(out[0].target_w / 2400, out[1].target_w / 1200, 1e-6);
    o.strategy = PFI_STRAT_SAFE_ONLINE; /* the same: the reference, where it starts */
    pfi_pc_out so[2];
    assert_int_equal(pfi_pc_allocate(J, 2, 2700, 0, 0, &o, so, &feasible, NULL), PFI_OK);
    assert_near(so[0].target_w, out[0].target_w, 1e-9);
    assert_near(so[1].target_w, out[1].target_w, 1e-9);
}

static void times(void **s)
{
    (void)s;
    double t;
    assert_int_equal(pfi_rfc3339_parse("2026-12-02T18:00:00Z", &t), 0);
    assert_near(t, 1796234400, 0);
    assert_int_equal(pfi_rfc3339_parse("2026-12-02T19:30:00.5+01:30", &t), 0);
    assert_near(t, 1796234400.5, 1e-6);
    assert_int_equal(pfi_rfc3339_parse("2024-02-29T00:00:00Z", &t), 0);
    static const char *const bad[] = {"2026-12-02",           "2026-13-02T18:00:00Z",
                                      "2025-02-29T00:00:00Z", "2026-12-02T18:00:00",
                                      "2026-12-02T25:00:00Z", "2026-12-02T18:00:00+1",
                                      "x026-12-02T18:00:00Z", "2026-12-02T18:00:00Zjunk"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (pfi_rfc3339_parse(bad[i], &t) == 0) fail_msg("%s parsed", bad[i]);
    char b[40];
    pfi_rfc3339_format(1796234400, b, sizeof b);
    assert_string_equal(b, "2026-12-02T18:00:00Z");
    assert_int_equal(pfi_iso8601_duration("PT1H30M", &t), 0);
    assert_near(t, 5400, 0);
    assert_int_equal(pfi_iso8601_duration("P1DT2S", &t), 0);
    assert_near(t, 86402, 0);
    assert_int_equal(pfi_iso8601_duration("PT0.5S", &t), 0);
    assert_near(t, 0.5, 1e-12);
    static const char *const badd[] = {"1H", "P", "PT", "P1M", "PT1D", "PTxS", "P1Y"};
    for (size_t i = 0; i < sizeof badd / sizeof *badd; i++)
        if (pfi_iso8601_duration(badd[i], &t) == 0) fail_msg("%s parsed", badd[i]);
}

static void events(void **s)
{
    (void)s;
    pfi_grid_event ev;
    const char *ok = "{\"id\":\"e-1\",\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":3600,"
                     "\"reduction_pct\":30,\"ramp_s\":60}";
    assert_int_equal(pfi_grid_event_parse(ok, strlen(ok), &ev, NULL), PFI_OK);
    assert_string_equal(ev.id, "e-1");
    assert_int_equal(ev.kind, PFI_EV_REDUCTION);
    assert_near(ev.reduction_pct, 30, 0);
    assert_near(ev.ramp_s, 60, 0);
    assert_true(isnan(ev.ramp_down_s));
    char *f = pfi_grid_event_format(&ev);
    pfi_grid_event ev2;
    assert_int_equal(pfi_grid_event_parse(f, strlen(f), &ev2, NULL), PFI_OK);
    free(f);
    assert_near(ev2.start, ev.start, 1e-9);
    assert_near(ev2.ramp_s, 60, 0);
    const char *lvl = "{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60,\"level\":2}";
    assert_int_equal(pfi_grid_event_parse(lvl, strlen(lvl), &ev, NULL), PFI_OK);
    assert_int_equal(ev.level, 2);
    assert_true(strlen(ev.id) > 0); /* generated */
    static const char *const bad[][2] = {
        {"{", "event"},
        {"{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60}", "exactly one"},
        {"{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60,\"level\":1,\"target_kw\":5}",
         "exactly one"},
        {"{\"duration_s\":60,\"level\":1}", "start: missing"},
        {"{\"start\":\"tomorrow\",\"duration_s\":60,\"level\":1}", "start: expected an RFC 3339"},
        {"{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":0,\"level\":1}", "duration_s"},
        {"{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60,\"level\":4}", "level"},
        {"{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60,\"reduction_pct\":95}",
         "reduction_pct"},
        {"{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60,\"target_kw\":-1}", "target_kw"},
        {"{\"id\":\"a b\",\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60,\"level\":1}",
         "id:"},
        {"{\"start\":\"2026-12-02T18:00:00Z\",\"duration_s\":60,\"level\":1,\"colour\":1}",
         "colour: unknown field"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pfi_error e;
        assert_int_not_equal(pfi_grid_event_parse(bad[i][0], strlen(bad[i][0]), &ev, &e), PFI_OK);
        if (!strstr(e.msg, bad[i][1]))
            fail_msg("'%s' -> '%s' (expected '%s')", bad[i][0], e.msg, bad[i][1]);
    }
    /* OpenADR 3 */
    const char *adr =
        "{\"objectType\":\"EVENT\",\"operation\":\"POST\",\"object\":{\"id\":\"adr-7\","
        "\"programID\":\"p1\","
        "\"intervalPeriod\":{\"start\":\"2026-12-02T18:00:00Z\",\"duration\":\"PT2H\"},"
        "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"PRICE\",\"values\":[0.3]},"
        "{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[900]}]}]}}";
    int del;
    assert_int_equal(adr_parse(adr, 150, &ev, &del, NULL), PFI_OK);
    assert_false(del);
    assert_string_equal(ev.id, "adr-7");
    assert_int_equal(ev.kind, PFI_EV_TARGET_KW);
    assert_near(ev.target_kw, 750, 1e-9); /* site limit minus the non-GPU offset */
    assert_near(ev.duration_s, 7200, 0);
    assert_string_equal(ev.source, "openadr");
    const char *simple = "{\"id\":\"adr-8\",\"intervalPeriod\":{\"start\":\"2026-12-02T18:00:00Z\","
                         "\"duration\":\"PT30M\"},"
                         "\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[3]}]}]}";
    assert_int_equal(adr_parse(simple, 0, &ev, &del, NULL), PFI_OK);
    assert_int_equal(ev.kind, PFI_EV_LEVEL);
    assert_int_equal(ev.level, 3);
    const char *d =
        "{\"objectType\":\"EVENT\",\"operation\":\"DELETE\",\"object\":{\"id\":\"adr-7\"}}";
    assert_int_equal(adr_parse(d, 0, &ev, &del, NULL), PFI_OK);
    assert_true(del);
    assert_string_equal(ev.id, "adr-7");
    static const char *const badadr[][2] = {
        {"{\"objectType\":\"PROGRAM\",\"operation\":\"POST\",\"object\":{}}", "only EVENT"},
        {"{\"id\":\"x\",\"intervalPeriod\":{\"start\":\"2026-12-02T18:00:00Z\",\"duration\":"
         "\"PT1H\"},\"intervals\":[{\"payloads\":[{\"type\":\"PRICE\",\"values\":[1]}]}]}",
         "no IMPORT_CAPACITY_LIMIT"},
        {"{\"id\":\"x\",\"intervalPeriod\":{\"start\":\"2026-12-02T18:00:00Z\",\"duration\":"
         "\"-P1M\"},\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}",
         "duration"},
        {"{\"id\":\"x\",\"intervalPeriod\":{\"start\":\"2026-12-02T18:00:00Z\",\"duration\":"
         "\"PT1H\"},\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[7]}]}]}",
         "SIMPLE level"}};
    for (size_t i = 0; i < sizeof badadr / sizeof *badadr; i++) {
        pfi_error e;
        assert_int_not_equal(adr_parse(badadr[i][0], 150, &ev, &del, &e), PFI_OK);
        if (!strstr(e.msg, badadr[i][1])) fail_msg("'%s' -> '%s'", badadr[i][0], e.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(budget_ramps),
                                       cmocka_unit_test(closed_loop_with_dip),
                                       cmocka_unit_test(sla_and_infeasible),
                                       cmocka_unit_test(fixed_targets),
                                       cmocka_unit_test(times),
                                       cmocka_unit_test(events)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
