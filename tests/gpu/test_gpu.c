/* test_gpu.c — the GPU backends: the simulator (the model's operating point
 * after a cap settles, the first-order response with its time constant on
 * a sped-up clock, step logs, the hardware state kept across opens, option
 * errors, caps out of range) and the real NVML code path against the NVML
 * test double (power, limits, clocks, energy, processes, NOT_SUPPORTED reads
 * noted and not fatal, NO_PERMISSION on set, a failing nvmlInit). */
#include "../testutil.h"

#include <stdio.h>
#include <unistd.h>

#include "clock.h"
#include "datapath.h"
#include "gpu.h"
#include "recon_io.h"

static pfi_recon R;

static int setup(void **s)
{
    (void)s;
    char sp[4096], pp[4096];
    setenv("PFI_DATA_DIR", PFI_SOURCE_DIR "/data", 1);
    if (pfi_data_path(NULL, "reconstruction/spec.csv", sp, sizeof sp, NULL) ||
        pfi_data_path(NULL, "reconstruction/params.csv", pp, sizeof pp, NULL) ||
        pfi_recon_load(sp, pp, &R, NULL))
        return -1;
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    pfi_recon_dispose(&R);
    return 0;
}

static void sim_dynamics(void **s)
{
    (void)s;
    assert_int_equal(pfi_clock_set(200, 1767225600, NULL),
                     PFI_OK); /* 200x: tau = 2 s takes 10 ms */
    pfi_gpu *g;
    pfi_error e;
    assert_int_equal(
        pfi_gpu_open("sim:gpus=4,job=7:moe-ft-qwen30ba3b-x8@0-3,noise=0,tau=2", &R, &g, &e),
        PFI_OK);
    assert_string_equal(pfi_gpu_backend(g), "sim");
    assert_int_equal(pfi_gpu_count(g), 4);
    pfi_gpu_info in;
    assert_int_equal(pfi_gpu_info_get(g, 0, &in, NULL), PFI_OK);
    assert_near(in.cap_min_w, 200, 1e-9);
    assert_near(in.cap_max_w, 700, 1e-9);
    pfi_clock_sleep(20); /* past loading */
    pfi_gpu_sample a, b;
    assert_int_equal(pfi_gpu_sample_get(g, 0, &a, NULL), PFI_OK);
    assert_true(a.have & PFI_GS_PROF);
    assert_true(a.util_gpu_pct > 50);
    double t_full = pfi_gpu_sim_tokens_per_s(g, 0);
    assert_true(t_full > 0);
    double t_set = pfi_clock_now();
    for (size_t i = 0; i < 4; i++) assert_int_equal(pfi_gpu_set_cap(g, i, 400, NULL), PFI_OK);
    /* right after the change: still near the old power; after 5 tau: at the model's point.
       "Right after" is a tenth of tau (1 ms of wall time here): a loaded machine
       that took longer to get the sample skips that check rather than fail it */
    assert_int_equal(pfi_gpu_sample_get(g, 0, &b, NULL), PFI_OK);
    if (pfi_clock_now() - t_set < 0.2) assert_true(b.power_w > 450);
    else
        print_message("sample %.2f clock s after the cap change: lag check skipped\n",
                      pfi_clock_now() - t_set);
    pfi_clock_sleep(24); /* 12 tau */
    assert_int_equal(pfi_gpu_sample_get(g, 0, &b, NULL), PFI_OK);
    assert_true(b.power_w <= 400 && b.power_w > 330);
    assert_near(b.cap_w, 400, 1e-9);
    assert_true(b.throttle_reasons & 0x4);
    double t_cap = pfi_gpu_sim_tokens_per_s(g, 0);
    assert_true(t_cap < t_full && t_cap > 0.3 * t_full);
    /* the same point as the physical model */
    const pfi_recon_group *rg = pfi_recon_find(&R, "moe-ft-qwen30ba3b-x8", "H200");
    pfi_op op;
    pfi_phys_at_cap(rg->hw, &rg->job, 400, &op);
    assert_near(t_cap, op.tokens_per_s, 1e-3 * op.tokens_per_s);
    assert_near(b.power_w, op.power_w, 1e-3 * op.power_w);
    /* caps outside the device's range */
    assert_int_equal(pfi_gpu_set_cap(g, 0, 150, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "outside"));
    assert_int_equal(pfi_gpu_set_cap(g, 9, 300, &e), PFI_ENOTFOUND);
    /* processes: the job and its id */
    pfi_gpu_proc p[4];
    size_t np;
    assert_int_equal(pfi_gpu_processes(g, 2, p, 4, &np, NULL), PFI_OK);
    assert_int_equal(np, 1);
    assert_string_equal(p[0].job_id, "7");
    pfi_gpu_close(g);
    pfi_clock_set(1, PFI_CLOCK_DEFAULT_EPOCH, NULL);
}

static void sim_steplog_and_state(void **s)
{
    (void)s;
    assert_int_equal(pfi_clock_set(500, 1767225600, NULL), PFI_OK);
    char dir[] = "/tmp/pfi-gpu-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char spec[1024], log[200], state[200];
    snprintf(state, sizeof state, "%s/hw.json", dir);
    snprintf(log, sizeof log, "%s/steps.jsonl", dir);
    snprintf(spec, sizeof spec, "sim:gpus=2,job=a:dense-ft-llama70b-x8-compile@0-1,idle,state=%s",
             state);
    pfi_gpu *g;
    assert_int_equal(pfi_gpu_open(spec, &R, &g, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_set_cap(g, 1, 450, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_sim_job_start(g, 0, log, NULL), PFI_OK);
    pfi_clock_sleep(60);
    pfi_gpu_sample x;
    assert_int_equal(pfi_gpu_sample_get(g, 0, &x, NULL), PFI_OK); /* writes the steps so far */
    assert_int_equal(pfi_gpu_sim_job_stop(g, 0, NULL), PFI_OK);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        assert_non_null(strstr(line, "\"tokens_per_s\""));
        n++;
    }
    fclose(f);
    assert_true(n >= 5); /* 45 s of training at ~2-3 s per step */
    pfi_gpu_close(g);
    /* the simulated hardware keeps its cap across opens, like a real GPU */
    assert_int_equal(pfi_gpu_open(spec, &R, &g, NULL), PFI_OK);
    pfi_gpu_sample y;
    assert_int_equal(pfi_gpu_sample_get(g, 1, &y, NULL), PFI_OK);
    assert_near(y.cap_w, 450, 1e-9);
    pfi_gpu_close(g);
    /* a corrupt state file is an error naming the file */
    f = fopen(state, "w");
    fputs("{\"caps_w\": [700]}", f);
    fclose(f);
    pfi_error e;
    assert_int_not_equal(pfi_gpu_open(spec, &R, &g, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "hw.json"));
    unlink(state);
    unlink(log);
    rmdir(dir);
    pfi_clock_set(1, PFI_CLOCK_DEFAULT_EPOCH, NULL);
}

/* the response model's actuation delay: nothing moves for delay s, then the lag */
static void sim_delay(void **s)
{
    (void)s;
    assert_int_equal(pfi_clock_set(200, 1767225600, NULL), PFI_OK); /* 10 clock s = 50 ms */
    pfi_gpu *g;
    pfi_error e;
    assert_int_equal(pfi_gpu_open("sim:gpus=2,job=7:moe-ft-qwen30ba3b-x8@0-1,noise=0,tau=0.5,"
                                  "delay=10",
                                  &R, &g, &e),
                     PFI_OK);
    pfi_clock_sleep(20); /* past loading */
    pfi_gpu_sample a, b;
    assert_int_equal(pfi_gpu_sample_get(g, 0, &a, NULL), PFI_OK);
    double t_set = pfi_clock_now();
    assert_int_equal(pfi_gpu_set_cap(g, 0, 400, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_sample_get(g, 0, &b, NULL), PFI_OK);
    /* within the delay the clock has not moved: the same power exactly (a loaded
       machine that took longer than the delay to get here skips the check) */
    if (pfi_clock_now() - t_set < 9) assert_near(b.power_w, a.power_w, 1e-9 * a.power_w);
    else print_message("sample after the delay: delay check skipped\n");
    pfi_clock_sleep(17); /* delay + 14 tau */
    assert_int_equal(pfi_gpu_sample_get(g, 0, &b, NULL), PFI_OK);
    const pfi_recon_group *rg = pfi_recon_find(&R, "moe-ft-qwen30ba3b-x8", "H200");
    pfi_op op;
    pfi_phys_at_cap(rg->hw, &rg->job, 400, &op);
    assert_near(b.power_w, op.power_w, 1e-3 * op.power_w);
    pfi_gpu_close(g);
}

static void sim_bad_options(void **s)
{
    (void)s;
    static const char *const bad[][2] = {
        {"sim:gpus=0", "gpus"},
        {"sim:gpus=x", "gpus"},
        {"sim:model=A100", "model"},
        {"sim:tau=-1", "tau"},
        {"sim:delay=-1", "delay"},
        {"sim:delay=61", "delay"},
        {"sim:frobnicate=1", "unknown"},
        {"sim:job=17", "ID:GROUP@"},
        {"sim:job=1:nope@0-1", "nope"},
        {"sim:gpus=2,job=1:moe-ft-qwen30ba3b-x8@0-3", "GPUs"},
        {"sim:job=1:moe-ft-qwen30ba3b-x8@0-3,job=2:moe-ft-qwen30ba3b-x8@2-4", "two jobs"},
        {"gpu-magic", "unknown GPU backend"},
        {"nvml:x", "no options"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pfi_gpu *g = NULL;
        pfi_error e;
        assert_int_not_equal(pfi_gpu_open(bad[i][0], &R, &g, &e), PFI_OK);
        if (!strstr(e.msg, bad[i][1])) fail_msg("%s: '%s' lacks '%s'", bad[i][0], e.msg, bad[i][1]);
        assert_null(g);
    }
}

static void nvml_double(void **s)
{
    (void)s;
    char state[] = "/tmp/pfi-nvml-XXXXXX";
    int fd = mkstemp(state);
    assert_true(fd >= 0);
    close(fd);
    unlink(state);
    setenv("PFI_NVML_LIBRARY", PFI_FAKE_NVML, 1);
    setenv("FAKE_NVML_GPUS", "3", 1);
    setenv("FAKE_NVML_STATE", state, 1);
    setenv("FAKE_NVML_PROCS", "1:4242,1:4243", 1);
    setenv("FAKE_NVML_UNSUPPORTED", "nvmlDeviceGetFieldValues,nvmlDeviceGetTemperature", 1);
    pfi_gpu *g;
    pfi_error e;
    assert_int_equal(pfi_gpu_open("nvml", NULL, &g, &e), PFI_OK);
    assert_string_equal(pfi_gpu_backend(g), "nvml");
    assert_int_equal(pfi_gpu_count(g), 3);
    pfi_gpu_info in;
    assert_int_equal(pfi_gpu_info_get(g, 2, &in, NULL), PFI_OK);
    assert_string_equal(in.uuid, "GPU-fa4e0000-0000-4000-8000-000000000002");
    assert_near(in.cap_min_w, 200, 1e-9);
    assert_near(in.cap_max_w, 700, 1e-9);
    assert_near(in.cap_default_w, 700, 1e-9);
    pfi_gpu_sample x;
    assert_int_equal(pfi_gpu_sample_get(g, 0, &x, NULL), PFI_OK);
    assert_true((x.have & (PFI_GS_POWER | PFI_GS_CAP | PFI_GS_ENFORCED | PFI_GS_CLOCKS |
                           PFI_GS_UTIL | PFI_GS_MEM | PFI_GS_ENERGY)) ==
                (PFI_GS_POWER | PFI_GS_CAP | PFI_GS_ENFORCED | PFI_GS_CLOCKS | PFI_GS_UTIL |
                 PFI_GS_MEM | PFI_GS_ENERGY));
    assert_false(x.have &
                 (PFI_GS_TEMP | PFI_GS_POWER_INSTANT | PFI_GS_PROF)); /* unsupported: left out */
    assert_near(x.cap_w, 700, 1e-9);
    assert_true(x.power_w > 550 && x.power_w < 700);
    assert_near(x.fb_used_mib, 60000, 1e-6);
    assert_non_null(strstr(pfi_gpu_unsupported(g, 0), "temperature"));
    assert_non_null(strstr(pfi_gpu_unsupported(g, 0), "field_power_instant"));
    /* set a cap: W -> mW, seen in the limit and kept in the double's "hardware" */
    assert_int_equal(pfi_gpu_set_cap(g, 1, 450, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_sample_get(g, 1, &x, NULL), PFI_OK);
    assert_near(x.cap_w, 450, 1e-9);
    assert_near(x.enforced_w, 450, 1e-9);
    assert_true(x.power_w < 450);
    assert_int_equal(pfi_gpu_set_cap(g, 1, 800, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "outside"));
    pfi_gpu_proc p[4];
    size_t np;
    assert_int_equal(pfi_gpu_processes(g, 1, p, 4, &np, NULL), PFI_OK);
    assert_int_equal(np, 2);
    assert_int_equal(p[0].pid, 4242);
    assert_int_equal(pfi_gpu_processes(g, 0, p, 4, &np, NULL), PFI_OK);
    assert_int_equal(np, 0);
    pfi_gpu_close(g);
    /* more processes than the first buffer (64): NVML writes nothing and
     * answers INSUFFICIENT_SIZE with the count it needs; every PID read
     * must be one of the GPU's, none left over from an unwritten buffer */
    {
        char procs[4096];
        size_t off = 0;
        for (unsigned k = 0; k < 100; k++)
            off += (size_t)snprintf(procs + off, sizeof procs - off, "%s2:%u", k ? "," : "",
                                    10000 + k);
        setenv("FAKE_NVML_PROCS", procs, 1);
        assert_int_equal(pfi_gpu_open("nvml", NULL, &g, NULL), PFI_OK);
        pfi_gpu_proc many[128];
        assert_int_equal(pfi_gpu_processes(g, 2, many, 128, &np, NULL), PFI_OK);
        assert_int_equal(np, 100);
        for (size_t k = 0; k < np; k++) assert_int_equal(many[k].pid, 10000 + k);
        pfi_gpu_close(g);
        setenv("FAKE_NVML_PROCS", "1:4242,1:4243", 1);
    }
    /* NO_PERMISSION on set: PFI_EPERM with NVML's message; reading still works */
    setenv("FAKE_NVML_NO_PERMISSION", "1", 1);
    assert_int_equal(pfi_gpu_open("nvml", NULL, &g, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_set_cap(g, 0, 400, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "Insufficient Permissions"));
    assert_int_equal(pfi_gpu_sample_get(g, 1, &x, NULL), PFI_OK);
    assert_near(x.cap_w, 450, 1e-9); /* from the state file: the hardware kept it */
    pfi_gpu_close(g);
    unsetenv("FAKE_NVML_NO_PERMISSION");
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    assert_int_not_equal(pfi_gpu_open("nvml", NULL, &g, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "nvmlInit"));
    unsetenv("FAKE_NVML_INIT_FAIL");
    setenv("PFI_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(pfi_gpu_open("nvml", NULL, &g, &e), PFI_ENOTFOUND);
    assert_non_null(strstr(e.msg, "cannot load"));
    unsetenv("PFI_NVML_LIBRARY");
    unlink(state);
}

static void clock_scale(void **s)
{
    (void)s;
    assert_int_equal(pfi_clock_set(50, 1767225600, NULL), PFI_OK);
    double w0 = pfi_wall_monotonic(), c0 = pfi_clock_now();
    pfi_clock_sleep(5); /* 0.1 s of wall time */
    double dw = pfi_wall_monotonic() - w0, dc = pfi_clock_now() - c0;
    assert_true(dw >= 0.09 &&
                dw < 2.5); /* scaled: unscaled would be 5 s; generous for a loaded machine */
    assert_near(dc / dw, 50, 5);
    pfi_error e;
    assert_int_equal(pfi_clock_set(0, NAN, &e), PFI_ERANGE);
    setenv("PFI_TIME_SCALE", "fast", 1);
    assert_int_equal(pfi_clock_from_env(&e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "PFI_TIME_SCALE"));
    unsetenv("PFI_TIME_SCALE");
    pfi_clock_set(1, PFI_CLOCK_DEFAULT_EPOCH, NULL);
}

/* the backend table (gpu_backends.c) writes --backend's help: every row's
   name, text and options, the first the default; and selection reads it */
static void backend_table(void **s)
{
    (void)s;
    const pfi_gpu_backend_info *t;
    size_t n = pfi_gpu_backends(&t);
    assert_true(n >= 2);
    const char *help = pfi_gpu_backend_help();
    char first[64];
    snprintf(first, sizeof first, "%s (default)", t[0].name);
    assert_non_null(strstr(help, first));
    for (size_t i = 0; i < n; i++) {
        assert_non_null(strstr(help, t[i].name));
        assert_non_null(strstr(help, t[i].help));
        assert_non_null(strstr(help, t[i].options));
        const char *opts;
        assert_ptr_equal(pfi_gpu_backend_of(t[i].name, &opts), &t[i]);
        assert_string_equal(opts, "");
    }
    assert_null(pfi_gpu_backend_of("nosuch", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_dynamics),          cmocka_unit_test(sim_delay),
        cmocka_unit_test(sim_steplog_and_state), cmocka_unit_test(sim_bad_options),
        cmocka_unit_test(nvml_double),           cmocka_unit_test(clock_scale),
        cmocka_unit_test(backend_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
