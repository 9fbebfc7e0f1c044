/* test_job_id.c — job id validation ([A-Za-z0-9._-]{1,63}, not . or ..) and
 * a process's Slurm job id from /proc/PID/cgroup on fixtures of cgroup v1
 * and v2 (tests/data/cgroup), including cgroups a user could create under a
 * delegated subtree to claim another job's id. */
#include "../testutil.h"

#include <stdio.h>

#include "job_id.h"

static void valid_ids(void **s)
{
    (void)s;
    assert_true(pfi_job_id_valid("4242"));
    assert_true(pfi_job_id_valid("j1"));
    assert_true(pfi_job_id_valid("4242_7.batch-x"));
    assert_true(pfi_job_id_valid("..."));
    char max[64];
    memset(max, 'a', 63);
    max[63] = '\0';
    assert_true(pfi_job_id_valid(max));
}

static void invalid_ids(void **s)
{
    (void)s;
    assert_false(pfi_job_id_valid(NULL));
    assert_false(pfi_job_id_valid(""));
    assert_false(pfi_job_id_valid("."));
    assert_false(pfi_job_id_valid(".."));
    assert_false(pfi_job_id_valid("a/b"));
    assert_false(pfi_job_id_valid("../etc"));
    assert_false(pfi_job_id_valid("1\"} 1\npfi_gpu_power_cap_watts{UUID=\"forged\"} 9999\n#"));
    assert_false(pfi_job_id_valid("<img src=x onerror=alert(1)>"));
    assert_false(pfi_job_id_valid("a b"));
    assert_false(pfi_job_id_valid("a\\b"));
    assert_false(pfi_job_id_valid("caf\xc3\xa9"));
    char big[65];
    memset(big, 'a', 64);
    big[64] = '\0';
    assert_false(pfi_job_id_valid(big));
}

static int from_fixture(const char *name, char *out, size_t n, long *uid)
{
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/tests/data/cgroup/%s", PFI_SOURCE_DIR, name);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    size_t k = fread(text, 1, sizeof text, f);
    fclose(f);
    return pfi_job_id_from_cgroup(text, k, out, n, uid);
}

static void cgroup_v1(void **s)
{
    (void)s;
    char id[64];
    long uid = 7;
    assert_int_equal(from_fixture("v1.txt", id, sizeof id, &uid), 0);
    assert_string_equal(id, "4242");
    assert_int_equal(uid, 1000);
    /* multiple-slurmd layout: /slurm_NODE */
    assert_int_equal(from_fixture("v1-node.txt", id, sizeof id, &uid), 0);
    assert_string_equal(id, "8");
    assert_int_equal(uid, 0);
}

static void cgroup_v2(void **s)
{
    (void)s;
    char id[64];
    long uid = 7;
    assert_int_equal(from_fixture("v2.txt", id, sizeof id, &uid), 0);
    assert_string_equal(id, "977");
    assert_int_equal(uid, -1);
    assert_int_equal(from_fixture("v2-multi.txt", id, sizeof id, &uid), 0);
    assert_string_equal(id, "31");
    /* Slurm 25.11's CgroupSlice= (slurm.conf): the scope under another
       slice, or nested slices, with a node prefix too (issue 40) */
    const char *t = "0::/slurm.slice/slurmstepd.scope/job_88/step_0/user/task_0\n";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), 0);
    assert_string_equal(id, "88");
    t = "0::/hpc.slice/gpu.slice/n07_slurmstepd.scope/job_89/step_batch\n";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), 0);
    assert_string_equal(id, "89");
}

static void cgroup_not_slurm(void **s)
{
    (void)s;
    char id[64] = "";
    long uid;
    assert_int_equal(from_fixture("none.txt", id, sizeof id, &uid), -1);
    /* a user's own cgroups named like Slurm's, a bad job component, a line
       of neither kind: none matches */
    assert_int_equal(from_fixture("forged.txt", id, sizeof id, &uid), -1);
    assert_int_equal(pfi_job_id_from_cgroup("", 0, id, sizeof id, &uid), -1);
    const char *t = "0::/system.slice/slurmstepd.scope";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), -1);
    t = "garbage without colons\n::\n0::\n0::/\n";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), -1);
    /* no newline at the end; an output buffer too small is no match */
    t = "0::/system.slice/slurmstepd.scope/job_123456/step_0";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), 0);
    assert_string_equal(id, "123456");
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, 4, &uid), -1);
    /* no slice before the scope; a scope that is not a slice's child */
    t = "0::/slurmstepd.scope/job_5/step_0";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), -1);
    t = "0::/system.slice/other.service/slurmstepd.scope/job_5/step_0";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), -1);
    /* a job that nests a Slurm-like path below its own cgroup is still its own job */
    t = "0::/system.slice/slurmstepd.scope/job_5/step_0/user/x.slice/slurmstepd.scope/job_7/y";
    assert_int_equal(pfi_job_id_from_cgroup(t, strlen(t), id, sizeof id, &uid), 0);
    assert_string_equal(id, "5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_ids),        cmocka_unit_test(invalid_ids),
        cmocka_unit_test(cgroup_v1),        cmocka_unit_test(cgroup_v2),
        cmocka_unit_test(cgroup_not_slurm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
