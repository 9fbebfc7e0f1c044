/* daemon_util.c — the daemons' log line, log reopening and signals
 * (daemon_util.h). */
#include "daemon_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

pfi_status pfi_daemon_log_reopen(FILE *f, const char *path, pfi_error *err)
{
    if (!f) return pfi_errorf(err, PFI_ESTATE, "%s: no log file open", path);
    int fd =
        open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666); /* as fopen "a" */
    if (fd < 0) return pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(errno));
    fflush(f);
    /* the same FILE now writes to the new file: dup2 swaps atomically */
    int r = dup2(fd, fileno(f));
    int e = errno;
    close(fd);
    if (r < 0) return pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(e));
    return PFI_OK;
}

void pfi_daemon_signals(void (*stop)(int), void (*hup)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    sa.sa_handler = hup;
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}
