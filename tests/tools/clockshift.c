/* clockshift.c — an LD_PRELOAD shim for tests that steps the wall clock of
 * one process without root and without touching the machine's clock:
 * CLOCK_REALTIME (clock_gettime, gettimeofday, time) reads the number of
 * seconds in $PFI_CLOCKSHIFT_FILE ahead of the real time (negative: behind),
 * re-read at every call, so a test steps the clock by rewriting the file.
 * CLOCK_MONOTONIC and the other clocks are untouched. A missing or
 * unreadable file means no shift. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static double shift_s(void)
{
    const char *p = getenv("PFI_CLOCKSHIFT_FILE");
    if (!p) return 0;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char b[64];
    ssize_t k = read(fd, b, sizeof b - 1);
    close(fd);
    if (k <= 0) return 0;
    b[k] = '\0';
    return strtod(b, NULL);
}

static void add(struct timespec *ts, double s)
{
    long long ns = (long long)ts->tv_nsec + (long long)(s * 1e9);
    long long sec = ns / 1000000000LL;
    ns %= 1000000000LL;
    if (ns < 0) ns += 1000000000LL, sec--;
    ts->tv_sec += (time_t)sec;
    ts->tv_nsec = (long)ns;
}

API int clock_gettime(clockid_t clk, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int r = real(clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) add(ts, shift_s());
    return r;
}

API int gettimeofday(struct timeval *tv, void *tz)
{
    (void)tz;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts)) return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

API time_t time(time_t *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
