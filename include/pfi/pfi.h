/* pfi.h — the Power Flexibility Index of a curve: the paper's Eq. 1, its two
 * Appendix A alternatives, a Monte Carlo confidence interval, and pfi's
 * robust estimate (beyond the paper), kept clearly apart from Eq. 1.
 *
 * Eq. 1:  PFI = mean over capped runs i with T_i < T_max of
 *               (1 - P_i/P_max) / (1 - T_i/T_max)
 * A capped run with T_i >= T_max is excluded (Eq. 1 excludes T_i = T_max,
 * and a capped run measured faster than the uncapped one is noise); the
 * number excluded is reported. */
#ifndef PFI_PFI_H
#define PFI_PFI_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/api.h"
#include "pfi/curve.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Eq. 1 ------------------------------------------------------------ */

typedef struct pfi_eq1_result {
    double pfi;                  /* NaN if no capped run qualifies */
    size_t n_used;               /* capped runs in the mean */
    size_t n_excluded;           /* capped runs with T_i >= T_max */
    double ratio_min, ratio_max; /* range of the per-cap ratios used */
} pfi_eq1_result;

/* Per-cap ratio (1 - P_i/P_max)/(1 - T_i/T_max); returns 0 and sets *ratio
 * when the run counts, 1 when it is excluded (T_i >= T_max). */
PFI_API int pfi_point_ratio(const pfi_point *p, const pfi_point *uncapped, double *ratio);

PFI_API void pfi_eq1(const pfi_curve *c, pfi_eq1_result *r);

/* ---- Appendix A alternatives --------------------------------------------- */

/* Area between the normalized curve and the diagonal: points sorted by power,
 * (0,0) prepended, trapezoid rule, minus 1/2. */
PFI_API double pfi_area(const pfi_curve *c);

/* Constant elasticity: least squares log T = a log P + b over all points. */
typedef struct pfi_elasticity_result {
    double a, b, r2;
    double one_minus_a; /* the paper's Appendix A PFI */
    double inv_a;       /* on Eq. 1's scale: dlogP/dlogT */
} pfi_elasticity_result;
PFI_API pfi_status pfi_elasticity(const pfi_curve *c, pfi_elasticity_result *r, pfi_error *err);

/* ---- noise model ------------------------------------------------------------ */

/* How a point's standard errors are obtained: its SEM columns when present,
 * else rel_default * value; never below rel_floor * value. */
typedef struct pfi_noise_opts {
    double rel_default_power;
    double rel_default_tokens;
    double rel_floor;
} pfi_noise_opts;

/* The paper's median within-run SEMs: 0.04% power, 0.05% throughput. */
#define PFI_CI_DEFAULT_REL_SEM_POWER 0.0004
#define PFI_CI_DEFAULT_REL_SEM_TOKENS 0.0005
/* Between-run noise of the Zeus traces, estimated on A40 + V100 only from runs
 * whose cap does not bind (see docs/robust.md and pfi_estimate_noise). */
#define PFI_ROBUST_DEFAULT_REL_SEM_POWER 0.023
#define PFI_ROBUST_DEFAULT_REL_SEM_TOKENS 0.036
#define PFI_ROBUST_DEFAULT_K 2.0

PFI_API void pfi_noise_default_ci(pfi_noise_opts *o);
PFI_API void pfi_noise_default_robust(pfi_noise_opts *o);
PFI_API double pfi_point_sem_power(const pfi_point *p, const pfi_noise_opts *o);
PFI_API double pfi_point_sem_tokens(const pfi_point *p, const pfi_noise_opts *o);

/* ---- Monte Carlo confidence interval of Eq. 1 ------------------------------ */

typedef struct pfi_ci_ctx pfi_ci_ctx; /* reusable rng + buffers */

typedef struct pfi_ci_opts {
    size_t resamples; /* default 10000 */
    uint64_t seed;    /* combined with a per-group key for reproducibility */
    double level;     /* default 0.95 */
    pfi_noise_opts noise;
} pfi_ci_opts;

PFI_API void pfi_ci_opts_default(pfi_ci_opts *o);
PFI_API pfi_ci_ctx *pfi_ci_ctx_new(size_t max_resamples);
PFI_API void pfi_ci_ctx_free(pfi_ci_ctx *ctx);

/* Whether the interval may be read (docs/robust.md, "The CI of Eq. 1"). */
typedef enum pfi_ci_verdict {
    PFI_CI_NONE = 0, /* not computed: fewer than 2 points, or Eq. 1 undefined */
    PFI_CI_OK,       /* lo <= Eq. 1's estimate <= hi */
    PFI_CI_UNSTABLE  /* lo, hi NaN; reason says why */
} pfi_ci_verdict;

/* "" (none), "ok", "unstable" */
PFI_API const char *pfi_ci_verdict_name(pfi_ci_verdict v);

typedef struct pfi_ci_result {
    double lo, hi;
    size_t n_valid; /* resamples with a finite Eq. 1 */
    size_t n_flip;  /* resamples in which a used cap's slowdown vanished */
    pfi_ci_verdict verdict;
    char reason[160]; /* why the interval is unstable (empty otherwise) */
} pfi_ci_result;

/* The conditional interval: the caps Eq. 1 uses are fixed to those of the
 * point estimate (a cap excluded for T_i >= T_max never re-enters under
 * noise). The interval is reported only when it is bounded and contains the
 * estimate: otherwise lo = hi = NaN with verdict PFI_CI_UNSTABLE.
 * key: a per-group value (e.g. a hash of its name) so a group's interval
 * does not depend on which other groups were processed before it. */
PFI_API pfi_status pfi_eq1_ci(pfi_ci_ctx *ctx, const pfi_curve *c, const pfi_ci_opts *o,
                              uint64_t key, pfi_ci_result *r, pfi_error *err);

/* ---- robust PFI (beyond the paper) ------------------------------------------- */

typedef enum pfi_verdict {
    PFI_VERDICT_OK = 0,
    PFI_VERDICT_NOT_POWER_BOUND,   /* no capped point sheds power beyond noise */
    PFI_VERDICT_TOO_FEW_POINTS,    /* no capped point at all */
    PFI_VERDICT_NOISY,             /* slope not distinguishable from zero */
    PFI_VERDICT_NON_POSITIVE_SLOPE /* throughput does not fall as power falls */
} pfi_verdict;

PFI_API const char *pfi_verdict_name(pfi_verdict v);

typedef struct pfi_robust_opts {
    double k;             /* standard errors a change must exceed; default 2 */
    pfi_noise_opts noise; /* default: pfi_noise_default_robust */
} pfi_robust_opts;

PFI_API void pfi_robust_opts_default(pfi_robust_opts *o);

typedef struct pfi_robust_result {
    /* (a) noise-aware Eq. 1: mean ratio over points whose throughput loss and
     * power reduction both exceed k standard errors */
    double pfi_noise_aware; /* NaN if no point qualifies */
    size_t n_noise_kept;
    /* (b) least squares through the origin of fractional throughput loss on
     * fractional power reduction, over points whose power reduction exceeds
     * k standard errors; PFI = 1/slope */
    size_t n_fit;
    double slope, slope_se;
    double pfi_robust;                   /* finite for verdicts ok and noisy */
    double pfi_robust_lo, pfi_robust_hi; /* 1/(slope +- 2 se), hi may be +inf */
    pfi_verdict verdict;
} pfi_robust_result;

PFI_API void pfi_robust(const pfi_curve *c, const pfi_robust_opts *o, pfi_robust_result *r);

/* ---- between-run noise estimate ------------------------------------------------ */

/* Estimate relative between-run noise from runs whose cap does not bind
 * (cap >= bind_ratio x the group's largest measured power per GPU): their
 * spread around the group's non-binding mean is pure noise. Deviations are
 * corrected for the mean's own degree of freedom. */
typedef struct pfi_noise_estimate {
    double rel_sd_power, rel_sd_tokens;
    size_t n_points, n_groups;
} pfi_noise_estimate;
PFI_API void pfi_estimate_noise(const pfi_curve *const *curves, const int *gpus, size_t ncurves,
                                double bind_ratio, pfi_noise_estimate *out);

#ifdef __cplusplus
}
#endif
#endif
