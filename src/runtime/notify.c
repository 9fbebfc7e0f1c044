/* notify.c — sd_notify(3) for the daemons (notify.h), through libsystemd. */
#include "notify.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "clock.h"

/* the status line: one line (a newline would start another assignment) */
static void format_status(char *status, size_t n, const char *fmt, va_list ap)
{
    vsnprintf(status, n, fmt, ap);
    for (char *p = status; *p; p++)
        if (*p == '\n') *p = ' ';
}

/* "HEAD\nSTATUS=the formatted line" */
static void send_status(const char *head, const char *fmt, va_list ap)
{
    char status[256];
    format_status(status, sizeof status, fmt, ap);
    sd_notifyf(0, "%s\nSTATUS=%s", head, status);
}

void pfi_notify_ready(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    send_status("READY=1", fmt, ap);
    va_end(ap);
}

void pfi_notify_stopping(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    send_status("STOPPING=1", fmt, ap);
    va_end(ap);
}

void pfi_notify_status(const char *fmt, ...)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char last[256];
    char now[256];
    va_list ap;
    va_start(ap, fmt);
    format_status(now, sizeof now, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&mu);
    int same = !strcmp(now, last);
    if (!same) snprintf(last, sizeof last, "%s", now);
    pthread_mutex_unlock(&mu);
    if (!same) sd_notifyf(0, "STATUS=%s", now);
}

void pfi_watchdog_init(pfi_watchdog *w)
{
    uint64_t usec = 0;
    w->interval_s = sd_watchdog_enabled(0, &usec) > 0 ? (double)usec / 1e6 : 0;
    w->last_s = -1e300;
}

void pfi_watchdog_tick(pfi_watchdog *w)
{
    if (!(w->interval_s > 0)) return;
    double now = pfi_wall_monotonic();
    if (now - w->last_s < w->interval_s / 4) return;
    w->last_s = now;
    sd_notify(0, "WATCHDOG=1");
}
