/* test_rows.c — output rendering (CSV/JSON/table), the fast %.10g number
 * writer (pfi_fmt_num) against printf, and atomic output files. */
#include "../testutil.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "rows.h"

/* the one CSV number writer must be exactly snprintf("%.10g"), NaN empty */
static void expect_printf(double v, int *checked)
{
    char a[64], b[64];
    pfi_fmt_num(a, sizeof a, v);
    snprintf(b, sizeof b, "%.10g", v);
    if (strcmp(a, b) != 0) fail_msg("%a: pfi_fmt_num '%s', %%.10g '%s'", v, a, b);
    (*checked)++;
}

static uint64_t lcg(uint64_t *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return *st;
}

static void fmt_matches_printf(void **s)
{
    (void)s;
    uint64_t st = 7;
    int checked = 0;
    for (int i = 0; i < 400000; i++) {
        uint64_t u = lcg(&st);
        double mant = (double)(u >> 11) / 9007199254740992.0;
        int e = (int)((u >> 3) % 26) - 12;
        double v = (mant + 0.05) * pow(10, e) * ((u & 1) ? -1 : 1);
        if (i % 7 == 0) v = round(v * 1000) / 1000; /* short decimals */
        if (i % 11 == 0) v = round(v);              /* integers */
        expect_printf(v, &checked);
        /* any bit pattern: subnormals, huge values, infinities */
        uint64_t bits = lcg(&st);
        double w;
        memcpy(&w, &bits, sizeof w);
        if (!isnan(w)) expect_printf(w, &checked);
    }
    /* ties and near-ties of the 10th digit: (k + 1/2) * 10^(e-9) and its neighbours */
    for (int i = 0; i < 100000; i++) {
        uint64_t u = lcg(&st);
        long long k = 1000000000LL + (long long)((u >> 16) % 9000000000ULL);
        int e = (int)((u >> 3) % 14) - 5;
        double v = ((double)k + 0.5) * pow(10, e - 9);
        expect_printf(v, &checked);
        expect_printf(nextafter(v, 0), &checked);
        expect_printf(nextafter(v, INFINITY), &checked);
        expect_printf(-v, &checked);
    }
    /* exact binary ties: 10 digits then a 5 */
    for (int k = 0; k < 20000; k++) expect_printf(123456789.25 + k * 0.5, &checked);
    static const double edge[] = {0.0,
                                  -0.0,
                                  5e-324,
                                  -5e-324,
                                  2.2250738585072014e-308,
                                  1e-300,
                                  1e-7,
                                  1e-5,
                                  9.99999999995e-5,
                                  1e-4,
                                  0.00010000000005,
                                  0.1,
                                  0.5,
                                  1,
                                  1.5,
                                  9.9999999999,
                                  9.99999999995,
                                  10,
                                  700,
                                  123456789.25,
                                  999999999.5,
                                  999999999.9999,
                                  1e9,
                                  1e10,
                                  9999999999.5,
                                  1e15,
                                  1e21,
                                  1e22,
                                  1.7976931348623157e308,
                                  4503599627370497.0,
                                  INFINITY,
                                  -INFINITY};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        expect_printf(edge[i], &checked);
        expect_printf(-edge[i], &checked);
        expect_printf(nextafter(edge[i], 0), &checked);
        expect_printf(nextafter(edge[i], INFINITY), &checked);
    }
    for (int p = -20; p <= 22; p++) { /* powers of ten, where log10 may be off by one */
        double v = pow(10, p);
        expect_printf(v, &checked);
        expect_printf(nextafter(v, 0), &checked);
        expect_printf(nextafter(v, INFINITY), &checked);
    }
    print_message("pfi_fmt_num equals %%.10g on %d values\n", checked);
    char b[64];
    pfi_fmt_num(b, sizeof b, NAN);
    assert_string_equal(b, "");
    pfi_fmt_num(b, sizeof b, -NAN);
    assert_string_equal(b, "");
    pfi_fmt_num(b, sizeof b, INFINITY);
    assert_string_equal(b, "inf");
    pfi_fmt_num(b, sizeof b, 700);
    assert_string_equal(b, "700");
    pfi_fmt_num(b, sizeof b, 0.000123);
    assert_string_equal(b, "0.000123");
    pfi_fmt_num(b, sizeof b, 9.9999999999);
    assert_string_equal(b, "10");
}

static char *render(pfi_rows *r, pfi_format f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(pfi_rows_write(r, f, m, NULL), PFI_OK);
    fclose(m);
    return buf;
}

static void renderings(void **s)
{
    (void)s;
    const char *names[] = {"name", "n", "x"};
    pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_NUM};
    pfi_rows *r = pfi_rows_new(3, names, t);
    size_t k = pfi_rows_add(r);
    pfi_rows_text(r, k, 0, "a,\"b\"");
    pfi_rows_int(r, k, 1, 3);
    pfi_rows_num(r, k, 2, 0.25);
    k = pfi_rows_add(r);
    pfi_rows_text(r, k, 0, "c");
    pfi_rows_num(r, k, 2, NAN);
    char *csv = render(r, PFI_FMT_CSV);
    assert_string_equal(csv, "name,n,x\n\"a,\"\"b\"\"\",3,0.25\nc,,\n");
    free(csv);
    char *json = render(r, PFI_FMT_JSON);
    assert_non_null(strstr(json, "\"name\": \"a,\\\"b\\\"\""));
    assert_non_null(strstr(json, "\"n\": null"));
    assert_non_null(strstr(json, "\"x\": null"));
    free(json);
    char *tab = render(r, PFI_FMT_TABLE);
    assert_non_null(strstr(tab, "name"));
    assert_non_null(strstr(tab, " -\n"));
    free(tab);
    assert_int_equal(pfi_rows_col(r, "x"), 2);
    assert_string_equal(pfi_rows_get_text(r, 1, 0), "c");
    assert_true(pfi_rows_get_num(r, 0, 1) == 3);
    assert_true(isnan(pfi_rows_get_num(r, 1, 1)));
    pfi_rows_free(r);
}

static void atomic_output(void **s)
{
    (void)s;
    char dir[] = "/tmp/pfi-atomic-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    /* an aborted write leaves neither the file nor a temp file */
    pfi_outfile o;
    assert_int_equal(pfi_out_open(&o, path, NULL), PFI_OK);
    fputs("half", o.f);
    pfi_out_abort(&o);
    struct stat sb;
    assert_int_not_equal(stat(path, &sb), 0);
    /* a committed one replaces the target whole */
    assert_int_equal(pfi_write_file_atomic(path, "old\n", 4, NULL), PFI_OK);
    assert_int_equal(pfi_out_open(&o, path, NULL), PFI_OK);
    fputs("new\n", o.f);
    FILE *f = fopen(path, "r");
    char b[16] = {0};
    assert_non_null(fgets(b, sizeof b, f)); /* still the old content mid-write */
    fclose(f);
    assert_string_equal(b, "old\n");
    assert_int_equal(pfi_out_commit(&o, NULL), PFI_OK);
    f = fopen(path, "r");
    assert_non_null(fgets(b, sizeof b, f));
    fclose(f);
    assert_string_equal(b, "new\n");
    /* only out.csv remains */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 1", dir);
    assert_int_equal(system(cmd), 0);
    unlink(path);
    rmdir(dir);
    /* unwritable directory: clear error */
    pfi_error e;
    assert_int_equal(pfi_out_open(&o, "/nonexistent-dir/x.csv", &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "/nonexistent-dir/x.csv: cannot create"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fmt_matches_printf),
        cmocka_unit_test(renderings),
        cmocka_unit_test(atomic_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
