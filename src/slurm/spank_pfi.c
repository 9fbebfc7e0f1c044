/* spank_pfi.c — the Slurm SPANK plugin of pfi (pfi-spank(8)).
 *
 *   --power-flex=0..3   the job's power-flexibility tier (Flex 0: no
 *                       reduction, 1: <= 10%, 2: <= 25%, 3: <= 50% throughput
 *                       loss during a grid event)
 *
 * In srun/sbatch/salloc the tier goes to the job's control environment
 * (spank_job_control_setenv: SPANK_PFI_FLEX in the prolog and epilog). In
 * the job prolog (slurmd, root) it creates the job's step log,
 * RUNDIR/steplogs/JOBID-RANDOM.jsonl (an unguessable name, created
 * O_EXCL|O_NOFOLLOW, owned by the job's user, mode 0600), and writes
 * RUNDIR/jobs/JOBID.json atomically — {"job_id", "minors" (SLURM_JOB_GPUS,
 * Slurm's GPU indexes, turned into the GPUs' device minor numbers in the
 * order the node's effective AutoDetect gives: gpu_map.h) or "gpus" (UUIDs
 * from the prolog's CUDA_VISIBLE_DEVICES, Slurm >= 25.11 and MIG), and
 * "gpu_error" where the job has GPUs that could not be mapped (why),
 * "tier", "steplog", "uid"} — which pfi-agent --jobs-dir
 * reads: the agent learns the job's GPUs and tier, and reads the step log
 * only if the job's user owns it. In the job's tasks it sets PFI_FLEX and
 * PFI_STEPLOG (that step log; a job that sets its own keeps it). In the
 * epilog it removes both files, and the agent puts those GPUs back at their
 * baseline caps. The agent stays the only writer of caps: the plugin never
 * touches a GPU.
 *
 * It runs as root in directories a user might reach, so (docs/security.md):
 * RUNDIR, RUNDIR/jobs and RUNDIR/steplogs must be root-owned and writable by
 * root alone, and every ancestor root-owned and either writable by root
 * alone or sticky (/tmp above a root-owned 0755 RUNDIR is fine); otherwise
 * the prolog writes nothing and says why. Files are created with openat()
 * on those directories, O_CREAT|O_EXCL|O_NOFOLLOW: never through a link.
 *
 * plugstack.conf:  optional /usr/lib/x86_64-linux-gnu/pfi/spank_pfi.so rundir=/run/pfi
 *   [gres_conf=FILE] [autodetect=off|nvml|nvidia] [driver_dir=DIR]
 *   (autodetect= forces the GPU order where gres.conf does not say it;
 *   driver_dir= points at a test's fake /proc/driver/nvidia/gpus)
 *   (the pfi-slurm package: /etc/slurm/plugstack.conf.d/pfi.conf; pfi-spank(8))
 * Built without libslurm (the SPANK symbols come from the Slurm process). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include <slurm/slurm_version.h>

#include "gpu_map.h"

SPANK_PLUGIN(pfi, 1);

static int flex = -1;
static char rundir[1024] = "/run/pfi";
static char gres_conf[1024] = "";  /* gres_conf=PATH; default: beside $SLURM_CONF */
static char driver_dir[1024] = ""; /* driver_dir=DIR; default /proc/driver/nvidia/gpus */
static gpu_map_mode force_mode = GPU_MAP_FROM_CONF; /* autodetect=off|nvml|nvidia */

static int flex_cb(int val, const char *arg, int remote)
{
    (void)val, (void)remote;
    char *end;
    long v = arg ? strtol(arg, &end, 10) : -1;
    if (!arg || *end || v < 0 || v > 3) {
        slurm_error("pfi: --power-flex=%s: expected a tier 0..3 (0: no reduction, 1: <=10%%, 2: "
                    "<=25%%, 3: <=50%% throughput loss)",
                    arg ? arg : "");
        return -1;
    }
    flex = (int)v;
    return 0;
}

static struct spank_option flex_opt = {"power-flex",
                                       "0-3",
                                       "pfi power-flexibility tier for grid events: 0 no "
                                       "reduction, 1 <=10%, 2 <=25%, 3 <=50% throughput loss",
                                       1,
                                       0,
                                       flex_cb};

/* Plugin arguments reach every callback; in the job-script context
 * (job_prolog/job_epilog) slurm_spank_init is not called, so each
 * callback that uses rundir parses them itself. */
static void parse_args(int ac, char **av)
{
    for (int i = 0; i < ac; i++) {
        if (!strncmp(av[i], "rundir=", 7)) snprintf(rundir, sizeof rundir, "%s", av[i] + 7);
        else if (!strncmp(av[i], "gres_conf=", 10))
            snprintf(gres_conf, sizeof gres_conf, "%s", av[i] + 10);
        else if (!strncmp(av[i], "driver_dir=", 11))
            snprintf(driver_dir, sizeof driver_dir, "%s", av[i] + 11);
        else if (!strncmp(av[i], "autodetect=", 11) &&
                 gpu_map_mode_parse(av[i] + 11, &force_mode) == 0)
            ;
        else
            slurm_error("pfi: unknown plugin argument '%s' (expected rundir=DIR, gres_conf=FILE, "
                        "driver_dir=DIR or autodetect=off|nvml|nvidia)",
                        av[i]);
    }
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE)
        if (spank_option_register(sp, &flex_opt) != ESPANK_SUCCESS) return -1;
    return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)ac, (void)av;
    spank_context_t ctx = spank_context();
    if ((ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) && flex >= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", flex);
        spank_job_control_setenv(sp, "PFI_FLEX", v, 1);
    }
    return 0;
}

static uint32_t job_id(spank_t sp)
{
    uint32_t id = 0;
    if (spank_get_item(sp, S_JOB_ID, &id) != ESPANK_SUCCESS) id = 0;
    return id;
}

/* the "steplog" value of RUNDIR/jobs/ID.json (written by our prolog) */
static int job_steplog(uint32_t id, char *out, size_t n)
{
    char path[1200], buf[4096];
    snprintf(path, sizeof path, "%s/jobs/%u.json", rundir, id);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return -1;
    buf[k] = '\0';
    const char *p = strstr(buf, "\"steplog\": \""), *q;
    if (!p || !(q = strchr(p += 12, '"')) || (size_t)(q - p) >= n) return -1;
    snprintf(out, n, "%.*s", (int)(q - p), p);
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    char v[1200];
    if (flex >= 0) {
        snprintf(v, sizeof v, "%d", flex);
        spank_setenv(sp, "PFI_FLEX", v, 1);
    }
    uint32_t id = job_id(sp);
    if (id && job_steplog(id, v, sizeof v) == 0)
        spank_setenv(sp, "PFI_STEPLOG", v, 0); /* a job that sets its own keeps it */
    return 0;
}

/* dir: a directory owned by root; leaf: writable by root alone; else
 * (an ancestor) writable by root alone or sticky */
static int dir_ok(const char *dir, int leaf, char *why, size_t wn)
{
    struct stat st;
    if (lstat(dir, &st)) return snprintf(why, wn, "%s: %s", dir, strerror(errno)), -1;
    if (!S_ISDIR(st.st_mode)) return snprintf(why, wn, "%s: not a directory", dir), -1;
    if (st.st_uid != 0)
        return snprintf(why, wn, "%s: owned by uid %lu, not root", dir, (unsigned long)st.st_uid),
               -1;
    if ((st.st_mode & 022) && (leaf || !(st.st_mode & S_ISVTX)))
        return snprintf(why, wn, "%s: writable by group or others%s", dir,
                        leaf ? "" : " and not sticky"),
               -1;
    return 0;
}

/* the whole chain from / to dir. First the path as written: every
 * component root's (a symbolic link too: a user's link, even in sticky
 * /tmp, could be pointed elsewhere between our check and our use), every
 * directory above writable by root alone or sticky. Then the resolved path
 * (a link among root's own directories, such as /var/run, is fine). */
int pfi_spank_dir_chain_ok(const char *dir, char *why, size_t wn)
{
    char real[PATH_MAX], given[PATH_MAX];
    if (dir[0] != '/') return snprintf(why, wn, "%s: not an absolute path", dir), -1;
    if (snprintf(given, sizeof given, "%s", dir) >= (int)sizeof given)
        return snprintf(why, wn, "path too long"), -1;
    for (char *p = given + 1;; p++)
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            struct stat st;
            if (lstat(given, &st)) return snprintf(why, wn, "%s: %s", given, strerror(errno)), -1;
            if (st.st_uid != 0)
                return snprintf(why, wn, "%s: owned by uid %lu, not root", given,
                                (unsigned long)st.st_uid),
                       -1;
            if (S_ISDIR(st.st_mode) && c && (st.st_mode & 022) && !(st.st_mode & S_ISVTX))
                return snprintf(why, wn, "%s: writable by group or others and not sticky", given),
                       -1;
            *p = c;
            if (!c) break;
        }
    if (!realpath(dir, real)) return snprintf(why, wn, "%s: %s", dir, strerror(errno)), -1;
    if (dir_ok("/", !strcmp(real, "/"), why, wn)) return -1;
    for (char *p = real + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            int rc = dir_ok(real, 0, why, wn);
            *p = '/';
            if (rc) return -1;
        }
    return dir_ok(real, 1, why, wn);
}

/* RUNDIR, RUNDIR/jobs, RUNDIR/steplogs: made 0755 if missing; a steplogs
 * directory of an earlier version (1777) is tightened to 0755 */
static int dirs_ok(char *why, size_t wn)
{
    char d[1100];
    mkdir(rundir, 0755);
    if (pfi_spank_dir_chain_ok(rundir, why, wn)) return -1;
    snprintf(d, sizeof d, "%s/jobs", rundir);
    mkdir(d, 0755);
    if (dir_ok(d, 1, why, wn)) return -1;
    snprintf(d, sizeof d, "%s/steplogs", rundir);
    mkdir(d, 0755);
    struct stat st;
    if (lstat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
        (st.st_mode & 07777) == 01777)
        chmod(d, 0755);
    return dir_ok(d, 1, why, wn);
}

static int open_dir(const char *sub)
{
    char d[1100];
    snprintf(d, sizeof d, "%s/%s", rundir, sub);
    return open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* the job's step log: an unguessable name, created (never opened) here,
 * owned by the job's user. Returns 0 and its path. */
static int make_steplog(uint32_t id, uid_t uid, gid_t gid, char *path, size_t n)
{
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return -1;
    char name[64];
    int k = snprintf(name, sizeof name, "%u-", id);
    for (size_t i = 0; i < sizeof rnd; i++)
        k += snprintf(name + k, sizeof name - (size_t)k, "%02x", rnd[i]);
    snprintf(name + k, sizeof name - (size_t)k, ".jsonl");
    int dfd = open_dir("steplogs");
    if (dfd < 0) return -1;
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = -1;
    if (fd >= 0) {
        if (fchown(fd, uid, gid) == 0) rc = 0;
        else unlinkat(dfd, name, 0);
        close(fd);
    }
    close(dfd);
    if (rc == 0) snprintf(path, n, "%s/steplogs/%s", rundir, name);
    return rc;
}

/* s as the inside of a JSON string: quotes, backslashes and control
 * characters escaped (a gres.conf path or value may hold any of them) */
static void json_string_out(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else if (c >= 0x80) fputc('?', f); /* never invalid UTF-8 in the file */
        else fputc(c, f);
    }
}

/* where gres.conf is: gres_conf=, else beside $SLURM_CONF, else /etc/slurm */
static void gres_conf_path(char *gc, size_t n)
{
    const char *sc = getenv("SLURM_CONF");
    if (gres_conf[0]) snprintf(gc, n, "%s", gres_conf);
    else if (sc && strrchr(sc, '/'))
        snprintf(gc, n, "%.*s/gres.conf", (int)(strrchr(sc, '/') - sc), sc);
    else snprintf(gc, n, "/etc/slurm/gres.conf");
}

/* SLURM_JOB_GPUS -> "m1, m2" (device minors); -1 with why */
static int job_minors(const char *gpus, char *out, size_t out_n, char *why, size_t why_n)
{
    long idx[GPU_MAP_MAX];
    size_t nidx;
    if (gpu_map_index_list(gpus, idx, GPU_MAP_MAX, &nidx))
        return snprintf(why, why_n, "SLURM_JOB_GPUS '%.100s' is not a list of GPU indexes", gpus),
               -1;
    char gc[1100], node[256];
    const char *sn = getenv("SLURMD_NODENAME");
    gres_conf_path(gc, sizeof gc);
    if (sn && *sn) snprintf(node, sizeof node, "%s", sn);
    else if (gethostname(node, sizeof node) != 0) node[0] = '\0';
    node[sizeof node - 1] = '\0';
    gpu_map_opts o = {gc, node, driver_dir[0] ? driver_dir : NULL, force_mode,
                      SLURM_VERSION_NUMBER};
    static gpu_map m;
    if (gpu_map_load(&o, &m, why, why_n)) return -1;
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < nidx; i++) {
        if (idx[i] < 0 || (size_t)idx[i] >= m.n)
            return snprintf(why, why_n,
                            "GPU %ld (SLURM_JOB_GPUS): %.900s gives %zu GPUs for %.200s "
                            "(AutoDetect %s)",
                            idx[i], gc, m.n, node, gpu_map_mode_name(m.mode)),
                   -1;
        k += (size_t)snprintf(out + k, out_n - k, "%s%d", k ? ", " : "", m.dev[idx[i]].minor);
        if (k >= out_n) return snprintf(why, why_n, "too many GPUs"), -1;
    }
    return 0;
}

/* CUDA_VISIBLE_DEVICES's UUIDs ("GPU-uuid,GPU-uuid") as the JSON strings
 * of a list into list[list_n] ("\"GPU-uuid\", ..."): only [A-Za-z0-9-]
 * (JSON-safe); anything else is an error naming the job, and no GPUs. The
 * length written. */
static size_t uuid_list(uint32_t id, const char *cvd, char *list, size_t list_n)
{
    size_t n = 0;
    for (const char *p = cvd; *p && n + 120 < list_n;) {
        size_t k = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-");
        if (k == 0 || k > 95 || (p[k] && p[k] != ',')) {
            slurm_error("pfi: job %u: CUDA_VISIBLE_DEVICES is not a list of UUIDs: no GPUs in its "
                        "job file",
                        id);
            list[0] = '\0';
            return 0;
        }
        n += (size_t)snprintf(list + n, list_n - n, "%s\"%.*s\"", n ? ", " : "", (int)k, p);
        p += k + (p[k] == ',');
    }
    return n;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    uint32_t id = job_id(sp);
    if (!id) return 0;
    char why[1200];
    if (dirs_ok(why, sizeof why)) {
        slurm_error("pfi: rundir %s is not safe for root to write in (%s): job %u gets no job file",
                    rundir, why, id);
        return 0; /* never fail a job for this */
    }
    /* Which GPUs (docs/slurm.md, "GPU numbering"): Slurm's own numbers in
     * SLURM_JOB_GPUS (its GPU index on the node, IDX in scontrol -d show
     * job), unless the prolog's CUDA_VISIBLE_DEVICES holds UUIDs (newer
     * Slurm with AutoDetect=nvml sets a device's unique id there), which
     * name a GPU unambiguously: then those, as strings. */
    const char *gpus = getenv("SLURM_JOB_GPUS"), *fl = getenv("SPANK_PFI_FLEX"),
               *cvd = getenv("CUDA_VISIBLE_DEVICES");
    char list[2048] = "";
    if (cvd && (!strncmp(cvd, "GPU-", 4) || !strncmp(cvd, "MIG-", 4))) {
        uuid_list(id, cvd, list, sizeof list);
        gpus = NULL;
    }
    /* Slurm's indexes -> the GPUs' device minors (the agent matches
       nvmlDeviceGetMinorNumber), in the order the node's effective
       AutoDetect gives (gpu_map.h). Anything uncertain is an error naming
       the job and why, and the job file gets no GPUs: never a guess. The
       prolog never fails a job over it. */
    char minors[1024] = "", gwhy[1600] = "";
    size_t nm = 0;
    if (gpus && *gpus) {
        if (job_minors(gpus, minors, sizeof minors, gwhy, sizeof gwhy) != 0) {
            slurm_error("pfi: job %u: %s; no GPUs in its job file", id, gwhy);
            list[0] = minors[0] = '\0';
        } else {
            gwhy[0] = '\0';
        }
        nm = strlen(minors);
    }
    /* the job's user, from Slurm (never from the job's environment) */
    uid_t uid = 0;
    gid_t gid = 0;
    int have_uid = spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS;
    if (!have_uid || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) gid = 0;
    char steplog[1200] = "", uidf[32] = "";
    if (have_uid) {
        snprintf(uidf, sizeof uidf, ", \"uid\": %lu", (unsigned long)uid);
        if (make_steplog(id, uid, gid, steplog, sizeof steplog))
            slurm_error("pfi: job %u: cannot create its step log in %s/steplogs: %s", id, rundir,
                        strerror(errno));
    } else {
        slurm_error("pfi: job %u: Slurm gave no S_JOB_UID: no step log", id);
    }
    char name[64], tmp[80];
    snprintf(name, sizeof name, "%u.json", id);
    snprintf(tmp, sizeof tmp, "%u.json.tmp", id);
    int dfd = open_dir("jobs");
    if (dfd < 0) {
        slurm_error("pfi: %s/jobs: %s", rundir, strerror(errno));
        return 0;
    }
    /* never through a link planted at the temporary name */
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST && unlinkat(dfd, tmp, 0) == 0)
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        slurm_error("pfi: %s/jobs/%s: %s", rundir, tmp, strerror(errno));
        close(dfd);
        return 0; /* never fail a job for this */
    }
    int tier = fl ? atoi(fl) : -1;
    fprintf(f, "{\"job_id\": \"%u\", \"gpus\": [%s], \"tier\": %d", id, list, tier);
    if (nm) fprintf(f, ", \"minors\": [%s]", minors);
    if (gwhy[0]) { /* the agent counts and alerts on jobs whose GPUs could not be mapped */
        fputs(", \"gpu_error\": \"", f);
        json_string_out(f, gwhy);
        fputc('"', f);
    }
    if (steplog[0]) fprintf(f, ", \"steplog\": \"%s\"", steplog);
    fprintf(f, "%s}\n", uidf);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
        slurm_error("pfi: %s/jobs/%s: %s", rundir, tmp, strerror(errno));
        unlinkat(dfd, tmp, 0);
    } else if (renameat(dfd, tmp, dfd, name) != 0) {
        slurm_error("pfi: %s/jobs/%s: %s", rundir, name, strerror(errno));
        unlinkat(dfd, tmp, 0);
    }
    close(dfd);
    return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    uint32_t id = job_id(sp);
    if (!id) return 0;
    char why[1200];
    if (dirs_ok(why, sizeof why)) {
        slurm_error(
            "pfi: rundir %s is not safe for root to remove files in (%s): job %u's files are left",
            rundir, why, id);
        return 0;
    }
    char steplog[1200], prefix[1100], name[64];
    /* the step log we made for it (only a file of ours in steplogs/) */
    snprintf(prefix, sizeof prefix, "%s/steplogs/", rundir);
    if (job_steplog(id, steplog, sizeof steplog) == 0 &&
        !strncmp(steplog, prefix, strlen(prefix)) && !strchr(steplog + strlen(prefix), '/')) {
        int dfd = open_dir("steplogs");
        if (dfd >= 0) {
            unlinkat(dfd, steplog + strlen(prefix), 0);
            close(dfd);
        }
    }
    snprintf(name, sizeof name, "%u.json", id);
    int dfd = open_dir("jobs");
    if (dfd < 0 || (unlinkat(dfd, name, 0) != 0 && errno != ENOENT))
        slurm_error("pfi: %s/jobs/%s: %s", rundir, name, strerror(errno));
    if (dfd >= 0) close(dfd);
    return 0;
}
