/* curve.c — power–throughput curves: normalization, isotonic cleanup,
 * interpolation, the power->cap inverse map and the concave envelope.
 * See include/pfi/curve.h for the contract of each function. */
#include "pfi/curve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_cap(const void *a, const void *b)
{
    double x = ((const pfi_point *)a)->cap_w, y = ((const pfi_point *)b)->cap_w;
    return (x > y) - (x < y);
}

pfi_status pfi_curve_init(pfi_curve *c, const pfi_point *pts, size_t n, pfi_error *err)
{
    c->n = 0;
    c->pts = NULL;
    if (n == 0) return pfi_errorf(err, PFI_EINVAL, "curve has no points");
    c->pts = malloc(n * sizeof *c->pts);
    if (!c->pts) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    memcpy(c->pts, pts, n * sizeof *pts);
    c->n = n;
    qsort(c->pts, n, sizeof *c->pts, cmp_cap);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(c->pts[i].cap_w) || c->pts[i].cap_w <= 0) {
            pfi_curve_dispose(c);
            return pfi_errorf(err, PFI_EINVAL, "cap_w must be a positive finite number");
        }
        if (i && c->pts[i].cap_w == c->pts[i - 1].cap_w) {
            double cap = c->pts[i].cap_w;
            pfi_curve_dispose(c);
            return pfi_errorf(err, PFI_EINVAL, "duplicate cap %g W in one curve", cap);
        }
    }
    return PFI_OK;
}

void pfi_curve_dispose(pfi_curve *c)
{
    free(c->pts);
    c->pts = NULL;
    c->n = 0;
}

pfi_status pfi_curve_copy(pfi_curve *dst, const pfi_curve *src, pfi_error *err)
{
    return pfi_curve_init(dst, src->pts, src->n, err);
}

const pfi_point *pfi_curve_uncapped(const pfi_curve *c)
{
    return &c->pts[c->n - 1];
}

void pfi_curve_normalized(const pfi_curve *c, double *p_frac, double *t_frac)
{
    const pfi_point *u = pfi_curve_uncapped(c);
    for (size_t i = 0; i < c->n; i++) {
        if (p_frac) p_frac[i] = c->pts[i].power_w / u->power_w;
        if (t_frac) t_frac[i] = c->pts[i].tokens_per_s / u->tokens_per_s;
    }
}

/* Pool adjacent violators with a stack of blocks (value, weight, length). */
int pfi_isotonic_increasing(double *y, const double *w, size_t n)
{
    if (n < 2) return 0;
    double *bv = malloc(n * sizeof *bv), *bw = malloc(n * sizeof *bw);
    size_t *bl = malloc(n * sizeof *bl);
    if (!bv || !bw || !bl) {
        free(bv), free(bw), free(bl);
        return 0;
    }
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        bv[nb] = y[i];
        bw[nb] = w ? w[i] : 1.0;
        bl[nb] = 1;
        nb++;
        while (nb > 1 && bv[nb - 2] > bv[nb - 1]) {
            double wsum = bw[nb - 2] + bw[nb - 1];
            bv[nb - 2] = (bv[nb - 2] * bw[nb - 2] + bv[nb - 1] * bw[nb - 1]) / wsum;
            bw[nb - 2] = wsum;
            bl[nb - 2] += bl[nb - 1];
            nb--;
        }
    }
    int changed = 0;
    size_t k = 0;
    for (size_t b = 0; b < nb; b++)
        for (size_t j = 0; j < bl[b]; j++, k++) {
            if (y[k] != bv[b]) changed = 1;
            y[k] = bv[b];
        }
    free(bv), free(bw), free(bl);
    return changed;
}

int pfi_curve_isotonic(pfi_curve *c)
{
    size_t n = c->n;
    if (n < 2) return 0;
    double *t = malloc(n * sizeof *t), *p = malloc(n * sizeof *p), *w = malloc(n * sizeof *w);
    int flags = 0;
    if (t && p && w) {
        for (size_t i = 0; i < n; i++) {
            t[i] = c->pts[i].tokens_per_s;
            p[i] = c->pts[i].power_w;
            w[i] = c->pts[i].repeats > 0 ? c->pts[i].repeats : 1;
        }
        if (pfi_isotonic_increasing(t, w, n)) flags |= 1;
        if (pfi_isotonic_increasing(p, w, n)) flags |= 2;
        for (size_t i = 0; i < n; i++) {
            c->pts[i].tokens_per_s = t[i];
            c->pts[i].power_w = p[i];
        }
    }
    free(t), free(p), free(w);
    return flags;
}

int pfi_curve_is_monotone(const pfi_curve *c)
{
    for (size_t i = 1; i < c->n; i++)
        if (c->pts[i].power_w < c->pts[i - 1].power_w ||
            c->pts[i].tokens_per_s < c->pts[i - 1].tokens_per_s)
            return 0;
    return 1;
}

pfi_status pfi_curve_power_at_cap(const pfi_curve *c, double cap_w, double *power_w, pfi_error *err)
{
    const pfi_point *p = c->pts;
    size_t n = c->n;
    if (!(cap_w >= p[0].cap_w - 1e-9 && cap_w <= p[n - 1].cap_w + 1e-9))
        return pfi_errorf(err, PFI_ERANGE, "cap %g W outside measured caps [%g, %g] W", cap_w,
                          p[0].cap_w, p[n - 1].cap_w);
    if (n == 1 || cap_w <= p[0].cap_w) {
        *power_w = p[0].power_w;
        return PFI_OK;
    }
    size_t j = 0;
    while (j + 2 < n && p[j + 1].cap_w <= cap_w) j++;
    if (cap_w >= p[j + 1].cap_w) {
        *power_w = p[j + 1].power_w;
        return PFI_OK;
    }
    double f = (cap_w - p[j].cap_w) / (p[j + 1].cap_w - p[j].cap_w);
    *power_w = p[j].power_w + f * (p[j + 1].power_w - p[j].power_w);
    return PFI_OK;
}

pfi_status pfi_curve_tokens_at_power(const pfi_curve *c, double power_w, double *tokens_per_s,
                                     pfi_error *err)
{
    const pfi_point *p = c->pts;
    size_t n = c->n;
    double pmin = p[0].power_w, pmax = p[n - 1].power_w;
    double eps = 1e-9 * (fabs(pmax) + 1.0);
    if (!pfi_curve_is_monotone(c))
        return pfi_errorf(err, PFI_EINVAL, "curve is not monotone (apply isotonic cleanup first)");
    if (!(power_w >= pmin - eps && power_w <= pmax + eps))
        return pfi_errorf(err, PFI_ERANGE, "power %g W outside measured range [%g, %g] W", power_w,
                          pmin, pmax);
    /* Last point whose power does not exceed the query: at equal power the
     * larger cap (higher throughput) is what that power buys. */
    size_t lo = 0, hi = n; /* find last j with p[j].power_w <= power_w + eps */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].power_w <= power_w + eps) lo = mid;
        else hi = mid;
    }
    size_t j = lo;
    if (j == n - 1 || fabs(p[j].power_w - power_w) <= eps) {
        *tokens_per_s = p[j].tokens_per_s;
        return PFI_OK;
    }
    double f = (power_w - p[j].power_w) / (p[j + 1].power_w - p[j].power_w);
    *tokens_per_s = p[j].tokens_per_s + f * (p[j + 1].tokens_per_s - p[j].tokens_per_s);
    return PFI_OK;
}

static int segment_flat(const pfi_curve *c, size_t k)
{
    double scale = fabs(pfi_curve_uncapped(c)->power_w) + 1.0;
    return fabs(c->pts[k + 1].power_w - c->pts[k].power_w) <= 1e-9 * scale;
}

pfi_status pfi_curve_cap_for_power(const pfi_curve *c, double target_w, pfi_inverse *out,
                                   pfi_error *err)
{
    const pfi_point *p = c->pts;
    size_t n = c->n;
    memset(out, 0, sizeof *out);
    for (size_t i = 1; i < n; i++)
        if (p[i].power_w < p[i - 1].power_w)
            return pfi_errorf(err, PFI_EINVAL,
                              "power is not monotone in the cap (apply isotonic cleanup first)");
    double cap_lo = ceil(p[0].cap_w - 1e-9), cap_hi = floor(p[n - 1].cap_w + 1e-9);
    if (cap_lo > cap_hi)
        return pfi_errorf(err, PFI_ERANGE, "no integer cap within [%g, %g] W", p[0].cap_w,
                          p[n - 1].cap_w);
    double cap;
    double p_lo;
    pfi_curve_power_at_cap(c, cap_lo, &p_lo, NULL);
    if (target_w < p_lo) {
        cap = cap_lo;
        out->flags |= PFI_INV_BELOW_RANGE;
    } else {
        /* last measured point with power <= target */
        size_t j = 0;
        while (j + 1 < n && p[j + 1].power_w <= target_w) j++;
        if (j == n - 1) {
            cap = cap_hi;
        } else {
            double f = (target_w - p[j].power_w) / (p[j + 1].power_w - p[j].power_w);
            double cstar = p[j].cap_w + f * (p[j + 1].cap_w - p[j].cap_w);
            cap = floor(cstar + 1e-9);
            if (cap > cap_hi) cap = cap_hi;
            if (cap < cap_lo) cap = cap_lo;
            /* guard against rounding: step down while above target */
            double pw;
            pfi_curve_power_at_cap(c, cap, &pw, NULL);
            while (pw > target_w + 1e-9 && cap > cap_lo) {
                cap -= 1;
                pfi_curve_power_at_cap(c, cap, &pw, NULL);
            }
        }
    }
    out->cap_w = cap;
    pfi_curve_power_at_cap(c, cap, &out->power_w, NULL);
    out->slack_w = target_w - out->power_w;
    for (size_t k = 0; k + 1 < n; k++)
        if (cap >= p[k].cap_w - 1e-9 && cap <= p[k + 1].cap_w + 1e-9 && segment_flat(c, k))
            out->flags |= PFI_INV_FLAT;
    return PFI_OK;
}

/* Andrew's monotone chain, upper hull only. */
size_t pfi_concave_envelope(const double *x, const double *y, size_t n, size_t *idx)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        while (m >= 2) {
            size_t a = idx[m - 2], b = idx[m - 1];
            /* cross of (b-a) x (i-a) >= 0 means b is on or below segment a..i */
            double cross = (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a]);
            if (cross >= 0) m--;
            else break;
        }
        idx[m++] = i;
    }
    return m;
}

pfi_status pfi_curve_subgrid(const pfi_curve *c, const double *caps_w, size_t ncaps, pfi_curve *out,
                             pfi_error *err)
{
    out->n = 0;
    out->pts = NULL;
    if (ncaps == 0) return pfi_errorf(err, PFI_EINVAL, "empty cap list");
    pfi_point *sel = malloc(ncaps * sizeof *sel);
    if (!sel) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t k = 0; k < ncaps; k++) {
        size_t i;
        for (i = 0; i < c->n; i++)
            if (fabs(c->pts[i].cap_w - caps_w[k]) <= 1e-9) break;
        if (i == c->n) {
            free(sel);
            return pfi_errorf(err, PFI_ENOTFOUND, "no run at cap %g W", caps_w[k]);
        }
        sel[k] = c->pts[i];
    }
    pfi_status st = pfi_curve_init(out, sel, ncaps, err);
    free(sel);
    return st;
}
