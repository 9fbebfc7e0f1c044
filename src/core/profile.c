/* profile.c — the rule of a job's profile at job start (see pfi/profile.h):
 * the next power to visit, and why a profile stops. */
#include "pfi/profile.h"

#include <math.h>

void pfi_profile_opts_default(pfi_profile_opts *o)
{
    o->points = 12;
    o->steps = 20;
    o->settle_s = 10;
    o->step_s = 1;
    o->low_frac = 0.5;
    o->cost_max = 0.01;
    o->lipschitz = 1.25;
    o->z = 2;
    o->margin = 0.04;
    o->deep_points = 4;
}

const char *pfi_profile_stop_name(pfi_profile_stop s)
{
    switch (s) {
    case PFI_PROFILE_GO: return "go";
    case PFI_PROFILE_DONE: return "done";
    case PFI_PROFILE_TIER_FLOOR: return "tier floor";
    case PFI_PROFILE_COST: return "cost";
    case PFI_PROFILE_NOT_ALLOWED: return "not allowed";
    }
    return "?";
}

double pfi_profile_point_s(const pfi_profile_opts *o)
{
    return o->settle_s + o->steps * o->step_s;
}

double pfi_profile_budget_tokens(const pfi_alloc_job *j, const pfi_profile_opts *o)
{
    return o->cost_max * j->tokens_per_s_max * 3600;
}

/* the pessimistic slope (tokens/s per W) below the last point: before a
 * chord is measured the Lipschitz bound, then the last chord's plus z
 * standard errors, at least 2 x the chord (a concave curve steepens) */
static double slope_below(const pfi_alloc_job *j, const pfi_profile_opts *o,
                          const pfi_online_point *done, size_t ndone)
{
    double bound = o->lipschitz * j->tokens_per_s_max / j->power_max_w;
    pfi_online_point top = {j->power_max_w, 0, j->tokens_per_s_max, 0};
    if (ndone == 0) return bound;
    const pfi_online_point *a = ndone >= 2 ? &done[ndone - 2] : &top, *b = &done[ndone - 1];
    double dp = a->power_w - b->power_w;
    if (!(dp > 0)) return bound;
    double sl = (a->tokens_per_s - b->tokens_per_s) / dp;
    double se = sqrt(a->tokens_se * a->tokens_se + b->tokens_se * b->tokens_se) / dp;
    double s = sl + o->z * se;
    return s > 2 * sl ? s : 2 * sl;
}

pfi_profile_stop pfi_profile_next(const pfi_alloc_job *j, const pfi_profile_opts *o,
                                  const pfi_online_point *done, size_t ndone, double spent_token_s,
                                  double *next_w)
{
    double T = j->tokens_per_s_max, Pmax = j->power_max_w;
    if (j->sla_tier == 0 || !(T > 0) || !(Pmax > 0) || o->points < 1)
        return PFI_PROFILE_NOT_ALLOWED;
    double lo = fmax(j->power_min_w, o->low_frac * Pmax);
    if (!(lo < Pmax)) return PFI_PROFILE_NOT_ALLOWED;
    double p = Pmax - (double)(ndone + 1) * (Pmax - lo) / o->points;
    if (ndone >= (size_t)o->points) { /* the deep points: P_lo down to the lowest reachable */
        size_t deep = ndone + 1 - (size_t)o->points;
        if (o->deep_points < 1 || deep > (size_t)o->deep_points || !(j->power_min_w < lo * 0.99))
            return PFI_PROFILE_DONE;
        p = lo - (double)deep * (lo - j->power_min_w) / o->deep_points;
    }
    const pfi_online_point *last = ndone ? &done[ndone - 1] : NULL;
    double p_last = last ? last->power_w : Pmax;
    double t_last = last ? last->tokens_per_s - o->z * last->tokens_se : T;
    double t_pred = t_last - slope_below(j, o, done, ndone) * (p_last - p);
    double L = pfi_sla_loss(j->sla_tier), tier_t = (1 - L + o->margin) * T;
    if (j->sla_tier > 0 && L < 1 && t_pred < tier_t) {
        /* the schedule's point is below the tier: instead, where the
         * pessimistic prediction meets it, if that is a step (low_frac's
         * spacing / 4) below the last point; the floor is then measured
         * close to where it is */
        double sl = slope_below(j, o, done, ndone), step = (Pmax - lo) / o->points / 4;
        double p_tier = sl > 0 ? p_last - (t_last - tier_t) / sl : p_last;
        if (!(p_tier <= p_last - step) || ndone + 1 >= (size_t)o->points + 4)
            return PFI_PROFILE_TIER_FLOOR;
        p = p_tier;
        t_pred = tier_t;
    }
    double loss = T - (t_pred > 0 ? t_pred : 0);
    if (spent_token_s + loss * pfi_profile_point_s(o) > pfi_profile_budget_tokens(j, o))
        return PFI_PROFILE_COST;
    *next_w = p;
    return PFI_PROFILE_GO;
}
