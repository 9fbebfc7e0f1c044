/* cmd_ingest.c — `pfi ingest`: raw telemetry + step logs -> sweep table. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pfi/ingest.h"
#include "telemetry.h"

const char cmd_ingest_usage[] =
    "usage: pfi ingest [options] RUNDIR...\n"
    "       pfi ingest [options] --root DIR\n"
    "       pfi ingest [options] -            (a tar stream of run directories on stdin)\n"
    "       pfi ingest [options] ARCHIVE.tar\n"
    "\n"
    "Turn run directories (run.json + dcgm-exporter / Prometheus / nvidia-smi\n"
    "telemetry + step log; docs/formats.md) into a sweep table, following the\n"
    "paper's protocol: scrapes aligned by interval, warmup/startup/training/tail\n"
    "phases, the mean of the top 10% of training samples per quantity, and a\n"
    "check of the enforced power limit against the manifest's cap.\n"
    "\n"
    "options:\n"
    "  --root DIR             ingest every directory below DIR holding a run.json\n"
    "  --interval S           scrape interval in seconds (default 5, or run.json's)\n"
    "  --fb-threshold-gib G   warmup while framebuffer used per GPU < G GiB (default 10)\n"
    "  --util-threshold PCT   training: every GPU above PCT%% utilization (default 50)\n"
    "  --sustain N            ... for N consecutive scrapes (default 3)\n"
    "  --agg top10|mean|median  run-level aggregation (default top10)\n"
    "  --top-frac F           fraction kept by top10 (default 0.10)\n"
    "  --no-cap-check         do not require the enforced limit to match cap_w\n"
    "  --cap-tolerance W      allowed |enforced - cap_w| (default 1)\n"
    "  --tz OFFSET            nvidia-smi timestamps' zone as +HH:MM (default UTC)\n"
    "  --max-query-range-mb N size cap of one query_range JSON file (default 256)\n"
    "  --format csv|json|table, --json, -o FILE\n";

int cmd_ingest(int argc, char **argv)
{
    const char *cmd = "ingest";
    enum { O_ROOT = 1, O_IV, O_FB, O_UTIL, O_SUS, O_AGG, O_TOP, O_NOCAP, O_CAPTOL, O_TZ, O_QRMAX };
    static const struct option lo[] = {{"root", required_argument, NULL, O_ROOT},
                                       {"interval", required_argument, NULL, O_IV},
                                       {"fb-threshold-gib", required_argument, NULL, O_FB},
                                       {"util-threshold", required_argument, NULL, O_UTIL},
                                       {"sustain", required_argument, NULL, O_SUS},
                                       {"agg", required_argument, NULL, O_AGG},
                                       {"top-frac", required_argument, NULL, O_TOP},
                                       {"no-cap-check", no_argument, NULL, O_NOCAP},
                                       {"cap-tolerance", required_argument, NULL, O_CAPTOL},
                                       {"tz", required_argument, NULL, O_TZ},
                                       {"max-query-range-mb", required_argument, NULL, O_QRMAX},
                                       CLI_COMMON_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    cli_out out;
    cli_out_init(&out);
    pfi_ingest_opts o;
    pfi_ingest_opts_default(&o);
    char **roots = calloc((size_t)argc + 1, sizeof *roots);
    int nroots = 0, c;
    double v;
    if (!roots) return CLI_FAIL;
    optind = 1;
    int rc = CLI_OK;
    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, lo, NULL)) != -1) {
        int h = cli_common_opt(cmd, c, optarg, &out);
        if (h < 0) { rc = CLI_USAGE; goto done; }
        if (h) continue;
        switch (c) {
        case 'h': rc = cli_help(cmd); goto done;
        case O_ROOT: roots[nroots++] = optarg; break;
        case O_IV:
            if (cli_parse_num(cmd, "--interval", optarg, 0.01, 3600, &v)) { rc = CLI_USAGE; goto done; }
            o.proto.interval_s = v;
            break;
        case O_FB:
            if (cli_parse_num(cmd, "--fb-threshold-gib", optarg, 0, 1e6, &v)) { rc = CLI_USAGE; goto done; }
            o.proto.fb_warmup_mib = v * 1024;
            break;
        case O_UTIL:
            if (cli_parse_num(cmd, "--util-threshold", optarg, 0, 100, &v)) { rc = CLI_USAGE; goto done; }
            o.proto.util_train_pct = v;
            break;
        case O_SUS:
            if (cli_parse_num(cmd, "--sustain", optarg, 1, 1000, &v)) { rc = CLI_USAGE; goto done; }
            o.proto.sustain_scrapes = (int)v;
            break;
        case O_AGG:
            if (pfi_agg_mode_parse(optarg, &o.proto.agg)) {
                rc = cli_usage_error(cmd, "--agg: '%s' is not top10, mean or median", optarg);
                goto done;
            }
            break;
        case O_TOP:
            if (cli_parse_num(cmd, "--top-frac", optarg, 1e-6, 1, &v)) { rc = CLI_USAGE; goto done; }
            o.proto.top_frac = v;
            break;
        case O_NOCAP: o.proto.cap_check = 0; break;
        case O_CAPTOL:
            if (cli_parse_num(cmd, "--cap-tolerance", optarg, 0, 1e5, &v)) { rc = CLI_USAGE; goto done; }
            o.proto.cap_tol_w = v;
            break;
        case O_TZ:
            if (pfi_parse_tz_offset(optarg, &o.tz_offset_min)) {
                rc = cli_usage_error(cmd, "--tz: '%s' is not UTC or +HH:MM", optarg);
                goto done;
            }
            break;
        case O_QRMAX:
            if (cli_parse_num(cmd, "--max-query-range-mb", optarg, 0.001, 65536, &v)) { rc = CLI_USAGE; goto done; }
            o.max_query_range_bytes = (size_t)(v * 1048576);
            break;
        default: rc = cli_bad_option(cmd, argv); goto done;
        }
    }
    if (optind >= argc && nroots == 0) {
        rc = cli_usage_error(cmd, "no run directory, --root or '-' given");
        goto done;
    }
    pfi_log log = cli_log(cmd);
    pfi_ingest *ing = pfi_ingest_new(&o, &log);
    pfi_error err;
    pfi_status st = ing ? PFI_OK : pfi_errorf(&err, PFI_ENOMEM, "out of memory");
    for (int i = 0; i < nroots && !st; i++) st = pfi_ingest_root(ing, roots[i], &err);
    for (int i = optind; i < argc && !st; i++) {
        struct stat sb;
        if (strcmp(argv[i], "-") == 0 || (stat(argv[i], &sb) == 0 && S_ISREG(sb.st_mode))) {
            pfi_reader r;
            st = pfi_reader_open(&r, argv[i], 0, &err);
            if (!st) st = pfi_ingest_tar(ing, &r, &err);
            pfi_reader_close(&r);
        } else {
            st = pfi_ingest_dir(ing, argv[i], &err);
        }
    }
    pfi_table *t = NULL;
    if (!st) st = pfi_ingest_table(ing, &t, &err);
    if (st) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
    } else {
        rc = cli_save_table(cmd, t, &out);
    }
    pfi_table_free(t);
    pfi_ingest_free(ing);
done:
    free(roots);
    return rc;
}
