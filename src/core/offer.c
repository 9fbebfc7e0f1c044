/* offer.c — the offer: expected loss on a grid of cuts and its monotone
 * envelope at each cost (offer.h). */
#include "offer.h"

#include <math.h>
#include <string.h>

const double pfi_offer_costs[PFI_OFFER_NCOST] = {0.005, 0.01, 0.02, 0.05, 0.1};

static double base_tokens(const pfi_offer_job *j)
{
    return j->base_tokens > 0 && isfinite(j->base_tokens) ? j->base_tokens : 1;
}

/* the measured point just below and just above power_w, the baseline the top */
double pfi_offer_tokens(const pfi_offer_job *j, double power_w, int *measured)
{
    double bt = base_tokens(j);
    if (measured) *measured = 1;
    if (!(power_w < j->base_w)) return bt;
    double lo_p = -1, lo_t = 0, hi_p = j->base_w, hi_t = bt, low_p = j->base_w, low_t = bt;
    for (size_t k = 0; k < j->nknown; k++) {
        double p = j->known[k].power_w, t = j->known[k].tokens_per_s;
        if (!(p > 0 && p < j->base_w && isfinite(t) && t >= 0)) continue;
        t = fmin(t, bt); /* a point above the baseline's throughput buys nothing more */
        if (p <= power_w && p > lo_p) lo_p = p, lo_t = t;
        if (p > power_w && p < hi_p) hi_p = p, hi_t = t;
        if (p < low_p) low_p = p, low_t = t;
    }
    if (lo_p > 0) /* between two measured points (or the last and the baseline) */
        return hi_p > lo_p ? lo_t + (hi_t - lo_t) * (power_w - lo_p) / (hi_p - lo_p) : lo_t;
    if (measured) *measured = 0;
    if (low_p >= j->base_w && j->pred) { /* nothing measured: the predicted curve */
        double t;
        if (pfi_curve_tokens_at_power(j->pred, power_w, &t, NULL) == PFI_OK && isfinite(t))
            return fmin(fmax(t, 0), bt);
    }
    return power_w > 0 ? low_t * power_w / low_p : 0; /* elasticity 1 from the lowest known */
}

/* the job's lowest measured power below its baseline (+inf: none) */
static double lowest_measured_w(const pfi_offer_job *j)
{
    double low = INFINITY;
    for (size_t k = 0; k < j->nknown; k++) {
        double p = j->known[k].power_w;
        if (p > 0 && p < j->base_w && isfinite(j->known[k].tokens_per_s)) low = fmin(low, p);
    }
    return low;
}

/* a target below a measured job's lowest point (1 W of rounding allowed) */
static int below_measured(const pfi_offer_job *jobs, size_t n, const double *target_w)
{
    for (size_t q = 0; q < n; q++) {
        double low = lowest_measured_w(&jobs[q]);
        if (isfinite(low) && target_w[q] < low - 1) return 1;
    }
    return 0;
}

int pfi_offer_envelope(const double *loss, int kmax, double cost)
{
    int k = 0;
    while (k < kmax && loss[k + 1] <= cost + 1e-12) k++; /* rounding: 1 - 199/200 */
    return k;
}

pfi_status pfi_offer_compute(const pfi_offer_job *jobs, size_t n, pfi_offer_alloc_fn alloc,
                             void *ud, double *target_w, pfi_offer *out, pfi_error *err)
{
    memset(out, 0, sizeof *out);
    double full = 0;
    for (size_t q = 0; q < n; q++) {
        out->base_w += jobs[q].base_w;
        out->normalized |= !(jobs[q].base_tokens > 0 && isfinite(jobs[q].base_tokens));
    }
    /* w_j T_j: tokens/s, or the share of T_max weighted by GPUs */
    for (size_t q = 0; q < n; q++) full += out->normalized ? jobs[q].gpus : base_tokens(&jobs[q]);
    if (!(out->base_w > 0) || !(full > 0)) return PFI_OK; /* nothing to shed */
    int k = 1;
    out->floors_why = PFI_OFFER_FLOOR_GRID;
    for (; k <= PFI_OFFER_GRID_MAX; k++) {
        int rc = alloc(ud, k, target_w);
        if (rc < 0)
            return pfi_errorf(err, PFI_EINVAL, "offer: the allocation at a %d%% cut failed", k);
        if (rc > 0 || below_measured(jobs, n, target_w)) {
            out->floors_why = rc > 0 ? PFI_OFFER_FLOOR_TIER : PFI_OFFER_FLOOR_MEASURED;
            break;
        }
        double got = 0, shed = 0, shed_measured = 0;
        for (size_t q = 0; q < n; q++) {
            int m;
            double t = pfi_offer_tokens(&jobs[q], target_w[q], &m);
            got += out->normalized ? jobs[q].gpus * t / base_tokens(&jobs[q]) : t;
            double s = fmax(0, jobs[q].base_w - target_w[q]);
            shed += s;
            shed_measured += m ? s : 0;
        }
        out->loss[k] = fmax(0, 1 - got / full);
        out->measured[k] = shed > 0 ? shed_measured / shed : 1;
    }
    out->floors_pct = k - 1;
    out->measured[0] = 1;
    for (int c = 0; c < PFI_OFFER_NCOST; c++)
        out->cut_pct[c] = pfi_offer_envelope(out->loss, out->floors_pct, pfi_offer_costs[c]);
    return PFI_OK;
}
