/* test_grid_event.c — the bounds of grid events in both formats (issue 14
 * item 9): a duration of 1 s .. 7 days unless explicitly open-ended, a
 * target finite, positive and below 1e6 kW, ISO 8601 durations of plain
 * digits only ("P1e303W" ran an event forever), and nothing accepted that
 * cannot be formatted back (it was stored as "{}" and lost). Each bound has
 * a case just inside and just outside; errors name the field. */
#include "../testutil.h"

#include <math.h>
#include <stdio.h>

#include "event_kind.h"
#include "grid_event.h"
#include "openadr.h"

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

#define START "\"start\":\"2026-12-02T18:00:00Z\""

static void expect_bad(const char *json, const char *field)
{
    pfi_grid_event ev;
    pfi_error e;
    if (pfi_grid_event_parse(json, strlen(json), &ev, &e) == PFI_OK) fail_msg("accepted: %s", json);
    if (!strstr(e.msg, field) || strchr(e.msg, '\n'))
        fail_msg("'%s' -> '%s' (expected '%s')", json, e.msg, field);
}

static void expect_bad_adr(const char *dur, const char *payload, const char *field)
{
    char j[1024];
    snprintf(j, sizeof j,
             "{\"id\":\"x\",\"intervalPeriod\":{" START
             ",\"duration\":\"%s\"},\"intervals\":[{\"payloads\":[%s]}]}",
             dur, payload);
    pfi_grid_event ev;
    pfi_error e;
    int del;
    if (adr_parse(j, 10, &ev, &del, &e) == PFI_OK) fail_msg("accepted: %s", j);
    if (!strstr(e.msg, field) || strchr(e.msg, '\n'))
        fail_msg("'%s' -> '%s' (expected '%s')", j, e.msg, field);
}

/* parse, check every bound, format, parse again: the same event */
static void round_trip(const pfi_grid_event *ev)
{
    assert_int_equal(pfi_grid_event_check(ev, NULL), PFI_OK);
    char *f = pfi_grid_event_format(ev);
    assert_non_null(f);
    pfi_grid_event ev2;
    pfi_error e;
    if (pfi_grid_event_parse(f, strlen(f), &ev2, &e)) fail_msg("%s -> %s", f, e.msg);
    free(f);
    assert_string_equal(ev2.id, ev->id);
    assert_int_equal(ev2.open_ended, ev->open_ended);
    assert_near(ev2.duration_s, ev->duration_s, 1e-6);
    assert_near(ev2.target_kw, ev->target_kw, 1e-6);
}

static void canonical(void **s)
{
    (void)s;
    pfi_grid_event ev;
    const char *week = "{\"id\":\"w\"," START ",\"duration_s\":604800,\"target_kw\":999999.5}";
    assert_int_equal(pfi_grid_event_parse(week, strlen(week), &ev, NULL), PFI_OK);
    round_trip(&ev);
    /* no bound below the end of 9999 (issue 29): 8 days, 32 days are events */
    const char *month = "{\"id\":\"m\"," START ",\"duration_s\":2764800,\"level\":1}";
    assert_int_equal(pfi_grid_event_parse(month, strlen(month), &ev, NULL), PFI_OK);
    round_trip(&ev);
    expect_bad("{" START ",\"duration_s\":2.6e11,\"level\":1}", "duration_s"); /* past 9999 */
    expect_bad("{" START ",\"duration_s\":0.5,\"level\":1}", "duration_s");
    expect_bad("{" START ",\"duration_s\":1e300,\"level\":1}", "duration_s");
    expect_bad("{" START ",\"duration_s\":1e400,\"level\":1}", "event"); /* JSON overflow */
    expect_bad("{" START ",\"duration_s\":60,\"target_kw\":1e6}", "target_kw");
    expect_bad("{" START ",\"duration_s\":60,\"target_kw\":8.9e12}",
               "target_kw"); /* the fuzzer's */
    expect_bad("{" START ",\"duration_s\":60,\"target_kw\":-0.5}", "target_kw");
    const char *zero = "{\"id\":\"z\"," START ",\"duration_s\":60,\"target_kw\":0}";
    assert_int_equal(pfi_grid_event_parse(zero, strlen(zero), &ev, NULL), PFI_OK); /* floors */
    round_trip(&ev);
    expect_bad("{" START ",\"level\":1}", "duration_s: missing");
    expect_bad("{" START ",\"open_ended\":false,\"level\":1}", "duration_s: missing");
    expect_bad("{" START ",\"open_ended\":1,\"level\":1}", "open_ended");
    /* explicitly open-ended: no end until cancelled, and it formats back */
    const char *open = "{\"id\":\"o\"," START ",\"open_ended\":true,\"reduction_pct\":20}";
    assert_int_equal(pfi_grid_event_parse(open, strlen(open), &ev, NULL), PFI_OK);
    assert_true(ev.open_ended);
    assert_true(isinf(pfi_grid_event_end(&ev)));
    round_trip(&ev);
    /* as a cancelled one is stored: ended after duration_s */
    ev.duration_s = 40 * 86400.0;
    assert_near(pfi_grid_event_end(&ev), ev.start + 40 * 86400.0, 0);
    round_trip(&ev);
    ev.duration_s = 1e300;
    assert_null(pfi_grid_event_format(&ev)); /* never a partial event */
    pfi_error e;
    assert_int_not_equal(pfi_grid_event_check(&ev, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "duration_s"));
    ev.open_ended = 0;
    ev.duration_s = INFINITY;
    assert_null(pfi_grid_event_format(&ev));
    ev.duration_s = 60;
    ev.kind = PFI_EV_TARGET_KW;
    ev.target_kw = NAN;
    assert_int_not_equal(pfi_grid_event_check(&ev, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "target_kw"));
    ev.target_kw = INFINITY;
    assert_null(pfi_grid_event_format(&ev));
}

/* "duration" in ISO 8601 beside duration_s (issue 16 item 3): one of them */
static void iso_duration(void **s)
{
    (void)s;
    pfi_grid_event ev;
    const char *h = "{\"id\":\"h\"," START ",\"duration\":\"PT1H30M\",\"level\":2}";
    assert_int_equal(pfi_grid_event_parse(h, strlen(h), &ev, NULL), PFI_OK);
    assert_near(ev.duration_s, 5400, 0);
    round_trip(&ev);
    const char *w = "{\"id\":\"w\"," START ",\"duration\":\"P7D\",\"level\":2}";
    assert_int_equal(pfi_grid_event_parse(w, strlen(w), &ev, NULL), PFI_OK);
    expect_bad("{" START ",\"duration\":\"PT1H\",\"duration_s\":3600,\"level\":1}",
               "duration, duration_s");
    expect_bad("{" START ",\"duration\":\"1h\",\"level\":1}", "duration: expected an ISO 8601");
    expect_bad("{" START ",\"duration\":3600,\"level\":1}", "duration: expected an ISO 8601");
    expect_bad("{" START ",\"duration\":\"PT0S\",\"level\":1}", "duration");
    const char *w8 = "{\"id\":\"w\"," START ",\"duration\":\"P8D\",\"level\":2}";
    assert_int_equal(pfi_grid_event_parse(w8, strlen(w8), &ev, NULL), PFI_OK);
    assert_near(ev.duration_s, 8 * 86400.0, 0);
}

static void openadr(void **s)
{
    (void)s;
    pfi_grid_event ev;
    int del;
    const char *week = "{\"id\":\"a\",\"intervalPeriod\":{" START ",\"duration\":\"P7D\"},"
                       "\"intervals\":[{\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
                       "\"values\":[1000009]}]}]}";
    assert_int_equal(adr_parse(week, 10, &ev, &del, NULL), PFI_OK);
    assert_near(ev.duration_s, 604800, 0);
    assert_near(ev.target_kw, 999999, 1e-6);
    round_trip(&ev);
    /* P9999Y: until cancelled (the specification's infinity), stored and formatted back */
    const char *forever = "{\"id\":\"f\",\"intervalPeriod\":{" START ",\"duration\":\"P9999Y\"},"
                          "\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}";
    assert_int_equal(adr_parse(forever, 10, &ev, &del, NULL), PFI_OK);
    assert_true(ev.open_ended);
    round_trip(&ev);
    const char *lvl = "{\"type\":\"SIMPLE\",\"values\":[1]}";
    expect_bad_adr("P1e303W", lvl, "duration"); /* ran forever */
    expect_bad_adr("PT1e3S", lvl, "duration");
    expect_bad_adr("PT0.5S", lvl, "under 1 s");
    expect_bad_adr("P1DT", lvl, "duration");
    expect_bad_adr("P-1D", lvl, "duration");
    expect_bad_adr("-P1D", lvl, "duration"); /* negative: the spec's pattern allows the sign */
    expect_bad_adr("P+1D", lvl, "duration");
    expect_bad_adr("P0x10D", lvl, "duration");
    expect_bad_adr("PinfD", lvl, "duration");
    expect_bad_adr("P1.5M", lvl, "duration");
    expect_bad_adr("PT1H2D", lvl, "duration");
    expect_bad_adr("P1D1Y", lvl, "duration");
    /* issue 29: calendar parts from the start, huge ones until cancelled */
    const char *f32 = "{\"id\":\"f\",\"intervalPeriod\":{" START ",\"duration\":\"P32D\"},"
                      "\"intervals\":[{\"payloads\":["
                      "{\"type\":\"SIMPLE\",\"values\":[1]}"
                      "]}]}";
    assert_int_equal(adr_parse(f32, 10, &ev, &del, NULL), PFI_OK);
    assert_near(ev.duration_s, 32 * 86400.0, 0);
    assert_false(ev.open_ended);
    round_trip(&ev);
    static const char *const forever_forms[] = {"P10000Y", "P9998Y", "P1234567890123D",
                                                "P9999Y0M0DT0H0M0S", "PT99999999999999999999H"};
    for (size_t k = 0; k < sizeof forever_forms / sizeof *forever_forms; k++) {
        char j[400];
        snprintf(j, sizeof j,
                 "{\"id\":\"f\",\"intervalPeriod\":{" START ",\"duration\":\"%s\"},"
                 "\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}",
                 forever_forms[k]);
        if (adr_parse(j, 10, &ev, &del, NULL)) fail_msg("%s refused", forever_forms[k]);
        if (!ev.open_ended) fail_msg("%s is not until cancelled", forever_forms[k]);
    }
    expect_bad_adr("PT1H", "{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[8.9e12]}", "values[0]");
    expect_bad_adr("PT1H", "{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[1000010]}",
                   "values[0]");
    expect_bad_adr("PT1H", "{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[1e400]}", "OpenADR");
    expect_bad_adr("PT1H", "{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[-5]}", "values[0]");
    double t;
    assert_int_equal(pfi_iso8601_duration("PT1.5H", &t), 0);
    assert_near(t, 5400, 0);
    assert_int_equal(pfi_iso8601_duration("PT0,5S", &t), 0);
    assert_near(t, 0.5, 0);
    assert_int_equal(pfi_iso8601_duration("P1W", &t), 0);
    assert_near(t, 604800, 0);
}

/* RFC 3339 both ways over the events' whole range: years before 1000 keep
   four digits (strftime wrote year 447 as "447", which the parser refuses:
   found by fuzz_events) */
static void rfc3339_years(void **s)
{
    (void)s;
    static const char *const times[] = {"0001-01-01T00:00:00Z", "0026-01-01T01:00:00Z",
                                        "0447-01-01T00:00:00Z", "0999-12-31T23:59:59.500Z",
                                        "1969-12-31T23:59:59Z", "2026-12-05T08:00:00.123Z",
                                        "9999-12-31T23:59:59Z"};
    for (size_t i = 0; i < sizeof times / sizeof *times; i++) {
        double t;
        char buf[64];
        assert_int_equal(pfi_rfc3339_parse(times[i], &t), 0);
        pfi_rfc3339_format(t, buf, sizeof buf);
        assert_string_equal(buf, times[i]);
    }
}

/* the kinds as one table (issue 43): each kind parses, checks its range,
   formats back and asks the cut both the event and the plan computed */
static void event_kinds(void **s)
{
    (void)s;
    assert_true(pfi_event_nkinds <= PFI_EV_KINDS_MAX);
    char list[160];
    pfi_event_kind_list(list, sizeof list, ", ", " and ");
    assert_string_equal(list, "reduction_pct, target_kw and level");
    for (size_t k = 0; k < pfi_event_nkinds; k++) {
        const pfi_event_kind_row *r = &pfi_event_kinds[k];
        assert_ptr_equal(pfi_event_kind_of(r->kind), r);
        assert_true((r->cut_pct != NULL) != (r->target_w != NULL)); /* exactly one */
        char j[256];
        double mid = r->integer ? 1 : (r->lo + 1);
        snprintf(j, sizeof j, "{\"id\":\"k\"," START ",\"duration_s\":60,\"%s\":%g}", r->name, mid);
        pfi_grid_event ev;
        pfi_error e;
        if (pfi_grid_event_parse(j, strlen(j), &ev, &e)) fail_msg("%s -> %s", j, e.msg);
        assert_int_equal(ev.kind, r->kind);
        assert_true(pfi_grid_event_value(&ev) == mid);
        char *f = pfi_grid_event_format(&ev);
        assert_non_null(strstr(f, r->name));
        free(f);
        /* each end of the range: an open end refused, a closed one taken */
        pfi_grid_event_set(&ev, r->kind, r->lo);
        assert_int_equal(pfi_grid_event_check(&ev, NULL) == PFI_OK, !(r->open & PFI_J_LO_OPEN));
        pfi_grid_event_set(&ev, r->kind, r->hi);
        assert_int_equal(pfi_grid_event_check(&ev, NULL) == PFI_OK, !(r->open & PFI_J_HI_OPEN));
        pfi_grid_event_set(&ev, r->kind, r->hi + 1);
        assert_int_not_equal(pfi_grid_event_check(&ev, &e), PFI_OK);
        assert_non_null(strstr(e.msg, r->name));
        snprintf(j, sizeof j, "{" START ",\"duration_s\":60,\"%s\":1,\"%s\":1}", r->name,
                 pfi_event_kinds[(k + 1) % pfi_event_nkinds].name);
        char want[200];
        snprintf(want, sizeof want, "give exactly one of %s", list);
        expect_bad(j, want);
    }
    /* the cut: a share of the baseline, or a target in W whatever it is */
    const double levels[PFI_EVENT_LEVELS] = {0, 10, 20, 30};
    pfi_grid_event ev;
    memset(&ev, 0, sizeof ev);
    pfi_grid_event_set(&ev, PFI_EV_REDUCTION, 25);
    pfi_event_cut c = pfi_grid_event_cut(&ev, levels, 8000);
    assert_true(c.cut_pct == 25 && c.target_w == 8000 * (1 - 25 / 100.0));
    pfi_grid_event_set(&ev, PFI_EV_LEVEL, 2);
    c = pfi_grid_event_cut(&ev, levels, 8000);
    assert_true(c.cut_pct == 20 && c.target_w == 8000 * (1 - 20 / 100.0));
    pfi_grid_event_set(&ev, PFI_EV_TARGET_KW, 6);
    c = pfi_grid_event_cut(&ev, levels, 8000);
    assert_true(c.target_w == 6000 && c.cut_pct == 100 * (1 - 6 * 1000 / 8000.0));
    c = pfi_grid_event_cut(&ev, levels, 0); /* no baseline: no share, the target stands */
    assert_true(c.target_w == 6000 && isnan(c.cut_pct));
    ev.kind = (pfi_event_kind)99;
    c = pfi_grid_event_cut(&ev, levels, 8000);
    assert_true(isnan(c.cut_pct) && isnan(c.target_w));
    assert_null(pfi_event_kind_of(ev.kind));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(canonical), cmocka_unit_test(iso_duration),
                                       cmocka_unit_test(openadr), cmocka_unit_test(rfc3339_years),
                                       cmocka_unit_test(event_kinds)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
