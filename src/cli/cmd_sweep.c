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
#include "recon_io.h"
#include "sweep_run.h"

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

/* the command's side of a sweep: its name, --state-file, what it prints */
typedef struct sweep {
    const char *cmd;
    const char *state;
} sweep;

static void on_note(void *ud, const char *msg) { fprintf(stderr, "pfi %s: %s\n", ((sweep *)ud)->cmd, msg); }

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
    int have_recon = 0;
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
    pfi_sweep_opts o = {.out = out, .backend = backend, .recon = have_recon ? &recon : NULL, .sim_job = sim_job, .gpus = gpus_s,
                        .caps = caps_s, .duration_s = duration, .interval_s = interval, .pause_s = pause, .group = group,
                        .arch = arch, .task = task, .model = model, .command = command, .agent_url = agent_url,
                        .no_agent = no_agent, .token_file = token_file, .state_file = S.state,
                        .log = {on_note, on_error, on_progress, &S}};
    pfi_sweep_result res;
    pfi_status st = pfi_sweep_run(&o, &res);
    if (have_recon) pfi_recon_free(&recon);
    if (st == PFI_ESTATE && res.signal) return 128 + res.signal;
    if (st) return res.usage ? CLI_USAGE : CLI_FAIL;
    return sweep_tables(cmd, out);
}
