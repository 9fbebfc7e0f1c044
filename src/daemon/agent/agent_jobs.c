/* agent_jobs.c — which GPUs belong to which job, and what each job does.
 *
 * Sources of the mapping, later ones overriding earlier ones per GPU:
 *  1. the GPUs' running compute processes: the job id from the process's
 *     cgroup (/proc/PID/cgroup, Slurm's layout: job_id.h), or — only with
 *     --job-env VAR, which trusts the job's user — from VAR in the
 *     process's environment; its step log from $PFI_STEPLOG (the sim
 *     backend knows both itself);
 *  2. a static file (--jobs-file) and job files written by the scheduler
 *     integration (--jobs-dir: the .json files in DIR), each {"job_id", "gpus": [index
 *     or UUID...], "steplog"}: written by an admin, they win.
 * A job id that is not [A-Za-z0-9._-]{1,63} (or is . or ..) is ignored with
 * a warning whatever its source: ids become labels, file names and page
 * text (docs/security.md).
 * Per job: throughput from the tail of its step log, power summed over its
 * GPUs, training-phase means of its GPU-averaged telemetry (samples with
 * GPU utilization above 50%), and the predicted PFI from --model. With
 * --job-mapping-dir the agent writes dcgm-exporter's HPC job-mapping files
 * (one file per GPU index listing its job ids). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "agent_client.h"
#include "atomic.h"
#include "clock.h"
#include "job_id.h"
#include "pfi/features.h"
#include "pfi/prom.h"
#include "pfi/steplog.h"

/* VAR's value in /proc/PID/environ; 0 if found */
static int proc_env(unsigned pid, const char *var, char *out, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    static __thread char buf[1 << 17];
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return -1;
    buf[k] = '\0';
    size_t vl = strlen(var);
    for (ssize_t off = 0; off < k;) {
        const char *e = buf + off;
        size_t el = strlen(e);
        if (el > vl && !strncmp(e, var, vl) && e[vl] == '=') {
            snprintf(out, n, "%s", e + vl + 1);
            return 0;
        }
        off += (ssize_t)el + 1;
    }
    return -1;
}

/* the Slurm job id in /proc/PID/cgroup; 0 if found. On cgroup v1 the
   path's uid_U must be the process's owner. */
static int proc_cgroup_job(unsigned pid, char *out, size_t n)
{
    char path[64], buf[16384];
    snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, sizeof buf);
    close(fd);
    long uid;
    if (k <= 0 || pfi_job_id_from_cgroup(buf, (size_t)k, out, n, &uid)) return -1;
    struct stat st;
    snprintf(path, sizeof path, "/proc/%u", pid);
    if (uid >= 0 && (stat(path, &st) || (long)st.st_uid != uid)) return -1;
    return 0;
}

typedef struct jmap {
    char id[AGENT_MAX_GPUS][64], steplog[AGENT_MAX_GPUS][1024], source[AGENT_MAX_GPUS][16];
    int claims[AGENT_MAX_GPUS]; /* job files naming the GPU, distinct jobs */
    unsigned unmapped;          /* job entries with GPUs of which none mapped, or a "gpu_error" */
    char other[AGENT_MAX_GPUS][64]; /* a second claimant's id */
    /* the jobs whose cgroups hold processes on the GPU (the cross-check's
       evidence: only a Slurm job cgroup counts, never an environment) */
    char cg[AGENT_MAX_GPUS][2][64];
    int tier[AGENT_MAX_GPUS];
    long long uid[AGENT_MAX_GPUS]; /* the job's user (AGENT_UID_*), set with its id */
} jmap;

/* 1 the first time key is seen among the last 32 (a job file's refusal or
 * unknown GPU is logged once, not at every refresh; called under a->mu) */
static int first_time(const char *key)
{
    static char seen[32][512];
    static unsigned next;
    for (unsigned i = 0; i < 32; i++)
        if (!strncmp(seen[i], key, sizeof seen[i] - 1)) return 0;
    snprintf(seen[next++ % 32], sizeof seen[0], "%s", key);
    return 1;
}

/* one entry of a job file's GPUs (a minor number, an NVML index or a UUID)
 * -> this node's GPU index, or -1: not a guess, an unknown GPU is an error
 * naming the job and the GPU (logged once per job file and entry) */
static long job_file_gpu(agent *a, json_t *g, const char *file, const char *idbuf)
{
    long i = -1;
    json_t *mi = json_object_get(g, "minor");
    if (mi) { /* exactly one GPU of this node must have that minor number */
        int hits = 0;
        for (size_t q = 0; q < a->n; q++)
            if (json_is_integer(mi) && agent_gpu_usable(a, q) &&
                a->g[q].info.minor == (int)json_integer_value(mi))
                i = (long)q, hits++;
        if (hits != 1) i = -1;
        g = mi;
    } else if (json_is_integer(g)) i = (long)json_integer_value(g);
    else if (json_is_string(g))
        for (size_t q = 0; q < a->n; q++)
            if (!strcmp(a->g[q].info.uuid, json_string_value(g))) i = (long)q;
    if (i >= 0 && (size_t)i < a->n) return i;
    char key[256], what[100];
    if (json_is_string(g)) snprintf(what, sizeof what, "%.90s", json_string_value(g));
    else
        snprintf(what, sizeof what, "%s%lld", mi ? "with minor number " : "",
                 (long long)json_integer_value(g));
    snprintf(key, sizeof key, "%.60s#%s#%.40s", idbuf, what, file);
    if (first_time(key))
        agent_log(a,
                  "error: %s: job %s: GPU %s is not one GPU of this node (no such index, UUID or "
                  "minor number, or more than one; %zu GPUs): that GPU is not mapped",
                  file, idbuf, what, a->n);
    return -1;
}

static void map_file_job(agent *a, json_t *j, const char *file, jmap *m)
{
    json_t *id = json_object_get(j, "job_id"), *gp = json_object_get(j, "gpus"),
           *mn = json_object_get(j, "minors"), *sl = json_object_get(j, "steplog"),
           *tier = json_object_get(j, "tier"), *uid = json_object_get(j, "uid");
    char idbuf[64];
    if (json_is_string(id)) snprintf(idbuf, sizeof idbuf, "%s", json_string_value(id));
    else if (json_is_integer(id))
        snprintf(idbuf, sizeof idbuf, "%lld", (long long)json_integer_value(id));
    else {
        agent_log(a, "warning: %s: job_id missing; entry ignored", file);
        return;
    }
    if (!pfi_job_id_valid(idbuf)) {
        agent_log(a,
                  "warning: %s: job_id is not [A-Za-z0-9._-]{1,63} (or is . or ..); entry ignored",
                  file);
        return;
    }
    if (!json_is_array(gp) && !(json_is_array(mn) && !gp)) {
        agent_log(a, "warning: %s: job %s: gpus must be an array; ignored", file, idbuf);
        return;
    }
    if (mn && !json_is_array(mn)) {
        agent_log(a, "warning: %s: job %s: minors must be an array; ignored", file, idbuf);
        return;
    }
    /* the job's user (the Slurm plugin writes S_JOB_UID): its step log must be theirs */
    if (uid && !(json_is_integer(uid) && json_integer_value(uid) >= 0 &&
                 json_integer_value(uid) <= 0xfffffffeLL)) {
        agent_log(a,
                  "warning: %s: job %s: field 'uid': expected a user id (0..4294967294); ignored",
                  file, idbuf);
        return;
    }
    /* "minors": /dev/nvidiaN minor numbers (the Slurm plugin's, from
       gres.conf File=), matched against nvmlDeviceGetMinorNumber; then
       "gpus": NVML indexes or UUIDs */
    json_t *all = json_array();
    size_t k;
    json_t *g;
    json_array_foreach(mn, k, g)
    {
        json_t *o = json_object();
        json_object_set(o, "minor", g);
        json_array_append_new(all, o);
    }
    json_array_foreach(gp, k, g) json_array_append(all, g);
    /* the Slurm plugin could not map the job's GPUs (gpu_map.h): counted
       (pfi_agent_jobs_unmapped, alert PfiJobGpusUnmapped), logged once */
    json_t *ge = json_object_get(j, "gpu_error");
    size_t mapped = 0;
    if (json_is_string(ge)) {
        char key[256];
        snprintf(key, sizeof key, "gpu_error#%.60s#%.100s", idbuf, file);
        if (first_time(key))
            agent_log(a, "error: %s: job %s: the Slurm plugin could not map its GPUs: %.300s", file,
                      idbuf, json_string_value(ge));
        m->unmapped++;
    }
    json_array_foreach(all, k, g)
    {
        long i = job_file_gpu(a, g, file, idbuf);
        if (i < 0) continue;
        /* a GPU another job file already names: shared (gres/shard,
           gres/mps, overlapping files). The first claimant is kept for the
           record; apply_shared takes the GPU out of every job. */
        mapped++; /* a GPU of this node (shared or not) */
        if (!strcmp(m->source[i], "jobfile") && strcmp(m->id[i], idbuf)) {
            if (m->claims[i]++ == 1) snprintf(m->other[i], sizeof m->other[0], "%s", idbuf);
            continue;
        }
        if (!m->claims[i]) m->claims[i] = 1;
        snprintf(m->id[i], sizeof m->id[0], "%s", idbuf);
        snprintf(m->steplog[i], sizeof m->steplog[0], "%s",
                 json_is_string(sl) ? json_string_value(sl) : "");
        snprintf(m->source[i], sizeof m->source[0], "jobfile");
        m->uid[i] = uid ? (long long)json_integer_value(uid) : AGENT_UID_UNKNOWN;
        m->tier[i] =
            json_is_integer(tier) && json_integer_value(tier) >= 0 && json_integer_value(tier) <= 3
                ? (int)json_integer_value(tier)
                : -1;
    }
    if (json_array_size(all) > 0 && mapped == 0 && !json_is_string(ge)) m->unmapped++;
    json_decref(all);
}

/* Job files are the admin's (the scheduler integration's): only a regular
 * file, not a link, owned by root or by us and writable by its owner alone
 * is read (non-blocking, at most 1 MiB); anything else could be a user's
 * forgery (another job's GPUs, tier 0) or a FIFO that would stall the
 * mapping. Each refusal is logged once per path. */
static int admin_owned(const struct stat *st)
{
    return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & 022);
}

static void refuse_once(agent *a, const char *path, const char *why)
{
    if (first_time(path))
        agent_log(a, "warning: %s: %s; job file ignored (docs/security.md)", path, why);
}

static void map_file(agent *a, const char *path, jmap *m)
{
    json_error_t je;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st = {0};
    if (fd < 0) {
        refuse_once(a, path, errno == ELOOP ? "a symbolic link" : strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !admin_owned(&st) ||
        st.st_size > (1 << 20)) {
        refuse_once(a, path,
                    !S_ISREG(st.st_mode)     ? "not a regular file"
                    : st.st_size > (1 << 20) ? "larger than 1 MiB"
                                             : "not root's, or writable by others");
        close(fd);
        return;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    json_t *o = got >= 0 ? json_loadb(buf, (size_t)got, 0, &je) : NULL;
    if (got < 0) snprintf(je.text, sizeof je.text, "cannot read"), je.line = 0;
    free(buf);
    if (!o) {
        agent_log(a, "warning: %s:%d: %s; job file ignored", path, je.line, je.text);
        return;
    }
    json_t *list = json_is_array(o) ? o : json_object_get(o, "jobs");
    if (json_is_array(list)) {
        size_t k;
        json_t *j;
        json_array_foreach(list, k, j) map_file_job(a, j, path, m);
    } else if (json_is_object(o)) {
        map_file_job(a, o, path, m);
    }
    json_decref(o);
}

static void write_mapping(agent *a)
{
    for (size_t i = 0; i < a->n; i++) {
        char path[4096], want[128], have[128] = "";
        snprintf(path, sizeof path, "%s/%zu", a->cfg.mapping_dir, i);
        snprintf(want, sizeof want, "%s%s", a->g[i].job_id, a->g[i].job_id[0] ? "\n" : "");
        FILE *f = fopen(path, "r");
        if (f) {
            size_t k = fread(have, 1, sizeof have - 1, f);
            have[k] = '\0';
            fclose(f);
        }
        if (f && !strcmp(have, want)) continue;
        pfi_error e;
        if (pfi_write_file_private(path, want, strlen(want), &e))
            agent_log(a, "warning: job mapping: %s", e.msg);
    }
}

/* source 1: the jobs of the GPUs' running compute processes */
static void map_processes(agent *a, jmap *m)
{
    static unsigned warned_pid[AGENT_MAX_GPUS]; /* one warning per process */
    for (size_t i = 0; i < a->n; i++) {
        pfi_gpu_proc p[16];
        size_t np = 0;
        pfi_error e;
        if (pfi_gpu_processes(a->gpu, i, p, 16, &np, &e)) continue;
        for (size_t k = 0; k < np; k++) {
            char id[64] = "", sl[1024] = "";
            int from_cgroup = 0;
            if (p[k].job_id[0])
                snprintf(id, sizeof id, "%s", p[k].job_id); /* the backend's own (sim) */
            else if (!proc_cgroup_job(p[k].pid, id, sizeof id)) from_cgroup = 1;
            else if (!a->cfg.job_env || proc_env(p[k].pid, a->cfg.job_env, id, sizeof id))
                continue; /* in no Slurm job's cgroup, and its environment is not trusted (or names
                             no job) */
            for (int c = 0; from_cgroup && pfi_job_id_valid(id) && c < 2; c++)
                if (!m->cg[i][c][0] || !strcmp(m->cg[i][c], id)) {
                    snprintf(m->cg[i][c], sizeof m->cg[i][c], "%s", id);
                    break;
                }
            if (!pfi_job_id_valid(id)) {
                if (warned_pid[i] != p[k].pid)
                    agent_log(a,
                              "warning: GPU %zu: process %u: its job id is not "
                              "[A-Za-z0-9._-]{1,63} (or is . or ..); ignored",
                              i, p[k].pid);
                warned_pid[i] = p[k].pid;
                continue;
            }
            /* the step log: the backend's (sim), else a job file's (merged
               later); $PFI_STEPLOG from the process's environment only with
               --job-env: reading another user's environ can be made to
               stall (its pages are the user's to map), and it runs under the
               agent's lock */
            if (p[k].steplog[0]) snprintf(sl, sizeof sl, "%s", p[k].steplog);
            else if (a->cfg.job_env) proc_env(p[k].pid, "PFI_STEPLOG", sl, sizeof sl);
            snprintf(m->id[i], sizeof m->id[0], "%s", id);
            snprintf(m->steplog[i], sizeof m->steplog[0], "%s", sl);
            snprintf(m->source[i], sizeof m->source[0], "process");
            /* the process's user owns its step log; the simulator's own jobs have no owner */
            char pp[32];
            struct stat pst;
            snprintf(pp, sizeof pp, "/proc/%u", p[k].pid);
            m->uid[i] = p[k].job_id[0]        ? AGENT_UID_ANY
                        : stat(pp, &pst) == 0 ? (long long)pst.st_uid
                                              : AGENT_UID_UNKNOWN;
        }
    }
}

/* source 2: the job files in --jobs-dir, in the order of their names */
static void map_jobs_dir(agent *a, jmap *m)
{
    struct stat dst;
    int st = lstat(a->cfg.jobs_dir, &dst);
    if (st != 0 && errno == ENOENT) {
        /* not made yet (the Slurm plugin makes /run/pfi/jobs at the node's
           first job): nothing to read and nothing wrong; said once, as info */
        if (!a->jobs_dir_missing_said)
            agent_log(a,
                      "--jobs-dir %s does not exist yet: no job files until the scheduler "
                      "integration makes it",
                      a->cfg.jobs_dir);
        a->jobs_dir_missing_said = 1;
        return;
    }
    a->jobs_dir_missing_said = 0; /* there again: a later disappearance is said again */
    if (st != 0 || !S_ISDIR(dst.st_mode) || !admin_owned(&dst)) {
        refuse_once(
            a, a->cfg.jobs_dir,
            "--jobs-dir is not a directory of root's (or ours) that only its owner can write");
        return;
    }
    DIR *d = opendir(a->cfg.jobs_dir);
    if (!d) return;
    struct dirent *de;
    char *names[256];
    int nn = 0;
    while ((de = readdir(d)) && nn < 256) {
        size_t l = strlen(de->d_name);
        if (l <= 5 || strcmp(de->d_name + l - 5, ".json")) continue;
        if (!(names[nn] = strdup(de->d_name))) {
            agent_log(a, "error: %s: out of memory listing the job files", a->cfg.jobs_dir);
            break;
        }
        nn++;
    }
    closedir(d);
    for (int i = 1; i < nn; i++) /* sorted: deterministic when files overlap */
        for (int j = i; j > 0 && strcmp(names[j], names[j - 1]) < 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (int i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", a->cfg.jobs_dir, names[i]);
        map_file(a, path, m);
        free(names[i]);
    }
}

/* simulated jobs on demand (sim:...,idle): a job file naming a simulated
   job's GPUs starts it (writing to the job file's step log), and its
   disappearance stops it — so the scheduler integration can be tested
   on simulated GPUs */
static void sim_jobs_on_demand(agent *a, const jmap *m)
{
    const pfi_gpu_backend_info *b = pfi_gpu_backend_of(a->cfg.backend, NULL);
    int on_demand = b && b->simulated && pfi_gpu_backend_option(a->cfg.backend, "idle");
    for (size_t k = 0; on_demand && k < pfi_gpu_sim_jobs(a->gpu) && k < 16; k++) {
        size_t first, last;
        const char *sid, *sgroup;
        if (pfi_gpu_sim_job_info(a->gpu, k, &first, &last, &sid, &sgroup, NULL)) continue;
        const char *owner = NULL, *sl = NULL;
        for (size_t i = first; i <= last && i < a->n; i++)
            if (!strcmp(m->source[i], "jobfile")) owner = m->id[i], sl = m->steplog[i];
        if (owner && !a->sim_started[k]) {
            pfi_error e;
            if (pfi_gpu_sim_job_start(a->gpu, k, sl && *sl ? sl : NULL, &e) == PFI_OK) {
                a->sim_started[k] = 1;
                agent_log(a, "simulated job %s (%s) started for job %s", sid, sgroup, owner);
            } else {
                agent_log(a, "warning: %s", e.msg);
            }
        } else if (!owner && a->sim_started[k]) {
            pfi_gpu_sim_job_stop(a->gpu, k, NULL);
            a->sim_started[k] = 0;
            agent_log(a, "simulated job %s stopped", sid);
        }
    }
}

/* GPU i back to its baseline, if pfi holds a cap on it (why: for the log);
 * -1 when the device refused (logged once until it succeeds) */
static int put_back(agent *a, size_t i, const char *why)
{
    pfi_lease_gpu *lg = pfi_lease_gpu_get(&a->lease, a->g[i].info.uuid);
    pfi_error e;
    if (!lg || !lg->changed) return 0;
    if (pfi_gpu_set_cap(a->gpu, i, lg->baseline_w, &e) != PFI_OK) {
        if (!a->g[i].end_restore_failed)
            agent_log(a,
                      "error: GPU %zu %s: restoring its baseline %.0f W (%s) failed, retried: %s",
                      i, lg->uuid, lg->baseline_w, why, e.msg);
        return -1;
    }
    agent_log(a, "GPU %zu %s: cap %.0f -> %.0f W (%s: baseline restored)", i, lg->uuid, lg->cap_w,
              lg->baseline_w, why);
    lg->changed = 0;
    lg->cap_w = lg->baseline_w;
    a->cap_changes++;
    agent_save_state(a);
    return 0;
}

/* a GPU whose job ended goes back to its baseline at once (the job's
   epilog removed its job file); the lease goes on for the other GPUs. A
   restore the device refuses is logged and retried at each refresh until
   it is done or another job takes the GPU. */
static void restore_ended(agent *a, const jmap *m)
{
    for (size_t i = 0; i < a->n; i++) {
        agent_gpu *g = &a->g[i];
        int ended = g->job_id[0] && strcmp(g->job_id, m->id[i]);
        if (g->end_restore_failed && m->id[i][0]) g->end_restore_failed = 0; /* a new job's */
        if (!ended && !g->end_restore_failed) continue;
        char why[96];
        snprintf(why, sizeof why, "job %.60s ended", ended ? g->job_id : "its job");
        g->end_restore_failed = put_back(a, i, why) != 0;
    }
}

/* The cross-check (issue 40): a GPU a job file gives to job A while a
 * process on it sits in job B's cgroup is a mismatch (a stale or forged
 * file, a wrong GPU order): logged as an error once, shown in /v1/node and
 * pfi_gpu_job_mismatch, and the GPU is capped by no job while it lasts.
 * Only Slurm job cgroups count (MPS servers, DCGM, root daemons are in
 * none); a shared GPU is apply_shared's. */
static void cross_check(agent *a, jmap *m)
{
    for (size_t i = 0; i < a->n; i++) {
        agent_gpu *g = &a->g[i];
        const char *other = NULL;
        if (!strcmp(m->source[i], "jobfile") && m->claims[i] < 2)
            for (int c = 0; c < 2 && !other; c++)
                if (m->cg[i][c][0] && strcmp(m->cg[i][c], m->id[i])) other = m->cg[i][c];
        if (!other) {
            if (g->mismatch[0])
                agent_log(a, "GPU %zu %s: its job file and its processes agree again", i,
                          g->info.uuid);
            g->mismatch[0] = '\0';
            continue;
        }
        char now[sizeof g->mismatch];
        snprintf(now, sizeof now, "job file: job %.63s; a process of job %.63s", m->id[i], other);
        if (strcmp(now, g->mismatch))
            agent_log(a,
                      "error: GPU %zu %s: its job file names job %s, but a process on it is in "
                      "job %s's cgroup: not capped by job until they agree",
                      i, g->info.uuid, m->id[i], other);
        snprintf(g->mismatch, sizeof g->mismatch, "%s", now);
        m->id[i][0] = '\0'; /* no job's */
    }
}

/* A GPU two or more jobs claim (gres/shard, gres/mps: the same prolog runs
 * for each; or overlapping job files) is treated as MIG is: it belongs to
 * no job, no job or GPU entry of a PUT changes it (skipped, "shared"), a
 * cap pfi held on it is put back at once (one job's cap would throttle its
 * co-tenant), and it is reported so the controller counts it as load it
 * cannot shed. When one claimant is left it is that job's again. */
static void apply_shared(agent *a, jmap *m)
{
    for (size_t i = 0; i < a->n; i++) {
        agent_gpu *g = &a->g[i];
        int sh = m->claims[i] >= 2;
        if (sh) {
            snprintf(g->claimed_by, sizeof g->claimed_by, "%.63s,%.63s", m->id[i], m->other[i]);
            if (!g->shared) {
                agent_log(a,
                          "warning: GPU %zu %s: claimed by jobs %s (and %d in all): shared "
                          "(gres/shard, gres/mps or overlapping job files), so never capped, "
                          "as MIG",
                          i, g->info.uuid, g->claimed_by, m->claims[i]);
                put_back(a, i, "shared");
            }
            m->id[i][0] = '\0'; /* no job's */
        } else if (g->shared) {
            agent_log(a, "GPU %zu %s: no longer shared (%s)", i, g->info.uuid,
                      m->id[i][0] ? m->id[i] : "no job");
            g->claimed_by[0] = '\0';
        }
        g->shared = sh;
    }
}

/* the job list from the mapping, keeping each job's step-log position and
 * means; jobs no GPU maps any more are dropped */
static void rebuild_jobs(agent *a, const jmap *m)
{
    for (size_t k = 0; k < a->njobs; k++) a->job[k].seen = 0, a->job[k].ngpus = 0;
    for (size_t i = 0; i < a->n; i++) {
        snprintf(a->g[i].job_id, sizeof a->g[i].job_id, "%s", m->id[i]);
        if (!m->id[i][0]) continue;
        size_t k;
        for (k = 0; k < a->njobs; k++)
            if (!strcmp(a->job[k].id, m->id[i])) break;
        if (k == a->njobs) {
            if (a->njobs == AGENT_MAX_JOBS) continue;
            agent_job *j = &a->job[a->njobs++];
            memset(j, 0, sizeof *j);
            snprintf(j->id, sizeof j->id, "%s", m->id[i]);
            j->tokens_per_s = j->tokens_t = j->pfi_pred = j->sm_clock_mhz = j->sm_active = NAN;
            j->tier = -1;
            for (int q = 0; q < PFI_M_COUNT; q++) j->feat[q] = NAN;
            agent_log(a, "job %s appeared (%s)", j->id, m->source[i]);
        }
        agent_job *j = &a->job[k];
        j->seen = 1;
        if (strcmp(j->steplog, m->steplog[i])) {
            snprintf(j->steplog, sizeof j->steplog, "%s", m->steplog[i]);
            j->steplog_off = 0;
        }
        snprintf(j->source, sizeof j->source, "%s", m->source[i]);
        if (m->tier[i] >= 0) j->tier = m->tier[i];
        j->uid = m->uid[i];
        j->gpu[j->ngpus++] = i;
    }
    for (size_t k = 0; k < a->njobs;) {
        if (a->job[k].seen) {
            k++;
            continue;
        }
        agent_log(a, "job %s ended", a->job[k].id);
        a->job[k] = a->job[--a->njobs];
    }
}

void agent_jobs_refresh(agent *a)
{
    jmap *m = calloc(1, sizeof *m);
    if (!m) return;
    for (size_t i = 0; i < AGENT_MAX_GPUS; i++) m->tier[i] = -1;
    map_processes(a, m);
    if (a->cfg.jobs_file) map_file(a, a->cfg.jobs_file, m);
    if (a->cfg.jobs_dir) map_jobs_dir(a, m);
    sim_jobs_on_demand(a, m);
    apply_shared(a, m);
    cross_check(a, m);
    a->jobs_unmapped = m->unmapped;
    restore_ended(a, m);
    rebuild_jobs(a, m);
    if (a->cfg.mapping_dir) write_mapping(a);
    free(m);
}

int agent_job_gpus(agent *a, const char *job_id, size_t *idx, size_t max)
{
    for (size_t k = 0; k < a->njobs; k++)
        if (!strcmp(a->job[k].id, job_id)) {
            size_t n = a->job[k].ngpus < max ? a->job[k].ngpus : max;
            memcpy(idx, a->job[k].gpu, n * sizeof *idx);
            return (int)n;
        }
    return 0;
}

static double gpu_prof(const agent_gpu *g, int m)
{
    if (!isnan(g->dcgm_prof[m])) return g->dcgm_prof[m];
    if (m == PFI_M_GPU_UTIL) return (g->last.have & PFI_GS_UTIL) ? g->last.util_gpu_pct : NAN;
    if (m == PFI_M_MEM_COPY_UTIL) return (g->last.have & PFI_GS_UTIL) ? g->last.util_mem_pct : NAN;
    if (m == PFI_M_POWER_USAGE) return (g->last.have & PFI_GS_POWER) ? g->last.power_w : NAN;
    if (m == PFI_M_FB_USED) return (g->last.have & PFI_GS_MEM) ? g->last.fb_used_mib : NAN;
    if (m == PFI_M_SM_CLOCK) return (g->last.have & PFI_GS_CLOCKS) ? g->last.sm_clock_mhz : NAN;
    if (m == PFI_M_MEM_CLOCK) return (g->last.have & PFI_GS_CLOCKS) ? g->last.mem_clock_mhz : NAN;
    if (m == PFI_M_GPU_TEMP) return (g->last.have & PFI_GS_TEMP) ? g->last.temp_c : NAN;
    if (m == PFI_M_ENFORCED_LIMIT)
        return (g->last.have & PFI_GS_ENFORCED) ? g->last.enforced_w : NAN;
    if (m == PFI_M_MGMT_LIMIT) return (g->last.have & PFI_GS_CAP) ? g->last.cap_w : NAN;
    return g->last.prof[m];
}

/* a model feature's value for job j, by the sweep table's column name:
 * from its training means as job values (summed metrics times its GPUs) */
static double feature(const agent_job *j, const char *name, int *known)
{
    double n = (double)j->ngpus, v[PFI_M_COUNT];
    for (int m = 0; m < PFI_M_COUNT; m++)
        v[m] = j->feat[m] * (pfi_metric_get((pfi_metric)m)->agg == PFI_AGG_SUM ? n : 1);
    return pfi_feature_from_metrics(name, v, known);
}

void agent_jobs_update(agent *a)
{
    for (size_t k = 0; k < a->njobs; k++) {
        agent_job *j = &a->job[k];
        double p = 0, util = 0, avg[PFI_M_COUNT];
        int np = 0, nutil = 0;
        for (int m = 0; m < PFI_M_COUNT; m++) avg[m] = 0;
        for (size_t q = 0; q < j->ngpus; q++) {
            const agent_gpu *g = &a->g[j->gpu[q]];
            if (!g->sampled) continue;
            np++;
            if (g->last.have & PFI_GS_POWER) p += g->last.power_w;
            if (g->last.have & PFI_GS_UTIL) util += g->last.util_gpu_pct, nutil++;
            for (int m = 0; m < PFI_M_COUNT; m++) avg[m] += gpu_prof(g, m);
        }
        if (!np) continue;
        j->power_w = p;
        /* NaN when a GPU of it does not report it (a sum with NaN) */
        j->sm_clock_mhz = avg[PFI_M_SM_CLOCK] / np;
        j->sm_active = avg[PFI_M_SM_ACTIVE] / np;
        /* training (docs/agent.md, "Jobs"): GPU utilization above 50% where
           every GPU reports it; where it is unknown (NOT_SUPPORTED, e.g.
           under MIG), DCGM's graphics-engine activity above 0.5 where
           scraped, else a step log that moved within the last 30 s */
        int training;
        double gr = avg[PFI_M_GR_ENGINE_ACTIVE] / np;
        if (nutil == np) training = util / np > 50;
        else if (isfinite(gr)) training = gr > 0.5;
        else training = isfinite(j->tokens_per_s) && pfi_clock_now() - j->tokens_t < 30;
        if (training) { /* update the running means */
            j->feat_n++;
            for (int m = 0; m < PFI_M_COUNT; m++) {
                double v = avg[m] / np;
                j->feat[m] = j->feat_n == 1 || isnan(j->feat[m])
                                 ? v
                                 : j->feat[m] + (v - j->feat[m]) / j->feat_n;
            }
        }
        if (!a->have_model) continue;
        double x[64];
        size_t pcount = a->model.p < 64 ? a->model.p : 64;
        int ok = j->feat_n > 0;
        j->pfi_note[0] = '\0';
        for (size_t q = 0; q < pcount && ok; q++) {
            int known;
            x[q] = feature(j, a->model.features[q], &known);
            if (!known || !isfinite(x[q])) {
                snprintf(j->pfi_note, sizeof j->pfi_note, "feature %s not measured on this node%s",
                         a->model.features[q], known ? "" : " (needs DCGM profiling: --dcgm-url)");
                ok = 0;
            }
        }
        if (!j->feat_n) snprintf(j->pfi_note, sizeof j->pfi_note, "no training-phase sample yet");
        int cl = 0, oor = 0;
        j->pfi_pred = ok ? pfi_modelfile_pfi(&a->model, x, &cl, &oor) : NAN;
        if (ok && oor)
            snprintf(j->pfi_note, sizeof j->pfi_note,
                     "features outside the model's training range");
    }
}

typedef struct scrape_ctx {
    agent *a;
    double prof[AGENT_MAX_GPUS][PFI_M_COUNT];
} scrape_ctx;

void agent_dcgm_scrape(agent *a)
{
    if (!a->cfg.dcgm_url) return;
    pfi_http_reply r;
    pfi_error e;
    if (pfi_agent_get(a->cfg.dcgm_url, "", 2.0, &r, &e) || r.code != 200) {
        if (r.body) pfi_http_reply_dispose(&r);
        pthread_mutex_lock(&a->mu);
        /* said when it goes down, not at every sampling round (issue 40) */
        if (!a->dcgm_down)
            agent_log(a,
                      "warning: dcgm-exporter %s: %s; its profiling fields are missing until it "
                      "answers (said again when it does)",
                      a->cfg.dcgm_url, r.code ? "HTTP error" : e.msg);
        a->dcgm_down = 1;
        for (size_t i = 0; i < a->n; i++)
            for (int m = 0; m < PFI_M_COUNT; m++) a->g[i].dcgm_prof[m] = NAN;
        pthread_mutex_unlock(&a->mu);
        return;
    }
    double(*prof)[PFI_M_COUNT] = malloc(sizeof(double) * AGENT_MAX_GPUS * PFI_M_COUNT);
    if (!prof) {
        pfi_http_reply_dispose(&r);
        return;
    }
    for (size_t i = 0; i < AGENT_MAX_GPUS; i++)
        for (int m = 0; m < PFI_M_COUNT; m++) prof[i][m] = NAN;
    pthread_mutex_lock(&a->mu);
    if (a->dcgm_down) agent_log(a, "dcgm-exporter %s answers again", a->cfg.dcgm_url);
    a->dcgm_down = 0;
    for (char *p = r.body; p && *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        pfi_sample s;
        const char *what;
        /* a MIG instance's series (GPU_I_ID) is not the whole GPU's: kept
           apart, never folded into (or overwriting) the GPU's value */
        int instance = memmem(p, len, "GPU_I_ID=\"", 10) != NULL;
        if (!instance && pfi_prom_parse_line(p, len, &s, &what) == 1 && s.uuid.n)
            for (size_t i = 0; i < a->n; i++)
                if (strlen(a->g[i].info.uuid) == s.uuid.n &&
                    !strncmp(a->g[i].info.uuid, s.uuid.p, s.uuid.n) &&
                    s.metric >= PFI_M_GR_ENGINE_ACTIVE && s.metric <= PFI_M_PCIE_RX_BYTES)
                    prof[i][s.metric] = s.value;
        p = nl ? nl + 1 : NULL;
    }
    for (size_t i = 0; i < a->n; i++) memcpy(a->g[i].dcgm_prof, prof[i], sizeof prof[i]);
    /* dcgm-exporter as shipped lacks fields pfi's features use (its default
       counters comment out SM active and occupancy): said once, naming the
       fields; docs/agent.md gives the counters-CSV lines to add */
    if (!a->dcgm_missing_logged && a->n) {
        char missing[1024] = "";
        size_t nm = 0;
        for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_PCIE_RX_BYTES; m++) {
            int any = 0;
            for (size_t i = 0; i < a->n; i++) any |= isfinite(prof[i][m]);
            if (!any && nm + 64 < sizeof missing)
                nm += (size_t)snprintf(missing + nm, sizeof missing - nm, "%s%s", nm ? ", " : "",
                                       pfi_metric_get((pfi_metric)m)->name);
        }
        if (nm)
            agent_log(a,
                      "warning: dcgm-exporter %s serves no %s: the features that need them are "
                      "not computed (add them to its counters CSV: docs/agent.md, \"dcgm-exporter "
                      "as shipped\")",
                      a->cfg.dcgm_url, missing);
        a->dcgm_missing_logged = 1;
    }
    pthread_mutex_unlock(&a->mu);
    free(prof);
    pfi_http_reply_dispose(&r);
}
