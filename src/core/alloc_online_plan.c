/* alloc_online_plan.c — safe-online's first targets from what is known
 * before a round (a profile at job start, earlier events;
 * docs/allocation.md, "Profiles and memory"): the oracle's greedy on each
 * job's pessimistic measured curve, taken only on a gain of PLAN_GAIN_SE
 * standard errors on the reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_online_int.h"

/* job i's curve for the plan (s->local[i], domain [dlo, dhi]): its
 * pessimistic measured curve from its floor (or its lowest point) to its
 * uncapped baseline, chords less the curvature allowance (len^2 / 8);
 * where its reference target lies below its lowest point, extended down
 * to it with loss_slope's extrapolation. A job without measured points
 * (or held) is pinned at its reference target. */
static void plan_curve(pfi_online *s, size_t i)
{
    ojob *q = &s->j[i];
    jcurve *L = &s->local[i];
    double P0 = q->P;
    L->n = 0;
    if (q->np < 2 || q->held) {
        L->n = 1;
        L->p[0] = L->lo = L->hi = s->dlo[i] = s->dhi[i] = P0;
        L->t[0] = 0;
        return;
    }
    opoint x[MAXP];
    double pt[MAXP], tt[MAXP], pmax = s->jobs[i].power_max_w;
    double kc = s->oo.curvature * s->pj.tmax[i] / (pmax * pmax);
    size_t m = online_pessimistic_points(s, i, x, pt, tt);
    double lo = fmax(q->floor, pt[0]);
    if (P0 < lo) lo = P0;
    if (lo < pt[0]) { /* below every measured point: extrapolated */
        L->p[0] = lo;
        L->t[0] = tt[0] - online_loss_slope(s, i, &x[0], lo) * (pt[0] - lo);
        L->n = 1;
    }
    for (size_t k = 0; k < m; k++) {
        if (pt[k] < lo) {
            if (k + 1 < m && pt[k + 1] > lo) { /* lo on the chord k .. k + 1 */
                double len = pt[k + 1] - pt[k], w = (lo - pt[k]) / len;
                L->p[L->n] = lo;
                L->t[L->n++] = tt[k] + w * (tt[k + 1] - tt[k]) - kc * len * len / 8;
            }
            continue;
        }
        if (L->n && pt[k] <= L->p[L->n - 1]) continue;
        L->p[L->n] = pt[k];
        L->t[L->n++] = tt[k];
    }
    L->lo = L->p[0];
    L->hi = L->p[L->n - 1];
    s->dlo[i] = L->lo;
    s->dhi[i] = L->hi;
}

/* job i's measured tokens/s at power p (scaled): its points' means joined
 * by straight lines, with the variance of that reading (*var); below its
 * lowest point, the plan's extrapolation (s->local[i]) less the lowest
 * point's own pessimism; above its highest, the highest point */
static double mean_at(const pfi_online *s, size_t i, double p, double *var)
{
    const ojob *q = &s->j[i];
    const opoint *lo = NULL, *hi = NULL;
    *var = 0;
    if (!q->np) return jc_at(&s->local[i], p);
    for (size_t k = 0; k < q->np; k++) {
        const opoint *x = &q->pt[k];
        if (x->p <= p && (!lo || x->p > lo->p)) lo = x;
        if (x->p >= p && (!hi || x->p < hi->p)) hi = x;
    }
    if (!lo) {
        *var = hi->vt;
        return jc_at(&s->local[i], p) + s->oo.z * sqrt(hi->vt);
    }
    if (!hi || hi->p - lo->p <= 0) {
        *var = lo->vt;
        return lo->t;
    }
    double w = (p - lo->p) / (hi->p - lo->p);
    *var = (1 - w) * (1 - w) * lo->vt + w * w * hi->vt;
    return lo->t + w * (hi->t - lo->t);
}

/* does the plan (s->buf) gain on the reference (s->targets) by more than
 * PLAN_GAIN_SE standard errors, read off the jobs' measured means (mean_at)? Where
 * it does not, the points cannot tell the two apart and the reference
 * stands: two jobs alike, or curves nearly straight, are otherwise split
 * by their noise (one point's larger standard error makes a cheap stretch
 * of its pessimistic curve), one job cut to its floor and the other
 * spared (issue 41: identical honest twins lost 17.5% and 1.3%), and a
 * job whose profile sits at other powers (one that drew more while
 * uncapped) won its twin's share */
static int plan_gains(const pfi_online *s)
{
    double gain = 0, var = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (fabs(s->buf[i] - s->targets[i]) <= online_merge_tol(s, i)) continue;
        double v1, v0;
        gain += mean_at(s, i, s->buf[i], &v1) - mean_at(s, i, s->targets[i], &v0);
        var += v1 + v0;
    }
    return gain > PLAN_GAIN_SE * sqrt(var);
}

/* The first targets from what is known before a round (a profile at job
 * start, earlier events: docs/allocation.md, "Profiles and memory"): the
 * oracle's greedy under the budget on each job's pessimistic measured
 * curve (plan_curve), the jobs without points pinned at their reference
 * share. Every reference target lies on its job's domain, so the plan's
 * pessimistic total is never below the reference's on the same curves;
 * where the floors do not fit, the reference (the tier rule) stands. */
pfi_status online_plan_from_known(pfi_online *s, pfi_error *err)
{
    size_t n = s->n;
    int any = 0;
    for (size_t i = 0; i < n; i++) any |= s->j[i].np > 1 && !s->j[i].held;
    if (!any) return PFI_OK;
    double sum_lo = 0;
    for (size_t i = 0; i < n; i++) {
        plan_curve(s, i);
        sum_lo += s->dlo[i];
    }
    if (sum_lo > s->budget * (1 + 1e-12)) return PFI_OK;
    prepared g = s->pj;
    g.floor = s->dlo;
    g.hi = s->dhi;
    int feas = 1;
    double budget = s->budget, sum = 0;
    pfi_status st = envelope_greedy(&g, s->local, &budget, 1, s->buf, NULL, &feas, NULL, err);
    if (st || !feas) return st;
    for (size_t i = 0; i < n; i++) sum += s->buf[i];
    if (sum > budget * (1 + 1e-9) || !plan_gains(s)) return PFI_OK;
    for (size_t i = 0; i < n; i++) {
        ojob *q = &s->j[i];
        q->P = q->Pprev = s->targets[i] = s->buf[i];
        q->moved = 0;
    }
    return PFI_OK;
}
