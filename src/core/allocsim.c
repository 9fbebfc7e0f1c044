/* allocsim.c — the allocation experiment (see allocsim.h). */
#include "allocsim.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_internal.h"
#include "strategy.h"
#include "util.h"

void pfi_allocsim_opts_default(pfi_allocsim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->workloads = 500;
    o->jobs = 100;
    o->cut_max = 0.40;
    o->cut_step = 0.01;
    o->scenario = PFI_SCEN_PRODUCTION;
    o->ft_share = 0.94;
    o->seed = 1;
    o->strategies = (1u << PFI_STRAT_ORACLE) | (1u << PFI_STRAT_EQUAL) | (1u << PFI_STRAT_MOE_FT) |
                    (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_DCGM);
    o->loop_rounds = 5;
    o->loop_noise = 0.005;
    pfi_alloc_opts ao;
    pfi_alloc_opts_default(&ao);
    o->sla_curve_margin = ao.sla_curve_margin;
    pfi_online_opts_default(&o->online);
    o->online.rounds = 15;
    o->profile = 1;
    pfi_profile_opts_default(&o->prof);
    /* the study's figures (docs/allocation.md) were measured without the
       deep points: off unless asked (--profile-deep-points) */
    o->prof.deep_points = 0;
    o->memory_events = 0;
    o->sla_floor_margin = 0.05;
}

void pfi_allocsim_result_dispose(pfi_allocsim_result *r)
{
    free(r->cuts);
    free(r->cell);
    free(r->rnd);
    free(r->oracle_infeasible);
    memset(r, 0, sizeof *r);
}

/* The process's CPU seconds, for pfi_allocsim_cell.seconds: the one clock
 * the core reads. Not the runtime's monotonic clock (clock.h), which the
 * core may not call: this measures the study's own work and nothing it
 * computes depends on it. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the scores of one allocation P of workload w (see pfi_allocsim_round) */
typedef struct wl_ref {
    double ref, orc; /* the reference's and the oracle's totals */
    int ofeas;       /* the oracle's floors fit */
    int ofeas_m;     /* ... raised by the study's floor margin */
} wl_ref;

/* a total t against the workload's reference and oracle: below 5% or 20%
 * of the gap between them, and the worst shortfall */
static void score_gap(pfi_allocsim_round *c, double t, const wl_ref *R)
{
    /* where the floors do not fit, the oracle is the tier rule on its true
     * floors and can fall below the reference: no gap there */
    double gap = fmax(0, R->orc - R->ref), d = t - R->ref, eps = 1e-9 * fabs(R->ref);
    if (d < -0.05 * gap - eps) c->below_5++;
    if (d < -0.2 * gap - eps) c->below_20++;
    if (d < c->worst) c->worst = d;
}

/* 1 when no job with measured points is planned below its lowest one */
static int within_measured(const pfi_alloc_job *w, size_t J, const double *P)
{
    for (size_t j = 0; j < J; j++) {
        double lo = INFINITY;
        for (size_t i = 0; i < w[j].n_known; i++) lo = fmin(lo, w[j].known[i].power_w);
        if (w[j].n_known && P[j] < lo * (1 - 1e-9)) return 0;
    }
    return 1;
}

static void score(pfi_allocsim_round *c, const prepared *ev, const pfi_alloc_job *w,
                  const double *P, const wl_ref *R, int infeas, int over, double W, double *tot,
                  size_t *viol)
{
    size_t v;
    double t = true_total(ev, P, &v, w);
    if (!infeas && within_measured(w, ev->n, P)) { /* within the plan's offered floors point */
        c->offered_workloads++;
        c->sla_viol_offered += (double)v;
        if (R->ofeas_m) c->sla_viol_offered_m += (double)v;
    }
    c->mean_total += t / W;
    c->mean_total_raw += raw_total(ev, P) / W;
    c->sla_violations += (double)v;
    if (R->ofeas) {
        c->sla_viol_ofeas += (double)v;
        c->viol_workloads_ofeas += v > 0;
    }
    if (R->ofeas_m) {
        c->sla_viol_ofeas_m += (double)v;
        c->viol_workloads_ofeas_m += v > 0;
    }
    c->infeasible += infeas;
    c->over_budget += over;
    score_gap(c, t, R);
    if (tot) *tot = t;
    if (viol) *viol = v;
}

/* a static strategy's allocations for every cut (P: nc x J) */
static pfi_status static_alloc(const pfi_alloc_job *w, size_t J, const double *budgets, size_t nc,
                               const pfi_alloc_opts *ao, double *P, int *feas, int *over,
                               pfi_error *err)
{
    prepared pj;
    pfi_status st = prep_jobs(w, J, ao, 1, &pj, err);
    if (st) return st;
    st = strategy_sweep(w, &pj, budgets, nc, ao, P, feas, over, err);
    prep_free(&pj);
    return st;
}

/* one simulation: its sizes, its draw of workloads from the pool and its
 * scratch space for one workload and one strategy */
typedef struct sim {
    const pfi_allocsim_opts *o;
    size_t nc, J, R1;    /* cuts, jobs per workload, the most rounds + 1 */
    int rounds, orounds; /* the closed loop's and safe-online's rounds */
    size_t k30;          /* the 30% cut */
    double W;            /* the number of workloads, dividing the means */
    gsl_rng *rng;
    size_t *ft, *pt, nft, npt; /* the pool's fine-tuning and pre-training jobs */
    double sla_cum[4], sla_total;
    /* one workload: its jobs, evaluation curves, budgets per cut, reference and oracle */
    pfi_alloc_job *w;
    prepared ev;
    double *budgets;
    wl_ref *wr;
    /* one strategy on it: allocations, and per cut its total, certificate
     * gap, infeasibility and SLA violations */
    double *Pall, *tot, *gap;
    int *feas, *over, *inf;
    size_t *viol;
    double loop_sum[PFI_SIM_MAX_ROUNDS + 1]; /* the closed loop's totals per round at 30% */
    /* safe-online's knowledge of each job before the event: KNOWN_MAX points a job */
    pfi_online_point *known;
    size_t *nknown;
} sim;

#define KNOWN_MAX 32

static void sim_dispose(sim *m)
{
    prep_free(&m->ev);
    free(m->Pall), free(m->feas), free(m->over), free(m->wr);
    free(m->w), free(m->budgets), free(m->tot), free(m->gap), free(m->inf), free(m->viol);
    free(m->ft), free(m->pt);
    free(m->known), free(m->nknown);
    if (m->rng) gsl_rng_free(m->rng);
}

static int clamp_rounds(int n)
{
    return n > PFI_SIM_MAX_ROUNDS ? PFI_SIM_MAX_ROUNDS : n < 0 ? 0 : n;
}

/* the simulation's sizes and scratch space, the result's arrays, the pool
 * split for the production draw and the random stream */
static pfi_status sim_init(sim *m, const pfi_allocsim_opts *o, const int *is_ft, size_t npool,
                           pfi_allocsim_result *r, pfi_error *err)
{
    memset(m, 0, sizeof *m);
    m->o = o;
    size_t nc = m->nc = (size_t)llround(o->cut_max / o->cut_step) + 1;
    r->ncuts = nc;
    r->cuts = malloc(nc * sizeof *r->cuts);
    r->cell = calloc(PFI_STRAT_COUNT * nc, sizeof *r->cell);
    size_t J = m->J = o->jobs;
    m->rounds = clamp_rounds(o->loop_rounds);
    m->orounds = clamp_rounds(o->online.rounds);
    size_t R1 = m->R1 = (size_t)(m->rounds > m->orounds ? m->rounds : m->orounds) + 1;
    r->rnd = calloc(PFI_STRAT_COUNT * nc * R1, sizeof *r->rnd);
    r->oracle_infeasible = calloc(nc, sizeof *r->oracle_infeasible);
    m->Pall = malloc((nc > R1 ? nc : R1) * J * sizeof *m->Pall);
    m->feas = malloc(nc * sizeof *m->feas), m->over = malloc(nc * sizeof *m->over);
    m->wr = malloc(nc * sizeof *m->wr);
    m->w = malloc(J * sizeof *m->w);
    m->budgets = malloc(nc * sizeof *m->budgets), m->tot = malloc(nc * sizeof *m->tot);
    m->gap = malloc(nc * sizeof *m->gap);
    m->inf = malloc(nc * sizeof *m->inf);
    m->viol = malloc(nc * sizeof *m->viol);
    m->ft = malloc(npool * sizeof *m->ft), m->pt = malloc(npool * sizeof *m->pt);
    m->rng = gsl_rng_alloc(gsl_rng_taus2);
    m->known = malloc(J * KNOWN_MAX * sizeof *m->known);
    m->nknown = calloc(J, sizeof *m->nknown);
    if (!m->known || !m->nknown) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    if (!r->cuts || !r->cell || !m->w || !m->budgets || !m->tot || !m->gap || !m->inf || !m->viol ||
        !m->ft || !m->pt || !m->rng || !r->rnd || !r->oracle_infeasible || !m->Pall || !m->feas ||
        !m->over || !m->wr)
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t k = 0; k < nc; k++) r->cuts[k] = o->cut_step * (double)k;
    for (size_t i = 0; i < npool; i++) {
        if (is_ft && is_ft[i]) m->ft[m->nft++] = i;
        else m->pt[m->npt++] = i;
    }
    gsl_rng_set(m->rng, (unsigned long)pfi_mix64(o->seed * 0x5151ULL + (uint64_t)o->scenario));
    for (int t = 0; t < 4; t++) m->sla_total += o->sla_mix[t];
    for (int t = 0; t < 4; t++)
        m->sla_cum[t] =
            (t ? m->sla_cum[t - 1] : 0) + (m->sla_total > 0 ? o->sla_mix[t] / m->sla_total : 0);
    m->k30 = (size_t)llround(0.30 / o->cut_step);
    if (m->k30 >= nc) m->k30 = nc - 1;
    m->W = (double)o->workloads;
    r->loop_rounds = m->rounds;
    r->max_rounds = (int)R1 - 1;
    for (size_t q = 0; q < PFI_STRAT_COUNT * nc * R1; q++) r->rnd[q].worst = INFINITY;
    for (int s = 0; s < PFI_STRAT_COUNT; s++)
        r->srounds[s] = s == PFI_STRAT_CLOSED_LOOP   ? m->rounds
                        : s == PFI_STRAT_SAFE_ONLINE ? m->orounds
                                                     : 0;
    return PFI_OK;
}

/* the next workload: J jobs drawn from the pool (production: fine-tuning
 * with probability ft_share), each with an SLA tier drawn from sla_mix,
 * and the budget of each cut */
static void draw_workload(sim *m, const pfi_alloc_job *pool, size_t npool, const double *cuts)
{
    const pfi_allocsim_opts *o = m->o;
    double sum_max = 0;
    for (size_t j = 0; j < m->J; j++) {
        size_t pick;
        if (o->scenario == PFI_SCEN_PRODUCTION && m->nft && m->npt) {
            int want_ft = gsl_rng_uniform(m->rng) < o->ft_share;
            pick = want_ft ? m->ft[gsl_rng_uniform_int(m->rng, (unsigned long)m->nft)]
                           : m->pt[gsl_rng_uniform_int(m->rng, (unsigned long)m->npt)];
        } else {
            pick = (size_t)gsl_rng_uniform_int(m->rng, (unsigned long)npool);
        }
        m->w[j] = pool[pick];
        m->w[j].sla_tier = -1;
        if (m->sla_total > 0) {
            double u = gsl_rng_uniform(m->rng);
            int t = 0;
            while (t < 3 && u > m->sla_cum[t]) t++;
            m->w[j].sla_tier = t;
        }
        sum_max += m->w[j].power_max_w;
    }
    for (size_t k = 0; k < m->nc; k++) m->budgets[k] = sum_max * (1 - cuts[k]);
}

/* the workload's evaluation curves, and at each cut the reference's
 * (equal) and the oracle's true totals that the strategies are scored
 * against (when both run) */
static pfi_status workload_refs(sim *m, pfi_allocsim_result *r, pfi_error *err)
{
    size_t J = m->J, nc = m->nc;
    pfi_alloc_opts eo;
    pfi_alloc_opts_default(&eo);
    eo.normalized = m->o->normalized;
    eo.strategy = PFI_STRAT_EQUAL;
    prep_free(&m->ev);
    pfi_status st;
    if ((st = prep_jobs(m->w, J, &eo, 1, &m->ev, err)) || (st = prep_raw(m->w, &m->ev, err)))
        return st;
    for (size_t j = 0; j < J; j++) r->mean_uncapped += m->ev.tmax[j] / m->W;
    for (size_t k = 0; k < nc; k++) m->wr[k] = (wl_ref){NAN, NAN, 1, 1};
    /* the floors raised by the study's margin, and where they fit */
    double sum_m = 0;
    for (size_t j = 0; j < J; j++) {
        double L = pfi_sla_loss(m->w[j].sla_tier), f = m->ev.lo[j];
        if (m->w[j].sla_tier == 0) f = m->ev.hi[j];
        else if (m->w[j].sla_tier > 0 && L < 1)
            f = fmax(f, jc_power_for(&m->ev.jc[j],
                                     fmin(1, 1 - L + m->o->sla_floor_margin) * m->ev.tmax[j]));
        sum_m += f;
    }
    for (size_t k = 0; k < nc; k++) m->wr[k].ofeas_m = sum_m <= m->budgets[k] * (1 + 1e-9);
    if ((m->o->strategies & 3u) != 3u) return PFI_OK;
    if ((st = static_alloc(m->w, J, m->budgets, nc, &eo, m->Pall, m->feas, m->over, err)))
        return st;
    for (size_t k = 0; k < nc; k++) m->wr[k].ref = true_total(&m->ev, m->Pall + k * J, NULL, m->w);
    eo.strategy = PFI_STRAT_ORACLE;
    if ((st = static_alloc(m->w, J, m->budgets, nc, &eo, m->Pall, m->feas, m->over, err)))
        return st;
    for (size_t k = 0; k < nc; k++) {
        m->wr[k].orc = true_total(&m->ev, m->Pall + k * J, NULL, m->w);
        m->wr[k].ofeas = m->feas[k];
        m->wr[k].ofeas_m &= m->feas[k];
        r->oracle_infeasible[k] += !m->feas[k];
    }
    return PFI_OK;
}

/* the closed loop at each cut: its total after every round (only totals:
 * no allocation is kept), its violations and feasibility after the last */
static pfi_status run_closed_loop(sim *m, size_t wl, const pfi_alloc_opts *ao,
                                  pfi_allocsim_round *rc, pfi_error *err)
{
    pfi_status st = PFI_OK;
    int rounds = m->rounds;
    size_t R1 = m->R1;
    double lt[PFI_SIM_MAX_ROUNDS + 1];
    size_t lv[PFI_SIM_MAX_ROUNDS + 1];
    for (size_t k = 0; k < m->nc && !st; k++) {
        pfi_alloc_result lr;
        st = pfi_alloc_closed_loop_rounds(m->w, m->J, m->budgets[k], ao, rounds, m->o->loop_noise,
                                          m->o->seed ^ pfi_mix64(wl * 131 + k), &lr, lt, lv, err);
        m->tot[k] = lt[rounds];
        m->viol[k] = lr.sla_violations;
        m->inf[k] = !lr.feasible;
        if (k == m->k30)
            for (int q = 0; q <= rounds; q++) m->loop_sum[q] += lt[q];
        for (int q = 0; q <= rounds; q++) { /* every round's total and SLA violations */
            pfi_allocsim_round *c = &rc[k * R1 + (size_t)q];
            c->mean_total += lt[q] / m->W;
            c->mean_total_raw = NAN;
            c->sla_violations += (double)lv[q];
            if (m->wr[k].ofeas) {
                c->sla_viol_ofeas += (double)lv[q];
                c->viol_workloads_ofeas += lv[q] > 0;
            }
            if (m->wr[k].ofeas_m) {
                c->sla_viol_ofeas_m += (double)lv[q];
                c->viol_workloads_ofeas_m += lv[q] > 0;
            }
            score_gap(c, lt[q], &m->wr[k]);
        }
        rc[k * R1 + (size_t)rounds].infeasible += !lr.feasible;
    }
    return st;
}

/* job j's profile at job start on its true curve (pfi_profile_next's
 * rule, the measurement noise of safe-online's model): its points into
 * m->known, the cost and tier checks into r */
static void profile_job(sim *m, size_t j, gsl_rng *rng, pfi_allocsim_result *r)
{
    const pfi_allocsim_opts *o = m->o;
    const pfi_alloc_job *job = &m->w[j];
    pfi_online_point *pts = m->known + j * KNOWN_MAX;
    double spent_meas = 0, spent_true = 0, T = job->tokens_per_s_max, next_w;
    double L = pfi_sla_loss(job->sla_tier);
    size_t n = 0;
    double budget = pfi_profile_budget_tokens(job, &o->prof);
    while (n < KNOWN_MAX &&
           pfi_profile_next(job, &o->prof, pts, n, spent_meas, &next_w) == PFI_PROFILE_GO) {
        double t = jc_at(&m->ev.jc[j], next_w) / m->ev.scale[j], rate = T - t;
        /* the controller watches the cost as it goes: a point that would pass
         * the budget ends early (its steps cut), and is dropped with fewer
         * than a quarter of them */
        double d = pfi_profile_point_s(&o->prof), steps = o->prof.steps;
        if (rate > 0 && spent_true + rate * d > budget) {
            d = (budget - spent_true) / rate;
            steps = (d - o->prof.settle_s) / o->online.step_s;
        }
        spent_true += rate * d;
        if (steps < 0.25 * o->prof.steps) break;
        double rt = o->online.step_jitter / sqrt(steps);
        double rp = o->online.power_noise / sqrt(fmax(1, steps * o->online.step_s));
        double tm = t * (1 + gsl_ran_gaussian_ziggurat(rng, rt));
        pts[n++] = (pfi_online_point){next_w * (1 + gsl_ran_gaussian_ziggurat(rng, rp)),
                                      next_w * rp, tm, fabs(tm) * rt};
        spent_meas += (T - tm) * d;
        if (job->sla_tier >= 0 && t < (1 - L) * T * (1 - 1e-9)) r->profile_tier_violations++;
    }
    m->nknown[j] = n;
    double cost = T > 0 ? spent_true / (T * 3600) : 0;
    r->profile_jobs_all++;
    r->profiled_jobs += n > 0;
    r->profile_points += (double)n;
    r->profile_cost_sum += cost;
    if (cost > r->profile_cost_max) r->profile_cost_max = cost;
}

/* what safe-online knows of the workload's jobs before its event: their
 * profiles, then the points of memory_events earlier events */
static pfi_status known_before(sim *m, size_t wl, const pfi_alloc_opts *ao, pfi_allocsim_result *r,
                               pfi_error *err)
{
    const pfi_allocsim_opts *o = m->o;
    size_t J = m->J;
    memset(m->nknown, 0, J * sizeof *m->nknown);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    if (!rng) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    gsl_rng_set(rng, (unsigned long)pfi_mix64(o->seed ^ (wl * 7919 + 0x9f0f11eULL)));
    for (size_t j = 0; o->profile && j < J; j++) profile_job(m, j, rng, r);
    pfi_status st = PFI_OK;
    double sum_max = 0;
    for (size_t j = 0; j < J; j++) sum_max += m->w[j].power_max_w;
    for (int e = 0; e < o->memory_events && !st; e++) {
        double cut = 0.05 + 0.25 * gsl_rng_uniform(rng);
        for (size_t j = 0; j < J; j++) {
            m->w[j].known = m->known + j * KNOWN_MAX;
            m->w[j].n_known = m->nknown[j];
        }
        online_keep keep = {m->known, m->nknown, KNOWN_MAX};
        int ok;
        st = online_simulate(m->w, J, sum_max * (1 - cut), ao, &o->online, m->orounds,
                             o->seed ^ pfi_mix64(wl * 977 + (size_t)e + 0x3e3e), m->Pall, &ok,
                             &keep, err);
    }
    gsl_rng_free(rng);
    for (size_t j = 0; j < J; j++) {
        m->w[j].known = m->nknown[j] ? m->known + j * KNOWN_MAX : NULL;
        m->w[j].n_known = m->nknown[j];
    }
    return st;
}

/* safe-online at each cut: every round's allocation scored */
static pfi_status run_safe_online(sim *m, size_t wl, const pfi_alloc_opts *ao,
                                  pfi_allocsim_round *rc, pfi_allocsim_result *r, pfi_error *err)
{
    size_t J = m->J;
    pfi_status st = known_before(m, wl, ao, r, err);
    for (size_t k = 0; k < m->nc && !st; k++) {
        int ok = 1;
        st = online_simulate(m->w, J, m->budgets[k], ao, &m->o->online, m->orounds,
                             m->o->seed ^ pfi_mix64(wl * 131 + k), m->Pall, &ok, NULL, err);
        for (int q = 0; q <= m->orounds && !st; q++) {
            const double *Pq = m->Pall + (size_t)q * J;
            double sum = 0;
            for (size_t j = 0; j < J; j++) sum += Pq[j];
            score(&rc[k * m->R1 + (size_t)q], &m->ev, m->w, Pq, &m->wr[k], !ok,
                  sum > m->budgets[k] * (1 + 1e-9), m->W, &m->tot[k], &m->viol[k]);
        }
        m->inf[k] = !ok;
    }
    for (size_t j = 0; j < J; j++) m->w[j].known = NULL, m->w[j].n_known = 0;
    return st;
}

/* a static strategy at every cut, scored; the oracle's certificate gaps */
static pfi_status run_static(sim *m, int s, const pfi_alloc_opts *ao, pfi_allocsim_round *rc,
                             pfi_error *err)
{
    size_t J = m->J;
    pfi_status st = static_alloc(m->w, J, m->budgets, m->nc, ao, m->Pall, m->feas, m->over, err);
    for (size_t k = 0; k < m->nc && !st; k++) {
        score(&rc[k * m->R1], &m->ev, m->w, m->Pall + k * J, &m->wr[k], !m->feas[k], m->over[k],
              m->W, &m->tot[k], &m->viol[k]);
        m->inf[k] = !m->feas[k];
    }
    if (!st && s == PFI_STRAT_ORACLE)
        st = pfi_oracle_sweep(m->w, J, m->budgets, m->nc, m->o->normalized, m->tot, m->gap, err);
    return st;
}

/* strategy s on the workload wl: its rounds and, per cut, its cell */
static pfi_status run_strategy(sim *m, int s, size_t wl, pfi_allocsim_result *r, pfi_error *err)
{
    const pfi_allocsim_opts *o = m->o;
    size_t nc = m->nc;
    double t0 = cpu_now();
    memset(m->gap, 0, nc * sizeof *m->gap);
    memset(m->inf, 0, nc * sizeof *m->inf);
    memset(m->viol, 0, nc * sizeof *m->viol);
    pfi_alloc_opts ao;
    pfi_alloc_opts_default(&ao);
    ao.strategy = (pfi_strategy)s;
    ao.normalized = o->normalized;
    ao.sla_curve_margin = o->sla_curve_margin;
    ao.op_pfi_true = o->op_pfi_true;
    pfi_allocsim_round *rc = &r->rnd[(size_t)s * nc * m->R1];
    pfi_status st = s == PFI_STRAT_CLOSED_LOOP   ? run_closed_loop(m, wl, &ao, rc, err)
                    : s == PFI_STRAT_SAFE_ONLINE ? run_safe_online(m, wl, &ao, rc, r, err)
                                                 : run_static(m, s, &ao, rc, err);
    if (st) return st;
    for (size_t k = 0; k < nc; k++) {
        pfi_allocsim_cell *c = &r->cell[(size_t)s * nc + k];
        c->mean_total += m->tot[k] / (double)o->workloads;
        c->certificate_gap += m->gap[k] / (double)o->workloads;
        c->infeasible += m->inf[k];
        c->sla_violations += (double)m->viol[k];
    }
    r->cell[(size_t)s * nc].seconds += cpu_now() - t0;
    return PFI_OK;
}

/* the closed loop's gap closed per round at the 30% cut, and every round's
 * worst shortfall as a fraction of the oracle's gain over equal */
static void relate_to_gap(const sim *m, pfi_allocsim_result *r)
{
    const pfi_allocsim_opts *o = m->o;
    size_t nc = m->nc, k30 = m->k30;
    if ((o->strategies & (1u << PFI_STRAT_CLOSED_LOOP)) &&
        (o->strategies & (1u << PFI_STRAT_ORACLE)) && (o->strategies & (1u << PFI_STRAT_EQUAL))) {
        double O = r->cell[PFI_STRAT_ORACLE * nc + k30].mean_total,
               E = r->cell[PFI_STRAT_EQUAL * nc + k30].mean_total;
        for (int q = 0; q <= m->rounds; q++) {
            double L = m->loop_sum[q] / (double)o->workloads;
            r->loop_gap_closed[q] = O > E ? (L - E) / (O - E) : NAN;
        }
    }
    for (int s = 0; s < PFI_STRAT_COUNT; s++)
        for (size_t k = 0; k < nc; k++) {
            double O = r->cell[PFI_STRAT_ORACLE * nc + k].mean_total,
                   E = r->cell[PFI_STRAT_EQUAL * nc + k].mean_total;
            for (size_t q = 0; q < m->R1; q++) {
                pfi_allocsim_round *c = &r->rnd[((size_t)s * nc + k) * m->R1 + q];
                c->worst = isfinite(c->worst) && O > E ? c->worst / (O - E) : NAN;
            }
        }
}

pfi_status pfi_allocsim_run(const pfi_alloc_job *pool, const int *is_ft, size_t npool,
                            const pfi_allocsim_opts *o, pfi_allocsim_result *r, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    if (npool == 0 || o->jobs == 0 || o->workloads == 0)
        return pfi_errorf(err, PFI_EINVAL, "empty simulation");
    /* every weight of the pool, not only those of the jobs a draw happens to pick */
    for (int s = 0; s < PFI_STRAT_COUNT; s++) {
        if (!(o->strategies & (1u << s))) continue;
        pfi_alloc_opts ao;
        pfi_alloc_opts_default(&ao);
        ao.strategy = (pfi_strategy)s;
        ao.normalized = o->normalized;
        pfi_status st = pfi_alloc_check_weights(pool, npool, &ao, err);
        if (st) return st;
    }
    sim m;
    pfi_status st = sim_init(&m, o, is_ft, npool, r, err);
    for (size_t wl = 0; wl < o->workloads && !st; wl++) {
        draw_workload(&m, pool, npool, r->cuts);
        if ((st = workload_refs(&m, r, err))) break;
        for (int s = 0; s < PFI_STRAT_COUNT && !st; s++)
            if (o->strategies & (1u << s)) st = run_strategy(&m, s, wl, r, err);
    }
    if (!st) relate_to_gap(&m, r);
    sim_dispose(&m);
    if (st) pfi_allocsim_result_dispose(r);
    return st;
}
