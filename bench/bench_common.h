/* bench_common.h — timing and memory helpers shared by the benchmarks. */
#ifndef PFI_BENCH_COMMON_H
#define PFI_BENCH_COMMON_H

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "clock.h"

/* wall-clock seconds, monotonic: the runtime's one reading of it (clock.h) */
static inline double bench_now(void)
{
    return pfi_wall_monotonic();
}

static inline double bench_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* peak resident set size of this process, MiB */
static inline double bench_peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* minor page faults of this process so far (fresh memory touched) */
static inline long bench_minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

#define BENCH_RESULT(name, value, unit, target)                                                    \
    printf("bench %-44s %12.4f %-6s (target %s)\n", name, (double)(value), unit, target)

#endif
