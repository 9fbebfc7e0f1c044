/* agent_main.c — pfi-agent: options, start-up, the sampling loop and
 * shutdown (agent.h; docs/agent.md).
 *
 * Start-up: read the token file (refused unless mode 0600) and the model,
 * drop the capabilities the options do not need (agent_privs.c), open the
 * GPU backend, then the state file: a live lease from before a
 * crash is honoured (its caps re-applied), an expired one restored. Two
 * threads besides HTTP's: the main loop samples every --interval clock
 * seconds and refreshes the job mapping every 5 s (step logs, which the
 * job's user controls, are read outside the agent's lock); the lease
 * thread checks the lease every 50 ms of monotonic time, so an expired
 * lease is restored within a second however long a sampling round takes.
 * The lease thread touches no path a user controls (it writes only the
 * agent's own state file and log). SIGTERM / SIGINT / SIGQUIT: baselines
 * are restored and the state file cleared before exit, unless
 * --keep-caps-on-exit (for an upgrade: the next agent honours the lease).
 * SIGHUP reopens the --log file (after logrotate renamed it); nothing else.
 * Under systemd (notify.h): READY=1 once the first sample is taken and the
 * API listens, WATCHDOG=1 from the sampling loop, STOPPING=1 at a stop
 * signal. Exit status (pfi-agent(8)): 2 for a bad command line, 1 when it
 * cannot start (GPU backend, the files its options name, the address) or
 * a GPU could not be restored at exit, else 0. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "agent_client.h"
#include "atomic.h"
#include "clock.h"
#include "daemon_util.h"
#include "datapath.h"
#include "notify.h"
#include "options.h"
#include "pfi/version.h"
#include "recon_io.h"

#define OPT_T agent_cfg
static const pfi_opt agent_options[] = {
    OPT_STRING_HELP_OF(0, "backend", backend, "SPEC", pfi_gpu_backend_help),
    OPT_STRING(0, "listen", listen, "ADDR:PORT",
               "(default 127.0.0.1:9477; port 0 picks a free one)"),
    OPT_FILENAME(0, "port-file", port_file, "FILE", "write the bound port here once listening"),
    OPT_STRING(0, "control-listen", control_listen, "ADDR:PORT",
               "serve PUT /v1/caps only here (its own threads and connection budget, so scrapes "
               "cannot starve it)"),
    OPT_FILENAME(0, "control-port-file", control_port_file, "FILE",
                 "the control listener's bound port"),
    OPT_BOOLEAN(0, "no-fast-trigger", no_fast_trigger,
                "no fast trigger datagrams (PUT /v1/caps over UDP on the control listener's port "
                "number, keyed by the control token; on by default with --token-file)"),
    OPT_FILENAME(0, "token-file", token_file, "FILE",
                 "bearer token for PUT /v1/caps (mode 0600); without it caps are read-only"),
    OPT_FILENAME(0, "read-token-file", read_token_file, "FILE",
                 "bearer token GET /metrics and /v1/node then need (this or the control token; "
                 "mode 0600); without it "
                 "reads are open"),
    OPT_FILENAME(0, "tls-client-ca", tls_client_ca, "FILE",
                 "with TLS: every request needs a client certificate this CA signed"),
    OPT_FILENAME(0, "state-file", state_file, "FILE",
                 "lease and baselines (default /var/lib/pfi/agent-state.json)"),
    OPT_FILENAME(0, "boot-id-file", boot_id_file, "FILE",
                 "this boot's id, to tell a reboot from a restart (default "
                 "/proc/sys/kernel/random/boot_id)"),
    OPT_DOUBLE(0, "interval", interval_s, "S", 0.01, 3600,
               "sampling interval, clock seconds (default 1)"),
    OPT_DOUBLE(0, "gpu-call-timeout", gpu_call_timeout_s, "S", 0, 600,
               "deadline of each NVML call on a GPU, seconds (default 2; 0: none): past it the "
               "GPU is unavailable (timeout) and the others go on"),
    OPT_FILENAME(0, "model", model_path, "FILE",
                 "predictor model file (pfi fit --model) for pfi_job_pfi_predicted"),
    OPT_DIRNAME(0, "jobs-dir", jobs_dir, "DIR",
                "job files from the scheduler integration (DIR/*.json)"),
    OPT_FILENAME(0, "jobs-file", jobs_file, "FILE", "a static job mapping"),
    OPT_STRING(0, "job-env", job_env, "VAR",
               "also take a process's job id from VAR in its environment (e.g. SLURM_JOB_ID) when "
               "its cgroup names "
               "none: trusts the job's user; off by default"),
    OPT_DIRNAME(0, "job-mapping-dir", mapping_dir, "DIR",
                "write dcgm-exporter HPC job-mapping files (one per GPU index)"),
    OPT_STRING(0, "dcgm-url", dcgm_url, "URL",
               "a local dcgm-exporter's /metrics, for profiling metrics NVML lacks"),
    OPT_BOOLEAN(0, "export-dcgm", export_dcgm,
                "also serve the readings under dcgm-exporter's names and labels (DCGM_FI_*; off: "
                "a Prometheus scraping dcgm-exporter too would count each GPU twice)"),
    OPT_FILENAME(0, "tls-cert", tls_cert, "FILE", "serve HTTPS with this certificate ..."),
    OPT_FILENAME(0, "tls-key", tls_key, "FILE", "... and this key"),
    OPT_DOUBLE(0, "max-lease", max_lease_s, "S", 1, 86400, "longest lease granted (default 3600)"),
    OPT_SIZE(0, "max-body", max_body, "BYTES", 256, 16 << 20,
             "largest request body (default 65536)"),
    OPT_BOOLEAN(0, "keep-caps-on-exit", keep_caps,
                "on SIGTERM keep caps and the lease (for an upgrade)"),
    OPT_BOOLEAN(0, "restore-and-exit", restore_and_exit,
                "put every GPU the state file lists back to its baseline (all to their device "
                "default if the file is "
                "corrupt), then exit"),
    OPT_BOOLEAN(0, "read-only", read_only,
                "open the GPUs read-only (no setter is even looked up): every PUT /v1/caps is "
                "refused (403), nothing is restored, the state file is neither read nor written, "
                "no fast trigger datagrams"),
    OPT_FILENAME(0, "log", log_path, "FILE",
                 "log here instead of stderr (SIGHUP reopens it; start-up errors also go to "
                 "stderr)"),
    OPT_STRING(0, "log-level", log_level, "LEVEL",
               "error, warning, info (default: one line per cap request, coalesced) or debug "
               "(also each GPU's change and each datagram)"),
    OPT_BOOLEAN(0, "syslog", use_syslog,
                "log to syslog (facility daemon) instead of stderr; not with --log"),
    OPT_DOUBLE(0, "time-scale", time_scale, "X", 1e-3, 1e6,
               "the pfi clock's speed-up, for tests and demos (docs/agent.md); also "
               "$PFI_TIME_SCALE"),
    OPT_DOUBLE(0, "epoch", epoch, "T", 0, 1e11,
               "the pfi clock's epoch (docs/agent.md); also $PFI_EPOCH"),
    OPT_DIRNAME(0, "data", data_dir, "DIR", "bundled data (for --backend sim with jobs)"),
    OPT_STOP(0, "version", "print the version and exit"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

static const pfi_opts agent_opts = {
    .prog = "pfi-agent",
    .see = "see pfi-agent --help",
    .usage = "pfi-agent [options]",
    .description = "The pfi node agent: samples the node's GPUs, maps them to jobs, serves\n"
                   "GET /metrics (Prometheus), GET /v1/node (JSON) and PUT /v1/caps (bearer\n"
                   "token; caps under a lease, restored to their baseline when it ends). The only\n"
                   "writer of GPU caps on its node; run one per node, as root. See pfi-agent(8).\n",
    .options = agent_options,
};

static volatile sig_atomic_t g_stop, g_hup;
static void on_signal(int s)
{
    g_stop = s;
}
static void on_hup(int s)
{
    g_hup = s;
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the next rescan of an unavailable GPU: AGENT_RESCAN_S, but a GPU whose
 * calls time out is tried after AGENT_RESCAN_TIMEOUT_S (a healthy GPU
 * that only waited behind a hung one comes back soon) and backs off (x2
 * each miss, up to 10 min), since each try of a hung GPU may hold the
 * driver for the length of a hung call */
static double rescan_delay_s(agent *a, agent_gpu *g)
{
    if (g->avail != PFI_GPU_TIMEOUT) return AGENT_RESCAN_S;
    /* a call still blocked: this rescan probes nothing (gpu.h); no miss */
    if (pfi_gpu_calls_blocked(a->gpu)) return AGENT_RESCAN_TIMEOUT_S;
    double d = AGENT_RESCAN_TIMEOUT_S;
    for (int k = 0; k < g->rescan_misses && d < 600; k++) d *= 2;
    g->rescan_misses++;
    return d < 600 ? d : 600;
}

/* sample_round's device calls, outside the agent's lock: the unavailable
 * GPUs due (found[i]) looked for again, then every available GPU sampled,
 * each group at once (gpu.h: one worker and one deadline per GPU), so a
 * round takes about two call deadlines however many GPUs hang; how an
 * abandoned call ended is logged */
static void read_gpus(agent *a, int *found, pfi_gpu_avail *av, int *ok, pfi_gpu_sample *s,
                      pfi_gpu_info *info, pfi_error *err)
{
    size_t idx[AGENT_MAX_GPUS], n = 0;
    pfi_gpu_avail rav[AGENT_MAX_GPUS];
    pfi_status rc[AGENT_MAX_GPUS];
    pfi_gpu_sample tmp[AGENT_MAX_GPUS];
    for (size_t i = 0; i < a->n; i++) {
        ok[i] = 0;
        err[i].msg[0] = '\0';
        if (found[i]) idx[n++] = i;
    }
    /* one at a time, the GPUs that only waited behind a hung one first, none
       while a call is blocked: the GPU layer orders them (gpu_worker.c) */
    pfi_gpu_rescan_all(a->gpu, idx, n, rav);
    for (size_t k = 0; k < n; k++) {
        size_t i = idx[k];
        found[i] = rav[k] == PFI_GPU_OK && pfi_gpu_info_get(a->gpu, i, &info[i], &err[i]) == PFI_OK;
        if (found[i]) av[i] = PFI_GPU_OK;
    }
    n = 0;
    for (size_t i = 0; i < a->n; i++)
        if (av[i] == PFI_GPU_OK) idx[n++] = i;
    pfi_error e[AGENT_MAX_GPUS];
    pfi_gpu_sample_all(a->gpu, idx, n, tmp, rc, e);
    for (size_t k = 0; k < n; k++) {
        size_t i = idx[k];
        ok[i] = rc[k] == PFI_OK;
        if (ok[i]) s[i] = tmp[k];
        else err[i] = e[k], av[i] = pfi_gpu_avail_get(a->gpu, i);
    }
    for (size_t i = 0; i < a->n; i++) {
        char late[600];
        if (pfi_gpu_late_take(a->gpu, i, late, sizeof late))
            agent_log(a, "warning: GPU %zu: %s", i, late);
    }
}

/* one round: every available GPU sampled (outside the agent's lock; the GPU
 * layer serializes per GPU), an unavailable one looked for again every
 * AGENT_RESCAN_S; then, under the lock, the samples applied (a failed one
 * leaves no stale sample), changes of a GPU's state logged once, and each
 * limit checked for drift against the cap pfi set. */
static void sample_round(agent *a, int refresh)
{
    double c0 = thread_cpu();
    static pfi_gpu_sample s[AGENT_MAX_GPUS];
    static pfi_gpu_info info[AGENT_MAX_GPUS];
    int ok[AGENT_MAX_GPUS], found[AGENT_MAX_GPUS];
    pfi_gpu_avail av[AGENT_MAX_GPUS];
    unsigned gen[AGENT_MAX_GPUS];
    pfi_error err[AGENT_MAX_GPUS];
    double mono = pfi_wall_monotonic();
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++) {
        gen[i] = a->g[i].cap_gen;
        av[i] = agent_gpu_usable(a, i) ? PFI_GPU_OK : a->g[i].avail;
        found[i] = av[i] != PFI_GPU_OK && mono >= a->g[i].rescan_at_s;
        if (found[i]) a->g[i].rescan_at_s = mono + rescan_delay_s(a, &a->g[i]);
    }
    pthread_mutex_unlock(&a->mu);
    read_gpus(a, found, av, ok, s, info, err);
    agent_dcgm_scrape(a);
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++) {
        agent_gpu *g = &a->g[i];
        const char *was = agent_gpu_state(a, i);
        if (av[i] == PFI_GPU_TIMEOUT && !found[i] && g->avail != PFI_GPU_TIMEOUT) {
            g->rescan_misses = 0; /* a new timeout: its first rescan soon (rescan_delay_s) */
            g->rescan_at_s = mono + AGENT_RESCAN_TIMEOUT_S;
        }
        if (found[i]) {
            g->rescan_misses = 0;
            g->info = info[i];
            g->avail = PFI_GPU_OK;
            a->restore_retry_at_s = 0; /* a saved cap of it: restored now, not after the back-off */
            a->restore_delay_s = 0;
        }
        if (av[i] != PFI_GPU_OK) g->avail = av[i];
        g->read_failed = g->avail == PFI_GPU_OK && !ok[i];
        /* a GPU reset's evidence for agent_check_drift: unavailable since the
           last sample (1), or its energy counter went back (2) */
        if (!ok[i]) g->reset_hint = 1;
        if (ok[i] && (s[i].have & PFI_GS_ENERGY)) {
            if (g->have_energy_last && s[i].energy_j < g->energy_last_j - 0.001) g->reset_hint = 2;
            g->energy_last_j = s[i].energy_j;
            g->have_energy_last = 1;
        }
        if (ok[i]) g->last = s[i], g->sampled = 1;
        else g->sampled = 0; /* no stale sample is exported as live */
        const char *now = agent_gpu_state(a, i);
        if (strcmp(was, now)) {
            if (!strcmp(now, "ok"))
                agent_log(a, "GPU %zu %s is available again (was %s)", i, g->info.uuid, was);
            else
                agent_log(a, "error: GPU %zu %s: %s%s%s (the other GPUs are not affected)", i,
                          g->info.uuid[0] ? g->info.uuid : "(UUID unknown)", now,
                          err[i].msg[0] ? ": " : "", err[i].msg);
        }
        if (ok[i]) {
            agent_check_drift(a, i, gen[i]);
            g->reset_hint = 0; /* evidence is for the sample that follows it */
        }
    }
    if (a->cfg.read_only == 0) agent_check_enforced(a);
    if (refresh) agent_jobs_refresh(a);
    pthread_mutex_unlock(&a->mu);
    agent_jobs_read_steplogs(a); /* the user's files: not under the lock */
    pthread_mutex_lock(&a->mu);
    agent_jobs_update(a);
    a->samples++;
    a->sampling_cpu_s += thread_cpu() - c0;
    pthread_mutex_unlock(&a->mu);
}

/* the lease thread: expiry every 50 ms of monotonic time, and SIGHUP */
static void *lease_thread(void *arg)
{
    agent *a = arg;
    while (!g_stop) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (g_hup) {
            g_hup = 0;
            pfi_daemon_log_hup(agent_log_handle(), "--log");
        }
        if (a->cfg.read_only) continue; /* no lease, nothing to restore */
        pthread_mutex_lock(&a->mu);
        agent_check_lease(a);
        pthread_mutex_unlock(&a->mu);
    }
    return NULL;
}

/* the options into c: -1 to go on, else the exit status (after --help,
 * --version or a usage error) */
static int options(agent_cfg *c, int argc, char **argv)
{
    c->backend = "nvml";
    c->state_file = "/var/lib/pfi/agent-state.json";
    c->boot_id_file = "/proc/sys/kernel/random/boot_id";
    c->interval_s = 1;
    c->gpu_call_timeout_s = 2;
    c->max_lease_s = 3600;
    c->max_body = 65536;
    c->time_scale = c->epoch = NAN;
    int optind0;
    switch (pfi_opts_parse(&agent_opts, c, argc, argv, stderr, &optind0)) {
    case PFI_OPTS_OK: break;
    case PFI_OPTS_HELP: pfi_opts_help(&agent_opts, stdout); return 0;
    case PFI_OPTS_STOP: printf("pfi-agent %s\n", PFI_VERSION); return 0;
    case PFI_OPTS_NOMEM: return 1;
    default: return 2;
    }
    if (optind0 < argc) {
        fprintf(stderr, "pfi-agent: unexpected argument '%s' (see pfi-agent --help)\n",
                argv[optind0]);
        return 2;
    }
    if (c->log_path && c->use_syslog) {
        fprintf(stderr,
                "pfi-agent: --log and --syslog exclude each other (see pfi-agent --help)\n");
        return 2;
    }
    return -1;
}

/* the tokens, the TLS settings' consistency and the model: 0, or the exit status */
static int load_credentials(agent *a)
{
    agent_cfg *c = &a->cfg;
    pfi_error e;
    if (c->token_file) {
        if (pfi_token_read(c->token_file, a->token, sizeof a->token, &e)) {
            agent_log(a, "error: %s", e.msg);
            return 1;
        }
        a->have_token = 1;
    } else {
        agent_log(a, "warning: no --token-file: PUT /v1/caps is refused; caps are read-only");
    }
    if (c->read_token_file) {
        if (pfi_token_read(c->read_token_file, a->read_token, sizeof a->read_token, &e)) {
            agent_log(a, "error: --read-token-file: %s", e.msg);
            return 1;
        }
        a->have_read_token = 1;
    }
    if (c->tls_client_ca && !c->tls_cert) {
        agent_log(a, "error: --tls-client-ca needs --tls-cert and --tls-key (mTLS is TLS)");
        return 2;
    }
    if (c->model_path) {
        if (pfi_modelfile_load(c->model_path, &a->model, &e)) {
            agent_log(a, "error: --model: %s", e.msg);
            return 1;
        }
        a->have_model = 1;
    }
    return 0;
}

/* every --interval on the monotonic clock (a wall-clock step neither
 * stalls nor bursts sampling), the job mapping every 5 s, until a signal */
static void sampling_loop(agent *a)
{
    agent_cfg *c = &a->cfg;
    double next = pfi_clock_mono() + c->interval_s, last_refresh = pfi_clock_mono();
    pfi_watchdog wd;
    pfi_watchdog_init(&wd);
    while (!g_stop) {
        pfi_watchdog_tick(&wd); /* systemd's WatchdogSec: this loop is alive */
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        double now = pfi_clock_mono();
        if (now >= next && !g_stop) {
            int refresh = now - last_refresh >= 5.0;
            if (refresh) last_refresh = now;
            sample_round(a, refresh);
            next += c->interval_s;
            if (next < now) next = now + c->interval_s; /* fell behind: do not burst */
        }
    }
}

/* at exit: caps kept under the lease (--keep-caps-on-exit) or every GPU
 * restored; 1 if some GPU could not be */
static int release_caps(agent *a)
{
    agent_cfg *c = &a->cfg;
    int exit_rc = 0;
    if (c->read_only) return 0; /* nothing was set */
    pthread_mutex_lock(&a->mu);
    if (c->keep_caps) {
        agent_log(a, "--keep-caps-on-exit: caps and lease kept in %s", c->state_file);
        agent_save_state(a);
    } else {
        a->lease.active = 0;
        agent_restore(a, "agent stopping");
        /* a device that refused: retry with back-off for a bounded time (10
           s), then exit non-zero with the state file still listing it, so
           that --restore-and-exit (ExecStopPost) or the next start restores */
        for (double delay_s = 0.1, waited_s = 0; agent_restore_pending(a) && waited_s < 10;
             waited_s += delay_s, delay_s *= 2) {
            pthread_mutex_unlock(&a->mu);
            struct timespec ts = {(time_t)delay_s,
                                  (long)((delay_s - (double)(time_t)delay_s) * 1e9)};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&a->mu);
            agent_restore(a, "agent stopping (retry)");
        }
        if (agent_restore_pending(a)) {
            agent_log(a, "error: some GPUs could not be restored at exit; %s still lists them",
                      c->state_file);
            exit_rc = 1;
        }
    }
    pthread_mutex_unlock(&a->mu);
    return exit_rc;
}

/* the reconstruction, for simulated jobs (--backend sim:...job=...): 0,
 * or the exit status */
static int load_recon(agent *a, pfi_recon *recon, int *have_recon)
{
    agent_cfg *c = &a->cfg;
    pfi_error e;
    *have_recon = 0;
    const pfi_gpu_backend_info *b = pfi_gpu_backend_of(c->backend, NULL);
    if (!b || !b->simulated || !pfi_gpu_backend_option(c->backend, "job")) return 0;
    char sp[4096], pp[4096];
    if (pfi_data_path(c->data_dir, "reconstruction/spec.csv", sp, sizeof sp, &e) ||
        pfi_data_path(c->data_dir, "reconstruction/params.csv", pp, sizeof pp, &e) ||
        pfi_recon_load(sp, pp, recon, &e)) {
        agent_log(a, "error: %s", e.msg);
        return 1;
    }
    *have_recon = 1;
    return 0;
}

/* the GPU backend, and each GPU's description; a GPU that cannot be opened
 * or read blocks neither the others, nor their restore, nor the start: it
 * is marked and looked for again. 0, or the exit status */
static int open_gpus(agent *a, const pfi_recon *recon)
{
    agent_cfg *c = &a->cfg;
    pfi_error e;
    if ((c->read_only ? pfi_gpu_open_read_only : pfi_gpu_open)(c->backend, recon, &a->gpu, &e)) {
        agent_log(a, "error: --backend %s: %s", c->backend, e.msg);
        return 1;
    }
    pfi_gpu_set_call_timeout(a->gpu, c->gpu_call_timeout_s);
    a->n = pfi_gpu_count(a->gpu);
    if (a->n > AGENT_MAX_GPUS) a->n = AGENT_MAX_GPUS;
    for (size_t i = 0; i < a->n; i++) {
        for (int m = 0; m < PFI_M_COUNT; m++) a->g[i].dcgm_prof[m] = NAN;
        a->g[i].avail = pfi_gpu_avail_get(a->gpu, i);
        if (a->g[i].avail == PFI_GPU_OK && pfi_gpu_info_get(a->gpu, i, &a->g[i].info, &e)) {
            a->g[i].avail = pfi_gpu_avail_get(a->gpu, i);
            if (a->g[i].avail == PFI_GPU_OK) a->g[i].avail = PFI_GPU_UNKNOWN;
        } else if (a->g[i].avail != PFI_GPU_OK) {
            pfi_gpu_info_get(a->gpu, i, &a->g[i].info, &e); /* its error, for the log */
        }
        if (a->g[i].avail != PFI_GPU_OK) {
            memset(&a->g[i].info, 0, sizeof a->g[i].info);
            a->g[i].rescan_at_s = pfi_wall_monotonic() + AGENT_RESCAN_S;
            agent_log(a,
                      "error: GPU %zu is unavailable (%s): %s; the other GPUs are used, it is "
                      "looked for again every %.0f s",
                      i, pfi_gpu_avail_name(a->g[i].avail), e.msg, AGENT_RESCAN_S);
        }
    }
    return 0;
}

/* the agent and its GPUs in the log, then the state file: a live lease
 * from before honoured, an expired one restored (unless --read-only); 0,
 * or the exit status */
static int take_over(agent *a)
{
    agent_log(a, "pfi-agent %s: backend %s, %zu GPUs, clock x%g; %s", PFI_VERSION,
              pfi_gpu_backend(a->gpu), a->n, pfi_clock_scale(), a->privs);
    agent_check_hidepid(a, "/proc/self/mountinfo");
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i))
            agent_log(a, "GPU %zu %s %s: caps %g..%g W (default %g W)", i, a->g[i].info.uuid,
                      a->g[i].info.name, a->g[i].info.cap_min_w, a->g[i].info.cap_max_w,
                      a->g[i].info.cap_default_w);
    pthread_mutex_lock(&a->mu);
    int st = 0;
    if (a->cfg.read_only) {
        agent_log(a, "--read-only: caps are never written and nothing is put back; the state file "
                     "is not touched");
    } else {
        st = agent_startup_state(a);
        agent_check_modes(a);
        agent_probe_write_path(a);
    }
    pthread_mutex_unlock(&a->mu);
    return st ? 1 : 0;
}

/* a bound port into the file that asks for it */
static void write_port(agent *a, const char *file, int port)
{
    char b[32];
    pfi_error e;
    int k = snprintf(b, sizeof b, "%d\n", port);
    if (pfi_write_file_private(file, b, (size_t)k, &e)) agent_log(a, "error: %s", e.msg);
}

/* the lease thread, a first sample, then the HTTP API and the fast
 * trigger; 0, or the exit status (what started is stopped again) */
static int serve(agent *a, pthread_t *lease_tid)
{
    agent_cfg *c = &a->cfg;
    if (pthread_create(lease_tid, NULL, lease_thread, a)) {
        agent_log(a, "error: cannot start the lease thread");
        return 1;
    }
    sample_round(a, 1);
    if (agent_http_start(a)) {
        g_stop = SIGTERM;
        pthread_join(*lease_tid, NULL);
        return 1;
    }
    if (agent_fast_start(a)) {
        g_stop = SIGTERM;
        pthread_join(*lease_tid, NULL);
        agent_http_stop(a);
        release_caps(a);
        return 1;
    }
    if (c->port_file) write_port(a, c->port_file, a->port);
    if (c->control_port_file && c->control_listen)
        write_port(a, c->control_port_file, a->control_port);
    pfi_notify_ready("%zu GPUs (%s), sampling every %g s, listening on port %d", a->n,
                     pfi_gpu_backend(a->gpu), c->interval_s, a->port);
    pfi_daemon_log_started(agent_log_handle());
    return 0;
}

int main(int argc, char **argv)
{
    static agent A;
    agent *a = &A;
    agent_cfg *c = &a->cfg;
    a->write_path = -1; /* not probed until start-up (never with --read-only) */
    int rc = options(c, argc, argv);
    if (rc >= 0) return rc;
    pfi_daemon_log_init(agent_log_handle(), "pfi-agent");
    pfi_daemon_setup ds = {.stop = on_signal,
                           .hup = on_hup,
                           .time_scale = c->time_scale,
                           .epoch = c->epoch,
                           .log_level = c->log_level,
                           .log_path = c->log_path,
                           .use_syslog = c->use_syslog,
                           .log_what = "--log"};
    if ((rc = pfi_daemon_start(agent_log_handle(), &ds))) return rc;
    pthread_mutex_init(&a->mu, NULL);
    if (gethostname(a->hostname, sizeof a->hostname) != 0)
        snprintf(a->hostname, sizeof a->hostname, "localhost");
    a->hostname[sizeof a->hostname - 1] = '\0';
    pfi_recon recon = {0};
    int have_recon;
    if ((rc = load_recon(a, &recon, &have_recon))) return rc;
    if (c->read_only && c->restore_and_exit) {
        agent_log(a, "error: --read-only and --restore-and-exit exclude each other");
        return 2;
    }
    /* the tokens and the model read while every capability is there (a
       token file may be the controller's user's); then only what the
       options need, before the GPUs are opened and any thread starts */
    if (!c->restore_and_exit && (rc = load_credentials(a))) return rc;
    /* --restore-and-exit restores first and drops after (issue 41: a failed
       drop exited 1 before restoring, leaving a crashed agent's caps set) */
    if (!c->restore_and_exit && agent_drop_capabilities(a)) return 1;
    if ((rc = open_gpus(a, have_recon ? &recon : NULL))) return rc;
    if (c->restore_and_exit) {
        rc = agent_restore_and_exit(a);
        if (agent_drop_capabilities(a)) /* logged; the restore is what counts */
            agent_log(a, "warning: --restore-and-exit: restored first, then the drop failed");
        pfi_gpu_close(a->gpu);
        if (have_recon) pfi_recon_dispose(&recon);
        pfi_daemon_log_close(agent_log_handle());
        return rc;
    }
    pthread_t lease_tid;
    if ((rc = take_over(a)) || (rc = serve(a, &lease_tid))) return rc;
    sampling_loop(a);
    pfi_notify_stopping("signal %d: stopping, %s", (int)g_stop,
                        c->keep_caps ? "caps kept under the lease" : "restoring every cap");
    agent_log(a, "signal %d: stopping", (int)g_stop);
    pthread_join(lease_tid, NULL);
    agent_fast_stop(a);
    agent_http_stop(a);
    rc = release_caps(a);
    if (a->have_model) pfi_modelfile_dispose(&a->model);
    pfi_gpu_close(a->gpu);
    if (have_recon) pfi_recon_dispose(&recon);
    pfi_daemon_log_close(agent_log_handle());
    return rc;
}
