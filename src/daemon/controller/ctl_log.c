/* ctl_log.c — the controller's log lines: to its daemon log (daemon_util.h:
 * a terminal, a file, the journal or syslog; a line's priority is its first
 * word, "error:", "warning:", else info), or to standard error where there
 * is none (the unit tests). */
#include <stdarg.h>
#include <stdio.h>

#include "ctl.h"

void ctl_log(ctl *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c && c->io.log) pfi_daemon_vlog(c->io.log, fmt, ap);
    else {
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}
