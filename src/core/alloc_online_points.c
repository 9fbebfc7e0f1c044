/* alloc_online_points.c — safe-online's measured points of a job (power,
 * tokens/s, their variances; alloc_online_int.h) and what is read off them:
 * merging a measurement into a point, the neighbours of a power, secants
 * with their standard errors, and the pessimistic loss slope below the
 * lowest point (docs/allocation.md, "safe-online"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_online_int.h"

/* job i's merge tolerance, W: merge_frac x P_max, or x twice its power
 * range (uncapped less lowest reachable) where that is narrower: a job that
 * cannot shed much (its power below most caps) keeps its few watts of range
 * as distinct points (with P_max, a 1%-wide range merged into two points and
 * the plan pinned such jobs: 0.1 of the gap on the Zeus held-out GPUs) */
double online_merge_tol(const pfi_online *s, size_t i)
{
    double pmax = s->jobs[i].power_max_w, range = 2 * (s->pj.hi[i] - s->pj.lo[i]);
    return s->oo.merge_frac * (range > 0 && range < pmax ? range : pmax);
}

/* add a measurement to job i's points: merged with a point within merge_frac
 * x P_max (inverse-variance weights), else a new point (the oldest
 * non-baseline point dropped when full) */
void online_add_point(pfi_online *s, size_t i, opoint m)
{
    ojob *q = &s->j[i];
    double tol = online_merge_tol(s, i);
    for (size_t k = 0; k < q->np; k++) {
        opoint *a = &q->pt[k];
        if (fabs(a->p - m.p) > tol) continue;
        if (a->vt <= 0) return; /* the exact baseline */
        double wa = 1 / a->vt, wm = 1 / (m.vt > 0 ? m.vt : 1e-30);
        a->t = (wa * a->t + wm * m.t) / (wa + wm);
        a->vt = 1 / (wa + wm);
        double pa = 1 / (a->vp > 0 ? a->vp : 1e-30), pm = 1 / (m.vp > 0 ? m.vp : 1e-30);
        a->p = (pa * a->p + pm * m.p) / (pa + pm);
        a->vp = 1 / (pa + pm);
        return;
    }
    if (q->np == MAXP) {
        memmove(&q->pt[1], &q->pt[2], (MAXP - 2) * sizeof q->pt[0]);
        q->np--;
    }
    q->pt[q->np++] = m;
}

/* the points of job i nearest below and above power p (outside the merge
 * tolerance), and the one at p; NULL where none */
void online_neighbours(const pfi_online *s, size_t i, double p, const opoint **below,
                       const opoint **at, const opoint **above)
{
    const ojob *q = &s->j[i];
    double tol = online_merge_tol(s, i);
    *below = *at = *above = NULL;
    for (size_t k = 0; k < q->np; k++) {
        const opoint *a = &q->pt[k];
        if (fabs(a->p - p) <= tol) {
            if (!*at || fabs(a->p - p) < fabs((*at)->p - p)) *at = a;
        } else if (a->p < p) {
            if (!*below || a->p > (*below)->p) *below = a;
        } else if (!*above || a->p < (*above)->p) *above = a;
    }
}

/* secant slope between points a (lower) and b and its standard error */
double online_secant(const opoint *a, const opoint *b, double *se)
{
    double dp = b->p - a->p, s = (b->t - a->t) / dp;
    *se = sqrt((a->vt + b->vt) / (dp * dp) + s * s * (a->vp + b->vp) / (dp * dp));
    return s;
}

/* the points of job i below cur (outside the merge tolerance), highest
 * first; returns how many */
size_t online_points_below(const pfi_online *s, size_t i, const opoint *cur, const opoint **out)
{
    const ojob *q = &s->j[i];
    double tol = online_merge_tol(s, i);
    size_t m = 0;
    for (size_t k = 0; k < q->np; k++)
        if (q->pt[k].p < cur->p - tol) out[m++] = &q->pt[k];
    for (size_t a = 1; a < m; a++) /* insertion sort, descending power */
        for (size_t b = a; b > 0 && out[b]->p > out[b - 1]->p; b--) {
            const opoint *t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return m;
}

/* the nearest point of job i above x (NULL: none) */
const opoint *online_point_above(const pfi_online *s, size_t i, const opoint *x)
{
    const opoint *b, *c, *a;
    online_neighbours(s, i, x->p, &b, &c, &a);
    return a;
}

/* below job i's lowest measured point low (chord low..up, the next chord
 * up..up2 where there is one), how fast its slope may grow per W: as
 * measured between the two chords (the lower chord's own standard error is
 * added where it is extended; never under the assumed curvature), or, with
 * one chord only (unverified: every job at round 1), the unverified
 * curvature, set from real sweeps */
double online_growth_below(const pfi_online *s, size_t i, const opoint *low, const opoint *up,
                           const opoint *up2)
{
    double pmax = s->jobs[i].power_max_w, u = s->pj.tmax[i] / pmax;
    double k = s->oo.curvature * u / pmax;
    if (!up || !up2) return s->oo.curvature_unverified * u / pmax;
    double se0, se1, s0 = online_secant(low, up, &se0), s1 = online_secant(up, up2, &se1);
    return fmax(k, (s0 - s1) / (0.5 * (up2->p - low->p)));
}

/* The pessimistic loss slope of job i from its current point cur down to
 * power pt (< cur->p), per W. Down to its lowest measured point the loss
 * is read off its measured points joined by straight lines (a short chord
 * between two noisy points is no evidence of a flat stretch beyond it),
 * with the points' standard errors and, for a convex stretch, curvature x
 * length^2 / 8; below the lowest point the lowest chord is extended with
 * its standard error and the growth growth_below allows (docs/allocation.md,
 * "safe-online"). Never below 0 (curves are monotone). */
double online_loss_slope(const pfi_online *s, size_t i, const opoint *cur, double pt)
{
    const opoint *x[MAXP + 1];
    size_t m = online_points_below(s, i, cur, x + 1), j = 0;
    x[0] = cur;
    double pmax = s->jobs[i].power_max_w, z = s->oo.z;
    double k = s->oo.curvature * s->pj.tmax[i] / (pmax * pmax), loss, var;
    while (j < m && x[j + 1]->p > pt) j++; /* pt on the chord x[j + 1] .. x[j] */
    if (j < m) {
        const opoint *hi = x[j], *lo = x[j + 1];
        double len = hi->p - lo->p, w = (pt - lo->p) / len, sl = (hi->t - lo->t) / len;
        loss = cur->t - (lo->t + w * (hi->t - lo->t)) + k * len * len / 8;
        var = (j ? cur->vt + w * w * hi->vt : (1 - w) * (1 - w) * cur->vt) +
              (1 - w) * (1 - w) * lo->vt + sl * sl * (cur->vp + lo->vp);
    } else {
        const opoint *low = x[m], *up = m ? x[m - 1] : online_point_above(s, i, cur);
        const opoint *up2 = m >= 2 ? x[m - 2] : up ? online_point_above(s, i, up) : NULL;
        double ext = low->p - pt, se = 0, sl = 0, len = 0;
        if (up) {
            sl = online_secant(low, up, &se);
            len = up->p - low->p;
        }
        double kx = online_growth_below(s, i, low, up, up2);
        loss = cur->t - low->t + (sl + z * se + kx * (ext + 0.5 * len)) * ext;
        var = m ? cur->vt + low->vt : 0;
    }
    double l = (loss + z * sqrt(var)) / (cur->p - pt);
    return l > 0 ? l : 0;
}

/* job i's known points (jobs[i].known: a profile, earlier events) added
 * to its measured points, tokens/s scaled as the state's; a point not
 * finite, not positive or above the uncapped power is skipped */
void online_add_known(pfi_online *s, size_t i, const pfi_alloc_job *job)
{
    double sc = s->pj.scale[i], hi = s->pj.hi[i];
    double tol = online_merge_tol(s, i);
    for (size_t k = 0; job->known && k < job->n_known; k++) {
        const pfi_online_point *x = &job->known[k];
        double pse = isfinite(x->power_se_w) ? x->power_se_w : 0;
        double tse = isfinite(x->tokens_se) ? x->tokens_se : 0;
        if (!(isfinite(x->power_w) && isfinite(x->tokens_per_s) && x->power_w > 0 &&
              x->tokens_per_s >= 0 && x->power_w <= hi + tol))
            continue;
        online_add_point(
            s, i, (opoint){x->power_w, x->tokens_per_s * sc, pse * pse, tse * sc * tse * sc});
    }
}

size_t pfi_online_export(const pfi_online *s, size_t i, pfi_online_point *out, size_t max)
{
    if (i >= s->n) return 0;
    const ojob *q = &s->j[i];
    double sc = s->pj.scale[i];
    size_t m = 0;
    for (size_t k = 1; k < q->np && m < max; k++) { /* pt[0]: the uncapped baseline */
        const opoint *a = &q->pt[k];
        out[m++] = (pfi_online_point){a->p, sqrt(a->vp), a->t / sc, sqrt(a->vt) / sc};
    }
    return m;
}

/* job i's measured points sorted by power, each less z SE and made
 * monotone (a lower point never above a higher one): its pessimistic
 * curve where it was measured; returns how many (into x, pt, tt) */
size_t online_pessimistic_points(const pfi_online *s, size_t i, opoint *x, double *pt, double *tt)
{
    const ojob *q = &s->j[i];
    size_t m = q->np;
    memcpy(x, q->pt, m * sizeof *x);
    for (size_t a = 1; a < m; a++) /* insertion sort, ascending power */
        for (size_t b = a; b > 0 && x[b].p < x[b - 1].p; b--) {
            opoint t = x[b];
            x[b] = x[b - 1];
            x[b - 1] = t;
        }
    for (size_t k = 0; k < m; k++) pt[k] = x[k].p, tt[k] = x[k].t - s->oo.z * sqrt(x[k].vt);
    for (size_t k = m - 1; k-- > 0;)
        if (tt[k] > tt[k + 1]) tt[k] = tt[k + 1];
    return m;
}
