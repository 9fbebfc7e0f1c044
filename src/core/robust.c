/* robust.c — pfi's robust PFI (beyond the paper; Eq. 1 itself is in
 * pfi_eq1.c and is never altered here).
 *
 * Eq. 1 breaks on real data: a job that never reaches its cap sheds no power,
 * so its "losses" are noise and the ratios explode or go negative. Here:
 *   x_i = 1 - P_i/P_max  (fractional power reduction)
 *   y_i = 1 - T_i/T_max  (fractional throughput loss)
 * with standard errors from the points' SEMs (pfi_noise_opts), ignoring the
 * correlation that the shared uncapped point induces.
 * (a) noise-aware Eq. 1: the mean of x_i/y_i over points with x_i > k sx_i
 *     and y_i > k sy_i;
 * (b) weighted least squares through the origin, y = s x, over points whose
 *     power reduction exceeds k sx_i (power is the less noisy variable, so it
 *     is the regressor; a point with a loss inside the noise is informative:
 *     it says the loss is small). Weights 1/sy_i^2; the slope's standard
 *     error is the measurement one, inflated by sqrt(reduced chi-square) when
 *     that exceeds 1. PFI_robust = 1/s.
 * (c) verdict, in this order: too-few-points (no capped point),
 *     not-power-bound (no point's power reduction exceeds noise),
 *     non-positive-slope (s <= 0; pfi_robust is then undefined and
 *     pfi_robust_lo = 1/(2 se) is the lower bound the data support),
 *     noisy (s < k se), else ok. */
#include <math.h>
#include <string.h>

#include "pfi/pfi.h"

const char *pfi_verdict_name(pfi_verdict v)
{
    switch (v) {
    case PFI_VERDICT_OK: return "ok";
    case PFI_VERDICT_NOT_POWER_BOUND: return "not-power-bound";
    case PFI_VERDICT_TOO_FEW_POINTS: return "too-few-points";
    case PFI_VERDICT_NOISY: return "noisy";
    case PFI_VERDICT_NON_POSITIVE_SLOPE: return "non-positive-slope";
    }
    return "unknown";
}

void pfi_robust_opts_default(pfi_robust_opts *o)
{
    o->k = PFI_ROBUST_DEFAULT_K;
    pfi_noise_default_robust(&o->noise);
}

/* standard error of 1 - a/b given absolute SEMs of a and b */
static double frac_se(double a, double sa, double b, double sb)
{
    double ra = sa / a, rb = sb / b;
    return fabs(a / b) * sqrt(ra * ra + rb * rb);
}

void pfi_robust(const pfi_curve *c, const pfi_robust_opts *o, pfi_robust_result *r)
{
    memset(r, 0, sizeof *r);
    r->pfi_noise_aware = r->slope = r->slope_se = NAN;
    r->pfi_robust = r->pfi_robust_lo = r->pfi_robust_hi = NAN;
    if (c->n < 2) {
        r->verdict = PFI_VERDICT_TOO_FEW_POINTS;
        return;
    }
    const pfi_point *u = pfi_curve_uncapped(c);
    double su_p = pfi_point_sem_power(u, &o->noise), su_t = pfi_point_sem_tokens(u, &o->noise);
    double na_sum = 0, swxx = 0, swxy = 0;
    size_t nfit = 0;
    /* first pass: sums for the slope */
    for (size_t i = 0; i + 1 < c->n; i++) {
        const pfi_point *p = &c->pts[i];
        double x = 1 - p->power_w / u->power_w, y = 1 - p->tokens_per_s / u->tokens_per_s;
        double sx = frac_se(p->power_w, pfi_point_sem_power(p, &o->noise), u->power_w, su_p);
        double sy =
            frac_se(p->tokens_per_s, pfi_point_sem_tokens(p, &o->noise), u->tokens_per_s, su_t);
        if (x > o->k * sx && y > o->k * sy) {
            na_sum += x / y;
            r->n_noise_kept++;
        }
        if (x > o->k * sx) {
            double w = sy > 0 ? 1.0 / (sy * sy) : 1.0;
            swxx += w * x * x;
            swxy += w * x * y;
            nfit++;
        }
    }
    if (r->n_noise_kept) r->pfi_noise_aware = na_sum / (double)r->n_noise_kept;
    r->n_fit = nfit;
    if (nfit == 0) {
        r->verdict = PFI_VERDICT_NOT_POWER_BOUND;
        return;
    }
    double s = swxy / swxx;
    /* second pass: residual chi-square */
    double chi2 = 0;
    for (size_t i = 0; i + 1 < c->n; i++) {
        const pfi_point *p = &c->pts[i];
        double x = 1 - p->power_w / u->power_w, y = 1 - p->tokens_per_s / u->tokens_per_s;
        double sx = frac_se(p->power_w, pfi_point_sem_power(p, &o->noise), u->power_w, su_p);
        double sy =
            frac_se(p->tokens_per_s, pfi_point_sem_tokens(p, &o->noise), u->tokens_per_s, su_t);
        if (x > o->k * sx) {
            double w = sy > 0 ? 1.0 / (sy * sy) : 1.0;
            chi2 += w * (y - s * x) * (y - s * x);
        }
    }
    double se = 1.0 / sqrt(swxx);
    if (nfit >= 2) {
        double red = chi2 / (double)(nfit - 1);
        if (red > 1) se *= sqrt(red);
    }
    r->slope = s;
    r->slope_se = se;
    if (!(s > 0)) {
        /* no measurable loss: the data only bound PFI from below */
        r->pfi_robust_lo = 1.0 / (2 * se);
        r->pfi_robust_hi = INFINITY;
        r->verdict = PFI_VERDICT_NON_POSITIVE_SLOPE;
        return;
    }
    r->pfi_robust = 1.0 / s;
    r->pfi_robust_lo = 1.0 / (s + 2 * se);
    r->pfi_robust_hi = s > 2 * se ? 1.0 / (s - 2 * se) : INFINITY;
    r->verdict = s < o->k * se ? PFI_VERDICT_NOISY : PFI_VERDICT_OK;
}
