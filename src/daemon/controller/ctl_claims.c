/* ctl_claims.c — what a job's step log claims, checked (docs/controller.md,
 * "Claims"; issue 41 (D): a job that claimed its throughput falls as
 * (p/P)^3 under any cap stayed uncapped while its honest twin was cut to
 * 336 W a GPU). Pure: part of the decision.
 *
 * A job's throughput under a cap comes from its own step log, which its
 * user writes. Two rules keep a claim from buying power:
 *   - elasticity at most 1: throughput cannot fall faster than power, so a
 *     capped sample's tokens/s is taken as at least T x p / P of its
 *     reference (the uncapped plateau T at P): ctl_claim_clamp, applied to
 *     every sample a profile or safe-online measures. The allocator's own
 *     physical prior (safe-online's Lipschitz bound, 1.25) is looser;
 *   - corroboration: under a cap the GPUs' SM clock falls too, and a
 *     training step cannot speed up less than its clock slows: a job whose
 *     claimed throughput ratio (tokens/s / its reference) is below 0.8 x
 *     its telemetry ratio (SM clock x SM activity, / the same at its
 *     reference) for 3 settled capped periods in a row (the cap within 2%
 *     of the period before: the step log's average lags a cap change) is
 *     not believed: its claims are set aside from then on (the job's life
 *     under this controller, noted once), and it is allocated as a job that
 *     reports no throughput — its reference share, equal weight over the
 *     baselines, i.e. the proportional cut (its baseline / the total).
 *     Where its GPUs report SM activity (DCGM profiling), clock x activity;
 *     where only the clock (NVML alone), the clock; where no clock (an
 *     older agent), nothing can be checked: the claim is only clamped.
 * A claim above what the telemetry suggests says that cutting the job
 * costs little: it can only cost its own job, so only the low side is
 * checked. */
#include <math.h>

#include "ctl.h"

#define CLAIM_FLOOR 0.8   /* a claimed ratio below 0.8 x the telemetry's */
#define CLAIM_PERIODS 3   /* settled capped periods in a row */
#define CLOCK_MAX_MHZ 1e4 /* a clock above this is not one */
#define CAP_SETTLED 0.02  /* a cap within 2% of the last period's: settled */

double ctl_job_tel_x(const ctl_job *j)
{
    if (!(j->sm_clock_mhz > 0) || !(j->sm_clock_mhz < CLOCK_MAX_MHZ)) return NAN;
    return j->sm_active > 0 && j->sm_active <= 1 ? j->sm_clock_mhz * j->sm_active : j->sm_clock_mhz;
}

double ctl_claim_clamp(double tokens_per_s, double power_w, double ref_tokens, double ref_w)
{
    if (!(ref_tokens > 0) || !(ref_w > 0) || !(power_w > 0) || !isfinite(tokens_per_s))
        return tokens_per_s;
    double least = ref_tokens * fmin(1, power_w / ref_w);
    return tokens_per_s < least ? least : tokens_per_s;
}

/* the reference a claim is checked against: the event's baseline while
   one runs, else the job's newest steady window (a profile's start) */
static int reference(const ctl_job *j, int active, double *tok, double *x)
{
    if (active && j->base_tokens > 0 && j->base_how.base_x > 0) {
        *tok = j->base_tokens, *x = j->base_how.base_x;
        return 1;
    }
    if (!j->win_n) return 0;
    size_t i = (j->win_head + CTL_WIN_MAX - 1) % CTL_WIN_MAX;
    *tok = j->win_tok[i], *x = j->win_x[i];
    return *tok > 0 && *x > 0;
}

void ctl_claims_period(ctl_state *s, int active, ctl_decision *d)
{
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        int capped = j->cap_w < j->cap_max_w - 0.5;
        int settled = capped && fabs(j->cap_w - j->prev_cap_w) <= CAP_SETTLED * j->cap_w;
        j->prev_cap_w = j->cap_w;
        double x = ctl_job_tel_x(j), ref_tok, ref_x;
        if (j->untrusted || !j->reachable || !settled || !isfinite(j->tokens_per_s) || !(x > 0) ||
            !reference(j, active, &ref_tok, &ref_x))
            continue;
        double claim = j->tokens_per_s / ref_tok, tel = x / ref_x;
        j->claim_misses = claim < CLAIM_FLOOR * tel ? j->claim_misses + 1 : 0;
        if (j->claim_misses < CLAIM_PERIODS) continue;
        j->untrusted = 1;
        ctl_note(&d->notes,
                 "warning: job %s: its step log claims %.0f%% of its reference throughput at a "
                 "cap where its SM clock%s is at %.0f%% (%d periods in a row): its claims are set "
                 "aside, and it is cut in proportion to its baseline from now on",
                 j->id, 100 * claim, j->sm_active > 0 ? " x activity" : "", 100 * tel,
                 CLAIM_PERIODS);
    }
}
