/* bench_forecast.c — the offer's forecast against the offer realised
 * (issue 44: "the forecast's error against the realised offer over 24 h").
 * Through the controller's own offer and forecast (ctl_offer_eval_json:
 * the same snapshot, plan and ctl_forecast.c as GET /v1/offer), a queue in
 * squeue's form built here, and a Slurm-like cluster simulated here.
 *
 * The cluster: 64 nodes x 8 GPUs (200–700 W). Jobs arrive as a Poisson
 * stream (BENCH_FC_RATE per hour, 18: a little over the cluster, so a
 * queue forms), each asking 1, 2, 4, 8 or 16 GPUs (weights 3, 3, 2, 2, 1)
 * and a time limit of 1, 2, 4, 8, 12 or 24 h, and running a uniform 20–100%
 * of it (users ask more than they use). FIFO without backfill: the head
 * starts as soon as enough GPUs are free. A job's tier is drawn from Flex
 * 0/1/2/3 = 10/30/30/30%; a job running for an hour has been profiled:
 * three measured points of its curve, tokens ∝ (P / P_max)^e with e
 * uniform in 0.1..1.0 (younger ones are on the proportional bound).
 *
 * Each hour from 6 h (warm-up) to 30 h: the controller's state holds the
 * running jobs, the queue says each running job's end at its limit and
 * each pending job's expected start (the GPUs it needs free when the jobs
 * ahead end at their limits: what Slurm's scheduler estimates), and the
 * offer's forecast for 1..6 h ahead is kept; an hour later, and up to six,
 * the offer of the fleet then running is what was realised. Printed per
 * horizon: forecasts, the mean realised 5% offer, the mean signed error
 * (forecast − realised) and the mean absolute error, in kW and in % of the
 * realised; the same for the persistence forecast (today's offer held),
 * which is what a site without Slurm's queue gets. Seeds 1..BENCH_FC_SEEDS
 * (3). */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "ctl.h"
#include "ctl_offer_snap.h"

#define NODES 64
#define GPN 8
#define GPUS (NODES * GPN)
#define H 6          /* forecast horizon, hours */
#define T0_H 6       /* warm-up */
#define T1_H 30      /* last forecast */
#define MAXJ 4096    /* jobs in a run */
#define COST 3       /* the 5% offer */
#define STEP_S 300.0 /* the cluster's clock step */

typedef struct sjob {
    char id[16];
    int gpus, tier;
    double submit_t, limit_s, run_s, start_t, expo; /* start_t NaN: pending */
    int done;
} sjob;

static uint64_t g_rng;
static double uniform(void)
{
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static int pick(const int *w, int n)
{
    int tot = 0;
    for (int i = 0; i < n; i++) tot += w[i];
    double u = uniform() * tot;
    for (int i = 0; i < n; i++)
        if ((u -= w[i]) < 0) return i;
    return n - 1;
}

/* the jobs submitted by time t_end (a Poisson stream at rate per hour) */
static int make_jobs(sjob *J, double rate_h, double t_end)
{
    static const int gw[] = {3, 3, 2, 2, 1}, gv[] = {1, 2, 4, 8, 16};
    static const double lv[] = {1, 2, 4, 8, 12, 24};
    static const int lw[] = {1, 1, 1, 1, 1, 1}, tw[] = {1, 3, 3, 3};
    int n = 0;
    for (double t = 0; n < MAXJ;) {
        t += -log(1 - uniform()) * 3600 / rate_h;
        if (t > t_end) break;
        sjob *j = &J[n];
        memset(j, 0, sizeof *j);
        snprintf(j->id, sizeof j->id, "%d", 1000 + n);
        j->gpus = gv[pick(gw, 5)];
        j->limit_s = 3600 * lv[pick(lw, 6)];
        j->run_s = j->limit_s * (0.2 + 0.8 * uniform());
        j->tier = pick(tw, 4);
        j->expo = 0.1 + 0.9 * uniform();
        j->submit_t = t;
        j->start_t = NAN;
        n++;
    }
    return n;
}

/* advance the cluster to time t: jobs end, the FIFO head starts when it fits */
static void advance(sjob *J, int n, double t)
{
    int used = 0;
    for (int k = 0; k < n; k++) {
        sjob *j = &J[k];
        if (isfinite(j->start_t) && !j->done && j->start_t + j->run_s <= t) j->done = 1;
        if (isfinite(j->start_t) && !j->done) used += j->gpus;
    }
    for (int k = 0; k < n; k++) { /* FIFO: stop at the first that does not fit */
        sjob *j = &J[k];
        if (j->submit_t > t || isfinite(j->start_t)) continue;
        if (used + j->gpus > GPUS) break;
        j->start_t = t, used += j->gpus;
    }
}

typedef struct ev {
    double t;
    int d; /* GPUs freed (+) */
} ev;
static int by_t(const void *a, const void *b)
{
    double x = ((const ev *)a)->t, y = ((const ev *)b)->t;
    return (x > y) - (x < y);
}

/* the queue at time t as squeue would print it: running jobs end at their
   limit; pending ones in order start when the GPUs free (the jobs ahead
   ending at their limits) fit them. wall: the Unix time t stands for */
static size_t queue_of(const sjob *J, int n, double t, double wall, pfi_squeue_job *q)
{
    static ev e[2 * MAXJ];
    size_t ne = 0, nq = 0;
    int freeg = GPUS;
    for (int k = 0; k < n; k++) {
        const sjob *j = &J[k];
        if (!isfinite(j->start_t) || j->done) continue;
        freeg -= j->gpus;
        e[ne++] = (ev){j->start_t + j->limit_s, j->gpus};
        q[nq] = (pfi_squeue_job){.running = 1,
                                 .start_t = wall + j->start_t - t,
                                 .end_t = wall + j->start_t + j->limit_s - t,
                                 .limit_s = j->limit_s,
                                 .gpus = j->gpus};
        memcpy(q[nq].id, j->id, sizeof j->id), nq++;
    }
    qsort(e, ne, sizeof *e, by_t);
    size_t at = 0;
    double now = t;
    for (int k = 0; k < n; k++) {
        const sjob *j = &J[k];
        if (j->submit_t > t || isfinite(j->start_t)) continue;
        while (freeg < j->gpus && at < ne) {
            now = fmax(now, e[at].t);
            freeg += e[at++].d;
        }
        if (freeg < j->gpus) break;
        freeg -= j->gpus;
        /* its own end at its limit frees its GPUs for those behind it */
        e[ne++] = (ev){now + j->limit_s, j->gpus};
        qsort(e + at, ne - at, sizeof *e, by_t);
        q[nq] = (pfi_squeue_job){.running = 0,
                                 .start_t = wall + now - t,
                                 .end_t = wall + now + j->limit_s - t,
                                 .limit_s = j->limit_s,
                                 .gpus = j->gpus};
        memcpy(q[nq].id, j->id, sizeof j->id), nq++;
    }
    return nq;
}

/* the controller's state: the jobs running at t (profiled after an hour) */
static void state_of(const sjob *J, int n, double t, ctl_state *st)
{
    for (size_t k = 0; k < st->njobs; k++) free(st->job[k].agent_idx);
    st->njobs = 0;
    for (int k = 0; k < n; k++) {
        const sjob *j = &J[k];
        if (!isfinite(j->start_t) || j->done) continue;
        ctl_job *c = &st->job[st->njobs++];
        ctl_job_init(c, j->id, j->tier);
        c->gpus = j->gpus, c->seen = 1, c->reachable = 1;
        c->cap_min_w = 200, c->cap_max_w = c->hw_max_w = c->cap_w = 700;
        c->measured_w = j->gpus * 0.97 * 700;
        c->tokens_per_s = 1000.0 * j->gpus;
        if (t - j->start_t >= 3600) { /* profiled: three points of its curve */
            double pmax = c->measured_w;
            pfi_online_point pt[3];
            for (int i = 0; i < 3; i++) {
                double f = 0.9 - 0.15 * i;
                pt[i] = (pfi_online_point){f * pmax, 0.01 * pmax, c->tokens_per_s * pow(f, j->expo),
                                           0.01 * c->tokens_per_s};
            }
            ctl_known_set(c, pt, 3);
        }
    }
}

static double offer_kw(const json_t *o, int h)
{
    if (h == 0)
        return json_number_value(
            json_object_get(json_array_get(json_object_get(o, "offers"), COST), "total_kw"));
    json_t *p =
        json_array_get(json_object_get(json_object_get(o, "forecast"), "points"), (size_t)h - 1);
    return json_number_value(json_array_get(json_object_get(p, "total_kw"), COST));
}

typedef struct acc {
    double n, real, err, abs, rel_abs, perr, pabs;
} acc;

static int run(int seed, double rate, acc *A)
{
    const char *text = "{\"agents\": [{\"name\": \"n\", \"url\": \"http://127.0.0.1:1\", "
                       "\"token_file\": \"/t\"}], \"control_period_s\": 5, \"default_tier\": 2, "
                       "\"offer\": {\"horizon_h\": 6}}";
    ctl_cfg cfg;
    pfi_error e;
    if (ctl_config_parse(text, strlen(text), "bench", &cfg, &e)) {
        fprintf(stderr, "bench_forecast: %s\n", e.msg);
        return -1;
    }
    static sjob J[MAXJ];
    static pfi_squeue_job q[MAXJ];
    g_rng = 0x9e3779b97f4a7c15ULL * (uint64_t)seed + 11;
    int n = make_jobs(J, rate, 3600.0 * (T1_H + H));
    ctl_state st;
    memset(&st, 0, sizeof st);
    st.feasible = 1, st.plan_t = NAN;
    st.job = calloc(MAXJ, sizeof *st.job), st.job_cap = MAXJ;
    double fc[T1_H + H + 1][H + 1]; /* fc[hour][h]: the forecast made at hour for hour + h */
    double real[T1_H + H + 1];
    for (int i = 0; i <= T1_H + H; i++) {
        real[i] = NAN;
        for (int h = 0; h <= H; h++) fc[i][h] = NAN;
    }
    double wall = (double)time(NULL);
    for (double t = 0; t <= 3600.0 * (T1_H + H) + 1e-9; t += STEP_S) {
        advance(J, n, t);
        if (fmod(t, 3600) > 1e-9 || t < 3600.0 * T0_H) continue;
        int hour = (int)(t / 3600 + 0.5);
        state_of(J, n, t, &st);
        st.now = t;
        ctl_queue Q = {.job = q, .n = queue_of(J, n, t, wall, q), .read_t = wall};
        json_t *o = ctl_offer_eval_json(&cfg, NULL, &st, hour <= T1_H ? &Q : NULL);
        if (!o) return -1;
        real[hour] = offer_kw(o, 0);
        for (int h = 1; hour <= T1_H && h <= H; h++) fc[hour][h] = offer_kw(o, h);
        json_decref(o);
    }
    for (int hour = T0_H; hour <= T1_H; hour++)
        for (int h = 1; h <= H; h++) {
            double r = real[hour + h], f = fc[hour][h], p = real[hour];
            if (!isfinite(r) || !isfinite(f) || !(r > 0)) continue;
            acc *a = &A[h];
            a->n++, a->real += r, a->err += f - r, a->abs += fabs(f - r);
            a->rel_abs += fabs(f - r) / r, a->perr += p - r, a->pabs += fabs(p - r);
        }
    ctl_state_free(&st);
    ctl_config_free(&cfg);
    return 0;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && atoi(v) > 0 ? atoi(v) : dflt;
}

int main(void)
{
    int seeds = env_int("BENCH_FC_SEEDS", 3);
    double rate = env_int("BENCH_FC_RATE", 18);
    acc A[H + 1];
    memset(A, 0, sizeof A);
    double w0 = bench_now();
    for (int s = 1; s <= seeds; s++)
        if (run(s, rate, A)) return 1;
    printf("bench_forecast: the 5%% offer's forecast against the offer realised, %d seeds x "
           "25 hourly forecasts (6..30 h), %d GPUs, %.0f jobs/h, %.1f s\n",
           seeds, GPUS, rate, bench_now() - w0);
    printf("| ahead | forecasts | realised (mean) | forecast − realised (mean) | mean |error| | "
           "mean |error| / realised | persistence: mean error, mean |error| |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int h = 1; h <= H; h++) {
        const acc *a = &A[h];
        if (!a->n) continue;
        printf(
            "| %d h | %.0f | %.1f kW | %+.1f kW (%+.1f%%) | %.1f kW | %.1f%% | %+.1f kW, %.1f kW "
            "|\n",
            h, a->n, a->real / a->n, a->err / a->n, 100 * a->err / a->real, a->abs / a->n,
            100 * a->rel_abs / a->n, a->perr / a->n, a->pabs / a->n);
    }
    return 0;
}
