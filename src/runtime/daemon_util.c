/* daemon_util.c — the daemons' log (stderr, the journal, a file or
 * syslog), log reopening, signals and the start-up they share
 * (daemon_util.h). */
#include "daemon_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "httpd.h"

/* a decimal number without sign or blanks, up to a stop character */
static int parse_u64(const char *s, char stop, unsigned long long *v, const char **end)
{
    if (!isdigit((unsigned char)*s)) return 0;
    errno = 0;
    char *e;
    *v = strtoull(s, &e, 10);
    if (errno || *e != stop) return 0;
    *end = e;
    return 1;
}

int pfi_journal_stream_is(const char *value, int fd)
{
    unsigned long long dev, ino;
    const char *p;
    if (!value || !parse_u64(value, ':', &dev, &p) || !parse_u64(p + 1, '\0', &ino, &p)) return 0;
    struct stat sb;
    if (fstat(fd, &sb) != 0) return 0;
    return (unsigned long long)sb.st_dev == dev && (unsigned long long)sb.st_ino == ino;
}

int pfi_daemon_log_level(const char *msg)
{
    if (!strncmp(msg, "error:", 6)) return PFI_LOG_ERR;
    if (!strncmp(msg, "warning:", 8)) return PFI_LOG_WARNING;
    if (!strncmp(msg, "debug:", 6)) return PFI_LOG_DEBUG;
    return PFI_LOG_INFO;
}

int pfi_daemon_log_level_parse(const char *name)
{
    static const struct {
        const char *name;
        int level;
    } lv[] = {{"error", PFI_LOG_ERR},
              {"warning", PFI_LOG_WARNING},
              {"info", PFI_LOG_INFO},
              {"debug", PFI_LOG_DEBUG}};
    for (size_t i = 0; name && i < sizeof lv / sizeof *lv; i++)
        if (!strcmp(name, lv[i].name)) return lv[i].level;
    return -1;
}

void pfi_daemon_log_init(pfi_daemon_log *l, const char *who)
{
    memset(l, 0, sizeof *l);
    l->who = who;
    l->max_level = PFI_LOG_INFO;
    l->stderr_journal = pfi_journal_stream_is(getenv("JOURNAL_STREAM"), STDERR_FILENO);
    l->starting = 1;
}

pfi_status pfi_daemon_log_open(pfi_daemon_log *l, const char *path, int use_syslog, pfi_error *err)
{
    if (path) {
        FILE *f = fopen(path, "ae"); /* close-on-exec */
        if (!f) return pfi_errorf(err, PFI_EIO, "%s: cannot open: %s", path, strerror(errno));
        l->file = f;
        l->path = path;
    } else if (use_syslog) {
        openlog(l->who, LOG_PID | LOG_NDELAY, LOG_DAEMON);
        l->use_syslog = 1;
    }
    return PFI_OK;
}

void pfi_daemon_log_started(pfi_daemon_log *l)
{
    __atomic_store_n(&l->starting, 0, __ATOMIC_RELAXED);
}

void pfi_daemon_log_close(pfi_daemon_log *l)
{
    if (l->file) fclose(l->file);
    if (l->use_syslog) closelog();
    l->file = NULL;
    l->use_syslog = 0;
}

/* "2026-12-02T18:00:00.123Z WHO: MSG\n" or "<N>MSG\n" (journal) to f, in one write */
static void put_line(FILE *f, const char *who, int journal, int level, const char *msg)
{
    if (journal) {
        fprintf(f, "<%d>%s\n", level, msg);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char when[40];
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        fprintf(f, "%s.%03ldZ %s: %s\n", when, ts.tv_nsec / 1000000, who, msg);
    }
    fflush(f);
}

size_t pfi_log_escape(const char *msg, char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    if (!n) return 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        char e[5] = {(char)*p, 0};
        if (*p < 0x20 || *p == 0x7f) {
            const char *named = *p == '\n' ? "\\n" : *p == '\r' ? "\\r" : *p == '\t' ? "\\t" : NULL;
            if (named) snprintf(e, sizeof e, "%s", named);
            else e[0] = '\\', e[1] = 'x', e[2] = hex[*p >> 4], e[3] = hex[*p & 15], e[4] = 0;
        }
        size_t len = strlen(e);
        if (k + len >= n) break;
        memcpy(out + k, e, len);
        k += len;
    }
    out[k] = '\0';
    return k;
}

/* msg (malloc'd unless it is small) as one line: a copy with its control
   characters escaped, or msg itself when it has none (or, out of memory,
   each replaced by '?'); frees what it replaces */
static char *one_line(char *msg, const char *small)
{
    size_t len = strlen(msg), ctl = 0;
    for (size_t i = 0; i < len; i++) ctl += (unsigned char)msg[i] < 0x20 || msg[i] == 0x7f;
    if (!ctl) return msg;
    char *esc = malloc(len + 3 * ctl + 1);
    if (!esc) {
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        return msg;
    }
    pfi_log_escape(msg, esc, len + 3 * ctl + 1);
    if (msg != small) free(msg);
    return esc;
}

void pfi_daemon_vlog(pfi_daemon_log *l, const char *fmt, va_list ap)
{
    char small[1024], *msg = small;
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)))
        vsnprintf(msg, (size_t)n + 1, fmt, aq);
    else if (!msg) msg = small; /* out of memory: the message cut short */
    va_end(aq);
    msg = one_line(msg, small); /* nothing in it starts a line of its own */
    int level = pfi_daemon_log_level(msg);
    if (level > l->max_level) {
        if (msg != small) free(msg);
        return;
    }
    if (l->use_syslog) syslog(level, "%s", msg);
    else if (l->file) put_line(l->file, l->who, 0, level, msg);
    else put_line(stderr, l->who, l->stderr_journal, level, msg);
    if ((l->use_syslog || l->file) && level <= PFI_LOG_ERR &&
        __atomic_load_n(&l->starting, __ATOMIC_RELAXED)) {
        if (l->stderr_journal) fprintf(stderr, "<%d>%s\n", level, msg);
        else fprintf(stderr, "%s: %s\n", l->who, msg);
        fflush(stderr);
    }
    if (msg != small) free(msg);
}

void pfi_daemon_logf(pfi_daemon_log *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_daemon_vlog(l, fmt, ap);
    va_end(ap);
}

pfi_status pfi_daemon_log_reopen(pfi_daemon_log *l, pfi_error *err)
{
    if (!l->file) return pfi_errorf(err, PFI_ESTATE, "no log file open");
    int fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
                  0666); /* as fopen "a" */
    if (fd < 0) return pfi_errorf(err, PFI_EIO, "%s: %s", l->path, strerror(errno));
    fflush(l->file);
    /* the same FILE now writes to the new file: dup2 swaps atomically */
    int r = dup2(fd, fileno(l->file));
    int e = errno;
    close(fd);
    if (r < 0) return pfi_errorf(err, PFI_EIO, "%s: %s", l->path, strerror(e));
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

/* the log libmicrohttpd's messages go to (pfi_daemon_start): one per process */
static pfi_daemon_log *httpd_log_dest;

static void httpd_log(const char *msg)
{
    pfi_daemon_logf(httpd_log_dest, "warning: %s", msg);
}

int pfi_daemon_start(pfi_daemon_log *l, const pfi_daemon_setup *s)
{
    /* first of all: a SIGHUP (logrotate) or SIGTERM during start-up must
       not kill the daemon between setting up and its way out */
    if (s->stop) pfi_daemon_signals(s->stop, s->hup);
    httpd_log_dest = l;
    pfi_httpd_log_to(httpd_log);
    pfi_error e;
    if (pfi_clock_set(s->time_scale, s->epoch, &e)) {
        pfi_daemon_logf(l, "error: %s", e.msg);
        return 2;
    }
    if (s->log_level) {
        int lv = pfi_daemon_log_level_parse(s->log_level);
        if (lv < 0) {
            pfi_daemon_logf(l, "error: --log-level: '%s' is not error, warning, info or debug",
                            s->log_level);
            return 2;
        }
        l->max_level = lv;
    }
    if (pfi_daemon_log_open(l, s->log_path, s->use_syslog, &e)) {
        pfi_daemon_logf(l, "error: %s: %s", s->log_what, e.msg);
        return 1;
    }
    struct rlimit rl;
    if (s->raise_nofile && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    return 0;
}

void pfi_daemon_log_hup(pfi_daemon_log *l, const char *log_what)
{
    pfi_error why;
    if (!l->file) pfi_daemon_logf(l, "SIGHUP: no %s file to reopen; ignored", log_what);
    else if (pfi_daemon_log_reopen(l, &why))
        pfi_daemon_logf(l, "warning: SIGHUP: %s; still logging to the old file", why.msg);
    else pfi_daemon_logf(l, "SIGHUP: log file %s reopened", l->path);
}
