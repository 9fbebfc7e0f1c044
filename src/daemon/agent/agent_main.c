/* agent_main.c — pfi-agent: options, start-up, the sampling loop and
 * shutdown (agent.h; docs/agent.md).
 *
 * Start-up: open the GPU backend, read the token file (refused unless mode
 * 0600), load the model, then the state file: a live lease from before a
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
 * SIGHUP reopens the --log file (after logrotate renamed it); nothing else. */
#include <errno.h>
#include <getopt.h>
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
#include "recon_io.h"
#include "pfi/version.h"

static const char usage[] =
    "usage: pfi-agent [options]\n"
    "\n"
    "The pfi node agent: samples the node's GPUs, maps them to jobs, serves\n"
    "GET /metrics (Prometheus), GET /v1/node (JSON) and PUT /v1/caps (bearer\n"
    "token; caps under a lease, restored to their baseline when it ends). The only\n"
    "writer of GPU caps on its node; run one per node, as root. See pfi-agent(8).\n"
    "\n"
    "options:\n"
    "  --backend SPEC        nvml (default) or sim[:OPTIONS] (gpu.h, docs/agent.md)\n"
    "  --listen ADDR:PORT    (default 127.0.0.1:9477; port 0 picks a free one)\n"
    "  --port-file FILE      write the bound port here once listening\n"
    "  --control-listen ADDR:PORT  serve PUT /v1/caps only here (its own threads and\n"
    "                        connection budget, so scrapes cannot starve it)\n"
    "  --control-port-file FILE    the control listener's bound port\n"
    "  --token-file FILE     bearer token for PUT /v1/caps (mode 0600); without it caps are read-only\n"
    "  --read-token-file FILE  bearer token GET /metrics and /v1/node then need (this or the\n"
    "                        control token; mode 0600); without it reads are open\n"
    "  --tls-client-ca FILE  with TLS: every request needs a client certificate this CA signed\n"
    "  --state-file FILE     lease and baselines (default /var/lib/pfi/agent-state.json)\n"
    "  --interval S          sampling interval, clock seconds (default 1)\n"
    "  --model FILE          predictor model file (pfi fit --model) for pfi_job_pfi_predicted\n"
    "  --jobs-dir DIR        job files from the scheduler integration (DIR/*.json)\n"
    "  --jobs-file FILE      a static job mapping\n"
    "  --job-env VAR         also take a process's job id from VAR in its environment (e.g.\n"
    "                        SLURM_JOB_ID) when its cgroup names none: trusts the job's user; off by default\n"
    "  --job-mapping-dir DIR write dcgm-exporter HPC job-mapping files (one per GPU index)\n"
    "  --dcgm-url URL        a local dcgm-exporter's /metrics, for profiling metrics NVML lacks\n"
    "  --tls-cert FILE, --tls-key FILE   serve HTTPS\n"
    "  --max-lease S         longest lease granted (default 3600)\n"
    "  --max-body BYTES      largest request body (default 65536)\n"
    "  --keep-caps-on-exit   on SIGTERM keep caps and the lease (for an upgrade)\n"
    "  --restore-and-exit    put every GPU the state file lists back to its baseline (all to\n"
    "                        their device default if the file is corrupt), then exit\n"
    "  --log FILE            log here instead of stderr\n"
    "  --time-scale X, --epoch T   the pfi clock (clock.h); also $PFI_TIME_SCALE, $PFI_EPOCH\n"
    "  --data DIR            bundled data (for --backend sim with jobs)\n"
    "  --version, --help\n";

static volatile sig_atomic_t g_stop, g_hup;
static void on_signal(int s) { g_stop = s; }
static void on_hup(int s) { g_hup = s; }

void agent_log(agent *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_daemon_vlog(a->log, "pfi-agent", fmt, ap);
    va_end(ap);
}

static int num_opt(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "pfi-agent: %s %s: expected a number in %g..%g\n", opt, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sample_round(agent *a, int refresh)
{
    double c0 = thread_cpu();
    pfi_gpu_sample s[AGENT_MAX_GPUS];
    int ok[AGENT_MAX_GPUS];
    for (size_t i = 0; i < a->n; i++) {
        pfi_error e;
        ok[i] = pfi_gpu_sample_get(a->gpu, i, &s[i], &e) == PFI_OK;
        if (!ok[i]) agent_log(a, "warning: GPU %zu: %s", i, e.msg);
    }
    agent_dcgm_scrape(a);
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++)
        if (ok[i]) a->g[i].last = s[i], a->g[i].sampled = 1;
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
            pfi_error why;
            if (!a->cfg.log_path) agent_log(a, "SIGHUP: no --log file to reopen; ignored");
            else if (pfi_daemon_log_reopen(a->log, a->cfg.log_path, &why))
                agent_log(a, "warning: SIGHUP: %s; still logging to the old file", why.msg);
            else agent_log(a, "SIGHUP: log file %s reopened", a->cfg.log_path);
        }
        pthread_mutex_lock(&a->mu);
        agent_check_lease(a);
        pthread_mutex_unlock(&a->mu);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    enum { O_BACKEND = 1, O_LISTEN, O_PORTF, O_TOKEN, O_STATE, O_INTERVAL, O_MODEL, O_JOBSDIR, O_JOBSFILE, O_JOBENV, O_MAPDIR,
           O_DCGM, O_CERT, O_KEY, O_MAXLEASE, O_MAXBODY, O_KEEP, O_LOG, O_SCALE, O_EPOCH, O_DATA, O_VERSION, O_CLISTEN, O_CPORTF, O_RTOKEN, O_CLIENTCA, O_RESTORE };
    static const struct option lo[] = {
        {"backend", required_argument, NULL, O_BACKEND},   {"listen", required_argument, NULL, O_LISTEN},
        {"port-file", required_argument, NULL, O_PORTF},   {"token-file", required_argument, NULL, O_TOKEN},
        {"state-file", required_argument, NULL, O_STATE},  {"interval", required_argument, NULL, O_INTERVAL},
        {"model", required_argument, NULL, O_MODEL},       {"jobs-dir", required_argument, NULL, O_JOBSDIR},
        {"jobs-file", required_argument, NULL, O_JOBSFILE}, {"job-env", required_argument, NULL, O_JOBENV},
        {"job-mapping-dir", required_argument, NULL, O_MAPDIR}, {"dcgm-url", required_argument, NULL, O_DCGM},
        {"tls-cert", required_argument, NULL, O_CERT},     {"tls-key", required_argument, NULL, O_KEY},
        {"max-lease", required_argument, NULL, O_MAXLEASE}, {"max-body", required_argument, NULL, O_MAXBODY},
        {"keep-caps-on-exit", no_argument, NULL, O_KEEP},  {"log", required_argument, NULL, O_LOG},
        {"time-scale", required_argument, NULL, O_SCALE},  {"epoch", required_argument, NULL, O_EPOCH},
        {"data", required_argument, NULL, O_DATA},         {"version", no_argument, NULL, O_VERSION},
        {"control-listen", required_argument, NULL, O_CLISTEN}, {"control-port-file", required_argument, NULL, O_CPORTF},
        {"read-token-file", required_argument, NULL, O_RTOKEN}, {"tls-client-ca", required_argument, NULL, O_CLIENTCA},
        {"restore-and-exit", no_argument, NULL, O_RESTORE}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static agent A;
    agent *a = &A;
    agent_cfg *c = &a->cfg;
    c->backend = "nvml";
    c->state_file = "/var/lib/pfi/agent-state.json";
    c->interval_s = 1;
    c->max_lease_s = 3600;
    c->max_body = 65536;
    c->time_scale = c->epoch = NAN;
    int opt;
    double v;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (opt) {
        case 'h': fputs(usage, stdout); return 0;
        case O_VERSION: printf("pfi-agent %s\n", PFI_VERSION); return 0;
        case O_BACKEND: c->backend = optarg; break;
        case O_LISTEN: c->listen = optarg; break;
        case O_PORTF: c->port_file = optarg; break;
        case O_CLISTEN: c->control_listen = optarg; break;
        case O_RTOKEN: c->read_token_file = optarg; break;
        case O_CLIENTCA: c->tls_client_ca = optarg; break;
        case O_CPORTF: c->control_port_file = optarg; break;
        case O_TOKEN: c->token_file = optarg; break;
        case O_STATE: c->state_file = optarg; break;
        case O_INTERVAL: if (num_opt("--interval", optarg, 0.01, 3600, &c->interval_s)) return 2; break;
        case O_MODEL: c->model_path = optarg; break;
        case O_JOBSDIR: c->jobs_dir = optarg; break;
        case O_JOBSFILE: c->jobs_file = optarg; break;
        case O_JOBENV: c->job_env = optarg; break;
        case O_MAPDIR: c->mapping_dir = optarg; break;
        case O_DCGM: c->dcgm_url = optarg; break;
        case O_CERT: c->tls_cert = optarg; break;
        case O_KEY: c->tls_key = optarg; break;
        case O_MAXLEASE: if (num_opt("--max-lease", optarg, 1, 86400, &c->max_lease_s)) return 2; break;
        case O_MAXBODY: if (num_opt("--max-body", optarg, 256, 16 << 20, &v)) return 2; c->max_body = (size_t)v; break;
        case O_KEEP: c->keep_caps = 1; break;
        case O_RESTORE: c->restore_and_exit = 1; break;
        case O_LOG: c->log_path = optarg; break;
        case O_SCALE: if (num_opt("--time-scale", optarg, 1e-3, 1e6, &c->time_scale)) return 2; break;
        case O_EPOCH: if (num_opt("--epoch", optarg, 0, 1e11, &c->epoch)) return 2; break;
        case O_DATA: c->data_dir = optarg; break;
        default:
            fprintf(stderr, "pfi-agent: invalid option or missing argument: %s (see pfi-agent --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pfi-agent: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    pfi_error e;
    /* first of all: a SIGHUP (logrotate) or SIGTERM during start-up must not
       kill the agent between setting up and its restore path */
    pfi_daemon_signals(on_signal, on_hup);
    if (pfi_clock_set(c->time_scale, c->epoch, &e)) {
        fprintf(stderr, "pfi-agent: %s\n", e.msg);
        return 2;
    }
    if (c->log_path && !(a->log = fopen(c->log_path, "a"))) {
        fprintf(stderr, "pfi-agent: %s: %s\n", c->log_path, strerror(errno));
        return 1;
    }
    pthread_mutex_init(&a->mu, NULL);
    if (gethostname(a->hostname, sizeof a->hostname) != 0) snprintf(a->hostname, sizeof a->hostname, "localhost");
    a->hostname[sizeof a->hostname - 1] = '\0';
    /* the reconstruction, for simulated jobs */
    pfi_recon recon = {0};
    int have_recon = 0;
    if (!strncmp(c->backend, "sim", 3) && strstr(c->backend, "job=")) {
        char sp[4096], pp[4096];
        if (pfi_data_path(c->data_dir, "reconstruction/spec.csv", sp, sizeof sp, &e) ||
            pfi_data_path(c->data_dir, "reconstruction/params.csv", pp, sizeof pp, &e) || pfi_recon_load(sp, pp, &recon, &e)) {
            agent_log(a, "error: %s", e.msg);
            return 1;
        }
        have_recon = 1;
    }
    if (pfi_gpu_open(c->backend, have_recon ? &recon : NULL, &a->gpu, &e)) {
        agent_log(a, "error: --backend %s: %s", c->backend, e.msg);
        return 1;
    }
    a->n = pfi_gpu_count(a->gpu);
    if (a->n > AGENT_MAX_GPUS) a->n = AGENT_MAX_GPUS;
    for (size_t i = 0; i < a->n; i++) {
        if (pfi_gpu_info_get(a->gpu, i, &a->g[i].info, &e)) {
            agent_log(a, "error: %s", e.msg);
            return 1;
        }
        for (int m = 0; m < PFI_M_COUNT; m++) a->g[i].dcgm_prof[m] = NAN;
    }
    if (c->restore_and_exit) {
        int rc = agent_restore_and_exit(a);
        pfi_gpu_close(a->gpu);
        if (have_recon) pfi_recon_free(&recon);
        if (a->log) fclose(a->log);
        return rc;
    }
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
        if (pfi_model_load(c->model_path, &a->model, &e)) {
            agent_log(a, "error: --model: %s", e.msg);
            return 1;
        }
        a->have_model = 1;
    }
    agent_log(a, "pfi-agent %s: backend %s, %zu GPUs, clock x%g", PFI_VERSION, pfi_gpu_backend(a->gpu), a->n, pfi_clock_scale());
    for (size_t i = 0; i < a->n; i++)
        agent_log(a, "GPU %zu %s %s: caps %g..%g W (default %g W)", i, a->g[i].info.uuid, a->g[i].info.name, a->g[i].info.cap_min_w,
                  a->g[i].info.cap_max_w, a->g[i].info.cap_default_w);
    pthread_mutex_lock(&a->mu);
    int st = agent_startup_state(a);
    pthread_mutex_unlock(&a->mu);
    if (st) return 1;
    pthread_t lease_tid;
    if (pthread_create(&lease_tid, NULL, lease_thread, a)) {
        agent_log(a, "error: cannot start the lease thread");
        return 1;
    }
    sample_round(a, 1);
    if (agent_http_start(a)) {
        g_stop = SIGTERM;
        pthread_join(lease_tid, NULL);
        return 1;
    }
    if (c->port_file) {
        char b[32];
        int k = snprintf(b, sizeof b, "%d\n", a->port);
        if (pfi_write_file_private(c->port_file, b, (size_t)k, &e)) agent_log(a, "error: %s", e.msg);
    }
    if (c->control_port_file && c->control_listen) {
        char b[32];
        int k = snprintf(b, sizeof b, "%d\n", a->control_port);
        if (pfi_write_file_private(c->control_port_file, b, (size_t)k, &e)) agent_log(a, "error: %s", e.msg);
    }
    /* on the monotonic clock: a wall-clock step neither stalls nor bursts sampling */
    double next = pfi_clock_mono() + c->interval_s, last_refresh = pfi_clock_mono();
    while (!g_stop) {
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
    agent_log(a, "signal %d: stopping", (int)g_stop);
    int exit_rc = 0;
    pthread_join(lease_tid, NULL);
    agent_http_stop(a);
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
        for (double delay_s = 0.1, waited_s = 0; agent_restore_pending(a) && waited_s < 10; waited_s += delay_s, delay_s *= 2) {
            pthread_mutex_unlock(&a->mu);
            struct timespec ts = {(time_t)delay_s, (long)((delay_s - (double)(time_t)delay_s) * 1e9)};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&a->mu);
            agent_restore(a, "agent stopping (retry)");
        }
        if (agent_restore_pending(a)) {
            agent_log(a, "error: some GPUs could not be restored at exit; %s still lists them", c->state_file);
            exit_rc = 1;
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (a->have_model) pfi_model_free(&a->model);
    pfi_gpu_close(a->gpu);
    if (have_recon) pfi_recon_free(&recon);
    if (a->log) fclose(a->log);
    return exit_rc;
}
