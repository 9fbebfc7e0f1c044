/* cmd_allocate.c — `pfi allocate`: one allocation of a cluster power cut
 * over the groups of a sweep table (each group one job): per job its target
 * power, per-GPU cap and expected throughput; totals at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/csv.h"
#include "strategy.h"
#include "sweeps.h"

typedef struct allocate_args {
    cli_out out;
    double cut, target_w;
    pfi_alloc_opts ao;
    pfi_pool_opts po;
    const char *sla, *gpu_model;
    pfi_opt_list only;
} allocate_args;

static int opt_strategy(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    if (pfi_strategy_parse(arg, value)) return pfi_opts_bad_choice(ctx, o, arg), -1;
    return 0;
}

#define OPT_T allocate_args
static const pfi_opt allocate_options[] = {
    OPT_DOUBLE(0, "cut", cut, "R", 0, 1, "cut fraction of the total uncapped power (e.g. 0.3)"),
    OPT_DOUBLE(0, "target-w", target_w, "W", 0, 1e12,
               "or an absolute budget of aggregate GPU power (W)"),
    OPT_CALLBACK_CHOICES(0, "strategy", ao.strategy, PFI_STRATEGY_NAMES("|"),
                         "the allocation strategy (default safe-online: 5 simulated rounds of "
                         "measured moves from the equal-weight reference on the measured curves; "
                         "docs/allocation.md)",
                         opt_strategy),
    OPT_CALLBACK_CHOICES(0, "pfi", po.pfi, "predicted|measured|measured-robust",
                         "the PFI pfi-aware (and closed-loop's start) weights by: predicted "
                         "(default), or each group's "
                         "own measured Eq. 1 PFI or robust PFI (the heuristic with perfect PFI "
                         "knowledge); a group whose "
                         "PFI is not finite and positive is an error naming it",
                         cli_opt_pfi_source),
    OPT_FILENAME(0, "model", po.model, "FILE",
                 "the PFI model (pfi fit --model) for --pfi predicted; default: an in-sample fit "
                 "of dram_copy_product "
                 "on these groups (as the paper)"),
    OPT_FILENAME(0, "curve-model", po.curve_model, "FILE",
                 "the curve model for curve-aware / closed-loop"),
    OPT_STRING(0, "features", po.features, "LIST",
               "features of the in-sample fits (default dram_copy_product); only strategies that "
               "predict need them "
               "(pfi-aware with --pfi predicted, curve-aware, closed-loop); dcgm needs the column "
               "dram_copy_product"),
    OPT_CHOICE(0, "target", po.target, "pfi|robust", "target of the in-sample fit (default pfi)"),
    OPT_FILENAME(0, "sla", sla, "FILE", "CSV with columns group, tier (0..3) [, gpu_model]"),
    OPT_CALLBACK_CHOICES(0, "objective", ao.normalized, "tokens|normalized",
                         "maximize total tokens/s (default) or sum T/T_max", cli_opt_objective),
    OPT_LIST(0, "only", only, "COL=V[,V]", "use only matching groups (repeatable)"),
    CLI_OPT_GPU_MODEL,
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_allocate_opts = CLI_OPTS(
    allocate, .usage = "pfi allocate [options] TABLE...",
    .description = "Split a cut of the jobs' total uncapped GPU power across the sweep groups\n"
                   "(each group one job) with a strategy; print each job's target aggregate\n"
                   "power, per-GPU cap (integer W from its curve's inverse map, within the\n"
                   "device limits; slack = target - power at that cap), the throughput the\n"
                   "strategy expects and the throughput on the job's measured curve, then\n"
                   "totals (group TOTAL). Throughput is printed with at least 4 significant\n"
                   "digits in the table format. Give exactly one of --cut and --target-w.\n",
    .options = allocate_options, .operands = PFI_OPERANDS_FILES);

static int read_sla(const char *cmd, const char *path, pfi_groupset *S, pfi_pool *P)
{
    pfi_reader r;
    pfi_error err;
    if (pfi_reader_open(&r, path, 0, &err)) {
        cli_error(cmd, "%s", err.msg);
        return -1;
    }
    pfi_csv c;
    pfi_csv_init(&c, &r);
    int rc = pfi_csv_next(&c, &err), ig = -1, it = -1, im = -1, ret = 0;
    if (rc <= 0) {
        cli_error(cmd, "%s", rc == 0 ? "SLA file is empty" : err.msg);
        ret = -1;
        goto out;
    }
    for (size_t i = 0; i < c.nfields; i++) {
        if (!strcmp(c.fields[i], "group")) ig = (int)i;
        if (!strcmp(c.fields[i], "tier")) it = (int)i;
        if (!strcmp(c.fields[i], "gpu_model")) im = (int)i;
    }
    if (ig < 0 || it < 0) {
        cli_error(cmd, "%s:1: needs columns group and tier", path);
        ret = -1;
        goto out;
    }
    while ((rc = pfi_csv_next(&c, &err)) == 1) {
        if ((int)c.nfields <= ig || (int)c.nfields <= it || (im >= 0 && (int)c.nfields <= im)) {
            cli_error(cmd, "%s:%llu: too few fields", path, (unsigned long long)c.line);
            ret = -1;
            goto out;
        }
        const char *t = c.fields[it];
        if (strlen(t) != 1 || t[0] < '0' || t[0] > '3') {
            cli_error(cmd, "%s:%llu: column 'tier': '%s' is not 0, 1, 2 or 3", path,
                      (unsigned long long)c.line, t);
            ret = -1;
            goto out;
        }
        int found = 0;
        for (size_t j = 0; j < P->n; j++) {
            const pfi_group *g = &S->gs.g[P->group[j]];
            if (!strcmp(g->name, c.fields[ig]) && (im < 0 || !strcmp(g->gpu_model, c.fields[im]))) {
                P->jobs[j].sla_tier = t[0] - '0';
                found = 1;
            }
        }
        if (!found) {
            pfi_log lg = cli_log(cmd);
            pfi_warnf(&lg, "%s:%llu: no job '%s' in the table", path, (unsigned long long)c.line,
                      c.fields[ig]);
        }
    }
    if (rc < 0) {
        cli_error(cmd, "%s", err.msg);
        ret = -1;
    }
out:
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    return ret;
}

/* one row per job, then the totals (group TOTAL) */
static pfi_rows *alloc_rows(const pfi_groupset *S, const pfi_pool *P, size_t n,
                            const pfi_alloc_out *A, const pfi_alloc_result *R, double sum)
{
    const char *names[] = {
        "gpu_model",    "group",       "gpus",    "sla_tier",         "power_max_w",
        "target_w",     "cap_w",       "slack_w", "tokens_per_s_max", "tokens_per_s_expected",
        "tokens_per_s", "sla_violated"};
    pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_INT,
                        PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM, PFI_CELL_NUM,
                        PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM, PFI_CELL_INT};
    pfi_rows *Rw = pfi_rows_new(12, names, t);
    /* watts to 0.1 W; throughput to at least 4 significant digits of the
       smallest T_max (normalized units such as Zeus's 1/s are ~0.1) */
    for (int k = 4; k < 8; k++) pfi_rows_table_fmt(Rw, (size_t)k, "%.1f");
    double tmin = INFINITY;
    for (size_t i = 0; i < n; i++)
        if (P->jobs[i].tokens_per_s_max > 0 && P->jobs[i].tokens_per_s_max < tmin)
            tmin = P->jobs[i].tokens_per_s_max;
    int dec = isfinite(tmin) ? 3 - (int)floor(log10(tmin)) : 1;
    char tf[16];
    snprintf(tf, sizeof tf, "%%.%df", dec < 1 ? 1 : dec > 15 ? 15 : dec);
    for (int k = 8; k < 11; k++) pfi_rows_table_fmt(Rw, (size_t)k, tf);
    double tmax = 0;
    for (size_t i = 0; i < n; i++) {
        const pfi_group *g = &S->gs.g[P->group[i]];
        size_t r = pfi_rows_add(Rw);
        pfi_rows_text(Rw, r, 0, g->gpu_model);
        pfi_rows_text(Rw, r, 1, g->name);
        pfi_rows_int(Rw, r, 2, g->gpus);
        if (P->jobs[i].sla_tier >= 0) pfi_rows_int(Rw, r, 3, P->jobs[i].sla_tier);
        pfi_rows_num(Rw, r, 4, P->jobs[i].power_max_w);
        pfi_rows_num(Rw, r, 5, A[i].target_w);
        pfi_rows_num(Rw, r, 6, A[i].cap_w);
        pfi_rows_num(Rw, r, 7, A[i].slack_w);
        pfi_rows_num(Rw, r, 8, P->jobs[i].tokens_per_s_max);
        pfi_rows_num(Rw, r, 9, A[i].tokens_expected);
        pfi_rows_num(Rw, r, 10, A[i].tokens_true);
        pfi_rows_int(Rw, r, 11, A[i].sla_violated);
        tmax += P->jobs[i].tokens_per_s_max;
    }
    size_t r = pfi_rows_add(Rw);
    pfi_rows_text(Rw, r, 0, "");
    pfi_rows_text(Rw, r, 1, "TOTAL");
    pfi_rows_num(Rw, r, 4, sum);
    pfi_rows_num(Rw, r, 5, R->total_power_w);
    pfi_rows_num(Rw, r, 8, tmax);
    pfi_rows_num(Rw, r, 9, R->total_tokens_expected);
    pfi_rows_num(Rw, r, 10, R->total_tokens_true);
    pfi_rows_int(Rw, r, 11, (long long)R->sla_violations);
    return Rw;
}

/* allocate over the jobs of groups use[0..n) and print */
static int allocate_jobs(const char *cmd, const allocate_args *a, pfi_groupset *S,
                         const size_t *use, size_t n)
{
    pfi_pool P;
    if (cli_pool_build(cmd, S, use, n, &a->po, &P)) {
        pfi_pool_dispose(&P);
        return CLI_FAIL;
    }
    if (a->sla && read_sla(cmd, a->sla, S, &P)) {
        pfi_pool_dispose(&P);
        return CLI_FAIL;
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += P.jobs[i].power_max_w;
    double budget = isnan(a->target_w) ? sum * (1 - a->cut) : a->target_w;
    pfi_alloc_out *A = calloc(n, sizeof *A);
    pfi_alloc_result R;
    pfi_error err;
    int rc;
    if (pfi_allocate(P.jobs, n, budget, &a->ao, A, &R, &err)) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
    } else {
        pfi_rows *Rw = alloc_rows(S, &P, n, A, &R, sum);
        if (!R.feasible) {
            pfi_log lg = cli_log(cmd);
            pfi_warnf(&lg,
                      "infeasible: the jobs cannot shed %.0f W within their floors; every job is "
                      "at its floor (%.0f W total)",
                      sum - budget, R.total_power_w);
        }
        if (R.certificate_gap > 1e-9 * R.total_tokens_true) /* only the oracle has one */
            fprintf(stderr,
                    "pfi allocate: oracle certificate: within %.4g of the optimum (non-concave "
                    "curves)\n",
                    R.certificate_gap);
        rc = cli_save_rows(cmd, Rw, &a->out);
        pfi_rows_free(Rw);
    }
    free(A);
    pfi_pool_dispose(&P);
    return rc;
}

static int allocate_run(const char *cmd, allocate_args *a, char **paths, int npaths)
{
    if (npaths < 1) return cli_usage_error(cmd, "no sweep table given");
    if (a->po.model && a->po.pfi != PFI_PFI_PREDICTED)
        return cli_usage_error(cmd, "--model predicts the PFI: it cannot be combined with --pfi %s",
                               pfi_pfi_source_name(a->po.pfi));
    if (isnan(a->cut) == isnan(a->target_w))
        return cli_usage_error(cmd, "give exactly one of --cut and --target-w");
    a->po.strategies = 1u << a->ao.strategy;
    a->ao.op_pfi_true = a->po.pfi != PFI_PFI_PREDICTED;
    pfi_groupset S;
    if (cli_gset_load(cmd, paths, npaths, a->gpu_model, &S)) return CLI_FAIL;
    size_t *use = malloc(S.gs.n * sizeof *use), n = 0;
    int rc = CLI_OK;
    for (size_t i = 0; i < S.gs.n && rc == CLI_OK; i++) {
        int m = cli_group_match_all(cmd, &S, &S.gs.g[i], a->only.v, a->only.n);
        if (m < 0) rc = CLI_USAGE;
        else if (m && S.gs.g[i].curve.n >= 2) use[n++] = i;
    }
    if (rc == CLI_OK && n == 0) {
        cli_error(cmd, "no job with at least two caps");
        rc = CLI_FAIL;
    }
    if (rc == CLI_OK) rc = allocate_jobs(cmd, a, &S, use, n);
    free(use);
    pfi_groupset_dispose(&S);
    return rc;
}

int cmd_allocate(int argc, char **argv)
{
    allocate_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    a.cut = a.target_w = NAN;
    pfi_alloc_opts_default(&a.ao);
    a.ao.strategy = PFI_STRAT_SAFE_ONLINE;
    a.po = (pfi_pool_opts){.target = "pfi", .pfi = PFI_PFI_PREDICTED};
    int first, rc = cli_parse(&cmd_allocate_opts, &a, argc, argv, &first);
    if (rc < 0) rc = allocate_run("allocate", &a, argv + first, argc - first);
    pfi_opts_dispose(&cmd_allocate_opts, &a);
    return rc;
}
