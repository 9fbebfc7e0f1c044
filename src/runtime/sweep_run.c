/* sweep_run.c — `pfi sweep` as a call (sweep_run.h): the GPUs and caps
 * chosen, caps through the agent or saved and set directly, one run per
 * cap (the command or the simulated job, telemetry, run.json), the caps
 * restored. */
#include "sweep_run.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_client.h"
#include "atomic.h"
#include "clock.h"
#include "gpu.h"
#include "num.h"
#include "pfi/metrics.h"
#include "pfi/prom.h"

static volatile sig_atomic_t g_stop;
static void on_sig(int s)
{
    g_stop = s;
}

typedef struct sweep {
    const pfi_sweep_opts *o;
    pfi_sweep_result *res;
    int is_sim;
    pfi_gpu *gpu;
    size_t sel[PFI_SWEEP_MAX_GPUS], nsel;
    pfi_gpu_info info[PFI_SWEEP_MAX_GPUS];
    double caps[PFI_SWEEP_MAX_CAPS];
    int ncaps;
    const char *sim_group;
    char host[100];
    /* agent mode */
    const char *agent;
    char token[PFI_TOKEN_MAX + 1], controller[128];
    long long generation;
    /* direct mode: the caps before the sweep, saved and restored by the GPU layer */
    pfi_saved_cap saved[PFI_SAVED_CAPS_MAX];
    size_t nsaved;
    pfi_gpu_state_file sf;
    int direct_changed, stale_lost;
} sweep;

static void say(const sweep *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const sweep *s, const char *fmt, ...)
{
    char m[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (s->o->log.note) s->o->log.note(s->o->log.ud, m);
}

/* report what stops the sweep; returns -1 */
static int fail(const sweep *s, int usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const sweep *s, int usage, const char *fmt, ...)
{
    char m[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    s->res->usage = usage;
    if (s->o->log.error) s->o->log.error(s->o->log.ud, usage, m);
    return -1;
}

static int set_caps(sweep *s, double cap_w, double lease_s)
{
    pfi_error e;
    if (s->agent) {
        pfi_caps_request rq;
        memset(&rq, 0, sizeof rq);
        rq.lease_s = lease_s;
        snprintf(rq.controller, sizeof rq.controller, "%s", s->controller);
        rq.generation = s->generation;
        if (cap_w > 0)
            for (size_t k = 0; k < s->nsel; k++) {
                snprintf(rq.gpus[k].uuid, sizeof rq.gpus[k].uuid, "%s", s->info[k].uuid);
                rq.gpus[k].index = -1;
                rq.gpus[k].cap_w = cap_w;
                rq.ngpus++;
            }
        pfi_http_reply r;
        if (pfi_agent_put_caps(s->agent, s->token, &rq, 10, &r, &e))
            return fail(s, 0, "agent %s: %s", s->agent, e.msg);
        int ok = r.code == 200;
        if (!ok)
            fail(s, 0, "agent %s: PUT /v1/caps: HTTP %ld: %.300s", s->agent, r.code,
                 r.body ? r.body : "");
        pfi_http_reply_dispose(&r);
        return ok ? 0 : -1;
    }
    for (size_t k = 0; k < s->nsel; k++)
        if (pfi_gpu_set_cap(s->gpu, s->sel[k], cap_w, &e)) return fail(s, 0, "%s", e.msg);
    s->direct_changed = 1;
    return 0;
}

/* ---- direct mode: the GPU layer's save and restore, worded as pfi sweep's ---- */
static void on_lost(void *ud, const char *path, const pfi_error *why)
{
    ((sweep *)ud)->stale_lost = 1;
    say(ud,
        "warning: %s: a previous sweep's state is unreadable or corrupt (%s); the caps before it "
        "are unknown, so every GPU goes "
        "back to its device default limit (the file is kept as %s.corrupt)",
        path, why->msg, path);
}

static void on_found(void *ud, const char *path)
{
    say(ud, "%s: a previous sweep did not finish; restoring its caps", path);
}

static void on_out_of_range(void *ud, size_t k, const pfi_saved_cap *c, long i,
                            const pfi_gpu_info *in, const char *which, double v, double repl)
{
    say(ud,
        "warning: %s: gpus[%zu].cap_w: %g W is outside GPU %ld's %g..%g W; using its default limit "
        "%g W",
        ((sweep *)ud)->o->state_file, k, v, i, in->cap_min_w, in->cap_max_w, repl);
}

static void on_restored(void *ud, size_t k, const pfi_saved_cap *c, long i, double from_w)
{
    say(ud, "GPU %ld: cap restored to %.0f W%s", i, c->baseline_w,
        ((sweep *)ud)->stale_lost ? " (device default)" : "");
}

static void on_failed(void *ud, size_t k, const pfi_saved_cap *c, long i, const pfi_error *e)
{
    fail(ud, 0, "%s: gpus[%zu]: cannot restore %g W on %s%s%s", ((sweep *)ud)->o->state_file, k,
         c->baseline_w, c->uuid, i < 0 ? " (not on this node)" : ": ", i < 0 ? "" : e->msg);
}

/* at the end of the sweep only a refusal is reported */
static void on_failed_quiet(void *ud, size_t k, const pfi_saved_cap *c, long i, const pfi_error *e)
{
    fail(ud, 0, "%s", e->msg);
}

/* a previous sweep died: put its caps back (every GPU to its device default
 * when its state file is corrupt: the caps before it are unknown); then the
 * caps before this sweep, written ahead: a failure changes nothing */
static int save_state(sweep *s)
{
    pfi_gpu_restore_report r = {on_lost, on_found, on_out_of_range, on_restored, on_failed, s};
    pfi_error e;
    size_t pending;
    pfi_gpu_state_file_init(&s->sf, s->o->state_file, s->saved, &s->nsaved, PFI_SAVED_CAPS_MAX);
    if (pfi_gpu_restore(s->gpu, &s->sf, 1, &r, &pending, &e)) return fail(s, 0, "%s", e.msg);
    if (pending) return -1; /* reported */
    if (pfi_gpu_save_caps(s->gpu, s->sel, s->nsel, 0, &s->sf.saved, &e))
        return fail(s, 0, "%s", e.msg);
    if (pfi_gpu_save(s->gpu, s->sel, s->nsel, &s->sf, &e))
        return fail(s, 0, "%s (no cap was changed)", e.msg);
    return 0;
}

static void restore(sweep *s)
{
    if (s->agent) {
        if (set_caps(s, 0, 1) == 0) say(s, "caps handed back to the agent (baselines restored)");
        return;
    }
    if (!s->direct_changed) {
        unlink(s->o->state_file);
        return;
    }
    pfi_gpu_restore_report r = {.failed = on_failed_quiet, .ud = s};
    pfi_error e;
    size_t pending;
    if (pfi_gpu_restore(s->gpu, &s->sf, 0, &r, &pending, &e) == PFI_OK && !pending) {
        s->direct_changed = 0;
        say(s, "caps restored");
    }
}

/* ---- the GPUs, the caps, the agent ---- */
static int open_gpus(sweep *s, size_t *first, size_t *last)
{
    const pfi_sweep_opts *o = s->o;
    pfi_error e;
    /* jobs start when their run does */
    char spec[4200];
    snprintf(spec, sizeof spec, "%s%s", o->backend,
             s->is_sim ? (strchr(o->backend, ':') ? ",idle" : ":idle") : "");
    if (pfi_gpu_open(spec, o->recon, &s->gpu, &e))
        return fail(s, 0, "--backend %s: %s", o->backend, e.msg);
    size_t ngpu = pfi_gpu_count(s->gpu);
    *first = 0;
    *last = ngpu ? ngpu - 1 : 0;
    const char *sim_id = NULL;
    if (s->is_sim &&
        pfi_gpu_sim_job_info(s->gpu, o->sim_job, first, last, &sim_id, &s->sim_group, &e))
        return fail(s, 0, "%s", e.msg);
    return 0;
}

static int select_gpus(sweep *s, size_t first, size_t last)
{
    const char *gpus_s = s->o->gpus;
    size_t ngpu = pfi_gpu_count(s->gpu);
    pfi_error e;
    if (gpus_s) {
        double idx[PFI_SWEEP_MAX_GPUS];
        int k = pfi_parse_positive_list(gpus_s, idx, PFI_SWEEP_MAX_GPUS);
        /* parse_list rejects 0; accept indices ourselves */
        if (k < 0) {
            k = 0;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", gpus_s);
            for (char *t = strtok(buf, ","); t && k < PFI_SWEEP_MAX_GPUS; t = strtok(NULL, ",")) {
                char *end;
                long x = strtol(t, &end, 10);
                if (*end || x < 0) return fail(s, 1, "--gpus %s: expected GPU indices", gpus_s);
                idx[k++] = (double)x;
            }
        }
        for (int q = 0; q < k; q++) s->sel[s->nsel++] = (size_t)idx[q];
    } else {
        for (size_t i = first; i <= last && i < ngpu && s->nsel < PFI_SWEEP_MAX_GPUS; i++)
            s->sel[s->nsel++] = i;
    }
    for (size_t k = 0; k < s->nsel; k++) {
        if (s->sel[k] >= ngpu)
            return fail(s, 1, "--gpus: GPU %zu does not exist (%zu GPUs)", s->sel[k], ngpu);
        if (pfi_gpu_info_get(s->gpu, s->sel[k], &s->info[k], &e)) return fail(s, 0, "%s", e.msg);
    }
    if (!s->nsel) return fail(s, 1, "no GPUs selected");
    return 0;
}

static int choose_caps(sweep *s)
{
    double *caps = s->caps, cmin = s->info[0].cap_min_w, cdef = s->info[0].cap_default_w;
    if (s->o->caps) {
        s->ncaps = pfi_parse_positive_list(s->o->caps, caps, PFI_SWEEP_MAX_CAPS);
        if (s->ncaps < 2)
            return fail(s, 1, "--caps %s: expected at least two caps in W", s->o->caps);
    } else {
        if (!isfinite(cdef) || !isfinite(cmin))
            return fail(s, 0, "the device does not report its power limits; give --caps");
        for (double x = cdef; x >= cmin - 1e-9 && s->ncaps < PFI_SWEEP_MAX_CAPS; x -= 100)
            caps[s->ncaps++] = x;
        if (s->ncaps < 2) caps[s->ncaps++] = cmin;
    }
    for (int i = 0; i < s->ncaps; i++)
        for (size_t k = 0; k < s->nsel; k++)
            if (!(caps[i] >= s->info[k].cap_min_w - 1e-9 && caps[i] <= s->info[k].cap_max_w + 1e-9))
                return fail(s, 1, "--caps: %g W is outside GPU %zu's %g..%g W", caps[i], s->sel[k],
                            s->info[k].cap_min_w, s->info[k].cap_max_w);
    /* descending: the first run is the uncapped reference */
    for (int i = 1; i < s->ncaps; i++)
        for (int j = i; j > 0 && caps[j] > caps[j - 1]; j--) {
            double t = caps[j];
            caps[j] = caps[j - 1];
            caps[j - 1] = t;
        }
    return 0;
}

/* the node's agent, if one answers (and may be used) */
static int find_agent(sweep *s)
{
    const pfi_sweep_opts *o = s->o;
    if (o->no_agent) return 0;
    const char *url = o->agent_url ? o->agent_url : "http://127.0.0.1:9477";
    pfi_http_reply r;
    pfi_error e;
    if (pfi_agent_get(url, "/v1/node", o->agent_url ? 5 : 1, &r, &e) == PFI_OK && r.code == 200) {
        json_t *node = json_loads(r.body, 0, NULL);
        long long gm =
            node ? (long long)json_integer_value(json_object_get(node, "generation_max")) : 0;
        json_decref(node);
        pfi_http_reply_dispose(&r);
        if (!o->token_file)
            return fail(s, 0,
                        "a pfi-agent answers at %s: caps go through it; give its --token-file (or "
                        "--no-agent)",
                        url);
        if (!pfi_url_secret_ok(url, o->allow_insecure_http))
            return fail(s, 0,
                        "--agent %.200s: plain http to a non-loopback host would send the token "
                        "in cleartext; use https:// or --allow-insecure-http (a trusted network "
                        "only)",
                        url);
        if (pfi_token_read(o->token_file, s->token, sizeof s->token, &e))
            return fail(s, 0, "%s", e.msg);
        s->agent = url;
        s->generation = gm + 1;
        snprintf(s->controller, sizeof s->controller, "pfi-sweep@%s:%d", s->host, (int)getpid());
        say(s, "caps through the agent at %s (generation %lld)", url, s->generation);
        return 0;
    }
    if (r.body) pfi_http_reply_dispose(&r);
    if (o->agent_url) return fail(s, 0, "--agent %s: no answer (%s)", o->agent_url, e.msg);
    return 0;
}

/* ---- one run ---- */
static void write_scrape(FILE *f, sweep *s, const pfi_gpu_sample *smp)
{
    fprintf(f, "# pfi-scrape-time %lld\n", (long long)llround(smp[0].t_s * 1000));
    static const struct {
        pfi_metric m;
        unsigned bit;
    } base[] = {{PFI_M_POWER_USAGE, PFI_GS_POWER},  {PFI_M_ENFORCED_LIMIT, PFI_GS_ENFORCED},
                {PFI_M_MGMT_LIMIT, PFI_GS_CAP},     {PFI_M_SM_CLOCK, PFI_GS_CLOCKS},
                {PFI_M_MEM_CLOCK, PFI_GS_CLOCKS},   {PFI_M_GPU_UTIL, PFI_GS_UTIL},
                {PFI_M_MEM_COPY_UTIL, PFI_GS_UTIL}, {PFI_M_FB_USED, PFI_GS_MEM},
                {PFI_M_GPU_TEMP, PFI_GS_TEMP}};
    char host[2 * sizeof s->host + 1],
        uuid[2 * sizeof s->info[0].uuid + 1]; /* label values, escaped */
    pfi_prom_label(host, sizeof host, s->host);
    for (size_t b = 0; b < sizeof base / sizeof *base; b++)
        for (size_t k = 0; k < s->nsel; k++) {
            const pfi_gpu_sample *x = &smp[k];
            if (!(x->have & base[b].bit)) continue;
            double v = base[b].m == PFI_M_POWER_USAGE      ? x->power_w
                       : base[b].m == PFI_M_ENFORCED_LIMIT ? x->enforced_w
                       : base[b].m == PFI_M_MGMT_LIMIT     ? x->cap_w
                       : base[b].m == PFI_M_SM_CLOCK       ? x->sm_clock_mhz
                       : base[b].m == PFI_M_MEM_CLOCK      ? x->mem_clock_mhz
                       : base[b].m == PFI_M_GPU_UTIL       ? x->util_gpu_pct
                       : base[b].m == PFI_M_MEM_COPY_UTIL  ? x->util_mem_pct
                       : base[b].m == PFI_M_FB_USED        ? x->fb_used_mib
                                                           : x->temp_c;
            fprintf(f, "%s{gpu=\"%zu\",UUID=\"%s\",Hostname=\"%s\"} %.6g\n",
                    pfi_metric_get(base[b].m)->name, s->sel[k],
                    pfi_prom_label(uuid, sizeof uuid, s->info[k].uuid), host, v);
        }
    for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_PCIE_RX_BYTES; m++)
        for (size_t k = 0; k < s->nsel; k++)
            if ((smp[k].have & PFI_GS_PROF) && isfinite(smp[k].prof[m]))
                fprintf(f, "%s{gpu=\"%zu\",UUID=\"%s\",Hostname=\"%s\"} %.6g\n",
                        pfi_metric_get((pfi_metric)m)->name, s->sel[k],
                        pfi_prom_label(uuid, sizeof uuid, s->info[k].uuid), host, smp[k].prof[m]);
}

static const char *gpu_model_of(const char *name)
{
    static const char *const known[] = {"H200", "H100", "A100", "A40",  "V100",
                                        "P100", "L40S", "B200", "GB200"};
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (strstr(name, known[k])) return known[k];
    return name;
}

static pid_t start_command(sweep *s, const char *rundir, const char *steplog, double cap)
{
    char **argv = s->o->command;
    pid_t p = fork();
    if (p != 0) return p;
    setpgid(0, 0);
    char capb[32], vis[64 * 100] = "";
    snprintf(capb, sizeof capb, "%g", cap);
    for (size_t k = 0; k < s->nsel; k++) {
        size_t l = strlen(vis);
        snprintf(vis + l, sizeof vis - l, "%s%s", k ? "," : "", s->info[k].uuid);
    }
    setenv("PFI_STEPLOG", steplog, 1);
    setenv("PFI_CAP_W", capb, 1);
    setenv("PFI_RUN_DIR", rundir, 1);
    setenv("CUDA_VISIBLE_DEVICES", vis, 1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execvp(argv[0], argv);
    say(s, "%s: %s", argv[0], strerror(errno));
    _exit(127);
}

static void stop_command(pid_t p)
{
    if (p <= 0) return;
    int st;
    if (waitpid(p, &st, WNOHANG) == p) return;
    kill(-p, SIGTERM);
    for (int k = 0; k < 100; k++) {
        if (waitpid(p, &st, WNOHANG) == p) return;
        usleep(100000);
    }
    kill(-p, SIGKILL);
    waitpid(p, &st, 0);
}

/* sample every interval until the duration is over, the command exits or a
 * signal comes; renew the agent's lease each sample */
static int sample_run(sweep *s, FILE *tf, pid_t child, double cap, double lease, double *mean_w,
                      int *nsmp)
{
    const pfi_sweep_opts *o = s->o;
    double t0 = pfi_clock_now(), next = t0, psum = 0;
    pfi_error e;
    *nsmp = 0;
    while (!g_stop) {
        double now = pfi_clock_now();
        if (now - t0 >= o->duration_s) break;
        int st;
        if (child > 0 && waitpid(child, &st, WNOHANG) == child) {
            say(s, "the command exited (status %d) after %.0f s",
                WIFEXITED(st) ? WEXITSTATUS(st) : -1, now - t0);
            *mean_w = *nsmp ? psum / *nsmp : 0;
            return 1;
        }
        if (now >= next) {
            pfi_gpu_sample smp[PFI_SWEEP_MAX_GPUS];
            int ok = 1;
            for (size_t k = 0; k < s->nsel && ok; k++)
                ok = pfi_gpu_sample_get(s->gpu, s->sel[k], &smp[k], &e) == PFI_OK;
            if (ok) {
                write_scrape(tf, s, smp);
                double p = 0;
                for (size_t k = 0; k < s->nsel; k++) p += smp[k].power_w;
                psum += p;
                (*nsmp)++;
                if (o->log.progress)
                    o->log.progress(o->log.ud, (now - t0) / o->duration_s, p, s->nsel);
            } else {
                say(s, "warning: %s", e.msg);
            }
            if (s->agent && set_caps(s, cap, lease)) break; /* renew the lease */
            next += o->interval_s;
            if (next <= now) next = now + o->interval_s; /* fell behind: skip, do not burst */
        }
        pfi_clock_sleep(fmin(o->interval_s / 5, 0.5));
    }
    *mean_w = *nsmp ? psum / *nsmp : 0;
    return 0;
}

static int write_run_json(sweep *s, const char *rundir, const char *group, double cap)
{
    const pfi_sweep_opts *o = s->o;
    pfi_error e;
    json_t *meta = json_pack("{s:s,s:s}", "backend", pfi_gpu_backend(s->gpu), "command",
                             o->command ? o->command[0] : "(simulated job)");
    json_t *rj = json_pack("{s:s,s:s,s:i,s:f,s:[s],s:f,s:o,s:[{s:s,s:s,s:s}],s:s}", "group", group,
                           "gpu_model", gpu_model_of(s->info[0].name), "gpus", (int)s->nsel,
                           "cap_w", cap, "hosts", s->host, "interval_s", o->interval_s, "metadata",
                           meta, "telemetry", "path", "telemetry.prom", "format", "prometheus",
                           "host", s->host, "steplog", "steps.jsonl");
    if (o->arch) json_object_set_new(rj, "arch", json_string(o->arch));
    if (o->task) json_object_set_new(rj, "task", json_string(o->task));
    if (o->model) json_object_set_new(rj, "model", json_string(o->model));
    char *txt = json_dumps(rj, JSON_INDENT(1));
    json_decref(rj);
    char rjp[4300];
    snprintf(rjp, sizeof rjp, "%s/run.json", rundir);
    if (!txt || pfi_write_file_atomic(rjp, txt, strlen(txt), &e)) {
        free(txt);
        return fail(s, 0, "%s", txt ? e.msg : "out of memory");
    }
    free(txt);
    return 0;
}

/* run `run` of the sweep: its directory, the cap, the job, telemetry, run.json */
static int one_run(sweep *s, int run, const char *group, double t_all)
{
    const pfi_sweep_opts *o = s->o;
    double cap = s->caps[run];
    pfi_error e;
    char rundir[4200], steplog[4300], telem[4300];
    snprintf(rundir, sizeof rundir, "%s/%.0fW", o->out, cap);
    if (mkdir(rundir, 0755) && errno != EEXIST)
        return fail(s, 0, "%s: cannot create: %s", rundir, strerror(errno));
    snprintf(steplog, sizeof steplog, "%s/steps.jsonl", rundir);
    snprintf(telem, sizeof telem, "%s/telemetry.prom", rundir);
    unlink(steplog);
    double lease = fmax(60, 4 * o->interval_s);
    if (set_caps(s, cap, lease)) return -1;
    FILE *tf = fopen(telem, "w");
    if (!tf) return fail(s, 0, "%s: %s", telem, strerror(errno));
    say(s, "run %d/%d: cap %.0f W on %zu GPUs, %.0f s%s", run + 1, s->ncaps, cap, s->nsel,
        o->duration_s, o->command ? "" : " (simulated job)");
    pid_t child = -1;
    if (s->is_sim && pfi_gpu_sim_job_start(s->gpu, o->sim_job, steplog, &e)) {
        fclose(tf);
        return fail(s, 0, "%s", e.msg);
    }
    if (o->command) child = start_command(s, rundir, steplog, cap);
    double mean_w;
    int nsmp;
    if (sample_run(s, tf, child, cap, lease, &mean_w, &nsmp)) child = -1; /* exited */
    if (o->log.progress) o->log.progress(o->log.ud, -1, 0, s->nsel);
    stop_command(child);
    if (s->is_sim) pfi_gpu_sim_job_stop(s->gpu, o->sim_job, NULL);
    fclose(tf);
    if (write_run_json(s, rundir, group, cap)) return -1;
    s->res->runs++;
    say(s, "run %d/%d done: mean %.0f W over %d samples; %.0f s elapsed in all", run + 1, s->ncaps,
        mean_w, nsmp, pfi_clock_now() - t_all);
    return 0;
}

/* between runs: pause, then wait (up to 3 more pauses) for the GPUs' memory to be released */
static void pause_between(sweep *s)
{
    double pause = s->o->pause_s, tp = pfi_clock_now();
    while (!g_stop && pfi_clock_now() - tp < pause) pfi_clock_sleep(fmin(1, pause / 10 + 0.01));
    for (double tw = pfi_clock_now(); !g_stop && pfi_clock_now() - tw < 3 * pause;) {
        int busy = 0;
        for (size_t k = 0; k < s->nsel; k++) {
            pfi_gpu_sample smp;
            if (pfi_gpu_sample_get(s->gpu, s->sel[k], &smp, NULL) == PFI_OK &&
                (smp.have & PFI_GS_MEM) && smp.fb_used_mib > 2048)
                busy = 1;
        }
        if (!busy) break;
        pfi_clock_sleep(fmin(1, s->o->interval_s));
    }
}

/* the runs, once the caps are in hand; caps restored whatever happens */
static pfi_status all_runs(sweep *s)
{
    const pfi_sweep_opts *o = s->o;
    if (mkdir(o->out, 0755) && errno != EEXIST) {
        fail(s, 0, "%s: cannot create: %s", o->out, strerror(errno));
        restore(s);
        return PFI_EIO;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    g_stop = 0;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    const char *group = o->group ? o->group : s->sim_group ? s->sim_group : "sweep";
    double t_all = pfi_clock_now();
    for (int run = 0; run < s->ncaps && !g_stop; run++) {
        if (one_run(s, run, group, t_all)) {
            restore(s);
            return PFI_EIO;
        }
        if (run + 1 < s->ncaps && !g_stop) pause_between(s);
    }
    if (g_stop) {
        say(s, "signal %d: stopping", (int)g_stop);
        s->res->signal = (int)g_stop;
        restore(s);
        return PFI_ESTATE;
    }
    restore(s);
    return PFI_OK;
}

pfi_status pfi_sweep_run(const pfi_sweep_opts *o, pfi_sweep_result *res)
{
    sweep *s = calloc(1, sizeof *s);
    memset(res, 0, sizeof *res);
    if (!s) return PFI_ENOMEM;
    s->o = o;
    s->res = res;
    const pfi_gpu_backend_info *b = pfi_gpu_backend_of(o->backend, NULL);
    s->is_sim = b && b->simulated;
    size_t first, last;
    pfi_status st = PFI_EINVAL;
    if (open_gpus(s, &first, &last) || select_gpus(s, first, last) || choose_caps(s)) goto done;
    if (gethostname(s->host, sizeof s->host) != 0) snprintf(s->host, sizeof s->host, "localhost");
    s->host[sizeof s->host - 1] = '\0';
    if (find_agent(s)) goto done;
    if (!s->agent && save_state(s)) goto done;
    st = all_runs(s);
done:
    if (s->gpu) pfi_gpu_close(s->gpu);
    free(s);
    return st;
}
