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
    assert_string_equal(pfi_oadr_reason_name(PFI_OADR_R_UNIT), "unit");
    assert_string_equal(pfi_oadr_reason_name(PFI_OADR_R_STEPS), "steps");
    for (int r = 0; r < PFI_OADR_NREASONS; r++) /* every reason its own label */
        for (int q = 0; q < r; q++)
            assert_string_not_equal(pfi_oadr_reason_name((pfi_oadr_reason)r),
                                    pfi_oadr_reason_name((pfi_oadr_reason)q));
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

/* issue 42, reading: metadata times without an offset, as the OpenADR
 * Alliance's reference VTN (oadr3-org/openadr3-vtn-reference-implementation)
 * stamps them, are read as UTC and flagged; starts keep the strict rule */
static void local_timestamps(void **s)
{
    (void)s;
    pfi_oadr_opts o = {.now = NOW};
    const char *fmt = "{\"id\":\"ref\",\"createdDateTime\":\"%s\",\"modificationDateTime\":\"%s\","
                      "\"intervalPeriod\":{\"start\":\"%s\",\"duration\":\"PT1H\"},\"intervals\":"
                      "[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}";
    struct {
        const char *created, *modified;
        int local;
        const char *utc; /* what modificationDateTime means */
    } c[] = {
        {"2026-03-20 14:58:51", "2026-03-20 14:58:51", 1, "2026-03-20T14:58:51Z"},
        {"2026-03-20T14:58:51", "2026-03-20T14:58:51.250", 1, "2026-03-20T14:58:51.250Z"},
        {"2026-03-20T14:58:51Z", "2026-03-20 15:00:00", 1, "2026-03-20T15:00:00Z"},
        {"2026-03-20 14:58:51", "2026-03-20T15:00:00+01:00", 1, "2026-03-20T14:00:00Z"},
        {"2026-03-20T14:58:51Z", "2026-03-20T15:00:00Z", 0, "2026-03-20T15:00:00Z"},
        {"14:13:26", "2026-03-20T15:00:00Z", 0, "2026-03-20T15:00:00Z"}, /* User Guide 7.2-4 */
    };
    char j[600];
    pfi_error e;
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        snprintf(j, sizeof j, fmt, c[i].created, c[i].modified, "2026-03-21T00:00:00Z");
        if (parse_text(j, &o, &e)) fail_msg("%s / %s: %s", c[i].created, c[i].modified, e.msg);
        assert_int_equal(ev.local_timestamp, c[i].local);
        assert_near(ev.modified, t3339(c[i].utc), 1e-6);
        assert_int_equal(ev.nsteps, 1);
    }
    /* a bare time is no version; a start without an offset stays refused */
    snprintf(j, sizeof j, fmt, "2026-03-20 14:58:51", "14:58:51", "2026-03-21T00:00:00Z");
    assert_int_not_equal(parse_text(j, &o, &e), PFI_OK);
    assert_int_equal(ev.reason, PFI_OADR_R_MALFORMED);
    assert_non_null(strstr(e.msg, "modificationDateTime"));
    snprintf(j, sizeof j, fmt, "2026-03-20 14:58:51", "2026-03-20 14:58:51", "2026-03-21 00:00:00");
    assert_int_not_equal(parse_text(j, &o, &e), PFI_OK);
    assert_int_equal(ev.reason, PFI_OADR_R_MALFORMED);
    assert_non_null(strstr(e.msg, "intervalPeriod.start"));
    const char *own = "{\"id\":\"ref\",\"modificationDateTime\":\"2026-03-20 14:58:51\","
                      "\"intervals\":[{\"id\":0,\"intervalPeriod\":{\"start\":\"2026-03-21T00:00:"
                      "00\",\"duration\":\"PT1H\"},\"payloads\":[{\"type\":\"SIMPLE\",\"values\":"
                      "[1]}]}]}";
    assert_int_not_equal(parse_text(own, &o, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "intervals[0].intervalPeriod.start"));
    /* a DELETE notification of such an event: its version is read too */
    const char *del = "{\"objectType\":\"EVENT\",\"operation\":\"DELETE\",\"object\":{\"id\":"
                      "\"ref\",\"modificationDateTime\":\"2026-03-20 16:00:00\"}}";
    assert_int_equal(parse_text(del, &o, &e), PFI_OK);
    assert_int_equal(ev.op, PFI_OADR_OP_DELETE);
    assert_int_equal(ev.local_timestamp, 1);
    assert_near(ev.modified, t3339("2026-03-20T16:00:00Z"), 1e-6);
}

/* one event around given intervals (a JSON list's inside) and top-level
 * keys (",\"duration\":..." or "") */
static pfi_status event_of(const char *id, const char *start, const char *period_dur,
                           const char *intervals, const char *extra, const pfi_oadr_opts *o,
                           pfi_error *e)
{
    size_t cap = strlen(intervals) + 600;
    char *j = malloc(cap);
    assert_non_null(j);
    snprintf(j, cap,
             "{\"id\":\"%s\",\"intervalPeriod\":{\"start\":\"%s\"%s%s%s},\"intervals\":[%s]%s}", id,
             start, period_dur ? ",\"duration\":\"" : "", period_dur ? period_dur : "",
             period_dur ? "\"" : "", intervals, extra);
    pfi_status st = pfi_oadr_parse(j, strlen(j), o, &ev, e);
    free(j);
    return st;
}

static void refused(pfi_status st, pfi_oadr_reason r, const pfi_error *e, const char *text)
{
    if (st == PFI_OK) fail_msg("accepted (expected %s)", pfi_oadr_reason_name(r));
    if (ev.reason != r || !strstr(e->msg, text) || strchr(e->msg, '\n'))
        fail_msg("reason %s, '%s' (expected %s, '%s')", pfi_oadr_reason_name(ev.reason), e->msg,
                 pfi_oadr_reason_name(r), text);
}

/* issue 42, reading: multi-value payloads are consecutive sub-intervals
 * (User Guide 7.3, Example 7.3-1's 3 values over PT3H; hupe1980/openadr
 * src/core/interval.rs IntervalExpander::split) */
static void multi_value(void **s)
{
    (void)s;
    pfi_oadr_opts o = {.now = NOW, .non_gpu_offset_kw = 1};
    pfi_error e;
    const char *three = "{\"id\":5,\"intervalPeriod\":{\"start\":\"2025-06-25T00:00:00.000Z\","
                        "\"duration\":\"PT3H\"},\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
                        "\"values\":[10,8,6]},{\"type\":\"PRICE\",\"values\":[0.17]}]},"
                        "{\"id\":6,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}";
    if (event_of("mv", "2025-06-25T00:00:00Z", "PT1H", three, "", &o, &e)) fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 4);
    const double kw[] = {9, 7, 5};
    for (int k = 0; k < 3; k++) {
        char id[16];
        snprintf(id, sizeof id, "mv.%d", k);
        assert_string_equal(ev.step[k].id, id);
        assert_near(ev.step[k].start, t3339("2025-06-25T00:00:00Z") + 3600.0 * k, 1e-6);
        assert_near(ev.step[k].duration_s, 3600, 1e-6);
        assert_near(ev.step[k].target_kw, kw[k], 1e-9);
        assert_int_equal(ev.interval_id[k], 5); /* the REPORT's interval */
    }
    /* the next interval starts where the whole interval ended */
    assert_near(ev.step[3].start, t3339("2025-06-25T03:00:00Z"), 1e-6);
    assert_int_equal(ev.interval_id[3], 6);
    /* n is the acted-on payload's: the capacity limit's 2, not SIMPLE's 4 or
       EXPORT_CAPACITY_LIMIT's 3; SIMPLE alone with other multi-value
       payloads beside it is not split by them */
    const char *two = "{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1,2,3,0]},"
                      "{\"type\":\"EXPORT_CAPACITY_LIMIT\",\"values\":[1,2,3]},"
                      "{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[20,30]}]}";
    if (event_of("mv", "2025-06-25T00:00:00Z", "PT1H", two, "", &o, &e)) fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 2);
    assert_near(ev.step[1].start - ev.step[0].start, 1800, 1e-6);
    assert_near(ev.step[1].target_kw, 29, 1e-9);
    const char *other = "{\"id\":0,\"payloads\":[{\"type\":\"PRICE\",\"values\":[0.17,0.03,0.11]"
                        "},{\"type\":\"SIMPLE\",\"values\":[2]}]}";
    if (event_of("mv", "2025-06-25T00:00:00Z", "PT3H", other, "", &o, &e)) fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 1);
    assert_string_equal(ev.step[0].id, "mv");
    assert_near(ev.step[0].duration_s, 3 * 3600, 1e-6);
    const char *simple4 = "{\"id\":3,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1,2,3,0]}]}";
    if (event_of("mv", "2025-06-25T00:00:00Z", "PT1H", simple4, "", &o, &e)) fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 4);
    assert_int_equal(ev.step[2].level, 3);
    assert_near(ev.step[3].start, t3339("2025-06-25T00:45:00Z"), 1e-6);
    /* refused: several values on an interval until cancelled (P9999Y, or
       the last without a duration), sub-intervals under 1 s, a bad value */
    const char *v2 = "{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1,2]}]}";
    refused(event_of("mv", "2025-06-25T00:00:00Z", "P9999Y", v2, "", &o, &e), PFI_OADR_R_DURATION,
            &e, "until cancelled");
    refused(event_of("mv", "2025-06-25T00:00:00Z", NULL, v2, "", &o, &e), PFI_OADR_R_DURATION, &e,
            "intervals[0].payloads[0].values");
    const char *v3 = "{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1,2,3]}]}";
    refused(event_of("mv", "2025-06-25T00:00:00Z", "PT2S", v3, "", &o, &e), PFI_OADR_R_DURATION, &e,
            "under 1 s");
    const char *bad1 = "{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
                       "\"values\":[5,-1]}]}";
    refused(event_of("mv", "2025-06-25T00:00:00Z", "PT1H", bad1, "", &o, &e), PFI_OADR_R_PAYLOAD,
            &e, "values[1]");
    /* 600 intervals of 2 values: 1200 steps, past PFI_OADR_MAX_STEPS */
    size_t cap = 64 * 700, n = 0;
    char *many = malloc(cap);
    assert_non_null(many);
    for (int i = 0; i < 600; i++)
        n += (size_t)snprintf(many + n, cap - n,
                              "%s{\"id\":%d,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1,2]}]}",
                              i ? "," : "", i);
    refused(event_of("mv", "2025-06-25T00:00:00Z", "PT1H", many, "", &o, &e), PFI_OADR_R_STEPS, &e,
            "more than 1000 steps");
    free(many);
}

/* one hourly SIMPLE interval per level in levels (ids 0..), as JSON */
static char *hourly(int n)
{
    size_t cap = 80 * (size_t)n + 1, k = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    b[0] = '\0';
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(b + k, cap - k,
                              "%s{\"id\":%d,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[%d]}]}",
                              i ? "," : "", i, i % 4);
    return b;
}

/* issue 42, reading: the event-level duration (User Guide 7.3,
 * "event.duration": shorter truncates, equal changes nothing, longer loops;
 * hupe1980/openadr src/core/interval.rs expand_window) */
static void event_duration(void **s)
{
    (void)s;
    double t0 = t3339("2026-06-01T00:00:00Z");
    pfi_oadr_opts o = {.now = t0 - 3600};
    pfi_error e;
    char *h24 = hourly(24);
    /* "24 hourly price intervals but duration = P12H effectively omits the
       last 12 intervals" (the User Guide's P12H written as ISO 8601 wants it) */
    if (event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":\"PT12H\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 12);
    assert_string_equal(ev.step[11].id, "d.11");
    assert_near(pfi_grid_event_end(&ev.step[11]), t0 + 12 * 3600, 1e-6);
    assert_near(ev.expanded_to_s, 0, 0);
    /* shorter, not on a boundary: the step across its end shortened */
    if (event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":\"PT2H30M\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 3);
    assert_near(ev.step[2].duration_s, 1800, 1e-6);
    assert_non_null(strstr(ev.note, "21 steps after its end dropped"));
    /* equal: nothing changes */
    if (event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":\"P1D\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 24);
    assert_near(pfi_grid_event_end(&ev.step[23]), t0 + 86400, 1e-6);
    /* longer: the intervals repeat, step starts continuing, ids going on
       (ID.24 is interval 0 again, its interval id 0 for the REPORT); the
       last pass cut by the end */
    if (event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":\"P2DT1H30M\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 50);
    for (size_t k = 0; k < 50; k++) {
        char id[16];
        snprintf(id, sizeof id, "d.%zu", k);
        assert_string_equal(ev.step[k].id, id);
        assert_near(ev.step[k].start, t0 + 3600.0 * (double)k, 1e-6);
        assert_int_equal(ev.interval_id[k], (long long)(k % 24));
        assert_int_equal(ev.step[k].level, (int)(k % 24) % 4);
    }
    assert_near(ev.step[49].duration_s, 1800, 1e-6);
    assert_near(ev.expanded_to_s, 0, 0); /* within 7 days: all of it */
    /* one interval of one step that loops: ID.N, never the bare id */
    const char *one = "{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}";
    if (event_of("d", "2026-06-01T00:00:00Z", "PT1H", one, ",\"duration\":\"PT3H\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 3);
    assert_string_equal(ev.step[0].id, "d.0");
    assert_string_equal(ev.step[2].id, "d.2");
    /* an interval until cancelled: a finite duration truncates it, P9999Y
       changes nothing */
    if (event_of("d", "2026-06-01T00:00:00Z", "P9999Y", one, ",\"duration\":\"PT2H\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.step[0].open_ended, 0);
    assert_near(ev.step[0].duration_s, 7200, 1e-6);
    assert_string_equal(ev.step[0].id, "d");
    if (event_of("d", "2026-06-01T00:00:00Z", "P9999Y", one, ",\"duration\":\"P9999Y\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.step[0].open_ended, 1);
    assert_near(ev.expanded_to_s, 0, 0);
    /* "duration": null is no duration */
    if (event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":null", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 24);
    /* refused: not a duration, under 1 s, ends before any payload pfi acts on */
    refused(event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":\"P1X\"", &o, &e),
            PFI_OADR_R_DURATION, &e, "duration: P1X");
    refused(event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":\"PT0S\"", &o, &e),
            PFI_OADR_R_DURATION, &e, "duration");
    refused(event_of("d", "2026-06-01T00:00:00Z", "PT1H", h24, ",\"duration\":3600", &o, &e),
            PFI_OADR_R_MALFORMED, &e, "duration");
    const char *gap = "{\"id\":0,\"payloads\":[{\"type\":\"PRICE\",\"values\":[1]}]},"
                      "{\"id\":1,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}";
    refused(event_of("d", "2026-06-01T00:00:00Z", "PT1H", gap, ",\"duration\":\"PT1H\"", &o, &e),
            PFI_OADR_R_PAYLOAD, &e, "duration");
    free(h24);
}

/* issue 42, reading: a loop to the end of time (P9999Y: "the set of
 * intervals repeat indefinitely", User Guide 7.3) expands 7 days past
 * opts->now, skips the passes that ended, and numbers its steps past 1000 */
static void endless_loop(void **s)
{
    (void)s;
    double t0 = t3339("2026-01-01T00:00:00Z");
    pfi_oadr_opts o = {.now = t0 + 2400.5 * 3600}; /* 100 days and 30 minutes later */
    pfi_error e;
    const char *one = "{\"id\":7,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}";
    if (event_of("inf", "2026-01-01T00:00:00Z", "PT1H", one, ",\"duration\":\"P9999Y\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(ev.nsteps, 169); /* the pass running now, then 7 days of them */
    assert_near(ev.expanded_to_s, o.now + PFI_OADR_LOOP_AHEAD_S, 1e-6);
    for (size_t k = 0; k < ev.nsteps; k++) {
        char id[24];
        snprintf(id, sizeof id, "inf.%zu", 2400 + k);
        assert_string_equal(ev.step[k].id, id);
        assert_near(ev.step[k].start, t0 + 3600.0 * (double)(2400 + k), 1e-6);
        assert_int_equal(ev.interval_id[k], 7);
    }
    /* a poll a day later: the same ids for the same times, 7 days on */
    o.now += 86400;
    if (event_of("inf", "2026-01-01T00:00:00Z", "PT1H", one, ",\"duration\":\"P9999Y\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_string_equal(ev.step[0].id, "inf.2424");
    assert_near(ev.step[0].start, t0 + 3600.0 * 2424, 1e-6);
    assert_near(pfi_grid_event_end(&ev.step[ev.nsteps - 1]), o.now + 7 * 86400 + 1800, 1e-6);
    /* the specification's capacity example looping since 2023-02-10: read
       at NOW, 7 days of 30-minute steps, every id its own */
    pfi_oadr_opts on = {.now = NOW};
    if (parse("loop_event_duration.json", &on, &ev, &e)) fail_msg("%s", e.msg);
    assert_true(ev.nsteps > 300 && ev.nsteps <= 340);
    assert_near(ev.expanded_to_s, NOW + PFI_OADR_LOOP_AHEAD_S, 1e-6);
    for (size_t k = 1; k < ev.nsteps; k++) {
        assert_near(ev.step[k].start - ev.step[k - 1].start, 1800, 1e-6);
        assert_int_equal(ev.interval_id[k], 1 - ev.interval_id[k - 1]);
        unsigned long a = strtoul(strrchr(ev.step[k - 1].id, '.') + 1, NULL, 10);
        unsigned long b = strtoul(strrchr(ev.step[k].id, '.') + 1, NULL, 10);
        assert_int_equal(b, a + 1);
        assert_true(a > 1000);
    }
    assert_true(ev.step[0].start <= NOW && NOW < pfi_grid_event_end(&ev.step[1]));
    /* 5-minute steps for 7 days: 2016, past PFI_OADR_MAX_STEPS */
    refused(
        event_of("inf", "2026-01-01T00:00:00Z", "PT5M", one, ",\"duration\":\"P9999Y\"", &o, &e),
        PFI_OADR_R_STEPS, &e, "duration: P9999Y");
    /* a long finite loop is expanded 7 days ahead too */
    if (event_of("inf", "2026-01-01T00:00:00Z", "PT1H", one, ",\"duration\":\"P365D\"", &o, &e))
        fail_msg("%s", e.msg);
    assert_near(ev.expanded_to_s, o.now + PFI_OADR_LOOP_AHEAD_S, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(capacity_limit), cmocka_unit_test(simple),
        cmocka_unit_test(rejected),       cmocka_unit_test(operations),
        cmocka_unit_test(targets),        cmocka_unit_test(versions),
        cmocka_unit_test(durations),      cmocka_unit_test(now_forms),
        cmocka_unit_test(wire_forms),     cmocka_unit_test(local_timestamps),
        cmocka_unit_test(multi_value),    cmocka_unit_test(event_duration),
        cmocka_unit_test(endless_loop)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
