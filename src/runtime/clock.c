/* clock.c — the runtime's (optionally sped-up) clock; see clock.h. */
#include "clock.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

static double g_scale = 1.0, g_epoch = PFI_CLOCK_DEFAULT_EPOCH;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static pfi_status env_num(const char *var, double lo, double hi, double *v, pfi_error *err)
{
    const char *s = getenv(var);
    if (!s || !*s) return PFI_OK;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || !isfinite(x) || x < lo || x > hi)
        return pfi_errorf(err, PFI_EINVAL, "$%s: '%s' is not a number in %g..%g", var, s, lo, hi);
    *v = x;
    return PFI_OK;
}

pfi_status pfi_clock_set(double scale, double epoch, pfi_error *err)
{
    double s = g_scale, e = g_epoch;
    pfi_status st;
    if (isnan(scale) && (st = env_num("PFI_TIME_SCALE", 1e-3, 1e6, &s, err))) return st;
    if (isnan(epoch) && (st = env_num("PFI_EPOCH", 0, 1e11, &e, err))) return st;
    if (!isnan(scale)) s = scale;
    if (!isnan(epoch)) e = epoch;
    if (!(s >= 1e-3 && s <= 1e6))
        return pfi_errorf(err, PFI_ERANGE, "time scale %g outside 0.001..1e6", s);
    if (!(e >= 0 && e <= 1e11))
        return pfi_errorf(err, PFI_ERANGE, "epoch %g is not a Unix time", e);
    g_scale = s;
    g_epoch = e;
    return PFI_OK;
}

pfi_status pfi_clock_from_env(pfi_error *err)
{
    return pfi_clock_set(NAN, NAN, err);
}
double pfi_clock_scale(void)
{
    return g_scale;
}
double pfi_clock_epoch(void)
{
    return g_epoch;
}

double pfi_clock_now(void)
{
    double w = wall_now();
    return g_scale == 1.0 ? w : g_epoch + (w - g_epoch) * g_scale;
}

double pfi_clock_mono(void)
{
    return pfi_wall_monotonic() * g_scale;
}

double pfi_wall_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pfi_clock_sleep(double clock_s)
{
    if (!(clock_s > 0)) return;
    double w = clock_s / g_scale;
    struct timespec ts = {(time_t)w, (long)((w - floor(w)) * 1e9)};
    nanosleep(&ts, NULL);
}
