/* test_gpu_parallel.c — pfi_gpu_set_caps (issue 19 item 2: an agent
 * applies all of its GPUs' caps in parallel) on the NVML test double, which
 * makes each limit setter take a while (FAKE_NVML_SET_DELAY_MS) and counts
 * the most setters in flight at once. Eight GPUs set together overlap (all
 * eight in flight), eight pfi_gpu_set_cap calls in a row never do (so the
 * count can fail); a sampler thread reading every GPU meanwhile reads each
 * cap whole (the old or the new; run under TSan too); one GPU's failure is that GPU's alone, every
 * other cap is set; a read-only open refuses every one before NVML; the sim sets them one after
 * another with the same results. No elapsed time is asserted. */
#include "../testutil.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "gpu.h"

typedef unsigned (*count_fn)(void);
typedef void (*reset_fn)(void);

#define NG 8

static char state[64];
static void *dl;
static count_fn max_in_flight, setter_calls;
static reset_fn reset;

static int setup(void **s)
{
    (void)s;
    snprintf(state, sizeof state, "/tmp/pfi-par-XXXXXX");
    int fd = mkstemp(state);
    if (fd < 0) return -1;
    close(fd);
    setenv("PFI_NVML_LIBRARY", PFI_FAKE_NVML, 1);
    setenv("FAKE_NVML_GPUS", "8", 1);
    setenv("FAKE_NVML_STATE", state, 1);
    unsetenv("FAKE_NVML_SET_FAIL");
    unsetenv("FAKE_NVML_NO_PERMISSION");
    /* kept loaded, so its counters are the ones the backend's dlopen sees */
    dl = dlopen(PFI_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    if (!dl) return -1;
    max_in_flight = (count_fn)dlsym(dl, "fake_nvml_setters_max_in_flight");
    setter_calls = (count_fn)dlsym(dl, "fake_nvml_setter_calls");
    reset = (reset_fn)dlsym(dl, "fake_nvml_setters_reset");
    return max_in_flight && setter_calls && reset ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    unlink(state);
    dlclose(dl);
    return 0;
}

/* every device's limit, as the hardware keeps it between processes */
static void limits_w(unsigned w)
{
    FILE *f = fopen(state, "w");
    assert_non_null(f);
    for (int k = 0; k < NG; k++) fprintf(f, "%u\n", w * 1000);
    fclose(f);
}

static double cap_of(pfi_gpu *g, size_t i)
{
    pfi_gpu_sample x;
    assert_int_equal(pfi_gpu_sample_get(g, i, &x, NULL), PFI_OK);
    assert_true(x.have & PFI_GS_CAP);
    return x.cap_w;
}

static void overlap(void **s)
{
    (void)s;
    /* long enough that eight threads' setters overlap however slowly they start */
    setenv("FAKE_NVML_SET_DELAY_MS", "250", 1);
    limits_w(700);
    pfi_gpu *g;
    pfi_error e;
    assert_int_equal(pfi_gpu_open("nvml", NULL, &g, &e), PFI_OK);
    assert_int_equal(pfi_gpu_count(g), NG);
    size_t idx[NG];
    double cap[NG];
    pfi_status rc[NG];
    pfi_error errs[NG];
    for (size_t k = 0; k < NG; k++) idx[k] = k, cap[k] = 300 + 10 * k, rc[k] = PFI_EIO;
    reset();
    unsigned calls0 = setter_calls();
    assert_int_equal(pfi_gpu_set_caps(g, idx, cap, NG, rc, errs), PFI_OK);
    /* it answered after all of them: every setter has returned, every cap is there */
    assert_int_equal(setter_calls() - calls0, NG);
    assert_int_equal(max_in_flight(), NG);
    for (size_t k = 0; k < NG; k++) {
        assert_int_equal(rc[k], PFI_OK);
        assert_int_equal(errs[k].code, PFI_OK);
        assert_near(cap_of(g, k), 300 + 10 * k, 1e-9);
    }

    /* one at a time: never two in flight */
    reset();
    for (size_t k = 0; k < NG; k++) assert_int_equal(pfi_gpu_set_cap(g, k, 400, NULL), PFI_OK);
    assert_int_equal(max_in_flight(), 1);
    for (size_t k = 0; k < NG; k++) assert_near(cap_of(g, k), 400, 1e-9);

    /* a subset, in any order, with the rest untouched */
    size_t sub[3] = {6, 1, 4};
    double subcap[3] = {610, 210, 410};
    reset();
    assert_int_equal(pfi_gpu_set_caps(g, sub, subcap, 3, NULL, NULL), PFI_OK);
    assert_int_equal(max_in_flight(), 3);
    assert_near(cap_of(g, 6), 610, 1e-9);
    assert_near(cap_of(g, 1), 210, 1e-9);
    assert_near(cap_of(g, 4), 410, 1e-9);
    assert_near(cap_of(g, 0), 400, 1e-9);
    assert_near(cap_of(g, 7), 400, 1e-9);
    pfi_gpu_close(g);
    unsetenv("FAKE_NVML_SET_DELAY_MS");
}

/* a sampler reading every GPU while their caps are set */
typedef struct sampler {
    pfi_gpu *g;
    atomic_int stop;
    unsigned samples, bad;
} sampler;

static void *sample_loop(void *p)
{
    sampler *x = p;
    while (!atomic_load(&x->stop))
        for (size_t i = 0; i < NG; i++) {
            pfi_gpu_sample y;
            if (pfi_gpu_sample_get(x->g, i, &y, NULL) != PFI_OK || !(y.have & PFI_GS_CAP) ||
                !(y.cap_w == 700 || y.cap_w == 250))
                x->bad++;
            x->samples++;
        }
    return NULL;
}

static void sample_while_setting(void **s)
{
    (void)s;
    setenv("FAKE_NVML_SET_DELAY_MS", "100", 1);
    limits_w(700);
    sampler x = {.samples = 0, .bad = 0};
    atomic_init(&x.stop, 0);
    assert_int_equal(pfi_gpu_open("nvml", NULL, &x.g, NULL), PFI_OK);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sample_loop, &x), 0);
    size_t idx[NG];
    double cap[NG];
    for (size_t k = 0; k < NG; k++) idx[k] = k, cap[k] = 250;
    reset();
    assert_int_equal(pfi_gpu_set_caps(x.g, idx, cap, NG, NULL, NULL), PFI_OK);
    atomic_store(&x.stop, 1);
    pthread_join(th, NULL);
    assert_true(x.samples > 0);
    assert_int_equal(x.bad, 0); /* every sample read a cap, the old or the new one */
    assert_int_equal(max_in_flight(), NG);
    for (size_t k = 0; k < NG; k++) assert_near(cap_of(x.g, k), 250, 1e-9);
    pfi_gpu_close(x.g);
    unsetenv("FAKE_NVML_SET_DELAY_MS");
}

static void one_fails(void **s)
{
    (void)s;
    setenv("FAKE_NVML_SET_FAIL", "3", 1);
    limits_w(400);
    pfi_gpu *g;
    assert_int_equal(pfi_gpu_open("nvml", NULL, &g, NULL), PFI_OK);
    size_t idx[NG + 1];
    double cap[NG + 1];
    pfi_status rc[NG + 1];
    pfi_error errs[NG + 1];
    for (size_t k = 0; k < NG; k++) idx[k] = k, cap[k] = 500;
    cap[5] = 900;                /* outside 200..700 W: refused before NVML */
    idx[NG] = 42, cap[NG] = 500; /* no such GPU */
    assert_int_equal(pfi_gpu_set_caps(g, idx, cap, NG + 1, rc, errs), PFI_EIO); /* GPU 3's */
    for (size_t k = 0; k < NG; k++) {
        if (k == 3 || k == 5) continue;
        assert_int_equal(rc[k], PFI_OK);
        assert_near(cap_of(g, k), 500, 1e-9);
    }
    assert_int_equal(rc[3], PFI_EIO);
    assert_int_equal(errs[3].code, PFI_EIO);
    assert_non_null(strstr(errs[3].msg, "GPU 3"));
    assert_non_null(strstr(errs[3].msg, "Unknown Error"));
    assert_near(cap_of(g, 3), 400, 1e-9);
    assert_int_equal(rc[5], PFI_ERANGE);
    assert_non_null(strstr(errs[5].msg, "900"));
    assert_near(cap_of(g, 5), 400, 1e-9);
    assert_int_equal(rc[NG], PFI_ENOTFOUND);
    assert_non_null(strstr(errs[NG].msg, "GPU 42"));
    pfi_gpu_close(g);
    unsetenv("FAKE_NVML_SET_FAIL");
}

static void read_only(void **s)
{
    (void)s;
    limits_w(500);
    pfi_gpu *g;
    assert_int_equal(pfi_gpu_open_read_only("nvml", NULL, &g, NULL), PFI_OK);
    size_t idx[2] = {0, 1};
    double cap[2] = {300, 300};
    pfi_status rc[2];
    pfi_error errs[2];
    unsigned calls0 = setter_calls();
    assert_int_equal(pfi_gpu_set_caps(g, idx, cap, 2, rc, errs), PFI_EPERM);
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(rc[k], PFI_EPERM);
        assert_non_null(strstr(errs[k].msg, "read-only"));
        assert_near(cap_of(g, k), 500, 1e-9);
    }
    assert_int_equal(setter_calls(), calls0);
    pfi_gpu_close(g);
}

static void sim_sequential(void **s)
{
    (void)s;
    pfi_gpu *g;
    pfi_error e;
    assert_int_equal(pfi_gpu_open("sim:gpus=4,noise=0", NULL, &g, &e), PFI_OK);
    size_t idx[3] = {0, 2, 3};
    double cap[3] = {350, 9999, 450};
    pfi_status rc[3];
    pfi_error errs[3];
    assert_int_equal(pfi_gpu_set_caps(g, idx, cap, 3, rc, errs), PFI_ERANGE);
    assert_int_equal(rc[0], PFI_OK);
    assert_int_equal(rc[1], PFI_ERANGE);
    assert_int_equal(rc[2], PFI_OK);
    assert_near(cap_of(g, 0), 350, 1e-9);
    assert_near(cap_of(g, 3), 450, 1e-9);
    pfi_gpu_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overlap), cmocka_unit_test(sample_while_setting),
        cmocka_unit_test(one_fails), cmocka_unit_test(read_only), cmocka_unit_test(sim_sequential)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
