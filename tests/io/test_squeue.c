/* test_squeue.c — squeue's output (squeue.h) on the forms squeue(1)
 * documents and Slurm 22.05 prints (tests/data/squeue/, captured from the
 * private single-node cluster): a running job's end, a pending job's
 * expected start and its limit, GPUs per node times nodes, unknown times
 * NaN, other states skipped; a changed format is an error naming the line
 * and the field. */
#include "../testutil.h"

#include <math.h>

#include "squeue.h"

static size_t parse(const char *text, pfi_squeue_job **j, pfi_status want)
{
    size_t n = 99;
    pfi_error err;
    assert_int_equal(pfi_squeue_parse(text, strlen(text), "squeue", j, &n, &err), want);
    return n;
}

static void forms(void **s)
{
    (void)s;
    pfi_squeue_job *j = NULL;
    size_t n = parse("101|RUNNING|1796600000|1796603600|1:00:00|1|gres:gpu:2\n"
                     "102|PENDING|1796605000|N/A|2-00:00:00|2|gres/gpu:a100:4\n"
                     "103|PENDING|N/A|N/A|30:00|1|N/A\n"
                     "104|COMPLETING|1796600000|1796600100|1:40|1|gres:gpu:1\n"
                     "105|RUNNING|1796600000|Unknown|UNLIMITED|1|gpu:8(IDX:0-7)\r\n"
                     "\n",
                     &j, PFI_OK);
    assert_int_equal(n, 4);
    assert_string_equal(j[0].id, "101");
    assert_int_equal(j[0].running, 1);
    assert_near(j[0].end_t, 1796603600, 0);
    assert_near(j[0].limit_s, 3600, 0);
    assert_int_equal(j[0].gpus, 2);
    assert_int_equal(j[1].running, 0);
    assert_near(j[1].start_t, 1796605000, 0);
    assert_near(j[1].end_t, 1796605000 + 2 * 86400, 0); /* its start + its limit */
    assert_int_equal(j[1].gpus, 8);                     /* 4 per node x 2 nodes */
    assert_true(isnan(j[2].start_t) && isnan(j[2].end_t));
    assert_near(j[2].limit_s, 1800, 0);
    assert_int_equal(j[2].gpus, 0);
    assert_string_equal(j[3].id, "105"); /* 104 COMPLETING: skipped */
    assert_true(isnan(j[3].end_t) && isinf(j[3].limit_s));
    assert_int_equal(j[3].gpus, 8);
    free(j);
}

static void limits(void **s)
{
    (void)s;
    double v;
    assert_int_equal(pfi_squeue_limit("5", &v), 0);
    assert_near(v, 300, 0);
    assert_int_equal(pfi_squeue_limit("5:30", &v), 0);
    assert_near(v, 330, 0);
    assert_int_equal(pfi_squeue_limit("1-2", &v), 0);
    assert_near(v, 93600, 0);
    assert_int_equal(pfi_squeue_limit("1-02:03:04", &v), 0);
    assert_near(v, 93784, 0);
    assert_int_equal(pfi_squeue_limit("NOT_SET", &v), 0);
    assert_true(isnan(v));
    static const char *const bad[] = {"",   "-1", "1-",   "a:b",       "1:2:3:4",
                                      "1:", "+5", "1--2", "9999999999"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        assert_int_equal(pfi_squeue_limit(bad[k], &v), -1);
}

static void errors_name_line_and_field(void **s)
{
    (void)s;
    static const char *const bad[][2] = {
        {"101|RUNNING|1|2|1:00|1\n", "field 'gres'"},
        {"x1|RUNNING|1|2|1:00|1|N/A\n", "field 'job id'"},
        {"101|running|1|2|1:00|1|N/A\n", "field 'state'"},
        {"101|RUNNING|2026-12-07T10:00:00|2|1:00|1|N/A\n", "field 'start time'"},
        {"101|RUNNING|1|2|soon|1|N/A\n", "field 'time limit'"},
        {"101|RUNNING|1|2|1:00|-1|N/A\n", "field 'nodes'"},
        {"101|RUNNING|1|2|1:00|1|gres:gpu:a100:x\n", "field 'gres'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        pfi_squeue_job *j = (void *)1;
        size_t n = 7;
        pfi_error err;
        char text[256];
        snprintf(text, sizeof text, "102|PENDING|N/A|N/A|1:00|1|N/A\n%s", bad[k][0]);
        assert_int_equal(pfi_squeue_parse(text, strlen(text), "squeue", &j, &n, &err), PFI_EPARSE);
        assert_non_null(strstr(err.msg, "squeue:2: "));
        assert_non_null(strstr(err.msg, bad[k][1]));
        assert_null(j);
        assert_int_equal(n, 0);
    }
}

static void real_output(void **s)
{
    (void)s;
    FILE *f = fopen(PFI_SOURCE_DIR "/tests/data/squeue/slurm-22.05.txt", "r");
    assert_non_null(f);
    char buf[8192];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    pfi_squeue_job *j = NULL;
    size_t n = parse(buf, &j, PFI_OK);
    assert_true(n >= 2);
    int running = 0, pending = 0;
    for (size_t k = 0; k < n; k++) {
        running += j[k].running && isfinite(j[k].end_t) && j[k].gpus > 0;
        pending += !j[k].running;
    }
    assert_true(running >= 1 && pending >= 1);
    free(j);
}

int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(forms), cmocka_unit_test(limits),
                                   cmocka_unit_test(errors_name_line_and_field),
                                   cmocka_unit_test(real_output)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
