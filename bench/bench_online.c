/* bench_online.c — safe-online's online cost: one round (measurements in,
 * next targets out) for 1,000 jobs of 6-cap concave and non-concave curves,
 * after a few rounds so that every job has several measured points; the
 * median and the largest of 50 rounds, CPU time (target <= 10 ms). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pfi/alloc.h"
#include "util.h"

enum { N = 1000, NC = 6, ROUNDS = 50, WARM = 8 };

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* a job's throughput at power p on its curve (linear between caps) */
static double curve_at(const pfi_curve *c, double p)
{
    if (p <= c->pts[0].power_w) return c->pts[0].tokens_per_s;
    for (size_t k = 1; k < c->n; k++)
        if (p <= c->pts[k].power_w) {
            const pfi_point *a = &c->pts[k - 1], *b = &c->pts[k];
            return a->tokens_per_s + (p - a->power_w) / (b->power_w - a->power_w) *
                                         (b->tokens_per_s - a->tokens_per_s);
        }
    return c->pts[c->n - 1].tokens_per_s;
}

int main(void)
{
    static pfi_curve cv[N];
    static pfi_alloc_job jobs[N];
    static double pw[N], pse[N], tk[N], tse[N], next[N];
    uint64_t seed = 7;
    double sum_max = 0;
    for (size_t i = 0; i < N; i++) {
        pfi_point pts[NC];
        double pfi = 1 + 3 * (double)(pfi_mix64(seed + i) % 1000) / 1000, convex = (i % 5 == 0);
        for (int k = 0; k < NC; k++) {
            double cap = 200 + 100 * k, p = 8 * cap, x = 1 - p / 5600;
            double r = convex ? 1 - x / pfi - 0.3 * x * (1 - x) : 1 - x / pfi + 0.2 * x * (1 - x);
            pts[k] = (pfi_point){cap, p, 1000 * r, NAN, NAN, 1};
        }
        pfi_curve_init(&cv[i], pts, NC, NULL);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i] = (pfi_alloc_job){8, 1000, 5600, 1600, &cv[i], NULL, pfi, 0,
                                  0, -1,   200,  700,  NULL,   NULL, 0,   NULL};
        sum_max += 5600;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_online_opts oo;
    pfi_online_opts_default(&oo);
    pfi_online *s;
    pfi_error e;
    double budget = 0.7 * sum_max;
    if (pfi_online_new(jobs, N, budget, &o, &oo, &s, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double t[ROUNDS];
    for (int r = 0; r < WARM + ROUNDS; r++) {
        const double *cur = pfi_online_targets(s);
        for (size_t i = 0; i < N; i++) {
            double noise =
                ((double)(pfi_mix64(seed * 31 + (uint64_t)(r * N) + i) % 2001) - 1000) / 1e6;
            pw[i] = cur[i];
            pse[i] = 0.003 * cur[i];
            tk[i] = curve_at(&cv[i], cur[i]) * (1 + noise);
            tse[i] = 0.003 * tk[i];
        }
        double t0 = bench_cpu();
        if (pfi_online_round(s, budget, pw, pse, tk, tse, next, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        double dt = bench_cpu() - t0;
        if (r >= WARM) t[r - WARM] = dt;
    }
    qsort(t, ROUNDS, sizeof *t, cmp_d);
    BENCH_RESULT("safe-online: one round, 1000 jobs (median)", 1e3 * t[ROUNDS / 2], "ms", "<= 10");
    BENCH_RESULT("safe-online: one round, 1000 jobs (max of 50)", 1e3 * t[ROUNDS - 1], "ms",
                 "<= 10");
    pfi_online_free(s);
    for (size_t i = 0; i < N; i++) pfi_curve_dispose(&cv[i]);
    return 0;
}
