/* test_table_csv.c — a pfi_table written as CSV (src/io/table_csv.c): header,
 * RFC 4180 text, numbers through the one number writer (exactly %.10g),
 * missing numbers and text empty; and a written table reads back the same. */
#include "../testutil.h"

#include <stdio.h>
#include <unistd.h>

#include "csvtable.h"
#include "pfi/table_csv.h"

static char *render(const pfi_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(pfi_table_write_csv(t, m, NULL), PFI_OK);
    fclose(m);
    return buf;
}

static void writes_csv(void **s)
{
    (void)s;
    pfi_table *t = pfi_table_new();
    assert_int_equal(pfi_table_add_col(t, "group", PFI_COL_TEXT, NULL), 0);
    assert_int_equal(pfi_table_add_col(t, "power_w", PFI_COL_NUM, NULL), 1);
    static const double v[] = {700, 0.1 + 0.2, NAN, 123456789.25, 1e21, -INFINITY, 1.5e-7, -0.0};
    static const char *const g[] = {"a,b", "say \"hi\"", "", "x", "y", "z", "w", "v"};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        size_t r;
        assert_int_equal(pfi_table_add_row(t, 0, i + 2, &r, NULL), PFI_OK);
        assert_int_equal(pfi_table_set_text(t, 0, r, g[i], NULL), PFI_OK);
        pfi_table_set_num(t, 1, r, v[i]);
    }
    char *csv = render(t);
    assert_string_equal(csv, "group,power_w\n"
                             "\"a,b\",700\n"
                             "\"say \"\"hi\"\"\",0.3\n"
                             ",\n"
                             "x,123456789.2\n" /* a binary tie: printf rounds it to even */
                             "y,1e+21\n"
                             "z,-inf\n"
                             "w,1.5e-07\n"
                             "v,-0\n");
    /* read back: the same text and numbers (to 10 digits) */
    char path[] = "/tmp/pfi-table-csv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, csv, strlen(csv)), (ssize_t)strlen(csv));
    close(fd);
    pfi_table *back = NULL;
    assert_int_equal(pfi_csv_load(path, &back, NULL), PFI_OK);
    unlink(path);
    char *again = render(back);
    assert_string_equal(again, csv);
    free(again);
    free(csv);
    pfi_table_free(back);
    pfi_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writes_csv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
