/* cmd_synth.c — `pfi synth`: the reconstruction of the paper's H200/H100
 * runs (a reconstruction calibrated to published tables, not the paper's
 * raw data) as run directories, a tar stream, or a sweep table. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "recon_io.h"
#include "atomic.h"
#include "synth_write.h"
#include "tar.h"

const char cmd_synth_usage[] =
    "usage: pfi synth [options] OUTDIR          run directories under OUTDIR\n"
    "       pfi synth [options] --tar FILE|-    a tar stream of run directories\n"
    "       pfi synth [options] --summary       the sweep table, straight from the model\n"
    "\n"
    "The RECONSTRUCTION of the paper's 189 H200/H100 runs (25 headline, 4\n"
    "validation and 6 H100 groups): a physical model calibrated to the published\n"
    "tables, not the paper's raw data (which is not public). Each run: run.json,\n"
    "dcgm-exporter text at 5 s scrapes for every GPU, and a step log, over warmup,\n"
    "startup, 30 minutes of training (evaluation at ~10 min, checkpoint at ~20 min)\n"
    "and a tail. Deterministic for a seed. `--summary` gives the same numbers as\n"
    "synth -> ingest. Every row carries split = headline | validation | h100 (or\n"
    "fleet) and the metadata provenance = reconstruction calibrated to published tables.\n"
    "\n"
    "options:\n"
    "  --seed N         noise seed (default 1: the seed the calibration used)\n"
    "  --minutes M      training minutes per run (default 30; fewer for quick tests)\n"
    "  --split S        only groups of split S (headline, validation, h100)\n"
    "  --group NAME     only this group (repeatable)\n"
    "  --fleet N        instead, N new jobs drawn from the calibrated families\n"
    "  --fleet-seed N   seed of the fleet draw (default 7)\n"
    "  --data DIR       where reconstruction/spec.csv and params.csv are\n"
    "  --format csv|json|table, --json, -o FILE (for --summary)\n";

static int selected(const pfi_recon_group *g, const char *split, char **groups, int ngroups)
{
    if (split && strcmp(g->split, split) != 0) return 0;
    if (!ngroups) return 1;
    for (int i = 0; i < ngroups; i++)
        if (strcmp(groups[i], g->group) == 0) return 1;
    return 0;
}

int cmd_synth(int argc, char **argv)
{
    const char *cmd = "synth";
    enum { O_SEED = 1, O_MIN, O_SPLIT, O_GROUP, O_FLEET, O_FSEED, O_DATA, O_TAR, O_SUMMARY };
    static const struct option lo[] = {{"seed", required_argument, NULL, O_SEED},
                                       {"minutes", required_argument, NULL, O_MIN},
                                       {"split", required_argument, NULL, O_SPLIT},
                                       {"group", required_argument, NULL, O_GROUP},
                                       {"fleet", required_argument, NULL, O_FLEET},
                                       {"fleet-seed", required_argument, NULL, O_FSEED},
                                       {"data", required_argument, NULL, O_DATA},
                                       {"tar", required_argument, NULL, O_TAR},
                                       {"summary", no_argument, NULL, O_SUMMARY},
                                       CLI_COMMON_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    cli_out out;
    cli_out_init(&out);
    pfi_synth_opts so;
    pfi_synth_opts_default(&so);
    const char *split = NULL, *data = NULL, *tar = NULL;
    char **groups = calloc((size_t)argc + 1, sizeof *groups);
    int ngroups = 0, summary = 0, c, rc = CLI_OK;
    long fleet = 0;
    uint64_t fseed = 7;
    double v;
    if (!groups) return CLI_FAIL;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, lo, NULL)) != -1) {
        int h = cli_common_opt(cmd, c, optarg, &out);
        if (h < 0) { rc = CLI_USAGE; goto done; }
        if (h) continue;
        switch (c) {
        case 'h': rc = cli_help(cmd); goto done;
        case O_SEED:
            if (cli_parse_num(cmd, "--seed", optarg, 0, 1.8e19, &v)) { rc = CLI_USAGE; goto done; }
            so.seed = (uint64_t)v;
            break;
        case O_MIN:
            if (cli_parse_num(cmd, "--minutes", optarg, 1, 1440, &v)) { rc = CLI_USAGE; goto done; }
            so.train_s = v * 60;
            break;
        case O_SPLIT: split = optarg; break;
        case O_GROUP: groups[ngroups++] = optarg; break;
        case O_FLEET:
            if (cli_parse_num(cmd, "--fleet", optarg, 1, 1e6, &v)) { rc = CLI_USAGE; goto done; }
            fleet = (long)v;
            break;
        case O_FSEED:
            if (cli_parse_num(cmd, "--fleet-seed", optarg, 0, 1.8e19, &v)) { rc = CLI_USAGE; goto done; }
            fseed = (uint64_t)v;
            break;
        case O_DATA: data = optarg; break;
        case O_TAR: tar = optarg; break;
        case O_SUMMARY: summary = 1; break;
        default: rc = cli_bad_option(cmd, argv); goto done;
        }
    }
    const char *outdir = optind < argc ? argv[optind] : NULL;
    if ((outdir != NULL) + (tar != NULL) + summary != 1) {
        rc = cli_usage_error(cmd, "give exactly one of OUTDIR, --tar FILE or --summary");
        goto done;
    }
    if (!summary && tar && strcmp(tar, "-") == 0 && isatty(STDOUT_FILENO)) {
        rc = cli_usage_error(cmd, "refusing to write a tar stream to a terminal");
        goto done;
    }
    char spec[4096], params[4096];
    if (cli_data_path(cmd, data, "reconstruction/spec.csv", spec, sizeof spec) ||
        cli_data_path(cmd, data, "reconstruction/params.csv", params, sizeof params)) {
        rc = CLI_FAIL;
        goto done;
    }
    pfi_recon r, fl = {0};
    pfi_error err;
    if (pfi_recon_load(spec, params, &r, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
        goto done;
    }
    pfi_recon *use = &r;
    if (fleet) {
        if (pfi_recon_draw_fleet(&r, (size_t)fleet, fseed, &fl, &err) != PFI_OK) {
            cli_error(cmd, "%s", err.msg);
            pfi_recon_free(&r);
            rc = CLI_FAIL;
            goto done;
        }
        use = &fl;
    }
    pfi_outfile tf = {0};
    if (tar && pfi_out_open(&tf, tar, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
        goto free_all;
    }
    pfi_run_summary **sums = NULL;
    size_t nsum = 0, cap = 0, nsel = 0;
    pfi_status st = PFI_OK;
    for (size_t i = 0; i < use->n && !st; i++) {
        const pfi_recon_group *g = &use->g[i];
        if (!selected(g, split, groups, ngroups)) continue;
        if (!g->calibrated) {
            st = pfi_errorf(&err, PFI_EINVAL, "group %s (%s) has no calibrated parameters", g->group, g->gpu_model);
            break;
        }
        nsel++;
        for (int k = 0; k < g->ncaps && !st; k++) {
            if (summary) {
                if (nsum == cap) {
                    cap = cap ? 2 * cap : 256;
                    pfi_run_summary **p = realloc(sums, cap * sizeof *p);
                    if (!p) { st = pfi_errorf(&err, PFI_ENOMEM, "out of memory"); break; }
                    sums = p;
                }
                sums[nsum] = calloc(1, sizeof **sums);
                if (!sums[nsum]) { st = pfi_errorf(&err, PFI_ENOMEM, "out of memory"); break; }
                st = pfi_synth_summary(g, k, &so, sums[nsum], &err);
                nsum++;
            } else {
                st = pfi_synth_write_run(g, k, &so, outdir, tar ? tf.f : NULL, NULL, &err);
            }
        }
    }
    if (!st && nsel == 0) st = pfi_errorf(&err, PFI_ENOTFOUND, "no group matches the selection");
    if (!st && tar) st = pfi_tar_write_end(tf.f, &err);
    if (tar) {
        if (st) pfi_out_abort(&tf);
        else st = pfi_out_commit(&tf, &err);
    }
    if (!st && summary) {
        pfi_table *t = NULL;
        st = pfi_summaries_table((const pfi_run_summary *const *)sums, nsum, &t, &err);
        if (!st) rc = cli_save_table(cmd, t, &out);
        pfi_table_free(t);
    }
    if (st) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
    }
    for (size_t i = 0; i < nsum; i++) {
        if (sums[i]) pfi_run_summary_free(sums[i]);
        free(sums[i]);
    }
    free(sums);
free_all:
    pfi_recon_free(&fl);
    pfi_recon_free(&r);
done:
    free(groups);
    return rc;
}
