/* cmd_simulate.c — `pfi simulate`: the paper's allocation experiment on
 * workloads drawn from a sweep table's groups (see simulate.h), with the
 * headline figure beside the paper's. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "allocsim.h"
#include "cli.h"
#include "strategy.h"
#include "sweeps.h"

typedef struct simulate_args {
    cli_out out;
    pfi_allocsim_opts so;
    pfi_pool_opts po;
    int scen_mask, strats_given;
    const char *gpu_model, *loop_csv, *score_csv;
    pfi_opt_list pool_w;
} simulate_args;

static int opt_scenario(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    int k = pfi_opts_choice_index(o, arg); /* random|production|both: mask 1, 2, 3 */
    if (k < 0) return pfi_opts_bad_choice(ctx, o, arg), -1;
    *(int *)value = k + 1;
    return 0;
}

static int opt_strategies(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    simulate_args *a = (simulate_args *)((char *)value - offsetof(simulate_args, so.strategies));
    a->strats_given = 1;
    if (!strcmp(arg, "all")) {
        a->so.strategies = PFI_STRAT_ALL;
        return 0;
    }
    a->so.strategies = 0;
    char *s = strdup(arg), *save = NULL;
    if (!s) return pfi_opts_error(ctx, "out of memory"), -1;
    for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        pfi_strategy st;
        if (pfi_strategy_parse(t, &st)) {
            pfi_opts_error(ctx, "--strategies: unknown strategy '%s'", t);
            free(s);
            return -1;
        }
        a->so.strategies |= 1u << st;
    }
    free(s);
    return 0;
}

static int opt_sla_mix(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    double m[4];
    const char *p = arg;
    int k = 0;
    for (; k < 4 && *p; k++) {
        char *e;
        m[k] = strtod(p, &e);
        if (e == p || m[k] < 0) break;
        p = *e == ',' ? e + 1 : e;
    }
    if (k != 4 || *p)
        return pfi_opts_error(ctx, "--sla-mix: expected four non-negative shares A,B,C,D"), -1;
    memcpy(value, m, sizeof m);
    return 0;
}

#define OPT_T simulate_args
static const pfi_opt simulate_options[] = {
    OPT_CALLBACK_CHOICES(0, "scenario", scen_mask, "random|production|both",
                         "which scenarios (default both)", opt_scenario),
    OPT_SIZE(0, "workloads", so.workloads, "W", 1, 1e7, "workloads drawn (default 500)"),
    OPT_SIZE(0, "jobs", so.jobs, "J", 1, 1e6, "jobs per workload (default 100)"),
    OPT_DOUBLE(0, "cut-max", so.cut_max, "R", 0, 0.99, "deepest cluster cut (default 0.40)"),
    OPT_DOUBLE(0, "cut-step", so.cut_step, "S", 0.001, 0.5, "cut step (default 0.01)"),
    OPT_CALLBACK(
        0, "strategies", so.strategies, "LIST|all",
        "comma list of " PFI_STRATEGY_NAMES(", ") "; default: "
                                                  "all of them less (with a warning) those the "
                                                  "table lacks a column for; a strategy "
                                                  "named here (or all) "
                                                  "without its column is an error",
        opt_strategies),
    OPT_CALLBACK_CHOICES(0, "pfi", po.pfi, "predicted|measured|measured-robust",
                         "the PFI pfi-aware (and closed-loop's start) weights by: predicted "
                         "(default), or each group's "
                         "measured Eq. 1 PFI or robust PFI (perfect PFI knowledge); a group whose "
                         "PFI is not finite and "
                         "positive is an error naming it",
                         cli_opt_pfi_source),
    OPT_DOUBLE(0, "ft-share", so.ft_share, "F", 0, 1,
               "production mix: fine-tuning share of jobs (default 0.94)"),
    OPT_CALLBACK(0, "sla-mix", so.sla_mix, "A,B,C,D",
                 "share of jobs in Flex 0..3 (default: no SLAs)", opt_sla_mix),
    OPT_DOUBLE(0, "sla-margin", so.sla_curve_margin, "M", 0, 1,
               "curve-aware floors: predicted T/T_max >= 1 - loss + M (default 0.06)"),
    OPT_FILENAME(0, "model", po.model, "FILE", "the PFI predictor (default: an in-sample fit)"),
    OPT_FILENAME(0, "curve-model", po.curve_model, "FILE",
                 "the curve predictor (default: an in-sample fit)"),
    OPT_STRING(0, "features", po.features, "LIST",
               "features of the in-sample fits (default dram_copy_product)"),
    OPT_CHOICE(0, "target", po.target, "pfi|robust",
               "target of the in-sample PFI fit (default pfi)"),
    OPT_CALLBACK_CHOICES(0, "objective", so.normalized, "tokens|normalized",
                         "maximize total tokens/s (default) or sum T/T_max", cli_opt_objective),
    OPT_LIST(0, "pool-where", pool_w, "COL=V[,V]",
             "draw jobs only from matching groups (repeatable)"),
    OPT_INTEGER(0, "loop-rounds", so.loop_rounds, "K", 1, PFI_SIM_MAX_ROUNDS,
                "closed-loop rounds (default 5)"),
    OPT_U64(0, "seed", so.seed, "N", 0, 1.8e19, "workload draw and noise seed (default 1)"),
    CLI_OPT_GPU_MODEL,
    OPT_FILENAME(0, "loop-csv", loop_csv, "FILE",
                 "write the closed loop's gap closed per round at the 30% cut"),
    OPT_FILENAME(0, "score-csv", score_csv, "FILE",
                 "write the scores per strategy, cut and round (docs/allocation.md, "
                 "\"Scoring\"): gap closed against the reference on isotonic and raw curves, "
                 "scored cells, SLA, budget and safety counts"),
    OPT_INTEGER(0, "online-rounds", so.online.rounds, "K", 0, PFI_SIM_MAX_ROUNDS,
                "safe-online rounds (default 15; the main table shows the last)"),
    OPT_DOUBLE(0, "online-trust", so.online.trust_frac, "F", 0.001, 1,
               "safe-online: trust region, x P_max per round (default 0.05)"),
    OPT_DOUBLE(0, "online-jitter", so.online.step_jitter, "CV", 0, 1,
               "safe-online: step-time coefficient of variation (default 0.02)"),
    OPT_DOUBLE(0, "online-power-noise", so.online.power_noise, "CV", 0, 1,
               "safe-online: noise of one 1 s power average (default 0.02)"),
    OPT_DOUBLE(0, "online-curvature", so.online.curvature, "K", 0, 100,
               "safe-online: curvature allowance (default 0.3)"),
    OPT_DOUBLE(0, "online-unverified-curvature", so.online.curvature_unverified, "K", 0, 100,
               "safe-online: curvature allowed below a job's lowest measured point "
               "before two chords measure it (default 3)"),
    OPT_DOUBLE(0, "online-period", so.online.period_s, "S", 1, 86400,
               "safe-online: seconds per round (default 60)"),
    OPT_DOUBLE(0, "online-settle", so.online.settle_s, "S", 0, 86400,
               "safe-online: settling seconds after a cap change (default 10)"),
    OPT_SET_INT(0, "no-profile", so.profile, 0,
                "safe-online: no job is profiled at job start (default: every job not in "
                "Flex 0, docs/allocation.md \"Profiles and memory\")"),
    OPT_INTEGER(0, "profile-points", so.prof.points, "K", 1, 16,
                "profile: powers below the ceiling (default 12)"),
    OPT_INTEGER(0, "profile-steps", so.prof.steps, "N", 1, 100000,
                "profile: training steps measured at each (default 20)"),
    OPT_DOUBLE(0, "profile-cost", so.prof.cost_max, "F", 0, 1,
               "profile: most throughput given up, x the job's first hour (default 0.01)"),
    OPT_DOUBLE(0, "profile-low", so.prof.low_frac, "F", 0.05, 1,
               "profile: lowest power of the schedule, x P_max (default 0.5)"),
    OPT_BOOLEAN(0, "prior", po.prior,
                "safe-online: a job with nothing measured starts from the curve model's "
                "conservative bound (--curve-model, else an in-sample fit) for its first floor, "
                "not the Lipschitz bound (issue 44)"),
    OPT_INTEGER(0, "profile-deep-points", so.prof.deep_points, "K", 0, 8,
                "profile: points after the schedule down to the lowest reachable power, "
                "under the tier and cost rules (default 0, as the controller's)"),
    OPT_DOUBLE(0, "sla-floor-margin", so.sla_floor_margin, "M", 0, 1,
               "the study's floor margin: SLA violations also counted where the oracle fits "
               "every floor raised by M x T_max (default 0.05)"),
    OPT_INTEGER(0, "memory-events", so.memory_events, "K", 0, 20,
                "safe-online: K earlier events (cuts drawn in 5..30%) whose measured points "
                "it keeps (default 0)"),
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_simulate_opts = CLI_OPTS(
    simulate, .usage = "pfi simulate [options] TABLE...",
    .description = "The paper's experiment: W workloads of J jobs drawn from the sweep groups,\n"
                   "cluster cuts 0..40% in 1% steps, each strategy; scenarios random (uniform\n"
                   "with replacement) and production (the Acme trace's task mix: 94% fine-tuning,\n"
                   "6% pretraining by job count). Per scenario, strategy and cut: total\n"
                   "throughput (mean over workloads), deficit vs the oracle, the fraction of the\n"
                   "equal-to-oracle gap closed, throughput per job recovered over equal weight,\n"
                   "SLA violations, infeasible workloads, and the oracle's certificate gap.\n"
                   "Prints the headline (30% cut): safe-online's gap closed by round, and\n"
                   "pfi-aware beside the paper's.\n",
    .options = simulate_options, .operands = PFI_OPERANDS_FILES);

/* one scenario's rows: per strategy and cut */
static void sim_rows(pfi_rows *R, const pfi_allocsim_opts *so, const pfi_allocsim_result *res,
                     int sc)
{
    size_t nc = res->ncuts;
    for (int s = 0; s < PFI_STRAT_COUNT; s++) {
        if (!(so->strategies & (1u << s))) continue;
        for (size_t k = 0; k < nc; k++) {
            const pfi_allocsim_cell *cl = &res->cell[(size_t)s * nc + k];
            double O = (so->strategies & (1u << PFI_STRAT_ORACLE))
                           ? res->cell[PFI_STRAT_ORACLE * nc + k].mean_total
                           : NAN;
            double E = (so->strategies & (1u << PFI_STRAT_EQUAL))
                           ? res->cell[PFI_STRAT_EQUAL * nc + k].mean_total
                           : NAN;
            size_t r = pfi_rows_add(R);
            pfi_rows_text(R, r, 0, sc ? "production" : "random");
            pfi_rows_text(R, r, 1, pfi_strategy_name((pfi_strategy)s));
            pfi_rows_num(R, r, 2, res->cuts[k]);
            pfi_rows_num(R, r, 3, cl->mean_total);
            pfi_rows_num(R, r, 4, O - cl->mean_total);
            pfi_rows_num(R, r, 5, O - E > 1e-9 * fabs(O) ? (cl->mean_total - E) / (O - E) : NAN);
            pfi_rows_num(R, r, 6, (cl->mean_total - E) / (double)so->jobs);
            pfi_rows_int(R, r, 7, (long long)cl->sla_violations);
            pfi_rows_int(R, r, 8, (long long)cl->infeasible);
            if (s == PFI_STRAT_ORACLE) pfi_rows_num(R, r, 9, cl->certificate_gap);
        }
    }
}

/* the scores per strategy, cut and round (SR) */
static void score_rows(pfi_rows *SR, const pfi_allocsim_opts *so, const pfi_allocsim_result *res,
                       int sc)
{
    size_t nc = res->ncuts, R1 = (size_t)res->max_rounds + 1;
    unsigned refs = 1u << PFI_STRAT_ORACLE | 1u << PFI_STRAT_EQUAL; /* the scores' references */
    if ((so->strategies & refs) != refs) return;
    for (int s = 0; s < PFI_STRAT_COUNT; s++) {
        if (!(so->strategies & (1u << s))) continue;
        for (size_t k = 0; k < nc; k++) {
            const pfi_allocsim_round *o = &res->rnd[(PFI_STRAT_ORACLE * nc + k) * R1],
                                     *e = &res->rnd[(PFI_STRAT_EQUAL * nc + k) * R1];
            double gap = o->mean_total - e->mean_total,
                   graw = o->mean_total_raw - e->mean_total_raw;
            double pts = 100 * gap / res->mean_uncapped;
            for (int q = 0; q <= res->srounds[s]; q++) {
                const pfi_allocsim_round *c = &res->rnd[((size_t)s * nc + k) * R1 + (size_t)q];
                size_t r = pfi_rows_add(SR);
                pfi_rows_text(SR, r, 0, sc ? "production" : "random");
                pfi_rows_text(SR, r, 1, pfi_strategy_name((pfi_strategy)s));
                pfi_rows_num(SR, r, 2, res->cuts[k]);
                pfi_rows_int(SR, r, 3, q);
                pfi_rows_num(SR, r, 4, c->mean_total);
                pfi_rows_num(SR, r, 5, c->mean_total_raw);
                pfi_rows_num(SR, r, 6, pts);
                pfi_rows_int(SR, r, 7, pts >= 0.1);
                pfi_rows_num(SR, r, 8, gap > 0 ? (c->mean_total - e->mean_total) / gap : NAN);
                pfi_rows_num(SR, r, 9,
                             graw > 0 ? (c->mean_total_raw - e->mean_total_raw) / graw : NAN);
                pfi_rows_int(SR, r, 10, (long long)c->sla_violations);
                pfi_rows_int(SR, r, 11, (long long)c->sla_viol_ofeas);
                pfi_rows_int(SR, r, 12, (long long)c->viol_workloads_ofeas);
                pfi_rows_int(SR, r, 13, (long long)c->infeasible);
                pfi_rows_int(SR, r, 14, (long long)c->over_budget);
                pfi_rows_int(SR, r, 15, (long long)res->oracle_infeasible[k]);
                pfi_rows_int(SR, r, 16, (long long)c->below_5);
                pfi_rows_int(SR, r, 17, (long long)c->below_20);
                pfi_rows_num(SR, r, 18, c->worst);
                pfi_rows_int(SR, r, 19, (long long)c->sla_viol_ofeas_m);
                pfi_rows_int(SR, r, 20, (long long)c->viol_workloads_ofeas_m);
                pfi_rows_int(SR, r, 21, (long long)c->offered_workloads);
                pfi_rows_int(SR, r, 22, (long long)c->sla_viol_offered);
                pfi_rows_int(SR, r, 23, (long long)c->sla_viol_offered_m);
            }
        }
    }
}

/* stderr: CPU seconds per strategy, the headline at the 30% cut beside the
 * paper's, the closed loop's gap closed by round (also into LR) */
static void sim_report(const simulate_args *a, const pfi_allocsim_result *res, int sc, pfi_rows *LR)
{
    const pfi_allocsim_opts *so = &a->so;
    size_t nc = res->ncuts;
    fprintf(stderr, "pfi simulate: %s: CPU seconds per strategy:", sc ? "production" : "random");
    for (int s = 0; s < PFI_STRAT_COUNT; s++)
        if (so->strategies & (1u << s))
            fprintf(stderr, " %s %.2f", pfi_strategy_name((pfi_strategy)s),
                    res->cell[(size_t)s * nc].seconds);
    fprintf(stderr, "\n");
    if ((so->strategies & (1u << PFI_STRAT_SAFE_ONLINE)) && so->profile &&
        res->profile_jobs_all > 0)
        fprintf(stderr,
                "pfi simulate: %s: profiles: %.4g%% of jobs profiled, %.3g points each; cost "
                "(throughput given up / the first hour's) mean %.3g%%, max %.3g%% (bound "
                "%.3g%%); %.0f profile points below their tier on the true curve\n",
                sc ? "production" : "random", 100 * res->profiled_jobs / res->profile_jobs_all,
                res->profiled_jobs > 0 ? res->profile_points / res->profiled_jobs : 0,
                100 * res->profile_cost_sum / res->profile_jobs_all, 100 * res->profile_cost_max,
                100 * so->prof.cost_max, res->profile_tier_violations);
    /* the headline: the 30% cut */
    size_t k30 = (size_t)llround(0.30 / so->cut_step);
    unsigned need = 1u << PFI_STRAT_ORACLE | 1u << PFI_STRAT_EQUAL | 1u << PFI_STRAT_SAFE_ONLINE;
    if (k30 < nc && (so->strategies & need) == need) {
        size_t R1 = (size_t)res->max_rounds + 1;
        const pfi_allocsim_round *o = &res->rnd[(PFI_STRAT_ORACLE * nc + k30) * R1],
                                 *e = &res->rnd[(PFI_STRAT_EQUAL * nc + k30) * R1],
                                 *c = &res->rnd[(PFI_STRAT_SAFE_ONLINE * nc + k30) * R1];
        int last = res->srounds[PFI_STRAT_SAFE_ONLINE], r5 = last < 5 ? last : 5;
        double gap = o->mean_total - e->mean_total;
        fprintf(stderr,
                "pfi simulate: %s, 30%% cut: safe-online closes %.4g%% of the gap from the "
                "reference (equal weight with the tier floors) to the oracle by round %d, "
                "%.4g%% by round %d; %+.4g %s per job over the reference\n",
                sc ? "production mix" : "random mix",
                gap > 0 ? 100 * (c[r5].mean_total - e->mean_total) / gap : NAN, r5,
                gap > 0 ? 100 * (c[last].mean_total - e->mean_total) / gap : NAN, last,
                (c[last].mean_total - e->mean_total) / (double)so->jobs,
                so->normalized ? "(normalized)" : "tokens/s");
    }
    if (!(k30 < nc && (so->strategies & (1u << PFI_STRAT_ORACLE)) &&
          (so->strategies & (1u << PFI_STRAT_EQUAL)) &&
          (so->strategies & (1u << PFI_STRAT_PFI_AWARE))))
        return;
    double O = res->cell[PFI_STRAT_ORACLE * nc + k30].mean_total,
           E = res->cell[PFI_STRAT_EQUAL * nc + k30].mean_total;
    double A = res->cell[PFI_STRAT_PFI_AWARE * nc + k30].mean_total;
    fprintf(stderr,
            "pfi simulate: %s, 30%% cut: pfi-aware%s recovers %+.4g %s per job over equal weight, "
            "%.4g%% of the equal-to-oracle gap%s\n",
            sc ? "production mix" : "random mix",
            a->po.pfi == PFI_PFI_MEASURED          ? " (measured PFI)"
            : a->po.pfi == PFI_PFI_MEASURED_ROBUST ? " (measured robust PFI)"
                                                   : "",
            (A - E) / (double)so->jobs, so->normalized ? "(normalized)" : "tokens/s",
            O > E ? 100 * (A - E) / (O - E) : NAN, sc ? " (paper: +1.5k tokens/s, 63%)" : "");
    if (so->strategies & (1u << PFI_STRAT_CLOSED_LOOP)) {
        fprintf(stderr, "pfi simulate: %s, 30%% cut, closed loop gap closed by round:",
                sc ? "production" : "random");
        for (int q = 0; q <= res->loop_rounds; q++) {
            fprintf(stderr, " %.0f%%", 100 * res->loop_gap_closed[q]);
            size_t lr = pfi_rows_add(LR);
            pfi_rows_text(LR, lr, 0, sc ? "production" : "random");
            pfi_rows_int(LR, lr, 1, q);
            pfi_rows_num(LR, lr, 2, res->loop_gap_closed[q]);
        }
        fprintf(stderr, "\n");
    }
}

/* every scenario on the pool's n jobs; the rows printed, the loop CSV written */
static int sim_scenarios(const char *cmd, simulate_args *a, const pfi_pool *P, size_t n)
{
    const char *names[] = {"scenario",           "strategy",          "cut",
                           "total_tokens_per_s", "deficit_vs_oracle", "gap_closed",
                           "recovered_per_job",  "sla_violations",    "infeasible_workloads",
                           "certificate_gap"};
    pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM,
                        PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_INT, PFI_CELL_INT, PFI_CELL_NUM};
    pfi_rows *R = pfi_rows_new(10, names, t);
    const char *lnames[] = {"scenario", "round", "gap_closed"};
    pfi_celltype lt[] = {PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_NUM};
    pfi_rows *LR = pfi_rows_new(3, lnames, lt);
    const char *snames[] = {"scenario",
                            "strategy",
                            "cut",
                            "round",
                            "total",
                            "total_raw",
                            "gap_points",
                            "scored",
                            "gap_closed",
                            "gap_closed_raw",
                            "sla_violations",
                            "sla_violations_oracle_feasible",
                            "violating_workloads_oracle_feasible",
                            "infeasible_workloads",
                            "over_budget_workloads",
                            "oracle_infeasible_workloads",
                            "workloads_below_ref_5pct_gap",
                            "workloads_below_ref_20pct_gap",
                            "worst_vs_ref_in_gaps",
                            "sla_violations_oracle_feasible_margin",
                            "violating_workloads_oracle_feasible_margin",
                            "offered_workloads",
                            "sla_violations_offered",
                            "sla_violations_offered_margin"};
    pfi_celltype stt[24] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_INT, PFI_CELL_NUM,
                            PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_NUM,
                            PFI_CELL_INT,  PFI_CELL_INT,  PFI_CELL_INT, PFI_CELL_INT, PFI_CELL_INT,
                            PFI_CELL_INT,  PFI_CELL_INT,  PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_INT,
                            PFI_CELL_INT,  PFI_CELL_INT,  PFI_CELL_INT, PFI_CELL_INT};
    pfi_rows *SR = pfi_rows_new(24, snames, stt);
    pfi_rows_table_fmt(R, 2, "%.2f");
    int rc = CLI_OK;
    for (int sc = 0; sc < 2 && rc == CLI_OK; sc++) {
        if (!(a->scen_mask & (1 << sc))) continue;
        a->so.scenario = (pfi_scenario)sc;
        pfi_allocsim_result res;
        pfi_error err;
        if (pfi_allocsim_run(P->jobs, P->is_ft, n, &a->so, &res, &err)) {
            cli_error(cmd, "%s", err.msg);
            rc = CLI_FAIL;
            break;
        }
        sim_rows(R, &a->so, &res, sc);
        score_rows(SR, &a->so, &res, sc);
        sim_report(a, &res, sc, LR);
        pfi_allocsim_result_dispose(&res);
    }
    if (rc == CLI_OK) rc = cli_save_rows(cmd, R, &a->out);
    if (rc == CLI_OK && a->loop_csv) {
        cli_out lo2 = {PFI_FMT_CSV, 1, a->loop_csv};
        rc = cli_save_rows(cmd, LR, &lo2);
    }
    if (rc == CLI_OK && a->score_csv) {
        cli_out so2 = {PFI_FMT_CSV, 1, a->score_csv};
        rc = cli_save_rows(cmd, SR, &so2);
    }
    pfi_rows_free(SR);
    pfi_rows_free(R);
    pfi_rows_free(LR);
    return rc;
}

/* the default set runs what the table allows; named strategies must run */
static void drop_unsupported(const char *cmd, simulate_args *a, pfi_groupset *S)
{
    pfi_log lg = cli_log(cmd);
    for (int s = 0; s < PFI_STRAT_COUNT && !a->strats_given; s++) {
        char col[128];
        int lack = a->so.strategies & (1u << s)
                       ? pfi_pool_lacks(S, &a->po, (pfi_strategy)s, col, sizeof col)
                       : 0;
        if (!lack) continue;
        a->so.strategies &= ~(1u << s);
        pfi_warnf(&lg, "skipping %s: the table has no column '%s'%s",
                  pfi_strategy_name((pfi_strategy)s), col,
                  lack == PFI_POOL_LACK_PFI_FIT
                      ? " for the in-sample PFI fit (see --features, --model, --pfi measured)"
                  : lack == PFI_POOL_LACK_CURVE_FIT
                      ? " for the in-sample curve fit (see --features, --curve-model)"
                      : "");
    }
    a->po.strategies = a->so.strategies;
    a->so.op_pfi_true = a->po.pfi != PFI_PFI_PREDICTED;
}

static int simulate_run(const char *cmd, simulate_args *a, char **paths, int npaths)
{
    if (npaths < 1) return cli_usage_error(cmd, "no sweep table given");
    if (a->po.model && a->po.pfi != PFI_PFI_PREDICTED)
        return cli_usage_error(cmd, "--model predicts the PFI: it cannot be combined with --pfi %s",
                               pfi_pfi_source_name(a->po.pfi));
    pfi_groupset S;
    if (cli_gset_load(cmd, paths, npaths, a->gpu_model, &S)) return CLI_FAIL;
    drop_unsupported(cmd, a, &S);
    size_t *use = malloc(S.gs.n * sizeof *use), n = 0;
    int rc = CLI_OK;
    for (size_t i = 0; i < S.gs.n && rc == CLI_OK; i++) {
        int m = cli_group_match_all(cmd, &S, &S.gs.g[i], a->pool_w.v, a->pool_w.n);
        if (m < 0) rc = CLI_USAGE;
        else if (m && S.gs.g[i].curve.n >= 2) use[n++] = i;
    }
    if (rc == CLI_OK && n == 0) {
        cli_error(cmd, "no job with at least two caps in the pool");
        rc = CLI_FAIL;
    }
    pfi_pool P;
    if (rc == CLI_OK && cli_pool_build(cmd, &S, use, n, &a->po, &P)) {
        pfi_pool_dispose(&P);
        rc = CLI_FAIL;
    } else if (rc == CLI_OK) {
        if ((a->scen_mask & 2) && !P.have_task) {
            pfi_log lg = cli_log(cmd);
            pfi_warnf(&lg, "no task column: the production mix draws like random");
        }
        rc = sim_scenarios(cmd, a, &P, n);
        pfi_pool_dispose(&P);
    }
    free(use);
    pfi_groupset_dispose(&S);
    return rc;
}

int cmd_simulate(int argc, char **argv)
{
    simulate_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    pfi_allocsim_opts_default(&a.so);
    a.so.strategies = PFI_STRAT_ALL;
    a.po = (pfi_pool_opts){.target = "pfi", .pfi = PFI_PFI_PREDICTED};
    a.scen_mask = 3;
    int first, rc = cli_parse(&cmd_simulate_opts, &a, argc, argv, &first);
    if (rc < 0) rc = simulate_run("simulate", &a, argv + first, argc - first);
    pfi_opts_dispose(&cmd_simulate_opts, &a);
    return rc;
}
