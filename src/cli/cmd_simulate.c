/* cmd_simulate.c — `pfi simulate`: the paper's allocation experiment on
 * workloads drawn from a sweep table's groups (see simulate.h), with the
 * headline figure beside the paper's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sweeps.h"
#include "simulate.h"

const char cmd_simulate_usage[] =
    "usage: pfi simulate [options] TABLE...\n"
    "\n"
    "The paper's experiment: W workloads of J jobs drawn from the sweep groups,\n"
    "cluster cuts 0..40% in 1% steps, each strategy; scenarios random (uniform\n"
    "with replacement) and production (the Acme trace's task mix: 94% fine-tuning,\n"
    "6% pretraining by job count). Per scenario, strategy and cut: total\n"
    "throughput (mean over workloads), deficit vs the oracle, the fraction of the\n"
    "equal-to-oracle gap closed, throughput per job recovered over equal weight,\n"
    "SLA violations, infeasible workloads, and the oracle's certificate gap.\n"
    "Prints the headline (30% cut, production) beside the paper's.\n"
    "\n"
    "options:\n"
    "  --scenario random|production|both   (default both)\n"
    "  --workloads W, --jobs J              (default 500, 100)\n"
    "  --cut-max R, --cut-step S            (default 0.40, 0.01)\n"
    "  --strategies LIST|all   default: oracle,equal,moe-ft-weighted,pfi-aware,dcgm,\n"
    "                          curve-aware,closed-loop, less (with a warning) those\n"
    "                          the table lacks a column for; a strategy named here\n"
    "                          (or all) without its column is an error\n"
    "  --pfi predicted|measured|measured-robust\n"
    "                          the PFI pfi-aware (and closed-loop's start) weights\n"
    "                          by: predicted (default), or each group's measured\n"
    "                          Eq. 1 PFI or robust PFI (perfect PFI knowledge); a\n"
    "                          group whose PFI is not finite and positive is an\n"
    "                          error naming it\n"
    "  --ft-share F            production mix (default 0.94)\n"
    "  --sla-mix A,B,C,D       share of jobs in Flex 0..3 (default: no SLAs)\n"
    "  --sla-margin M          curve-aware floors: predicted T/T_max >= 1 - loss + M (0.06)\n"
    "  --model FILE, --curve-model FILE    predictors (default: in-sample fits)\n"
    "  --features LIST, --target pfi|robust  for the in-sample fits\n"
    "  --objective tokens|normalized\n"
    "  --pool-where COL=V[,V]  draw jobs only from matching groups (repeatable)\n"
    "  --loop-rounds K         closed-loop rounds (default 5)\n"
    "  --seed N                (default 1)\n"
    "  --loop-csv FILE         write the closed loop's gap closed per round at the 30% cut\n"
    "  --gpu-model NAME, --format csv|json|table, --json, -o FILE\n";

int cmd_simulate(int argc, char **argv)
{
    const char *cmd = "simulate";
    enum { O_SCEN = 1, O_WL, O_JOBS, O_CMAX, O_CSTEP, O_STRATS, O_FT, O_SLA, O_MODEL, O_CMODEL, O_FEAT,
           O_TARGET, O_OBJ, O_POOL, O_ROUNDS, O_SEED, O_GPU, O_LOOPCSV, O_SLAM, O_PFI };
    static const struct option lo[] = {{"scenario", required_argument, NULL, O_SCEN},
                                       {"workloads", required_argument, NULL, O_WL},
                                       {"jobs", required_argument, NULL, O_JOBS},
                                       {"cut-max", required_argument, NULL, O_CMAX},
                                       {"cut-step", required_argument, NULL, O_CSTEP},
                                       {"strategies", required_argument, NULL, O_STRATS},
                                       {"ft-share", required_argument, NULL, O_FT},
                                       {"sla-mix", required_argument, NULL, O_SLA},
                                       {"model", required_argument, NULL, O_MODEL},
                                       {"curve-model", required_argument, NULL, O_CMODEL},
                                       {"features", required_argument, NULL, O_FEAT},
                                       {"target", required_argument, NULL, O_TARGET},
                                       {"objective", required_argument, NULL, O_OBJ},
                                       {"pool-where", required_argument, NULL, O_POOL},
                                       {"loop-rounds", required_argument, NULL, O_ROUNDS},
                                       {"seed", required_argument, NULL, O_SEED},
                                       {"gpu-model", required_argument, NULL, O_GPU},
                                       {"loop-csv", required_argument, NULL, O_LOOPCSV},
                                       {"sla-margin", required_argument, NULL, O_SLAM},
                                       {"pfi", required_argument, NULL, O_PFI},
                                       CLI_COMMON_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    cli_out out;
    cli_out_init(&out);
    pfi_sim_opts so;
    pfi_sim_opts_default(&so);
    so.strategies = (1u << PFI_STRAT_COUNT) - 1;
    cli_pool_opts po = {.target = "pfi", .pfi = CLI_PFI_PREDICTED};
    int scen_mask = 3, c, rc = CLI_OK, strats_given = 0;
    const char *gpu_model = NULL, *loop_csv = NULL;
    char **pool_w = calloc((size_t)argc + 1, sizeof *pool_w);
    int npw = 0;
    double v;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, lo, NULL)) != -1) {
        int h = cli_common_opt(cmd, c, optarg, &out);
        if (h < 0) { rc = CLI_USAGE; goto done; }
        if (h) continue;
        switch (c) {
        case 'h': rc = cli_help(cmd); goto done;
        case O_SCEN:
            if (!strcmp(optarg, "random")) scen_mask = 1;
            else if (!strcmp(optarg, "production")) scen_mask = 2;
            else if (!strcmp(optarg, "both")) scen_mask = 3;
            else { rc = cli_usage_error(cmd, "--scenario: '%s' is not random, production or both", optarg); goto done; }
            break;
        case O_WL:
            if (cli_parse_num(cmd, "--workloads", optarg, 1, 1e7, &v)) { rc = CLI_USAGE; goto done; }
            so.workloads = (size_t)v;
            break;
        case O_JOBS:
            if (cli_parse_num(cmd, "--jobs", optarg, 1, 1e6, &v)) { rc = CLI_USAGE; goto done; }
            so.jobs = (size_t)v;
            break;
        case O_CMAX:
            if (cli_parse_num(cmd, "--cut-max", optarg, 0, 0.99, &so.cut_max)) { rc = CLI_USAGE; goto done; }
            break;
        case O_CSTEP:
            if (cli_parse_num(cmd, "--cut-step", optarg, 0.001, 0.5, &so.cut_step)) { rc = CLI_USAGE; goto done; }
            break;
        case O_STRATS: {
            strats_given = 1;
            if (!strcmp(optarg, "all")) { so.strategies = (1u << PFI_STRAT_COUNT) - 1; break; }
            so.strategies = 0;
            char *s = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                pfi_strategy st;
                if (pfi_strategy_parse(t, &st)) {
                    rc = cli_usage_error(cmd, "--strategies: unknown strategy '%s'", t);
                    free(s);
                    goto done;
                }
                so.strategies |= 1u << st;
            }
            free(s);
            break;
        }
        case O_FT:
            if (cli_parse_num(cmd, "--ft-share", optarg, 0, 1, &so.ft_share)) { rc = CLI_USAGE; goto done; }
            break;
        case O_SLA: {
            double m[4];
            const char *p = optarg;
            int k = 0;
            for (; k < 4 && *p; k++) {
                char *e;
                m[k] = strtod(p, &e);
                if (e == p || m[k] < 0) break;
                p = *e == ',' ? e + 1 : e;
            }
            if (k != 4 || *p) { rc = cli_usage_error(cmd, "--sla-mix: expected four non-negative shares A,B,C,D"); goto done; }
            memcpy(so.sla_mix, m, sizeof m);
            break;
        }
        case O_MODEL: po.model = optarg; break;
        case O_CMODEL: po.curve_model = optarg; break;
        case O_FEAT: po.features = optarg; break;
        case O_TARGET:
            if (strcmp(optarg, "pfi") && strcmp(optarg, "robust")) { rc = cli_usage_error(cmd, "--target: '%s' is not pfi or robust", optarg); goto done; }
            po.target = optarg;
            break;
        case O_OBJ:
            if (!strcmp(optarg, "normalized")) so.normalized = 1;
            else if (strcmp(optarg, "tokens")) { rc = cli_usage_error(cmd, "--objective: '%s' is not tokens or normalized", optarg); goto done; }
            break;
        case O_POOL: pool_w[npw++] = optarg; break;
        case O_ROUNDS:
            if (cli_parse_num(cmd, "--loop-rounds", optarg, 1, 15, &v)) { rc = CLI_USAGE; goto done; }
            so.loop_rounds = (int)v;
            break;
        case O_SEED:
            if (cli_parse_num(cmd, "--seed", optarg, 0, 1.8e19, &v)) { rc = CLI_USAGE; goto done; }
            so.seed = (uint64_t)v;
            break;
        case O_GPU: gpu_model = optarg; break;
        case O_LOOPCSV: loop_csv = optarg; break;
        case O_SLAM:
            if (cli_parse_num(cmd, "--sla-margin", optarg, 0, 1, &v)) { rc = CLI_USAGE; goto done; }
            so.sla_curve_margin = v;
            break;
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
    pfi_rows *LR = NULL;
    cli_gset S;
    if (cli_gset_load(cmd, argv + optind, argc - optind, gpu_model, &S)) { rc = CLI_FAIL; goto done; }
    pfi_log lg = cli_log(cmd);
    /* the default set runs what the table allows; named strategies must run */
    for (int s = 0; s < PFI_STRAT_COUNT && !strats_given; s++) {
        char col[128];
        int lack = so.strategies & (1u << s) ? cli_pool_lacks(&S, &po, (pfi_strategy)s, col, sizeof col) : 0;
        if (!lack) continue;
        so.strategies &= ~(1u << s);
        pfi_warnf(&lg, "skipping %s: the table has no column '%s'%s", pfi_strategy_name((pfi_strategy)s), col,
                  lack == CLI_LACK_PFI_FIT     ? " for the in-sample PFI fit (see --features, --model, --pfi measured)"
                  : lack == CLI_LACK_CURVE_FIT ? " for the in-sample curve fit (see --features, --curve-model)"
                                               : "");
    }
    po.strategies = so.strategies;
    size_t *use = malloc(S.gs.n * sizeof *use), n = 0;
    for (size_t i = 0; i < S.gs.n; i++) {
        int m = cli_group_match_all(cmd, &S, &S.gs.g[i], pool_w, npw);
        if (m < 0) { rc = CLI_USAGE; goto free_all; }
        if (m && S.gs.g[i].curve.n >= 2) use[n++] = i;
    }
    if (n == 0) { cli_error(cmd, "no job with at least two caps in the pool"); rc = CLI_FAIL; goto free_all; }
    cli_pool P;
    if (cli_pool_build(cmd, &S, use, n, &po, &P)) { cli_pool_free(&P); rc = CLI_FAIL; goto free_all; }
    if ((scen_mask & 2) && !P.have_task) pfi_warnf(&lg, "no task column: the production mix draws like random");
    const char *names[] = {"scenario", "strategy", "cut", "total_tokens_per_s", "deficit_vs_oracle", "gap_closed",
                           "recovered_per_job", "sla_violations", "infeasible_workloads", "certificate_gap"};
    pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM,
                        PFI_CELL_NUM,  PFI_CELL_INT,  PFI_CELL_INT, PFI_CELL_NUM};
    pfi_rows *R = pfi_rows_new(10, names, t);
    const char *lnames[] = {"scenario", "round", "gap_closed"};
    pfi_celltype lt[] = {PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_NUM};
    LR = pfi_rows_new(3, lnames, lt);
    pfi_rows_table_fmt(R, 2, "%.2f");
    for (int sc = 0; sc < 2 && rc == CLI_OK; sc++) {
        if (!(scen_mask & (1 << sc))) continue;
        so.scenario = (pfi_scenario)sc;
        pfi_sim_result res;
        pfi_error err;
        if (pfi_simulate(P.jobs, P.is_ft, n, &so, &res, &err)) {
            cli_error(cmd, "%s", err.msg);
            rc = CLI_FAIL;
            break;
        }
        size_t nc = res.ncuts;
        for (int s = 0; s < PFI_STRAT_COUNT; s++) {
            if (!(so.strategies & (1u << s))) continue;
            for (size_t k = 0; k < nc; k++) {
                const pfi_sim_cell *cl = &res.cell[(size_t)s * nc + k];
                double O = (so.strategies & 1u) ? res.cell[PFI_STRAT_ORACLE * nc + k].mean_total : NAN;
                double E = (so.strategies & (1u << PFI_STRAT_EQUAL)) ? res.cell[PFI_STRAT_EQUAL * nc + k].mean_total : NAN;
                size_t r = pfi_rows_add(R);
                pfi_rows_text(R, r, 0, sc ? "production" : "random");
                pfi_rows_text(R, r, 1, pfi_strategy_name((pfi_strategy)s));
                pfi_rows_num(R, r, 2, res.cuts[k]);
                pfi_rows_num(R, r, 3, cl->mean_total);
                pfi_rows_num(R, r, 4, O - cl->mean_total);
                pfi_rows_num(R, r, 5, O - E > 1e-9 * fabs(O) ? (cl->mean_total - E) / (O - E) : NAN);
                pfi_rows_num(R, r, 6, (cl->mean_total - E) / (double)so.jobs);
                pfi_rows_int(R, r, 7, (long long)cl->sla_violations);
                pfi_rows_int(R, r, 8, (long long)cl->infeasible);
                if (s == PFI_STRAT_ORACLE) pfi_rows_num(R, r, 9, cl->certificate_gap);
            }
        }
        fprintf(stderr, "pfi simulate: %s: CPU seconds per strategy:", sc ? "production" : "random");
        for (int s = 0; s < PFI_STRAT_COUNT; s++)
            if (so.strategies & (1u << s)) fprintf(stderr, " %s %.2f", pfi_strategy_name((pfi_strategy)s), res.cell[(size_t)s * nc].seconds);
        fprintf(stderr, "\n");
        /* the headline: the 30% cut */
        size_t k30 = (size_t)llround(0.30 / so.cut_step);
        if (k30 < nc && (so.strategies & 1u) && (so.strategies & (1u << PFI_STRAT_EQUAL)) &&
            (so.strategies & (1u << PFI_STRAT_PFI_AWARE))) {
            double O = res.cell[PFI_STRAT_ORACLE * nc + k30].mean_total, E = res.cell[PFI_STRAT_EQUAL * nc + k30].mean_total;
            double A = res.cell[PFI_STRAT_PFI_AWARE * nc + k30].mean_total;
            fprintf(stderr, "pfi simulate: %s, 30%% cut: pfi-aware%s recovers %+.4g %s per job over equal weight, %.4g%% of the equal-to-oracle gap%s\n",
                    sc ? "production mix" : "random mix",
                    po.pfi == CLI_PFI_MEASURED ? " (measured PFI)" : po.pfi == CLI_PFI_MEASURED_ROBUST ? " (measured robust PFI)" : "",
                    (A - E) / (double)so.jobs, so.normalized ? "(normalized)" : "tokens/s",
                    O > E ? 100 * (A - E) / (O - E) : NAN, sc ? " (paper: +1.5k tokens/s, 63%)" : "");
            if (so.strategies & (1u << PFI_STRAT_CLOSED_LOOP)) {
                fprintf(stderr, "pfi simulate: %s, 30%% cut, closed loop gap closed by round:", sc ? "production" : "random");
                for (int q = 0; q <= res.loop_rounds; q++) {
                    fprintf(stderr, " %.0f%%", 100 * res.loop_gap_closed[q]);
                    size_t lr = pfi_rows_add(LR);
                    pfi_rows_text(LR, lr, 0, sc ? "production" : "random");
                    pfi_rows_int(LR, lr, 1, q);
                    pfi_rows_num(LR, lr, 2, res.loop_gap_closed[q]);
                }
                fprintf(stderr, "\n");
            }
        }
        pfi_sim_result_free(&res);
    }
    if (rc == CLI_OK) rc = cli_save_rows(cmd, R, &out);
    if (rc == CLI_OK && loop_csv) {
        cli_out lo2 = {PFI_FMT_CSV, 1, loop_csv};
        rc = cli_save_rows(cmd, LR, &lo2);
    }
    pfi_rows_free(R);
    cli_pool_free(&P);
free_all:
    free(use);
    cli_gset_free(&S);
    pfi_rows_free(LR);
done:
    free(pool_w);
    return rc;
}
