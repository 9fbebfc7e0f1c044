/* cmd_demo.c — `pfi demo`: the runtime end to end on loopback, in about a
 * minute (src/runtime/demo.h runs it). This file parses the options, fits
 * the agents' predictor with pfi synth and pfi fit, and prints. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "demo.h"

typedef struct demo_args {
    double scale, cut;
    const char *dir;
    int keep, openadr, failover;
} demo_args;

#define OPT_T demo_args
static const pfi_opt demo_options[] = {
    OPT_DOUBLE(0, "time-scale", scale, "X", 1, 1000,
               "clock speed-up (default 20: 10 minutes in 30 s)"),
    OPT_DOUBLE(0, "cut", cut, "PCT", 1, 60, "the event's reduction (default 30)"),
    OPT_DIRNAME(0, "dir", dir, "DIR",
                "working directory for the daemons (default: a temporary one)"),
    OPT_BOOLEAN(0, "keep", keep, "keep that directory (logs, SQLite, state files)"),
    OPT_BOOLEAN(0, "openadr", openadr,
                "send the event as an OpenADR 3.1 EVENT to the controller's webhook "
                "(POST /openadr3/events) instead of POST /v1/events"),
    OPT_BOOLEAN(0, "failover", failover,
                "two controllers failing over on three etcd members (Debian's etcd-server); the "
                "leader is killed during the event"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_demo_opts =
    CLI_OPTS(demo,
             .usage = "pfi demo [--time-scale X] [--cut PCT] [--dir DIR] [--keep] [--openadr] "
                      "[--failover]",
             .description =
                 "Start pfi-controller and 4 pfi-agents (8 simulated GPUs each, running jobs of\n"
                 "the reconstruction) on loopback with one shared sped-up clock, send a grid\n"
                 "event, print a timeline (cluster GPU power vs target, per-job tokens/s), write\n"
                 "pfi-demo-report.json and pfi-demo-report.png here, stop everything and check\n"
                 "that every cap is back at its baseline. Takes about a minute. With --openadr\n"
                 "the event goes the way a VTN's would: an OpenADR 3.1 EVENT (a SIMPLE level the\n"
                 "controller maps to the cut) POSTed to its webhook /openadr3/events.\n",
             .options = demo_options);

/* the agents' predictor: pfi fit on the reconstruction's headline groups
 * (pfi synth), its messages in DIR/fit.log */
static int fit_model(void *ud, const char *dir, const char *model)
{
    char sweep[4300], fitcsv[4300], fitlog[4300];
    snprintf(sweep, sizeof sweep, "%s/recon.csv", dir);
    snprintf(fitcsv, sizeof fitcsv, "%s/fit.csv", dir);
    snprintf(fitlog, sizeof fitlog, "%s/fit.log", dir);
    char *sargs[] = {"synth", "--summary", "--minutes", "3", "-o", sweep, NULL};
    char *fargs[] = {"fit",     "--train-where", "split=headline",
                     "--model", (char *)model,   "-o",
                     fitcsv,    sweep,           NULL};
    int lfd = open(fitlog, O_WRONLY | O_CREAT | O_TRUNC, 0644), saved = dup(2);
    if (lfd >= 0) dup2(lfd, 2);
    optind = 1;
    int srr = cli_find("synth")->run(6, sargs);
    optind = 1;
    int frr = srr == CLI_OK ? cli_find("fit")->run(8, fargs) : srr;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (lfd >= 0) close(lfd);
    return frr != CLI_OK;
}

static void on_note(void *ud, const char *msg)
{
    fprintf(stderr, "pfi %s: %s\n", (const char *)ud, msg);
}
static void on_error(void *ud, const char *msg)
{
    cli_error((const char *)ud, "%s", msg);
}

int cmd_demo(int argc, char **argv)
{
    const char *cmd = "demo";
    demo_args A = {20, 30, NULL, 0, 0, 0};
    int operand0, parsed = cli_parse(&cmd_demo_opts, &A, argc, argv, &operand0);
    if (parsed >= 0) return parsed;
    double scale = A.scale, cut = A.cut;
    const char *dir_opt = A.dir;
    int keep = A.keep;
    optind = operand0;
    if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    pfi_demo_opts o = {.time_scale = scale,
                       .cut_pct = cut,
                       .dir = dir_opt,
                       .keep = keep,
                       .openadr = A.openadr,
                       .failover = A.failover,
                       .fit_model = fit_model,
                       .out = stdout,
                       .note = on_note,
                       .error = on_error,
                       .ud = (void *)cmd};
    return pfi_demo_run(&o) == PFI_OK ? CLI_OK : CLI_FAIL;
}
