/* cmd_allocate.c — `pfi allocate`: one allocation of a cluster power cut
 * over the groups of a sweep table (each group one job): per job its target
 * power, per-GPU cap and expected throughput; totals at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sweeps.h"
#include "pfi/csv.h"

const char cmd_allocate_usage[] =
    "usage: pfi allocate [options] TABLE...\n"
    "\n"
    "Split a cut of the jobs' total uncapped GPU power across the sweep groups\n"
    "(each group one job) with a strategy; print each job's target aggregate\n"
    "power, per-GPU cap (integer W from its curve's inverse map, within the\n"
    "device limits; slack = target - power at that cap), the throughput the\n"
    "strategy expects and the throughput on the job's measured curve, then\n"
    "totals (group TOTAL). Throughput is printed with at least 4 significant\n"
    "digits in the table format.\n"
    "\n"
    "options:\n"
    "  --cut R              cut fraction of the total uncapped power (e.g. 0.3)\n"
    "  --target-w W         or an absolute budget of aggregate GPU power (W)\n"
    "  --strategy S         oracle, equal, moe-ft-weighted, pfi-aware (default),\n"
    "                       dcgm, curve-aware, closed-loop\n"
    "  --pfi predicted|measured|measured-robust\n"
    "                       the PFI pfi-aware (and closed-loop's start) weights by:\n"
    "                       predicted (default), or each group's own measured Eq. 1\n"
    "                       PFI or robust PFI (the heuristic with perfect PFI\n"
    "                       knowledge); a group whose PFI is not finite and positive\n"
    "                       is an error naming it\n"
    "  --model FILE         the PFI model (pfi fit --model) for --pfi predicted;\n"
    "                       default: an in-sample fit of dram_copy_product on these\n"
    "                       groups (as the paper)\n"
    "  --curve-model FILE   the curve model for curve-aware / closed-loop\n"
    "  --features LIST      features of the in-sample fits (default\n"
    "                       dram_copy_product); only strategies that predict need\n"
    "                       them (pfi-aware with --pfi predicted, curve-aware,\n"
    "                       closed-loop); dcgm needs the column dram_copy_product\n"
    "  --target pfi|robust  target of the in-sample fit (default pfi)\n"
    "  --sla FILE           CSV with columns group, tier (0..3) [, gpu_model]\n"
    "  --objective tokens|normalized   maximize total tokens/s (default) or sum T/T_max\n"
    "  --only COL=V[,V]     use only matching groups\n"
    "  --gpu-model NAME, --format csv|json|table, --json, -o FILE\n";

static int read_sla(const char *cmd, const char *path, cli_gset *S, cli_pool *P)
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
            cli_error(cmd, "%s:%llu: column 'tier': '%s' is not 0, 1, 2 or 3", path, (unsigned long long)c.line, t);
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
            pfi_warnf(&lg, "%s:%llu: no job '%s' in the table", path, (unsigned long long)c.line, c.fields[ig]);
        }
    }
    if (rc < 0) {
        cli_error(cmd, "%s", err.msg);
        ret = -1;
    }
out:
    pfi_csv_free(&c);
    pfi_reader_close(&r);
    return ret;
}

int cmd_allocate(int argc, char **argv)
{
    const char *cmd = "allocate";
    enum { O_CUT = 1, O_TW, O_STRAT, O_MODEL, O_CMODEL, O_FEAT, O_TARGET, O_SLA, O_OBJ, O_ONLY, O_GPU, O_PFI };
    static const struct option lo[] = {{"cut", required_argument, NULL, O_CUT},
                                       {"target-w", required_argument, NULL, O_TW},
                                       {"strategy", required_argument, NULL, O_STRAT},
                                       {"model", required_argument, NULL, O_MODEL},
                                       {"curve-model", required_argument, NULL, O_CMODEL},
                                       {"features", required_argument, NULL, O_FEAT},
                                       {"target", required_argument, NULL, O_TARGET},
                                       {"sla", required_argument, NULL, O_SLA},
                                       {"objective", required_argument, NULL, O_OBJ},
                                       {"only", required_argument, NULL, O_ONLY},
                                       {"gpu-model", required_argument, NULL, O_GPU},
                                       {"pfi", required_argument, NULL, O_PFI},
                                       CLI_COMMON_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    cli_out out;
    cli_out_init(&out);
    double cut = NAN, target_w = NAN;
    pfi_alloc_opts ao;
    pfi_alloc_opts_default(&ao);
    cli_pool_opts po = {.target = "pfi", .pfi = CLI_PFI_PREDICTED};
    const char *sla = NULL, *gpu_model = NULL;
    char **only = calloc((size_t)argc + 1, sizeof *only);
    int nonly = 0, c, rc = CLI_OK;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, lo, NULL)) != -1) {
        int h = cli_common_opt(cmd, c, optarg, &out);
        if (h < 0) { rc = CLI_USAGE; goto done; }
        if (h) continue;
        switch (c) {
        case 'h': rc = cli_help(cmd); goto done;
        case O_CUT:
            if (cli_parse_num(cmd, "--cut", optarg, 0, 1, &cut)) { rc = CLI_USAGE; goto done; }
            break;
        case O_TW:
            if (cli_parse_num(cmd, "--target-w", optarg, 0, 1e12, &target_w)) { rc = CLI_USAGE; goto done; }
            break;
        case O_STRAT:
            if (pfi_strategy_parse(optarg, &ao.strategy)) {
                rc = cli_usage_error(cmd, "--strategy: '%s' is not oracle, equal, moe-ft-weighted, pfi-aware, dcgm, curve-aware or closed-loop", optarg);
                goto done;
            }
            break;
        case O_MODEL: po.model = optarg; break;
        case O_CMODEL: po.curve_model = optarg; break;
        case O_FEAT: po.features = optarg; break;
        case O_TARGET:
            if (strcmp(optarg, "pfi") && strcmp(optarg, "robust")) { rc = cli_usage_error(cmd, "--target: '%s' is not pfi or robust", optarg); goto done; }
            po.target = optarg;
            break;
        case O_SLA: sla = optarg; break;
        case O_OBJ:
            if (!strcmp(optarg, "normalized")) ao.normalized = 1;
            else if (strcmp(optarg, "tokens")) { rc = cli_usage_error(cmd, "--objective: '%s' is not tokens or normalized", optarg); goto done; }
            break;
        case O_ONLY: only[nonly++] = optarg; break;
        case O_GPU: gpu_model = optarg; break;
        case O_PFI:
            if (cli_pfi_source_parse(optarg, &po.pfi)) {
                rc = cli_usage_error(cmd, "--pfi: '%s' is not predicted, measured or measured-robust", optarg);
                goto done;
            }
            break;
        default: rc = cli_bad_option(cmd, argv); goto done;
        }
    }
    if (optind >= argc) { rc = cli_usage_error(cmd, "no sweep table given"); goto done; }
    if (po.model && po.pfi != CLI_PFI_PREDICTED) {
        rc = cli_usage_error(cmd, "--model predicts the PFI: it cannot be combined with --pfi %s", cli_pfi_source_name(po.pfi));
        goto done;
    }
    if (isnan(cut) == isnan(target_w)) { rc = cli_usage_error(cmd, "give exactly one of --cut and --target-w"); goto done; }
    po.strategies = 1u << ao.strategy;
    cli_gset S;
    if (cli_gset_load(cmd, argv + optind, argc - optind, gpu_model, &S)) { rc = CLI_FAIL; goto done; }
    size_t *use = malloc(S.gs.n * sizeof *use), n = 0;
    for (size_t i = 0; i < S.gs.n; i++) {
        int m = cli_group_match_all(cmd, &S, &S.gs.g[i], only, nonly);
        if (m < 0) { rc = CLI_USAGE; goto free_all; }
        if (m && S.gs.g[i].curve.n >= 2) use[n++] = i;
    }
    if (n == 0) { cli_error(cmd, "no job with at least two caps"); rc = CLI_FAIL; goto free_all; }
    cli_pool P;
    if (cli_pool_build(cmd, &S, use, n, &po, &P)) { cli_pool_free(&P); rc = CLI_FAIL; goto free_all; }
    if (sla && read_sla(cmd, sla, &S, &P)) { cli_pool_free(&P); rc = CLI_FAIL; goto free_all; }
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += P.jobs[i].power_max_w;
    double budget = isnan(target_w) ? sum * (1 - cut) : target_w;
    pfi_job_alloc *A = calloc(n, sizeof *A);
    pfi_alloc_result R;
    pfi_error err;
    if (pfi_allocate(P.jobs, n, budget, &ao, A, &R, &err)) {
        cli_error(cmd, "%s", err.msg);
        rc = CLI_FAIL;
    } else {
        const char *names[] = {"gpu_model", "group", "gpus", "sla_tier", "power_max_w", "target_w", "cap_w", "slack_w",
                               "tokens_per_s_max", "tokens_per_s_expected", "tokens_per_s", "sla_violated"};
        pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_NUM,
                            PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_INT};
        pfi_rows *Rw = pfi_rows_new(12, names, t);
        /* watts to 0.1 W; throughput to at least 4 significant digits of the
           smallest T_max (normalized units such as Zeus's 1/s are ~0.1) */
        for (int k = 4; k < 8; k++) pfi_rows_table_fmt(Rw, (size_t)k, "%.1f");
        double tmin = INFINITY;
        for (size_t i = 0; i < n; i++)
            if (P.jobs[i].tokens_max > 0 && P.jobs[i].tokens_max < tmin) tmin = P.jobs[i].tokens_max;
        int dec = isfinite(tmin) ? 3 - (int)floor(log10(tmin)) : 1;
        char tf[16];
        snprintf(tf, sizeof tf, "%%.%df", dec < 1 ? 1 : dec > 15 ? 15 : dec);
        for (int k = 8; k < 11; k++) pfi_rows_table_fmt(Rw, (size_t)k, tf);
        double tmax = 0;
        for (size_t i = 0; i < n; i++) {
            const pfi_group *g = &S.gs.g[P.group[i]];
            size_t r = pfi_rows_add(Rw);
            pfi_rows_text(Rw, r, 0, g->gpu_model);
            pfi_rows_text(Rw, r, 1, g->name);
            pfi_rows_int(Rw, r, 2, g->gpus);
            if (P.jobs[i].sla_tier >= 0) pfi_rows_int(Rw, r, 3, P.jobs[i].sla_tier);
            pfi_rows_num(Rw, r, 4, P.jobs[i].power_max_w);
            pfi_rows_num(Rw, r, 5, A[i].target_w);
            pfi_rows_num(Rw, r, 6, A[i].cap_w);
            pfi_rows_num(Rw, r, 7, A[i].slack_w);
            pfi_rows_num(Rw, r, 8, P.jobs[i].tokens_max);
            pfi_rows_num(Rw, r, 9, A[i].tokens_expected);
            pfi_rows_num(Rw, r, 10, A[i].tokens_true);
            pfi_rows_int(Rw, r, 11, A[i].sla_violated);
            tmax += P.jobs[i].tokens_max;
        }
        size_t r = pfi_rows_add(Rw);
        pfi_rows_text(Rw, r, 0, "");
        pfi_rows_text(Rw, r, 1, "TOTAL");
        pfi_rows_num(Rw, r, 4, sum);
        pfi_rows_num(Rw, r, 5, R.total_power_w);
        pfi_rows_num(Rw, r, 8, tmax);
        pfi_rows_num(Rw, r, 9, R.total_tokens_expected);
        pfi_rows_num(Rw, r, 10, R.total_tokens_true);
        pfi_rows_int(Rw, r, 11, (long long)R.sla_violations);
        if (!R.feasible) {
            pfi_log lg = cli_log(cmd);
            pfi_warnf(&lg, "infeasible: the jobs cannot shed %.0f W within their floors; every job is at its floor (%.0f W total)",
                      sum - budget, R.total_power_w);
        }
        if (ao.strategy == PFI_STRAT_ORACLE && R.certificate_gap > 1e-9 * R.total_tokens_true)
            fprintf(stderr, "pfi allocate: oracle certificate: within %.4g of the optimum (non-concave curves)\n", R.certificate_gap);
        rc = cli_save_rows(cmd, Rw, &out);
        pfi_rows_free(Rw);
    }
    free(A);
    cli_pool_free(&P);
free_all:
    free(use);
    cli_gset_free(&S);
done:
    free(only);
    return rc;
}
