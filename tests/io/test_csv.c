/* test_csv.c — the CSV record reader, strict number parsing, and the sweep
 * table reader on good and bad input (each error names file, line, column). */
#include "../testutil.h"

#include "num.h"
#include "pfi/csv.h"
#include "pfi/groups.h"
#include "pfi/pfi.h"
#include "pfi/sweep.h"

static int read_all(const char *text, size_t max, char out[][64], size_t *nrec, pfi_error *e)
{
    pfi_reader r;
    pfi_reader_init_mem(&r, text, strlen(text), "mem.csv", max);
    pfi_csv c;
    pfi_csv_init(&c, &r);
    int rc;
    size_t k = 0;
    while ((rc = pfi_csv_next(&c, e)) == 1) {
        for (size_t i = 0; i < c.nfields; i++) snprintf(out[k++], 64, "%s", c.fields[i]);
        snprintf(out[k++], 64, "|");
    }
    *nrec = k;
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    return rc;
}

static void csv_basic(void **s)
{
    (void)s;
    char out[64][64];
    size_t n;
    pfi_error e;
    assert_int_equal(read_all("a,b,c\r\n1,\"x,y\",\"say \"\"hi\"\"\"\n\n2,,\n", 0, out, &n, &e), 0);
    const char *expect[] = {"a", "b", "c", "|", "1", "x,y", "say \"hi\"", "|", "2", "", "", "|"};
    assert_int_equal(n, 12);
    for (size_t i = 0; i < n; i++) assert_string_equal(out[i], expect[i]);
    /* embedded newline in quotes; no final newline */
    assert_int_equal(read_all("\"a\nb\",c", 0, out, &n, &e), 0);
    assert_string_equal(out[0], "a\nb");
    assert_string_equal(out[1], "c");
}

static void csv_errors(void **s)
{
    (void)s;
    char out[64][64];
    size_t n;
    pfi_error e;
    assert_int_equal(read_all("a,b\n\"open,x\n", 0, out, &n, &e), -1);
    assert_non_null(strstr(e.msg, "mem.csv:2: unterminated quoted field"));
    assert_int_equal(read_all("a,b\n\"x\"y,z\n", 0, out, &n, &e), -1);
    assert_non_null(strstr(e.msg, "mem.csv:2: field 1: unexpected text after closing quote"));
    char bin[] = "a,b\n1,2\n3,\0x\n";
    pfi_reader r;
    pfi_reader_init_mem(&r, bin, sizeof bin - 1, "bin.csv", 0);
    pfi_csv c;
    pfi_csv_init(&c, &r);
    assert_int_equal(pfi_csv_next(&c, &e), 1);
    assert_int_equal(pfi_csv_next(&c, &e), 1);
    assert_int_equal(pfi_csv_next(&c, &e), -1);
    assert_non_null(strstr(e.msg, "bin.csv:3: binary data"));
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    /* a record longer than the limit fails after the limit, not after reading it all */
    size_t big = 3u << 20;
    char *line = malloc(big + 8);
    memset(line, 'x', big);
    strcpy(line + big, "\n");
    pfi_reader_init_mem(&r, line, big + 1, "long.csv", 1u << 20);
    pfi_csv_init(&c, &r);
    assert_int_equal(pfi_csv_next(&c, &e), -1);
    assert_non_null(strstr(e.msg, "long.csv:1: record longer than 1048576 bytes"));
    assert_true(r.cap <= (1u << 20) + 1);
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    free(line);
}

static void reader_lines(void **s)
{
    (void)s;
    const char *text = "one\r\ntwo\n\nthree";
    pfi_reader r;
    pfi_reader_init_mem(&r, text, strlen(text), "m", 0);
    char *l;
    size_t n;
    pfi_error e;
    const char *expect[] = {"one", "two", "", "three"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pfi_reader_line(&r, &l, &n, &e), 1);
        assert_string_equal(l, expect[i]);
        assert_int_equal(pfi_reader_lineno(&r), (uint64_t)i + 1);
    }
    assert_int_equal(pfi_reader_line(&r, &l, &n, &e), 0);
    pfi_reader_close(&r);
}

static void numbers(void **s)
{
    (void)s;
    double v;
    assert_int_equal(pfi_parse_double("12.5", 4, &v), 0);
    assert_true(v == 12.5);
    assert_int_equal(pfi_parse_double(" -3e2 ", 6, &v), 0);
    assert_true(v == -300);
    assert_int_equal(pfi_parse_double("0.1", 3, &v), 0);
    assert_true(v == 0.1);
    assert_int_equal(pfi_parse_double("27.130000000000003", 18, &v), 0);
    assert_true(v == 27.130000000000003);
    assert_int_equal(pfi_parse_double("1e-30", 5, &v), 0);
    assert_true(v == 1e-30);
    assert_int_equal(pfi_parse_double(".5", 2, &v), 0);
    assert_true(v == 0.5);
    assert_int_equal(pfi_parse_double("", 0, &v), PFI_NUM_EMPTY);
    assert_int_equal(pfi_parse_double("nan", 3, &v), PFI_NUM_SYNTAX);
    assert_int_equal(pfi_parse_double("inf", 3, &v), PFI_NUM_SYNTAX);
    assert_int_equal(pfi_parse_double("0x10", 4, &v), PFI_NUM_SYNTAX);
    assert_int_equal(pfi_parse_double("12abc", 5, &v), PFI_NUM_SYNTAX);
    assert_int_equal(pfi_parse_double("1e999", 5, &v), PFI_NUM_RANGE);
    assert_int_equal(pfi_parse_double("-", 1, &v), PFI_NUM_SYNTAX);
    assert_int_equal(pfi_parse_double("1e", 2, &v), PFI_NUM_SYNTAX);
    /* correctly rounded against strtod on many random decimals */
    uint64_t st = 99;
    for (int i = 0; i < 20000; i++) {
        char b[64];
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        int digits = 1 + (int)((st >> 33) % 17);
        int e10 = (int)((st >> 13) % 40) - 20;
        uint64_t m = (st >> 5) % 100000000000000000ULL;
        snprintf(b, sizeof b, "%.*llue%d", digits, (unsigned long long)m, e10);
        b[digits] = '\0';
        snprintf(b + strlen(b), 16, "e%d", e10);
        assert_int_equal(pfi_parse_double(b, strlen(b), &v), 0);
        assert_true(v == strtod(b, NULL));
    }
    long l;
    assert_int_equal(pfi_parse_long("8", 1, 1, 100, &l), 0);
    assert_int_equal(l, 8);
    assert_int_equal(pfi_parse_long("8.5", 3, 1, 100, &l), PFI_NUM_RANGE);
    assert_int_equal(pfi_parse_long("0", 1, 1, 100, &l), PFI_NUM_RANGE);
}

static pfi_status read_text(pfi_table *t, const char *text, pfi_error *e)
{
    pfi_reader r;
    pfi_reader_init_mem(&r, text, strlen(text), "t.csv", 0);
    pfi_status st = pfi_sweep_read_reader(t, &r, NULL, NULL, e);
    pfi_reader_close(&r);
    return st;
}

static void expect_error(const char *text, const char *msg)
{
    pfi_table *t = pfi_table_new();
    pfi_error e;
    pfi_status st = read_text(t, text, &e);
    if (st == PFI_OK) fail_msg("accepted bad input; expected '%s'", msg);
    if (!strstr(e.msg, msg)) fail_msg("error '%s' does not contain '%s'", e.msg, msg);
    assert_null(strchr(e.msg, '\n'));
    pfi_table_free(t);
}

#define HDR "group,gpu_model,gpus,cap_w,tokens_per_s,power_w\n"

static void sweep_good(void **s)
{
    (void)s;
    pfi_table *t = pfi_table_new();
    pfi_error e;
    assert_int_equal(read_text(t,
                               HDR "g,H200,8,700,100,5000\r\ng,H200,8,600,98,4750\r\n"
                                   "g,H200,8,600,96,4850\r\n",
                               &e),
                     PFI_OK);
    assert_int_equal(pfi_table_nrows(t), 3);
    pfi_groups gs;
    assert_int_equal(pfi_groups_build(t, &gs, &e), PFI_OK);
    assert_int_equal(gs.n, 1);
    assert_int_equal(gs.g[0].curve.n, 2);
    /* repeats averaged; between-run SEM from their spread: sd(98,96)=sqrt(2), /sqrt(2) = 1 */
    assert_near(gs.g[0].curve.pts[0].tokens_per_s, 97, 1e-12);
    assert_near(gs.g[0].curve.pts[0].tokens_per_s_sem, 1.0, 1e-12);
    assert_near(gs.g[0].curve.pts[0].power_w_sem, 50.0, 1e-12);
    assert_int_equal(gs.g[0].curve.pts[0].repeats, 2);
    assert_int_equal(gs.g[0].n_uncapped_rows, 1);
    pfi_groups_dispose(&gs);
    pfi_table_free(t);
    /* groups are keyed by (gpu_model, group): the same name on H100 and H200 */
    t = pfi_table_new();
    assert_int_equal(read_text(t,
                               HDR "g,H200,8,700,100,5000\ng,H100,8,700,80,5000\n"
                                   "g,H200,8,600,90,4000\ng,H100,8,600,70,4000\n",
                               &e),
                     PFI_OK);
    assert_int_equal(pfi_groups_build(t, &gs, &e), PFI_OK);
    assert_int_equal(gs.n, 2);
    assert_string_equal(gs.g[1].gpu_model, "H100");
    pfi_groups_dispose(&gs);
    pfi_table_free(t);
    /* optional telemetry columns may be empty; extra metadata kept as text */
    t = pfi_table_new();
    assert_int_equal(read_text(t,
                               "group,gpu_model,gpus,cap_w,tokens_per_s,power_w,"
                               "DCGM_FI_PROF_DRAM_ACTIVE,note\n"
                               "g,H200,8,700,100,5000,0.5,hello\ng,H200,8,600,90,4000,,x\n",
                               &e),
                     PFI_OK);
    long c = pfi_table_col(t, "DCGM_FI_PROF_DRAM_ACTIVE");
    assert_true(c >= 0 && pfi_table_coltype(t, (size_t)c) == PFI_COL_NUM);
    assert_true(isnan(pfi_table_num(t, (size_t)c, 1)));
    assert_int_equal(pfi_table_coltype(t, (size_t)pfi_table_col(t, "note")), PFI_COL_TEXT);
    pfi_table_free(t);
}

static void sweep_bad(void **s)
{
    (void)s;
    expect_error("", "t.csv: empty file (no header)");
    expect_error(HDR, "t.csv: header only, no data rows");
    expect_error("group,gpu_model,gpus,cap_w,tokens_per_s\ng,H,1,1,1\n",
                 "t.csv:1: missing required column 'power_w'");
    expect_error("group,gpu_model,gpus,cap_w,tokens_per_s,power_w,cap_w\n",
                 "t.csv:1: duplicate column 'cap_w'");
    expect_error("group,,gpus\n", "t.csv:1: header field 2 is empty");
    expect_error(HDR "g,H200,8,700,100\n", "t.csv:2: expected 6 fields, found 5");
    expect_error(HDR "g,H200,8,700,100,5000\ng,H200,8,600,NaN,4000\n",
                 "t.csv:3: column 'tokens_per_s': not a number");
    expect_error(HDR "g,H200,8,700,100,inf\n", "t.csv:2: column 'power_w': not a number");
    expect_error(HDR "g,H200,8,700,100,-5\n", "t.csv:2: column 'power_w': negative value");
    expect_error(HDR "g,H200,8,700,abc,5\n", "t.csv:2: column 'tokens_per_s': not a number");
    expect_error(HDR "g,H200,8,,100,5\n", "t.csv:2: column 'cap_w': missing required value");
    expect_error(HDR "g,H200,8.5,700,100,5\n", "t.csv:2: column 'gpus': not a GPU count");
    expect_error(HDR "g,H200,0,700,100,5\n", "t.csv:2: column 'gpus': must be positive");
    expect_error(HDR "g,H200,8,1e9,100,5\n", "t.csv:2: column 'cap_w'");
    expect_error(HDR ",H200,8,700,100,5\n", "t.csv:2: column 'group': empty");
    expect_error("group,gpu_model,gpus,cap_w,tokens_per_s,power_w,arch\ng,H,8,700,1,1,sparse\n",
                 "t.csv:2: column 'arch': 'sparse' is not dense or moe");
    expect_error("group,gpu_model,gpus,cap_w,tokens_per_s,power_w,tokens_per_s_sem\n"
                 "g,H,8,700,1,1,-0.1\n",
                 "t.csv:2: column 'tokens_per_s_sem': negative value");
    expect_error(HDR "g,H200,8,700,100,5000\n\"g,H200,8,600,90,4000\n", "unterminated quoted");
    /* gpus must agree within a group: both lines named */
    pfi_table *t = pfi_table_new();
    pfi_error e;
    assert_int_equal(read_text(t, HDR "g,H200,8,700,100,5000\ng,H200,16,600,90,4000\n", &e),
                     PFI_OK);
    pfi_groups gs;
    assert_int_equal(pfi_groups_build(t, &gs, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "t.csv:3: column 'gpus'"));
    assert_non_null(strstr(e.msg, "t.csv:2"));
    pfi_table_free(t);
}

static void zeus(void **s)
{
    (void)s;
    pfi_table *t = pfi_table_new();
    pfi_error e;
    const char *path = PFI_SOURCE_DIR "/data/zeus/summary_power_v100.csv";
    assert_int_equal(pfi_sweep_read(t, path, NULL, NULL, &e), PFI_OK);
    assert_int_equal(pfi_table_nrows(t), 476);
    pfi_groups gs;
    assert_int_equal(pfi_groups_build(t, &gs, &e), PFI_OK);
    assert_int_equal(gs.n, 68);
    assert_string_equal(gs.g[0].gpu_model, "V100");
    assert_string_equal(gs.g[0].name, "cifar100/shufflenetv2/1024/adadelta");
    assert_int_equal(gs.g[0].gpus, 1);
    /* throughput = 1/time_per_epoch; uncapped = 250 W */
    const pfi_point *u = pfi_curve_uncapped(&gs.g[0].curve);
    assert_near(u->cap_w, 250, 0);
    assert_true(u->tokens_per_s > 0 && u->tokens_per_s < 1);
    pfi_groups_dispose(&gs);
    pfi_table_free(t);
    char buf[32];
    assert_string_equal(pfi_zeus_gpu_model("x/summary_power_rtx6000.csv", buf, sizeof buf),
                        "RTX6000");
    assert_null(pfi_zeus_gpu_model("x/trace.csv", buf, sizeof buf));
    /* a Zeus header in a file that does not name the GPU is an error */
    t = pfi_table_new();
    const char *z =
        "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
        "a,b,8,adam,100,10,90\n";
    assert_int_not_equal(read_text(t, z, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "--gpu-model"));
    pfi_table_free(t);
    t = pfi_table_new();
    pfi_reader r;
    pfi_reader_init_mem(&r, z, strlen(z), "t.csv", 0);
    pfi_sweep_read_opts o = {"A40", 0};
    assert_int_equal(pfi_sweep_read_reader(t, &r, &o, NULL, &e), PFI_OK);
    pfi_reader_close(&r);
    pfi_table_free(t);
    t = pfi_table_new();
    const char *zbad =
        "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
        "a,b,8,adam,100,0,90\n";
    pfi_reader_init_mem(&r, zbad, strlen(zbad), "t.csv", 0);
    assert_int_not_equal(pfi_sweep_read_reader(t, &r, &o, NULL, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "t.csv:2: column 'time_per_epoch': must be positive"));
    pfi_reader_close(&r);
    pfi_table_free(t);
}

/* the robust rule's default SEMs are the A40 + V100 between-run noise */
static void zeus_noise_default(void **s)
{
    (void)s;
    pfi_table *t = pfi_table_new();
    pfi_error e;
    assert_int_equal(
        pfi_sweep_read(t, PFI_SOURCE_DIR "/data/zeus/summary_power_a40.csv", NULL, NULL, &e),
        PFI_OK);
    assert_int_equal(
        pfi_sweep_read(t, PFI_SOURCE_DIR "/data/zeus/summary_power_v100.csv", NULL, NULL, &e),
        PFI_OK);
    pfi_groups gs;
    assert_int_equal(pfi_groups_build(t, &gs, &e), PFI_OK);
    const pfi_curve *cv[200];
    int gpus[200];
    assert_true(gs.n <= 200);
    for (size_t i = 0; i < gs.n; i++) {
        cv[i] = &gs.g[i].curve;
        gpus[i] = gs.g[i].gpus;
    }
    pfi_noise_estimate ne;
    pfi_estimate_noise(cv, gpus, gs.n, 1.2, &ne);
    print_message(
        "A40+V100 between-run noise: power %.4f, throughput %.4f (%zu points, %zu groups)\n",
        ne.rel_sd_power, ne.rel_sd_tokens, ne.n_points, ne.n_groups);
    assert_near(ne.rel_sd_power, PFI_ROBUST_DEFAULT_REL_SEM_POWER, 0.0005);
    assert_near(ne.rel_sd_tokens, PFI_ROBUST_DEFAULT_REL_SEM_TOKENS, 0.0005);
    assert_int_equal(gs.n, 121);
    pfi_groups_dispose(&gs);
    pfi_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_basic),    cmocka_unit_test(csv_errors),
        cmocka_unit_test(reader_lines), cmocka_unit_test(numbers),
        cmocka_unit_test(sweep_good),   cmocka_unit_test(sweep_bad),
        cmocka_unit_test(zeus),         cmocka_unit_test(zeus_noise_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
