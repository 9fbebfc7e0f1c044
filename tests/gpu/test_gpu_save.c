/* test_gpu_save.c — saving and restoring device controls (gpu.h) on the
 * simulated backend: the write-ahead file and its restore after a crash
 * (each GPU back, the file removed), a write-ahead that fails changing
 * nothing, a state file that is a symlink (replaced, its target left
 * alone), a corrupt file (every GPU to its default limit, FILE.corrupt), a
 * saved cap outside the device's range, a GPU not on this node (kept, the
 * file kept), the restore at a writer's end, the range check of loaded caps
 * and the defaults for a lost file. */
#include "../testutil.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu.h"

static char dir[] = "/tmp/pfi-gpusave-XXXXXX";
static char hw[256], path[256];

static int setup(void **s)
{
    (void)s;
    if (!mkdtemp(dir)) return -1;
    snprintf(hw, sizeof hw, "%s/hw.json", dir);
    snprintf(path, sizeof path, "%s/state.json", dir);
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* 4 simulated H200 (200..700 W, default 700 W) with these caps */
static pfi_gpu *open_sim(const double caps[4])
{
    FILE *f = fopen(hw, "w");
    fprintf(f, "{\"gpus\": 4, \"caps_w\": [%g, %g, %g, %g]}\n", caps[0], caps[1], caps[2], caps[3]);
    fclose(f);
    char spec[400];
    snprintf(spec, sizeof spec, "sim:gpus=4,state=%s", hw);
    pfi_gpu *g;
    pfi_error e;
    if (pfi_gpu_open(spec, NULL, &g, &e)) fail_msg("%s", e.msg);
    return g;
}

static double cap_of(pfi_gpu *g, size_t i)
{
    double c;
    assert_int_equal(pfi_gpu_cap_now(g, i, 0, &c, NULL), PFI_OK);
    return c;
}

/* what a restore reported */
typedef struct seen {
    int lost, found, out_of_range, restored, failed;
    long failed_i;
} seen;

static void r_lost(void *ud, const char *p, const pfi_error *why)
{
    ((seen *)ud)->lost++;
    (void)p;
    (void)why;
}
static void r_found(void *ud, const char *p)
{
    ((seen *)ud)->found++;
    (void)p;
}
static void r_oor(void *ud, size_t k, const pfi_saved_cap *c, long i, const pfi_gpu_info *in,
                  const char *which, double v, double repl)
{
    ((seen *)ud)->out_of_range++;
    assert_string_equal(which, "baseline_w");
    assert_near(repl, 700, 0);
}
static void r_restored(void *ud, size_t k, const pfi_saved_cap *c, long i, double from_w)
{
    ((seen *)ud)->restored++;
}
static void r_failed(void *ud, size_t k, const pfi_saved_cap *c, long i, const pfi_error *e)
{
    ((seen *)ud)->failed++;
    ((seen *)ud)->failed_i = i;
}

static pfi_gpu_restore_report report(seen *x)
{
    memset(x, 0, sizeof *x);
    pfi_gpu_restore_report r = {r_lost, r_found, r_oor, r_restored, r_failed, x};
    return r;
}

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void save_crash_restore(void **st)
{
    (void)st;
    const double caps[4] = {700, 650, 500, 700};
    pfi_gpu *g = open_sim(caps);
    pfi_saved_cap saved[PFI_SAVED_CAPS_MAX];
    size_t n = 0;
    pfi_gpu_state_file f;
    pfi_gpu_state_file_init(&f, path, saved, &n, PFI_SAVED_CAPS_MAX);
    size_t idx[2] = {1, 2};
    assert_int_equal(pfi_gpu_save(g, idx, 2, &f, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_saved_pending(&f.saved), 2);
    /* written ahead: the file names both baselines */
    assert_int_equal(access(path, F_OK), 0);
    /* saving again keeps the first baselines */
    for (size_t k = 0; k < 2; k++) assert_int_equal(pfi_gpu_set_cap(g, idx[k], 300, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_save(g, idx, 2, &f, NULL), PFI_OK);
    assert_near(pfi_gpu_saved_get(&f.saved, saved[0].uuid)->baseline_w, 650, 0);
    pfi_gpu_close(g); /* "crash": another process restores from the file */
    const double now[4] = {700, 300, 300, 700};
    g = open_sim(now);
    size_t n2 = 0, pending = 9;
    pfi_saved_cap saved2[PFI_SAVED_CAPS_MAX];
    pfi_gpu_state_file f2;
    pfi_gpu_state_file_init(&f2, path, saved2, &n2, PFI_SAVED_CAPS_MAX);
    seen x;
    pfi_gpu_restore_report r = report(&x);
    assert_int_equal(pfi_gpu_restore(g, &f2, 1, &r, &pending, NULL), PFI_OK);
    assert_int_equal(pending, 0);
    assert_int_equal(x.found, 1);
    assert_int_equal(x.restored, 2);
    assert_near(cap_of(g, 1), 650, 1e-9);
    assert_near(cap_of(g, 2), 500, 1e-9);
    assert_int_not_equal(access(path, F_OK), 0); /* removed */
    /* nothing left: nothing to do */
    assert_int_equal(pfi_gpu_restore(g, &f2, 1, &r, &pending, NULL), PFI_OK);
    assert_int_equal(x.restored, 2);
    pfi_gpu_close(g);
}

static void write_ahead_fails(void **st)
{
    (void)st;
    const double caps[4] = {700, 700, 700, 700};
    pfi_gpu *g = open_sim(caps);
    char bad[300];
    snprintf(bad, sizeof bad, "%s/no-such-dir/state.json", dir);
    pfi_saved_cap saved[PFI_SAVED_CAPS_MAX];
    size_t n = 0;
    pfi_gpu_state_file f;
    pfi_gpu_state_file_init(&f, bad, saved, &n, PFI_SAVED_CAPS_MAX);
    size_t idx[1] = {0};
    pfi_error e;
    assert_int_not_equal(pfi_gpu_save(g, idx, 1, &f, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "no-such-dir"));
    assert_int_equal(pfi_gpu_saved_pending(&f.saved), 0); /* nothing saved: no cap may change */
    assert_int_equal(n, 0);
    /* a GPU that does not exist: nothing saved either */
    size_t idx2[2] = {0, 9};
    pfi_gpu_state_file_init(&f, path, saved, &n, PFI_SAVED_CAPS_MAX);
    assert_int_not_equal(pfi_gpu_save(g, idx2, 2, &f, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_saved_pending(&f.saved), 0);
    assert_int_not_equal(access(path, F_OK), 0);
    pfi_gpu_close(g);
}

static void never_through_a_link(void **st)
{
    (void)st;
    const double caps[4] = {700, 700, 700, 700};
    pfi_gpu *g = open_sim(caps);
    char target[300];
    snprintf(target, sizeof target, "%s/precious", dir);
    FILE *t = fopen(target, "w");
    fputs("keep\n", t);
    fclose(t);
    assert_int_equal(symlink(target, path), 0);
    pfi_saved_cap saved[PFI_SAVED_CAPS_MAX];
    size_t n = 0;
    pfi_gpu_state_file f;
    pfi_gpu_state_file_init(&f, path, saved, &n, PFI_SAVED_CAPS_MAX);
    size_t idx[1] = {3};
    assert_int_equal(pfi_gpu_save(g, idx, 1, &f, NULL), PFI_OK);
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISREG(sb.st_mode)); /* the link itself was replaced */
    char buf[16] = "";
    t = fopen(target, "r");
    assert_non_null(fgets(buf, sizeof buf, t));
    fclose(t);
    assert_string_equal(buf, "keep\n");
    size_t pending;
    assert_int_equal(pfi_gpu_restore(g, &f, 0, NULL, &pending, NULL),
                     PFI_OK); /* the writer's end, from memory */
    assert_int_equal(pending, 0);
    assert_int_not_equal(access(path, F_OK), 0);
    unlink(target);
    pfi_gpu_close(g);
}

static void corrupt_and_out_of_range(void **st)
{
    (void)st;
    const double caps[4] = {450, 500, 700, 380};
    pfi_gpu *g = open_sim(caps);
    pfi_saved_cap saved[PFI_SAVED_CAPS_MAX];
    size_t n = 0, pending;
    pfi_gpu_state_file f;
    pfi_gpu_state_file_init(&f, path, saved, &n, PFI_SAVED_CAPS_MAX);
    write_file("{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": 0, \"uu");
    seen x;
    pfi_gpu_restore_report r = report(&x);
    assert_int_equal(pfi_gpu_restore(g, &f, 1, &r, &pending, NULL), PFI_OK);
    assert_int_equal(x.lost, 1);
    assert_int_equal(x.found, 0);
    assert_int_equal(x.restored, 4); /* every GPU, to its default */
    for (size_t i = 0; i < 4; i++) assert_near(cap_of(g, i), 700, 1e-9);
    char kept[300];
    snprintf(kept, sizeof kept, "%s.corrupt", path);
    assert_int_equal(access(kept, F_OK), 0);
    assert_int_not_equal(access(path, F_OK), 0);
    unlink(kept);
    /* a saved cap the device cannot take: its default */
    pfi_gpu_info in;
    assert_int_equal(pfi_gpu_info_get(g, 1, &in, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_set_cap(g, 1, 400, NULL), PFI_OK);
    char text[600];
    snprintf(text, sizeof text,
             "{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": 1, \"uuid\": \"%s\", "
             "\"cap_w\": 9999}]}",
             in.uuid);
    write_file(text);
    r = report(&x);
    assert_int_equal(pfi_gpu_restore(g, &f, 1, &r, &pending, NULL), PFI_OK);
    assert_int_equal(x.out_of_range, 1);
    assert_int_equal(x.restored, 1);
    assert_near(cap_of(g, 1), 700, 1e-9);
    /* a GPU not on this node: reported, kept, and so is the file */
    write_file("{\"format_version\": 1, \"pid\": 42, \"gpus\": [{\"index\": 0, \"uuid\": "
               "\"GPU-elsewhere\", \"cap_w\": 500}]}");
    r = report(&x);
    assert_int_equal(pfi_gpu_restore(g, &f, 1, &r, &pending, NULL), PFI_OK);
    assert_int_equal(pending, 1);
    assert_int_equal(x.failed, 1);
    assert_int_equal(x.failed_i, -1);
    assert_int_equal(access(path, F_OK), 0);
    unlink(path);
    pfi_gpu_close(g);
}

static void check_and_defaults(void **st)
{
    (void)st;
    const double caps[4] = {450, 700, 700, 380};
    pfi_gpu *g = open_sim(caps);
    pfi_saved_cap saved[PFI_SAVED_CAPS_MAX];
    size_t n = 0;
    pfi_gpu_saved_set s = {saved, &n, PFI_SAVED_CAPS_MAX};
    /* a lost file: only the GPUs not at their default get it as their baseline */
    pfi_gpu_saved_defaults(g, 1, &s);
    assert_int_equal(n, 2);
    assert_int_equal(saved[0].index, 0);
    assert_near(saved[0].baseline_w, 700, 0);
    assert_near(saved[0].cap_w, 450, 1e-9);
    assert_int_equal(saved[1].index, 3);
    /* loaded caps the device cannot take */
    saved[0].baseline_w = 9999;
    saved[1].cap_w = 50;
    seen x;
    pfi_gpu_restore_report r = report(&x);
    r.out_of_range = NULL;
    pfi_gpu_check_saved(g, &s, &r);
    assert_near(saved[0].baseline_w, 700, 0);
    assert_near(saved[1].cap_w, saved[1].baseline_w, 0);
    /* restore in memory; a GPU not here is forgotten when asked */
    pfi_saved_cap *away = pfi_gpu_saved_get(&s, "GPU-elsewhere");
    away->changed = 1;
    away->baseline_w = 500;
    r = report(&x);
    assert_int_equal(pfi_gpu_restore_caps(g, &s, 0, 1, &r), 0);
    assert_int_equal(x.restored, 2);
    assert_int_equal(x.failed, 1);
    assert_near(cap_of(g, 0), 700, 1e-9);
    assert_near(cap_of(g, 3), 700, 1e-9);
    pfi_gpu_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(save_crash_restore),   cmocka_unit_test(write_ahead_fails),
        cmocka_unit_test(never_through_a_link), cmocka_unit_test(corrupt_and_out_of_range),
        cmocka_unit_test(check_and_defaults),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
