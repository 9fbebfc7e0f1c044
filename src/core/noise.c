/* noise.c — how standard errors are assigned to a curve's points, and an
 * estimate of between-run noise from runs whose cap does not bind.
 *
 * A point's SEM is its SEM column when present, else a relative default times
 * the value; a relative floor may raise either (between-run noise is about
 * ten times the within-run SEM the paper resampled). */
#include <math.h>
#include <stdlib.h>

#include "pfi/pfi.h"

void pfi_noise_default_ci(pfi_noise_opts *o)
{
    o->rel_default_power = PFI_CI_DEFAULT_REL_SEM_POWER;
    o->rel_default_tokens = PFI_CI_DEFAULT_REL_SEM_TOKENS;
    o->rel_floor = 0;
}

void pfi_noise_default_robust(pfi_noise_opts *o)
{
    o->rel_default_power = PFI_ROBUST_DEFAULT_REL_SEM_POWER;
    o->rel_default_tokens = PFI_ROBUST_DEFAULT_REL_SEM_TOKENS;
    o->rel_floor = 0;
}

static double sem_of(double value, double sem, double rel_default, double rel_floor)
{
    double s = isfinite(sem) && sem >= 0 ? sem : rel_default * fabs(value);
    double floor_ = rel_floor * fabs(value);
    return s > floor_ ? s : floor_;
}

double pfi_point_sem_power(const pfi_point *p, const pfi_noise_opts *o)
{
    return sem_of(p->power_w, p->power_w_sem, o->rel_default_power, o->rel_floor);
}

double pfi_point_sem_tokens(const pfi_point *p, const pfi_noise_opts *o)
{
    return sem_of(p->tokens_per_s, p->tokens_per_s_sem, o->rel_default_tokens, o->rel_floor);
}

void pfi_estimate_noise(const pfi_curve *const *curves, const int *gpus, size_t ncurves,
                        double bind_ratio, pfi_noise_estimate *out)
{
    double ssp = 0, sst = 0;
    size_t dof = 0;
    out->n_points = 0;
    out->n_groups = 0;
    for (size_t g = 0; g < ncurves; g++) {
        const pfi_curve *c = curves[g];
        double pmax = 0;
        for (size_t i = 0; i < c->n; i++)
            if (c->pts[i].power_w > pmax) pmax = c->pts[i].power_w;
        double per_gpu = pmax / (gpus ? gpus[g] : 1);
        double mp = 0, mt = 0;
        size_t m = 0;
        for (size_t i = 0; i < c->n; i++)
            if (c->pts[i].cap_w >= bind_ratio * per_gpu) {
                mp += c->pts[i].power_w;
                mt += c->pts[i].tokens_per_s;
                m++;
            }
        if (m < 2) continue;
        mp /= (double)m;
        mt /= (double)m;
        for (size_t i = 0; i < c->n; i++)
            if (c->pts[i].cap_w >= bind_ratio * per_gpu) {
                double dp = c->pts[i].power_w / mp - 1, dt = c->pts[i].tokens_per_s / mt - 1;
                ssp += dp * dp;
                sst += dt * dt;
            }
        dof += m - 1;
        out->n_points += m;
        out->n_groups++;
    }
    out->rel_sd_power = dof ? sqrt(ssp / (double)dof) : NAN;
    out->rel_sd_tokens = dof ? sqrt(sst / (double)dof) : NAN;
}
