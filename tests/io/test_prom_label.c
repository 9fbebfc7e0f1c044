/* test_prom_label.c — the label-value escaper every daemon's /metrics uses:
 * the exposition format's escapes, non-UTF-8 and control bytes, truncation
 * at a whole character; and that a forged job id, escaped, reads back as
 * one sample with the id as its label (the Prometheus parser of prom.c). */
#include "../testutil.h"

#include <stdio.h>

#include "pfi/prom.h"

static void escapes(void **s)
{
    (void)s;
    char b[256];
    assert_string_equal(pfi_prom_label(b, sizeof b, "GPU-0a1b"), "GPU-0a1b");
    assert_string_equal(pfi_prom_label(b, sizeof b, NULL), "");
    assert_string_equal(pfi_prom_label(b, sizeof b, "a\"b"), "a\\\"b");
    assert_string_equal(pfi_prom_label(b, sizeof b, "a\\b"), "a\\\\b");
    assert_string_equal(pfi_prom_label(b, sizeof b, "a\nb"), "a\\nb");
    assert_string_equal(pfi_prom_label(b, sizeof b, "a\rb\tc\x7f"), "a?b?c?");
    /* UTF-8 kept; bytes that are not UTF-8 (overlong, surrogate, lone continuation, truncated)
     * replaced */
    assert_string_equal(
        pfi_prom_label(b, sizeof b, "NVIDIA H200 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
        "NVIDIA H200 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    assert_string_equal(pfi_prom_label(b, sizeof b, "\xc0\xaf|\xed\xa0\x80|\x80|\xe2\x82"),
                        "??|???|?|??");
}

static void truncation(void **s)
{
    (void)s;
    char b[5];
    assert_string_equal(pfi_prom_label(b, sizeof b, "abcdef"), "abcd");
    assert_string_equal(pfi_prom_label(b, sizeof b, "abc\""), "abc"); /* never half an escape */
    assert_string_equal(pfi_prom_label(b, sizeof b, "ab\xe2\x82\xac"), "ab");
    char one[1];
    assert_string_equal(pfi_prom_label(one, 1, "x"), "");
}

static void forged_id_stays_one_sample(void **s)
{
    (void)s;
    const char *id = "1\"} 1\nDCGM_FI_DEV_POWER_USAGE{UUID=\"forged\"} 9999\n#";
    char b[256], line[512];
    snprintf(line, sizeof line, "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",job=\"%s\"} 50",
             pfi_prom_label(b, sizeof b, id));
    assert_null(strchr(line, '\n'));
    pfi_sample x;
    const char *what = NULL;
    assert_int_equal(pfi_prom_parse_line(line, strlen(line), &x, &what), 1);
    assert_int_equal(x.metric, PFI_M_GPU_UTIL);
    assert_true(x.value == 50);
    assert_int_equal(x.uuid.n, 5);
    assert_memory_equal(x.uuid.p, "GPU-1", 5);
}

/* pfi_prom_valid_values: printf's spellings of NaN and infinities become
   the format's; labels holding "} nan" and values like 1e308 stay as they
   are; comments untouched; a last line without a newline kept so */
static void valid_values(void **s)
{
    (void)s;
    char b[64];
    snprintf(b, sizeof b, "%g %g %g", 0.0 / 0.0, -(0.0 / 0.0), 1.0 / 0.0);
    const char *in = "# HELP x nan\n"
                     "a -nan\n"
                     "b{l=\"} nan\\\" x\"} nan\n"
                     "c inf 1767225600000\n"
                     "d -INF\n"
                     "e 1e+308\n"
                     "f{l=\"inf\"} 2\n"
                     "g NaN\n"
                     "h nan";
    const char *want = "# HELP x nan\n"
                       "a NaN\n"
                       "b{l=\"} nan\\\" x\"} NaN\n"
                       "c +Inf 1767225600000\n"
                       "d -Inf\n"
                       "e 1e+308\n"
                       "f{l=\"inf\"} 2\n"
                       "g NaN\n"
                       "h NaN";
    size_t n = 0;
    char *out = pfi_prom_valid_values(in, strlen(in), &n);
    assert_non_null(out);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
    free(out);
    /* what this libc prints for them, through the same pass */
    char line[128];
    snprintf(line, sizeof line, "x %s\n", strtok(b, " "));
    out = pfi_prom_valid_values(line, strlen(line), NULL);
    assert_string_equal(out, "x NaN\n");
    free(out);
    out = pfi_prom_valid_values("", 0, &n);
    assert_string_equal(out, "");
    assert_int_equal(n, 0);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escapes),
        cmocka_unit_test(truncation),
        cmocka_unit_test(forged_id_stays_one_sample),
        cmocka_unit_test(valid_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
