/* cmd_sweep.c — `pfi sweep`: characterize a job as the paper did. The
 * runs (caps through the agent or set directly and restored, one run
 * directory per cap) are the runtime's (src/runtime/sweep_run.h); this file
 * parses the options, loads the reconstruction a simulated job needs,
 * prints what the sweep says, then writes the sweep table and the PFI of
 * the run directories (pfi ingest, pfi index). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "gpu.h"
#include "recon_io.h"
#include "sweep_run.h"

typedef struct sweep_args {
    const char *out, *backend, *gpus_s, *caps_s, *group, *arch, *task, *model, *agent_url,
        *token_file, *state, *data;
    double duration, interval, pause, scale, epoch;
    int no_agent, allow_insecure_http;
    size_t sim_job;
} sweep_args;

#define OPT_T sweep_args
static const pfi_opt sweep_options[] = {
    OPT_DIRNAME(0, "out", out, "DIR", "output directory (required)"),
    OPT_STRING_HELP_OF(0, "backend", backend, "SPEC", pfi_gpu_backend_help),
    OPT_STRING(0, "gpus", gpus_s, "LIST", "GPU indices (default: all; sim: the simulated job's)"),
    OPT_STRING(0, "caps", caps_s, "LIST",
               "per-GPU caps in W (default: the default limit down to the minimum in 100 W steps)"),
    OPT_DOUBLE(0, "duration", duration, "S", 1, 1e6, "per run, clock seconds (default 600)"),
    OPT_DOUBLE(0, "interval", interval, "S", 0.05, 3600, "telemetry sampling (default 5)"),
    OPT_DOUBLE(0, "pause", pause, "S", 0, 1e5, "between runs (default 60)"),
    OPT_STRING(0, "group", group, "NAME",
               "sweep group name (default: the sim job's group, else 'sweep')"),
    OPT_STRING(0, "arch", arch, "A", "metadata for the sweep table: architecture"),
    OPT_STRING(0, "task", task, "T", "metadata for the sweep table: task"),
    OPT_STRING(0, "model", model, "M", "metadata for the sweep table: model"),
    OPT_STRING(0, "agent", agent_url, "URL",
               "the node agent (default http://127.0.0.1:9477 if it answers)"),
    OPT_BOOLEAN(0, "no-agent", no_agent, "set caps directly even if an agent answers"),
    OPT_FILENAME(0, "token-file", token_file, "FILE", "the agent's bearer token (mode 0600)"),
    OPT_BOOLEAN(0, "allow-insecure-http", allow_insecure_http,
                "send the token over plain http to a non-loopback --agent (a trusted network "
                "only; also $PFI_ALLOW_INSECURE_HTTP=1)"),
    OPT_FILENAME(0, "state-file", state, "FILE",
                 "direct mode: previous caps (default /var/lib/pfi/sweep-state.json)"),
    OPT_SIZE(0, "sim-job", sim_job, "K", 0, 15, "--backend sim: which simulated job (default 0)"),
    OPT_DOUBLE(0, "time-scale", scale, "X", 1e-3, 1e6,
               "the pfi clock's speed-up, for tests and demos (docs/agent.md)"),
    OPT_DOUBLE(0, "epoch", epoch, "T", 0, 1e11, "the pfi clock's epoch (docs/agent.md)"),
    OPT_DIRNAME(0, "data", data, "DIR", "bundled data (for --backend sim with jobs)"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_sweep_opts = CLI_OPTS(
    sweep, .usage = "pfi sweep --out DIR [options] [-- COMMAND [ARGS...]]",
    .description =
        "Run COMMAND once per power cap on the selected GPUs, for --duration each (or\n"
        "until it exits), the cap set before it starts; sample telemetry every\n"
        "--interval; pass the step-log path in $PFI_STEPLOG (also $PFI_CAP_W,\n"
        "$PFI_RUN_DIR, and CUDA_VISIBLE_DEVICES = the GPUs' UUIDs); pause between runs\n"
        "until GPU memory is released. Writes DIR/<cap>W/ run directories, DIR/sweep.csv\n"
        "(pfi ingest) and DIR/index.csv (pfi index), and prints the PFI. Caps go\n"
        "through the node's pfi-agent when one answers; otherwise they are set directly\n"
        "and restored at exit, on SIGINT/SIGTERM, or at the next start after a crash.\n"
        "With --backend sim, a simulated job runs on simulated GPUs (COMMAND optional).\n",
    .options = sweep_options, .operands = PFI_OPERANDS_COMMAND, .flags = PFI_OPTS_IN_ORDER);

/* the command's side of a sweep: its name, --state-file, what it prints */
typedef struct sweep {
    const char *cmd;
    const char *state;
} sweep;

static void on_note(void *ud, const char *msg)
{
    fprintf(stderr, "pfi %s: %s\n", ((sweep *)ud)->cmd, msg);
}

static void on_error(void *ud, int usage, const char *msg)
{
    if (usage) cli_usage_error(((sweep *)ud)->cmd, "%s", msg);
    else cli_error(((sweep *)ud)->cmd, "%s", msg);
}

/* on a terminal: how far the run is */
static void on_progress(void *ud, double frac, double power_w, size_t ngpus)
{
    if (!isatty(2)) return;
    if (frac < 0) fprintf(stderr, "\r%60s\r", "");
    else fprintf(stderr, "\r          %3.0f%%  %.0f W (%zu GPUs)   ", 100 * frac, power_w, ngpus);
}

/* the sweep table (pfi ingest) and the PFI (pfi index) of the run directories */
static int sweep_tables(const char *cmd, const char *out)
{
    char table[4200], index[4200];
    snprintf(table, sizeof table, "%s/sweep.csv", out);
    snprintf(index, sizeof index, "%s/index.csv", out);
    char *iargs[] = {"ingest", "--root", (char *)out, "-o", table, NULL};
    char *xargs[] = {"index", "-o", index, table, NULL};
    char *pargs[] = {"index", "--format", "table", "--no-ci", table, NULL};
    optind = 1;
    if (cli_find("ingest")->run(5, iargs) != CLI_OK) return CLI_FAIL;
    optind = 1;
    if (cli_find("index")->run(4, xargs) != CLI_OK) return CLI_FAIL;
    optind = 1;
    cli_find("index")->run(5, pargs);
    fprintf(stderr, "pfi %s: %s (runs), %s, %s\n", cmd, out, table, index);
    return CLI_OK;
}

int cmd_sweep(int argc, char **argv)
{
    const char *cmd = "sweep";
    sweep_args A = {.backend = "nvml",
                    .state = "/var/lib/pfi/sweep-state.json",
                    .duration = 600,
                    .interval = 5,
                    .pause = 60,
                    .scale = NAN,
                    .epoch = NAN};
    int operand0, parsed = cli_parse(&cmd_sweep_opts, &A, argc, argv, &operand0);
    if (parsed >= 0) return parsed;
    const char *out = A.out, *backend = A.backend, *gpus_s = A.gpus_s, *caps_s = A.caps_s,
               *group = A.group, *arch = A.arch, *task = A.task, *model = A.model,
               *agent_url = A.agent_url, *token_file = A.token_file, *data = A.data;
    double duration = A.duration, interval = A.interval, pause = A.pause, scale = A.scale,
           epoch = A.epoch;
    int no_agent = A.no_agent;
    size_t sim_job = A.sim_job;
    sweep S;
    memset(&S, 0, sizeof S);
    S.cmd = cmd;
    S.state = A.state;
    optind = operand0;
    char **command = optind < argc ? argv + optind : NULL;
    if (!out) return cli_usage_error(cmd, "--out DIR is required");
    if (duration < 3 * interval)
        return cli_usage_error(cmd, "--duration %g s is shorter than three --interval samples",
                               duration);
    const pfi_gpu_backend_info *gb = pfi_gpu_backend_of(backend, NULL);
    int is_sim = gb && gb->simulated;
    if (!command && !is_sim)
        return cli_usage_error(cmd, "no COMMAND after '--' (only --backend sim runs without one)");
    pfi_error e;
    if (pfi_clock_set(scale, epoch, &e)) return cli_usage_error(cmd, "%s", e.msg);
    pfi_recon recon = {0};
    int have_recon = 0;
    if (is_sim && strstr(backend, "job=")) {
        char sp[4096], pp[4096];
        if (cli_data_path(cmd, data, "reconstruction/spec.csv", sp, sizeof sp) ||
            cli_data_path(cmd, data, "reconstruction/params.csv", pp, sizeof pp))
            return CLI_FAIL;
        if (pfi_recon_load(sp, pp, &recon, &e)) {
            cli_error(cmd, "%s", e.msg);
            return CLI_FAIL;
        }
        have_recon = 1;
    }
    pfi_sweep_opts o = {.out = out,
                        .backend = backend,
                        .recon = have_recon ? &recon : NULL,
                        .sim_job = sim_job,
                        .gpus = gpus_s,
                        .caps = caps_s,
                        .duration_s = duration,
                        .interval_s = interval,
                        .pause_s = pause,
                        .group = group,
                        .arch = arch,
                        .task = task,
                        .model = model,
                        .command = command,
                        .agent_url = agent_url,
                        .no_agent = no_agent,
                        .token_file = token_file,
                        .allow_insecure_http = A.allow_insecure_http ||
                                               (getenv("PFI_ALLOW_INSECURE_HTTP") &&
                                                !strcmp(getenv("PFI_ALLOW_INSECURE_HTTP"), "1")),
                        .state_file = S.state,
                        .log = {on_note, on_error, on_progress, &S}};
    pfi_sweep_result res;
    pfi_status st = pfi_sweep_run(&o, &res);
    if (have_recon) pfi_recon_dispose(&recon);
    if (st == PFI_ESTATE && res.signal) return 128 + res.signal;
    if (st) return res.usage ? CLI_USAGE : CLI_FAIL;
    return sweep_tables(cmd, out);
}
