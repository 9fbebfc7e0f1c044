/* aggregate.c — run-level aggregation of training-phase samples: the
 * paper's mean of the top 10% (which drops evaluation and checkpoint dips),
 * or the mean, or the median; with the SEM of the samples used. And the
 * throughput a loop itself measures (tokens over wall time; "rate"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/protocol.h"
#include "util.h"

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

int pfi_agg_mode_parse(const char *s, pfi_agg_mode *m)
{
    if (strcmp(s, "top10") == 0) *m = PFI_AGG_TOP;
    else if (strcmp(s, "mean") == 0) *m = PFI_AGG_MEAN;
    else if (strcmp(s, "median") == 0) *m = PFI_AGG_MEDIAN;
    else if (strcmp(s, "rate") == 0) *m = PFI_AGG_RATE;
    else return -1;
    return 0;
}

size_t pfi_throughput_rate(const double *t_s, const double *tokens_per_s, const double *tokens,
                           const double *step, size_t n, double *value, double *sem)
{
    if (n < 2) return pfi_aggregate(tokens_per_s, n, PFI_AGG_MEAN, 0, value, sem);
    double sum = 0, s1 = 0, s2 = 0;
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        double dt = t_s[i] - t_s[i - 1], tok;
        if (tokens && isfinite(tokens[i])) {
            double steps =
                step && isfinite(step[i]) && isfinite(step[i - 1]) && step[i] > step[i - 1]
                    ? step[i] - step[i - 1]
                    : 1;
            tok = tokens[i] * steps;
        } else {
            tok = tokens_per_s[i] * dt;
        }
        sum += tok;
        if (dt > 0) {
            double r = tok / dt;
            s1 += r, s2 += r * r, k++;
        }
    }
    double span = t_s[n - 1] - t_s[0];
    if (!(span > 0)) return pfi_aggregate(tokens_per_s, n, PFI_AGG_MEAN, 0, value, sem);
    *value = sum / span;
    *sem = k >= 2 ? sqrt(fmax(0, (s2 - s1 * s1 / (double)k) / (double)(k - 1)) / (double)k)
                  : NAN; /* the per-interval rates' SD / sqrt(k) */
    return n;
}

size_t pfi_aggregate(const double *x, size_t n, pfi_agg_mode mode, double top_frac, double *value,
                     double *sem)
{
    *value = NAN;
    *sem = NAN;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i])) v[m++] = x[i];
    if (m == 0) {
        free(v);
        return 0;
    }
    size_t used = m;
    const double *u = v;
    double med = NAN;
    if (mode == PFI_AGG_TOP) {
        qsort(v, m, sizeof *v, cmp_desc);
        used = (size_t)ceil(top_frac * (double)m - 1e-9);
        if (used < 1) used = 1;
        if (used > m) used = m;
    } else if (mode == PFI_AGG_MEDIAN) {
        med = pfi_quantile_select(v, m, 0.5);
    }
    double mean = 0;
    for (size_t i = 0; i < used; i++) mean += u[i];
    mean /= (double)used;
    double ss = 0;
    for (size_t i = 0; i < used; i++) ss += (u[i] - mean) * (u[i] - mean);
    *value = mode == PFI_AGG_MEDIAN ? med : mean;
    if (used >= 2) {
        double sd = sqrt(ss / (double)(used - 1));
        /* the median's SEM: sqrt(pi/2) times the mean's, for near-normal samples */
        *sem = sd / sqrt((double)used) * (mode == PFI_AGG_MEDIAN ? 1.2533141373155 : 1.0);
    }
    free(v);
    return used;
}
