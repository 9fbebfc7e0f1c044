/* cmd_index.c — `pfi index`: the PFI of every sweep group in one or more
 * sweep tables (or Zeus traces). Output columns are fixed and documented in
 * docs/formats.md; per-cap ratios go to a separate long-format file. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "num.h"
#include "pfi/groups.h"
#include "pfi/index.h"

static const char *const cols_all[] = {"gpu_model",
                                       "group",
                                       "arch",
                                       "task",
                                       "model",
                                       "split",
                                       "gpus",
                                       "n_runs",
                                       "n_caps",
                                       "cap_max_w",
                                       "tokens_per_s_max",
                                       "power_w_max",
                                       "pfi",
                                       "n_used",
                                       "n_excluded",
                                       "pfi_ci_lo",
                                       "pfi_ci_hi",
                                       "area",
                                       "elasticity_a",
                                       "elasticity_1_minus_a",
                                       "elasticity_inv_a",
                                       "elasticity_r2",
                                       "pfi_noise_aware",
                                       "n_noise_kept",
                                       "pfi_robust",
                                       "pfi_robust_lo",
                                       "pfi_robust_hi",
                                       "robust_n_fit",
                                       "verdict",
                                       "pfi_ci_verdict",
                                       "pfi_ci_reason"};
enum { NCOLS = sizeof cols_all / sizeof *cols_all };

static int noise_report(const char *cmd, const pfi_groups *gs, const cli_out *out)
{
    const pfi_curve **cv = malloc(gs->n * sizeof *cv);
    int *gpus = malloc(gs->n * sizeof *gpus);
    if (!cv || !gpus) {
        free(cv);
        free(gpus);
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    for (size_t i = 0; i < gs->n; i++) {
        cv[i] = &gs->g[i].curve;
        gpus[i] = gs->g[i].gpus;
    }
    pfi_noise_estimate ne;
    pfi_estimate_noise(cv, gpus, gs->n, 1.2, &ne);
    free(cv);
    free(gpus);
    const char *names[] = {"rel_sd_power", "rel_sd_tokens", "n_points", "n_groups"};
    pfi_celltype types[] = {PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_INT, PFI_CELL_INT};
    pfi_rows *r = pfi_rows_new(4, names, types);
    size_t row = pfi_rows_add(r);
    pfi_rows_num(r, row, 0, ne.rel_sd_power);
    pfi_rows_num(r, row, 1, ne.rel_sd_tokens);
    pfi_rows_int(r, row, 2, (long long)ne.n_points);
    pfi_rows_int(r, row, 3, (long long)ne.n_groups);
    int rc = cli_save_rows(cmd, r, out);
    pfi_rows_free(r);
    return rc;
}

static int write_ratios(const char *cmd, const pfi_index_row *rows, size_t n, const char *path,
                        pfi_format fmt)
{
    const char *names[] = {"gpu_model",  "group",       "cap_w", "power_w", "tokens_per_s",
                           "power_frac", "tokens_frac", "ratio", "used"};
    pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM,
                            PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM, PFI_CELL_INT};
    pfi_rows *r = pfi_rows_new(9, names, types);
    if (!r) return CLI_FAIL;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].skipped || rows[i].curve.n < 2) continue;
        const pfi_curve *c = &rows[i].curve;
        const pfi_point *u = pfi_curve_uncapped(c);
        for (size_t k = 0; k + 1 < c->n; k++) {
            const pfi_point *p = &c->pts[k];
            double q = NAN;
            int excl = pfi_point_ratio(p, u, &q);
            size_t row = pfi_rows_add(r);
            pfi_rows_text(r, row, 0, rows[i].g->gpu_model);
            pfi_rows_text(r, row, 1, rows[i].g->name);
            pfi_rows_num(r, row, 2, p->cap_w);
            pfi_rows_num(r, row, 3, p->power_w);
            pfi_rows_num(r, row, 4, p->tokens_per_s);
            pfi_rows_num(r, row, 5, p->power_w / u->power_w);
            pfi_rows_num(r, row, 6, p->tokens_per_s / u->tokens_per_s);
            pfi_rows_num(r, row, 7, excl ? NAN : q);
            pfi_rows_int(r, row, 8, !excl);
        }
    }
    pfi_error err;
    pfi_status st = pfi_rows_save(r, fmt == PFI_FMT_TABLE ? PFI_FMT_CSV : fmt, path, &err);
    pfi_rows_free(r);
    if (st) {
        cli_error(cmd, "%s", err.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

typedef struct index_args {
    cli_out out;
    pfi_index_opts io;
    double caps[64];
    int ncaps, est;
    const char *ratios, *gpu_model;
    pfi_opt_list where;
} index_args;

/* --sem-default, --robust-sem: P,T into a pfi_noise_opts's two defaults */
static int opt_pair(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    pfi_noise_opts *m = value;
    double v[2];
    int n = pfi_parse_positive_list(arg, v, 2);
    if (n != 2 || v[0] >= 1 || v[1] >= 1)
        return pfi_opts_error(ctx, "%s: expected two relative SEMs in (0,1) as P,T",
                              pfi_opts_name(ctx)),
               -1;
    m->rel_default_power = v[0];
    m->rel_default_tokens = v[1];
    return 0;
}

static int opt_caps(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    index_args *a = (index_args *)((char *)value - offsetof(index_args, caps));
    a->ncaps = pfi_parse_positive_list(arg, a->caps, 64);
    if (a->ncaps < 2)
        return pfi_opts_error(ctx,
                              "--caps: expected at least two positive caps, e.g. 200,500,600,700"),
               -1;
    return 0;
}

#define OPT_T index_args
static const pfi_opt index_options[] = {
    OPT_CALLBACK(0, "caps", caps, "C1,C2,...",
                 "recompute on this sub-grid of caps (W); groups lacking one are skipped with a "
                 "warning; the largest "
                 "listed cap is uncapped",
                 opt_caps),
    OPT_FILENAME(0, "ratios", ratios, "FILE", "write per-cap ratios (long format) to FILE"),
    OPT_SET_INT(0, "no-ci", io.want_ci, 0, "skip the confidence interval"),
    OPT_SIZE(0, "resamples", io.ci.resamples, "N", 1, 1e8, "Monte Carlo resamples (default 10000)"),
    OPT_U64(0, "seed", io.ci.seed, "N", 0, 1.8e19,
            "seed (default 1); intervals are reproducible per group"),
    OPT_CALLBACK(0, "sem-default", io.ci.noise, "P,T",
                 "relative SEM of power, throughput when a run has no SEM columns (default "
                 "0.0004,0.0005: the "
                 "paper's medians)",
                 opt_pair),
    OPT_DOUBLE(0, "noise-floor", io.ci.noise.rel_floor, "R", 0, 1,
               "relative SEM floor for the CI (default 0)"),
    OPT_DOUBLE(0, "robust-k", io.robust.k, "K", 0, 100,
               "standard errors a change must exceed (default 2)"),
    OPT_CALLBACK(0, "robust-sem", io.robust.noise, "P,T",
                 "relative SEM for the robust rule when absent (default 0.023,0.036: Zeus A40+V100 "
                 "between-run noise)",
                 opt_pair),
    OPT_BOOLEAN(0, "estimate-noise", est,
                "print the between-run noise estimated from runs whose cap does not bind, instead "
                "of the index"),
    CLI_OPT_GPU_MODEL,
    OPT_LIST(0, "where", where, "COL=VALUE", "keep only rows matching (repeatable)"),
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_index_opts = CLI_OPTS(
    index, .usage = "pfi index [options] TABLE...",
    .description =
        "For every sweep group (gpu_model, group) of the sweep tables (or Zeus power\n"
        "traces, recognised by their header), compute:\n"
        "  pfi            the paper's Eq. 1 (capped runs with T_i >= T_max excluded and counted)\n"
        "  pfi_ci_lo/hi   95% Monte Carlo CI of Eq. 1 from each run's SEM, with the caps\n"
        "                 of the estimate; empty with pfi_ci_verdict 'unstable' and a\n"
        "                 pfi_ci_reason when unbounded or not containing the estimate\n"
        "  area           Appendix A (a): area between normalized curve and diagonal\n"
        "  elasticity_*   Appendix A (b): fit log T = a log P + b; a, 1-a, 1/a\n"
        "  pfi_noise_aware, pfi_robust, verdict   pfi's robust estimate (not the paper's)\n",
    .footer = "Default format: table on a terminal, csv otherwise. Exit status 0 on success,\n"
              "1 on bad input (one-line error naming file, line and column), 2 on usage errors.\n",
    .options = index_options, .operands = PFI_OPERANDS_FILES);

/* the index rows: every column, or the headline ones for a terminal table */
static pfi_rows *index_rows(const pfi_groups *gs, const pfi_index_row *rows, pfi_format fmt)
{
    pfi_celltype types[NCOLS];
    for (int k = 0; k < NCOLS; k++) types[k] = PFI_CELL_NUM;
    for (int k = 0; k < 6; k++) types[k] = PFI_CELL_TEXT;
    types[6] = types[7] = types[8] = types[13] = types[14] = types[23] = types[27] = PFI_CELL_INT;
    types[28] = types[29] = types[30] = PFI_CELL_TEXT;
    /* the terminal table shows the headline columns only */
    static const int table_cols[] = {0, 1, 6, 8, 12, 15, 16, 29, 14, 24, 28};
    const char *names[NCOLS];
    pfi_celltype tt[NCOLS];
    int map[NCOLS], nc = 0;
    if (fmt == PFI_FMT_TABLE) {
        for (size_t k = 0; k < sizeof table_cols / sizeof *table_cols; k++) {
            map[nc] = table_cols[k];
            names[nc] = cols_all[table_cols[k]];
            tt[nc] = types[table_cols[k]];
            nc++;
        }
    } else {
        for (int k = 0; k < NCOLS; k++) {
            map[k] = k;
            names[k] = cols_all[k];
            tt[k] = types[k];
        }
        nc = NCOLS;
    }
    pfi_rows *r = pfi_rows_new((size_t)nc, names, tt);
    if (!r) return NULL;
    for (int k = 0; k < nc; k++)
        if (map[k] >= 12 && tt[k] == PFI_CELL_NUM) pfi_rows_table_fmt(r, (size_t)k, "%.3f");
    for (size_t i = 0; i < gs->n; i++) {
        const pfi_index_row *x = &rows[i];
        if (x->skipped) continue;
        const pfi_group *g = x->g;
        const pfi_point *u = pfi_curve_uncapped(&x->curve);
        double vals[NCOLS];
        for (int k = 0; k < NCOLS; k++) vals[k] = NAN;
        vals[6] = g->gpus;
        vals[7] = (double)g->nrows;
        vals[8] = (double)x->curve.n;
        vals[9] = u->cap_w;
        vals[10] = u->tokens_per_s;
        vals[11] = u->power_w;
        vals[12] = x->eq1.pfi;
        vals[13] = (double)x->eq1.n_used;
        vals[14] = (double)x->eq1.n_excluded;
        vals[15] = x->ci.lo;
        vals[16] = x->ci.hi;
        vals[17] = x->area;
        if (x->el_ok) {
            vals[18] = x->el.a;
            vals[19] = x->el.one_minus_a;
            vals[20] = x->el.inv_a;
            vals[21] = x->el.r2;
        }
        vals[22] = x->robust.pfi_noise_aware;
        vals[23] = (double)x->robust.n_noise_kept;
        vals[24] = x->robust.pfi_robust;
        vals[25] = x->robust.pfi_robust_lo;
        vals[26] = x->robust.pfi_robust_hi;
        vals[27] = (double)x->robust.n_fit;
        const char *texts[NCOLS] = {g->gpu_model, g->name, g->arch, g->task, g->model, g->split};
        texts[28] = pfi_verdict_name(x->robust.verdict);
        texts[29] = pfi_ci_verdict_name(x->ci.verdict);
        texts[30] = x->ci.reason;
        size_t row = pfi_rows_add(r);
        for (int k = 0; k < nc; k++) {
            int m = map[k];
            if (tt[k] == PFI_CELL_TEXT) pfi_rows_text(r, row, (size_t)k, texts[m]);
            else if (tt[k] == PFI_CELL_INT) pfi_rows_int(r, row, (size_t)k, (long long)vals[m]);
            else pfi_rows_num(r, row, (size_t)k, vals[m]);
        }
    }
    return r;
}

static int index_run(const char *cmd, index_args *a, char **paths, int npaths)
{
    if (npaths < 1) return cli_usage_error(cmd, "no sweep table given");
    if (a->ncaps) {
        a->io.caps_w = a->caps;
        a->io.ncaps = (size_t)a->ncaps;
    }
    pfi_table *t = cli_read_sweeps(cmd, paths, npaths, a->gpu_model);
    if (!t) return CLI_FAIL;
    if (a->where.n) {
        pfi_table *f = cli_filter_table(cmd, t, a->where.v, a->where.n);
        pfi_table_free(t);
        if (!f) return CLI_FAIL;
        t = f;
    }
    pfi_groups gs;
    pfi_error err;
    if (pfi_groups_build(t, &gs, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        pfi_table_free(t);
        return CLI_FAIL;
    }
    int rc;
    if (a->est) {
        rc = noise_report(cmd, &gs, &a->out);
        pfi_groups_dispose(&gs);
        pfi_table_free(t);
        return rc;
    }
    pfi_index_row *rows = calloc(gs.n ? gs.n : 1, sizeof *rows);
    pfi_log log = cli_log(cmd);
    if (!rows || pfi_index_run(&gs, &a->io, rows, &log, &err) != PFI_OK) {
        cli_error(cmd, "%s", rows ? err.msg : "out of memory");
        rc = CLI_FAIL;
    } else {
        pfi_format fmt = cli_out_format(&a->out);
        pfi_rows *r = index_rows(&gs, rows, fmt);
        rc = r ? cli_save_rows(cmd, r, &a->out) : CLI_FAIL;
        if (rc == CLI_OK && a->ratios) rc = write_ratios(cmd, rows, gs.n, a->ratios, fmt);
        pfi_rows_free(r);
    }
    if (rows) pfi_index_rows_dispose(rows, gs.n);
    free(rows);
    pfi_groups_dispose(&gs);
    pfi_table_free(t);
    return rc;
}

int cmd_index(int argc, char **argv)
{
    index_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    pfi_index_opts_default(&a.io);
    int first, rc = cli_parse(&cmd_index_opts, &a, argc, argv, &first);
    if (rc < 0) rc = index_run("index", &a, argv + first, argc - first);
    pfi_opts_dispose(&cmd_index_opts, &a);
    return rc;
}
