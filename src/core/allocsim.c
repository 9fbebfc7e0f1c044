/* allocsim.c — the allocation experiment (see allocsim.h). */
#include "allocsim.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_internal.h"
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
}

void pfi_allocsim_result_dispose(pfi_allocsim_result *r)
{
    free(r->cuts);
    free(r->cell);
    free(r->rnd);
    free(r->oracle_infeasible);
    memset(r, 0, sizeof *r);
}

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
} wl_ref;

static void score(pfi_allocsim_round *c, const prepared *ev, const pfi_alloc_job *w,
                  const double *P, const wl_ref *R, int infeas, int over, double W, double *tot,
                  size_t *viol)
{
    size_t v;
    double t = true_total(ev, P, &v, w);
    c->mean_total += t / W;
    c->mean_total_raw += raw_total(ev, P) / W;
    c->sla_violations += (double)v;
    if (R->ofeas) {
        c->sla_viol_ofeas += (double)v;
        c->viol_workloads_ofeas += v > 0;
    }
    c->infeasible += infeas;
    c->over_budget += over;
    /* where the floors do not fit, the oracle is the tier rule on its true
     * floors and can fall below the reference: no gap there */
    double gap = fmax(0, R->orc - R->ref), d = t - R->ref, eps = 1e-9 * fabs(R->ref);
    if (d < -0.05 * gap - eps) c->below_5++;
    if (d < -0.2 * gap - eps) c->below_20++;
    if (d < c->worst) c->worst = d;
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
    size_t nc = (size_t)llround(o->cut_max / o->cut_step) + 1;
    r->ncuts = nc;
    r->cuts = malloc(nc * sizeof *r->cuts);
    r->cell = calloc(PFI_STRAT_COUNT * nc, sizeof *r->cell);
    size_t J = o->jobs;
    int rounds = o->loop_rounds > 15 ? 15 : o->loop_rounds < 0 ? 0 : o->loop_rounds;
    int orounds = o->online.rounds > 15 ? 15 : o->online.rounds < 0 ? 0 : o->online.rounds;
    size_t R1 = (size_t)(rounds > orounds ? rounds : orounds) + 1;
    r->rnd = calloc(PFI_STRAT_COUNT * nc * R1, sizeof *r->rnd);
    r->oracle_infeasible = calloc(nc, sizeof *r->oracle_infeasible);
    double *Pall = malloc((nc > R1 ? nc : R1) * J * sizeof *Pall);
    int *feas = malloc(nc * sizeof *feas), *over = malloc(nc * sizeof *over);
    wl_ref *wr = malloc(nc * sizeof *wr);
    prepared ev;
    memset(&ev, 0, sizeof ev);
    pfi_alloc_job *w = malloc(J * sizeof *w);
    double *budgets = malloc(nc * sizeof *budgets), *tot = malloc(nc * sizeof *tot),
           *gap = malloc(nc * sizeof *gap);
    int *inf = malloc(nc * sizeof *inf);
    size_t *viol = malloc(nc * sizeof *viol);
    size_t *ft = malloc(npool * sizeof *ft), *pt = malloc(npool * sizeof *pt), nft = 0, npt = 0;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    pfi_status st = PFI_OK;
    if (!r->cuts || !r->cell || !w || !budgets || !tot || !gap || !inf || !viol || !ft || !pt ||
        !rng || !r->rnd || !r->oracle_infeasible || !Pall || !feas || !over || !wr) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < nc; k++) r->cuts[k] = o->cut_step * (double)k;
    for (size_t i = 0; i < npool; i++) {
        if (is_ft && is_ft[i]) ft[nft++] = i;
        else pt[npt++] = i;
    }
    gsl_rng_set(rng, (unsigned long)pfi_mix64(o->seed * 0x5151ULL + (uint64_t)o->scenario));
    double sla_cum[4];
    double sla_total = 0;
    for (int t = 0; t < 4; t++) sla_total += o->sla_mix[t];
    for (int t = 0; t < 4; t++)
        sla_cum[t] = (t ? sla_cum[t - 1] : 0) + (sla_total > 0 ? o->sla_mix[t] / sla_total : 0);
    size_t k30 = (size_t)llround(0.30 / o->cut_step);
    if (k30 >= nc) k30 = nc - 1;
    r->loop_rounds = rounds;
    r->max_rounds = (int)R1 - 1;
    for (size_t q = 0; q < PFI_STRAT_COUNT * nc * R1; q++) r->rnd[q].worst = INFINITY;
    for (int s = 0; s < PFI_STRAT_COUNT; s++)
        r->srounds[s] = s == PFI_STRAT_CLOSED_LOOP   ? rounds
                        : s == PFI_STRAT_SAFE_ONLINE ? orounds
                                                     : 0;
    double loop_sum[16] = {0};
    for (size_t wl = 0; wl < o->workloads && !st; wl++) {
        double sum_max = 0;
        for (size_t j = 0; j < J; j++) {
            size_t pick;
            if (o->scenario == PFI_SCEN_PRODUCTION && nft && npt) {
                int want_ft = gsl_rng_uniform(rng) < o->ft_share;
                pick = want_ft ? ft[gsl_rng_uniform_int(rng, (unsigned long)nft)]
                               : pt[gsl_rng_uniform_int(rng, (unsigned long)npt)];
            } else {
                pick = (size_t)gsl_rng_uniform_int(rng, (unsigned long)npool);
            }
            w[j] = pool[pick];
            w[j].sla_tier = -1;
            if (sla_total > 0) {
                double u = gsl_rng_uniform(rng);
                int t = 0;
                while (t < 3 && u > sla_cum[t]) t++;
                w[j].sla_tier = t;
            }
            sum_max += w[j].power_max_w;
        }
        for (size_t k = 0; k < nc; k++) budgets[k] = sum_max * (1 - r->cuts[k]);
        double W = (double)o->workloads;
        /* the evaluation curves, the reference (equal) and the oracle */
        pfi_alloc_opts eo;
        pfi_alloc_opts_default(&eo);
        eo.normalized = o->normalized;
        eo.strategy = PFI_STRAT_EQUAL;
        prep_free(&ev);
        if ((st = prep_jobs(w, J, &eo, 1, &ev, err)) || (st = prep_raw(w, &ev, err))) break;
        for (size_t j = 0; j < J; j++) r->mean_uncapped += ev.tmax[j] / W;
        for (size_t k = 0; k < nc; k++) wr[k] = (wl_ref){NAN, NAN, 1};
        if ((o->strategies & 3u) == 3u) {
            if ((st = static_alloc(w, J, budgets, nc, &eo, Pall, feas, over, err))) break;
            for (size_t k = 0; k < nc; k++) wr[k].ref = true_total(&ev, Pall + k * J, NULL, w);
            eo.strategy = PFI_STRAT_ORACLE;
            if ((st = static_alloc(w, J, budgets, nc, &eo, Pall, feas, over, err))) break;
            for (size_t k = 0; k < nc; k++) {
                wr[k].orc = true_total(&ev, Pall + k * J, NULL, w);
                wr[k].ofeas = feas[k];
                r->oracle_infeasible[k] += !feas[k];
            }
        }
        for (int s = 0; s < PFI_STRAT_COUNT && !st; s++) {
            if (!(o->strategies & (1u << s))) continue;
            double t0 = cpu_now();
            memset(gap, 0, nc * sizeof *gap);
            memset(inf, 0, nc * sizeof *inf);
            memset(viol, 0, nc * sizeof *viol);
            pfi_alloc_opts ao;
            pfi_alloc_opts_default(&ao);
            ao.strategy = (pfi_strategy)s;
            ao.normalized = o->normalized;
            ao.sla_curve_margin = o->sla_curve_margin;
            ao.op_pfi_true = o->op_pfi_true;
            pfi_allocsim_round *rc = &r->rnd[(size_t)s * nc * R1];
            if (s == PFI_STRAT_CLOSED_LOOP) {
                double lt[16];
                for (size_t k = 0; k < nc && !st; k++) {
                    pfi_alloc_result lr;
                    st = pfi_alloc_closed_loop(w, J, budgets[k], &ao, rounds, o->loop_noise,
                                               o->seed ^ pfi_mix64(wl * 131 + k), NULL, &lr, lt,
                                               err);
                    tot[k] = lt[rounds];
                    viol[k] = lr.sla_violations;
                    inf[k] = !lr.feasible;
                    if (k == k30)
                        for (int q = 0; q <= rounds; q++) loop_sum[q] += lt[q];
                    for (int q = 0; q <= rounds; q++) { /* totals only: no allocation kept */
                        pfi_allocsim_round *c = &rc[k * R1 + (size_t)q];
                        c->mean_total += lt[q] / W;
                        c->mean_total_raw = NAN;
                        double gp = fmax(0, wr[k].orc - wr[k].ref), d = lt[q] - wr[k].ref;
                        if (d < -0.05 * gp - 1e-9 * fabs(wr[k].ref)) c->below_5++;
                        if (d < -0.2 * gp - 1e-9 * fabs(wr[k].ref)) c->below_20++;
                        if (d < c->worst) c->worst = d;
                    }
                    rc[k * R1 + (size_t)rounds].sla_violations += (double)lr.sla_violations;
                    rc[k * R1 + (size_t)rounds].infeasible += !lr.feasible;
                }
            } else if (s == PFI_STRAT_SAFE_ONLINE) {
                for (size_t k = 0; k < nc && !st; k++) {
                    int ok = 1;
                    st = online_simulate(w, J, budgets[k], &ao, &o->online, orounds,
                                         o->seed ^ pfi_mix64(wl * 131 + k), Pall, &ok, err);
                    for (int q = 0; q <= orounds && !st; q++) {
                        const double *Pq = Pall + (size_t)q * J;
                        double sum = 0;
                        for (size_t j = 0; j < J; j++) sum += Pq[j];
                        score(&rc[k * R1 + (size_t)q], &ev, w, Pq, &wr[k], !ok,
                              sum > budgets[k] * (1 + 1e-9), W, &tot[k], &viol[k]);
                    }
                    inf[k] = !ok;
                }
            } else {
                st = static_alloc(w, J, budgets, nc, &ao, Pall, feas, over, err);
                for (size_t k = 0; k < nc && !st; k++) {
                    score(&rc[k * R1], &ev, w, Pall + k * J, &wr[k], !feas[k], over[k], W, &tot[k],
                          &viol[k]);
                    inf[k] = !feas[k];
                }
                if (!st && s == PFI_STRAT_ORACLE)
                    st = pfi_oracle_sweep(w, J, budgets, nc, o->normalized, tot, gap, err);
            }
            if (st) break;
            for (size_t k = 0; k < nc; k++) {
                pfi_allocsim_cell *c = &r->cell[(size_t)s * nc + k];
                c->mean_total += tot[k] / (double)o->workloads;
                c->certificate_gap += gap[k] / (double)o->workloads;
                c->infeasible += inf[k];
                c->sla_violations += (double)viol[k];
            }
            r->cell[(size_t)s * nc].seconds += cpu_now() - t0;
        }
    }
    if (!st && (o->strategies & (1u << PFI_STRAT_CLOSED_LOOP)) &&
        (o->strategies & (1u << PFI_STRAT_ORACLE)) && (o->strategies & (1u << PFI_STRAT_EQUAL))) {
        double O = r->cell[PFI_STRAT_ORACLE * nc + k30].mean_total,
               E = r->cell[PFI_STRAT_EQUAL * nc + k30].mean_total;
        for (int q = 0; q <= rounds; q++) {
            double L = loop_sum[q] / (double)o->workloads;
            r->loop_gap_closed[q] = O > E ? (L - E) / (O - E) : NAN;
        }
    }
    for (int s = 0; !st && s < PFI_STRAT_COUNT; s++)
        for (size_t k = 0; k < nc; k++) {
            double O = r->cell[PFI_STRAT_ORACLE * nc + k].mean_total,
                   E = r->cell[PFI_STRAT_EQUAL * nc + k].mean_total;
            for (size_t q = 0; q < R1; q++) {
                pfi_allocsim_round *c = &r->rnd[((size_t)s * nc + k) * R1 + q];
                c->worst = isfinite(c->worst) && O > E ? c->worst / (O - E) : NAN;
            }
        }
out:
    prep_free(&ev);
    free(Pall), free(feas), free(over), free(wr);
    free(w), free(budgets), free(tot), free(gap), free(inf), free(viol), free(ft), free(pt);
    if (rng) gsl_rng_free(rng);
    if (st) pfi_allocsim_result_dispose(r);
    return st;
}
