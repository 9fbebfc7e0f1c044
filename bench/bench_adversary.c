/* bench_adversary.c — a job cannot buy power (issue 41 (D)): the study of
 * named adversaries, each beside an identical honest twin, through the
 * controller's own decision (ctl_decide, the code pfi-controller runs; its
 * inputs read from each agent's /v1/control JSON by ctl_inputs_read, the
 * controller's own entry checks included). No daemon, no network: a plant
 * in this file answers each period's caps.
 *
 * The plant. Two agents, one job each, 4 GPUs of 200–700 W. Both jobs are
 * the same training job: it needs 560 W a GPU (its natural draw) and makes
 * 1,000 tokens/s a GPU there; under a cap c it makes 1,000 x (min(c,
 * 560) / 560)^0.4 tokens/s a GPU (truly; the exponent is the issue's).
 * Power beyond 560 W buys nothing. Its SM clock is 1,980 MHz at its own
 * uncapped draw and falls as (draw / that)^0.4 under a cap (what NVML
 * reports; no SM activity: the clock alone is checked). Each period adds
 * noise (seeded): 1% on power, 2% on tokens/s, 0.5% on the clock. The honest twin reports its
 * throughput and draws min(cap, 560). The hostile one, by adversary: inflate   draws 25% more when
 * uncapped (700 W a GPU), and its whole cap when capped (the waste fills whatever it is given);
 *   steep3    claims (p / 560)^3 x 1,000 tokens/s a GPU where it truly
 *             makes (p / 560)^0.4 (a lie that says cutting it costs much);
 *   huge      claims 1e308 tokens/s (as an old agent would pass it on);
 *   nan, inf  its step log says NaN / Inf: the agent refuses the lines
 *             (pfi_steplog), so its view carries no tokens_per_s;
 *   burst     claims 0 tokens/s for 10 periods, then 10x its truth for 10.
 *   none      the control: the same as its twin (what the strategy does
 *             to two identical jobs by itself).
 * The timeline (control period 5 s, baseline window 60 s, clock seconds):
 * both jobs start at 0 (profiles at job start as configured, default), an
 * event of 20% is announced at 1,200 s and starts at 1,500 s for 1,800 s.
 * Each job's throughput loss is its true throughput over the event's
 * steady part (from 300 s after its start to its end) against its true
 * uncapped throughput (4,000 tokens/s).
 *
 * Printed: for each strategy (equal, safe-online, pfi-aware) and adversary,
 * over seeds 1–5 (BENCH_ADV_SEEDS), the hostile job's and its twin's loss
 * (means), the worst of hostile − twin, the event's baseline, and the most
 * the lie bought: the hostile job's loss as the control's honest job (the
 * same seed) less its loss lying. The bars: hostile ≥ twin − 1 percentage
 * point, in every seed and on the mean over the seeds (the "over 5
 * seeds"); and gain ≤ 1 pp in every seed. `bench_adversary check` exits 1
 * when a named adversary (not fill, not the control) misses the gain bar
 * or the twin bar on the mean, under any strategy, or the twin bar in a
 * seed, under any but safe-online with inflate (the test suite runs it).
 * That one row is held on the mean only: safe-online's rounds, after a plan
 * that starts the two jobs alike, still drift them a point or two apart in
 * some seeds (seed 3: hostile 9.2%, twin 10.9%), a drift its rounds make of
 * two honest jobs too. Measured 2026-12-07 over 200 seeds: hostile 8.8%,
 * twin 8.9%, the control's two honest jobs 8.7% and 8.9%. Before the plan
 * needed a significant gain to leave the reference (alloc_online.c,
 * plan_gains) it split the control's identical jobs 17.5% / 1.3% in 2 seeds
 * of 5 and the inflating job kept 2.6 pp on its twin over 200 seeds.
 * Reported, not held: fill, stronger than the adversary (under
 * equal it keeps ~3 pp: its knee is estimated, not measured).  */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "ctl.h"

#define NGPU 4
#define NEED_W 560.0
#define TOK_GPU 1000.0
#define EXPO 0.4
#define PERIOD_S 5
#define ANNOUNCE_S 1200
#define START_S 1500
#define DUR_S 1800
#define CUT_PCT 20
#define SEEDS_DEFAULT 5 /* BENCH_ADV_SEEDS=N for more */
static int SEEDS = SEEDS_DEFAULT;

static const char *const ADV[] = {"none", "inflate", "fill", "steep3",
                                  "huge", "nan",     "inf",  "burst"};
#define NADV (sizeof ADV / sizeof *ADV)
static const char *const STRAT[] = {"equal", "safe-online", "pfi-aware"};
#define NSTRAT (sizeof STRAT / sizeof *STRAT)

static uint64_t g_rng;
static double gauss(void)
{
    double u = 0, v = 0;
    while (u <= 0) {
        g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
        u = (double)(g_rng >> 11) / 9007199254740992.0;
    }
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    v = (double)(g_rng >> 11) / 9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* a job's truth under a cap per GPU: tokens/s (all GPUs) */
static double true_tokens(double cap_w)
{
    return NGPU * TOK_GPU * pow(fmin(cap_w, NEED_W) / NEED_W, EXPO);
}

/* the agent's /v1/control view of one job under cap_w a GPU */
static json_t *view(const char *id, const char *adv, double cap_w, int uncapped, int period)
{
    double draw = fmin(cap_w, NEED_W), tok = true_tokens(cap_w);
    int hostile = adv != NULL && strcmp(adv, "none");
    if (hostile && !strcmp(adv, "inflate") && uncapped) draw = 1.25 * NEED_W;
    if (hostile && !strcmp(adv, "fill")) draw = uncapped ? 1.25 * NEED_W : fmin(cap_w, 700);
    double claim = tok;
    if (hostile && !strcmp(adv, "steep3"))
        claim = NGPU * TOK_GPU * pow(fmin(cap_w, NEED_W) / NEED_W, 3);
    if (hostile && !strcmp(adv, "huge")) claim = 1e308;
    if (hostile && !strcmp(adv, "burst")) claim = (period / 10) % 2 ? 10 * tok : 0;
    json_t *gpus = json_array(), *ids = json_array();
    for (int g = 0; g < NGPU; g++) {
        json_array_append_new(gpus, json_pack("[f,f,f,f]", 200.0, 700.0, cap_w, 700.0));
        json_array_append_new(ids, json_integer(g));
    }
    json_t *job =
        json_pack("{s:s,s:o,s:f,s:f,s:{s:f,s:f,s:f,s:f}}", "job_id", id, "gpus", ids, "power_w",
                  NGPU * draw * (1 + 0.01 * gauss()), "pfi_predicted", 0.5, "training_means",
                  "DCGM_FI_PROF_DRAM_ACTIVE", 0.4, "DCGM_FI_DEV_MEM_COPY_UTIL", 0.3,
                  "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.5, "DCGM_FI_PROF_SM_ACTIVE", 0.8);
    /* the SM clock: 1,980 MHz at the job's own uncapped draw, falling as
       (draw / that)^0.4 under a cap (the same law as its throughput: a
       compute-bound step, as the exponent says) */
    double own = hostile && (!strcmp(adv, "inflate") || !strcmp(adv, "fill")) && draw > NEED_W
                     ? 1.25 * NEED_W
                     : NEED_W;
    json_object_set_new(job, "sm_clock_mhz",
                        json_real(1980 * pow(fmin(draw, own) / own, EXPO) * (1 + 0.005 * gauss())));
    int refused = hostile && (!strcmp(adv, "nan") || !strcmp(adv, "inf")); /* by the agent */
    if (!refused) json_object_set_new(job, "tokens_per_s", json_real(claim * (1 + 0.02 * gauss())));
    return json_pack("{s:o,s:[o]}", "gpus", gpus, "jobs", job);
}

typedef struct outcome {
    double loss[2]; /* hostile, honest: 1 - true event throughput / uncapped */
    double baseline_w, shed_pct;
} outcome;

static int run(const char *strategy, const char *adv, int seed, outcome *out)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"agents\": [{\"name\": \"n1\", \"url\": \"http://127.0.0.1:1\", \"token_file\": "
             "\"/t\"}, {\"name\": \"n2\", \"url\": \"http://127.0.0.1:2\", \"token_file\": "
             "\"/t\"}], \"control_period_s\": %d, \"baseline_window_s\": 60, \"ramp_s\": 0, "
             "\"ramp_down_s\": 0, \"default_tier\": 3, \"strategy\": \"%s\"}",
             PERIOD_S, strategy);
    ctl_cfg cfg;
    pfi_error e;
    if (ctl_config_parse(text, strlen(text), "bench", &cfg, &e)) {
        fprintf(stderr, "bench_adversary: %s\n", e.msg);
        return -1;
    }
    ctl_state st;
    memset(&st, 0, sizeof st);
    st.feasible = 1;
    st.plan_t = NAN;
    ctl_agent_view agent[2];
    memset(agent, 0, sizeof agent);
    const char *ids[2] = {"hostile", "honest"};
    for (int a = 0; a < 2; a++) agent[a].up = 1, agent[a].lease_until = NAN;
    agent[0].name = "n1", agent[1].name = "n2";
    ctl_inputs in = {.agent = agent, .nagents = 2};
    ctl_decision dec;
    memset(&dec, 0, sizeof dec);
    g_rng = 0x9e3779b97f4a7c15ULL * (uint64_t)seed + 1;
    double cap[2] = {700, 700}, sum[2] = {0, 0};
    int n = 0;
    for (int t = 0, p = 0; t < START_S + DUR_S + 60; t += PERIOD_S, p++) {
        if (t == ANNOUNCE_S) {
            ctl_event *ev = ctl_state_event_new(&st);
            memset(ev, 0, sizeof *ev);
            snprintf(ev->ev.id, sizeof ev->ev.id, "cut");
            snprintf(ev->ev.source, sizeof ev->ev.source, "api");
            ev->ev.start = START_S;
            ev->ev.duration_s = DUR_S;
            ev->ev.kind = PFI_EV_REDUCTION;
            ev->ev.reduction_pct = CUT_PCT;
            ev->ev.ramp_s = ev->ev.ramp_down_s = NAN;
            ev->status = CTL_EV_SCHEDULED;
            ev->baseline_w = ev->target_w = ev->reached_t = NAN;
            ev->announced_t = t;
        }
        for (int a = 0; a < 2; a++) {
            json_t *v = view(ids[a], a == 0 ? adv : NULL, cap[a], cap[a] >= 699.5, p);
            int bad;
            if (ctl_inputs_read(&cfg, &agent[a], v, &bad)) return -1;
            json_decref(v);
        }
        if (ctl_decide(&cfg, NULL, &st, &in, t, &dec)) return -1;
        for (int a = 0; a < 2; a++) {
            cap[a] = 700;
            for (size_t k = 0; k < st.njobs; k++)
                if (!strcmp(st.job[k].id, ids[a]) && st.job[k].alloc_cap_w > 0)
                    cap[a] = fmin(700, st.job[k].alloc_cap_w);
        }
        if (t >= START_S + 300 && t < START_S + DUR_S) {
            for (int a = 0; a < 2; a++) sum[a] += true_tokens(cap[a]);
            n++;
        }
    }
    for (int a = 0; a < 2; a++) out->loss[a] = 1 - sum[a] / n / true_tokens(700);
    if (getenv("BENCH_ADV_DEBUG"))
        for (size_t k = 0; k < st.njobs; k++)
            fprintf(stderr,
                    "%s %s seed %d: %s base %.0f W (plateau %.0f, knee %.0f%s, %zu windows) "
                    "tokens %.0f untrusted %d prof %zu known %zu\n",
                    strategy, adv, seed, st.job[k].id, st.job[k].base_w,
                    st.job[k].base_how.plateau_w, st.job[k].base_how.knee_w,
                    st.job[k].base_how.knee_capped ? " capped" : "", st.job[k].base_how.nwin,
                    st.job[k].base_tokens, st.job[k].untrusted, st.job[k].prof.npt,
                    st.job[k].nknown);
    out->baseline_w = NAN;
    for (size_t i = 0; i < st.nevents; i++)
        if (!strcmp(st.event[i].ev.id, "cut")) out->baseline_w = st.event[i].baseline_w;
    out->shed_pct = NAN;
    ctl_state_free(&st);
    ctl_decision_free(&dec);
    for (int a = 0; a < 2; a++) free(agent[a].job), free(agent[a].nc);
    ctl_config_free(&cfg);
    return 0;
}

/* the adversaries (fill is stronger than it names, none the control) */
static int named(const char *adv)
{
    return strcmp(adv, "fill") && strcmp(adv, "none");
}

/* held by `check` in every seed: no gain against the same job honest;
   against the twin, the mean over the seeds, and every seed but
   safe-online's inflate (its rounds still move two jobs apart by a
   point or two in a seed, after a plan that starts them alike: see the
   header) */
static int twin_each_seed(const char *strategy, const char *adv)
{
    return strcmp(strategy, "safe-online") || strcmp(adv, "inflate");
}

int main(int argc, char **argv)
{
    double t0 = bench_now();
    const char *ns = getenv("BENCH_ADV_SEEDS");
    if (ns && atoi(ns) > 0 && atoi(ns) <= 1000) SEEDS = atoi(ns);
    int check = argc > 1 && !strcmp(argv[1], "check"), twin_ok = 1, gain_ok = 1, held_ok = 1;
    printf("bench adversary: 2 jobs x 4 GPUs (need 560 W/GPU, truly (p/560)^0.4), a 20%% event "
           "announced 300 s before its start; loss = 1 - true throughput in the event's steady "
           "part / uncapped; seeds 1-%d\n",
           SEEDS);
    printf("%-12s %-8s %9s %9s %11s %10s %11s %s\n", "strategy", "hostile", "loss_host",
           "loss_twin", "worst_diff", "base_kW", "max_gain",
           "vs twin each seed / mean / vs itself honest");
    for (size_t s = 0; s < NSTRAT; s++) {
        double control[1001];
        for (size_t a = 0; a < NADV; a++) {
            double lh = 0, lt = 0, worst = INFINITY, base = 0, gain = -INFINITY;
            int ok = 1;
            for (int seed = 1; seed <= SEEDS; seed++) {
                outcome o;
                if (run(STRAT[s], ADV[a], seed, &o)) return 1;
                lh += o.loss[0] / SEEDS, lt += o.loss[1] / SEEDS, base += o.baseline_w / SEEDS;
                double d = o.loss[0] - o.loss[1];
                if (getenv("BENCH_ADV_DEBUG"))
                    fprintf(stderr, "%s %s seed %d: loss hostile %.1f%% twin %.1f%%\n", STRAT[s],
                            ADV[a], seed, 100 * o.loss[0], 100 * o.loss[1]);
                if (d < worst) worst = d;
                ok &= d >= -0.01;
                /* what lying bought it: its loss as the control's honest job, same seed */
                if (!strcmp(ADV[a], "none")) control[seed] = o.loss[0];
                else if (control[seed] - o.loss[0] > gain) gain = control[seed] - o.loss[0];
            }
            int gok = !(gain > 0.01), mok = lh >= lt - 0.01;
            if (named(ADV[a])) {
                gain_ok &= gok, twin_ok &= ok && mok;
                held_ok &= gok && mok && (ok || !twin_each_seed(STRAT[s], ADV[a]));
            }
            printf("%-12s %-8s %8.1f%% %8.1f%% %+9.1fpp %10.2f %+9.1fpp %s / %s / %s\n", STRAT[s],
                   ADV[a], 100 * lh, 100 * lt, 100 * worst, base / 1000,
                   isfinite(gain) ? 100 * gain : 0.0, ok ? "yes" : "NO", mok ? "yes" : "NO",
                   strcmp(ADV[a], "none") ? (gok ? "yes" : "NO") : "-");
        }
    }
    printf("bench adversary: the issue's adversaries %s their twins (within 1 pp, every seed), "
           "and %s by lying (against the same job honest, same seed, within 1 pp) (%.1f s)\n",
           twin_ok ? "did no better than" : "did better than some of",
           gain_ok ? "gained nothing" : "gained", bench_now() - t0);
    printf("bench adversary: the checked rows (every named adversary and strategy: no gain on "
           "itself honest in any seed, no better than its twin on the mean, and in every seed "
           "but safe-online's inflate): %s\n",
           held_ok ? "held" : "SOME NOT HELD");
    return check && !held_ok;
}
