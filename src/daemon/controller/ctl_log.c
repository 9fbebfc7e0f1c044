/* ctl_log.c — the controller's log lines: to its daemon log (daemon_util.h:
 * a terminal, a file, the journal or syslog; a line's priority is its first
 * word, "error:", "warning:", else info), or to standard error where there
 * is none (the unit tests). Either way a message is one line, its control
 * characters escaped (pfi_log_escape): strings from a VTN cannot forge
 * lines. */
#include <stdarg.h>
#include <stdio.h>

#include "ctl.h"

void ctl_log(ctl *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c && c->io.log) pfi_daemon_vlog(c->io.log, fmt, ap);
    else {
        char msg[2048], esc[4 * sizeof msg];
        vsnprintf(msg, sizeof msg, fmt, ap);
        pfi_log_escape(msg, esc, sizeof esc);
        fprintf(stderr, "%s\n", esc);
    }
    va_end(ap);
}
