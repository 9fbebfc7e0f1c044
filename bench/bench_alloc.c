/* bench_alloc.c — allocation speed: (1) the paper's full simulation (500
 * workloads x 100 jobs x 41 cuts x 2 scenarios) with its five strategies and
 * the envelope oracle with its certificate, on the reconstruction's headline
 * groups (target < 5 s on one core); curve-aware and closed-loop timed
 * separately; (2) the exact oracle (branch and bound) on one 100-job
 * workload of non-concave curves; (3) the envelope oracle on 10^4, 10^5 and
 * 10^6 jobs x 6 caps (targets: <= 1.3 ms at 10^4, < 100 ms at 10^5, <= 0.5 s
 * at 10^6), beside GLPK's simplex on the same concave LP at 10^4 jobs, timed
 * in the same run; each size prints the one-budget path it took and its
 * page faults per call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "allocsim.h"
#include "bench_common.h"
#include "pfi/alloc.h"
#include "pfi/groups.h"
#include "pfi/pfi.h"
#include "pfi/predictor.h"
#include "pfi/sweep.h"
#include "recon_io.h"
#include "synth.h"
#include "util.h"
#ifdef PFI_HAVE_GLPK
#include <glpk.h>
#endif

static void paper_simulation(const char *data)
{
    char spec[4096], params[4096];
    snprintf(spec, sizeof spec, "%s/reconstruction/spec.csv", data);
    snprintf(params, sizeof params, "%s/reconstruction/params.csv", data);
    pfi_recon r;
    pfi_error e;
    if (pfi_recon_load(spec, params, &r, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    pfi_curve *cv = calloc(r.n, sizeof *cv);
    pfi_alloc_job *pool = calloc(r.n, sizeof *pool);
    int *ft = calloc(r.n, sizeof *ft);
    double *X = calloc(r.n, sizeof *X), *y = calloc(r.n, sizeof *y);
    size_t n = 0;
    pfi_synth_opts so;
    pfi_synth_opts_default(&so);
    for (size_t i = 0; i < r.n; i++) {
        if (strcmp(r.g[i].split, "headline")) continue;
        pfi_point pts[8];
        double dcp = 0;
        for (int k = 0; k < r.g[i].ncaps; k++) {
            pfi_run_summary s;
            pfi_synth_summary(&r.g[i], k, &so, &s, &e);
            pts[k] = (pfi_point){r.g[i].caps_w[k], s.power_w, s.tokens_per_s, NAN, NAN, 1};
            if (k == r.g[i].ncaps - 1) dcp = s.derived[PFI_D_DRAM_COPY_PRODUCT];
            pfi_run_summary_dispose(&s);
        }
        pfi_curve_init(&cv[n], pts, (size_t)r.g[i].ncaps, NULL);
        pfi_eq1_result q;
        pfi_eq1(&cv[n], &q);
        X[n] = dcp;
        y[n] = q.pfi;
        const pfi_point *u = pfi_curve_uncapped(&cv[n]);
        pool[n] = (pfi_alloc_job){r.g[i].gpus,
                                  u->tokens_per_s,
                                  u->power_w,
                                  cv[n].pts[0].power_w,
                                  &cv[n],
                                  NULL,
                                  0,
                                  dcp,
                                  !strcmp(r.g[i].arch, "moe") && !strcmp(r.g[i].task, "ft"),
                                  -1,
                                  200,
                                  700,
                                  NULL,
                                  NULL,
                                  0,
                                  NULL};
        ft[n] = !strcmp(r.g[i].task, "ft");
        n++;
    }
    pfi_pfi_model m;
    pfi_pfi_model_fit(X, y, n, 1, &m, &e);
    for (size_t i = 0; i < n; i++) pool[i].pfi_pred = pfi_pfi_model_predict(&m, &X[i], NULL, NULL);
    pfi_pfi_model_dispose(&m);
    pfi_allocsim_opts o;
    pfi_allocsim_opts_default(&o);
    double t0 = bench_cpu();
    for (int sc = 0; sc < 2; sc++) {
        o.scenario = (pfi_scenario)sc;
        pfi_allocsim_result res;
        pfi_allocsim_run(pool, ft, n, &o, &res, &e);
        pfi_allocsim_result_dispose(&res);
    }
    double t1 = bench_cpu();
    printf("paper simulation: 500 workloads x 100 jobs x 41 cuts x 2 scenarios, oracle + equal + "
           "moe-ft-weighted + pfi-aware + dcgm\n");
    BENCH_RESULT("simulate_paper_five_plus_oracle_cpu_s", t1 - t0, "s", "< 5 s");
    /* curve-aware needs predicted curves: the in-sample curve model */
    pfi_curve_model cm;
    const pfi_curve **cp = malloc(n * sizeof *cp);
    for (size_t i = 0; i < n; i++) cp[i] = &cv[i];
    pfi_curve_model_fit(X, cp, n, 1, &cm, &e);
    pfi_curve *pc = calloc(n, sizeof *pc);
    for (size_t i = 0; i < n; i++) {
        const pfi_point *u = pfi_curve_uncapped(&cv[i]);
        pfi_curve_model_curve(&cm, &X[i], u->cap_w, u->tokens_per_s, u->power_w, &pc[i], &e);
        pool[i].pred_curve = &pc[i];
    }
    o.strategies = 1u << PFI_STRAT_CURVE_AWARE;
    t0 = bench_cpu();
    for (int sc = 0; sc < 2; sc++) {
        o.scenario = (pfi_scenario)sc;
        pfi_allocsim_result res;
        pfi_allocsim_run(pool, ft, n, &o, &res, &e);
        pfi_allocsim_result_dispose(&res);
    }
    t1 = bench_cpu();
    BENCH_RESULT("simulate_paper_curve_aware_cpu_s", t1 - t0, "s", "reported");
    o.strategies = 1u << PFI_STRAT_CLOSED_LOOP;
    o.workloads = 50;
    t0 = bench_cpu();
    for (int sc = 0; sc < 2; sc++) {
        o.scenario = (pfi_scenario)sc;
        pfi_allocsim_result res;
        pfi_allocsim_run(pool, ft, n, &o, &res, &e);
        pfi_allocsim_result_dispose(&res);
    }
    t1 = bench_cpu();
    printf("closed loop (5 rounds): 50 workloads x 41 cuts x 2 scenarios in %.2f s; scaled to 500 "
           "workloads:\n",
           t1 - t0);
    BENCH_RESULT("simulate_paper_closed_loop_cpu_s_x500", (t1 - t0) * 10, "s", "reported");
    /* exact oracle on one workload of 100 jobs drawn from the pool (non-concave after noise) */
    pfi_alloc_job w[100];
    double sum = 0;
    for (int j = 0; j < 100; j++) {
        w[j] = pool[pfi_mix64((uint64_t)j) % n];
        sum += w[j].power_max_w;
    }
    double P[100], best;
    t0 = bench_cpu();
    pfi_status st = pfi_alloc_exact(w, 100, 0.7 * sum, 0, P, &best, 2000000, &e);
    t1 = bench_cpu();
    double env;
    double b = 0.7 * sum, gap;
    pfi_oracle_sweep(w, 100, &b, 1, 0, &env, &gap, NULL);
    printf("exact oracle (branch and bound), 100 jobs, 30%% cut: %s, optimum %.1f vs envelope "
           "oracle %.1f (certificate %.3g)\n",
           st ? e.msg : "solved", best, env, gap);
    BENCH_RESULT("oracle_exact_bb_100_jobs_cpu_s", t1 - t0, "s", "reported");
    for (size_t i = 0; i < n; i++) {
        pfi_curve_dispose(&cv[i]);
        pfi_curve_dispose(&pc[i]);
    }
    pfi_curve_model_dispose(&cm);
    free(cv), free(pc), free(cp), free(pool), free(ft), free(X), free(y);
    pfi_recon_dispose(&r);
}

/* n concave jobs x 6 caps */
static pfi_alloc_job *concave_jobs(size_t n, pfi_curve **curves, double *sum)
{
    pfi_alloc_job *jobs = malloc(n * sizeof *jobs);
    *curves = malloc(n * sizeof **curves);
    *sum = 0;
    for (size_t i = 0; i < n; i++) {
        double e = 0.3 + 0.6 * (double)(pfi_mix64(i) % 1000) / 1000.0,
               scale = 1 + (double)(pfi_mix64(i + 7) % 7);
        pfi_point pts[6];
        for (int k = 0; k < 6; k++) {
            double cap = 200 + 100 * k, p = 8 * (150 + 0.75 * cap) * scale;
            pts[k] =
                (pfi_point){cap, p, 1000 * scale * pow(p / (8 * 675.0 * scale), e), NAN, NAN, 1};
        }
        pfi_curve_init(&(*curves)[i], pts, 6, NULL);
        const pfi_point *u = pfi_curve_uncapped(&(*curves)[i]);
        jobs[i] = (pfi_alloc_job){8,
                                  u->tokens_per_s,
                                  u->power_w,
                                  (*curves)[i].pts[0].power_w,
                                  &(*curves)[i],
                                  NULL,
                                  1.5,
                                  0.1,
                                  0,
                                  -1,
                                  200,
                                  700,
                                  NULL,
                                  NULL,
                                  0,
                                  NULL};
        *sum += u->power_w;
    }
    return jobs;
}

#ifdef PFI_HAVE_GLPK
/* the same concave problem as an LP: keep y_is of each segment (slope s, length L) */
static double glpk_lp(const pfi_alloc_job *jobs, size_t n, double budget, double *value)
{
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MAX);
    glp_add_rows(lp, 1);
    int ncol = (int)(n * 5);
    glp_add_cols(lp, ncol);
    int *ia = malloc((size_t)(ncol + 1) * sizeof *ia),
        *ja = malloc((size_t)(ncol + 1) * sizeof *ja);
    double *ar = malloc((size_t)(ncol + 1) * sizeof *ar), base_p = 0, base_t = 0;
    int c = 0;
    for (size_t i = 0; i < n; i++) {
        const pfi_curve *cv = jobs[i].curve;
        base_p += cv->pts[0].power_w;
        base_t += cv->pts[0].tokens_per_s;
        for (int k = 1; k < 6; k++) {
            double L = cv->pts[k].power_w - cv->pts[k - 1].power_w,
                   s = (cv->pts[k].tokens_per_s - cv->pts[k - 1].tokens_per_s) / L;
            c++;
            glp_set_col_bnds(lp, c, GLP_DB, 0, L);
            glp_set_obj_coef(lp, c, s);
            ia[c] = 1, ja[c] = c, ar[c] = 1;
        }
    }
    glp_set_row_bnds(lp, 1, GLP_UP, 0, budget - base_p);
    glp_load_matrix(lp, c, ia, ja, ar);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    double t0 = bench_now();
    glp_simplex(lp, &parm);
    double t = bench_now() - t0;
    *value = glp_get_obj_val(lp) + base_t;
    glp_delete_prob(lp);
    free(ia), free(ja), free(ar);
    return t;
}
#endif

static const char *oracle_path_name(oracle_path p)
{
    switch (p) {
    case ORACLE_SORTED: return "sorted (several budgets)";
    case ORACLE_SELECT: return "selection on every segment";
    case ORACLE_BRACKET: return "sample bracket, selection inside it";
    case ORACLE_BRACKET_MISSED: return "sample bracket MISSED, selection on the side it missed";
    }
    return "?";
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sizes[0..2] (only: one size, e.g. for a profile; 0: all three) */
static void oracle_scale(int with_glpk, size_t only)
{
    size_t sizes[] = {10000, 100000, 1000000};
    for (int s = 0; s < 3; s++) {
        if (only && sizes[s] != only) continue;
        pfi_curve *cv;
        double sum;
        pfi_alloc_job *jobs = concave_jobs(sizes[s], &cv, &sum);
        double b = 0.7 * sum, tot, gap;
        /* the median of several runs (the first one pays for page faults) */
        enum { RUNS = 9 };
        double ts[RUNS];
        int runs = sizes[s] >= 1000000 ? 5 : RUNS;
        oracle_trace tr = {0};
        long faults = 0;
        for (int r = 0; r < runs; r++) {
            long f0 = bench_minor_faults();
            double t0 = bench_now();
            oracle_sweep(jobs, sizes[s], &b, 1, 0, &tot, &gap, &tr, NULL);
            ts[r] = bench_now() - t0;
            if (r) faults += bench_minor_faults() - f0; /* the first run's are the first touch */
        }
        qsort(ts, (size_t)runs, sizeof *ts, cmp_double);
        double t = ts[runs / 2];
        char name[64];
        snprintf(name, sizeof name, "oracle_%zu_jobs_x6_caps_ms", sizes[s]);
        BENCH_RESULT(name, t * 1000, "ms",
                     s == 0   ? "<= 1.3 ms (GLPK / 3000)"
                     : s == 1 ? "< 100 ms"
                              : "<= 500 ms");
        printf("  (median of %d runs; min %.3f ms, max %.3f ms)\n", runs, ts[0] * 1000,
               ts[runs - 1] * 1000);
        printf("  path: %s (%zu segments, the selection on %zu); %ld page faults per run after "
               "the first\n",
               oracle_path_name(tr.path), tr.segments, tr.selected, faults / (runs - 1));
#ifdef PFI_HAVE_GLPK
        if (s == 0 && with_glpk) {
            double v;
            double tg = glpk_lp(jobs, sizes[s], b, &v);
            printf("  GLPK simplex on the same 10,000-job LP: %.3f s (objective %.6g vs oracle "
                   "%.6g): %.0fx the oracle's time\n",
                   tg, v, tot, tg / t);
            BENCH_RESULT("glpk_lp_10000_jobs_s", tg, "s", "reported");
            BENCH_RESULT("glpk_over_oracle_time_ratio_10000_jobs", tg / t, "x", "reported");
        }
#endif
        for (size_t i = 0; i < sizes[s]; i++) pfi_curve_dispose(&cv[i]);
        free(cv);
        free(jobs);
    }
}

/* the exact oracle where curves are really non-concave: 100 jobs drawn from
 * the Zeus A40 + V100 groups (measured once per point, noisy), normalized */
static void exact_on_zeus(const char *data)
{
    pfi_table *t = pfi_table_new();
    pfi_error e;
    char path[4096];
    const char *f[] = {"summary_power_a40.csv", "summary_power_v100.csv"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/zeus/%s", data, f[i]);
        if (pfi_sweep_read(t, path, NULL, NULL, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            pfi_table_free(t);
            return;
        }
    }
    pfi_groups gs;
    pfi_groups_build(t, &gs, &e);
    for (size_t jobs = 20; jobs <= 100; jobs += 40) {
        pfi_alloc_job *w = calloc(jobs, sizeof *w);
        double sum = 0;
        for (size_t j = 0; j < jobs; j++) {
            const pfi_group *g = &gs.g[pfi_mix64(j + 11) % gs.n];
            const pfi_point *u = pfi_curve_uncapped(&g->curve);
            double pmin = u->power_w;
            for (size_t k = 0; k < g->curve.n; k++) pmin = fmin(pmin, g->curve.pts[k].power_w);
            w[j] = (pfi_alloc_job){1,          u->tokens_per_s,
                                   u->power_w, pmin,
                                   &g->curve,  NULL,
                                   1,          0,
                                   0,          -1,
                                   100,        300,
                                   NULL,       NULL,
                                   0,          NULL};
            sum += u->power_w;
        }
        double *P = malloc(jobs * sizeof *P), worst_gap = 0, t_all = 0, worst_rel = 0;
        int solved = 0;
        for (int c = 1; c <= 40; c++) {
            double b = (1 - 0.01 * c) * sum, env, gap, best;
            pfi_oracle_sweep(w, jobs, &b, 1, 1, &env, &gap, NULL);
            double t0 = bench_cpu();
            pfi_status st = pfi_alloc_exact(w, jobs, b, 1, P, &best, 5000000, &e);
            t_all += bench_cpu() - t0;
            if (!st) {
                solved++;
                if (gap > worst_gap) worst_gap = gap;
                if ((best - env) / best > worst_rel) worst_rel = (best - env) / best;
            }
        }
        printf(
            "exact oracle on %zu Zeus jobs (non-concave), cuts 1..40%%: %d of 40 solved; envelope "
            "oracle below the optimum by at most %.2e (relative), certificate at most %.4f\n",
            jobs, solved, worst_rel, worst_gap);
        char name[64];
        snprintf(name, sizeof name, "oracle_exact_bb_zeus_%zu_jobs_40_cuts_cpu_s", jobs);
        BENCH_RESULT(name, t_all, "s", "reported");
        free(P);
        free(w);
    }
    pfi_groups_dispose(&gs);
    pfi_table_free(t);
}

/* `bench_alloc oracle [JOBS]`: only the oracle's scaling (no GLPK, no data),
 * at one of its sizes when JOBS is given */
int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "oracle") == 0) {
        oracle_scale(0, argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 0);
        return 0;
    }
    const char *data = getenv("PFI_DATA_DIR");
    if (data) paper_simulation(data);
    if (data) exact_on_zeus(data);
    oracle_scale(1, 0);
    return 0;
}
