/* cmd_synth.c — `pfi synth`: the reconstruction of the paper's H200/H100
 * runs (a reconstruction calibrated to published tables, not the paper's
 * raw data) as run directories, a tar stream, or a sweep table. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "cli.h"
#include "recon_io.h"
#include "synth_write.h"
#include "tar.h"

typedef struct synth_args {
    cli_out out;
    pfi_synth_opts so;
    const char *split, *data, *tar;
    pfi_opt_list groups;
    int summary;
    long fleet;
    uint64_t fseed;
} synth_args;

#define OPT_T synth_args
static const pfi_opt synth_options[] = {
    OPT_U64(0, "seed", so.seed, "N", 0, 1.8e19,
            "noise seed (default 1: the seed the calibration used)"),
    OPT_DOUBLE_SCALED(0, "minutes", so.train_s, "M", 1, 1440, 60,
                      "training minutes per run (default 30; fewer for quick tests)"),
    OPT_STRING_OF(0, "split", split, "headline|validation|h100", "only groups of this split"),
    OPT_LIST(0, "group", groups, "NAME", "only this group (repeatable)"),
    OPT_LONG(0, "fleet", fleet, "N", 1, 1e6,
             "instead, N new jobs drawn from the calibrated families"),
    OPT_U64(0, "fleet-seed", fseed, "N", 0, 1.8e19, "seed of the fleet draw (default 7)"),
    OPT_DIRNAME(0, "data", data, "DIR", "where reconstruction/spec.csv and params.csv are"),
    OPT_FILENAME(0, "tar", tar, "FILE|-",
                 "write a tar stream of run directories to FILE (- : standard output)"),
    OPT_BOOLEAN(0, "summary", summary, "write the sweep table, straight from the model"),
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_synth_opts = CLI_OPTS(
    synth,
    .usage = "pfi synth [options] OUTDIR          run directories under OUTDIR\n"
             "pfi synth [options] --tar FILE|-    a tar stream of run directories\n"
             "pfi synth [options] --summary       the sweep table, straight from the model",
    .description =
        "The RECONSTRUCTION of the paper's 189 H200/H100 runs (25 headline, 4\n"
        "validation and 6 H100 groups): a physical model calibrated to the published\n"
        "tables, not the paper's raw data (which is not public). Each run: run.json,\n"
        "dcgm-exporter text at 5 s scrapes for every GPU, and a step log, over warmup,\n"
        "startup, 30 minutes of training (evaluation at ~10 min, checkpoint at ~20 min)\n"
        "and a tail. Deterministic for a seed. `--summary` gives the same numbers as\n"
        "synth -> ingest. Every row carries split = headline | validation | h100 (or\n"
        "fleet) and the metadata provenance = reconstruction calibrated to published tables.\n",
    .footer = "The output options apply to --summary.\n", .options = synth_options,
    .operands = PFI_OPERANDS_FILES);

static int selected(const pfi_recon_group *g, const char *split, char **groups, int ngroups)
{
    if (split && strcmp(g->split, split) != 0) return 0;
    if (!ngroups) return 1;
    for (int i = 0; i < ngroups; i++)
        if (strcmp(groups[i], g->group) == 0) return 1;
    return 0;
}

/* the selected groups of use: run directories (or a tar stream), or summaries */
static pfi_status synth_groups(const synth_args *a, const pfi_recon *use, const char *outdir,
                               FILE *tarf, pfi_run_summary ***sums, size_t *nsum, pfi_error *err)
{
    size_t cap = 0, nsel = 0;
    pfi_status st = PFI_OK;
    for (size_t i = 0; i < use->n && !st; i++) {
        const pfi_recon_group *g = &use->g[i];
        if (!selected(g, a->split, a->groups.v, a->groups.n)) continue;
        if (!g->calibrated) {
            st = pfi_errorf(err, PFI_EINVAL, "group %s (%s) has no calibrated parameters", g->group,
                            g->gpu_model);
            break;
        }
        nsel++;
        for (int k = 0; k < g->ncaps && !st; k++) {
            if (a->summary) {
                if (*nsum == cap) {
                    cap = cap ? 2 * cap : 256;
                    pfi_run_summary **p = realloc(*sums, cap * sizeof *p);
                    if (!p) {
                        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
                        break;
                    }
                    *sums = p;
                }
                (*sums)[*nsum] = calloc(1, sizeof ***sums);
                if (!(*sums)[*nsum]) {
                    st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
                    break;
                }
                st = pfi_synth_summary(g, k, &a->so, (*sums)[*nsum], err);
                (*nsum)++;
            } else {
                st = pfi_synth_write_run(g, k, &a->so, outdir, tarf, NULL, err);
            }
        }
    }
    if (!st && nsel == 0) st = pfi_errorf(err, PFI_ENOTFOUND, "no group matches the selection");
    return st;
}

/* write what was asked for from the reconstruction (or fleet) use */
static int synth_write(const char *cmd, const synth_args *a, const pfi_recon *use,
                       const char *outdir)
{
    pfi_error err;
    pfi_outfile tf = {0};
    if (a->tar && pfi_out_open(&tf, a->tar, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        return CLI_FAIL;
    }
    pfi_run_summary **sums = NULL;
    size_t nsum = 0;
    int rc = CLI_OK;
    pfi_status st = synth_groups(a, use, outdir, a->tar ? tf.f : NULL, &sums, &nsum, &err);
    if (!st && a->tar) st = pfi_tar_write_end(tf.f, &err);
    if (a->tar) {
        if (st) pfi_out_abort(&tf);
        else st = pfi_out_commit(&tf, &err);
    }
    if (!st && a->summary) {
        pfi_table *t = NULL;
        st = pfi_summaries_table((const pfi_run_summary *const *)sums, nsum, &t, &err);
        if (!st) rc = cli_save_table(cmd, t, &a->out);
        pfi_table_free(t);
    }
    if (st) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
    }
    for (size_t i = 0; i < nsum; i++) {
        if (sums[i]) pfi_run_summary_dispose(sums[i]);
        free(sums[i]);
    }
    free(sums);
    return rc;
}

static int synth_run(const char *cmd, const synth_args *a, const char *outdir)
{
    if ((outdir != NULL) + (a->tar != NULL) + a->summary != 1)
        return cli_usage_error(cmd, "give exactly one of OUTDIR, --tar FILE or --summary");
    if (!a->summary && a->tar && strcmp(a->tar, "-") == 0 && isatty(STDOUT_FILENO))
        return cli_usage_error(cmd, "refusing to write a tar stream to a terminal");
    char spec[4096], params[4096];
    if (cli_data_path(cmd, a->data, "reconstruction/spec.csv", spec, sizeof spec) ||
        cli_data_path(cmd, a->data, "reconstruction/params.csv", params, sizeof params))
        return CLI_FAIL;
    pfi_recon r, fl = {0};
    pfi_error err;
    if (pfi_recon_load(spec, params, &r, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        return CLI_FAIL;
    }
    if (a->fleet && pfi_recon_draw_fleet(&r, (size_t)a->fleet, a->fseed, &fl, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        pfi_recon_dispose(&r);
        return CLI_FAIL;
    }
    int rc = synth_write(cmd, a, a->fleet ? &fl : &r, outdir);
    pfi_recon_dispose(&fl);
    pfi_recon_dispose(&r);
    return rc;
}

int cmd_synth(int argc, char **argv)
{
    synth_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    pfi_synth_opts_default(&a.so);
    a.fseed = 7;
    int first, rc = cli_parse(&cmd_synth_opts, &a, argc, argv, &first);
    if (rc < 0) rc = synth_run("synth", &a, first < argc ? argv[first] : NULL);
    pfi_opts_dispose(&cmd_synth_opts, &a);
    return rc;
}
