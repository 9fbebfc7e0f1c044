/* test_prom.c — the Prometheus text parser: dcgm-exporter lines, label
 * escapes, timestamps, NaN/blank values, unknown metrics, syntax errors,
 * scrape-time comments and truncated last lines; the step log reader. */
#include "../testutil.h"

#include "pfi/prom.h"
#include "pfi/steplog.h"

static void parse_lines(void **s)
{
    (void)s;
    pfi_sample x;
    const char *what = NULL;
    const char *l =
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"3\",UUID=\"GPU-abc\",device=\"nvidia3\",modelName=\"NVIDIA "
        "H200\",Hostname=\"node-7\",container=\"\",namespace=\"\",pod=\"\"} 512.25";
    assert_int_equal(pfi_prom_parse_line(l, strlen(l), &x, &what), 1);
    assert_int_equal(x.metric, PFI_M_POWER_USAGE);
    assert_true(x.value == 512.25);
    assert_true(x.t_ms == INT64_MIN);
    assert_int_equal(x.uuid.n, 7);
    assert_memory_equal(x.uuid.p, "GPU-abc", 7);
    assert_memory_equal(x.host.p, "node-7", 6);
    assert_memory_equal(x.gpu.p, "3", 1);
    /* escaped quotes and backslashes in a label value; trailing comma; timestamp */
    const char *l2 =
        "DCGM_FI_PROF_DRAM_ACTIVE{note=\"a \\\"q\\\" \\\\\",gpu=\"0\",} 0.5 1767225600123";
    assert_int_equal(pfi_prom_parse_line(l2, strlen(l2), &x, &what), 1);
    assert_true(x.value == 0.5);
    assert_true(x.t_ms == 1767225600123LL);
    assert_memory_equal(x.gpu.p, "0", 1);
    /* no labels */
    const char *l3 = "DCGM_FI_DEV_GPU_UTIL 97";
    assert_int_equal(pfi_prom_parse_line(l3, strlen(l3), &x, &what), 1);
    assert_int_equal(x.gpu.n, 0);
    /* NaN is a missing value, not an error */
    const char *l4 = "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} NaN";
    assert_int_equal(pfi_prom_parse_line(l4, strlen(l4), &x, &what), 1);
    assert_true(isnan(x.value));
    /* unknown metrics and comments are skipped, never validated */
    const char *l5 = "go_gc_duration_seconds{quantile=\"0.5\" garbage";
    assert_int_equal(pfi_prom_parse_line(l5, strlen(l5), &x, &what), 0);
    assert_int_equal(pfi_prom_parse_line("# HELP x y", 10, &x, &what), 0);
    assert_int_equal(pfi_prom_parse_line("", 0, &x, &what), 0);
    /* syntax errors */
    const char *bad[] = {"DCGM_FI_DEV_GPU_UTIL{gpu=0} 1",       "DCGM_FI_DEV_GPU_UTIL{gpu=\"0} 1",
                         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 1",    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"}",
                         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} abc", "DCGM_FI_DEV_GPU_UTIL 1 12.5",
                         "DCGM_FI_DEV_GPU_UTIL 1 2 3",          "DCGM_FI_DEV_GPU_UTIL{=\"0\"} 1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        what = NULL;
        if (pfi_prom_parse_line(bad[i], strlen(bad[i]), &x, &what) != -1)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(what);
    }
}

/* pfi-agent's own names (base units) are read as the DCGM metric, in its unit */
static void pfi_names(void **s)
{
    (void)s;
    pfi_sample x;
    const char *what = NULL;
    static const struct {
        const char *line;
        pfi_metric m;
        double dcgm;
    } cases[] = {
        {"pfi_gpu_power_watts{gpu=\"1\",uuid=\"GPU-x\",hostname=\"n7\",hpc_job=\"17\"} 512.5",
         PFI_M_POWER_USAGE, 512.5},
        {"pfi_gpu_sm_clock_hertz{gpu=\"1\"} 1980000000", PFI_M_SM_CLOCK, 1980},
        {"pfi_gpu_memory_clock_hertz{gpu=\"1\"} 3.201e9", PFI_M_MEM_CLOCK, 3201},
        {"pfi_gpu_utilization_ratio{gpu=\"1\"} 0.97", PFI_M_GPU_UTIL, 97},
        {"pfi_gpu_memory_copy_utilization_ratio{gpu=\"1\"} 0.25", PFI_M_MEM_COPY_UTIL, 25},
        {"pfi_gpu_framebuffer_used_bytes{gpu=\"1\"} 85899345920", PFI_M_FB_USED, 81920},
        {"pfi_gpu_dram_active_ratio{gpu=\"1\"} 0.5", PFI_M_DRAM_ACTIVE, 0.5},
        {"pfi_gpu_nvlink_transmit_bytes_per_second{gpu=\"1\"} 1e9", PFI_M_NVLINK_TX_BYTES, 1e9},
        {"pfi_gpu_power_cap_watts{gpu=\"1\"} 450", PFI_M_MGMT_LIMIT, 450},
        {"pfi_gpu_power_limit_enforced_watts{gpu=\"1\"} 440", PFI_M_ENFORCED_LIMIT, 440},
        /* an older agent's name for it (recordings made before issue 30) */
        {"pfi_gpu_enforced_power_limit_watts{gpu=\"1\"} 430", PFI_M_ENFORCED_LIMIT, 430},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (pfi_prom_parse_line(cases[i].line, strlen(cases[i].line), &x, &what) != 1)
            fail_msg("not read: %s", cases[i].line);
        assert_int_equal(x.metric, cases[i].m);
        assert_int_equal(x.pfi_named, 1);
        if (fabs(x.value - cases[i].dcgm) > 1e-9 * fabs(cases[i].dcgm))
            fail_msg("%s: %g, expected %g", cases[i].line, x.value, cases[i].dcgm);
    }
    const char *l = cases[0].line;
    assert_int_equal(pfi_prom_parse_line(l, strlen(l), &x, &what), 1);
    assert_memory_equal(x.uuid.p, "GPU-x", 5);
    assert_memory_equal(x.host.p, "n7", 2);
    /* pfi's own state and counters without a DCGM counterpart are not telemetry */
    const char *o[] = {"pfi_gpu_energy_joules_total{gpu=\"0\"} 5", "pfi_job_power_watts 1",
                       "pfi_gpu_power_cap_max_watts{gpu=\"0\"} 700", "pfi_gpu_power 3"};
    for (size_t i = 0; i < sizeof o / sizeof *o; i++)
        assert_int_equal(pfi_prom_parse_line(o[i], strlen(o[i]), &x, &what), 0);
}

typedef struct collect {
    int n;
    double sum;
    int64_t last_t;
} collect;

static pfi_status on_s(void *ud, const pfi_sample *s, pfi_error *err)
{
    (void)err;
    collect *c = ud;
    c->n++;
    c->sum += s->value;
    c->last_t = s->t_ms;
    return PFI_OK;
}

static int read_text(const char *text, collect *c, pfi_error *e, pfi_log *log)
{
    pfi_reader r;
    pfi_reader_init_mem(&r, text, strlen(text), "m.prom", 0);
    memset(c, 0, sizeof *c);
    int st = pfi_prom_read(&r, on_s, c, NULL, log, e);
    pfi_reader_close(&r);
    return st;
}

static void reading(void **s)
{
    (void)s;
    collect c;
    pfi_error e;
    pfi_log log = {0};
    /* scrape-time comments apply to the lines after them; blanks are missing */
    const char *t = "# pfi-scrape-time 1000\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 10\n"
                    "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 9223372036854775792\n"
                    "# pfi-scrape-time 6000\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 20\n";
    assert_int_equal(read_text(t, &c, &e, &log), PFI_OK);
    assert_int_equal(c.n, 2);
    assert_near(c.sum, 30, 0);
    assert_true(c.last_t == 6000);
    /* no timestamp at all */
    assert_int_equal(read_text("DCGM_FI_DEV_GPU_UTIL 1\n", &c, &e, &log), PFI_EPARSE);
    assert_non_null(strstr(e.msg, "m.prom:1: sample without a timestamp"));
    /* a malformed line in the middle is an error; as the truncated last line, a warning */
    const char *mid = "DCGM_FI_DEV_GPU_UTIL 1 1000\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0 "
                      "1\nDCGM_FI_DEV_GPU_UTIL 1 2000\n";
    assert_int_equal(read_text(mid, &c, &e, &log), PFI_EPARSE);
    assert_non_null(strstr(e.msg, "m.prom:2: unterminated label value"));
    const char *end = "DCGM_FI_DEV_GPU_UTIL 1 1000\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0";
    assert_int_equal(read_text(end, &c, &e, &log), PFI_OK);
    assert_int_equal(c.n, 1);
    assert_int_equal(log.n_warnings, 1);
    assert_int_equal(read_text("# pfi-scrape-time soon\n", &c, &e, &log), PFI_EPARSE);
}

/* an agent with --export-dcgm serves each reading under both names: one input
 * is read under the naming of its first metric, never both */
static void one_naming(void **s)
{
    (void)s;
    collect c;
    pfi_error e;
    assert_int_equal(read_text("# pfi-scrape-time 1000\n"
                               "pfi_gpu_power_watts{gpu=\"0\",uuid=\"G0\"} 300\n"
                               "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"G0\"} 300\n"
                               "pfi_gpu_power_watts{gpu=\"1\",uuid=\"G1\"} 200\n",
                               &c, &e, NULL),
                     0);
    assert_int_equal(c.n, 2);
    assert_true(c.sum == 500);
    assert_int_equal(read_text("# pfi-scrape-time 1000\n"
                               "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"G0\"} 300\n"
                               "pfi_gpu_power_watts{gpu=\"0\",uuid=\"G0\"} 300\n",
                               &c, &e, NULL),
                     0);
    assert_int_equal(c.n, 1);
}

static void steplog(void **s)
{
    (void)s;
    const char *t = "{\"t_s\": 10, \"tokens_per_s\": 1000, \"mfu\": 0.4}\n\n"
                    "{\"t_s\": 11, \"tokens\": 4096, \"step_time_s\": 2.0, \"loss\": 1.5}\n";
    pfi_reader r;
    pfi_reader_init_mem(&r, t, strlen(t), "s.jsonl", 0);
    pfi_steplog sl;
    pfi_error e;
    assert_int_equal(pfi_steplog_read(&r, &sl, NULL, &e), PFI_OK);
    assert_int_equal(sl.n, 2);
    assert_near(sl.tokens_per_s[1], 2048, 0);
    assert_near(sl.mfu[0], 0.4, 0);
    assert_true(isnan(sl.mfu[1]));
    pfi_steplog_dispose(&sl);
    pfi_reader_close(&r);
    const char *bad[][2] = {
        {"{\"tokens_per_s\": 1}\n", "s.jsonl:1: key 't_s': missing"},
        {"{\"t_s\": 1, \"tokens_per_s\": -5}\n", "s.jsonl:1: key 'tokens_per_s'"},
        {"{\"t_s\": 1}\n", "s.jsonl:1: no throughput"},
        {"{\"t_s\": 2, \"tokens_per_s\": 1}\n{\"t_s\": 1, \"tokens_per_s\": 1}\n",
         "s.jsonl:2: key 't_s': goes backwards"},
        {"{\"t_s\": 1, \"tokens_per_s\": NaN}\n", "s.jsonl:1:"},
        {"{\"t_s\": 1, \"tokens_per_s\": 1, \"mfu\": 1.5}\n", "key 'mfu'"},
        {"[1,2]\n", "s.jsonl:1: not a JSON object"},
        {"{\"t_s\": \"x\", \"tokens_per_s\": 1}\n{\"t_s\": 1}\n", "key 't_s': not a number"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pfi_reader_init_mem(&r, bad[i][0], strlen(bad[i][0]), "s.jsonl", 0);
        if (pfi_steplog_read(&r, &sl, NULL, &e) == PFI_OK) fail_msg("accepted %s", bad[i][0]);
        if (!strstr(e.msg, bad[i][1])) fail_msg("'%s' lacks '%s'", e.msg, bad[i][1]);
        pfi_reader_close(&r);
    }
    char buf[256];
    pfi_steplog_format(buf, sizeof buf, 12.5, 1000, 0.4, NAN, 3);
    assert_string_equal(
        buf, "{\"t_s\": 12.500, \"step\": 3, \"tokens_per_s\": 1000.00, \"mfu\": 0.4000}\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(parse_lines), cmocka_unit_test(pfi_names),
                                       cmocka_unit_test(one_naming), cmocka_unit_test(reading),
                                       cmocka_unit_test(steplog)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
