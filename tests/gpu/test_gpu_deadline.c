/* test_gpu_deadline.c — call deadlines (gpu.h: pfi_gpu_set_call_timeout,
 * gpu_worker.c; issue 40 (e)) on the NVML test double, whose
 * FAKE_NVML_STALL file makes every call on one device take longer, as a
 * hung GSP call does, and FAKE_NVML_STALL_GLOBAL makes that stall hold a
 * driver-wide lock every device's call takes.
 *
 * One sick GPU: its call is abandoned at the deadline and fails; the
 * other seven are sampled and set; while its call is blocked it takes no
 * call (each fails at once, naming the timeout); when the call returns the
 * GPU stays unavailable and the late result is told once; a rescan that
 * answers brings it back. A driver-wide stall: every overrunning GPU is
 * unavailable after the episode, the rescans (one at a time) bring the
 * healthy ones back and find the sick one alone. Without a deadline the
 * call waits for the device (the old behaviour). No elapsed time is
 * asserted: every wait polls with a wall-clock deadline. */
#include "../testutil.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"

#define NG 8

static char state[64], stall_path[64];

static int setup(void **s)
{
    (void)s;
    snprintf(state, sizeof state, "/tmp/pfi-dl-XXXXXX");
    int fd = mkstemp(state);
    if (fd < 0) return -1;
    close(fd);
    snprintf(stall_path, sizeof stall_path, "/tmp/pfi-dl-stall-XXXXXX");
    fd = mkstemp(stall_path);
    if (fd < 0) return -1;
    close(fd);
    setenv("PFI_NVML_LIBRARY", PFI_FAKE_NVML, 1);
    setenv("FAKE_NVML_GPUS", "8", 1);
    setenv("FAKE_NVML_STATE", state, 1);
    setenv("FAKE_NVML_STALL", stall_path, 1);
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    unlink(state);
    unlink(stall_path);
    return 0;
}

static void stall(int gpu, unsigned ms)
{
    FILE *f = fopen(stall_path, "w");
    assert_non_null(f);
    if (gpu >= 0) fprintf(f, "%d %u\n", gpu, ms);
    fclose(f);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* polls (every 20 ms, up to 30 s of wall clock) until GPU i's abandoned
 * call has returned and been told; its sentence in buf */
static void wait_late(pfi_gpu *g, size_t i, char *buf, size_t len)
{
    for (double end = now_s() + 30; now_s() < end;) {
        if (pfi_gpu_late_take(g, i, buf, len)) return;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("GPU %zu: its abandoned call was never told as returned", i);
}

static pfi_gpu *open_all(double timeout_s)
{
    pfi_gpu *g;
    pfi_error e;
    stall(-1, 0);
    assert_int_equal(pfi_gpu_open("nvml", NULL, &g, &e), PFI_OK);
    assert_int_equal(pfi_gpu_count(g), NG);
    pfi_gpu_set_call_timeout(g, timeout_s);
    return g;
}

static void one_sick_gpu(void **s)
{
    (void)s;
    unsetenv("FAKE_NVML_STALL_GLOBAL");
    pfi_gpu *g = open_all(0.3);
    size_t idx[NG];
    double cap[NG];
    pfi_gpu_sample smp[NG];
    pfi_status rc[NG];
    pfi_error errs[NG];
    for (size_t k = 0; k < NG; k++) idx[k] = k, cap[k] = 300;
    stall(3, 1000);
    /* the sick GPU's set is abandoned at the deadline; the others are set */
    assert_int_equal(pfi_gpu_set_caps(g, idx, cap, NG, rc, errs), PFI_EIO);
    for (size_t k = 0; k < NG; k++) {
        if (k == 3) {
            assert_int_equal(rc[k], PFI_EIO);
            assert_non_null(strstr(errs[k].msg, "no answer within 0.3 s"));
            assert_non_null(strstr(errs[k].msg, "the cap set is abandoned"));
            continue;
        }
        assert_int_equal(rc[k], PFI_OK);
    }
    /* it takes no call (blocked, or overran), and says why; the others are sampled */
    assert_int_equal(pfi_gpu_avail_get(g, 3), PFI_GPU_TIMEOUT);
    pfi_gpu_sample_all(g, idx, NG, smp, rc, errs);
    for (size_t k = 0; k < NG; k++) {
        if (k == 3) {
            assert_int_equal(rc[k], PFI_EIO);
            assert_non_null(strstr(errs[k].msg, "unavailable: timeout"));
            continue;
        }
        assert_int_equal(rc[k], PFI_OK);
        assert_true(smp[k].have & PFI_GS_CAP);
        assert_true(smp[k].cap_w == 300);
    }
    pfi_gpu_info in;
    assert_int_equal(pfi_gpu_info_get(g, 3, &in, NULL), PFI_EIO);
    char late[600];
    wait_late(g, 3, late, sizeof late);
    assert_non_null(strstr(late, "a cap set abandoned at its deadline returned after"));
    assert_non_null(strstr(late, "the cap landed late"));
    assert_non_null(strstr(late, "it alone overran"));
    assert_int_equal(pfi_gpu_late_take(g, 3, late, sizeof late), 0); /* told once */
    /* returned, still unavailable until a rescan answers */
    assert_int_equal(pfi_gpu_avail_get(g, 3), PFI_GPU_TIMEOUT);
    assert_int_equal(pfi_gpu_set_cap(g, 3, 400, NULL), PFI_EIO);
    /* a rescan while it still hangs overruns again */
    assert_int_equal(pfi_gpu_rescan(g, 3), PFI_GPU_TIMEOUT);
    wait_late(g, 3, late, sizeof late);
    assert_non_null(strstr(late, "a rescan abandoned"));
    stall(-1, 0); /* healed */
    assert_int_equal(pfi_gpu_rescan(g, 3), PFI_GPU_OK);
    assert_int_equal(pfi_gpu_info_get(g, 3, &in, NULL), PFI_OK);
    double w;
    assert_int_equal(pfi_gpu_limit_get(g, 3, &w, NULL), PFI_OK);
    assert_true(w == 300); /* the late set landed: the owner's saved cap puts it back (gpu.h) */
    assert_int_equal(pfi_gpu_set_cap(g, 3, 400, NULL), PFI_OK);
    pfi_gpu_close(g);
}

/* a driver-wide stall: the healthy GPUs come back at their rescan, the sick one does not */
static void driver_wide_stall(void **s)
{
    (void)s;
    setenv("FAKE_NVML_STALL_GLOBAL", "1", 1);
    pfi_gpu *g = open_all(0.3);
    size_t idx[NG];
    double cap[NG];
    pfi_status rc[NG];
    pfi_error errs[NG];
    for (size_t k = 0; k < NG; k++) idx[k] = k, cap[k] = 350;
    stall(2, 1000);
    pfi_gpu_set_caps(g, idx, cap, NG, rc, errs);
    assert_int_equal(rc[2], PFI_EIO);
    char late[600];
    for (size_t k = 0; k < NG; k++)
        if (rc[k]) wait_late(g, k, late, sizeof late);
    for (size_t k = 0; k < NG; k++)
        assert_int_equal(pfi_gpu_avail_get(g, k), rc[k] ? PFI_GPU_TIMEOUT : PFI_GPU_OK);
    /* one at a time, the sick one last (as the agent orders them): the
       healthy ones answer, the sick one overruns alone */
    size_t order[NG], n = 0;
    for (size_t k = 0; k < NG; k++)
        if (rc[k] && k != 2) order[n++] = k;
    order[n++] = 2;
    pfi_gpu_avail av[NG];
    pfi_gpu_rescan_all(g, order, n, av);
    for (size_t q = 0; q < n; q++)
        assert_int_equal(av[q], order[q] == 2 ? PFI_GPU_TIMEOUT : PFI_GPU_OK);
    wait_late(g, 2, late, sizeof late);
    assert_non_null(strstr(late, "it alone overran"));
    /* while nothing is blocked, the healthy ones take calls within the deadline */
    pfi_gpu_sample x;
    for (size_t k = 0; k < NG; k++)
        if (k != 2) assert_int_equal(pfi_gpu_sample_get(g, k, &x, NULL), PFI_OK);
    stall(-1, 0);
    unsetenv("FAKE_NVML_STALL_GLOBAL");
    assert_int_equal(pfi_gpu_rescan(g, 2), PFI_GPU_OK);
    pfi_gpu_close(g);
}

/* no deadline: the caller waits for the slow device, which stays available */
static void no_deadline(void **s)
{
    (void)s;
    unsetenv("FAKE_NVML_STALL_GLOBAL");
    pfi_gpu *g = open_all(0);
    stall(1, 300);
    assert_int_equal(pfi_gpu_set_cap(g, 1, 300, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_avail_get(g, 1), PFI_GPU_OK);
    stall(-1, 0);
    pfi_gpu_close(g);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(one_sick_gpu),
        cmocka_unit_test(driver_wide_stall),
        cmocka_unit_test(no_deadline),
    };
    return cmocka_run_group_tests(t, setup, teardown);
}
