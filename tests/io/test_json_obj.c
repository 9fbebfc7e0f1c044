/* test_json_obj.c — the key-table reader of JSON objects (json_obj.h):
 * types, ranges (open and closed, integers compared as integers), strings
 * into buffers and copies, required / needed / null-as-absent keys,
 * unknown keys as errors, warnings or ignored, the reading orders (the
 * object's, or the table's with checks between keys) and the names in the
 * messages (dotted, run.json's quoted style, truncated keys and names). */
#include "../testutil.h"

#include <jansson.h>

#include "json_obj.h"

static json_t *parse(const char *s)
{
    json_error_t je;
    json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    if (!o) fail_msg("bad test JSON: %s", je.text);
    return o;
}

typedef struct rec {
    double x;
    long long n;
    int small, flag, seen_x;
    char name[8];
    char *copy;
} rec;

/* read s through the standard table; the status, the message in err */
static pfi_status read_rec(const char *s, rec *r, const pfi_jopts *o, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    const pfi_jkey keys[] = {
        {"x", PFI_J_NUMBER, PFI_J_REQUIRED | PFI_J_LO_OPEN, &r->x, .lo = 0, .hi = 10,
         .seen = &r->seen_x},
        {"n", PFI_J_INTEGER, 0, &r->n, .lo = 0, .hi = 9007199254740992.0,
         .expect = "expected an integer 0..2^53", .code = PFI_ERANGE},
        {"small", PFI_J_INTEGER, 0, &r->small, sizeof r->small, .lo = -1, .hi = 3},
        {"flag", PFI_J_BOOL, .dst = &r->flag},
        {"name", PFI_J_STRING, 0, r->name, .size = sizeof r->name},
        {"copy", PFI_J_STRING, PFI_J_NULL_ABSENT | PFI_J_NONEMPTY, .dst = &r->copy},
    };
    json_t *j = parse(s);
    pfi_status st = PFI_JSON_OBJ_READ(j, keys, o, err);
    json_decref(j);
    return st;
}

static void types_and_ranges(void **s)
{
    (void)s;
    rec r;
    pfi_error e;
    assert_int_equal(read_rec("{\"x\": 2.5, \"n\": 9007199254740992, \"small\": 3, \"flag\": true, "
                              "\"name\": \"abcdefg\", "
                              "\"copy\": \"c\"}",
                              &r, NULL, &e),
                     PFI_OK);
    assert_near(r.x, 2.5, 0);
    assert_true(r.n == 9007199254740992LL);
    assert_int_equal(r.small, 3);
    assert_int_equal(r.flag, 1);
    assert_string_equal(r.name, "abcdefg");
    assert_string_equal(r.copy, "c");
    assert_int_equal(r.seen_x, 1);
    free(r.copy);
    /* an integer is a number; a number is not an integer */
    assert_int_equal(read_rec("{\"x\": 10}", &r, NULL, &e), PFI_OK);
    assert_int_equal(read_rec("{\"x\": 1, \"small\": 1.0}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "small: expected an integer in -1..3");
    /* lo is open, hi closed */
    assert_int_equal(read_rec("{\"x\": 0}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "x: expected a number in 0..10");
    assert_int_equal(read_rec("{\"x\": 10.000001}", &r, NULL, &e), PFI_EINVAL);
    assert_int_equal(read_rec("{\"x\": \"1\"}", &r, NULL, &e), PFI_EINVAL);
    /* 2^53 + 1 is above 2^53, though a double cannot tell */
    assert_int_equal(read_rec("{\"x\": 1, \"n\": 9007199254740993}", &r, NULL, &e), PFI_ERANGE);
    assert_string_equal(e.msg, "n: expected an integer 0..2^53");
    assert_int_equal(read_rec("{\"x\": 1, \"flag\": 1}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "flag: expected true or false");
    /* a string must fit its buffer with the NUL */
    assert_int_equal(read_rec("{\"x\": 1, \"name\": \"abcdefgh\"}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "name: expected a string (at most 7 characters)");
    assert_int_equal(read_rec("{\"x\": 1, \"copy\": \"\"}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "copy: expected a non-empty string");
}

static void missing_and_null(void **s)
{
    (void)s;
    rec r;
    pfi_error e;
    assert_int_equal(read_rec("{}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "x: missing");
    assert_int_equal(r.seen_x, 0);
    /* null is absent only where the entry says so */
    assert_int_equal(read_rec("{\"x\": 1, \"copy\": null}", &r, NULL, &e), PFI_OK);
    assert_null(r.copy);
    assert_int_equal(read_rec("{\"x\": null}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "x: expected a number in 0..10");
    /* needed: absent reads as the wrong type */
    double v = 0;
    pfi_jkey k[] = {
        {"v", PFI_J_NUMBER, PFI_J_NEEDED, &v, .lo = 0, .hi = 1, .expect = "expected a fraction"}};
    json_t *j = parse("{}");
    assert_int_equal(PFI_JSON_OBJ_READ(j, k, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "v: expected a fraction");
    json_decref(j);
    j = parse("[]");
    assert_int_equal(PFI_JSON_OBJ_READ(j, k, NULL, &e), PFI_EINVAL); /* not an object */
    json_decref(j);
}

static int nwarn;
static char lastwarn[256];
static void on_warn(void *ud, const char *m)
{
    (void)ud;
    nwarn++;
    snprintf(lastwarn, sizeof lastwarn, "%s", m);
}

static void unknown_keys(void **s)
{
    (void)s;
    rec r;
    pfi_error e;
    assert_int_equal(read_rec("{\"x\": 1, \"zz\": 1}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "zz: unknown key");
    pfi_jopts o = {.prefix = "gpus[2]", .unknown_text = "unknown field (expected x)"};
    assert_int_equal(read_rec("{\"x\": 1, \"zz\": 1}", &r, &o, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "gpus[2].zz: unknown field (expected x)");
    /* object order: the first bad key in the object is the error */
    assert_int_equal(read_rec("{\"zz\": 1, \"x\": -1}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "zz: unknown key");
    assert_int_equal(read_rec("{\"x\": -1, \"zz\": 1}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "x: expected a number in 0..10");
    /* a misspelt key: the closest of the table is suggested (pfi_opts_suggest) */
    assert_int_equal(read_rec("{\"x\": 1, \"flga\": true}", &r, NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "flga: unknown key; did you mean 'flag'?");
    assert_int_equal(read_rec("{\"x\": 1, \"nmae\": \"a\"}", &r, &o, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "gpus[2].nmae: unknown field (expected x); did you mean 'name'?");
    /* as warnings: all of them, then the keys */
    pfi_log log = {on_warn, NULL, 0};
    nwarn = 0;
    pfi_jopts w = {.prefix = "d/run.json",
                   .quoted = 1,
                   .unknown = PFI_J_UNKNOWN_WARN,
                   .unknown_text = "ignored",
                   .log = &log};
    assert_int_equal(read_rec("{\"a\": 1, \"b\": 2, \"x\": 1}", &r, &w, &e), PFI_OK);
    assert_int_equal(nwarn, 2);
    assert_string_equal(lastwarn, "d/run.json: unknown key 'b' ignored");
    assert_int_equal(read_rec("{\"smal\": 1, \"x\": 1}", &r, &w, &e), PFI_OK);
    assert_string_equal(lastwarn, "d/run.json: unknown key 'smal' ignored; did you mean 'small'?");
    pfi_jopts ig = {.unknown = PFI_J_UNKNOWN_IGNORE};
    assert_int_equal(read_rec("{\"a\": 1, \"x\": 1}", &r, &ig, &e), PFI_OK);
}

static pfi_status check_between(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                pfi_error *err)
{
    (void)k;
    assert_null(v);
    int *calls = ud;
    (*calls)++;
    return pfi_errorf(err, PFI_EINVAL, "%s: the check", name);
}

static void table_order(void **s)
{
    (void)s;
    double a = 0, b = 0;
    int calls = 0;
    const pfi_jkey keys[] = {
        {"a", PFI_J_NUMBER, 0, &a, .lo = 0, .hi = 1},
        {NULL, .fn = check_between},
        {"b", PFI_J_NUMBER, PFI_J_REQUIRED, &b, .lo = 0, .hi = 1},
    };
    pfi_error e;
    pfi_jopts o = {.prefix = "r.json", .quoted = 1, .table_order = 1, .ud = &calls};
    json_t *j = parse("{\"b\": 5, \"a\": 7}");
    /* the table's order: a before b, whatever the object's */
    assert_int_equal(PFI_JSON_OBJ_READ(j, keys, &o, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "r.json: key 'a': expected a number in 0..1");
    assert_int_equal(calls, 0);
    json_decref(j);
    j = parse("{\"b\": 5, \"a\": 0.5}");
    assert_int_equal(PFI_JSON_OBJ_READ(j, keys, &o, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "r.json: the check"); /* the check runs in its place, before b */
    assert_int_equal(calls, 1);
    json_decref(j);
    /* in the object's order a check entry is not run */
    o.table_order = 0;
    j = parse("{\"a\": 0.5}");
    assert_int_equal(PFI_JSON_OBJ_READ(j, keys, &o, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "r.json: key 'b': missing");
    assert_int_equal(calls, 1);
    json_decref(j);
}

static void names(void **s)
{
    (void)s;
    char buf[PFI_ERROR_MSG_MAX];
    pfi_jopts o = {.prefix = "agents[3]", .key_max = 4};
    assert_string_equal(pfi_json_obj_name(&o, "abcdefgh", buf, sizeof buf), "agents[3].abcd");
    pfi_jopts n = {.prefix = "gpus[0]", .name_max = 10};
    assert_string_equal(pfi_json_obj_name(&n, "abcdefgh", buf, sizeof buf), "gpus[0].ab");
    assert_string_equal(pfi_json_obj_name(NULL, "k", buf, sizeof buf), "k");
    pfi_jopts q = {.prefix = "x/run.json", .quoted = 1};
    assert_string_equal(pfi_json_obj_name(&q, "gpus", buf, sizeof buf), "x/run.json: key 'gpus'");
    /* one value, as an array element */
    double v;
    pfi_jkey one = {NULL, PFI_J_NUMBER, 0, &v, .lo = 0, .hi = 90};
    pfi_error e;
    json_t *x = json_real(95);
    assert_int_equal(pfi_json_value_read(x, &one, "levels_pct[]", NULL, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "levels_pct[]: expected a number in 0..90");
    json_decref(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(types_and_ranges),
        cmocka_unit_test(missing_and_null),
        cmocka_unit_test(unknown_keys),
        cmocka_unit_test(table_order),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
