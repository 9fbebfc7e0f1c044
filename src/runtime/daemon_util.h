/* daemon_util.h — small pieces both daemons need the same way: a growable
 * text buffer for HTTP bodies (Prometheus text) and the log line format
 * ("2026-12-02T18:00:00.123Z pfi-agent: message", UTC, flushed) and
 * reopening the log file on SIGHUP. */
#ifndef PFI_DAEMON_UTIL_H
#define PFI_DAEMON_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_textbuf {
    char *p;        /* malloc'd, NUL-terminated; NULL until the first write */
    size_t n, cap;
} pfi_textbuf;

/* Append printf-formatted text; on out-of-memory the text is dropped. */
void pfi_textbuf_printf(pfi_textbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One log line from `who` to f (stderr when NULL). */
void pfi_daemon_vlog(FILE *f, const char *who, const char *fmt, va_list ap);

/* Reopen the log file f at path (SIGHUP, after logrotate renamed it): the
 * FILE stays the same, so threads logging meanwhile need no lock. 0 on
 * success; else -1 and a one-line reason in why (f unchanged). */
/* The daemons' signals: SIGTERM, SIGINT and SIGQUIT call stop (stop and
 * restore), SIGHUP calls hup (reopen the log), SIGPIPE is ignored. The
 * handlers must only set a flag. */
void pfi_daemon_signals(void (*stop)(int), void (*hup)(int));
int pfi_daemon_log_reopen(FILE *f, const char *path, char *why, size_t n);

#ifdef __cplusplus
}
#endif
#endif
