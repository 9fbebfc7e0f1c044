/* pfi_ci.c — 95% confidence interval of Eq. 1 by Monte Carlo, as the paper
 * does: each run's power and throughput are redrawn from a normal with its
 * standard error (pfi_noise_opts), Eq. 1 is recomputed with its exclusion
 * rule on every resample, and the interval is the percentile interval
 * (linear interpolation between order statistics, numpy's default) of the
 * resamples in which Eq. 1 is defined.
 *
 * Random numbers: GSL's taus2 generator with the ziggurat Gaussian, seeded
 * from (seed, key) by splitmix64, so a group's interval depends only on its
 * data, the seed and its key, never on processing order. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

#include "pfi/pfi.h"
#include "pfi/util.h"

struct pfi_ci_ctx {
    gsl_rng *rng;
    double *samples;
    size_t cap;
    double *p_sd, *t_sd; /* per point */
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
    free(ctx);
}

pfi_status pfi_eq1_ci(pfi_ci_ctx *ctx, const pfi_curve *c, const pfi_ci_opts *o, uint64_t key,
                      pfi_ci_result *r, pfi_error *err)
{
    r->lo = r->hi = NAN;
    r->n_valid = 0;
    if (o->resamples > ctx->cap)
        return pfi_errorf(err, PFI_EINVAL, "resamples %zu exceed context capacity %zu",
                          o->resamples, ctx->cap);
    if (!(o->level > 0 && o->level < 1))
        return pfi_errorf(err, PFI_EINVAL, "confidence level must be in (0,1)");
    size_t n = c->n;
    if (n < 2) return PFI_OK;
    if (n > ctx->pts_cap) {
        double *a = realloc(ctx->p_sd, n * sizeof *a);
        if (!a) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        ctx->p_sd = a;
        double *b = realloc(ctx->t_sd, n * sizeof *b);
        if (!b) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        ctx->t_sd = b;
        ctx->pts_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        ctx->p_sd[i] = pfi_point_sem_power(&c->pts[i], &o->noise);
        ctx->t_sd[i] = pfi_point_sem_tokens(&c->pts[i], &o->noise);
    }
    gsl_rng_set(ctx->rng, (unsigned long)pfi_mix64(o->seed ^ pfi_mix64(key)));
    const pfi_point *u = &c->pts[n - 1];
    size_t nv = 0;
    for (size_t s = 0; s < o->resamples; s++) {
        double pu = u->power_w + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->p_sd[n - 1]);
        double tu = u->tokens_per_s + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->t_sd[n - 1]);
        double sum = 0;
        size_t used = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            double p = c->pts[i].power_w + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->p_sd[i]);
            double t = c->pts[i].tokens_per_s + gsl_ran_gaussian_ziggurat(ctx->rng, ctx->t_sd[i]);
            if (!(t < tu)) continue;
            sum += (1.0 - p / pu) / (1.0 - t / tu);
            used++;
        }
        if (used) ctx->samples[nv++] = sum / (double)used;
    }
    r->n_valid = nv;
    if (nv == 0) return PFI_OK;
    double alpha = (1.0 - o->level) / 2.0;
    r->lo = pfi_quantile_select(ctx->samples, nv, alpha);
    r->hi = pfi_quantile_select(ctx->samples, nv, 1.0 - alpha);
    return PFI_OK;
}
