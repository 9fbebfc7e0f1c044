/* alloc_base.c — what every allocation strategy shares (alloc_internal.h):
 * job curves on their allowed power domain, Eq. 2 weights and their check,
 * workloads prepared for one strategy (the strategy table says what it
 * believes and how it weights), the envelope greedy (the oracle's
 * optimizer) and water-filling, the hard budget, evaluation on the true
 * curves, the sweep over budgets, and the cap mapping. The entry points
 * above it (alloc.c, alloc_loop.c, alloc_online.c, alloc_exact.c) call
 * this file, never each other. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "strategy.h"
#include "util.h"

double pfi_sla_loss(int tier)
{
    switch (tier) {
    case 0: return 0;
    case 1: return 0.10;
    case 2: return 0.25;
    case 3: return 0.50;
    default: return 1.0; /* no SLA */
    }
}

void pfi_alloc_opts_default(pfi_alloc_opts *o)
{
    o->strategy = PFI_STRAT_PFI_AWARE;
    o->normalized = 0;
    o->sla_ratio_floor = 0.8;
    o->sla_curve_margin = 0.06;
    o->op_pfi_true = 0;
}

/* ---- job curves ---- */

void jc_free(jcurve *j)
{
    free(j->p);
    j->p = j->t = NULL;
    j->n = 0;
}

/* j's points in store (2 x c->n doubles, the caller's); throughput made
 * monotone too when iso_t */
static pfi_status jc_build_in(const pfi_curve *c, double scale, int iso_t, jcurve *j, double *store,
                              pfi_error *err)
{
    memset(j, 0, sizeof *j);
    if (!c || c->n < 1) return pfi_errorf(err, PFI_EINVAL, "job without a curve");
    size_t n = c->n;
    double sp[64], st[64], sw[64];
    double *p = n <= 64 ? sp : malloc(n * sizeof *p), *t = n <= 64 ? st : malloc(n * sizeof *t);
    double *w = n <= 64 ? sw : malloc(n * sizeof *w);
    j->p = store;
    if (!p || !t || !w) {
        if (n > 64) free(p), free(t), free(w);
        j->p = NULL;
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    /* the curve's points in cap order, made monotone (isotonic regression) */
    for (size_t i = 0; i < n; i++) {
        p[i] = c->pts[i].power_w;
        t[i] = c->pts[i].tokens_per_s;
        w[i] = c->pts[i].repeats > 0 ? c->pts[i].repeats : 1;
    }
    int mono = 1;
    for (size_t i = 1; i < n && mono; i++) mono = p[i] >= p[i - 1] && (!iso_t || t[i] >= t[i - 1]);
    if (!mono) {
        pfi_isotonic_increasing(p, w, n);
        if (iso_t) pfi_isotonic_increasing(t, w, n);
    }
    j->t = j->p + n;
    for (size_t i = 0; i < n; i++) {
        double tt = t[i] * scale;
        if (j->n && p[i] <= j->p[j->n - 1] + 1e-9) { /* same power: the larger throughput */
            if (tt > j->t[j->n - 1]) j->t[j->n - 1] = tt;
            continue;
        }
        j->p[j->n] = p[i];
        j->t[j->n] = tt;
        j->n++;
    }
    if (n > 64) free(p), free(t), free(w);
    j->lo = j->p[0];
    j->hi = j->p[j->n - 1];
    return PFI_OK;
}

pfi_status jc_build_raw(const pfi_curve *c, double scale, jcurve *j, pfi_error *err)
{
    memset(j, 0, sizeof *j);
    if (!c || c->n < 1) return pfi_errorf(err, PFI_EINVAL, "job without a curve");
    double *store = malloc(2 * c->n * sizeof *store);
    if (!store) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    pfi_status st = jc_build_in(c, scale, 0, j, store, err);
    if (st) free(store);
    return st;
}

double jc_at(const jcurve *j, double p)
{
    if (p <= j->p[0]) return j->t[0];
    if (p >= j->p[j->n - 1]) return j->t[j->n - 1];
    size_t lo = 0, hi = j->n - 1;
    while (hi - lo > 1) {
        size_t m = (lo + hi) / 2;
        if (j->p[m] <= p) lo = m;
        else hi = m;
    }
    double f = (p - j->p[lo]) / (j->p[hi] - j->p[lo]);
    return j->t[lo] + f * (j->t[hi] - j->t[lo]);
}

/* lowest power whose throughput is at least t */
double jc_power_for(const jcurve *j, double t)
{
    if (t <= j->t[0]) return j->p[0];
    for (size_t i = 1; i < j->n; i++)
        if (j->t[i] >= t) {
            if (j->t[i] == j->t[i - 1]) return j->p[i - 1];
            double f = (t - j->t[i - 1]) / (j->t[i] - j->t[i - 1]);
            return j->p[i - 1] + f * (j->p[i] - j->p[i - 1]);
        }
    return j->p[j->n - 1];
}

/* the concave envelope of the curve on [lo, hi] as segments (top first) */
size_t jc_envelope(const jcurve *j, double lo, double hi, double *sp, double *st, size_t cap)
{
    /* points inside the domain, with its ends */
    size_t m = 0, need = j->n + 2;
    double bx[66], bt[66];
    size_t bi[66];
    double *px = need <= 66 ? bx : malloc(need * sizeof *px),
           *pt = need <= 66 ? bt : malloc(need * sizeof *pt);
    size_t *idx = need <= 66 ? bi : malloc(need * sizeof *idx);
    if (!px || !pt || !idx) {
        if (need > 66) free(px), free(pt), free(idx);
        return 0;
    }
    px[m] = lo;
    pt[m++] = jc_at(j, lo);
    for (size_t i = 0; i < j->n; i++)
        if (j->p[i] > lo + 1e-9 && j->p[i] < hi - 1e-9) {
            px[m] = j->p[i];
            pt[m++] = j->t[i];
        }
    if (hi > lo + 1e-9) {
        px[m] = hi;
        pt[m++] = jc_at(j, hi);
    }
    size_t h = pfi_concave_envelope(px, pt, m, idx);
    size_t k = 0;
    for (size_t v = 0; v < h && k < cap; v++) {
        sp[k] = px[idx[v]];
        st[k] = pt[idx[v]];
        k++;
    }
    if (need > 66) free(px), free(pt), free(idx);
    return k;
}

/* ---- Eq. 2 weights (the table's weight functions) ---- */

/* job j's weight under strategy t: 0 for a strategy without one (pfi-op's is per cut) */
static double eq2_weight(const pfi_strategy_ops *t, const pfi_alloc_job *j, const pfi_alloc_opts *o)
{
    return t && t->weight ? t->weight(j, o->normalized) : 0;
}

/* what the weight is taken from (the quantity named in an error): the PFI,
 * the raw column, else P_max */
static double weight_source(const pfi_strategy_ops *t, const pfi_alloc_job *j)
{
    return t->needs & PFI_NEEDS_PFI      ? j->pfi_pred
           : t->needs & PFI_NEEDS_COLUMN ? j->dcp
                                         : j->power_max_w;
}

pfi_status pfi_alloc_check_weights(const pfi_alloc_job *jobs, size_t n, const pfi_alloc_opts *o,
                                   pfi_error *err)
{
    /* the closed loop starts from pfi-aware: its weight is checked too */
    const pfi_strategy_ops *t = pfi_strategy_get(o->strategy);
    if (!t || !t->weight) return PFI_OK;
    const char *what = t->weight_of;
    char list[320];
    size_t bad = 0, len = 0;
    for (size_t i = 0; i < n; i++) {
        const pfi_alloc_job *j = &jobs[i];
        double w = eq2_weight(t, j, o);
        if (w > 0 && isfinite(w)) continue;
        if (++bad > 3) continue;
        /* the quantity at fault: the source of the weight, else the weight itself */
        const char *label = what;
        double v = weight_source(t, j);
        if (v > 0 && isfinite(v)) label = "weight", v = w;
        char idx[32];
        snprintf(idx, sizeof idx, "#%zu", i + 1);
        int k = snprintf(list + len, sizeof list - len, "%s%s: %s %.4g", bad > 1 ? "; " : "",
                         j->name ? j->name : idx, label, v);
        if (k > 0) len += (size_t)k < sizeof list - len ? (size_t)k : sizeof list - len - 1;
    }
    if (!bad) return PFI_OK;
    char more[48] = "";
    if (bad > 3) snprintf(more, sizeof more, " and %zu more", bad - 3);
    return pfi_errorf(
        err, PFI_EINVAL,
        "%s: %zu of %zu jobs have no finite, positive %s to weight their share by: %s%s", t->name,
        bad, n, what, list, more);
}

/* ---- preparing a workload for one strategy ---- */

/* the curve a strategy believes (pfi_strategy_ops.believes): the oracle
 * the true one, the curve-aware ones their prediction, pfi-op its
 * prediction unless it reads the true curve, the proportional ones none */
static const pfi_curve *belief_curve(const pfi_strategy_ops *t, const pfi_alloc_job *j,
                                     const pfi_alloc_opts *o)
{
    switch (t ? t->believes : PFI_BELIEVES_NOTHING) {
    case PFI_BELIEVES_MEASURED: return j->curve;
    case PFI_BELIEVES_PREDICTED: return j->pred_curve;
    case PFI_BELIEVES_AT_OP: return o->op_pfi_true ? NULL : j->pred_curve;
    default: return NULL;
    }
}

/* glibc's largest block reused from its heap (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit) */
#define PREP_ONE_BLOCK_MAX ((size_t)32 << 20)

pfi_status prep_jobs(const pfi_alloc_job *jobs, size_t n, const pfi_alloc_opts *o, int want_true,
                     prepared *pj, pfi_error *err)
{
    memset(pj, 0, sizeof *pj);
    pj->n = n;
    /* one block: the curves, the six per-job numbers, every curve's points;
     * the oracle believes the true curves (belief is jc, not a copy) */
    const pfi_strategy_ops *t = pfi_strategy_get(o->strategy);
    pfi_belief believes = t ? t->believes : PFI_BELIEVES_NOTHING;
    int measured = believes == PFI_BELIEVES_MEASURED, shared = measured && want_true;
    size_t points = 0, used = 0, ncurves = shared ? n : 2 * n, cap = 0, widest = 1;
    for (size_t i = 0; i < n; i++) {
        const pfi_curve *bc = belief_curve(t, &jobs[i], o);
        size_t nt = want_true && jobs[i].curve ? jobs[i].curve->n : 0, nb = bc ? bc->n : 0;
        points += nt;
        if (bc && !(shared && jobs[i].curve)) points += nb;
        size_t most = (nt > nb ? nt : nb) + 2; /* envelope_greedy on either */
        cap += most;
        if (most > widest) widest = most;
    }
    /* A strategy that believes a curve gets the envelope greedy's scratch
     * in the same block: one allocation a call, not two of about the same
     * size, which made glibc trim its heap top after each call and fault
     * the pages in again at the next (at 10,000 jobs half a call's time).
     * Not past PREP_ONE_BLOCK_MAX: glibc maps a larger block afresh at
     * every call, where two smaller ones are reused from its heap. */
    size_t curve_bytes = ncurves * sizeof(jcurve),
           bytes = curve_bytes + (6 * n + 2 * points + 1) * sizeof(double);
    size_t scratch = believes == PFI_BELIEVES_NOTHING ? 0 : greedy_scratch_bytes(n, cap, widest);
    if (bytes + scratch > PREP_ONE_BLOCK_MAX) scratch = 0;
    char *block = malloc(bytes + scratch);
    if (!block) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    memset(block, 0, curve_bytes);
    pj->block = block;
    pj->jc = (jcurve *)block;
    pj->belief = shared ? pj->jc : pj->jc + n;
    double *per_job = (double *)(block + curve_bytes);
    pj->floor = per_job;
    pj->hi = per_job + n;
    pj->weight = per_job + 2 * n;
    pj->scale = per_job + 3 * n;
    pj->tmax = per_job + 4 * n;
    pj->lo = per_job + 5 * n;
    pj->store = per_job + 6 * n;
    pj->scratch = scratch ? pj->store + 2 * points + 1 : NULL;
    pj->scratch_bytes = scratch;
    pfi_status st = pfi_alloc_check_weights(jobs, n, o, err);
    for (size_t i = 0; i < n && !st; i++) {
        const pfi_alloc_job *j = &jobs[i];
        double scale = o->normalized ? 1.0 / j->tokens_per_s_max : 1.0;
        pj->scale[i] = scale;
        pj->tmax[i] = j->tokens_per_s_max * scale;
        pj->hi[i] = j->power_max_w;
        if (want_true && j->curve) {
            if ((st = jc_build_in(j->curve, scale, 1, &pj->jc[i], pj->store + 2 * used, err)))
                break;
            used += j->curve->n;
            pj->hi[i] = pj->jc[i].hi;
        }
        /* the curve the strategy believes (the oracle's: the true one, shared) */
        const pfi_curve *bc = belief_curve(t, j, o);
        if (bc && measured && pj->jc[i].n) {
            /* pj->belief is pj->jc */
        } else if (bc) {
            if ((st = jc_build_in(bc, scale, 1, &pj->belief[i], pj->store + 2 * used, err))) break;
            used += bc->n;
        }
        /* floors: the lowest reachable power and the SLA */
        double lo = j->power_min_w;
        if (measured && pj->jc[i].n) lo = fmax(lo, pj->jc[i].lo);
        if (bc) lo = fmax(lo, pj->belief[i].lo);
        if (lo > pj->hi[i]) lo = pj->hi[i];
        pj->lo[i] = lo;
        double L = pfi_sla_loss(j->sla_tier);
        if (j->sla_tier >= 0 && L < 1) {
            double f;
            if (j->sla_tier == 0) f = pj->hi[i];
            else if (measured && pj->jc[i].n) /* exact */
                f = jc_power_for(&pj->jc[i], (1 - L) * pj->tmax[i] * (1 + 1e-12));
            else if (bc && believes != PFI_BELIEVES_AT_OP) /* a prediction: with a margin */
                f = jc_power_for(&pj->belief[i],
                                 fmin(1.0, 1 - L + o->sla_curve_margin) * pj->tmax[i]);
            else f = pj->hi[i] * (1 - L * o->sla_ratio_floor);
            if (f > lo) lo = f;
        }
        if (lo > pj->hi[i]) lo = pj->hi[i];
        pj->floor[i] = lo;
        pj->weight[i] = eq2_weight(t, j, o); /* finite and positive: checked above (pfi-op: per
                                                cut) */
    }
    if (st) prep_free(pj);
    return st;
}

pfi_status prep_raw(const pfi_alloc_job *jobs, prepared *pj, pfi_error *err)
{
    pj->raw = calloc(pj->n ? pj->n : 1, sizeof *pj->raw);
    if (!pj->raw) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; i < pj->n; i++)
        if (jobs[i].curve) {
            pfi_status st = jc_build_raw(jobs[i].curve, pj->scale[i], &pj->raw[i], err);
            if (st) return st;
        }
    return PFI_OK;
}

void prep_free(prepared *pj)
{
    if (pj->raw) /* built one by one (prep_raw) */
        for (size_t i = 0; i < pj->n; i++) jc_free(&pj->raw[i]);
    free(pj->raw);
    free(pj->block); /* jc, belief, the per-job numbers and the points */
    memset(pj, 0, sizeof *pj);
}

/* ---- proportional strategies with water-filling ---- */

typedef struct ratio {
    double r;
    size_t i;
} ratio;

static int cmp_ratio(const void *a, const void *b)
{
    double x = ((const ratio *)a)->r, y = ((const ratio *)b)->r;
    return (x > y) - (x < y);
}

pfi_status water_fill(const prepared *pj, const double *budgets, size_t nb, double *P,
                      int *feasible, pfi_error *err)
{
    size_t n = pj->n;
    ratio *r = malloc((n ? n : 1) * sizeof *r);
    dref *d = malloc((nb ? nb : 1) * sizeof *d);
    if (!r || !d) {
        free(r), free(d);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    double sum_hi = 0, cap_total = 0, wsum = 0;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        double c = pj->hi[i] - pj->floor[i];
        sum_hi += pj->hi[i];
        if (pj->weight[i] > 0 && c > 0) {
            r[nr++] = (ratio){c / pj->weight[i], i};
            cap_total += c;
            wsum += pj->weight[i];
        }
    }
    qsort(r, nr, sizeof *r, cmp_ratio);
    for (size_t k = 0; k < nb; k++) d[k] = (dref){sum_hi - budgets[k], k};
    qsort(d, nb, sizeof *d, cmp_dref);
    /* as lambda grows, jobs saturate in order of cap/weight */
    size_t sat = 0;
    double shed_sat = 0, w_free = wsum;
    for (size_t q = 0; q < nb; q++) {
        double delta = d[q].delta;
        size_t k = d[q].k;
        if (feasible) feasible[k] = delta <= cap_total + 1e-6;
        for (size_t i = 0; i < n; i++) P[k * n + i] = pj->hi[i];
        if (delta <= 0) continue;
        if (delta >=
            cap_total) { /* every weight is positive (pfi_alloc_check_weights): all at the floor */
            for (size_t i = 0; i < n; i++) P[k * n + i] = pj->floor[i];
            continue;
        }
        /* lambda with shed_sat + w_free * lambda = delta, and lambda <= next saturation */
        while (sat < nr && shed_sat + w_free * r[sat].r <= delta) {
            shed_sat += pj->hi[r[sat].i] - pj->floor[r[sat].i];
            w_free -= pj->weight[r[sat].i];
            sat++;
        }
        double lambda = w_free > 0 ? (delta - shed_sat) / w_free : 0;
        for (size_t q2 = 0; q2 < nr; q2++) {
            size_t i = r[q2].i;
            double c = q2 < sat ? pj->hi[i] - pj->floor[i] : pj->weight[i] * lambda;
            P[k * n + i] = pj->hi[i] - c;
        }
    }
    free(r), free(d);
    return PFI_OK;
}

/* ---- the hard budget ---- */

int hold_budget(const prepared *pj, const pfi_alloc_job *jobs, const double *floor, double budget,
                double *P)
{
    size_t n = pj->n;
    if (!floor) floor = pj->floor;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += P[i] = floor[i];
    double short_w = sum - budget;
    static const int order[] = {-1, 3, 2, 1, 0}; /* no SLA (room 0 unless online), Flex 3 first */
    for (int q = 0; q < 5 && short_w > 0; q++) {
        double room = 0;
        for (size_t i = 0; i < n; i++) {
            int t = jobs[i].sla_tier >= 0 && jobs[i].sla_tier <= 3 ? jobs[i].sla_tier : -1;
            if (t == order[q] && P[i] > pj->lo[i]) room += P[i] - pj->lo[i];
        }
        if (room <= 0) continue;
        double f = short_w >= room ? 1.0 : short_w / room;
        for (size_t i = 0; i < n; i++) {
            int t = jobs[i].sla_tier >= 0 && jobs[i].sla_tier <= 3 ? jobs[i].sla_tier : -1;
            if (t == order[q] && P[i] > pj->lo[i]) P[i] -= f * (P[i] - pj->lo[i]);
        }
        short_w -= f * room;
    }
    return short_w > 1e-9 * (budget > 1 ? budget : 1) ? -1 : 0;
}

/* ---- evaluation on the true curves ---- */

double raw_total(const prepared *pj, const double *P)
{
    double s = 0;
    for (size_t i = 0; pj->raw && i < pj->n; i++)
        if (pj->raw[i].n) s += jc_at(&pj->raw[i], P[i]);
    return s;
}

double pfi_op_weight(const prepared *pj, const pfi_alloc_job *j, size_t i, double cut,
                     const pfi_alloc_opts *o)
{
    const jcurve *c = o->op_pfi_true ? &pj->jc[i] : &pj->belief[i];
    if (!c->n) return NAN;
    if (cut < 0.01) cut = 0.01; /* the ratio's limit at the top: its value at a 1% cut */
    double top = jc_at(c, j->power_max_w);
    if (!(top > 0)) return NAN;
    double loss = 1 - jc_at(c, (1 - cut) * j->power_max_w) / top;
    /* a flat curve (no loss) sheds as if its PFI were 100; a job cannot shed
     * beyond its floor (water-filling clips it) */
    double pfi = loss > cut / 100 ? cut / loss : 100;
    if (pfi < 0.01) pfi = 0.01;
    return j->power_max_w / (o->normalized ? 1.0 : j->tokens_per_s_max) * pfi;
}

pfi_status strategy_sweep(const pfi_alloc_job *jobs, const prepared *pj, const double *budgets,
                          size_t nb, const pfi_alloc_opts *o, double *P, int *feasible, int *over,
                          pfi_error *err)
{
    size_t n = pj->n;
    pfi_status st = PFI_OK;
    const pfi_strategy_ops *t = pfi_strategy_get(o->strategy);
    pfi_shed shed = t ? t->shed : PFI_SHED_WEIGHT;
    if (shed == PFI_SHED_ENVELOPE) /* the oracle's belief is its true curves */
        st = envelope_greedy(pj, pj->belief, budgets, nb, P, NULL, feasible, NULL, err);
    else if (shed == PFI_SHED_WEIGHT_AT_CUT) {
        double *w = malloc((n ? n : 1) * sizeof *w), sum_max = 0;
        if (!w) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) sum_max += jobs[i].power_max_w;
        prepared q = *pj;
        q.weight = w;
        for (size_t k = 0; k < nb && !st; k++) {
            double cut = sum_max > 0 ? 1 - budgets[k] / sum_max : 0;
            for (size_t i = 0; i < n && !st; i++) {
                w[i] = pfi_op_weight(pj, &jobs[i], i, cut, o);
                if (!(w[i] > 0 && isfinite(w[i])))
                    st = pfi_errorf(err, PFI_EINVAL,
                                    "%s: job %s has no %s curve to take its PFI from", t->name,
                                    jobs[i].name ? jobs[i].name : "?",
                                    o->op_pfi_true ? "measured" : "predicted");
            }
            if (!st) st = water_fill(&q, &budgets[k], 1, P + k * n, &feasible[k], err);
        }
        free(w);
    } else st = water_fill(pj, budgets, nb, P, feasible, err);
    for (size_t k = 0; k < nb && !st; k++) {
        int r = feasible[k] ? 0 : hold_budget(pj, jobs, NULL, budgets[k], P + k * n);
        if (over) over[k] = r < 0;
    }
    return st;
}

double true_total(const prepared *pj, const double *P, size_t *violations,
                  const pfi_alloc_job *jobs)
{
    double s = 0;
    size_t v = 0;
    for (size_t i = 0; i < pj->n; i++) {
        if (!pj->jc[i].n) continue;
        double t = jc_at(&pj->jc[i], P[i]);
        s += t;
        double L = pfi_sla_loss(jobs[i].sla_tier);
        if (jobs[i].sla_tier >= 0 && L < 1 && t < (1 - L) * pj->tmax[i] * (1 - 1e-9)) v++;
    }
    if (violations) *violations = v;
    return s;
}

/* ---- one allocation with caps ---- */

static double belief_tokens(const prepared *pj, const pfi_alloc_job *j, size_t i, double p,
                            const pfi_alloc_opts *o)
{
    (void)o;
    if (pj->belief[i].n) return jc_at(&pj->belief[i], p) / pj->scale[i]; /* the oracle's: jc */
    /* a scalar PFI implies a straight line: loss = reduction / PFI */
    double pfi = j->pfi_pred > 0 ? j->pfi_pred : 1.0;
    double t = j->tokens_per_s_max * (1 - (1 - p / j->power_max_w) / pfi);
    return t > 0 ? t : 0;
}

pfi_status alloc_caps(const pfi_alloc_job *jobs, const prepared *pj, const double *P,
                      const pfi_alloc_opts *o, pfi_alloc_out *out, pfi_alloc_result *res)
{
    res->total_power_w = res->total_tokens_true = res->total_tokens_expected = 0;
    res->sla_violations = 0;
    for (size_t i = 0; i < pj->n; i++) {
        const pfi_alloc_job *j = &jobs[i];
        pfi_alloc_out *a = &out[i];
        memset(a, 0, sizeof *a);
        a->target_w = P[i];
        a->cap_w = a->slack_w = NAN;
        const pfi_curve *cc = j->curve ? j->curve : j->pred_curve;
        if (cc) {
            pfi_curve m;
            if (pfi_curve_copy(&m, cc, NULL) == PFI_OK) {
                pfi_curve_isotonic(&m);
                pfi_inverse inv;
                if (pfi_curve_cap_for_power(&m, P[i], &inv, NULL) == PFI_OK) {
                    double cap = inv.cap_w;
                    if (cap < j->cap_min_w) cap = ceil(j->cap_min_w);
                    if (j->cap_max_w > 0 && cap > j->cap_max_w) cap = floor(j->cap_max_w);
                    a->cap_w = cap;
                    double pw;
                    if (pfi_curve_power_at_cap(&m, cap, &pw, NULL) == PFI_OK)
                        a->slack_w = P[i] - pw;
                    a->cap_flags = inv.flags;
                }
                pfi_curve_dispose(&m);
            }
        }
        a->tokens_expected = belief_tokens(pj, j, i, P[i], o);
        a->tokens_true = pj->jc[i].n ? jc_at(&pj->jc[i], P[i]) / pj->scale[i] : NAN;
        double L = pfi_sla_loss(j->sla_tier);
        if (pj->jc[i].n && j->sla_tier >= 0 && L < 1 &&
            a->tokens_true < (1 - L) * j->tokens_per_s_max * (1 - 1e-9)) {
            a->sla_violated = 1;
            res->sla_violations++;
        }
        res->total_power_w += P[i];
        res->total_tokens_true += isnan(a->tokens_true) ? 0 : a->tokens_true;
        res->total_tokens_expected += a->tokens_expected;
    }
    return PFI_OK;
}
