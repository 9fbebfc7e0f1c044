/* test_lease.c — the agent's lease rules (stale and busy writes, take-over
 * by a higher generation, generation_max after expiry), the state file
 * round trip and its errors, and the PUT /v1/caps body parser (every field
 * checked, unknown keys rejected, errors naming the field). */
#include "../testutil.h"
#include <jansson.h>

#include <stdio.h>
#include <unistd.h>

#include "caps_request.h"
#include "lease.h"

static void rules(void **s)
{
    (void)s;
    pfi_lease_state L;
    pfi_lease_init(&L);
    pfi_error why;
    assert_int_equal(pfi_lease_admit(&L, "a", 0, 100, &why), PFI_LEASE_ADMIT);
    pfi_lease_grant(&L, "a", 5, 30, 100);
    assert_true(pfi_lease_live(&L, 129.9));
    assert_false(pfi_lease_live(&L, 130));
    assert_int_equal(pfi_lease_admit(&L, "a", 5, 110, &why), PFI_LEASE_ADMIT); /* renewal */
    assert_int_equal(pfi_lease_admit(&L, "b", 4, 110, &why), PFI_LEASE_STALE); /* older */
    assert_non_null(strstr(why.msg, "older"));
    assert_int_equal(pfi_lease_admit(&L, "b", 5, 110, &why),
                     PFI_LEASE_BUSY); /* same generation, other controller */
    assert_non_null(strstr(why.msg, "holds the lease"));
    assert_int_equal(pfi_lease_admit(&L, "b", 6, 110, &why), PFI_LEASE_ADMIT); /* take-over */
    pfi_lease_grant(&L, "b", 6, 30, 110);
    assert_int_equal(L.generation_max, 6);
    /* after expiry: anything not older than the highest accepted */
    assert_int_equal(pfi_lease_admit(&L, "a", 5, 200, &why), PFI_LEASE_STALE);
    assert_non_null(strstr(why.msg, "generation_max"));
    assert_int_equal(pfi_lease_admit(&L, "a", 6, 200, &why), PFI_LEASE_ADMIT);
}

/* issue 14 item 6: one write (2^53) raised generation_max out of every
 * controller's reach. No write may raise it more than a step above the
 * highest accepted, live lease or not; at most a step is admitted. */
static void generation_step(void **s)
{
    (void)s;
    pfi_lease_state L;
    pfi_lease_init(&L);
    pfi_error why;
    const long long step = PFI_LEASE_GENERATION_STEP;
    assert_int_equal(step, 1LL << 20);
    assert_int_equal(pfi_lease_admit(&L, "x", 1LL << 53, 100, &why), PFI_LEASE_TOO_FAR);
    assert_non_null(strstr(
        why.msg, "generation: 9007199254740992 is more than 1048576 above generation_max 0"));
    assert_int_equal(pfi_lease_admit(&L, "x", step + 1, 100, &why), PFI_LEASE_TOO_FAR);
    assert_int_equal(pfi_lease_admit(&L, "x", step, 100, &why), PFI_LEASE_ADMIT);
    pfi_lease_grant(&L, "a", 7, 30, 100);
    /* live lease: a take-over is bounded the same way */
    assert_int_equal(pfi_lease_admit(&L, "x", 7 + step + 1, 110, &why), PFI_LEASE_TOO_FAR);
    assert_int_equal(pfi_lease_admit(&L, "x", 7 + step, 110, &why), PFI_LEASE_ADMIT);
    pfi_lease_grant(&L, "x", 7 + step, 30, 110);
    assert_int_equal(L.generation_max, 7 + step);
    /* after expiry: from the new generation_max, never from the old one */
    assert_int_equal(pfi_lease_admit(&L, "a", 8, 200, &why), PFI_LEASE_STALE);
    assert_int_equal(pfi_lease_admit(&L, "a", 7 + step + 1, 200, &why), PFI_LEASE_ADMIT);
    assert_int_equal(pfi_lease_admit(&L, "a", 7 + 2 * step + 1, 200, &why), PFI_LEASE_TOO_FAR);
}

static void state_file(void **s)
{
    (void)s;
    char path[] = "/tmp/pfi-lease-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pfi_lease_state L, M;
    pfi_lease_init(&L);
    pfi_lease_grant(&L, "ctl", 9, 60, 1000); /* monotonic 1000: ends at 1060 */
    assert_near(L.expires_mono, 1060, 1e-9);
    pfi_lease_wall_from_mono(&L, 5000, 1000); /* the wall clock reads 5000 */
    pfi_lease_gpu *g = pfi_lease_gpu_get(&L, "GPU-a");
    g->changed = 1;
    g->baseline_w = 700;
    g->cap_w = 420;
    pfi_lease_gpu_get(&L, "GPU-b"); /* unchanged: not saved */
    assert_int_equal(pfi_lease_save(&L, path, NULL), PFI_OK);
    int found;
    assert_int_equal(pfi_lease_load(path, &M, &found, NULL), PFI_OK);
    assert_true(found);
    assert_true(M.active);
    assert_string_equal(M.controller, "ctl");
    assert_int_equal(M.generation, 9);
    assert_near(M.expires_at, 5060, 1e-9);   /* the file keeps wall-clock time */
    pfi_lease_mono_from_wall(&M, 8600, 300); /* after a reboot, the wall clock an hour on */
    assert_near(M.expires_mono, 300 - 3540, 1e-9);
    assert_int_equal(M.n, 1);
    assert_string_equal(M.gpu[0].uuid, "GPU-a");
    assert_near(M.gpu[0].baseline_w, 700, 1e-9);
    assert_near(M.gpu[0].cap_w, 420, 1e-9);
    static const char *const bad[][2] = {
        {"{", "state"},
        {"{\"format_version\":2,\"generation_max\":0,\"lease\":null,\"gpus\":[]}",
         "format_version"},
        {"{\"format_version\":1,\"generation_max\":0,\"lease\":null,\"gpus\":[{\"uuid\":\"x\","
         "\"baseline_w\":-1,\"cap_w\":300}]}",
         "gpus[0]"},
        {"{\"format_version\":1,\"generation_max\":0,\"lease\":{\"controller\":\"c\"},\"gpus\":[]}",
         "lease"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        FILE *f = fopen(path, "w");
        fputs(bad[i][0], f);
        fclose(f);
        pfi_error e;
        assert_int_not_equal(pfi_lease_load(path, &M, &found, &e), PFI_OK);
        if (!strstr(e.msg, path) || (strcmp(bad[i][1], "state") && !strstr(e.msg, bad[i][1])))
            fail_msg("'%s' -> '%s'", bad[i][0], e.msg);
    }
    unlink(path);
    assert_int_equal(pfi_lease_load(path, &M, &found, NULL), PFI_OK);
    assert_false(found);
}

static void caps_body(void **s)
{
    (void)s;
    const char *ok = "{\"lease_s\":60,\"controller\":\"ctl-a\",\"generation\":12,"
                     "\"gpus\":[{\"uuid\":\"GPU-1\",\"cap_w\":450},{\"index\":3,\"cap_w\":500.5}],"
                     "\"jobs\":[{\"job_id\":\"4242\",\"cap_w\":400}]}";
    pfi_caps_request r;
    assert_int_equal(pfi_caps_request_parse(ok, strlen(ok), &r, NULL), PFI_OK);
    assert_near(r.lease_s, 60, 0);
    assert_string_equal(r.controller, "ctl-a");
    assert_int_equal(r.generation, 12);
    assert_int_equal(r.ngpus, 2);
    assert_string_equal(r.gpus[0].uuid, "GPU-1");
    assert_int_equal(r.gpus[0].index, -1);
    assert_int_equal(r.gpus[1].index, 3);
    assert_near(r.gpus[1].cap_w, 500.5, 0);
    assert_int_equal(r.njobs, 1);
    assert_string_equal(r.jobs[0].job_id, "4242");
    /* format -> parse round trip */
    char *txt = pfi_caps_request_format(&r);
    /* byte for byte what jansson writes for the same request (the formatter is
       written out by hand for speed): names with quotes and backslashes,
       integral and fractional caps */
    snprintf(r.controller, sizeof r.controller, "ctl \"a\" \\ b");
    r.gpus[1].cap_w = 1.0 / 3;
    r.lease_s = 0.5;
    char *mine = pfi_caps_request_format(&r);
    json_t *g = json_array(), *jb = json_array();
    json_array_append_new(g, json_pack("{s:s,s:f}", "uuid", "GPU-1", "cap_w", r.gpus[0].cap_w));
    json_array_append_new(g, json_pack("{s:I,s:f}", "index", (json_int_t)3, "cap_w", 1.0 / 3));
    json_array_append_new(jb, json_pack("{s:s,s:f}", "job_id", "4242", "cap_w", 400.0));
    json_t *o = json_pack("{s:f,s:s,s:I,s:o,s:o}", "lease_s", 0.5, "controller", r.controller,
                          "generation", (json_int_t)12, "gpus", g, "jobs", jb);
    char *theirs = json_dumps(o, JSON_COMPACT);
    assert_string_equal(mine, theirs);
    free(mine), free(theirs);
    json_decref(o);
    pfi_caps_request r2;
    assert_int_equal(pfi_caps_request_parse(txt, strlen(txt), &r2, NULL), PFI_OK);
    free(txt);
    assert_int_equal(r2.ngpus, 2);
    assert_int_equal(r2.gpus[1].index, 3);
    assert_string_equal(r2.gpus[0].uuid, "GPU-1");
    static const char *const bad[][2] = {
        {"", "request body"},
        {"[1]", "JSON object"},
        {"{\"lease_s\":60,\"controller\":\"c\"}", "generation: missing"},
        {"{\"controller\":\"c\",\"generation\":1}", "lease_s: missing"},
        {"{\"lease_s\":0,\"controller\":\"c\",\"generation\":1}", "lease_s"},
        {"{\"lease_s\":1e9,\"controller\":\"c\",\"generation\":1}", "lease_s"},
        {"{\"lease_s\":60,\"controller\":\"\",\"generation\":1}", "controller: empty"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":-1}", "generation"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1.5}", "generation"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"extra\":1}",
         "extra: unknown field"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":{}}",
         "gpus: expected an array"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"cap_w\":300}]}",
         "gpus[0]: give exactly one"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"index\":0,\"uuid\":"
         "\"x\",\"cap_w\":300}]}",
         "exactly one"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"index\":0}]}",
         "gpus[0].cap_w: missing"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"index\":0,\"cap_w\":-"
         "5}]}",
         "gpus[0].cap_w"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"index\":0,\"cap_w\":"
         "\"300\"}]}",
         "gpus[0].cap_w"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[{\"index\":0,\"cap_w\":"
         "300,\"x\":1}]}",
         "gpus[0].x"},
        {"{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"jobs\":[{\"cap_w\":300}]}",
         "jobs[0].job_id: missing"},
        {"{\"lease_s\":60,\"lease_s\":30,\"controller\":\"c\",\"generation\":1}", "duplicate"},
        {"{\"lease_s\":60,\"controller\":\"a\\u0001b\",\"generation\":1}", "control characters"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pfi_error e;
        assert_int_not_equal(pfi_caps_request_parse(bad[i][0], strlen(bad[i][0]), &r, &e), PFI_OK);
        if (!strstr(e.msg, bad[i][1]))
            fail_msg("'%s' -> '%s' (expected '%s')", bad[i][0], e.msg, bad[i][1]);
    }
    /* too many entries */
    char big[8192] = "{\"lease_s\":60,\"controller\":\"c\",\"generation\":1,\"gpus\":[";
    for (int i = 0; i < 65; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s{\"index\":%d,\"cap_w\":300}",
                 i ? "," : "", i);
    strcat(big, "]}");
    pfi_error e;
    assert_int_equal(pfi_caps_request_parse(big, strlen(big), &r, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "at most 64"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(rules), cmocka_unit_test(generation_step),
                                       cmocka_unit_test(state_file), cmocka_unit_test(caps_body)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
