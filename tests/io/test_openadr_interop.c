/* test_openadr_interop.c — every fixture of tests/openadr3/interop/ (the
 * wire forms of openleadr-rs, ElaadNL's openadr3-client and the User
 * Guide's cases, see the README there) read through pfi's OpenADR parser,
 * each checked against the meaning that README gives it: the steps (start,
 * seconds or until cancelled, kW or level), the interval ids, targets,
 * DELETE notifications and cancels; the reports through the check the
 * daemon runs before it POSTs one. A fixture added to the folder without a
 * meaning here fails the test. */
#include "../testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "openadr.h"

static pfi_oadr_event ev; /* large: not on the stack */
static double receipt;    /* what "now" means: 2029-12-01T00:00:00Z */

static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/openadr3/interop/%s", PFI_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    size_t cap = 1 << 17;
    char *b = calloc(1, cap);
    assert_non_null(b);
    *len = fread(b, 1, cap - 1, f);
    assert_true(*len < cap - 1); /* read whole */
    fclose(f);
    return b;
}

static pfi_status parse_with(const char *name, const pfi_oadr_opts *o)
{
    size_t n;
    char *b = slurp(name, &n);
    pfi_error e = {0};
    pfi_status st = pfi_oadr_parse(b, n, o, &ev, &e);
    free(b);
    return st;
}

static double at(const char *rfc3339)
{
    double t;
    if (pfi_rfc3339_parse(rfc3339, &t)) fail_msg("bad time %s", rfc3339);
    return t;
}

/* one expected step: start (NULL: receipt + rel_s), seconds (< 0: until
 * cancelled), kW (level >= 0: a SIMPLE level instead) */
typedef struct want {
    const char *start;
    double rel_s, seconds, kw;
    int level;
} want;

static void check_step(const char *f, size_t i, const want *w)
{
    const pfi_grid_event *s = &ev.step[i];
    double t0 = w->start ? at(w->start) : receipt + w->rel_s;
    if (fabs(s->start - t0) > 1e-3)
        fail_msg("%s step %zu: start %.3f, expected %.3f", f, i, s->start, t0);
    if (w->seconds < 0) {
        if (!s->open_ended) fail_msg("%s step %zu: not until cancelled", f, i);
    } else if (s->open_ended || fabs(s->duration_s - w->seconds) > 1e-3)
        fail_msg("%s step %zu: %g s (open %d), expected %g s", f, i, s->duration_s, s->open_ended,
                 w->seconds);
    if (w->level >= 0) {
        if (s->kind != PFI_EV_LEVEL || s->level != w->level)
            fail_msg("%s step %zu: not level %d", f, i, w->level);
    } else if (s->kind != PFI_EV_TARGET_KW || fabs(s->target_kw - w->kw) > 1e-9)
        fail_msg("%s step %zu: %g kW (kind %d), expected %g kW", f, i, s->target_kw, (int)s->kind,
                 w->kw);
}

static void expect(const char *f, const pfi_oadr_opts *o, const want *w, size_t n)
{
    if (parse_with(f, o)) fail_msg("%s refused (reason %d)", f, (int)ev.reason);
    assert_int_equal(ev.op, PFI_OADR_OP_UPSERT);
    assert_true(ev.targeted);
    if (ev.nsteps != n) fail_msg("%s: %zu steps, expected %zu", f, ev.nsteps, n);
    for (size_t i = 0; i < n; i++) check_step(f, i, &w[i]);
}

#define KW(s, sec, k)                                                                              \
    {                                                                                              \
        s, 0, sec, k, -1                                                                           \
    }
#define NOWKW(rel, sec, k)                                                                         \
    {                                                                                              \
        NULL, rel, sec, k, -1                                                                      \
    }

static const pfi_oadr_opts V31 = {.version = PFI_OADR_V3_1, .now = 0};

static void openleadr_rs(void **s)
{
    (void)s;
    pfi_oadr_opts o = V31;
    o.now = receipt;
    const want full[] = {KW("2030-01-07T12:00:00Z", 3600, 12.5),
                         KW("2030-01-07T13:00:00Z", 3600, 10), KW("2030-01-07T14:00:00Z", 3600, 8)};
    expect("olrs_full_form_durations.json", &o, full, 3);
    const want open[] = {KW("2030-01-07T18:00:00Z", -1, 20)};
    expect("olrs_until_cancelled.json", &o, open, 1);
    const want now_off[] = {{NULL, 0, -1, 0, 1}};
    expect("olrs_now_offset.json", &o, now_off, 1);
    const want now_z[] = {NOWKW(0, 7200, 15)};
    expect("olrs_now_z.json", &o, now_z, 1);
    const want nodur[] = {KW("2030-01-07T12:00:00Z", 7200, 10), KW("2030-01-07T14:00:00Z", -1, 6)};
    expect("olrs_start_no_duration.json", &o, nodur, 2);
    const want weeks[] = {KW("2030-01-07T12:00:00Z", 1209600, 30)};
    expect("olrs_weeks_as_days.json", &o, weeks, 1);
    const want frac[] = {KW("2030-01-07T12:00:00Z", 5400, 18)};
    expect("olrs_fractional_hours.json", &o, frac, 1);
    /* units from the program: W there, none on the event */
    size_t n;
    char *prog = slurp("olrs_program_units_w.json", &n);
    char *pd = strstr(prog, "\"payloadDescriptors\"");
    assert_non_null(pd);
    pd = strchr(pd, '[');
    char *end = strchr(pd, ']');
    assert_non_null(end);
    end[1] = 0;
    o.program_descriptors = pd;
    const want w5[] = {KW("2030-01-07T12:00:00Z", 3600, 5)};
    expect("olrs_units_from_program.json", &o, w5, 1);
    o.program_descriptors = NULL;
    const want kw5000[] = {KW("2030-01-07T12:00:00Z", 3600, 5000)};
    expect("olrs_units_from_program.json", &o, kw5000, 1);
    free(prog);
    /* notifications (MQTT/WebSocket): CREATE, DELETE */
    const want create[] = {KW("2030-01-07T12:00:00Z", 1800, 9),
                           KW("2030-01-07T12:30:00Z", 1800, 7.5)};
    expect("olrs_notification_create.json", &o, create, 2);
    assert_int_equal(parse_with("olrs_notification_delete.json", &o), PFI_OK);
    assert_int_equal(ev.op, PFI_OADR_OP_DELETE);
}

/* a day of 15-minute steps: 40 kW 00-07 h, 32.5 kW 07-17 h, 25 kW 17-21 h,
 * 40 kW 21-24 h (the olrs_ day and the week's weekdays) */
static double day_kw(int quarter)
{
    int h = quarter / 4;
    return h < 7 ? 40 : h < 17 ? 32.5 : h < 21 ? 25 : 40;
}

static void check_quarters(const char *f, double t0, size_t n, double (*kw)(size_t))
{
    if (ev.nsteps != n) fail_msg("%s: %zu steps, expected %zu", f, ev.nsteps, n);
    for (size_t i = 0; i < n; i++) {
        want w = {NULL, t0 + 900.0 * (double)i - receipt, 900, kw(i), -1};
        check_step(f, i, &w);
        if (ev.interval_id[i] != (long long)i)
            fail_msg("%s step %zu: interval id %lld", f, i, ev.interval_id[i]);
    }
}

static double day_of_96(size_t i)
{
    return day_kw((int)i);
}
static double week_of_672(size_t i)
{
    return i >= 5 * 96 ? 40 : day_kw((int)(i % 96));
}
static double gac_separated(size_t i)
{
    return i >= 17 * 4 && i < 21 * 4 ? 3.7 : 11;
}

static void schedules(void **s)
{
    (void)s;
    pfi_oadr_opts o = V31;
    o.now = receipt;
    assert_int_equal(parse_with("olrs_day_96x15m.json", &o), PFI_OK);
    check_quarters("olrs_day_96x15m.json", at("2030-01-08T00:00:00Z"), 96, day_of_96);
    assert_int_equal(parse_with("olrs_week_672x15m.json", &o), PFI_OK);
    check_quarters("olrs_week_672x15m.json", at("2030-01-14T00:00:00Z"), 672, week_of_672);
    assert_near(ev.step[671].start + ev.step[671].duration_s, at("2030-01-21T00:00:00Z"), 1e-3);
    o.ven_name = "871685900000000018";
    assert_int_equal(parse_with("elaad_gac_separated.json", &o), PFI_OK);
    assert_true(ev.targeted);
    check_quarters("elaad_gac_separated.json", at("2030-01-08T00:00:00Z"), 96, gac_separated);
}

static void elaad(void **s)
{
    (void)s;
    pfi_oadr_opts o = V31;
    o.now = receipt;
    o.ven_name = "871685900000000018"; /* the GAC target, an EAN18 */
    const double k[] = {11, 11, 7.4, 7.4, 3.7, 3.7, 11, 11};
    want cont[8];
    for (int i = 0; i < 8; i++)
        cont[i] = (want){NULL, at("2030-01-08T00:00:00Z") + 900.0 * i - receipt, 900, k[i], -1};
    expect("elaad_gac_continuous.json", &o, cont, 8);
    o.ven_name = "another-ven"; /* the same event is not for another VEN */
    assert_int_equal(parse_with("elaad_gac_continuous.json", &o), PFI_OK);
    assert_false(ev.targeted);
    o.ven_name = NULL;
    /* pydantic's durations; PT0S skipped; a 365-day year; P9999Y */
    const want dur[] = {KW("2030-01-08T00:00:00Z", 5400, 10), KW("2030-01-08T01:30:00Z", 108000, 9),
                        KW("2030-01-09T07:30:00Z", 400 * 86400.0, 7),
                        KW("2031-02-13T07:30:00Z", -1, 6)};
    expect("elaad_durations.json", &o, dur, 4);
    const long long ids[] = {0, 1, 3, 4};
    for (int i = 0; i < 4; i++) assert_int_equal(ev.interval_id[i], ids[i]);
    assert_non_null(strstr(ev.note, "PT0S"));
    /* 3.0.1 targets as valuesMaps */
    pfi_oadr_opts o301 = {.version = PFI_OADR_V3_0_1, .now = receipt, .ven_name = "pfi-test-ven"};
    const want t301[] = {KW("2030-01-08T00:00:00Z", 3600, 11),
                         KW("2030-01-08T01:00:00Z", 3600, 5.5)};
    expect("elaad_301_targets.json", &o301, t301, 2);
    o301.ven_name = "other";
    assert_int_equal(parse_with("elaad_301_targets.json", &o301), PFI_OK);
    assert_false(ev.targeted);
}

static void user_guide(void **s)
{
    (void)s;
    pfi_oadr_opts o = V31;
    o.now = receipt;
    const want first[] = {KW("2030-01-07T12:00:00Z", 1800, 10),
                          KW("2030-01-07T12:30:00Z", 3600, 8)};
    expect("ug_7.3_now_first_interval.json", &o, first, 2);
    const want noep[] = {NOWKW(0, 1800, 10), NOWKW(1800, 1800, 8)};
    expect("ug_7.3_now_first_interval_no_event_period.json", &o, noep, 2);
    const want later[] = {KW("2030-01-07T12:00:00Z", 1800, 10), KW("2030-01-07T12:30:00Z", 2700, 8),
                          KW("2030-01-07T13:15:00Z", 900, 6)};
    expect("ug_7.3_now_later_interval.json", &o, later, 3);
    const want nostart[] = {KW("2030-01-07T12:00:00Z", 3600, 10),
                            KW("2030-01-07T13:00:00Z", 7200, 7)};
    expect("ug_7.4_duration_without_start.json", &o, nostart, 2);
    assert_int_equal(parse_with("ug_7.9_delete_notification.json", &o), PFI_OK);
    assert_int_equal(ev.op, PFI_OADR_OP_DELETE);
    assert_int_equal(parse_with("ug_7.9_cancel_pt0s_update.json", &o), PFI_OK);
    assert_int_equal(ev.op, PFI_OADR_OP_DELETE); /* every interval PT0S: cancelled */
    const want lvl[] = {{"2030-01-07T12:00:00Z", 0, 14400, 0, 2}};
    expect("ug_8.2_simple_level_2_0.json", &o, lvl, 1);
    const want zero[] = {KW("2030-01-07T12:00:00Z", 1800, 0)};
    expect("ug_8.10.1_zero_kw.json", &o, zero, 1);
    assert_non_null(strstr(ev.note, "EXPORT_CAPACITY_LIMIT"));
    const want longer[] = {KW("2030-01-07T00:00:00Z", 864000, 30),
                           KW("2030-01-17T00:00:00Z", 1209600, 25)};
    expect("ug_longer_than_7_days.json", &o, longer, 2);
    const char *res42[] = {"42"}, *res43[] = {"43"};
    pfi_oadr_opts o301 = {.version = PFI_OADR_V3_0_1,
                          .now = receipt,
                          .ven_name = "ven",
                          .resources = res42,
                          .nresources = 1};
    const want r42[] = {KW("2030-01-07T12:00:00Z", 3600, 9)};
    expect("ug_target_resource_number_301.json", &o301, r42, 1);
    o301.resources = res43;
    assert_int_equal(parse_with("ug_target_resource_number_301.json", &o301), PFI_OK);
    assert_false(ev.targeted);
}

static pfi_status report_check(const char *f, pfi_oadr_version v)
{
    size_t n;
    char *b = slurp(f, &n);
    pfi_error e = {0};
    pfi_status st = pfi_oadr_report_check(b, n, v, &e);
    free(b);
    return st;
}

/* the reports: what pfi checks before it POSTs agrees with the schema */
static void reports(void **s)
{
    (void)s;
    assert_int_equal(report_check("ug_report_7.7_aggregated.json", PFI_OADR_V3_1), PFI_OK);
    assert_int_not_equal(report_check("ug_report_7.7_aggregated.json", PFI_OADR_V3_0_1), PFI_OK);
    assert_int_not_equal(report_check("ug_report_8.3_usage.json", PFI_OADR_V3_1), PFI_OK);
    assert_int_not_equal(report_check("ug_report_8.3_usage.json", PFI_OADR_V3_0_1), PFI_OK);
    assert_int_not_equal(report_check("elaad_report_post.json", PFI_OADR_V3_1), PFI_OK);
    assert_int_not_equal(report_check("elaad_report_post.json", PFI_OADR_V3_0_1), PFI_OK);
}

/* every fixture in the folder is one of those checked above */
static void every_fixture_has_a_meaning(void **s)
{
    (void)s;
    static const char *const known[] = {
        "elaad_301_targets.json",         "elaad_durations.json",
        "elaad_gac_continuous.json",      "elaad_gac_separated.json",
        "elaad_report_post.json",         "olrs_day_96x15m.json",
        "olrs_fractional_hours.json",     "olrs_full_form_durations.json",
        "olrs_notification_create.json",  "olrs_notification_delete.json",
        "olrs_now_offset.json",           "olrs_now_z.json",
        "olrs_program_units_w.json",      "olrs_start_no_duration.json",
        "olrs_units_from_program.json",   "olrs_until_cancelled.json",
        "olrs_week_672x15m.json",         "olrs_weeks_as_days.json",
        "ug_7.3_now_first_interval.json", "ug_7.3_now_first_interval_no_event_period.json",
        "ug_7.3_now_later_interval.json", "ug_7.4_duration_without_start.json",
        "ug_7.9_cancel_pt0s_update.json", "ug_7.9_delete_notification.json",
        "ug_8.10.1_zero_kw.json",         "ug_8.2_simple_level_2_0.json",
        "ug_longer_than_7_days.json",     "ug_report_7.7_aggregated.json",
        "ug_report_8.3_usage.json",       "ug_target_resource_number_301.json"};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/openadr3/interop", PFI_SOURCE_DIR);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    size_t seen = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".json")) continue;
        size_t k = 0;
        while (k < sizeof known / sizeof *known && strcmp(known[k], de->d_name)) k++;
        if (k == sizeof known / sizeof *known)
            fail_msg("%s: a fixture without a meaning in this test", de->d_name);
        seen++;
    }
    closedir(d);
    assert_int_equal(seen, sizeof known / sizeof *known);
}

int main(void)
{
    receipt = at("2029-12-01T00:00:00Z");
    const struct CMUnitTest t[] = {
        cmocka_unit_test(openleadr_rs), cmocka_unit_test(schedules),
        cmocka_unit_test(elaad),        cmocka_unit_test(user_guide),
        cmocka_unit_test(reports),      cmocka_unit_test(every_fixture_has_a_meaning),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
