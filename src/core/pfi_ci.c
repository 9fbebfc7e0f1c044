/* pfi_ci.c — 95% confidence interval of Eq. 1 by Monte Carlo, as the paper
 * does: each run's power and throughput are redrawn from a normal with its
 * standard error (pfi_noise_opts), Eq. 1 is recomputed on every resample,
 * and the interval is the percentile interval (linear interpolation between
 * order statistics, numpy's default) of the resamples.
 *
 * The caps in the mean are those of the point estimate (the conditional
 * interval): re-applying the exclusion rule per resample let a cap excluded
 * for T_i >= T_max re-enter with a near-zero denominator, and on a curve flat
 * until its lowest caps the whole interval lay above the estimate. A used
 * cap's slowdown may still vanish under noise (its ratio's denominator
 * crosses zero): when that happens in more than (1 - level)/2 of the
 * resamples, the ratio has no bounded interval at this level (Fieller), and
 * the interval is reported empty with verdict "unstable"; so is one that
 * does not contain the estimate. Hence, by construction, an interval is
 * either empty or contains the estimate (docs/robust.md).
 *
 * Random numbers: GSL's taus2 generator with the ziggurat Gaussian, seeded
 * from (seed, key) by splitmix64, so a group's interval depends only on its
 * data, the seed and its key, never on processing order. Every point is
 * drawn, used or not, so the stream is that of the unconditional rule. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pfi/pfi.h"
#include "util.h"
#include "vec.h"

struct pfi_ci_ctx {
    gsl_rng *rng;
    double *samples;
    size_t cap;
    double *p_sd, *t_sd; /* per point */
    size_t *flips;       /* per point: resamples in which its slowdown vanished */
    size_t pts_cap;
};

void pfi_ci_opts_default(pfi_ci_opts *o)
{
    o->resamples = 10000;
    o->seed = 1;
    o->level = 0.95;
    pfi_noise_default_ci(&o->noise);
}

pfi_ci_ctx *pfi_ci_ctx_new(size_t max_resamples)
{
    pfi_ci_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    ctx->rng = gsl_rng_alloc(gsl_rng_taus2);
    ctx->samples = malloc((max_resamples ? max_resamples : 1) * sizeof *ctx->samples);
    ctx->cap = max_resamples;
    if (!ctx->rng || !ctx->samples) {
        pfi_ci_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void pfi_ci_ctx_free(pfi_ci_ctx *ctx)
{
    if (!ctx) return;
    if (ctx->rng) gsl_rng_free(ctx->rng);
    free(ctx->samples);
    free(ctx->p_sd);
    free(ctx->t_sd);
    free(ctx->flips);
    free(ctx);
}

const char *pfi_ci_verdict_name(pfi_ci_verdict v)
{
    switch (v) {
    case PFI_CI_NONE: return "";
    case PFI_CI_OK: return "ok";
    case PFI_CI_UNSTABLE: return "unstable";
    }
    return "";
}

static pfi_status grow(pfi_ci_ctx *ctx, size_t n, pfi_error *err)
{
    if (n <= ctx->pts_cap) return PFI_OK;
    pfi_status st = PFI_VEC_RESIZE(ctx->p_sd, n, err);
    if (!st) st = PFI_VEC_RESIZE(ctx->t_sd, n, err);
    if (!st) st = PFI_VEC_RESIZE(ctx->flips, n, err);
    if (st) return st;
    ctx->pts_cap = n;
    return PFI_OK;
}

static void unstable(pfi_ci_result *r)
{
    r->lo = r->hi = NAN;
    r->verdict = PFI_CI_UNSTABLE;
}

pfi_status pfi_eq1_ci(pfi_ci_ctx *ctx, const pfi_curve *c, const pfi_ci_opts *o, uint64_t key,
                      pfi_ci_result *r, pfi_error *err)
{
    r->lo = r->hi = NAN;
    r->n_valid = r->n_flip = 0;
    r->verdict = PFI_CI_NONE;
    r->reason[0] = '\0';
    if (o->resamples > ctx->cap)
        return pfi_errorf(err, PFI_EINVAL, "resamples %zu exceed context capacity %zu",
                          o->resamples, ctx->cap);
    if (!(o->level > 0 && o->level < 1))
        return pfi_errorf(err, PFI_EINVAL, "confidence level must be in (0,1)");
    size_t n = c->n;
    if (n < 2) return PFI_OK;
    pfi_eq1_result est;
    pfi_eq1(c, &est);
    if (est.n_used == 0) return PFI_OK; /* Eq. 1 undefined: nothing to bound */
    pfi_status st = grow(ctx, n, err);
    if (st) return st;
    const pfi_point *u = &c->pts[n - 1];
    for (size_t i = 0; i < n; i++) {
        ctx->p_sd[i] = pfi_point_sem_power(&c->pts[i], &o->noise);
        ctx->t_sd[i] = pfi_point_sem_tokens(&c->pts[i], &o->noise);
        ctx->flips[i] = 0;
    }
    gsl_rng_set(ctx->rng, (unsigned long)pfi_mix64(o->seed ^ pfi_mix64(key)));
    size_t nv = 0;
    for (size_t s = 0; s < o->resamples; s++) {
        double pu = u->power_w + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->p_sd[n - 1]);
        double tu = u->tokens_per_s + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->t_sd[n - 1]);
        double sum = 0;
        int flip = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            double p = c->pts[i].power_w + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->p_sd[i]);
            double t = c->pts[i].tokens_per_s + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->t_sd[i]);
            double q;
            if (pfi_point_ratio(&c->pts[i], u, &q)) continue; /* not in the estimate */
            double slow = 1.0 - t / tu;
            if (!(slow > 0)) {
                ctx->flips[i]++;
                flip = 1;
            }
            sum += (1.0 - p / pu) / slow;
        }
        r->n_flip += (size_t)flip;
        double v = sum / (double)est.n_used;
        if (isfinite(v)) ctx->samples[nv++] = v;
    }
    r->n_valid = nv;
    double alpha = (1.0 - o->level) / 2.0;
    if ((double)r->n_flip > alpha * (double)o->resamples) {
        size_t worst = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (ctx->flips[i] > ctx->flips[worst]) worst = i;
        snprintf(r->reason, sizeof r->reason,
                 "slowdown within noise at cap %g W: a used cap had T_i >= T_max in %.1f%% of "
                 "resamples (limit %.1f%%): Eq. 1 unbounded",
                 c->pts[worst].cap_w, 100.0 * (double)r->n_flip / (double)o->resamples,
                 100.0 * alpha);
        unstable(r);
        return PFI_OK;
    }
    if (nv == 0) {
        snprintf(r->reason, sizeof r->reason, "no resample gave a finite Eq. 1");
        unstable(r);
        return PFI_OK;
    }
    r->lo = pfi_quantile_select(ctx->samples, nv, alpha);
    r->hi = pfi_quantile_select(ctx->samples, nv, 1.0 - alpha);
    if (!(r->lo <= est.pfi && est.pfi <= r->hi)) {
        snprintf(r->reason, sizeof r->reason,
                 "estimate %.4g outside its percentile interval %.4g..%.4g", est.pfi, r->lo, r->hi);
        unstable(r);
        return PFI_OK;
    }
    r->verdict = PFI_CI_OK;
    return PFI_OK;
}
