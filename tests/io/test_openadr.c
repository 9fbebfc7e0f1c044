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
    bad("bad_duration_8d.json", PFI_OADR_R_DURATION, "P8D");
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
         PFI_OADR_R_DURATION, "intervalPeriod.duration"},
        {"{\"id\":\"a\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
         "\"P10000Y\"},\"intervals\":[{\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}",
         PFI_OADR_R_DURATION, "intervalPeriod.duration"},
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
         PFI_OADR_R_DURATION, "P9999Y"},
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(capacity_limit), cmocka_unit_test(simple),  cmocka_unit_test(rejected),
        cmocka_unit_test(operations),     cmocka_unit_test(targets), cmocka_unit_test(versions)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
