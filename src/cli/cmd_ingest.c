/* cmd_ingest.c — `pfi ingest`: raw telemetry + step logs -> sweep table. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pfi/ingest.h"
#include "telemetry.h"

typedef struct ingest_args {
    cli_out out;
    pfi_ingest_opts o;
    pfi_opt_list roots;
} ingest_args;

static int opt_agg(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    pfi_agg_mode m;
    if (pfi_agg_mode_parse(arg, &m) || m == PFI_AGG_RATE) /* rate: throughput only */
        return pfi_opts_bad_choice(ctx, o, arg), -1;
    *(pfi_agg_mode *)value = m;
    return 0;
}

static int opt_tput_agg(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    if (pfi_agg_mode_parse(arg, value)) return pfi_opts_bad_choice(ctx, o, arg), -1;
    return 0;
}

static int opt_tz(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    if (pfi_parse_tz_offset(arg, value))
        return pfi_opts_error(ctx, "--tz: '%s' is not UTC or +HH:MM", arg), -1;
    return 0;
}

#define OPT_T ingest_args
static const pfi_opt ingest_options[] = {
    OPT_DIRNAME_LIST(0, "root", roots, "DIR",
                     "ingest every directory below DIR holding a run.json (repeatable)"),
    OPT_DOUBLE(0, "interval", o.proto.interval_s, "S", 0.01, 3600,
               "scrape interval in seconds (default 5, or run.json's)"),
    OPT_DOUBLE_SCALED(0, "fb-threshold-gib", o.proto.fb_warmup_mib, "G", 0, 1e6, 1024,
                      "warmup while framebuffer used per GPU < G GiB (default 10)"),
    OPT_DOUBLE(0, "util-threshold", o.proto.util_train_pct, "PCT", 0, 100,
               "training: every GPU above PCT% utilization (default 50) ..."),
    OPT_INTEGER(0, "sustain", o.proto.sustain_scrapes, "N", 1, 1000,
                "... for N consecutive scrapes (default 3)"),
    OPT_CALLBACK_CHOICES(0, "agg", o.proto.agg, "top10|mean|median",
                         "run-level aggregation (default top10)", opt_agg),
    OPT_DOUBLE(0, "top-frac", o.proto.top_frac, "F", 1e-6, 1,
               "fraction kept by top10 (default 0.10)"),
    OPT_CALLBACK_CHOICES(0, "throughput-agg", o.proto.tput_agg, "rate|top10|mean|median",
                         "tokens/s: rate (default; the loop's tokens over the wall time they "
                         "took), or as --agg",
                         opt_tput_agg),
    OPT_SET_INT(0, "no-cap-check", o.proto.cap_check, 0,
                "do not require the enforced limit to match cap_w"),
    OPT_DOUBLE(0, "cap-tolerance", o.proto.cap_tol_w, "W", 0, 1e5,
               "allowed |enforced - cap_w| (default 1)"),
    OPT_CALLBACK(0, "tz", o.tz_offset_min, "OFFSET",
                 "nvidia-smi timestamps' zone as +HH:MM (default UTC)", opt_tz),
    OPT_SIZE_SCALED(0, "max-query-range-mb", o.max_query_range_bytes, "N", 0.001, 65536, 1048576,
                    "size cap of one query_range JSON file (default 256)"),
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_ingest_opts = CLI_OPTS(
    ingest,
    .usage = "pfi ingest [options] RUNDIR...\n"
             "pfi ingest [options] --root DIR\n"
             "pfi ingest [options] -            (a tar stream of run directories on stdin)\n"
             "pfi ingest [options] ARCHIVE.tar",
    .description = "Turn run directories (run.json + dcgm-exporter / Prometheus / nvidia-smi\n"
                   "telemetry + step log; docs/formats.md) into a sweep table, following the\n"
                   "paper's protocol: scrapes aligned by interval, warmup/startup/training/tail\n"
                   "phases, the mean of the top 10% of training samples per telemetry quantity,\n"
                   "the training loop's own throughput (its tokens over the wall time they took;\n"
                   "--throughput-agg top10 for the paper's rule), and a check of the enforced\n"
                   "power limit against the manifest's cap.\n",
    .options = ingest_options, .operands = PFI_OPERANDS_FILES);

static int ingest_run(const char *cmd, ingest_args *a, char **paths, int npaths)
{
    if (npaths < 1 && a->roots.n == 0)
        return cli_usage_error(cmd, "no run directory, --root or '-' given");
    pfi_log log = cli_log(cmd);
    pfi_ingest *ing = pfi_ingest_new(&a->o, &log);
    pfi_error err;
    pfi_status st = ing ? PFI_OK : pfi_errorf(&err, PFI_ENOMEM, "out of memory");
    for (int i = 0; i < a->roots.n && !st; i++) st = pfi_ingest_root(ing, a->roots.v[i], &err);
    for (int i = 0; i < npaths && !st; i++) {
        struct stat sb;
        if (strcmp(paths[i], "-") == 0 || (stat(paths[i], &sb) == 0 && S_ISREG(sb.st_mode))) {
            pfi_reader r;
            st = pfi_reader_open(&r, paths[i], 0, &err);
            if (!st) st = pfi_ingest_tar(ing, &r, &err);
            pfi_reader_close(&r);
        } else {
            st = pfi_ingest_dir(ing, paths[i], &err);
        }
    }
    pfi_table *t = NULL;
    if (!st) st = pfi_ingest_table(ing, &t, &err);
    int rc;
    if (st) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
    } else {
        rc = cli_save_table(cmd, t, &a->out);
    }
    pfi_table_free(t);
    pfi_ingest_free(ing);
    return rc;
}

int cmd_ingest(int argc, char **argv)
{
    ingest_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    pfi_ingest_opts_default(&a.o);
    int first, rc = cli_parse(&cmd_ingest_opts, &a, argc, argv, &first);
    if (rc < 0) rc = ingest_run("ingest", &a, argv + first, argc - first);
    pfi_opts_dispose(&cmd_ingest_opts, &a);
    return rc;
}
