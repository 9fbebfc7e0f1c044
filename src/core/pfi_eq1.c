/* pfi_eq1.c — the paper's Eq. 1 and its two Appendix A alternatives (area
 * between normalized curve and diagonal; constant-elasticity fit). Exactly as
 * the paper defines them; pfi's own robust estimate lives in robust.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/pfi.h"

int pfi_point_ratio(const pfi_point *p, const pfi_point *u, double *ratio)
{
    if (!(p->tokens_per_s < u->tokens_per_s)) return 1;
    *ratio = (1.0 - p->power_w / u->power_w) / (1.0 - p->tokens_per_s / u->tokens_per_s);
    return 0;
}

void pfi_eq1(const pfi_curve *c, pfi_eq1_result *r)
{
    memset(r, 0, sizeof *r);
    r->pfi = NAN;
    r->ratio_min = NAN;
    r->ratio_max = NAN;
    if (c->n < 2) return;
    const pfi_point *u = pfi_curve_uncapped(c);
    double sum = 0;
    for (size_t i = 0; i + 1 < c->n; i++) {
        double q;
        if (pfi_point_ratio(&c->pts[i], u, &q)) {
            r->n_excluded++;
            continue;
        }
        if (r->n_used == 0 || q < r->ratio_min) r->ratio_min = q;
        if (r->n_used == 0 || q > r->ratio_max) r->ratio_max = q;
        sum += q;
        r->n_used++;
    }
    if (r->n_used) r->pfi = sum / (double)r->n_used;
}

static int cmp_power(const void *a, const void *b)
{
    double x = ((const pfi_point *)a)->power_w, y = ((const pfi_point *)b)->power_w;
    return (x > y) - (x < y);
}

double pfi_area(const pfi_curve *c)
{
    if (c->n < 1) return NAN;
    const pfi_point *u = pfi_curve_uncapped(c);
    pfi_point *s = malloc(c->n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, c->pts, c->n * sizeof *s);
    qsort(s, c->n, sizeof *s, cmp_power);
    double sum = 0, pt = 0, pp = 0; /* previous point starts at (0,0) */
    for (size_t i = 0; i < c->n; i++) {
        sum += (s[i].tokens_per_s + pt) * (s[i].power_w - pp);
        pt = s[i].tokens_per_s;
        pp = s[i].power_w;
    }
    free(s);
    return sum / (2.0 * u->tokens_per_s * u->power_w) - 0.5;
}

pfi_status pfi_elasticity(const pfi_curve *c, pfi_elasticity_result *r, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    size_t n = c->n;
    if (n < 2) return pfi_errorf(err, PFI_EINVAL, "elasticity needs at least 2 points");
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        mx += log(c->pts[i].power_w);
        my += log(c->pts[i].tokens_per_s);
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = log(c->pts[i].power_w) - mx, dy = log(c->pts[i].tokens_per_s) - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if (sxx <= 0)
        return pfi_errorf(err, PFI_EINVAL, "elasticity undefined: all points at one power");
    r->a = sxy / sxx;
    r->b = my - r->a * mx;
    r->r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
    r->one_minus_a = 1.0 - r->a;
    r->inv_a = r->a != 0 ? 1.0 / r->a : INFINITY;
    return PFI_OK;
}
