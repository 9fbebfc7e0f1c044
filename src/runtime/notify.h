/* notify.h — telling systemd how a daemon is doing (sd_notify(3), for
 * units of Type=notify with WatchdogSec=): READY=1 once the daemon does
 * its work (the agent after its first sample, the controller after its
 * first control period), a STATUS= line, WATCHDOG=1 from the main loop
 * and STOPPING=1 at shutdown. Outside systemd (no $NOTIFY_SOCKET) every
 * call does nothing. The calls never fail the daemon: a message that
 * cannot be sent is dropped. */
#ifndef PFI_NOTIFY_H
#define PFI_NOTIFY_H

#ifdef __cplusplus
extern "C" {
#endif

/* READY=1 and STATUS=the formatted line */
void pfi_notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STATUS=the formatted line (sent only when it differs from the last one) */
void pfi_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STOPPING=1 and STATUS=the formatted line */
void pfi_notify_stopping(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The watchdog: the loop calls pfi_watchdog_tick at least every
 * interval/4 (the agent's loop runs every 50 ms, the controller's every
 * 10 ms between periods); it sends WATCHDOG=1 once interval/4 has passed
 * since the last one, so a ping is never later than half the interval
 * (sd_watchdog_enabled(3)'s advice). Off unless systemd set
 * $WATCHDOG_USEC (and $WATCHDOG_PID names this process). */
typedef struct pfi_watchdog {
    double interval_s; /* 0: off */
    double last_s;     /* wall-clock monotonic seconds of the last ping */
} pfi_watchdog;
void pfi_watchdog_init(pfi_watchdog *w);
void pfi_watchdog_tick(pfi_watchdog *w);

#ifdef __cplusplus
}
#endif
#endif
