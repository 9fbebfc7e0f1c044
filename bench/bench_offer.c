/* bench_offer.c — the offer is delivered (issue 44): an event asking the
 * offer at cost c gets the offered shed at a loss near c. Through the
 * controller's own decision (ctl_decide) and its own offer (ctl_offer_eval),
 * as bench_adversary drives them: no daemon, no network; a plant in this
 * file answers each period's caps, and its true curves are hidden from the
 * controller (no curve model: it knows only what its profiles measure).
 *
 * The plant. 8 agents, one job each, 4 GPUs of 200–700 W. Job j needs
 * need_j W a GPU (its natural draw, uniform in 480..690 W) and makes 1,000
 * tokens/s a GPU there; under a cap c it truly makes
 * 1,000 x (min(c, need_j) / need_j)^e_j tokens/s a GPU, e_j uniform in
 * 0.1..1.0 (each seed draws its own fleet). Noise each period (seeded): 1% on
 * power, 2% on tokens/s, 0.5% on the SM clock, which follows the same law
 * (so the claims check corroborates every job).
 *
 * The timeline (control period 5 s, baseline window 60 s, the default
 * strategy safe-online, profiles at job start as configured): the jobs
 * start at 0; at 1,200 s the offer is read (ctl_offer_eval, what GET
 * /v1/offer serves) and an event is announced asking the offer at cost c
 * as a GPU power target (target_kw = the offer's baselines less its kW),
 * starting at 1,500 s for 1,800 s. Delivered: the offer's baselines less
 * the jobs' true mean draw over the event from 300 s after its start;
 * loss: 1 - their true throughput there over their true uncapped one (the
 * offer's objective, tokens/s).
 *
 * Printed per cost (1, 2, 5, 10%) over seeds 1..5 (BENCH_OFFER_SEEDS): the
 * events, the mean offer, delivered / offered (mean, worst), the loss
 * (mean, worst) and the mean signed errors (delivered − offered, in % of
 * the offer; loss − c, in points). The bars: delivered >= 0.95 x
 * offered and loss <= c + 0.5 pt; `bench_offer check` exits 1 when an event
 * misses either. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "ctl.h"
#include "ctl_offer.h"
#include "offer.h"

#define NJOB 8
#define NGPU 4
#define TOK_GPU 1000.0
#define PERIOD_S 5
#define OFFER_S 1200
#define START_S 1500
#define DUR_S 1800
#define SEEDS_DEFAULT 5

static const int COSTS[] = {1, 2, 3, 4}; /* indexes into pfi_offer_costs: 1, 2, 5, 10% */
#define NCOSTS (sizeof COSTS / sizeof *COSTS)

static uint64_t g_rng;
static double uniform(void)
{
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
    double u = 0;
    while (u <= 0) u = uniform();
    return sqrt(-2 * log(u)) * cos(2 * M_PI * uniform());
}

typedef struct truth {
    double need_w, expo;
} truth;

static double true_tokens(const truth *t, double cap_w)
{
    return NGPU * TOK_GPU * pow(fmin(cap_w, t->need_w) / t->need_w, t->expo);
}

static double true_draw(const truth *t, double cap_w)
{
    return NGPU * fmin(cap_w, t->need_w);
}

/* the agent's /v1/control view of job id under cap_w a GPU */
static json_t *view(const char *id, const truth *t, double cap_w)
{
    json_t *gpus = json_array(), *ids = json_array();
    for (int g = 0; g < NGPU; g++) {
        json_array_append_new(gpus, json_pack("[f,f,f,f]", 200.0, 700.0, cap_w, 700.0));
        json_array_append_new(ids, json_integer(g));
    }
    double draw = fmin(cap_w, t->need_w);
    json_t *job = json_pack("{s:s,s:o,s:f,s:f,s:f}", "job_id", id, "gpus", ids, "power_w",
                            true_draw(t, cap_w) * (1 + 0.01 * gauss()), "tokens_per_s",
                            true_tokens(t, cap_w) * (1 + 0.02 * gauss()), "sm_clock_mhz",
                            1980 * pow(draw / t->need_w, t->expo) * (1 + 0.005 * gauss()));
    return json_pack("{s:o,s:[o]}", "gpus", gpus, "jobs", job);
}

typedef struct outcome {
    double offered_w, delivered_w, loss, cost;
} outcome;

static ctl_event *announce(ctl_state *st, double t, double target_kw)
{
    ctl_event *ev = ctl_state_event_new(st);
    memset(ev, 0, sizeof *ev);
    snprintf(ev->ev.id, sizeof ev->ev.id, "offer");
    snprintf(ev->ev.source, sizeof ev->ev.source, "api");
    ev->ev.start = START_S;
    ev->ev.duration_s = DUR_S;
    ev->ev.kind = PFI_EV_TARGET_KW;
    ev->ev.target_kw = target_kw;
    ev->ev.ramp_s = ev->ev.ramp_down_s = NAN;
    ev->status = CTL_EV_SCHEDULED;
    ev->baseline_w = ev->target_w = ev->reached_t = NAN;
    ev->announced_t = t;
    return ev;
}

static int run(int seed, int cost, outcome *out)
{
    char text[2048], *p = text;
    p += sprintf(p, "{\"agents\": [");
    for (int a = 0; a < NJOB; a++)
        p += sprintf(p,
                     "%s{\"name\": \"n%d\", \"url\": \"http://127.0.0.1:%d\", \"token_file\": "
                     "\"/t\"}",
                     a ? ", " : "", a, a + 1);
    sprintf(p,
            "], \"control_period_s\": %d, \"baseline_window_s\": 60, \"ramp_s\": 0, "
            "\"ramp_down_s\": 0, \"default_tier\": 3}",
            PERIOD_S);
    ctl_cfg cfg;
    pfi_error e;
    if (ctl_config_parse(text, strlen(text), "bench", &cfg, &e)) {
        fprintf(stderr, "bench_offer: %s\n", e.msg);
        return -1;
    }
    ctl_state st;
    memset(&st, 0, sizeof st);
    st.feasible = 1;
    st.plan_t = NAN;
    ctl_agent_view agent[NJOB];
    memset(agent, 0, sizeof agent);
    char names[NJOB][8], ids[NJOB][8];
    truth tr[NJOB];
    g_rng = 0x9e3779b97f4a7c15ULL * (uint64_t)seed + 7;
    for (int a = 0; a < NJOB; a++) {
        snprintf(names[a], sizeof names[a], "n%d", a);
        snprintf(ids[a], sizeof ids[a], "j%d", a);
        agent[a].up = 1, agent[a].lease_until = NAN, agent[a].name = names[a];
        tr[a].need_w = 480 + 210 * uniform();
        tr[a].expo = 0.1 + 0.9 * uniform();
    }
    ctl_inputs in = {.agent = agent, .nagents = NJOB};
    ctl_decision dec;
    memset(&dec, 0, sizeof dec);
    double cap[NJOB], draw = 0, tok = 0, full = 0;
    int n = 0;
    for (int a = 0; a < NJOB; a++) cap[a] = 700, full += true_tokens(&tr[a], 700);
    out->offered_w = out->delivered_w = out->loss = NAN;
    double base_w = NAN;
    for (int t = 0; t < START_S + DUR_S + 60; t += PERIOD_S) {
        if (t == OFFER_S) { /* the offer now, and the event asking it */
            double total[PFI_OFFER_NCOST], floors;
            if (ctl_offer_eval(&cfg, NULL, &st, &base_w, total, &floors)) return -1;
            out->offered_w = total[cost];
            announce(&st, t, (base_w - total[cost]) / 1000);
        }
        for (int a = 0; a < NJOB; a++) {
            json_t *v = view(ids[a], &tr[a], cap[a]);
            int bad;
            if (ctl_inputs_read(&cfg, &agent[a], v, &bad)) return -1;
            json_decref(v);
        }
        if (ctl_decide(&cfg, NULL, &st, &in, t, &dec)) return -1;
        for (int a = 0; a < NJOB; a++) {
            cap[a] = 700;
            for (size_t k = 0; k < st.njobs; k++)
                if (!strcmp(st.job[k].id, ids[a]) && st.job[k].alloc_cap_w > 0)
                    cap[a] = fmin(700, st.job[k].alloc_cap_w);
        }
        if (t >= START_S + 300 && t < START_S + DUR_S) {
            for (int a = 0; a < NJOB; a++)
                draw += true_draw(&tr[a], cap[a]), tok += true_tokens(&tr[a], cap[a]);
            n++;
        }
    }
    out->delivered_w = base_w - draw / n;
    out->loss = 1 - tok / n / full;
    out->cost = pfi_offer_costs[cost];
    ctl_state_free(&st);
    ctl_decision_free(&dec);
    for (int a = 0; a < NJOB; a++) free(agent[a].job), free(agent[a].nc);
    ctl_config_free(&cfg);
    return 0;
}

int main(int argc, char **argv)
{
    int check = argc > 1 && !strcmp(argv[1], "check");
    const char *se = getenv("BENCH_OFFER_SEEDS");
    int seeds = se && atoi(se) > 0 ? atoi(se) : SEEDS_DEFAULT, missed = 0;
    printf("bench offer: %d jobs x %d GPUs (true curves hidden), safe-online, seeds 1..%d\n", NJOB,
           NGPU, seeds);
    printf("%6s %6s %10s %22s %20s %14s %14s\n", "cost", "events", "offer kW", "delivered/offered",
           "loss (mean, worst)", "shed err %", "loss err pt");
    for (size_t c = 0; c < NCOSTS; c++) {
        double off = 0, ratio = 0, worst_ratio = INFINITY, loss = 0, worst_loss = 0, serr = 0,
               lerr = 0;
        int ev = 0;
        for (int s = 1; s <= seeds; s++) {
            outcome o;
            if (run(s, COSTS[c], &o)) return 2;
            double r = o.offered_w > 0 ? o.delivered_w / o.offered_w : NAN;
            off += o.offered_w / 1000, loss += o.loss, lerr += 100 * (o.loss - o.cost);
            worst_loss = fmax(worst_loss, o.loss);
            if (isfinite(r)) ratio += r, worst_ratio = fmin(worst_ratio, r), serr += 100 * (r - 1);
            if (!(r >= 0.95) || o.loss > o.cost + 0.005) missed++;
            ev++;
        }
        printf("%5.0f%% %6d %10.2f %11.3f %10.3f %9.2f%% %9.2f%% %+13.1f %+13.2f\n",
               100 * pfi_offer_costs[COSTS[c]], ev, off / ev, ratio / ev, worst_ratio,
               100 * loss / ev, 100 * worst_loss, serr / ev, lerr / ev);
    }
    printf("bench offer: %d of %d events missed a bar (delivered < 0.95 x offered, or loss > c + "
           "0.5 pt)\n",
           missed, (int)NCOSTS * seeds);
    return check && missed ? 1 : 0;
}
