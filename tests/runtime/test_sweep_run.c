/* test_sweep_run.c — `pfi sweep` as a call (sweep_run.h) on the simulated
 * backend and a sped-up clock: a short sweep writes one run directory per
 * cap (run.json with its cap and group, telemetry) and leaves every cap as
 * it found it, with no state file; a previous sweep's state file is
 * restored first; a cap outside the device's range is a usage error that
 * changes nothing; a state file that cannot be written stops the sweep
 * before any cap is set. */
#include "../testutil.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "datapath.h"
#include "gpu.h"
#include "recon_io.h"
#include "sweep_run.h"

static pfi_recon R;
static char dir[] = "/tmp/pfi-sweeprun-XXXXXX";
static char hw[256], state[256], spec[512];

static int setup(void **s)
{
    (void)s;
    char sp[4096], pp[4096];
    setenv("PFI_DATA_DIR", PFI_SOURCE_DIR "/data", 1);
    if (pfi_data_path(NULL, "reconstruction/spec.csv", sp, sizeof sp, NULL) ||
        pfi_data_path(NULL, "reconstruction/params.csv", pp, sizeof pp, NULL) ||
        pfi_recon_load(sp, pp, &R, NULL) || !mkdtemp(dir))
        return -1;
    snprintf(hw, sizeof hw, "%s/hw.json", dir);
    snprintf(state, sizeof state, "%s/sweep-state.json", dir);
    snprintf(spec, sizeof spec, "sim:gpus=4,job=1:moe-ft-qwen30ba3b-x8@0-3,noise=0,load=5,state=%s",
             hw);
    return pfi_clock_set(300, 1767225600, NULL) == PFI_OK ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    pfi_recon_dispose(&R);
    pfi_clock_set(1, PFI_CLOCK_DEFAULT_EPOCH, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* what the sweep said */
typedef struct said {
    int notes, errors, usage;
    char last[600], all[8192];
} said;

static void note(void *ud, const char *m)
{
    said *x = ud;
    x->notes++;
    size_t l = strlen(x->all);
    snprintf(x->all + l, sizeof x->all - l, "%s\n", m);
}

static void error(void *ud, int usage, const char *m)
{
    said *x = ud;
    x->errors++;
    x->usage |= usage;
    snprintf(x->last, sizeof x->last, "%s", m);
}

static pfi_sweep_opts opts(const char *out, const char *caps, said *x)
{
    memset(x, 0, sizeof *x);
    pfi_sweep_opts o = {.out = out,
                        .backend = spec,
                        .recon = &R,
                        .caps = caps,
                        .duration_s = 60,
                        .interval_s = 5,
                        .pause_s = 0,
                        .task = "ft",
                        .no_agent = 1,
                        .state_file = state,
                        .log = {note, error, NULL, x}};
    return o;
}

static void set_hw(const char *caps)
{
    FILE *f = fopen(hw, "w");
    fprintf(f, "{\"gpus\": 4, \"caps_w\": [%s]}\n", caps);
    fclose(f);
}

/* the simulated hardware's caps, as a fresh process would see them */
static double hw_cap(size_t i)
{
    char sp[400];
    snprintf(sp, sizeof sp, "sim:gpus=4,state=%s", hw);
    pfi_gpu *g;
    double c = NAN;
    if (pfi_gpu_open(sp, NULL, &g, NULL) == PFI_OK) {
        pfi_gpu_cap_now(g, i, 0, &c, NULL);
        pfi_gpu_close(g);
    }
    return c;
}

static int file_has(const char *path, const char *text)
{
    char buf[8192] = "";
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, text) != NULL;
}

static void short_sweep(void **st)
{
    (void)st;
    set_hw("700, 650, 700, 700");
    char out[300], p[400];
    snprintf(out, sizeof out, "%s/s1", dir);
    said x;
    pfi_sweep_opts o = opts(out, "500,700", &x);
    pfi_sweep_result res;
    assert_int_equal(pfi_sweep_run(&o, &res), PFI_OK);
    assert_int_equal(x.errors, 0);
    assert_int_equal(res.runs, 2);
    assert_int_equal(res.signal, 0);
    static const int caps[2] = {700, 500};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/%dW/run.json", out, caps[k]);
        char want[40];
        snprintf(want, sizeof want, "\"cap_w\": %d", caps[k]);
        assert_true(file_has(p, want));
        assert_true(file_has(p, "\"group\": \"moe-ft-qwen30ba3b-x8\""));
        assert_true(file_has(p, "\"task\": \"ft\""));
        snprintf(p, sizeof p, "%s/%dW/telemetry.prom", out, caps[k]);
        assert_true(file_has(p, "DCGM_FI_DEV_POWER_USAGE{gpu=\"3\""));
    }
    assert_non_null(
        strstr(x.all, "run 1/2: cap 700 W on 4 GPUs")); /* descending: the uncapped run first */
    assert_non_null(strstr(x.all, "caps restored"));
    /* every cap as the sweep found it, no state file left */
    assert_near(hw_cap(0), 700, 1e-9);
    assert_near(hw_cap(1), 650, 1e-9);
    assert_int_not_equal(access(state, F_OK), 0);
}

static void stale_state_restored_first(void **st)
{
    (void)st;
    /* a sweep died with GPU 2 at 400 W; its state file says 600 W before it */
    set_hw("700, 700, 400, 700");
    char u[100];
    pfi_gpu *g;
    char sp[400];
    snprintf(sp, sizeof sp, "sim:gpus=4,state=%s", hw);
    assert_int_equal(pfi_gpu_open(sp, NULL, &g, NULL), PFI_OK);
    pfi_gpu_info in;
    assert_int_equal(pfi_gpu_info_get(g, 2, &in, NULL), PFI_OK);
    pfi_gpu_close(g);
    snprintf(u, sizeof u, "%s", in.uuid);
    FILE *f = fopen(state, "w");
    fprintf(f,
            "{\"format_version\": 1, \"pid\": 4242, \"gpus\": [{\"index\": 2, \"uuid\": \"%s\", "
            "\"cap_w\": 600}]}\n",
            u);
    fclose(f);
    char out[300];
    snprintf(out, sizeof out, "%s/s2", dir);
    said x;
    pfi_sweep_opts o = opts(out, "700,300", &x);
    pfi_sweep_result res;
    assert_int_equal(pfi_sweep_run(&o, &res), PFI_OK);
    assert_non_null(strstr(x.all, "a previous sweep did not finish; restoring its caps"));
    assert_non_null(strstr(x.all, "GPU 2: cap restored to 600 W"));
    assert_near(hw_cap(2), 600, 1e-9); /* the sweep then restored to what it found: 600 W */
    assert_int_not_equal(access(state, F_OK), 0);
}

static void refusals_change_nothing(void **st)
{
    (void)st;
    set_hw("700, 700, 700, 700");
    char out[300];
    snprintf(out, sizeof out, "%s/s3", dir);
    said x;
    pfi_sweep_opts o = opts(out, "900,700", &x);
    pfi_sweep_result res;
    assert_int_not_equal(pfi_sweep_run(&o, &res), PFI_OK);
    assert_true(res.usage && x.usage);
    assert_non_null(strstr(x.last, "--caps: 900 W is outside GPU 0's 200..700 W"));
    assert_int_equal(res.runs, 0);
    /* the state file cannot be written: stopped before any cap is set */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/no-such-dir/state.json", dir);
    o = opts(out, "700,500", &x);
    o.state_file = bad;
    assert_int_not_equal(pfi_sweep_run(&o, &res), PFI_OK);
    assert_false(res.usage);
    assert_non_null(strstr(x.last, "(no cap was changed)"));
    assert_int_equal(res.runs, 0);
    for (size_t i = 0; i < 4; i++) assert_near(hw_cap(i), 700, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(short_sweep),
        cmocka_unit_test(stale_state_restored_first),
        cmocka_unit_test(refusals_change_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
