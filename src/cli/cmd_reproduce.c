/* cmd_reproduce.c — `pfi reproduce`: the whole study in one command (the
 * main job of `make run`). Each stage runs a pfi subcommand in-process with
 * its outputs in OUT/data; the reconstruction is streamed through the real
 * ingest path (`pfi synth --tar -` in one child process, `pfi ingest -` in
 * another, this process relaying the bytes and showing progress). Then the
 * summary, the figures and the pages are built from those files. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "report.h"

typedef struct reproduce_args {
    const char *out, *data;
    int quick;
    double seed;
} reproduce_args;

#define OPT_T reproduce_args
static const pfi_opt reproduce_options[] = {
    OPT_DIRNAME(0, "out", out, "DIR", "output directory (default report)"),
    OPT_BOOLEAN(0, "quick", quick, "reduced scale (3-minute traces, 30 workloads): for tests"),
    OPT_DOUBLE(0, "seed", seed, "N", 0, 1e15, "noise and simulation seed (default 1)"),
    OPT_DIRNAME(0, "data", data, "DIR", "bundled data (default: found automatically)"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_reproduce_opts =
    CLI_OPTS(reproduce, .usage = "pfi reproduce [--out DIR] [--quick] [--seed N] [--data DIR]",
             .description =
                 "Run the whole study: generate the reconstruction of the paper's H200/H100\n"
                 "runs (a reconstruction calibrated to published tables, not the raw data) and\n"
                 "stream it through ingest; index it; the paper's statistics; the predictor\n"
                 "ablation; out-of-sample fits; the allocation simulation (both scenarios, every\n"
                 "strategy), with SLA tiers, out of sample and on a fresh fleet; the same on the\n"
                 "Zeus traces (A40 + V100 for fitting, P100 + RTX 6000 held out). Writes DIR\n"
                 "(default report/): index.html, report.md, summary.csv, figures (PNG + SVG) and\n"
                 "every CSV behind them in DIR/data, and prints the paper-vs-pfi summary.\n"
                 "Re-running with the same seed gives byte-identical CSVs. The calibration\n"
                 "targets hold for seed 1 (the default).\n",
             .options = reproduce_options);

typedef struct repro {
    const char *out, *data;
    char ddir[4096];
    int quick, tty;
    char seed[32];
    double t0;
    FILE *logf;
    char logpath[4200];
} repro;

static void stage(repro *r, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "[%6.1fs] ", pfi_wall_monotonic() - r->t0);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static char *dpath(repro *r, const char *name)
{
    static char buf[8][4200];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", r->ddir, name);
    return buf[k];
}

/* run a subcommand in-process, its stderr appended to the log */
static int run(repro *r, const char *cmd, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)cmd;
    va_list ap;
    va_start(ap, cmd);
    for (const char *a; argc < 63 && (a = va_arg(ap, const char *));) argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(stderr);
    fprintf(r->logf, "$ pfi");
    for (int i = 0; i < argc; i++) fprintf(r->logf, " %s", argv[i]);
    fprintf(r->logf, "\n");
    fflush(r->logf);
    int saved = dup(2);
    dup2(fileno(r->logf), 2);
    const cli_cmd *c = cli_find(cmd);
    optind = 1;
    int rc = c ? c->run(argc, argv) : CLI_USAGE;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (rc != CLI_OK) {
        fprintf(stderr, "pfi reproduce: 'pfi %s' failed (exit %d); its messages are in %s\n", cmd,
                rc, r->logpath);
        return -1;
    }
    return 0;
}

static pid_t spawn(repro *r, int in_fd, int out_fd, const char *cmd, char **args)
{
    pid_t p = fork();
    if (p != 0) return p;
    if (in_fd >= 0) dup2(in_fd, 0);
    if (out_fd >= 0) dup2(out_fd, 1);
    dup2(fileno(r->logf), 2);
    for (int fd = 3; fd < 256; fd++)
        if (fd != fileno(r->logf)) close(fd);
    int argc = 0;
    while (args[argc]) argc++;
    optind = 1;
    _exit(cli_find(cmd)->run(argc, args));
}

/* synth --tar - | ingest -, relayed here (progress on a terminal) */
static int stream_reconstruction(repro *r)
{
    int a[2], b[2];
    if (pipe(a) || pipe(b)) return -1;
    char *sargs[] = {"synth", "--tar", "-", "--seed", r->seed, r->quick ? "--minutes" : NULL,
                     "3",     NULL};
    /* the paper's protocol, explicitly: throughput by the top 10% too */
    char *iargs[] = {"ingest", "--throughput-agg",          "top10", "-",
                     "-o",     dpath(r, "recon_sweep.csv"), NULL};
    fflush(NULL);
    pid_t ps = spawn(r, -1, a[1], "synth", sargs);
    pid_t pi = spawn(r, b[0], -1, "ingest", iargs);
    close(a[1]);
    close(b[0]);
    signal(SIGPIPE, SIG_IGN);
    static char buf[1 << 20];
    double expect = 3.18e9 * (r->quick ? 3.0 / 30.0 : 1.0), bytes = 0, last = 0;
    for (;;) {
        ssize_t k = read(a[0], buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        for (ssize_t off = 0; off < k;) {
            ssize_t w = write(b[1], buf + off, (size_t)(k - off));
            if (w <= 0) goto done;
            off += w;
        }
        bytes += (double)k;
        if (r->tty && bytes - last > 64e6) {
            last = bytes;
            int fill = (int)(30 * fmin(1, bytes / expect));
            fprintf(stderr, "\r          [%.*s%*s] %.2f GB", fill, "##############################",
                    30 - fill, "", bytes / 1e9);
        }
    }
done:
    close(b[1]);
    close(a[0]);
    if (r->tty) fprintf(stderr, "\r%60s\r", "");
    int s1, s2;
    waitpid(ps, &s1, 0);
    waitpid(pi, &s2, 0);
    if (!WIFEXITED(s1) || WEXITSTATUS(s1) || !WIFEXITED(s2) || WEXITSTATUS(s2)) {
        fprintf(stderr, "pfi reproduce: synth | ingest failed; see %s\n", r->logpath);
        return -1;
    }
    stage(r, "  %.2f GB of dcgm-exporter text and step logs streamed through ingest", bytes / 1e9);
    return 0;
}

static int same_file(const char *a, const char *b)
{
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    int same = f && g;
    while (same) {
        int x = fgetc(f), y = fgetc(g);
        if (x != y) same = 0;
        if (x == EOF || y == EOF) break;
    }
    if (f) fclose(f);
    if (g) fclose(g);
    return same;
}

static int mkdir_p(const char *d)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", d);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* the reconstruction: streamed through ingest, indexed, its statistics,
 * ablation and predictors (*same: synth -> ingest equals synth --summary) */
static int stages_recon(repro *r, const char *mins, char zeus[4][4096], int *same)
{
    stage(r, "reconstruction (calibrated to published tables): pfi synth --tar - | pfi ingest -");
    if (stream_reconstruction(r)) return -1;
    if (run(r, "synth", "--summary", "--seed", r->seed, "--minutes", mins, "-o",
            dpath(r, "recon_summary.csv"), NULL))
        return -1;
    *same = same_file(dpath(r, "recon_summary.csv"), dpath(r, "recon_sweep.csv"));
    stage(r, "  synth -> ingest %s synth --summary", *same ? "equals" : "DIFFERS FROM");
    stage(r, "index: Eq. 1 with CIs, Appendix A, robust PFI; 4-cap sub-grid; Zeus");
    if (run(r, "index", "--seed", r->seed, "--ratios", dpath(r, "recon_ratios.csv"), "-o",
            dpath(r, "recon_index.csv"), dpath(r, "recon_sweep.csv"), NULL) ||
        run(r, "index", "--no-ci", "--caps", "200,500,600,700", "-o",
            dpath(r, "recon_index_4caps.csv"), dpath(r, "recon_sweep.csv"), NULL) ||
        run(r, "index", "--seed", r->seed, "--ratios", dpath(r, "zeus_ratios.csv"), "-o",
            dpath(r, "zeus_index.csv"), zeus[0], zeus[1], zeus[2], zeus[3], NULL))
        return -1;
    stage(r, "statistics (tables 10-13) and the predictor ablation (table 3)");
    if (run(r, "stats", "--only", "split=headline", "-o", dpath(r, "recon_stats.csv"),
            dpath(r, "recon_sweep.csv"), NULL) ||
        run(r, "fit", "--ablation", "--train-where", "split=headline", "-o",
            dpath(r, "recon_ablation.csv"), dpath(r, "recon_sweep.csv"), NULL))
        return -1;
    stage(
        r,
        "predictors: fit on the headline groups, evaluate on validation and H100; curve predictor");
    if (run(r, "fit", "--train-where", "split=headline", "--eval-where", "split=validation",
            "--eval-where", "split=h100", "--model", dpath(r, "recon_model.json"), "-o",
            dpath(r, "recon_fit.csv"), dpath(r, "recon_sweep.csv"), NULL) ||
        run(r, "predict", dpath(r, "recon_model.json"), dpath(r, "recon_sweep.csv"), "-o",
            dpath(r, "recon_predict.csv"), NULL) ||
        run(r, "fit", "--curve", "--train-where", "split=headline", "--eval-where",
            "split=validation", "--eval-where", "split=h100", "--model",
            dpath(r, "recon_curve_model.json"), "-o", dpath(r, "recon_curve_fit.csv"),
            dpath(r, "recon_sweep.csv"), NULL))
        return -1;
    return 0;
}

/* the allocation simulations on the reconstruction */
static int stages_simulate(repro *r, const char *wl, const char *fleet, const char *mins)
{
    stage(
        r,
        "allocation simulation: %s workloads x 100 jobs x 41 cuts, both scenarios, every strategy",
        wl);
    if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--pool-where", "split=headline",
            "--loop-csv", dpath(r, "recon_closed_loop.csv"), "--score-csv",
            dpath(r, "recon_scores.csv"), "-o", dpath(r, "recon_simulate.csv"),
            dpath(r, "recon_sweep.csv"), NULL))
        return -1;
    stage(r, "  ... pfi-op with the PFI at the operating point from the measured curves");
    if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--pool-where", "split=headline",
            "--pfi", "measured", "--strategies", "oracle,equal,pfi-op", "--score-csv",
            dpath(r, "recon_scores_pfi_op_true.csv"), "-o",
            dpath(r, "recon_simulate_pfi_op_true.csv"), dpath(r, "recon_sweep.csv"), NULL))
        return -1;
    stage(r, "  ... with SLA tiers (Flex 0/1/2/3 = 10/30/30/30%%)");
    if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--pool-where", "split=headline",
            "--sla-mix", "0.1,0.3,0.3,0.3", "--score-csv", dpath(r, "recon_scores_sla.csv"), "-o",
            dpath(r, "recon_simulate_sla.csv"), dpath(r, "recon_sweep.csv"), NULL))
        return -1;
    if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--pool-where", "split=headline",
            "--sla-mix", "0.1,0.3,0.3,0.3", "--no-profile", "--strategies",
            "oracle,equal,safe-online", "--score-csv", dpath(r, "recon_scores_sla_noprofile.csv"),
            "-o", dpath(r, "recon_simulate_sla_noprofile.csv"), dpath(r, "recon_sweep.csv"), NULL))
        return -1;
    stage(r, "  ... out of sample: validation + H100 jobs, and a fresh fleet of %s jobs", fleet);
    if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--model",
            dpath(r, "recon_model.json"), "--curve-model", dpath(r, "recon_curve_model.json"),
            "--pool-where", "split=validation,h100", "--strategies", "all", "--score-csv",
            dpath(r, "recon_scores_oos.csv"), "-o", dpath(r, "recon_simulate_oos.csv"),
            dpath(r, "recon_sweep.csv"), NULL) ||
        run(r, "synth", "--summary", "--fleet", fleet, "--seed", r->seed, "--minutes", mins, "-o",
            dpath(r, "fleet_sweep.csv"), NULL) ||
        run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--model",
            dpath(r, "recon_model.json"), "--curve-model", dpath(r, "recon_curve_model.json"),
            "--strategies", "oracle,equal,pfi-aware,curve-aware", "-o",
            dpath(r, "fleet_simulate.csv"), dpath(r, "fleet_sweep.csv"), NULL))
        return -1;
    return 0;
}

/* the Zeus traces: predictors and a normalized allocation */
static int stages_zeus(repro *r, const char *wl, char zeus[4][4096])
{
    stage(r, "Zeus (real traces): predictor on A40 + V100, held out P100 + RTX 6000; normalized "
             "allocation to a 30%% cut (deeper cuts fall below the lowest caps for most draws)");
    if (run(r, "fit", "--target", "robust", "--features", "power_frac", "--cluster-by", "dataset",
            "--train-where", "gpu_model=A40,V100", "--eval-where", "gpu_model=P100", "--eval-where",
            "gpu_model=RTX6000", "--model", dpath(r, "zeus_model.json"), "-o",
            dpath(r, "zeus_fit.csv"), zeus[0], zeus[1], zeus[2], zeus[3], NULL) ||
        run(r, "fit", "--curve", "--features", "power_frac", "--cluster-by", "dataset",
            "--train-where", "gpu_model=A40,V100", "--eval-where", "gpu_model=P100", "--eval-where",
            "gpu_model=RTX6000", "--model", dpath(r, "zeus_curve_model.json"), "-o",
            dpath(r, "zeus_curve_fit.csv"), zeus[0], zeus[1], zeus[2], zeus[3], NULL) ||
        run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--objective", "normalized",
            "--scenario", "random", "--cut-max", "0.3", "--model", dpath(r, "zeus_model.json"),
            "--curve-model", dpath(r, "zeus_curve_model.json"), "--pool-where",
            "gpu_model=P100,RTX6000", "--strategies",
            "oracle,equal,pfi-aware,curve-aware,closed-loop,safe-online,pfi-op", "--score-csv",
            dpath(r, "zeus_scores.csv"), "-o", dpath(r, "zeus_simulate.csv"), zeus[0], zeus[1],
            zeus[2], zeus[3], NULL))
        return -1;
    /* safe-online and pfi-op beside the others: A40 + V100 (where safe-online's
     * defaults were chosen), the held-out pair with the default tier mix, and
     * pfi-op from the measured curves (fitting nothing) */
    stage(r, "  ... safe-online and pfi-op: A40 + V100 (development), held out with SLA tiers, "
             "pfi-op from the measured curves");
    if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--objective", "normalized",
            "--scenario", "random", "--cut-max", "0.3", "--model", dpath(r, "zeus_model.json"),
            "--curve-model", dpath(r, "zeus_curve_model.json"), "--pool-where",
            "gpu_model=A40,V100", "--strategies",
            "oracle,equal,pfi-aware,curve-aware,closed-loop,safe-online,pfi-op", "--score-csv",
            dpath(r, "zeus_dev_scores.csv"), "-o", dpath(r, "zeus_dev_simulate.csv"), zeus[0],
            zeus[1], zeus[2], zeus[3], NULL) ||
        run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--objective", "normalized",
            "--scenario", "random", "--cut-max", "0.3", "--model", dpath(r, "zeus_model.json"),
            "--curve-model", dpath(r, "zeus_curve_model.json"), "--pool-where",
            "gpu_model=P100,RTX6000", "--sla-mix", "0.1,0.3,0.3,0.3", "--strategies",
            "oracle,equal,pfi-aware,curve-aware,closed-loop,safe-online,pfi-op", "--score-csv",
            dpath(r, "zeus_scores_sla.csv"), "-o", dpath(r, "zeus_simulate_sla.csv"), zeus[0],
            zeus[1], zeus[2], zeus[3], NULL))
        return -1;
    /* profiles and memory (issue 31): the held-out pair without profiles,
     * with profiles and 3 earlier events, and with tiers without profiles */
    stage(r, "  ... safe-online without profiles, with 3 earlier events, tiers without profiles");
    /* variant v: its two options, its tier mix (0,0,0,0: none), its scores */
    static const char *const pv[3][4] = {
        {"--no-profile", "--memory-events=0", "0,0,0,0", "zeus_scores_noprofile.csv"},
        {"--memory-events=3", "--profile-points=12", "0,0,0,0", "zeus_scores_memory3.csv"},
        {"--no-profile", "--memory-events=0", "0.1,0.3,0.3,0.3", "zeus_scores_sla_noprofile.csv"}};
    for (int v = 0; v < 3; v++)
        if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--objective", "normalized",
                "--scenario", "random", "--cut-max", "0.3", "--pool-where",
                "gpu_model=P100,RTX6000", "--strategies", "oracle,equal,safe-online", pv[v][0],
                pv[v][1], "--sla-mix", pv[v][2], "--score-csv", dpath(r, pv[v][3]), "-o",
                dpath(r, "zeus_simulate_variant.csv"), zeus[0], zeus[1], zeus[2], zeus[3], NULL))
            return -1;
    for (int dev = 0; dev < 2; dev++)
        if (run(r, "simulate", "--workloads", wl, "--seed", r->seed, "--objective", "normalized",
                "--scenario", "random", "--cut-max", "0.3", "--pfi", "measured", "--pool-where",
                dev ? "gpu_model=A40,V100" : "gpu_model=P100,RTX6000", "--strategies",
                "oracle,equal,pfi-op", "--score-csv",
                dpath(r, dev ? "zeus_dev_scores_pfi_op_true.csv" : "zeus_scores_pfi_op_true.csv"),
                "-o",
                dpath(r,
                      dev ? "zeus_dev_simulate_pfi_op_true.csv" : "zeus_simulate_pfi_op_true.csv"),
                zeus[0], zeus[1], zeus[2], zeus[3], NULL))
            return -1;
    return 0;
}

/* every stage, then the summary, figures and pages */
static int reproduce_all(const char *cmd, repro *r, const char *datadir, char zeus[4][4096])
{
    const char *wl = r->quick ? "30" : "500", *fleet = r->quick ? "40" : "200";
    const char *mins = r->quick ? "3" : "30";
    int same = 0;
    char argline[512];
    snprintf(argline, sizeof argline, "pfi reproduce --out %s%s --seed %s", r->out,
             r->quick ? " --quick" : "", r->seed);
    if (stages_recon(r, mins, zeus, &same) || stages_simulate(r, wl, fleet, mins) ||
        stages_zeus(r, wl, zeus))
        return -1;
    stage(r, "summary, figures (PLplot), report pages");
    pfi_summary S;
    pfi_error err;
    char sp[4200];
    snprintf(sp, sizeof sp, "%s/summary.csv", r->out);
    if (pfi_report_summary(r->out, datadir, &S, &err) || pfi_summary_save(&S, sp, &err) ||
        pfi_report_figures(r->out, &err) ||
        pfi_report_pages(r->out, &S, argline, pfi_wall_monotonic() - r->t0, atoi(wl), &err)) {
        cli_error(cmd, "%s", err.msg);
        return -1;
    }
    stage(r, "done");
    fflush(stderr);
    pfi_summary_print(&S, stdout);
    pfi_summary_dispose(&S);
    printf("\nround trip synth -> ingest == synth --summary: %s\n",
           same ? "identical" : "DIFFERENT");
    printf("report: %s/index.html (and report.md, summary.csv, figures, data/); log: %s\n", r->out,
           r->logpath);
    return 0;
}

int cmd_reproduce(int argc, char **argv)
{
    const char *cmd = "reproduce";
    reproduce_args a = {"report", NULL, 0, 1};
    int first, rc = cli_parse(&cmd_reproduce_opts, &a, argc, argv, &first);
    if (rc >= 0) return rc;
    if (first < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[first]);
    repro r;
    memset(&r, 0, sizeof r);
    r.out = a.out;
    r.data = a.data;
    r.quick = a.quick;
    snprintf(r.seed, sizeof r.seed, "%.0f", a.seed);
    char probe[4096], zeus[4][4096];
    if (cli_data_path(cmd, r.data, "paper/table6_h200_pfi.csv", probe, sizeof probe))
        return CLI_FAIL;
    static const char *const zf[4] = {"summary_power_a40.csv", "summary_power_v100.csv",
                                      "summary_power_p100.csv", "summary_power_rtx6000.csv"};
    for (int k = 0; k < 4; k++) {
        char rel[64];
        snprintf(rel, sizeof rel, "zeus/%s", zf[k]);
        if (cli_data_path(cmd, r.data, rel, zeus[k], sizeof zeus[k])) return CLI_FAIL;
    }
    char datadir[4096];
    snprintf(datadir, sizeof datadir, "%s", probe);
    *strrchr(datadir, '/') = '\0';
    *strrchr(datadir, '/') = '\0'; /* .../data */
    snprintf(r.ddir, sizeof r.ddir, "%s/data", r.out);
    if (mkdir_p(r.ddir)) {
        cli_error(cmd, "%s: cannot create: %s", r.ddir, strerror(errno));
        return CLI_FAIL;
    }
    snprintf(r.logpath, sizeof r.logpath, "%s/reproduce.log", r.out);
    r.logf = fopen(r.logpath, "w");
    if (!r.logf) {
        cli_error(cmd, "%s: cannot create", r.logpath);
        return CLI_FAIL;
    }
    r.tty = isatty(2);
    r.t0 = pfi_wall_monotonic();
    int ok = reproduce_all(cmd, &r, datadir, zeus) == 0;
    fclose(r.logf);
    return ok ? CLI_OK : CLI_FAIL;
}
