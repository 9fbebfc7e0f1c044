/* test_state_files.c — the state files that guard caps (lease_file.h,
 * sweep_state.h, state_file.h): round trips, and every kind of damage a
 * crash or a hand edit leaves, each rejected with a message naming the file
 * and the field, the state left empty. */
#include "../testutil.h"

#include <stdio.h>
#include <unistd.h>

#include "lease_file.h"
#include "state_file.h"
#include "sweep_state.h"

static pfi_lease_state L, M;

static void lease_bad(const char *text, pfi_status code, const char *msg)
{
    pfi_error e;
    memset(&e, 0, sizeof e);
    assert_int_equal(pfi_lease_parse(text, strlen(text), "/var/lib/pfi/s.json", &L, &e), code);
    if (!strstr(e.msg, msg)) fail_msg("message '%s' lacks '%s'", e.msg, msg);
    assert_int_equal(L.n, 0);
    assert_int_equal(L.active, 0);
}

static void lease_file(void **st)
{
    (void)st;
    const char *ok = "{\"format_version\": 1, \"generation_max\": 5, \"lease\": {\"controller\": "
                     "\"c\", \"generation\": 4, "
                     "\"expires_at\": 1.5e9}, \"gpus\": [{\"uuid\": \"GPU-a\", \"baseline_w\": "
                     "700, \"cap_w\": 450.25}]}";
    assert_int_equal(pfi_lease_parse(ok, strlen(ok), "s.json", &L, NULL), PFI_OK);
    assert_int_equal(L.n, 1);
    assert_true(L.active && L.gpu[0].changed);
    assert_near(L.gpu[0].cap_w, 450.25, 0);
    char *t = pfi_lease_format(&L);
    assert_non_null(t);
    assert_int_equal(pfi_lease_parse(t, strlen(t), "s.json", &M, NULL), PFI_OK);
    free(t);
    assert_int_equal(M.generation_max, 5);
    assert_string_equal(M.controller, "c");
    assert_near(M.expires_at, 1.5e9, 0);
    /* truncated, empty, zeroed: the file and line */
    lease_bad(
        "{\"format_version\": 1, \"generation_max\": 5, \"gpus\": [{\"uuid\": \"GPU-a\", \"base",
        PFI_EPARSE, "/var/lib/pfi/s.json:1:");
    lease_bad("", PFI_EPARSE, "/var/lib/pfi/s.json:");
    lease_bad("[1, 2]", PFI_EINVAL, "expected a JSON object");
    lease_bad("{\"format_version\": 2, \"generation_max\": 0, \"gpus\": []}", PFI_EINVAL,
              "format_version");
    lease_bad("{\"format_version\": 1, \"generation_max\": -1, \"gpus\": []}", PFI_EINVAL,
              "generation_max");
    lease_bad("{\"format_version\": 1, \"generation_max\": 0, \"gpus\": {}}", PFI_EINVAL,
              "gpus: expected an array");
    lease_bad("{\"format_version\": 1, \"generation_max\": 0, \"lease\": 3, \"gpus\": []}",
              PFI_EINVAL, "lease: expected");
    lease_bad("{\"format_version\": 1, \"generation_max\": 1, \"lease\": {\"controller\": \"c\", "
              "\"generation\": 2, \"expires_at\": 1}, "
              "\"gpus\": []}",
              PFI_EINVAL, "lease.generation: 2 is above generation_max 1");
    lease_bad("{\"format_version\": 1, \"generation_max\": 0, \"gpus\": [{\"uuid\": \"GPU-a\", "
              "\"baseline_w\": -700, \"cap_w\": 400}]}",
              PFI_EINVAL, "gpus[0].baseline_w");
    lease_bad("{\"format_version\": 1, \"generation_max\": 0, \"gpus\": [{\"uuid\": \"GPU-a\", "
              "\"baseline_w\": 700, \"cap_w\": \"400\"}]}",
              PFI_EINVAL, "gpus[0].cap_w");
    lease_bad("{\"format_version\": 1, \"generation_max\": 0, \"gpus\": [{\"uuid\": \"GPU-a\", "
              "\"baseline_w\": 700, \"cap_w\": 400}, "
              "{\"uuid\": \"GPU-a\", \"baseline_w\": 700, \"cap_w\": 300}]}",
              PFI_EINVAL, "gpus[1].uuid: GPU-a is listed twice");
    char big[400];
    snprintf(big, sizeof big,
             "{\"format_version\": 1, \"generation_max\": 0, \"gpus\": [{\"uuid\": \"%0120d\", "
             "\"baseline_w\": 7, \"cap_w\": 4}]}",
             0);
    lease_bad(big, PFI_EINVAL, "gpus[0].uuid");
    /* more GPUs than the state holds */
    char *many = malloc(20000);
    size_t n = (size_t)sprintf(many, "{\"format_version\": 1, \"generation_max\": 0, \"gpus\": [");
    for (int i = 0; i <= PFI_LEASE_MAX_GPUS; i++)
        n += (size_t)sprintf(many + n, "%s{\"uuid\": \"GPU-%d\", \"baseline_w\": 7, \"cap_w\": 4}",
                             i ? "," : "", i);
    sprintf(many + n, "]}");
    lease_bad(many, PFI_ERANGE, "more than 64 GPUs");
    free(many);
}

static void sweep_bad(const char *text, const char *msg)
{
    pfi_sweep_state s;
    pfi_error e;
    memset(&e, 0, sizeof e);
    assert_int_not_equal(pfi_sweep_state_parse(text, strlen(text), "sweep-state", &s, &e), PFI_OK);
    if (!strstr(e.msg, msg)) fail_msg("message '%s' lacks '%s'", e.msg, msg);
    assert_int_equal(s.n, 0);
}

static void sweep_file(void **st)
{
    (void)st;
    pfi_sweep_state s, t;
    const char *ok = "{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": 3, \"uuid\": "
                     "\"GPU-a\", \"cap_w\": 650}]}";
    assert_int_equal(pfi_sweep_state_parse(ok, strlen(ok), "x", &s, NULL), PFI_OK);
    char *txt = pfi_sweep_state_format(&s);
    assert_int_equal(pfi_sweep_state_parse(txt, strlen(txt), "x", &t, NULL), PFI_OK);
    free(txt);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.gpu[0].index, 3);
    assert_int_equal(t.pid, 42);
    assert_near(t.gpu[0].cap_w, 650, 0);
    sweep_bad("{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": 3, \"uu",
              "sweep-state:1:");
    sweep_bad("{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": -3, \"uuid\": "
              "\"GPU-a\", \"cap_w\": 650}]}",
              "gpus[0].index");
    sweep_bad("{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": 3, \"uuid\": \"GPU-a\", "
              "\"cap_w\": 0}]}",
              "gpus[0].cap_w");
    sweep_bad("{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": 3, \"cap_w\": 600}]}",
              "gpus[0].uuid");
    sweep_bad("{\"format_version\": 1, \"gpus\": []}", "pid");
}

static void read_and_write(void **st)
{
    (void)st;
    char dir[] = "/tmp/pfi-state-XXXXXX", path[200];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/state.json", dir);
    char *text;
    size_t len;
    int found = 1;
    assert_int_equal(pfi_state_file_read(path, 100, &text, &len, &found, NULL), PFI_OK);
    assert_int_equal(found, 0);
    assert_null(text);
    assert_int_equal(pfi_state_file_write(path, "{\"a\": 1}", NULL), PFI_OK);
    assert_int_equal(pfi_state_file_read(path, 100, &text, &len, &found, NULL), PFI_OK);
    assert_int_equal(found, 1);
    assert_string_equal(text, "{\"a\": 1}");
    free(text);
    pfi_error e;
    assert_int_equal(pfi_state_file_read(path, 4, &text, &len, &found, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "larger than 4 bytes"));
    assert_int_equal(pfi_fsync_parent_dir("relative-name", NULL), PFI_OK); /* "." */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/file", dir);
    assert_int_equal(pfi_state_file_write(missing, "x", &e), PFI_EIO);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lease_file),
        cmocka_unit_test(sweep_file),
        cmocka_unit_test(read_and_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
