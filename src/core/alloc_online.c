/* alloc_online.c — safe-online: an online allocation that starts from the
 * reference (equal weight with the tier floors enforced) and moves watts
 * between jobs only on measured evidence (docs/allocation.md, "safe-online").
 *
 * Per job it keeps the operating points it has measured (power, tokens/s,
 * their variances; measurements within merge_frac x P_max are averaged into
 * one point, so a job that stays put gets more precise) and the uncapped
 * baseline (P_max, T_max), exact. Each round:
 *   1. add this round's measurement of every job;
 *   2. if the previous round moved jobs and their measured total fell by more
 *      than z standard errors, put them back (revert) and stop;
 *   3. learn the SLA floors: from each measured point whose throughput less z
 *      SE meets the tier, the Lipschitz bound says how far below it the tier
 *      still holds; a point measured below the tier (by z SE) puts the floor
 *      above it, and a job below its floor is forced up;
 *   4. build each job's pessimistic local model around its current power
 *      within the trust region: gain slope above = the secant to the next
 *      measured point above less z SE less the curvature allowance; loss slope
 *      below = the secant to the next point below (or, with none, the secant
 *      above extrapolated) plus z SE plus the allowance;
 *   5. the oracle's greedy on those models under the hard budget: watts move
 *      from job d to job r only where r's pessimistic gain slope exceeds d's
 *      pessimistic loss slope.
 * Slopes are in normalized units (T/T_max per P/P_max) for the allowances. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_online_int.h"
#include "strategy.h"
#include "util.h"

void pfi_online_opts_default(pfi_online_opts *o)
{
    o->rounds = 5;
    o->trust_frac = 0.05;
    o->period_s = 60;
    o->settle_s = 10;
    o->step_s = 1;
    o->step_jitter = 0.02;
    o->power_noise = 0.02;
    o->z = 2;
    o->curvature = 0.3;
    o->curvature_unverified = 3;
    o->lipschitz = 1.25;
    o->merge_frac = 0.005;
    o->sla_margin = 0.01;
}

const double *pfi_online_targets(const pfi_online *s)
{
    return s->targets;
}

size_t pfi_online_points(const pfi_online *s, size_t i)
{
    return i < s->n ? s->j[i].np : 0;
}

double pfi_online_floor(const pfi_online *s, size_t i)
{
    return i < s->n ? s->j[i].floor : NAN;
}

void pfi_online_free(pfi_online *s)
{
    if (!s) return;
    prep_free(&s->pj);
    if (s->local)
        for (size_t i = 0; i < s->n; i++) free(s->local[i].p);
    free(s->local);
    free(s->jobs), free(s->j), free(s->targets), free(s->dlo), free(s->dhi), free(s->buf);
    free(s->t_before), free(s->v_before);
    free(s);
}

/* the tier's throughput (scaled), or -1 without an SLA */
static double tier_tokens(const pfi_online *s, size_t i)
{
    int tier = s->jobs[i].sla_tier;
    double L = pfi_sla_loss(tier);
    return tier >= 0 && L < 1 ? (1 - L) * s->pj.tmax[i] : -1;
}

/* the lowest power at which the prior's bound keeps target tokens/s
   (bisection on its monotone interpolation); NaN: none, or not within it */
static double prior_floor(const pfi_curve *c, double target, double lo, double hi)
{
    double t;
    if (!c || pfi_curve_tokens_at_power(c, hi, &t, NULL) || !(t >= target)) return NAN;
    double a = fmax(lo, c->pts[0].power_w), b = hi;
    if (!pfi_curve_tokens_at_power(c, a, &t, NULL) && t >= target) return a;
    for (int k = 0; k < 50; k++) {
        double m = 0.5 * (a + b);
        if (!pfi_curve_tokens_at_power(c, m, &t, NULL) && t >= target) b = m;
        else a = m;
    }
    return b;
}

/* the learned floor of job i from its points (and the baseline) */
static double learn_floor(const pfi_online *s, size_t i)
{
    const ojob *q = &s->j[i];
    double target = tier_tokens(s, i), hi = s->pj.hi[i], lo = s->pj.lo[i];
    if (target < 0) return lo;
    if (s->jobs[i].sla_tier == 0) return hi;
    /* the Lipschitz bound per W (from the curve's top power, so that the
     * first floor is the reference's: hi (1 - L / lipschitz)) */
    double slope = s->oo.lipschitz * s->pj.tmax[i] / hi;
    double f = hi - (s->pj.tmax[i] - target) / slope, viol = -INFINITY;
    /* a job measured steeper than the bound: its steepest online_secant (plus 2 SE
     * and the curvature allowance over the secant's length) bounds it instead */
    double kc = s->oo.curvature * s->pj.tmax[i] / (hi * hi), steep = slope;
    for (size_t m = 0; m < q->np; m++) {
        const opoint *b, *c, *a;
        online_neighbours(s, i, q->pt[m].p, &b, &c, &a);
        if (!a) continue;
        double se, sl = online_secant(&q->pt[m], a, &se), len = a->p - q->pt[m].p;
        double bound = sl + s->oo.z * se + kc * len;
        if (bound > steep) steep = bound;
    }
    if (steep > slope) {
        slope = steep;
        f = hi - (s->pj.tmax[i] - target) / slope;
    }
    /* relaxations keep a margin over the tier (near-misses are below the noise) */
    double margin = s->oo.sla_margin * s->pj.tmax[i];
    /* nothing measured (pt[0] is the baseline): the prior's bound, where it has one (issue 44) */
    double pf = q->np > 1 ? NAN : prior_floor(s->jobs[i].prior_curve, target + margin, lo, hi);
    if (isfinite(pf)) f = pf;
    for (size_t k = 0; k < q->np; k++) {
        const opoint *a = &q->pt[k];
        double sd = sqrt(a->vt);
        if (a->t - s->oo.z * sd >= target + margin) {
            double c = a->p - (a->t - s->oo.z * sd - target - margin) / slope;
            if (c < f) f = c;
        } else if (a->t + s->oo.z * sd < target && a->p > viol) viol = a->p;
    }
    if (f <= viol) { /* measured below the tier there: the lowest good point above it */
        f = hi;
        for (size_t k = 0; k < q->np; k++) {
            const opoint *a = &q->pt[k];
            if (a->p > viol && a->t - s->oo.z * sqrt(a->vt) >= target && a->p < f) f = a->p;
        }
    }
    if (f < lo) f = lo;
    if (f > hi) f = hi;
    return f;
}

/* the reference at budget: equal weight (P_max) with the current floors, the
 * budget held by the tier rule */
static pfi_status reference(pfi_online *s, double budget, pfi_error *err)
{
    prepared q = s->pj;
    for (size_t i = 0; i < s->n; i++) s->dlo[i] = s->j[i].floor;
    q.floor = s->dlo;
    int feas;
    pfi_status st = water_fill(&q, &budget, 1, s->targets, &feas, err);
    if (!st && !feas) hold_budget(&s->pj, s->jobs, s->dlo, budget, s->targets);
    for (size_t i = 0; !st && i < s->n; i++) {
        s->j[i].P = s->j[i].Pprev = s->targets[i];
        s->j[i].moved = 0;
    }
    s->moved_last = 0;
    s->budget = budget;
    return st;
}

pfi_status pfi_online_new(const pfi_alloc_job *jobs, size_t n, double budget_w,
                          const pfi_alloc_opts *o, const pfi_online_opts *oo, pfi_online **out,
                          pfi_error *err)
{
    *out = NULL;
    if (n == 0) return pfi_errorf(err, PFI_EINVAL, "no jobs");
    pfi_online *s = calloc(1, sizeof *s);
    if (!s) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    s->n = n;
    s->o = *o;
    s->oo = *oo;
    pfi_alloc_opts eo = *o;
    eo.strategy = PFI_STRAT_EQUAL;
    pfi_status st = prep_jobs(jobs, n, &eo, 1, &s->pj, err);
    if (st) {
        free(s);
        return st;
    }
    s->jobs = malloc(n * sizeof *s->jobs);
    s->j = calloc(n, sizeof *s->j);
    s->targets = malloc(n * sizeof *s->targets);
    s->dlo = malloc(n * sizeof *s->dlo);
    s->dhi = malloc(n * sizeof *s->dhi);
    s->buf = malloc(n * sizeof *s->buf);
    s->t_before = malloc(n * sizeof *s->t_before);
    s->v_before = malloc(n * sizeof *s->v_before);
    s->local = calloc(n, sizeof *s->local);
    if (!s->jobs || !s->j || !s->targets || !s->dlo || !s->dhi || !s->buf || !s->local ||
        !s->t_before || !s->v_before) {
        pfi_online_free(s);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    memcpy(s->jobs, jobs, n * sizeof *jobs);
    for (size_t i = 0; i < n; i++) {
        s->jobs[i].curve = s->jobs[i].pred_curve = NULL;
        s->jobs[i].name = NULL;
        s->local[i].p = malloc(2 * LOCAL_MAX * sizeof(double));
        if (!s->local[i].p) {
            pfi_online_free(s);
            return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        }
        s->local[i].t = s->local[i].p + LOCAL_MAX;
        ojob *q = &s->j[i];
        /* the uncapped baseline; in a simulation what the true curve gives there
         * (its isotonic top can differ from the table's T_max) */
        double t0 = s->pj.jc && s->pj.jc[i].n ? jc_at(&s->pj.jc[i], s->pj.hi[i]) : s->pj.tmax[i];
        q->pt[0] = (opoint){s->pj.hi[i], t0, 0, 0};
        q->D = oo->trust_frac;
        q->np = 1;
        online_add_known(s, i, &jobs[i]);
        q->floor = learn_floor(s, i);
    }
    if ((st = reference(s, budget_w, err)) || (st = online_plan_from_known(s, err))) {
        pfi_online_free(s);
        return st;
    }
    *out = s;
    return PFI_OK;
}

/* job i's pessimistic local model around its current power: 3 points in
 * s->local[i], domain [dlo, dhi] */
static void local_model(pfi_online *s, size_t i)
{
    ojob *q = &s->j[i];
    if (q->held) { /* pinned where it is */
        jcurve *L = &s->local[i];
        L->n = 1;
        L->p[0] = L->lo = L->hi = s->dlo[i] = s->dhi[i] = q->P;
        L->t[0] = q->t_last;
        return;
    }
    double pmax = s->jobs[i].power_max_w, u = s->pj.tmax[i] / pmax; /* tokens per W per unit */
    double P = q->P, D = q->D * pmax, z = s->oo.z, k = s->oo.curvature * u / pmax;
    const opoint *b, *c, *a;
    online_neighbours(s, i, P, &b, &c, &a);
    (void)b, (void)a;
    opoint cur = c ? *c : (opoint){P, q->t_last, 0, q->v_last};
    double tc = cur.t;
    /* gain slope above: the best pessimistic secant to a measured point above
     * (a flat stretch before a rise is seen through) */
    double g = 0, up = 0;
    int have_up = 0;
    const ojob *qq = &s->j[i];
    for (size_t m = 0; m < qq->np && P < s->pj.hi[i]; m++) {
        const opoint *x = &qq->pt[m];
        if (x->p <= cur.p + online_merge_tol(s, i)) continue;
        double se, sl = online_secant(&cur, x, &se), len = x->p - cur.p;
        double step = fmin(D, fmax(0, x->p - P));
        double gx = sl - z * se - 0.5 * k * (len - step); /* less the shortfall a curve may have */
        if (!have_up || gx > g) g = gx, up = step, have_up = 1;
    }
    /* loss slope below, over the step the trust region allows */
    double lo = fmax(q->floor, P - D);
    double l = online_loss_slope(s, i, &cur, lo < P ? lo : P - D);
    if (g > l) g = l; /* never more gain than loss on one job (concavity, noise) */
    double hi = fmin(s->pj.hi[i], P + up);
    if (P < q->floor) { /* forced up by its floor */
        lo = q->floor;
        hi = fmax(hi, q->floor);
    }
    if (lo > P) lo = fmin(lo, hi);
    jcurve *L = &s->local[i];
    L->n = 0;
    double pts[3][2] = {{lo, tc - l * (P - lo)}, {P, tc}, {hi, tc + g * (hi - P)}};
    for (int m = 0; m < 3; m++) {
        double p = pts[m][0];
        if (p < lo - 1e-9 || p > hi + 1e-9) continue;
        if (L->n && p <= L->p[L->n - 1] + 1e-9) continue;
        L->p[L->n] = p;
        L->t[L->n] = pts[m][1];
        L->n++;
    }
    if (!L->n) {
        L->p[0] = lo;
        L->t[0] = tc;
        L->n = 1;
    }
    L->lo = L->p[0];
    L->hi = L->p[L->n - 1];
    s->dlo[i] = L->lo;
    s->dhi[i] = L->hi;
}

/* 1. this round's measurement of every job (a job without one keeps what
 * it had), then the SLA floors learned from all of them */
static void measure(pfi_online *s, const double *power_w, const double *power_se_w,
                    const double *tokens_per_s, const double *tokens_se)
{
    size_t n = s->n;
    for (size_t i = 0; i < n; i++) {
        double sc = s->pj.scale[i];
        opoint m = {power_w[i], tokens_per_s[i] * sc, power_se_w[i] * power_se_w[i],
                    tokens_se[i] * sc * tokens_se[i] * sc};
        if (!(isfinite(m.p) && isfinite(m.t))) continue; /* no measurement this round */
        online_add_point(s, i, m);
        s->j[i].t_last = m.t;
        s->j[i].v_last = m.vt;
    }
    for (size_t i = 0; i < n; i++) s->j[i].floor = learn_floor(s, i);
}

/* 2. the last move lost by more than z SE of the moved jobs' measured
 * total: put them back (unless a job below its floor forces a move) and
 * write the targets; 1 when reverted */
static int revert_lost_move(pfi_online *s, double *target_w)
{
    size_t n = s->n;
    if (!s->moved_last) return 0;
    double d = 0, v = 0;
    for (size_t i = 0; i < n; i++) {
        const ojob *q = &s->j[i];
        if (!q->moved) continue;
        d += q->t_last - s->t_before[i];
        v += q->v_last + s->v_before[i];
    }
    s->moved_last = 0;
    if (!(d < -s->oo.z * sqrt(v))) return 0;
    int forced = 0;
    for (size_t i = 0; i < n; i++) forced |= !s->j[i].held && s->j[i].P < s->j[i].floor - 1e-9;
    if (forced) return 0;
    for (size_t i = 0; i < n; i++) {
        ojob *q = &s->j[i];
        if (q->moved) {
            q->P = q->Pprev;
            q->D = s->oo.trust_frac;
            q->dir = 0;
        }
        q->moved = 0;
        target_w[i] = s->targets[i] = q->P;
    }
    return 1;
}

/* 4. every job's pessimistic local model on its domain [dlo, dhi]; when
 * the floors forced jobs up past what the trust region frees, every domain
 * widened to its floor, the loss slope extended */
static void local_models(pfi_online *s, double budget_w)
{
    size_t n = s->n;
    double sum_lo = 0;
    for (size_t i = 0; i < n; i++) {
        local_model(s, i);
        sum_lo += s->dlo[i];
    }
    if (!(sum_lo > budget_w * (1 + 1e-12))) return;
    for (size_t i = 0; i < n; i++) {
        jcurve *L = &s->local[i];
        double f = s->j[i].floor;
        if (f < L->lo && !s->j[i].held) {
            double sl = L->n > 1 ? (L->t[1] - L->t[0]) / (L->p[1] - L->p[0]) : 0;
            L->t[0] -= sl * (L->p[0] - f);
            L->p[0] = f;
            L->lo = f;
            s->dlo[i] = f;
        }
    }
}

/* after the greedy's targets Pn: a move below the merge tolerance is noise
 * (the job stays); a move taken remembers where it came from and grows or
 * resets the job's trust region; the budget after dropping sub-tolerance
 * moves gives any excess back from the moved jobs that gained */
static void take_moves(pfi_online *s, double budget_w, double *Pn, double *target_w)
{
    size_t n = s->n;
    s->moved_last = 0;
    for (size_t i = 0; i < n; i++) {
        ojob *q = &s->j[i];
        q->moved = fabs(Pn[i] - q->P) > online_merge_tol(s, i);
        if (!q->moved) Pn[i] = q->P;
        s->t_before[i] = q->t_last;
        s->v_before[i] = q->v_last;
        if (q->moved) {
            int dir = Pn[i] > q->P ? 1 : -1;
            q->D = dir == q->dir ? fmin(2 * q->D, 8 * s->oo.trust_frac) : s->oo.trust_frac;
            q->dir = dir;
            q->Pprev = q->P;
            q->P = Pn[i];
            s->moved_last = 1;
        }
        target_w[i] = Pn[i];
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += Pn[i];
    for (size_t i = 0; i < n && sum > budget_w * (1 + 1e-12); i++) {
        ojob *q = &s->j[i];
        if (!q->moved || q->P <= q->Pprev) continue;
        double take = fmin(sum - budget_w, q->P - q->Pprev);
        q->P -= take;
        Pn[i] = target_w[i] = q->P;
        sum -= take;
    }
}

pfi_status pfi_online_round(pfi_online *s, double budget_w, const double *power_w,
                            const double *power_se_w, const double *tokens_per_s,
                            const double *tokens_se, double *target_w, pfi_error *err)
{
    size_t n = s->n;
    measure(s, power_w, power_se_w, tokens_per_s, tokens_se);
    if (fabs(budget_w - s->budget) > 1e-3 * fabs(s->budget)) { /* a new budget: restart */
        pfi_status st = reference(s, budget_w, err);
        if (!st) st = online_plan_from_known(s, err);
        if (!st) memcpy(target_w, s->targets, n * sizeof *target_w);
        return st;
    }
    if (revert_lost_move(s, target_w)) return PFI_OK;
    local_models(s, budget_w);
    /* 5. the greedy under the budget, on the local models and their domains */
    prepared g = s->pj;
    g.floor = s->dlo;
    g.hi = s->dhi;
    int feas = 1;
    double *Pn = s->targets;
    pfi_status st = envelope_greedy(&g, s->local, &budget_w, 1, Pn, NULL, &feas, NULL, err);
    if (st) return st;
    if (!feas) {
        for (size_t i = 0; i < n; i++) s->buf[i] = s->j[i].floor;
        hold_budget(&s->pj, s->jobs, s->buf, budget_w, Pn);
    }
    take_moves(s, budget_w, Pn, target_w);
    return PFI_OK;
}

/* ---- a changing job set (the controller: jobs arrive, leave, become unreachable) ---- */

void pfi_online_hold(pfi_online *s, size_t i, int held)
{
    if (i >= s->n) return;
    s->j[i].held = held != 0;
    if (held) s->j[i].moved = 0; /* a held job's last move is not judged */
}

void pfi_online_rebudget(pfi_online *s, double budget_w)
{
    size_t n = s->n;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += s->j[i].P;
    double d = budget_w - sum;
    /* equal weight (P_max) over the jobs not held that have room, until the
     * difference is spread or no job has room (at most n passes: each pass
     * fills at least one job or spreads the rest) */
    for (size_t pass = 0; pass <= n && fabs(d) > 1e-9 * fabs(budget_w); pass++) {
        double w = 0;
        for (size_t i = 0; i < n; i++) {
            const ojob *q = &s->j[i];
            double room = d > 0 ? s->pj.hi[i] - q->P : q->P - q->floor;
            if (!q->held && room > 1e-12) w += s->jobs[i].power_max_w;
        }
        if (w <= 0) break;
        double left = d;
        for (size_t i = 0; i < n; i++) {
            ojob *q = &s->j[i];
            double room = d > 0 ? s->pj.hi[i] - q->P : q->P - q->floor;
            if (q->held || room <= 1e-12) continue;
            double x = d * s->jobs[i].power_max_w / w;
            if (fabs(x) > room) x = d > 0 ? room : -room;
            q->P += x;
            left -= x;
        }
        d = left;
    }
    for (size_t i = 0; i < n; i++) {
        ojob *q = &s->j[i];
        q->Pprev = q->P;
        q->moved = 0;
        s->targets[i] = q->P;
    }
    s->moved_last = 0;
    s->budget = budget_w;
}

pfi_status pfi_online_rejob(const pfi_online *old, const pfi_alloc_job *jobs, size_t n,
                            const long *from, double budget_w, pfi_online **out, pfi_error *err)
{
    pfi_status st = pfi_online_new(jobs, n, budget_w, &old->o, &old->oo, out, err);
    if (st) return st;
    pfi_online *s = *out;
    for (size_t i = 0; i < n; i++) {
        if (from[i] < 0 || (size_t)from[i] >= old->n) continue; /* new: its reference share */
        s->j[i] = old->j[from[i]];
        s->j[i].moved = 0;
        s->targets[i] = s->j[i].P;
    }
    pfi_online_rebudget(s, budget_w);
    return PFI_OK;
}

/* ---- simulation ---- */

pfi_status online_simulate(const pfi_alloc_job *jobs, size_t n, double budget_w,
                           const pfi_alloc_opts *o, const pfi_online_opts *oo, int rounds,
                           uint64_t seed, double *P, int *feasible, online_keep *keep,
                           pfi_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].curve)
            return pfi_errorf(err, PFI_EINVAL,
                              "safe-online simulation needs each job's true curve");
    pfi_online *s;
    pfi_status st = pfi_online_new(jobs, n, budget_w, o, oo, &s, err);
    if (st) return st;
    double *pw = malloc(4 * n * sizeof *pw), *pse = pw + n, *tk = pw + 2 * n, *tse = pw + 3 * n;
    double *prev = malloc(n * sizeof *prev);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    if (!pw || !prev || !rng) {
        free(pw), free(prev);
        if (rng) gsl_rng_free(rng);
        pfi_online_free(s);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    gsl_rng_set(rng, (unsigned long)pfi_mix64(seed ^ 0x5afe0ULL));
    memcpy(P, s->targets, n * sizeof *P);
    for (size_t i = 0; i < n; i++) prev[i] = s->pj.hi[i]; /* uncapped before the cut */
    for (int r = 1; r <= rounds && !st; r++) {
        const double *cur = P + (size_t)(r - 1) * n;
        for (size_t i = 0; i < n; i++) {
            /* a cap changed this round settles first */
            int changed = fabs(cur[i] - prev[i]) > 1e-9 * jobs[i].power_max_w;
            double secs = oo->period_s - (changed ? oo->settle_s : 0);
            if (secs < oo->step_s) secs = oo->step_s;
            double steps = secs / oo->step_s;
            double t = jc_at(&s->pj.jc[i], cur[i]) / s->pj.scale[i];
            double rt = oo->step_jitter / sqrt(steps), rp = oo->power_noise / sqrt(secs);
            tk[i] = t * (1 + gsl_ran_gaussian_ziggurat(rng, rt));
            tse[i] = fabs(tk[i]) * rt;
            pw[i] = cur[i] * (1 + gsl_ran_gaussian_ziggurat(rng, rp));
            pse[i] = cur[i] * rp;
            prev[i] = cur[i];
        }
        st = pfi_online_round(s, budget_w, pw, pse, tk, tse, P + (size_t)r * n, err);
    }
    if (!st && feasible) {
        double sum = 0;
        for (size_t i = 0; i < n; i++) sum += s->j[i].floor;
        *feasible = sum <= budget_w * (1 + 1e-9);
    }
    for (size_t i = 0; !st && keep && i < n; i++)
        keep->n[i] = pfi_online_export(s, i, keep->pts + i * keep->max, keep->max);
    free(pw), free(prev);
    gsl_rng_free(rng);
    pfi_online_free(s);
    return st;
}

pfi_status pfi_alloc_safe_online(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                 const pfi_alloc_opts *o, const pfi_online_opts *oo, int rounds,
                                 uint64_t seed, pfi_alloc_out *out, pfi_alloc_result *res,
                                 double *totals, pfi_error *err)
{
    if (rounds < 0) rounds = 0;
    double *P = malloc(((size_t)rounds + 1) * n * sizeof *P + 1);
    if (!P) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    int feas = 1;
    pfi_status st = online_simulate(jobs, n, budget_w, o, oo, rounds, seed, P, &feas, NULL, err);
    prepared pj;
    if (!st) {
        pfi_alloc_opts eo = *o;
        eo.strategy = PFI_STRAT_EQUAL;
        st = prep_jobs(jobs, n, &eo, 1, &pj, err);
    }
    if (!st) {
        for (int r = 0; totals && r <= rounds; r++)
            totals[r] = true_total(&pj, P + (size_t)r * n, NULL, jobs);
        const double *last = P + (size_t)rounds * n;
        if (out || res) {
            pfi_alloc_result local;
            pfi_alloc_result *rr = res ? res : &local;
            memset(rr, 0, sizeof *rr);
            if (out) alloc_caps(jobs, &pj, last, o, out, rr);
            else rr->total_tokens_true = true_total(&pj, last, &rr->sla_violations, jobs);
            rr->budget_w = budget_w;
            rr->feasible = feas;
        }
        prep_free(&pj);
    }
    free(P);
    return st;
}

pfi_status pfi_alloc_online_default(const pfi_alloc_job *jobs, size_t n, double budget_w,
                                    const pfi_alloc_opts *o, pfi_alloc_out *out,
                                    pfi_alloc_result *res, pfi_error *err)
{
    pfi_online_opts oo;
    pfi_online_opts_default(&oo);
    return pfi_alloc_safe_online(jobs, n, budget_w, o, &oo, oo.rounds, PFI_ONLINE_SEED, out, res,
                                 NULL, err);
}
