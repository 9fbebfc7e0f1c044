/* curve.h — a sweep group's power–throughput curve as a first-class object.
 *
 * A curve is one job configuration measured at several per-GPU power caps:
 * points sorted by cap ascending, the last one (largest cap) being the
 * uncapped reference (T_max, P_max). power_w is the job's aggregate GPU power
 * (summed over its GPUs); tokens_per_s is the whole job's throughput (or any
 * other throughput unit: Zeus uses epochs/s).
 *
 * The functions here are pure: normalized forms, isotonic (pool-adjacent-
 * violators) cleanup, piecewise-linear interpolation of throughput at a power
 * and of power at a cap, the inverse map power target -> cap, and the upper
 * concave envelope used by the allocator. */
#ifndef PFI_CURVE_H
#define PFI_CURVE_H

#include <stddef.h>

#include "pfi/api.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_point {
    double cap_w;            /* per-GPU power cap of the run */
    double power_w;          /* aggregate GPU power of the job */
    double tokens_per_s;     /* job throughput */
    double power_w_sem;      /* standard error of power_w; NaN if unknown */
    double tokens_per_s_sem; /* standard error of tokens_per_s; NaN if unknown */
    int repeats;             /* runs averaged into this point (>= 1) */
} pfi_point;

typedef struct pfi_curve {
    size_t n;
    pfi_point *pts; /* sorted by cap_w ascending, caps distinct */
} pfi_curve;

/* Copy n points, sort by cap. Caps must be distinct, finite, > 0. */
PFI_API pfi_status pfi_curve_init(pfi_curve *c, const pfi_point *pts, size_t n, pfi_error *err);
PFI_API void pfi_curve_dispose(pfi_curve *c);
PFI_API pfi_status pfi_curve_copy(pfi_curve *dst, const pfi_curve *src, pfi_error *err);

/* The uncapped reference point (largest cap). c->n must be >= 1. */
PFI_API const pfi_point *pfi_curve_uncapped(const pfi_curve *c);

/* Normalized forms: p_frac[i] = P_i/P_max, t_frac[i] = T_i/T_max (either may be NULL). */
PFI_API void pfi_curve_normalized(const pfi_curve *c, double *p_frac, double *t_frac);

/* Pool-adjacent-violators: replace y by its weighted least-squares
 * non-decreasing fit. w may be NULL (equal weights). Returns 1 if y changed. */
PFI_API int pfi_isotonic_increasing(double *y, const double *w, size_t n);

/* Make tokens_per_s and power_w non-decreasing in cap (weights = repeats).
 * Returns bit 1 if throughput changed, bit 2 if power changed. */
PFI_API int pfi_curve_isotonic(pfi_curve *c);

/* 1 if power_w and tokens_per_s are both non-decreasing in cap. */
PFI_API int pfi_curve_is_monotone(const pfi_curve *c);

/* Interpolated aggregate power at a cap, within [cap_min, cap_max]. */
PFI_API pfi_status pfi_curve_power_at_cap(const pfi_curve *c, double cap_w, double *power_w,
                                          pfi_error *err);

/* Interpolated throughput at an aggregate power within the measured power
 * range (points taken in power order; the curve must be monotone, e.g. after
 * pfi_curve_isotonic). Outside the range: PFI_ERANGE (no extrapolation). */
PFI_API pfi_status pfi_curve_tokens_at_power(const pfi_curve *c, double power_w,
                                             double *tokens_per_s, pfi_error *err);

/* Inverse map: the largest integer cap in [ceil(cap_min), floor(cap_max)]
 * whose interpolated power does not exceed target_w. */
enum {
    PFI_INV_EXACT = 0,
    PFI_INV_BELOW_RANGE = 1, /* target below the power at the lowest cap: lowest cap returned */
    PFI_INV_FLAT = 2         /* the cap lies where power does not change with the cap:
                                several caps give this power, the inverse is not unique */
};
typedef struct pfi_inverse {
    double cap_w;   /* integer watts */
    double power_w; /* interpolated power at cap_w */
    double slack_w; /* target_w - power_w (>= 0 unless BELOW_RANGE) */
    int flags;
} pfi_inverse;
PFI_API pfi_status pfi_curve_cap_for_power(const pfi_curve *c, double target_w, pfi_inverse *out,
                                           pfi_error *err);

/* Upper concave envelope of points (x[i], y[i]) with x strictly increasing:
 * writes the indices of the hull vertices (first and last always included)
 * to idx and returns their count. */
PFI_API size_t pfi_concave_envelope(const double *x, const double *y, size_t n, size_t *idx);

/* Keep only the listed caps (each must be present, within 1e-9 W).
 * PFI_ENOTFOUND names the first missing cap. */
PFI_API pfi_status pfi_curve_subgrid(const pfi_curve *c, const double *caps_w, size_t ncaps,
                                     pfi_curve *out, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
