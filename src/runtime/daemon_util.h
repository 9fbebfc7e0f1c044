/* daemon_util.h — what both daemons need the same way: their start-up, their log,
 * reopening the log file on SIGHUP, and their signals. (HTTP bodies are
 * built in a pfi_buf, buf.h.)
 *
 * The log. A message's priority is read from its first word, the daemons'
 * existing convention: "error: ..." is LOG_ERR (3), "warning: ..." is
 * LOG_WARNING (4), "debug:" LOG_DEBUG (7), anything else LOG_INFO (6) (pfi_daemon_log_level; no
 * caller passes a level, so a new message needs nothing but its prefix).
 * Where a line goes:
 *   - --syslog: syslog(3), facility LOG_DAEMON, the message's priority;
 *   - --log FILE: "2026-12-02T18:00:00.123Z pfi-agent: message" (UTC);
 *   - stderr when it is systemd's journal (JOURNAL_STREAM names stderr's
 *     device and inode, systemd.exec(5)): "<3>message", the sd-daemon(3)
 *     priority prefix and no timestamp or name (the journal has both);
 *   - stderr otherwise: as the file.
 * While the daemon starts (until pfi_daemon_log_started), an error logged
 * to a file or syslog is also written to stderr ("pfi-agent: error: ...",
 * or "<3>error: ..." to the journal), so that a daemon that fails to start
 * always says why where it was started. Lines are written whole (one
 * write per line), flushed.
 *
 * Every message is one line: its control characters (bytes 0x00..0x1f and
 * 0x7f) are written as escapes (\n, \r, \t, else \xHH) before it goes
 * anywhere, so that text from the network in a message (a VTN's answer, an
 * OpenADR event's field, a peer's error) can neither start a line of its
 * own ("ALARM: ...") nor give the journal a priority ("<0>"). Other bytes,
 * UTF-8 included, are kept. */
#ifndef PFI_DAEMON_UTIL_H
#define PFI_DAEMON_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* priorities: syslog(3)'s numbers, sd-daemon(3)'s "<N>" prefixes */
enum { PFI_LOG_ERR = 3, PFI_LOG_WARNING = 4, PFI_LOG_INFO = 6, PFI_LOG_DEBUG = 7 };

typedef struct pfi_daemon_log {
    const char *who;    /* "pfi-agent" */
    const char *path;   /* the log file (NULL: none) */
    FILE *file;         /* open on path */
    int use_syslog;     /* --syslog */
    int stderr_journal; /* stderr is systemd's journal stream */
    int starting;       /* errors also to stderr (read and written atomically) */
    int max_level;      /* --log-level: messages above it are dropped (default info) */
} pfi_daemon_log;

/* Logging to stderr as `who` (the journal's format when JOURNAL_STREAM
 * names stderr), in start-up mode. */
void pfi_daemon_log_init(pfi_daemon_log *l, const char *who);
/* Then to the file path (when not NULL) or to syslog (use_syslog); not
 * both (the caller refuses that as a usage error). On failure the log
 * stays on stderr and err says why (one line naming the file). */
pfi_status pfi_daemon_log_open(pfi_daemon_log *l, const char *path, int use_syslog, pfi_error *err);
/* Start-up is over: errors now go only where the log goes. */
void pfi_daemon_log_started(pfi_daemon_log *l);
void pfi_daemon_log_close(pfi_daemon_log *l);

/* msg with its control characters escaped (see above) into out[n], cut at
 * a whole escape when it does not fit; the length written. An escape takes
 * at most 4 bytes: 4 * strlen(msg) + 1 always fits. */
size_t pfi_log_escape(const char *msg, char *out, size_t n);

/* One message (see above). */
void pfi_daemon_vlog(pfi_daemon_log *l, const char *fmt, va_list ap);
void pfi_daemon_logf(pfi_daemon_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A message's priority from its first word (see above). */
int pfi_daemon_log_level(const char *msg);
/* --log-level's names: "error", "warning", "info", "debug" -> the priority,
 * -1 for any other */
int pfi_daemon_log_level_parse(const char *name);

/* 1 if value (JOURNAL_STREAM, "DEV:INODE" in decimal) names the file open
 * on fd (its st_dev and st_ino), else 0 (NULL, malformed, another file). */
int pfi_journal_stream_is(const char *value, int fd);

/* Reopen the log file (SIGHUP, after logrotate renamed it): the FILE stays
 * the same, so threads logging meanwhile need no lock. On failure the log
 * is unchanged and err says why (one line); without a log file it is an
 * error too (PFI_ESTATE). */
pfi_status pfi_daemon_log_reopen(pfi_daemon_log *l, pfi_error *err);

/* The daemons' signals: SIGTERM, SIGINT and SIGQUIT call stop (stop and
 * restore), SIGHUP calls hup (reopen the log), SIGPIPE is ignored. The
 * handlers must only set a flag. */
void pfi_daemon_signals(void (*stop)(int), void (*hup)(int));

/* What a daemon's start-up takes from its options (pfi_daemon_start). */
typedef struct pfi_daemon_setup {
    void (*stop)(int), (*hup)(int); /* the signal handlers (pfi_daemon_signals), installed
                                       first; NULL: the caller installs them later */
    double time_scale, epoch;       /* the pfi clock's (pfi_clock_set; NaN: from the
                                       environment) */
    const char *log_level;          /* --log-level's name; NULL: info */
    const char *log_path;           /* the log file; NULL: none */
    int use_syslog;                 /* syslog instead (not with log_path: the caller's usage
                                       error) */
    const char *log_what;           /* the log file's setting as messages name it: "--log",
                                       or "log" for a configuration file's key */
    int raise_nofile;               /* raise the open-file limit to its hard limit (a
                                       connection per peer) */
} pfi_daemon_setup;

/* The start-up both daemons share, on a log pfi_daemon_log_init has set up
 * (so that what the daemon does before can be logged): the signal
 * handlers, libmicrohttpd's messages into the log as warnings
 * (pfi_httpd_log_to; one log per process), the pfi clock, the log level,
 * then the log file or syslog, and the open-file limit. 0, or the exit
 * status with the error logged: 2 for a bad clock setting or log level
 * (usage), 1 when the log file cannot be opened. */
int pfi_daemon_start(pfi_daemon_log *l, const pfi_daemon_setup *s);

/* SIGHUP's work (pfi_daemon_log_reopen, after logrotate renamed the log
 * file), each outcome logged; log_what as in pfi_daemon_setup. */
void pfi_daemon_log_hup(pfi_daemon_log *l, const char *log_what);

#ifdef __cplusplus
}
#endif
#endif
