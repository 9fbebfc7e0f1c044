/* test_gpu_read_only.c — the GPU layer opened read-only (what `pfi gpu
 * info` uses, issue 17 item 7) on the NVML test double: every value the
 * command prints is read (limits, the enforced limit set out of band, the
 * instant power field, clocks, processes), a cap write is refused before it
 * reaches NVML, and the double counts no call of any setter — while a
 * read-write open does count one, so the count can fail. An old driver's
 * library (no field values, enforced or default limit, energy, versioned
 * process lists) reads the rest and notes what is missing, never failing. */
#include "../testutil.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "gpu.h"

typedef unsigned (*calls_fn)(void);

static char state[64], enforced[64];

static void tmpfile_named(char *buf, size_t n, const char *content)
{
    snprintf(buf, n, "/tmp/pfi-ro-XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    assert_true(write(fd, content, strlen(content)) == (ssize_t)strlen(content));
    close(fd);
}

static void env(const char *lib)
{
    setenv("PFI_NVML_LIBRARY", lib, 1);
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_STATE", state, 1);
    setenv("FAKE_NVML_ENFORCED", enforced, 1); /* GPU 1: 450 W, set out of band */
    setenv("FAKE_NVML_PROCS", "0:77,0:78", 1);
    unsetenv("FAKE_NVML_UNSUPPORTED");
}

static void read_only_nvml(void **s)
{
    (void)s;
    tmpfile_named(state, sizeof state, "700000\n700000\n");
    tmpfile_named(enforced, sizeof enforced, "0\n450000\n");
    env(PFI_FAKE_NVML);
    /* kept loaded, so its setter count lives across the opens below */
    void *dl = dlopen(PFI_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    calls_fn calls = (calls_fn)dlsym(dl, "fake_nvml_setter_calls");
    assert_non_null(calls);
    assert_int_equal(calls(), 0);

    pfi_gpu *g;
    pfi_error e;
    assert_int_equal(pfi_gpu_open_read_only("nvml", NULL, &g, &e), PFI_OK);
    assert_true(pfi_gpu_is_read_only(g));
    pfi_gpu_info in;
    assert_int_equal(pfi_gpu_info_get(g, 1, &in, NULL), PFI_OK);
    assert_near(in.cap_default_w, 700, 1e-9);
    assert_near(in.cap_min_w, 200, 1e-9);
    pfi_gpu_sample x;
    assert_int_equal(pfi_gpu_sample_get(g, 1, &x, NULL), PFI_OK);
    unsigned want =
        PFI_GS_POWER | PFI_GS_POWER_INSTANT | PFI_GS_CAP | PFI_GS_ENFORCED | PFI_GS_CLOCKS;
    assert_int_equal(x.have & want, want);
    assert_near(x.cap_w, 700, 1e-9);
    assert_near(x.enforced_w, 450, 1e-9); /* below the cap: out of band */
    /* the double's field is its power usage + 5 W (+- 6 W of ripple between the reads) */
    assert_near(x.power_instant_w - x.power_w, 5, 6.01);
    assert_true(x.power_instant_w != x.power_w);
    assert_near(x.sm_clock_mhz, 1980, 1e-9);
    assert_near(x.mem_clock_mhz, 2619, 1e-9);
    pfi_gpu_proc p[4];
    size_t np;
    assert_int_equal(pfi_gpu_processes(g, 0, p, 4, &np, NULL), PFI_OK);
    assert_int_equal(np, 2);
    assert_int_equal(p[1].pid, 78);
    assert_near(p[1].used_mib, 60000, 1e-6);
    /* a write is refused before NVML: the limit stays, no setter is called */
    assert_int_equal(pfi_gpu_set_cap(g, 0, 400, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "read-only"));
    assert_int_equal(pfi_gpu_sample_get(g, 0, &x, NULL), PFI_OK);
    assert_near(x.cap_w, 700, 1e-9);
    pfi_gpu_close(g);
    assert_int_equal(calls(), 0);

    /* the count counts: a read-write open that sets a cap calls one setter */
    assert_int_equal(pfi_gpu_open("nvml", NULL, &g, NULL), PFI_OK);
    assert_false(pfi_gpu_is_read_only(g));
    assert_int_equal(pfi_gpu_set_cap(g, 0, 500, NULL), PFI_OK);
    pfi_gpu_close(g);
    assert_int_equal(calls(), 1);
    dlclose(dl);
    unlink(state);
    unlink(enforced);
}

static void read_only_old_driver(void **s)
{
    (void)s;
    tmpfile_named(state, sizeof state, "650000\n700000\n");
    tmpfile_named(enforced, sizeof enforced, "");
    env(PFI_FAKE_NVML_OLD);
    void *dl = dlopen(PFI_FAKE_NVML_OLD, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    calls_fn calls = (calls_fn)dlsym(dl, "fake_nvml_setter_calls");
    assert_non_null(calls);
    assert_null(dlsym(dl, "nvmlDeviceGetFieldValues")); /* it is the old one */
    pfi_gpu *g;
    pfi_error e;
    assert_int_equal(pfi_gpu_open_read_only("nvml", NULL, &g, &e), PFI_OK);
    pfi_gpu_info in;
    assert_int_equal(pfi_gpu_info_get(g, 0, &in, NULL), PFI_OK);
    assert_true(isnan(in.cap_default_w));
    assert_near(in.cap_max_w, 700, 1e-9);
    pfi_gpu_sample x;
    assert_int_equal(pfi_gpu_sample_get(g, 0, &x, &e), PFI_OK);
    assert_true(x.have & PFI_GS_POWER);
    assert_true(x.have & PFI_GS_CAP);
    assert_near(x.cap_w, 650, 1e-9);
    assert_false(x.have & (PFI_GS_ENFORCED | PFI_GS_POWER_INSTANT | PFI_GS_ENERGY));
    const char *u = pfi_gpu_unsupported(g, 0);
    assert_non_null(strstr(u, "enforced_power_limit"));
    assert_non_null(strstr(u, "field_power_instant"));
    assert_non_null(strstr(u, "power_limit_default"));
    pfi_gpu_proc p[4];
    size_t np;
    assert_int_equal(pfi_gpu_processes(g, 0, p, 4, &np, NULL), PFI_OK); /* the v1 list */
    assert_int_equal(np, 2);
    assert_int_equal(p[0].pid, 77);
    assert_near(p[0].used_mib, 30000, 1e-6);
    assert_int_equal(pfi_gpu_set_cap(g, 0, 400, NULL), PFI_EPERM);
    pfi_gpu_close(g);
    assert_int_equal(calls(), 0);
    dlclose(dl);
    unlink(state);
    unlink(enforced);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(read_only_nvml),
                                       cmocka_unit_test(read_only_old_driver)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
