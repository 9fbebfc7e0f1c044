/* clock.h — the one clock of pfi's runtime (GPU simulator, pfi-agent,
 * pfi sweep, pfi-controller). Time is Unix seconds, optionally sped up:
 *
 *   now = epoch + (wall - epoch) x scale
 *
 * so processes started with the same scale and epoch agree on the time, and
 * a sweep or a grid event of many minutes runs in seconds in a test while
 * leases, control periods and telemetry timestamps stay consistent. Scale
 * and epoch come from --time-scale / --epoch, else $PFI_TIME_SCALE /
 * $PFI_EPOCH, else 1 and 2026-01-01T00:00:00Z. At scale 1 the clock is the
 * wall clock. Latency figures are always wall-clock. */
#ifndef PFI_CLOCK_H
#define PFI_CLOCK_H

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_CLOCK_DEFAULT_EPOCH 1767225600.0 /* 2026-01-01T00:00:00Z */

/* Set the clock (scale > 0, at most 1e6). NaN arguments: from the environment. */
pfi_status pfi_clock_set(double scale, double epoch, pfi_error *err);
/* From $PFI_TIME_SCALE and $PFI_EPOCH (errors name the variable). */
pfi_status pfi_clock_from_env(pfi_error *err);
double pfi_clock_scale(void);
double pfi_clock_epoch(void);
/* Current time on the pfi clock (Unix seconds). */
double pfi_clock_now(void);
/* The pfi clock on a monotonic base: differences are pfi-clock durations
 * (wall durations x scale) that no step of the wall clock changes; the
 * origin is arbitrary (not a Unix time). For deadlines such as leases. */
double pfi_clock_mono(void);
/* Wall-clock seconds since an arbitrary start (monotonic; for latencies). */
double pfi_wall_monotonic(void);
/* Sleep for clock seconds (wall seconds / scale); returns early on a signal. */
void pfi_clock_sleep(double clock_s);

#ifdef __cplusplus
}
#endif
#endif
