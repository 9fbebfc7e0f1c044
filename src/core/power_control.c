/* power_control.c — the controller's control law (power_control.h). */
#include "power_control.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

#define RATIO0 0.97
#define MAX_INTEGRAL_FRAC 0.30

double pfi_pc_budget(double baseline_w, double target_w, double t, double start, double end,
                     double ramp_s, double ramp_down_s)
{
    if (t < start) return baseline_w;
    if (t < end) {
        if (ramp_s > 0 && t < start + ramp_s)
            return baseline_w + (target_w - baseline_w) * (t - start) / ramp_s;
        return target_w;
    }
    if (ramp_down_s > 0 && t < end + ramp_down_s)
        return target_w + (baseline_w - target_w) * (t - end) / ramp_down_s;
    return baseline_w;
}

static double ratio_of(const pfi_pc_job *j)
{
    return j->ratio > 0 ? j->ratio : RATIO0;
}

void pfi_pc_learn_ratio(pfi_pc_job *j)
{
    double lim = j->cap_w * j->gpus;
    if (!(lim > 0) || !(j->measured_w > 0)) return;
    double r = j->measured_w / lim;
    if (r < 0.85 || r > 1.1) return; /* not power-bound (a dip, or not bound at all), or a glitch */
    j->ratio = j->ratio > 0 ? 0.7 * j->ratio + 0.3 * r : r;
}

void pfi_pc_feedback(double *integral_w, double measured_total_w, double budget_w)
{
    double e = measured_total_w - budget_w;
    double I = *integral_w;
    if (e > 0) I += e;
    else I = fmax(0, I + 0.5 * e);
    *integral_w = fmin(I, MAX_INTEGRAL_FRAC * budget_w);
}

/* shed excess_w (> 0) from the targets by equal weight (P_max), none below
 * lo[i]; returns what could not be shed */
static double shed_equal(const pfi_alloc_job *aj, const double *lo, pfi_alloc_out *ja, size_t n,
                         double excess_w)
{
    for (size_t pass = 0; pass <= n && excess_w > 1e-9; pass++) {
        double w = 0, left = excess_w;
        for (size_t i = 0; i < n; i++)
            if (ja[i].target_w > lo[i] + 1e-12) w += aj[i].power_max_w;
        if (w <= 0) break;
        for (size_t i = 0; i < n; i++) {
            double room = ja[i].target_w - lo[i];
            if (room <= 1e-12) continue;
            double x = fmin(room, excess_w * aj[i].power_max_w / w);
            ja[i].target_w -= x;
            left -= x;
        }
        excess_w = left;
    }
    return excess_w;
}

pfi_status pfi_pc_allocate(const pfi_pc_job *jobs, size_t n, double budget_w, double fixed_w,
                           double integral_w, const pfi_alloc_opts *o, pfi_pc_out *out,
                           int *feasible, pfi_error *err)
{
    *feasible = 1;
    if (n == 0) return PFI_OK;
    pfi_alloc_job *aj = calloc(n, sizeof *aj);
    pfi_alloc_out *ja = calloc(n, sizeof *ja);
    if (!aj || !ja) {
        free(aj), free(ja);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    double floor_sum = 0;
    int normalized = 0, fixed_all = 1;
    for (size_t i = 0; i < n; i++) {
        const pfi_pc_job *j = &jobs[i];
        double r = ratio_of(j);
        double pmax = fmin(j->baseline_w, j->gpus * j->cap_max_w * r);
        if (!(pmax > 0)) pmax = j->gpus * j->cap_max_w * r;
        aj[i].gpus = j->gpus;
        aj[i].power_max_w = pmax;
        aj[i].power_min_w = fmin(pmax, j->gpus * j->cap_min_w * r);
        aj[i].tokens_per_s_max = j->baseline_tokens_per_s > 0 ? j->baseline_tokens_per_s : NAN;
        if (!(aj[i].tokens_per_s_max > 0)) normalized = 1;
        aj[i].pfi_pred = j->pfi_pred > 0 ? j->pfi_pred : 1.0;
        aj[i].pred_curve = j->pred_curve;
        aj[i].sla_tier = j->sla_tier;
        aj[i].cap_min_w = j->cap_min_w;
        aj[i].cap_max_w = j->cap_max_w;
        floor_sum += aj[i].power_min_w;
        fixed_all &= j->fixed_target_w > 0;
    }
    /* without every job's throughput, allocate on T/T_max */
    if (normalized)
        for (size_t i = 0; i < n; i++) aj[i].tokens_per_s_max = 1;
    pfi_alloc_opts oo = *o;
    oo.normalized = normalized || o->normalized;
    /* what a one-shot allocation runs for the strategy (the table's runs_as):
       safe-online runs outside (fixed targets); without them, where it starts:
       the reference, equal weight with the tier floors (e.g. a trigger's plan);
       closed-loop, curve-aware on the curve estimates it was handed */
    oo.strategy = pfi_strategy_runs_as(oo.strategy);
    double b = budget_w - fixed_w - integral_w;
    pfi_alloc_result res;
    pfi_status st = PFI_OK;
    if (b < floor_sum) {
        *feasible = 0;
        for (size_t i = 0; i < n; i++) ja[i].target_w = aj[i].power_min_w;
    } else if (fixed_all) {
        /* the excess off the SLA floors first, then (the budget is hard) off
           the lowest powers (which fit: b >= floor_sum), tier by tier */
        double sum = 0, *lo = malloc(2 * n * sizeof *lo), *lo_min = lo ? lo + n : NULL;
        if (!lo) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        for (size_t i = 0; lo && i < n; i++) {
            ja[i].target_w = fmax(jobs[i].fixed_target_w, aj[i].power_min_w);
            lo_min[i] = aj[i].power_min_w;
            lo[i] = fmin(ja[i].target_w, fmax(lo_min[i], jobs[i].fixed_floor_w));
            sum += ja[i].target_w;
        }
        double left = lo ? shed_equal(aj, lo, ja, n, sum - b) : 0;
        if (left > 1e-9) *feasible = 0; /* below an SLA floor: the tier rule, Flex 3 first */
        for (int tier = 3; tier >= 0 && left > 1e-9; tier--) {
            for (size_t i = 0; i < n; i++)
                if (jobs[i].sla_tier >= tier) lo[i] = lo_min[i];
            left = shed_equal(aj, lo, ja, n, left);
        }
        free(lo);
    } else {
        st = pfi_allocate(aj, n, b, &oo, ja, &res, err);
        if (!st && !res.feasible) *feasible = 0;
    }
    for (size_t i = 0; !st && i < n; i++) {
        const pfi_pc_job *j = &jobs[i];
        /* a job left at its uncapped power keeps the device's maximum cap */
        double pmax = fmin(j->baseline_w, j->gpus * j->cap_max_w * ratio_of(j));
        double c = ja[i].target_w >= pmax * (1 - 1e-9)
                       ? j->cap_max_w
                       : floor(ja[i].target_w / (j->gpus * ratio_of(j)));
        if (c < j->cap_min_w) c = ceil(j->cap_min_w);
        if (c > j->cap_max_w) c = floor(j->cap_max_w);
        out[i].target_w = ja[i].target_w;
        out[i].cap_w = c;
    }
    free(aj), free(ja);
    return st;
}
