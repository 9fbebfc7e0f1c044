/* daemon_util.h — small pieces both daemons need the same way: the log
 * line format ("2026-12-02T18:00:00.123Z pfi-agent: message", UTC,
 * flushed), reopening the log file on SIGHUP, and their signals. (HTTP
 * bodies are built in a pfi_buf, buf.h.) */
#ifndef PFI_DAEMON_UTIL_H
#define PFI_DAEMON_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One log line from `who` to f (stderr when NULL). */
void pfi_daemon_vlog(FILE *f, const char *who, const char *fmt, va_list ap);

/* Reopen the log file f at path (SIGHUP, after logrotate renamed it): the
 * FILE stays the same, so threads logging meanwhile need no lock. On
 * failure f is unchanged and err says why (one line). */
pfi_status pfi_daemon_log_reopen(FILE *f, const char *path, pfi_error *err);

/* The daemons' signals: SIGTERM, SIGINT and SIGQUIT call stop (stop and
 * restore), SIGHUP calls hup (reopen the log), SIGPIPE is ignored. The
 * handlers must only set a flag. */
void pfi_daemon_signals(void (*stop)(int), void (*hup)(int));

#ifdef __cplusplus
}
#endif
#endif
