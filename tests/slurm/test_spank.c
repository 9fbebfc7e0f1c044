/* test_spank.c — the SPANK plugin's file handling, run as root outside
 * Slurm: src/slurm/spank_pfi.c is linked with this file, which stands in
 * for the few Slurm functions the plugin calls (job id, uid, gid, setenv,
 * slurm_error). The real Slurm path is tests/cli/test_slurm.sh. Checked:
 * the prolog writes the job file and an unguessable step log owned by the
 * job's user (0600) in root-only directories; a symlink planted at the job
 * file's temporary name is never written through; a rundir writable by a
 * user, or below a world-writable non-sticky directory, gets nothing; a
 * sticky /tmp-like ancestor is fine; task_init exports that step log;
 * the epilog removes both files. Skipped (77) when not root. Slurm's GPU
 * order (gpu_map.c) has its own test, tests/slurm/test_gpu_map.c. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include <cmocka.h>

/* ---- the Slurm side, as the plugin sees it ---- */
static uint32_t g_id;
static uid_t g_uid;
static gid_t g_gid;
static int g_have_uid = 1;
static char g_err[2048], g_steplog_env[1200];

spank_context_t spank_context(void)
{
    return S_CTX_JOB_SCRIPT;
}
spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
    (void)sp, (void)opt;
    return ESPANK_SUCCESS;
}
spank_err_t spank_job_control_setenv(spank_t sp, const char *n, const char *v, int o)
{
    (void)sp, (void)n, (void)v, (void)o;
    return ESPANK_SUCCESS;
}
spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
    (void)sp, (void)overwrite;
    if (!strcmp(var, "PFI_STEPLOG")) snprintf(g_steplog_env, sizeof g_steplog_env, "%s", val);
    return ESPANK_SUCCESS;
}
spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    (void)sp;
    va_list ap;
    va_start(ap, item);
    spank_err_t rc = ESPANK_SUCCESS;
    if (item == S_JOB_ID) *va_arg(ap, uint32_t *) = g_id;
    else if (item == S_JOB_UID && g_have_uid) *va_arg(ap, uid_t *) = g_uid;
    else if (item == S_JOB_GID && g_have_uid) *va_arg(ap, gid_t *) = g_gid;
    else rc = ESPANK_NOT_AVAIL;
    va_end(ap);
    return rc;
}
void slurm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av);
int slurm_spank_job_epilog(spank_t sp, int ac, char **av);
int slurm_spank_task_init(spank_t sp, int ac, char **av);

/* ---- helpers ---- */
static char base[256];

static void run_prolog(const char *rundir, uint32_t id)
{
    char arg[600];
    snprintf(arg, sizeof arg, "rundir=%s", rundir);
    char *av[] = {arg};
    g_id = id;
    g_err[0] = '\0';
    assert_int_equal(slurm_spank_job_prolog(NULL, 1, av), 0); /* never fails a job */
}

static int slurp(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, n - 1);
    close(fd);
    if (k < 0) return -1;
    buf[k] = '\0';
    return 0;
}

static void rm_rf(const char *p)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf --one-file-system '%s'", p);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **st)
{
    (void)st;
    snprintf(base, sizeof base, "/tmp/pfi-spank-XXXXXX");
    if (!mkdtemp(base)) return -1;
    chmod(base, 0755);
    g_uid = 65534, g_gid = 65534, g_have_uid = 1;
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    rm_rf(base);
    return 0;
}

/* ---- tests ---- */
static void prolog_task_epilog(void **st)
{
    (void)st;
    char run[400], job[700], buf[4096];
    snprintf(run, sizeof run, "%s/run", base);
    run_prolog(run, 4242);
    snprintf(job, sizeof job, "%s/jobs/4242.json", run);
    assert_int_equal(slurp(job, buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "\"job_id\": \"4242\""));
    assert_non_null(strstr(buf, "\"uid\": 65534"));
    const char *p = strstr(buf, "\"steplog\": \"");
    assert_non_null(p);
    char steplog[1200];
    p += 12;
    snprintf(steplog, sizeof steplog, "%.*s", (int)(strchr(p, '"') - p), p);
    /* RUN/steplogs/4242-<32 hex>.jsonl */
    char prefix[500];
    snprintf(prefix, sizeof prefix, "%s/steplogs/4242-", run);
    assert_int_equal(strncmp(steplog, prefix, strlen(prefix)), 0);
    const char *r = steplog + strlen(prefix);
    for (int i = 0; i < 32; i++)
        assert_true((r[i] >= '0' && r[i] <= '9') || (r[i] >= 'a' && r[i] <= 'f'));
    assert_string_equal(r + 32, ".jsonl");
    struct stat s;
    assert_int_equal(lstat(steplog, &s), 0);
    assert_true(S_ISREG(s.st_mode));
    assert_int_equal(s.st_uid, 65534);
    assert_int_equal(s.st_gid, 65534);
    assert_int_equal(s.st_mode & 07777, 0600);
    char d[500];
    snprintf(d, sizeof d, "%s/steplogs", run);
    assert_int_equal(lstat(d, &s), 0);
    assert_int_equal(s.st_mode & 07777, 0755);
    assert_int_equal(s.st_uid, 0);
    /* a second job gets another random name */
    run_prolog(run, 4243);
    snprintf(job, sizeof job, "%s/jobs/4243.json", run);
    assert_int_equal(slurp(job, buf, sizeof buf), 0);
    assert_null(strstr(buf, r));
    /* the task sees its step log */
    char arg[600];
    snprintf(arg, sizeof arg, "rundir=%s", run);
    char *av[] = {arg};
    g_id = 4242;
    g_steplog_env[0] = '\0';
    assert_int_equal(slurm_spank_task_init(NULL, 1, av), 0);
    assert_string_equal(g_steplog_env, steplog);
    /* the epilog removes both */
    assert_int_equal(slurm_spank_job_epilog(NULL, 1, av), 0);
    snprintf(job, sizeof job, "%s/jobs/4242.json", run);
    assert_int_equal(access(job, F_OK), -1);
    assert_int_equal(access(steplog, F_OK), -1);
}

static void symlink_at_tmp_name(void **st)
{
    (void)st;
    char run[400], victim[500], link[700], job[700], buf[4096];
    snprintf(run, sizeof run, "%s/run", base);
    run_prolog(run, 1); /* makes the directories */
    snprintf(victim, sizeof victim, "%s/victim", base);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("root's own file\n", f);
    fclose(f);
    snprintf(link, sizeof link, "%s/jobs/4244.json.tmp", run);
    assert_int_equal(symlink(victim, link), 0);
    run_prolog(run, 4244);
    assert_int_equal(slurp(victim, buf, sizeof buf), 0);
    assert_string_equal(buf, "root's own file\n");
    snprintf(job, sizeof job, "%s/jobs/4244.json", run);
    struct stat s;
    assert_int_equal(lstat(job, &s), 0);
    assert_true(S_ISREG(s.st_mode));
}

static void unsafe_dirs_refused(void **st)
{
    (void)st;
    char run[400], job[700], victim[500], d[500];
    /* rundir writable by others */
    snprintf(run, sizeof run, "%s/open", base);
    assert_int_equal(mkdir(run, 0777), 0);
    chmod(run, 0777);
    run_prolog(run, 5001);
    assert_non_null(strstr(g_err, "not safe"));
    snprintf(job, sizeof job, "%s/jobs/5001.json", run);
    assert_int_equal(access(job, F_OK), -1);
    /* rundir owned by a user */
    snprintf(run, sizeof run, "%s/users", base);
    assert_int_equal(mkdir(run, 0755), 0);
    assert_int_equal(chown(run, 65534, 65534), 0);
    run_prolog(run, 5002);
    assert_non_null(strstr(g_err, "not root"));
    /* jobs/ a symlink to elsewhere */
    snprintf(run, sizeof run, "%s/linked", base);
    assert_int_equal(mkdir(run, 0755), 0);
    snprintf(victim, sizeof victim, "%s/elsewhere", base);
    assert_int_equal(mkdir(victim, 0755), 0);
    snprintf(d, sizeof d, "%s/jobs", run);
    assert_int_equal(symlink(victim, d), 0);
    run_prolog(run, 5003);
    assert_non_null(strstr(g_err, "not a directory"));
    snprintf(job, sizeof job, "%s/5003.json", victim);
    assert_int_equal(access(job, F_OK), -1);
    /* a user's symbolic link in a sticky directory, pointing at a safe
       root-owned directory: refused (the user could point it elsewhere) */
    snprintf(d, sizeof d, "%s/stickyd", base);
    assert_int_equal(mkdir(d, 0755), 0);
    chmod(d, 01777);
    snprintf(victim, sizeof victim, "%s/rootdir", base);
    assert_int_equal(mkdir(victim, 0755), 0);
    snprintf(run, sizeof run, "%s/stickyd/run", base);
    assert_int_equal(symlink(victim, run), 0);
    assert_int_equal(lchown(run, 65534, 65534), 0);
    run_prolog(run, 5006);
    assert_non_null(strstr(g_err, "not root"));
    snprintf(job, sizeof job, "%s/jobs/5006.json", victim);
    assert_int_equal(access(job, F_OK), -1);
    /* below a world-writable, non-sticky directory: refused */
    snprintf(d, sizeof d, "%s/wide", base);
    assert_int_equal(mkdir(d, 0777), 0);
    chmod(d, 0777);
    snprintf(run, sizeof run, "%s/wide/run", base);
    run_prolog(run, 5004);
    assert_non_null(strstr(g_err, "not sticky"));
    /* below a sticky one (like /tmp): fine */
    chmod(d, 01777);
    run_prolog(run, 5005);
    assert_string_equal(g_err, "");
    snprintf(job, sizeof job, "%s/jobs/5005.json", run);
    assert_int_equal(access(job, F_OK), 0);
}

static void earlier_1777_steplogs_tightened(void **st)
{
    (void)st;
    char run[400], d[500];
    snprintf(run, sizeof run, "%s/old", base);
    assert_int_equal(mkdir(run, 0755), 0);
    snprintf(d, sizeof d, "%s/steplogs", run);
    assert_int_equal(mkdir(d, 0755), 0);
    chmod(d, 01777);
    run_prolog(run, 6001);
    assert_string_equal(g_err, "");
    struct stat s;
    assert_int_equal(lstat(d, &s), 0);
    assert_int_equal(s.st_mode & 07777, 0755);
}

/* the prolog maps SLURM_JOB_GPUS in the node's AutoDetect order
 * (gpu_map.h; its cases are test_gpu_map.c's): nvml on a driver tree whose
 * bus order is the reverse of its minors; an uncertain gres.conf gives no
 * minors and a "gpu_error" naming why, escaped as JSON */
static void prolog_gpu_map(void **st)
{
    (void)st;
    char run[400], conf[400], drv[400], p[600], buf[4096], a1[600], a2[600], a3[600];
    snprintf(run, sizeof run, "%s/run", base);
    snprintf(conf, sizeof conf, "%s/gres.conf", base);
    snprintf(drv, sizeof drv, "%s/gpus", base);
    assert_int_equal(mkdir(drv, 0755), 0);
    const char *bus[2] = {"0000:3b:00.0", "0000:1a:00.0"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", drv, bus[i]);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/%s/information", drv, bus[i]);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fprintf(f, "Bus Location: \t %s\nDevice Minor: \t %d\n", bus[i], i);
        fclose(f);
    }
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fputs("AutoDetect=nvml\n", f);
    fclose(f);
    snprintf(a1, sizeof a1, "rundir=%s", run);
    snprintf(a2, sizeof a2, "gres_conf=%s", conf);
    snprintf(a3, sizeof a3, "driver_dir=%s", drv);
    char *av[] = {a1, a2, a3};
    setenv("SLURM_JOB_GPUS", "0", 1);
    g_id = 77;
    assert_int_equal(slurm_spank_job_prolog(NULL, 3, av), 0);
    snprintf(p, sizeof p, "%s/jobs/77.json", run);
    assert_int_equal(slurp(p, buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "\"minors\": [1]")); /* bus 1a (minor 1) is Slurm's GPU 0 */
    assert_null(strstr(buf, "gpu_error"));
    /* an unknown key with a quote in it: no minors, the error escaped */
    f = fopen(conf, "w");
    assert_non_null(f);
    fputs("Name=gpu File=/dev/null Fo\"o=1\n", f);
    fclose(f);
    g_id = 78;
    assert_int_equal(slurm_spank_job_prolog(NULL, 3, av), 0);
    snprintf(p, sizeof p, "%s/jobs/78.json", run);
    assert_int_equal(slurp(p, buf, sizeof buf), 0);
    assert_null(strstr(buf, "\"minors\""));
    assert_non_null(strstr(buf, "\"gpu_error\": \""));
    assert_non_null(strstr(buf, "field 'Fo\\\"o'"));
    unsetenv("SLURM_JOB_GPUS");
}

int main(void)
{
    if (geteuid() != 0) {
        printf("SKIP: the SPANK plugin runs as root; this test needs root (chown, root-owned "
               "directories)\n");
        return 77;
    }
    const struct CMUnitTest t[] = {
        cmocka_unit_test_setup_teardown(prolog_task_epilog, setup, teardown),
        cmocka_unit_test_setup_teardown(symlink_at_tmp_name, setup, teardown),
        cmocka_unit_test_setup_teardown(unsafe_dirs_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(earlier_1777_steplogs_tightened, setup, teardown),
        cmocka_unit_test_setup_teardown(prolog_gpu_map, setup, teardown),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
