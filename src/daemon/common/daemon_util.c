/* daemon_util.c — the daemons' text buffer and log line (daemon_util.h). */
#include "pfi/daemon_util.h"

#include <stdlib.h>
#include <time.h>

void pfi_textbuf_printf(pfi_textbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t nc = b->cap ? 2 * b->cap : 16384;
        while (nc < b->n + (size_t)k + 1) nc *= 2;
        char *q = realloc(b->p, nc);
        if (!q) return;
        b->p = q;
        b->cap = nc;
    }
}

void pfi_daemon_vlog(FILE *f, const char *who, const char *fmt, va_list ap)
{
    if (!f) f = stderr;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(f, "%s.%03ldZ %s: ", when, ts.tv_nsec / 1000000, who);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
}
