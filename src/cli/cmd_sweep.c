/* cmd_sweep.c — `pfi sweep`: characterize a job as the paper did. Run the
 * command once per cap on the selected GPUs, the cap set before the job
 * starts; sample telemetry; keep the job's step log ($PFI_STEPLOG); write
 * one run directory per cap (docs/formats.md), then the sweep table and the
 * PFI. Caps go through the node's pfi-agent when one answers (PUT /v1/caps
 * under a lease renewed every sample, so the agent restores them if the
 * sweep dies); otherwise the sweep sets them itself and keeps the previous
 * caps in a state file, restored at normal exit, on SIGINT/SIGTERM, and at
 * the next start if a sweep died. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "agent_client.h"
#include "atomic.h"
#include "clock.h"
#include "gpu.h"
#include "pfi/metrics.h"
#include "pfi/prom.h"
#include "recon_io.h"

const char cmd_sweep_usage[] =
    "usage: pfi sweep --out DIR [options] [-- COMMAND [ARGS...]]\n"
    "\n"
    "Run COMMAND once per power cap on the selected GPUs, for --duration each (or\n"
    "until it exits), the cap set before it starts; sample telemetry every\n"
    "--interval; pass the step-log path in $PFI_STEPLOG (also $PFI_CAP_W,\n"
    "$PFI_RUN_DIR, and CUDA_VISIBLE_DEVICES = the GPUs' UUIDs); pause between runs\n"
    "until GPU memory is released. Writes DIR/<cap>W/ run directories, DIR/sweep.csv\n"
    "(pfi ingest) and DIR/index.csv (pfi index), and prints the PFI. Caps go\n"
    "through the node's pfi-agent when one answers; otherwise they are set directly\n"
    "and restored at exit, on SIGINT/SIGTERM, or at the next start after a crash.\n"
    "With --backend sim, a simulated job runs on simulated GPUs (COMMAND optional).\n"
    "\n"
    "options:\n"
    "  --out DIR             output directory (required)\n"
    "  --backend SPEC        nvml (default) or sim[:OPTIONS] (see pfi-agent(8))\n"
    "  --gpus LIST           GPU indices (default: all; sim: the simulated job's)\n"
    "  --caps LIST           per-GPU caps in W (default: the default limit down to the\n"
    "                        minimum in 100 W steps)\n"
    "  --duration S          per run, clock seconds (default 600)\n"
    "  --interval S          telemetry sampling (default 5)\n"
    "  --pause S             between runs (default 60)\n"
    "  --group NAME          sweep group name (default: the sim job's group, else 'sweep')\n"
    "  --arch A, --task T, --model M   metadata for the sweep table\n"
    "  --agent URL           the node agent (default http://127.0.0.1:9477 if it answers)\n"
    "  --no-agent            set caps directly even if an agent answers\n"
    "  --token-file FILE     the agent's bearer token (mode 0600)\n"
    "  --state-file FILE     direct mode: previous caps (default /var/lib/pfi/sweep-state.json)\n"
    "  --sim-job K           --backend sim: which simulated job (default 0)\n"
    "  --time-scale X, --epoch T, --data DIR\n";

static volatile sig_atomic_t g_stop;
static void on_sig(int s) { g_stop = s; }

typedef struct sweep {
    const char *cmd;
    pfi_gpu *gpu;
    size_t sel[64], nsel;
    pfi_gpu_info info[64];
    /* agent mode */
    const char *agent;
    char token[PFI_TOKEN_MAX + 1], controller[128], host[100];
    long long generation;
    double lease_s;
    /* direct mode: the caps before the sweep, saved and restored by the GPU layer */
    const char *state;
    pfi_saved_cap saved[PFI_SAVED_CAPS_MAX];
    size_t nsaved;
    pfi_gpu_state_file sf;
    int direct_changed, stale_lost;

} sweep;

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
        if (pfi_agent_put_caps(s->agent, s->token, &rq, 10, &r, &e)) {
            cli_error(s->cmd, "agent %s: %s", s->agent, e.msg);
            return -1;
        }
        int ok = r.code == 200;
        if (!ok) cli_error(s->cmd, "agent %s: PUT /v1/caps: HTTP %ld: %.300s", s->agent, r.code, r.body ? r.body : "");
        pfi_http_reply_free(&r);
        return ok ? 0 : -1;
    }
    for (size_t k = 0; k < s->nsel; k++) {
        if (pfi_gpu_set_cap(s->gpu, s->sel[k], cap_w, &e)) {
            cli_error(s->cmd, "%s", e.msg);
            return -1;
        }
    }
    s->direct_changed = 1;
    return 0;
}

/* direct mode: the caps before the sweep, saved by the GPU layer and
 * written ahead (durably) before the first cap is set: a failure changes
 * nothing */
static int save_state(sweep *s)
{
    pfi_error e;
    if (pfi_gpu_save_caps(s->gpu, s->sel, s->nsel, 0, &s->sf.saved, &e)) {
        cli_error(s->cmd, "%s", e.msg);
        return -1;
    }
    if (pfi_gpu_save(s->gpu, s->sel, s->nsel, &s->sf, &e)) {
        cli_error(s->cmd, "%s (no cap was changed)", e.msg);
        return -1;
    }
    return 0;
}

/* what the GPU layer's restore reports, as pfi sweep words it */
static void on_lost(void *ud, const char *path, const pfi_error *why)
{
    ((sweep *)ud)->stale_lost = 1;
    fprintf(stderr, "pfi sweep: warning: %s: a previous sweep's state is unreadable or corrupt (%s); the caps before it are "
            "unknown, so every GPU goes back to its device default limit (the file is kept as %s.corrupt)\n", path, why->msg, path);
}

static void on_found(void *ud, const char *path) { fprintf(stderr, "pfi sweep: %s: a previous sweep did not finish; restoring its caps\n", path); }

static void on_out_of_range(void *ud, size_t k, const pfi_saved_cap *c, long i, const pfi_gpu_info *in, const char *which, double v,
                            double repl)
{
    fprintf(stderr, "pfi sweep: warning: %s: gpus[%zu].cap_w: %g W is outside GPU %ld's %g..%g W; using its default limit %g W\n",
            ((sweep *)ud)->state, k, v, i, in->cap_min_w, in->cap_max_w, repl);
}

static void on_restored(void *ud, size_t k, const pfi_saved_cap *c, long i, double from_w)
{
    fprintf(stderr, "pfi sweep: GPU %ld: cap restored to %.0f W%s\n", i, c->baseline_w, ((sweep *)ud)->stale_lost ? " (device default)" : "");
}

static void on_failed(void *ud, size_t k, const pfi_saved_cap *c, long i, const pfi_error *e)
{
    sweep *s = ud;
    cli_error(s->cmd, "%s: gpus[%zu]: cannot restore %g W on %s%s%s", s->state, k, c->baseline_w, c->uuid, i < 0 ? " (not on this node)" : ": ",
              i < 0 ? "" : e->msg);
}

/* at the end of the sweep: only a refusal is reported */
static void on_failed_quiet(void *ud, size_t k, const pfi_saved_cap *c, long i, const pfi_error *e) { cli_error(((sweep *)ud)->cmd, "%s", e->msg); }

/* a previous sweep died: put its caps back (every GPU to its device default
 * when its state file is corrupt: the caps before it are unknown) */
static int restore_stale(sweep *s)
{
    pfi_gpu_restore_report r = {on_lost, on_found, on_out_of_range, on_restored, on_failed, s};
    pfi_error e;
    size_t pending;
    if (pfi_gpu_restore(s->gpu, &s->sf, 1, &r, &pending, &e)) {
        cli_error(s->cmd, "%s", e.msg);
        return -1;
    }
    return pending ? -1 : 0;
}

static void restore(sweep *s)
{
    if (s->agent) {
        if (set_caps(s, 0, 1) == 0) fprintf(stderr, "pfi sweep: caps handed back to the agent (baselines restored)\n");
        return;
    }
    if (!s->direct_changed) {
        unlink(s->state);
        return;
    }
    pfi_gpu_restore_report r = {.failed = on_failed_quiet, .ud = s};
    pfi_error e;
    size_t pending;
    if (pfi_gpu_restore(s->gpu, &s->sf, 0, &r, &pending, &e) == PFI_OK && !pending) {
        s->direct_changed = 0;
        fprintf(stderr, "pfi sweep: caps restored\n");
    }
}

static void write_scrape(FILE *f, sweep *s, const pfi_gpu_sample *smp)
{
    fprintf(f, "# pfi-scrape-time %lld\n", (long long)llround(smp[0].t_s * 1000));
    static const struct { pfi_metric m; unsigned bit; } base[] = {
        {PFI_M_POWER_USAGE, PFI_GS_POWER}, {PFI_M_ENFORCED_LIMIT, PFI_GS_ENFORCED}, {PFI_M_MGMT_LIMIT, PFI_GS_CAP},
        {PFI_M_SM_CLOCK, PFI_GS_CLOCKS},   {PFI_M_MEM_CLOCK, PFI_GS_CLOCKS},        {PFI_M_GPU_UTIL, PFI_GS_UTIL},
        {PFI_M_MEM_COPY_UTIL, PFI_GS_UTIL}, {PFI_M_FB_USED, PFI_GS_MEM},            {PFI_M_GPU_TEMP, PFI_GS_TEMP}};
    char host[2 * sizeof s->host + 1], uuid[2 * sizeof s->info[0].uuid + 1]; /* label values, escaped */
    pfi_prom_label(host, sizeof host, s->host);
    for (size_t b = 0; b < sizeof base / sizeof *base; b++)
        for (size_t k = 0; k < s->nsel; k++) {
            const pfi_gpu_sample *x = &smp[k];
            if (!(x->have & base[b].bit)) continue;
            double v = base[b].m == PFI_M_POWER_USAGE ? x->power_w : base[b].m == PFI_M_ENFORCED_LIMIT ? x->enforced_w
                     : base[b].m == PFI_M_MGMT_LIMIT ? x->cap_w : base[b].m == PFI_M_SM_CLOCK ? x->sm_clock_mhz
                     : base[b].m == PFI_M_MEM_CLOCK ? x->mem_clock_mhz : base[b].m == PFI_M_GPU_UTIL ? x->util_gpu_pct
                     : base[b].m == PFI_M_MEM_COPY_UTIL ? x->util_mem_pct : base[b].m == PFI_M_FB_USED ? x->fb_used_mib : x->temp_c;
            fprintf(f, "%s{gpu=\"%zu\",UUID=\"%s\",Hostname=\"%s\"} %.6g\n", pfi_metric_get(base[b].m)->name, s->sel[k],
                    pfi_prom_label(uuid, sizeof uuid, s->info[k].uuid), host, v);
        }
    for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_PCIE_RX_BYTES; m++)
        for (size_t k = 0; k < s->nsel; k++)
            if ((smp[k].have & PFI_GS_PROF) && isfinite(smp[k].prof[m]))
                fprintf(f, "%s{gpu=\"%zu\",UUID=\"%s\",Hostname=\"%s\"} %.6g\n", pfi_metric_get((pfi_metric)m)->name, s->sel[k],
                        pfi_prom_label(uuid, sizeof uuid, s->info[k].uuid), host, smp[k].prof[m]);
}

static const char *gpu_model_of(const char *name)
{
    static const char *const known[] = {"H200", "H100", "A100", "A40", "V100", "P100", "L40S", "B200", "GB200"};
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (strstr(name, known[k])) return known[k];
    return name;
}

static pid_t start_command(sweep *s, char **argv, const char *rundir, const char *steplog, double cap)
{
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
    fprintf(stderr, "pfi sweep: %s: %s\n", argv[0], strerror(errno));
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

int cmd_sweep(int argc, char **argv)
{
    const char *cmd = "sweep";
    enum { O_OUT = 1, O_BACKEND, O_GPUS, O_CAPS, O_DUR, O_INT, O_PAUSE, O_GROUP, O_ARCH, O_TASK, O_MODEL, O_AGENT, O_NOAGENT,
           O_TOKEN, O_STATE, O_SIMJOB, O_SCALE, O_EPOCH, O_DATA };
    static const struct option lo[] = {
        {"out", required_argument, NULL, O_OUT},       {"backend", required_argument, NULL, O_BACKEND},
        {"gpus", required_argument, NULL, O_GPUS},     {"caps", required_argument, NULL, O_CAPS},
        {"duration", required_argument, NULL, O_DUR},  {"interval", required_argument, NULL, O_INT},
        {"pause", required_argument, NULL, O_PAUSE},   {"group", required_argument, NULL, O_GROUP},
        {"arch", required_argument, NULL, O_ARCH},     {"task", required_argument, NULL, O_TASK},
        {"model", required_argument, NULL, O_MODEL},   {"agent", required_argument, NULL, O_AGENT},
        {"no-agent", no_argument, NULL, O_NOAGENT},    {"token-file", required_argument, NULL, O_TOKEN},
        {"state-file", required_argument, NULL, O_STATE}, {"sim-job", required_argument, NULL, O_SIMJOB},
        {"time-scale", required_argument, NULL, O_SCALE}, {"epoch", required_argument, NULL, O_EPOCH},
        {"data", required_argument, NULL, O_DATA},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *out = NULL, *backend = "nvml", *gpus_s = NULL, *caps_s = NULL, *group = NULL, *arch = NULL, *task = NULL,
               *model = NULL, *agent_url = NULL, *token_file = NULL, *data = NULL;
    double duration = 600, interval = 5, pause = 60, scale = NAN, epoch = NAN, v;
    int no_agent = 0;
    size_t sim_job = 0;
    sweep S;
    memset(&S, 0, sizeof S);
    S.cmd = cmd;
    S.state = "/var/lib/pfi/sweep-state.json";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
        switch (c) {
        case 'h': return cli_help(cmd);
        case O_OUT: out = optarg; break;
        case O_BACKEND: backend = optarg; break;
        case O_GPUS: gpus_s = optarg; break;
        case O_CAPS: caps_s = optarg; break;
        case O_DUR: if (cli_parse_num(cmd, "--duration", optarg, 1, 1e6, &duration)) return CLI_USAGE; break;
        case O_INT: if (cli_parse_num(cmd, "--interval", optarg, 0.05, 3600, &interval)) return CLI_USAGE; break;
        case O_PAUSE: if (cli_parse_num(cmd, "--pause", optarg, 0, 1e5, &pause)) return CLI_USAGE; break;
        case O_GROUP: group = optarg; break;
        case O_ARCH: arch = optarg; break;
        case O_TASK: task = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_AGENT: agent_url = optarg; break;
        case O_NOAGENT: no_agent = 1; break;
        case O_TOKEN: token_file = optarg; break;
        case O_STATE: S.state = optarg; break;
        case O_SIMJOB: if (cli_parse_num(cmd, "--sim-job", optarg, 0, 15, &v)) return CLI_USAGE; sim_job = (size_t)v; break;
        case O_SCALE: if (cli_parse_num(cmd, "--time-scale", optarg, 1e-3, 1e6, &scale)) return CLI_USAGE; break;
        case O_EPOCH: if (cli_parse_num(cmd, "--epoch", optarg, 0, 1e11, &epoch)) return CLI_USAGE; break;
        case O_DATA: data = optarg; break;
        default: return cli_bad_option(cmd, argv);
        }
    }
    char **command = optind < argc ? argv + optind : NULL;
    if (!out) return cli_usage_error(cmd, "--out DIR is required");
    if (duration < 3 * interval) return cli_usage_error(cmd, "--duration %g s is shorter than three --interval samples", duration);
    int is_sim = !strncmp(backend, "sim", 3);
    if (!command && !is_sim) return cli_usage_error(cmd, "no COMMAND after '--' (only --backend sim runs without one)");
    pfi_error e;
    if (pfi_clock_set(scale, epoch, &e)) return cli_usage_error(cmd, "%s", e.msg);
    pfi_recon recon = {0};
    int have_recon = 0, rc = CLI_FAIL;
    if (is_sim && strstr(backend, "job=")) {
        char sp[4096], pp[4096];
        if (cli_data_path(cmd, data, "reconstruction/spec.csv", sp, sizeof sp) || cli_data_path(cmd, data, "reconstruction/params.csv", pp, sizeof pp))
            return CLI_FAIL;
        if (pfi_recon_load(sp, pp, &recon, &e)) {
            cli_error(cmd, "%s", e.msg);
            return CLI_FAIL;
        }
        have_recon = 1;
    }
    /* jobs start when their run does */
    char spec[4200];
    snprintf(spec, sizeof spec, "%s%s", backend, is_sim ? (strchr(backend, ':') ? ",idle" : ":idle") : "");
    if (pfi_gpu_open(spec, have_recon ? &recon : NULL, &S.gpu, &e)) {
        cli_error(cmd, "--backend %s: %s", backend, e.msg);
        goto done_recon;
    }
    size_t ngpu = pfi_gpu_count(S.gpu);
    size_t first = 0, last = ngpu ? ngpu - 1 : 0;
    const char *sim_id = NULL, *sim_group = NULL;
    if (is_sim && pfi_gpu_sim_job_info(S.gpu, sim_job, &first, &last, &sim_id, &sim_group, &e)) {
        cli_error(cmd, "%s", e.msg);
        goto done;
    }
    if (gpus_s) {
        double idx[64];
        int k = cli_parse_list(gpus_s, idx, 64);
        /* cli_parse_list rejects 0; accept indices ourselves */
        if (k < 0) {
            k = 0;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", gpus_s);
            for (char *t = strtok(buf, ","); t && k < 64; t = strtok(NULL, ",")) {
                char *end;
                long x = strtol(t, &end, 10);
                if (*end || x < 0) {
                    rc = cli_usage_error(cmd, "--gpus %s: expected GPU indices", gpus_s);
                    goto done;
                }
                idx[k++] = (double)x;
            }
        }
        for (int q = 0; q < k; q++) S.sel[S.nsel++] = (size_t)idx[q];
    } else {
        for (size_t i = first; i <= last && i < ngpu; i++) S.sel[S.nsel++] = i;
    }
    for (size_t k = 0; k < S.nsel; k++) {
        if (S.sel[k] >= ngpu) {
            rc = cli_usage_error(cmd, "--gpus: GPU %zu does not exist (%zu GPUs)", S.sel[k], ngpu);
            goto done;
        }
        if (pfi_gpu_info_get(S.gpu, S.sel[k], &S.info[k], &e)) {
            cli_error(cmd, "%s", e.msg);
            goto done;
        }
    }
    if (!S.nsel) {
        rc = cli_usage_error(cmd, "no GPUs selected");
        goto done;
    }
    double caps[32];
    int ncaps = 0;
    double cmin = S.info[0].cap_min_w, cmax = S.info[0].cap_max_w, cdef = S.info[0].cap_default_w;
    if (caps_s) {
        ncaps = cli_parse_list(caps_s, caps, 32);
        if (ncaps < 2) {
            rc = cli_usage_error(cmd, "--caps %s: expected at least two caps in W", caps_s);
            goto done;
        }
    } else {
        if (!isfinite(cdef) || !isfinite(cmin)) {
            cli_error(cmd, "the device does not report its power limits; give --caps");
            goto done;
        }
        for (double x = cdef; x >= cmin - 1e-9 && ncaps < 32; x -= 100) caps[ncaps++] = x;
        if (ncaps < 2) caps[ncaps++] = cmin;
    }
    for (int i = 0; i < ncaps; i++)
        for (size_t k = 0; k < S.nsel; k++)
            if (!(caps[i] >= S.info[k].cap_min_w - 1e-9 && caps[i] <= S.info[k].cap_max_w + 1e-9)) {
                rc = cli_usage_error(cmd, "--caps: %g W is outside GPU %zu's %g..%g W", caps[i], S.sel[k], S.info[k].cap_min_w, S.info[k].cap_max_w);
                goto done;
            }
    (void)cmax;
    /* descending: the first run is the uncapped reference */
    for (int i = 1; i < ncaps; i++)
        for (int j = i; j > 0 && caps[j] > caps[j - 1]; j--) {
            double t = caps[j];
            caps[j] = caps[j - 1];
            caps[j - 1] = t;
        }
    if (gethostname(S.host, sizeof S.host) != 0) snprintf(S.host, sizeof S.host, "localhost");
    S.host[sizeof S.host - 1] = '\0';
    /* the agent, if there is one */
    if (!no_agent) {
        const char *url = agent_url ? agent_url : "http://127.0.0.1:9477";
        pfi_http_reply r;
        if (pfi_agent_get(url, "/v1/node", agent_url ? 5 : 1, &r, &e) == PFI_OK && r.code == 200) {
            json_t *node = json_loads(r.body, 0, NULL);
            long long gm = node ? (long long)json_integer_value(json_object_get(node, "generation_max")) : 0;
            json_decref(node);
            pfi_http_reply_free(&r);
            if (!token_file) {
                cli_error(cmd, "a pfi-agent answers at %s: caps go through it; give its --token-file (or --no-agent)", url);
                goto done;
            }
            if (pfi_token_read(token_file, S.token, sizeof S.token, &e)) {
                cli_error(cmd, "%s", e.msg);
                goto done;
            }
            S.agent = url;
            S.generation = gm + 1;
            snprintf(S.controller, sizeof S.controller, "pfi-sweep@%s:%d", S.host, (int)getpid());
            fprintf(stderr, "pfi sweep: caps through the agent at %s (generation %lld)\n", url, S.generation);
        } else {
            if (r.body) pfi_http_reply_free(&r);
            if (agent_url) {
                cli_error(cmd, "--agent %s: no answer (%s)", agent_url, e.msg);
                goto done;
            }
        }
    }
    if (!S.agent) {
        pfi_gpu_state_file_init(&S.sf, S.state, S.saved, &S.nsaved, PFI_SAVED_CAPS_MAX);
        if (restore_stale(&S) || save_state(&S)) goto done;
    }
    if (mkdir(out, 0755) && errno != EEXIST) {
        cli_error(cmd, "%s: cannot create: %s", out, strerror(errno));
        goto restore_out;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (!group) group = sim_group ? sim_group : "sweep";
    const char *gmodel = gpu_model_of(S.info[0].name);
    double t_all = pfi_clock_now();
    for (int run = 0; run < ncaps && !g_stop; run++) {
        char rundir[4200], steplog[4300], telem[4300];
        snprintf(rundir, sizeof rundir, "%s/%.0fW", out, caps[run]);
        if (mkdir(rundir, 0755) && errno != EEXIST) {
            cli_error(cmd, "%s: cannot create: %s", rundir, strerror(errno));
            goto restore_out;
        }
        snprintf(steplog, sizeof steplog, "%s/steps.jsonl", rundir);
        snprintf(telem, sizeof telem, "%s/telemetry.prom", rundir);
        unlink(steplog);
        double lease = fmax(60, 4 * interval);
        if (set_caps(&S, caps[run], lease)) goto restore_out;
        FILE *tf = fopen(telem, "w");
        if (!tf) {
            cli_error(cmd, "%s: %s", telem, strerror(errno));
            goto restore_out;
        }
        fprintf(stderr, "pfi sweep: run %d/%d: cap %.0f W on %zu GPUs, %.0f s%s\n", run + 1, ncaps, caps[run], S.nsel, duration,
                command ? "" : " (simulated job)");
        pid_t child = -1;
        if (is_sim && pfi_gpu_sim_job_start(S.gpu, sim_job, steplog, &e)) {
            cli_error(cmd, "%s", e.msg);
            fclose(tf);
            goto restore_out;
        }
        if (command) child = start_command(&S, command, rundir, steplog, caps[run]);
        double t0 = pfi_clock_now(), next = t0, psum = 0;
        int nsmp = 0, exited = 0;
        while (!g_stop) {
            double now = pfi_clock_now();
            if (now - t0 >= duration) break;
            if (child > 0) {
                int st;
                if (waitpid(child, &st, WNOHANG) == child) {
                    exited = 1;
                    child = -1;
                    fprintf(stderr, "pfi sweep: the command exited (status %d) after %.0f s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, now - t0);
                    break;
                }
            }
            if (now >= next) {
                pfi_gpu_sample smp[64];
                int ok = 1;
                for (size_t k = 0; k < S.nsel && ok; k++) ok = pfi_gpu_sample_get(S.gpu, S.sel[k], &smp[k], &e) == PFI_OK;
                if (ok) {
                    write_scrape(tf, &S, smp);
                    double p = 0;
                    for (size_t k = 0; k < S.nsel; k++) p += smp[k].power_w;
                    psum += p;
                    nsmp++;
                    if (isatty(2))
                        fprintf(stderr, "\r          %3.0f%%  %.0f W (%zu GPUs)   ", 100 * (now - t0) / duration, p, S.nsel);
                } else {
                    fprintf(stderr, "pfi sweep: warning: %s\n", e.msg);
                }
                if (S.agent && set_caps(&S, caps[run], lease)) break; /* renew the lease */
                next += interval;
                if (next <= now) next = now + interval; /* fell behind: skip, do not burst */
            }
            pfi_clock_sleep(fmin(interval / 5, 0.5));
        }
        if (isatty(2)) fprintf(stderr, "\r%60s\r", "");
        stop_command(child);
        if (is_sim) pfi_gpu_sim_job_stop(S.gpu, sim_job, NULL);
        fclose(tf);
        (void)exited;
        /* run.json */
        json_t *meta = json_pack("{s:s,s:s}", "backend", pfi_gpu_backend(S.gpu), "command", command ? command[0] : "(simulated job)");
        json_t *rj = json_pack("{s:s,s:s,s:i,s:f,s:[s],s:f,s:o,s:[{s:s,s:s,s:s}],s:s}", "group", group, "gpu_model", gmodel, "gpus",
                               (int)S.nsel, "cap_w", caps[run], "hosts", S.host, "interval_s", interval, "metadata", meta, "telemetry",
                               "path", "telemetry.prom", "format", "prometheus", "host", S.host, "steplog", "steps.jsonl");
        if (arch) json_object_set_new(rj, "arch", json_string(arch));
        if (task) json_object_set_new(rj, "task", json_string(task));
        if (model) json_object_set_new(rj, "model", json_string(model));
        char *txt = json_dumps(rj, JSON_INDENT(1));
        json_decref(rj);
        char rjp[4300];
        snprintf(rjp, sizeof rjp, "%s/run.json", rundir);
        if (!txt || pfi_write_file_atomic(rjp, txt, strlen(txt), &e)) {
            free(txt);
            cli_error(cmd, "%s", e.msg);
            goto restore_out;
        }
        free(txt);
        fprintf(stderr, "pfi sweep: run %d/%d done: mean %.0f W over %d samples; %.0f s elapsed in all\n", run + 1, ncaps,
                nsmp ? psum / nsmp : 0, nsmp, pfi_clock_now() - t_all);
        if (run + 1 < ncaps && !g_stop) {
            /* pause, then wait (up to 3 more pauses) for the GPUs' memory to be released */
            double tp = pfi_clock_now();
            while (!g_stop && pfi_clock_now() - tp < pause) pfi_clock_sleep(fmin(1, pause / 10 + 0.01));
            for (double tw = pfi_clock_now(); !g_stop && pfi_clock_now() - tw < 3 * pause;) {
                int busy = 0;
                for (size_t k = 0; k < S.nsel; k++) {
                    pfi_gpu_sample smp;
                    if (pfi_gpu_sample_get(S.gpu, S.sel[k], &smp, NULL) == PFI_OK && (smp.have & PFI_GS_MEM) && smp.fb_used_mib > 2048) busy = 1;
                }
                if (!busy) break;
                pfi_clock_sleep(fmin(1, interval));
            }
        }
    }
    if (g_stop) {
        fprintf(stderr, "pfi sweep: signal %d: stopping\n", (int)g_stop);
        restore(&S);
        rc = 128 + (int)g_stop;
        goto done;
    }
    restore(&S);
    /* the sweep table and the PFI */
    {
        char table[4200], index[4200];
        snprintf(table, sizeof table, "%s/sweep.csv", out);
        snprintf(index, sizeof index, "%s/index.csv", out);
        char *iargs[] = {"ingest", "--root", (char *)out, "-o", table, NULL};
        char *xargs[] = {"index", "-o", index, table, NULL};
        char *pargs[] = {"index", "--format", "table", "--no-ci", table, NULL};
        optind = 1;
        if (cli_find("ingest")->run(5, iargs) != CLI_OK) goto done;
        optind = 1;
        if (cli_find("index")->run(4, xargs) != CLI_OK) goto done;
        optind = 1;
        cli_find("index")->run(5, pargs);
        fprintf(stderr, "pfi sweep: %s (runs), %s, %s\n", out, table, index);
    }
    rc = CLI_OK;
    goto done;
restore_out:
    restore(&S);
done:
    pfi_gpu_close(S.gpu);
done_recon:
    if (have_recon) pfi_recon_free(&recon);
    return rc;
}
