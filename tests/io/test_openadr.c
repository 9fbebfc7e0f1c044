/* test_openadr.c — the VEN's OpenADR 3.0.1 / 3.1 event model (openadr.h) on
 * the specification's examples (tests/openadr3/, README there): bare
 * EVENTs as a VTN serves them, 3.0.1 and 3.1 notifications, the
 * capacity-limit schedule 10 kW -> 8 kW as two steps at the times the
 * specification implies, units, "now" and P9999Y, targets of both versions,
 * rejections with their reason, and the versions (newer replaces, same or
 * older is ignored and reported once). */
#include "../testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "openadr.h"

#define NOW 1.7e9 /* 2023-11-14: after every example */

static char *fixture(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/openadr3/%s", PFI_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    char *b = calloc(1, 1 << 16);
    assert_non_null(b);
    *len = fread(b, 1, (1 << 16) - 1, f);
    fclose(f);
    return b;
}

static pfi_status parse(const char *name, const pfi_oadr_opts *o, pfi_oadr_event *ev, pfi_error *e)
{
    size_t n;
    char *b = fixture(name, &n);
    pfi_status st = pfi_oadr_parse(b, n, o, ev, e);
    free(b);
    return st;
}

static pfi_oadr_event ev; /* large: not on the stack */

static void ok(const char *name, const pfi_oadr_opts *o)
{
    pfi_error e;
    if (parse(name, o, &ev, &e)) fail_msg("%s: %s", name, e.msg);
    assert_int_equal(ev.reason, PFI_OADR_OK);
}

static double t3339(const char *s)
{
    double t;
    assert_int_equal(pfi_rfc3339_parse(s, &t), 0);
    return t;
}

static void capacity_limit(void **s)
{
    (void)s;
    pfi_oadr_opts o = {.now = NOW, .non_gpu_offset_kw = 1.5};
    const char *files[] = {"vtn_capacity_limit_event.json", "n31_create_capacity_limit.json",
                           "vtn_capacity_limit_w.json"};
    for (size_t f = 0; f < 3; f++) {
        ok(files[f], &o);
        assert_int_equal(ev.op, PFI_OADR_OP_UPSERT);
        assert_int_equal(ev.targeted, 1);
        assert_int_equal(ev.nsteps, 2);
        /* 10 kW for PT30M from 2023-02-10T00:00Z, then 8 kW for PT30M; minus 1.5 kW */
        assert_string_equal(ev.step[0].id, f == 2 ? "cap-w.0" : "cap-1.0");
        assert_string_equal(ev.step[1].id, f == 2 ? "cap-w.1" : "cap-1.1");
        assert_int_equal(ev.step[0].kind, PFI_EV_TARGET_KW);
        assert_near(ev.step[0].target_kw, 8.5, 1e-9);
        assert_near(ev.step[1].target_kw, 6.5, 1e-9);
        assert_near(ev.step[0].start, t3339("2023-02-10T00:00:00Z"), 1e-6);
        assert_near(ev.step[1].start, t3339("2023-02-10T00:30:00Z"), 1e-6);
        assert_near(ev.step[0].duration_s, 1800, 1e-9);
        assert_near(ev.step[1].duration_s, 1800, 1e-9);
        assert_string_equal(ev.step[0].source, "openadr");
        if (f < 2) assert_near(ev.modified, t3339("2023-02-01T10:00:00Z"), 1e-6);
        assert_non_null(strstr(ev.note, "EXPORT_CAPACITY_LIMIT payloads ignored"));
    }
    /* reportDescriptors (the capacity example asks for READING in VOLTS, KW
       and KVAR): READING in KW is reported, the other two cannot be */
    ok("vtn_capacity_limit_event.json", &o);
    assert_int_equal(ev.report_mask, PFI_OADR_REPORT_READING);
    assert_string_equal(ev.report_unmeasured, "READING in VOLTS, READING in KVAR");
    ok("vtn_simple_event.json", &o); /* none: the default three */
    assert_int_equal(ev.report_mask, 0);
    assert_string_equal(ev.report_unmeasured, "");
    const char *rdesc =
        "{\"id\":\"rd\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
        "\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}],"
        "\"reportDescriptors\":[%s]}";
    char buf[1024];
    snprintf(buf, sizeof buf, rdesc,
             "{\"payloadType\":\"DEMAND\"},{\"payloadType\":\"USAGE\",\"units\":\"KWH\"},"
             "{\"payloadType\":\"BASELINE\"},{\"payloadType\":\"DELTA_USAGE\"}");
    assert_int_equal(pfi_oadr_parse(buf, strlen(buf), &o, &ev, NULL), PFI_OK);
    assert_int_equal(ev.report_mask, PFI_OADR_REPORT_DEMAND | PFI_OADR_REPORT_USAGE |
                                         PFI_OADR_REPORT_BASELINE | PFI_OADR_REPORT_DELTA_USAGE);
    snprintf(buf, sizeof buf, rdesc,
             "{\"payloadType\":\"READING\",\"units\":\"KVAR\"},{\"payloadType\":\"STORAGE_"
             "CHARGE_LEVEL\"}");
    assert_int_equal(pfi_oadr_parse(buf, strlen(buf), &o, &ev, NULL), PFI_OK);
    assert_int_equal(ev.report_mask, PFI_OADR_REPORT_NONE); /* only what pfi cannot measure */
    assert_string_equal(ev.report_unmeasured, "READING in KVAR, STORAGE_CHARGE_LEVEL");
    /* an interval's own intervalPeriod.start wins */
    const char *own =
        "{\"id\":\"own\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
        "\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]},"
        "{\"id\":1,\"intervalPeriod\":{\"start\":\"2026-01-01T05:00:00Z\",\"duration\":\"PT2H\"},"
        "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[3]}]},"
        "{\"id\":2,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}]}";
    assert_int_equal(pfi_oadr_parse(own, strlen(own), &o, &ev, NULL), PFI_OK);
    assert_int_equal(ev.nsteps, 3);
    assert_near(ev.step[1].start, t3339("2026-01-01T05:00:00Z"), 1e-6);
    assert_near(ev.step[1].duration_s, 7200, 1e-9);
    assert_near(ev.step[2].start, t3339("2026-01-01T07:00:00Z"), 1e-6);
    assert_near(ev.step[2].duration_s, 3600, 1e-9);
    assert_int_equal(ev.step[2].level, 2);
}

static void simple(void **s)
{
    (void)s;
    pfi_oadr_opts o = {.now = NOW};
    ok("vtn_simple_event.json", &o);
    assert_int_equal(ev.nsteps, 1);
    assert_string_equal(ev.step[0].id, "simple-1"); /* one step: the event's id */
    assert_int_equal(ev.step[0].kind, PFI_EV_LEVEL);
    assert_int_equal(ev.step[0].level, 1);
    assert_near(ev.step[0].start, t3339("2025-03-14T00:00:00Z"), 1e-6);
    assert_near(ev.step[0].duration_s, 4 * 3600, 1e-9);
    /* 3.0.1: POST and PUT */
    ok("n301_post_simple.json", &o);
    assert_int_equal(ev.step[0].level, 1);
    ok("n301_put_simple.json", &o);
    assert_int_equal(ev.step[0].level, 2);
    /* now, until cancelled */
    ok("vtn_simple_now_p9999y.json", &o);
    assert_near(ev.step[0].start, NOW, 1e-9);
    assert_int_equal(ev.step[0].open_ended, 1);
    assert_near(ev.step[0].duration_s, 0, 1e-9);
    const char *nozone = "{\"id\":\"nz\",\"priority\":2,\"intervalPeriod\":{\"start\":\"0001-01-"
                         "01T00:00:00\",\"duration\":\"PT5M\"},\"intervals\":[{\"id\":0,"
                         "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[0]}]}]}";
    assert_int_equal(pfi_oadr_parse(nozone, strlen(nozone), &o, &ev, NULL), PFI_OK);
    assert_near(ev.step[0].start, NOW, 1e-9);
    assert_int_equal(ev.step[0].has_priority, 1);
    assert_int_equal(ev.step[0].priority, 2);
    /* the verbatim User Guide example has no id (a VTN gives it one) */
    pfi_error e;
    assert_int_not_equal(parse("ug_8.2-1_simple_event.json", &o, &ev, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "id"));
}

static void bad(const char *name, pfi_oadr_reason r, const char *text)
{
    pfi_oadr_opts o = {.now = NOW};
    pfi_error e;
    if (parse(name, &o, &ev, &e) == PFI_OK) fail_msg("%s accepted", name);
    if (ev.reason != r || !strstr(e.msg, text) || strchr(e.msg, '\n'))
        fail_msg("%s: reason %s, '%s' (expected %s, '%s')", name, pfi_oadr_reason_name(ev.reason),
                 e.msg, pfi_oadr_reason_name(r), text);
    assert_true(ev.id[0]); /* known: logged once per version */
}

static void rejected(void **s)
{
    (void)s;
    bad("bad_unit_kva.json", PFI_OADR_R_UNIT, "KVA");
    bad("bad_no_intervals.json", PFI_OADR_R_INTERVALS, "intervals");
    bad("bad_loop_duration.json", PFI_OADR_R_LOOP, "duration");
    assert_string_equal(pfi_oadr_reason_name(PFI_OADR_R_UNIT), "unit");
    pfi_oadr_opts o = {.now = NOW};
    struct {
        const char *json;
        pfi_oadr_reason r;
        const char *text;
    } c[] = {
        {"{\"objectType\":\"EVENT\",\"operation\":\"PATCH\",\"object\":{\"id\":\"a\"}}",
         PFI_OADR_R_MALFORMED, "operation"},
        {"{\"objectType\":\"PROGRAM\",\"operation\":\"CREATE\",\"object\":{\"id\":\"a\"}}",
         PFI_OADR_R_MALFORMED, "objectType"},
        {"{\"id\":\"a.b\",\"intervals\":[]}", PFI_OADR_R_MALFORMED, "id"},
        {"{\"id\":\"a\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
         "\"P1e303W\"},\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}",
         PFI_OADR_R_DURATION, "P1e303W"},
        {"{\"id\":\"a\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
         "\"-PT1H\"},\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}",
         PFI_OADR_R_DURATION, "not an OpenADR duration"},
        {"{\"id\":\"a\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
         "\"PT1H\"},\"intervals\":[{\"payloads\":[{\"type\":\"PRICE\",\"values\":[1]}]}]}",
         PFI_OADR_R_PAYLOAD, "no IMPORT_CAPACITY_LIMIT or SIMPLE"},
        {"{\"id\":\"a\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
         "\"PT1H\"},\"intervals\":[{\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
         "\"values\":[8.9e12]}]}]}",
         PFI_OADR_R_PAYLOAD, "values[0]"},
        {"{\"id\":\"a\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
         "\"P9999Y\"},\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]},"
         "{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}]}",
         PFI_OADR_R_DURATION, "until cancelled"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        pfi_error e;
        if (pfi_oadr_parse(c[i].json, strlen(c[i].json), &o, &ev, &e) == PFI_OK)
            fail_msg("accepted: %s", c[i].json);
        if (ev.reason != c[i].r || !strstr(e.msg, c[i].text))
            fail_msg("%s: %s '%s'", c[i].json, pfi_oadr_reason_name(ev.reason), e.msg);
    }
    /* a 128-character id is the specification's longest */
    char j[600], id[130];
    memset(id, 'a', 128);
    id[128] = '\0';
    snprintf(j, sizeof j,
             "{\"id\":\"%s\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
             "\"PT1H\"},\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]},"
             "{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}]}",
             id);
    assert_int_equal(pfi_oadr_parse(j, strlen(j), &o, &ev, NULL), PFI_OK);
    assert_int_equal(strlen(ev.step[1].id), 130);
}

static void operations(void **s)
{
    (void)s;
    pfi_oadr_opts o = {.now = NOW};
    ok("n31_update_capacity_limit.json", &o);
    assert_int_equal(ev.op, PFI_OADR_OP_UPSERT);
    assert_near(ev.step[1].target_kw, 7, 1e-9);
    ok("n31_delete_capacity_limit.json", &o);
    assert_int_equal(ev.op, PFI_OADR_OP_DELETE);
    assert_string_equal(ev.id, "cap-1");
    ok("n31_read_capacity_limit.json", &o);
    assert_int_equal(ev.op, PFI_OADR_OP_READ);
    /* start 0001-01-01 and PT0S: the User Guide's way to cancel an event */
    const char *gone =
        "{\"id\":\"simple-1\",\"modificationDateTime\":\"2025-03-03T00:00:00Z\","
        "\"intervalPeriod\":{\"start\":\"0001-01-01\",\"duration\":\"PT0S\"},"
        "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}";
    assert_int_equal(pfi_oadr_parse(gone, strlen(gone), &o, &ev, NULL), PFI_OK);
    assert_int_equal(ev.op, PFI_OADR_OP_DELETE);
    assert_int_equal(ev.nsteps, 0);
    const char *del301 = "{\"objectType\":\"EVENT\",\"operation\":\"DELETE\",\"object\":{\"id\":"
                         "\"adr-1\"}}";
    assert_int_equal(pfi_oadr_parse(del301, strlen(del301), &o, &ev, NULL), PFI_OK);
    assert_int_equal(ev.op, PFI_OADR_OP_DELETE);
}

static void targets(void **s)
{
    (void)s;
    const char *res[] = {"site-7"};
    pfi_oadr_opts o = {.now = NOW, .version = PFI_OADR_V3_1, .ven_name = "ven-a"};
    ok("n31_create_targeted.json", &o);
    assert_int_equal(ev.targeted, 1);
    o.ven_name = "ven-b";
    ok("n31_create_targeted.json", &o);
    assert_int_equal(ev.targeted, 0);
    o.resources = res, o.nresources = 1; /* one of its resources */
    ok("n31_create_targeted.json", &o);
    assert_int_equal(ev.targeted, 1);
    ok("vtn_capacity_limit_event.json", &o); /* no targets: for everyone */
    assert_int_equal(ev.targeted, 1);
    pfi_error e;
    assert_int_not_equal(parse("n301_post_targeted.json", &o, &ev, &e), PFI_OK); /* 3.0.1 form */
    assert_non_null(strstr(e.msg, "3.1"));
    o.version = PFI_OADR_V3_0_1;
    o.nresources = 0;
    ok("n301_post_targeted.json", &o);
    assert_int_equal(ev.targeted, 0);
    o.ven_name = "ven-a";
    ok("n301_post_targeted.json", &o);
    assert_int_equal(ev.targeted, 1);
    o.ven_name = "ven-b", o.resources = res, o.nresources = 1;
    ok("n301_post_targeted.json", &o);
    assert_int_equal(ev.targeted, 1);
}

static void versions(void **s)
{
    (void)s;
    pfi_oadr_book b = {0};
    int rep;
    assert_int_equal(pfi_oadr_book_note(&b, "e", 100, 0, &rep), PFI_OADR_NEW);
    assert_int_equal(rep, 1);
    assert_int_equal(pfi_oadr_book_note(&b, "e", 100, 0, &rep), PFI_OADR_SAME); /* next poll */
    assert_int_equal(rep, 0);
    assert_int_equal(pfi_oadr_book_note(&b, "e", 200, 0, &rep), PFI_OADR_NEWER);
    assert_int_equal(rep, 1);
    assert_int_equal(pfi_oadr_book_note(&b, "e", 100, 0, &rep), PFI_OADR_OLDER);
    assert_int_equal(rep, 1);
    assert_int_equal(pfi_oadr_book_note(&b, "e", 100, 0, &rep), PFI_OADR_OLDER); /* once */
    assert_int_equal(rep, 0);
    assert_int_equal(pfi_oadr_book_note(&b, "f", 50, 0, &rep), PFI_OADR_NEW);
    /* a DELETE carrying the version we have deletes it, once */
    assert_int_equal(pfi_oadr_book_note(&b, "e", 200, 1, &rep), PFI_OADR_NEWER);
    assert_int_equal(pfi_oadr_book_note(&b, "e", 200, 1, &rep), PFI_OADR_SAME);
    assert_int_equal(pfi_oadr_book_note(&b, "e", 200, 0, &rep), PFI_OADR_SAME); /* stays gone */
    assert_int_equal(pfi_oadr_book_note(&b, "e", 300, 0, &rep), PFI_OADR_NEWER);
    pfi_oadr_book_free(&b);
}

/* issue 29: every duration form of the specification's pattern and of
 * openleadr-rs's serializer, calendar parts from the start in UTC */
static void durations(void **s)
{
    (void)s;
    double d, t0, t1;
    int open;
    struct {
        const char *from, *dur, *to; /* to NULL: until cancelled */
    } c[] = {
        {"2026-01-31T00:00:00Z", "P1M", "2026-02-28T00:00:00Z"}, /* day clamped */
        {"2024-01-31T12:00:00Z", "P1M", "2024-02-29T12:00:00Z"}, /* leap year */
        {"2024-02-29T00:00:00Z", "P1Y", "2025-02-28T00:00:00Z"},
        {"2026-03-01T00:00:00Z", "P0Y0M0DT1H0M0S", "2026-03-01T01:00:00Z"}, /* openleadr-rs */
        {"2026-03-01T00:00:00Z", "P0Y0M1DT0H15M0S", "2026-03-02T00:15:00Z"},
        {"2026-03-01T00:00:00Z", "P1Y2M3DT4H5M6S", "2027-05-04T04:05:06Z"},
        {"2026-03-01T00:00:00Z", "P2W", "2026-03-15T00:00:00Z"},
        {"2026-03-01T00:00:00Z", "PT15M", "2026-03-01T00:15:00Z"},
        {"2026-03-01T00:00:00Z", "PT0.5S", "2026-03-01T00:00:00.500Z"},
        {"2026-03-01T00:00:00Z", "P13M", "2027-04-01T00:00:00Z"},
        {"2026-03-01T00:00:00Z", "P7973Y", "9999-03-01T00:00:00Z"},
        {"2026-03-01T00:00:00Z", "P7974Y", NULL}, /* ends after 9999 */
        {"2026-03-01T00:00:00Z", "P9999Y", NULL},
        {"2026-03-01T00:00:00Z", "P9999Y0M0DT0H0M0S", NULL}, /* openleadr-rs */
        {"2026-03-01T00:00:00Z", "P99999999999999999999Y", NULL},
        {"2026-03-01T00:00:00Z", "PT99999999999999999999S", NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        assert_int_equal(pfi_rfc3339_parse(c[i].from, &t0), 0);
        if (pfi_oadr_duration(c[i].dur, t0, &d, &open)) fail_msg("%s refused", c[i].dur);
        if (!c[i].to) {
            if (!open) fail_msg("%s: not until cancelled (%g s)", c[i].dur, d);
            continue;
        }
        assert_int_equal(pfi_rfc3339_parse(c[i].to, &t1), 0);
        if (open || fabs(t0 + d - t1) > 1e-6)
            fail_msg("%s from %s: %g s, expected %g", c[i].dur, c[i].from, d, t1 - t0);
    }
    static const char *const bad_forms[] = {"-PT1H", "PT-1H", "P",    "PT",    "P1",
                                            "1H",    "P1H",   "PT1D", "P1.5Y", "P1Y1Y",
                                            "P1DT",  "P1e3D", "P1S",  "PT1M1H"};
    for (size_t i = 0; i < sizeof bad_forms / sizeof *bad_forms; i++)
        if (!pfi_oadr_duration(bad_forms[i], NOW, &d, &open)) fail_msg("%s accepted", bad_forms[i]);
}

static pfi_status parse_text(const char *j, const pfi_oadr_opts *o, pfi_error *e)
{
    return pfi_oadr_parse(j, strlen(j), o, &ev, e);
}

/* issue 29: "now" as VTNs store it, and on an interval (User Guide 7.3) */
static void now_forms(void **s)
{
    (void)s;
    pfi_oadr_opts o = {.now = NOW};
    static const char *const forms[] = {"0001-01-01", "0001-01-01T00:00:00", "0001-01-01T00:00:00Z",
                                        "0001-01-01T00:00:00+00:00", "0001-01-01T00:00:00.000Z"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char j[400];
        snprintf(j, sizeof j,
                 "{\"id\":\"n\",\"intervalPeriod\":{\"start\":\"%s\",\"duration\":\"PT5M\"},"
                 "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}",
                 forms[i]);
        pfi_error e;
        if (parse_text(j, &o, &e)) fail_msg("%s: %s", forms[i], e.msg);
        assert_near(ev.step[0].start, NOW, 1e-9);
    }
    /* the event starts at 12:00; interval 0 "now" = the event's start,
       interval 1 "now" = interval 0's end (not the wall clock) */
    const char *ug73 =
        "{\"id\":\"u\",\"intervalPeriod\":{\"start\":\"2026-05-01T12:00:00Z\",\"duration\":"
        "\"PT5M\"},\"intervals\":["
        "{\"id\":7,\"intervalPeriod\":{\"start\":\"0001-01-01T00:00:00Z\"},"
        "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]},"
        "{\"id\":9,\"intervalPeriod\":{\"start\":\"0001-01-01\",\"duration\":\"PT10M\"},"
        "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}]}";
    pfi_error e;
    if (parse_text(ug73, &o, &e)) fail_msg("%s", e.msg);
    double t;
    assert_int_equal(pfi_rfc3339_parse("2026-05-01T12:00:00Z", &t), 0);
    assert_int_equal(ev.nsteps, 2);
    assert_near(ev.step[0].start, t, 1e-9);
    assert_near(ev.step[1].start, t + 300, 1e-9);
    assert_near(ev.step[1].duration_s, 600, 1e-9);
    assert_int_equal(ev.interval_id[0], 7);
    assert_int_equal(ev.interval_id[1], 9);
    /* no event start: "now" on the first interval is the receipt */
    const char *nostart = "{\"id\":\"u\",\"intervals\":[{\"id\":0,\"intervalPeriod\":{\"start\":"
                          "\"0001-01-01\",\"duration\":\"PT1H\"},\"payloads\":[{\"type\":"
                          "\"SIMPLE\",\"values\":[1]}]}]}";
    assert_int_equal(parse_text(nostart, &o, NULL), PFI_OK);
    assert_near(ev.step[0].start, NOW, 1e-9);
}

/* issue 29 item 7 and 4: an interval without a duration, 0 kW, SIMPLE 2.0,
 * numeric resource names, units from the program, 672 intervals */
static void wire_forms(void **s)
{
    (void)s;
    pfi_oadr_opts o = {.now = NOW, .non_gpu_offset_kw = 1};
    const char *nodur = "{\"id\":\"a\",\"intervals\":["
                        "{\"id\":0,\"intervalPeriod\":{\"start\":\"2026-05-01T12:00:00Z\"},"
                        "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]},"
                        "{\"id\":1,\"intervalPeriod\":{\"start\":\"2026-05-01T12:20:00Z\"},"
                        "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2.0]}]}]}";
    pfi_error e;
    if (parse_text(nodur, &o, &e)) fail_msg("%s", e.msg);
    assert_near(ev.step[0].duration_s, 1200, 1e-9); /* until the next interval */
    assert_int_equal(ev.step[1].open_ended, 1);     /* the last: until cancelled */
    assert_int_equal(ev.step[1].level, 2);          /* 2.0 */
    const char *zero = "{\"id\":\"z\",\"intervalPeriod\":{\"start\":\"2026-05-01T12:00:00Z\","
                       "\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":"
                       "\"IMPORT_CAPACITY_LIMIT\",\"values\":[0]}]}]}";
    if (parse_text(zero, &o, &e)) fail_msg("%s", e.msg);
    assert_near(ev.step[0].target_kw, 0, 0); /* every job at its floor */
    assert_non_null(strstr(ev.note, "floor"));
    /* units from the program: 5000 W is 5 kW, not 5000 kW */
    const char *prog = "{\"id\":\"p\",\"intervalPeriod\":{\"start\":\"2026-05-01T12:00:00Z\","
                       "\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":"
                       "\"IMPORT_CAPACITY_LIMIT\",\"values\":[5000]}]}]}";
    o.program_descriptors = "[{\"payloadType\":\"IMPORT_CAPACITY_LIMIT\",\"units\":\"W\"}]";
    if (parse_text(prog, &o, &e)) fail_msg("%s", e.msg);
    assert_near(ev.step[0].target_kw, 4, 1e-9); /* 5 kW less the 1 kW offset */
    o.program_descriptors = "[{\"payloadType\":\"IMPORT_CAPACITY_LIMIT\",\"units\":\"KVA\"}]";
    assert_int_not_equal(parse_text(prog, &o, &e), PFI_OK);
    assert_int_equal(ev.reason, PFI_OADR_R_UNIT);
    o.program_descriptors = NULL;
    assert_int_equal(parse_text(prog, &o, NULL), PFI_OK);
    assert_near(ev.step[0].target_kw, 4999, 1e-9); /* no unit anywhere: KW */
    /* a resource named by a number */
    const char *res[] = {"42"};
    pfi_oadr_opts r = {.now = NOW, .ven_name = "ven", .resources = res, .nresources = 1};
    const char *num = "{\"id\":\"t\",\"targets\":[42],\"intervalPeriod\":{\"start\":"
                      "\"2026-05-01T12:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,"
                      "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}";
    assert_int_equal(parse_text(num, &r, NULL), PFI_OK);
    assert_true(ev.targeted);
    /* a week of 15-minute steps in openleadr-rs's full form: every interval kept */
    size_t cap = 200000, n = 0;
    char *big = malloc(cap);
    assert_non_null(big);
    n += (size_t)snprintf(big + n, cap - n,
                          "{\"id\":\"week\",\"intervalPeriod\":{\"start\":\"2026-05-01T00:00:00Z\","
                          "\"duration\":\"P0Y0M0DT0H15M0S\"},\"intervals\":[");
    for (int i = 0; i < 672; i++)
        n += (size_t)snprintf(big + n, cap - n,
                              "%s{\"id\":%d,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[%d]}]}",
                              i ? "," : "", i, 1 + i % 3);
    snprintf(big + n, cap - n, "]}");
    if (parse_text(big, &o, &e)) fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 672);
    assert_near(ev.step[671].start - ev.step[0].start, 671 * 900.0, 1e-6);
    assert_int_equal(ev.interval_id[671], 671);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(capacity_limit), cmocka_unit_test(simple),
        cmocka_unit_test(rejected),       cmocka_unit_test(operations),
        cmocka_unit_test(targets),        cmocka_unit_test(versions),
        cmocka_unit_test(durations),      cmocka_unit_test(now_forms),
        cmocka_unit_test(wire_forms)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
