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
#include "pfi/agent_client.h"
#include "pfi/atomic.h"
#include "pfi/clock.h"
#include "pfi/job_id.h"
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
    int tier[AGENT_MAX_GPUS];
} jmap;

static void map_file_job(agent *a, json_t *j, const char *file, jmap *m)
{
    json_t *id = json_object_get(j, "job_id"), *gp = json_object_get(j, "gpus"), *sl = json_object_get(j, "steplog"),
           *tier = json_object_get(j, "tier");
    char idbuf[64];
    if (json_is_string(id)) snprintf(idbuf, sizeof idbuf, "%s", json_string_value(id));
    else if (json_is_integer(id)) snprintf(idbuf, sizeof idbuf, "%lld", (long long)json_integer_value(id));
    else {
        agent_log(a, "warning: %s: job_id missing; entry ignored", file);
        return;
    }
    if (!pfi_job_id_valid(idbuf)) {
        agent_log(a, "warning: %s: job_id is not [A-Za-z0-9._-]{1,63} (or is . or ..); entry ignored", file);
        return;
    }
    if (!json_is_array(gp)) {
        agent_log(a, "warning: %s: job %s: gpus must be an array; ignored", file, idbuf);
        return;
    }
    size_t k;
    json_t *g;
    json_array_foreach(gp, k, g) {
        long i = -1;
        if (json_is_integer(g)) i = (long)json_integer_value(g);
        else if (json_is_string(g))
            for (size_t q = 0; q < a->n; q++)
                if (!strcmp(a->g[q].info.uuid, json_string_value(g))) i = (long)q;
        if (i < 0 || (size_t)i >= a->n) continue;
        snprintf(m->id[i], sizeof m->id[0], "%s", idbuf);
        snprintf(m->steplog[i], sizeof m->steplog[0], "%s", json_is_string(sl) ? json_string_value(sl) : "");
        snprintf(m->source[i], sizeof m->source[0], "jobfile");
        m->tier[i] = json_is_integer(tier) && json_integer_value(tier) >= 0 && json_integer_value(tier) <= 3 ? (int)json_integer_value(tier) : -1;
    }
}

static void map_file(agent *a, const char *path, jmap *m)
{
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
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
        if (pfi_write_file_private(path, want, strlen(want), &e)) agent_log(a, "warning: job mapping: %s", e.msg);
    }
}

void agent_jobs_refresh(agent *a)
{
    jmap *m = calloc(1, sizeof *m);
    if (!m) return;
    for (size_t i = 0; i < AGENT_MAX_GPUS; i++) m->tier[i] = -1;
    static unsigned warned_pid[AGENT_MAX_GPUS]; /* one warning per process */
    for (size_t i = 0; i < a->n; i++) {
        pfi_gpu_proc p[16];
        size_t np = 0;
        pfi_error e;
        if (pfi_gpu_processes(a->gpu, i, p, 16, &np, &e)) continue;
        for (size_t k = 0; k < np; k++) {
            char id[64] = "", sl[1024] = "";
            if (p[k].job_id[0]) snprintf(id, sizeof id, "%s", p[k].job_id); /* the backend's own (sim) */
            else if (proc_cgroup_job(p[k].pid, id, sizeof id) && (!a->cfg.job_env || proc_env(p[k].pid, a->cfg.job_env, id, sizeof id)))
                continue; /* in no Slurm job's cgroup, and its environment is not trusted (or names no job) */
            if (!pfi_job_id_valid(id)) {
                if (warned_pid[i] != p[k].pid)
                    agent_log(a, "warning: GPU %zu: process %u: its job id is not [A-Za-z0-9._-]{1,63} (or is . or ..); ignored", i,
                              p[k].pid);
                warned_pid[i] = p[k].pid;
                continue;
            }
            if (p[k].steplog[0]) snprintf(sl, sizeof sl, "%s", p[k].steplog);
            else proc_env(p[k].pid, "PFI_STEPLOG", sl, sizeof sl);
            snprintf(m->id[i], sizeof m->id[0], "%s", id);
            snprintf(m->steplog[i], sizeof m->steplog[0], "%s", sl);
            snprintf(m->source[i], sizeof m->source[0], "process");
        }
    }
    if (a->cfg.jobs_file) map_file(a, a->cfg.jobs_file, m);
    if (a->cfg.jobs_dir) {
        DIR *d = opendir(a->cfg.jobs_dir);
        if (d) {
            struct dirent *de;
            char *names[256];
            int nn = 0;
            while ((de = readdir(d)) && nn < 256) {
                size_t l = strlen(de->d_name);
                if (l > 5 && !strcmp(de->d_name + l - 5, ".json")) names[nn++] = strdup(de->d_name);
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
                if (names[i]) map_file(a, path, m);
                free(names[i]);
            }
        }
    }
    /* simulated jobs on demand (sim:...,idle): a job file naming a simulated
       job's GPUs starts it (writing to the job file's step log), and its
       disappearance stops it — so the scheduler integration can be tested
       on simulated GPUs */
    int on_demand = !strncmp(a->cfg.backend, "sim", 3) && strstr(a->cfg.backend, "idle") != NULL;
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
    /* a GPU whose job ended goes back to its baseline at once (the job's
       epilog removed its job file); the lease goes on for the other GPUs */
    for (size_t i = 0; i < a->n; i++) {
        if (!a->g[i].job_id[0] || !strcmp(a->g[i].job_id, m->id[i])) continue;
        pfi_lease_gpu *lg = pfi_lease_gpu_get(&a->lease, a->g[i].info.uuid);
        pfi_error e;
        if (lg && lg->changed && pfi_gpu_set_cap(a->gpu, i, lg->baseline_w, &e) == PFI_OK) {
            agent_log(a, "GPU %zu %s: cap %.0f -> %.0f W (job %s ended: baseline restored)", i, lg->uuid, lg->cap_w, lg->baseline_w,
                      a->g[i].job_id);
            lg->changed = 0;
            lg->cap_w = lg->baseline_w;
            a->cap_changes++;
            agent_save_state(a);
        }
    }
    /* rebuild the job list, keeping each job's step-log position and means */
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
            j->tokens_per_s = j->tokens_t = j->pfi_pred = NAN;
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

/* read the step-log lines appended since the last call */
static void tail_steplog(agent *a, agent_job *j)
{
    if (!j->steplog[0]) return;
    FILE *f = fopen(j->steplog, "r");
    if (!f) return;
    if (fseek(f, 0, SEEK_END) == 0 && ftell(f) < j->steplog_off) j->steplog_off = 0; /* truncated or replaced */
    fseek(f, j->steplog_off, SEEK_SET);
    char line[4096];
    double sum = 0, last_t = NAN;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        size_t l = strlen(line);
        if (l == 0 || line[l - 1] != '\n') break; /* a line still being written */
        j->steplog_off += (long)l;
        double t, tps, mfu, tf;
        const char *bad;
        if (pfi_steplog_parse_line(line, l - 1, &t, &tps, &mfu, &tf, &bad) == 1) {
            sum += tps;
            n++;
            last_t = t;
        }
    }
    fclose(f);
    if (n) {
        j->tokens_per_s = sum / n; /* mean over the steps since the last sample */
        j->tokens_t = last_t;
    }
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
    if (m == PFI_M_ENFORCED_LIMIT) return (g->last.have & PFI_GS_ENFORCED) ? g->last.enforced_w : NAN;
    if (m == PFI_M_MGMT_LIMIT) return (g->last.have & PFI_GS_CAP) ? g->last.cap_w : NAN;
    return g->last.prof[m];
}

/* a model feature's value for job j, by the sweep table's column name */
static double feature(const agent_job *j, const char *name, int *known)
{
    *known = 1;
    int m = pfi_metric_lookup(name, strlen(name));
    double n = (double)j->ngpus;
    if (m >= 0) return j->feat[m] * (pfi_metric_get((pfi_metric)m)->agg == PFI_AGG_SUM ? n : 1);
    const double *f = j->feat;
    if (!strcmp(name, pfi_derived_name(PFI_D_DRAM_COPY_PRODUCT))) return f[PFI_M_DRAM_ACTIVE] * f[PFI_M_MEM_COPY_UTIL] / 100;
    if (!strcmp(name, pfi_derived_name(PFI_D_ARITHMETIC_INTENSITY))) return f[PFI_M_PIPE_TENSOR_ACTIVE] / f[PFI_M_DRAM_ACTIVE];
    if (!strcmp(name, pfi_derived_name(PFI_D_TENSOR_SM_RATIO))) return f[PFI_M_PIPE_TENSOR_ACTIVE] / f[PFI_M_SM_ACTIVE];
    if (!strcmp(name, pfi_derived_name(PFI_D_NVLINK_BYTES))) return (f[PFI_M_NVLINK_TX_BYTES] + f[PFI_M_NVLINK_RX_BYTES]) * n;
    *known = 0;
    return NAN;
}

void agent_jobs_update(agent *a)
{
    for (size_t k = 0; k < a->njobs; k++) {
        agent_job *j = &a->job[k];
        tail_steplog(a, j);
        double p = 0, util = 0, avg[PFI_M_COUNT];
        int np = 0;
        for (int m = 0; m < PFI_M_COUNT; m++) avg[m] = 0;
        for (size_t q = 0; q < j->ngpus; q++) {
            const agent_gpu *g = &a->g[j->gpu[q]];
            if (!g->sampled) continue;
            np++;
            if (g->last.have & PFI_GS_POWER) p += g->last.power_w;
            util += g->last.util_gpu_pct;
            for (int m = 0; m < PFI_M_COUNT; m++) avg[m] += gpu_prof(g, m);
        }
        if (!np) continue;
        j->power_w = p;
        if (util / np > 50) { /* training: update the running means */
            j->feat_n++;
            for (int m = 0; m < PFI_M_COUNT; m++) {
                double v = avg[m] / np;
                j->feat[m] = j->feat_n == 1 || isnan(j->feat[m]) ? v : j->feat[m] + (v - j->feat[m]) / j->feat_n;
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
                snprintf(j->pfi_note, sizeof j->pfi_note, "feature %s not measured on this node%s", a->model.features[q],
                         known ? "" : " (needs DCGM profiling: --dcgm-url)");
                ok = 0;
            }
        }
        if (!j->feat_n) snprintf(j->pfi_note, sizeof j->pfi_note, "no training-phase sample yet");
        int cl = 0, oor = 0;
        j->pfi_pred = ok ? pfi_model_pfi(&a->model, x, &cl, &oor) : NAN;
        if (ok && oor) snprintf(j->pfi_note, sizeof j->pfi_note, "features outside the model's training range");
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
        if (r.body) pfi_http_reply_free(&r);
        pthread_mutex_lock(&a->mu);
        agent_log(a, "warning: dcgm-exporter %s: %s", a->cfg.dcgm_url, r.code ? "HTTP error" : e.msg);
        for (size_t i = 0; i < a->n; i++)
            for (int m = 0; m < PFI_M_COUNT; m++) a->g[i].dcgm_prof[m] = NAN;
        pthread_mutex_unlock(&a->mu);
        return;
    }
    double (*prof)[PFI_M_COUNT] = malloc(sizeof(double) * AGENT_MAX_GPUS * PFI_M_COUNT);
    if (!prof) {
        pfi_http_reply_free(&r);
        return;
    }
    for (size_t i = 0; i < AGENT_MAX_GPUS; i++)
        for (int m = 0; m < PFI_M_COUNT; m++) prof[i][m] = NAN;
    pthread_mutex_lock(&a->mu);
    for (char *p = r.body; p && *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        pfi_sample s;
        const char *what;
        if (pfi_prom_parse_line(p, len, &s, &what) == 1 && s.uuid.n)
            for (size_t i = 0; i < a->n; i++)
                if (strlen(a->g[i].info.uuid) == s.uuid.n && !strncmp(a->g[i].info.uuid, s.uuid.p, s.uuid.n) &&
                    s.metric >= PFI_M_GR_ENGINE_ACTIVE && s.metric <= PFI_M_PCIE_RX_BYTES)
                    prof[i][s.metric] = s.value;
        p = nl ? nl + 1 : NULL;
    }
    for (size_t i = 0; i < a->n; i++) memcpy(a->g[i].dcgm_prof, prof[i], sizeof prof[i]);
    pthread_mutex_unlock(&a->mu);
    free(prof);
    pfi_http_reply_free(&r);
}
