/* cmd_record.c — `pfi record`: scrape a Prometheus text endpoint (e.g.
 * dcgm-exporter's /metrics) every interval and append each scrape, preceded
 * by `# pfi-scrape-time <unix_ms>`, to a file. A scrape is written whole and
 * flushed when it arrives; on SIGINT/SIGTERM or at the end of --duration the
 * file is flushed and fsynced, so an interrupted recording is complete up to
 * its last scrape. It never fails open: a URL that is not http(s)://HOST...
 * is a usage error; a failed scrape is reported and skipped, but
 * --max-failures consecutive failures give up (exit 1), and so does a run
 * that ends without one successful scrape. --count counts successful
 * scrapes. FILE is opened for appending; on failure the file is removed only
 * if this run created it and left it empty (a user's file is never removed). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char cmd_record_usage[] =
    "usage: pfi record --url URL -o FILE [--interval S] [--duration S | --count N]\n"
    "                  [--max-failures N]\n"
    "\n"
    "Scrape URL (Prometheus text, e.g. http://localhost:9400/metrics from\n"
    "dcgm-exporter) every S seconds (default 5) and append each scrape to FILE,\n"
    "preceded by a line '# pfi-scrape-time <unix_ms>' (the time the scrape\n"
    "started). Runs until --duration seconds have passed, --count successful\n"
    "scrapes were written, or SIGINT/SIGTERM; then flushes and fsyncs FILE. The\n"
    "result is the 'prometheus' telemetry format of a run directory. URL must be\n"
    "http://HOST... or https://HOST... (else exit 2). A failed scrape is reported\n"
    "and skipped; --max-failures failures in a row give up with exit 1, and so\n"
    "does an end without a single successful scrape. FILE is appended to; on\n"
    "failure it is removed only if this run created it and wrote nothing.\n"
    "\n"
    "options:\n"
    "  --timeout S       per-scrape timeout (default: the interval)\n"
    "  --max-mb N        largest scrape accepted (default 64 MiB)\n"
    "  --max-failures N  consecutive failed scrapes before giving up (default 10)\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { (void)sig; stop_flag = 1; }

typedef struct body {
    char *p;
    size_t n, cap, max;
    int too_big;
} body;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t k = size * nmemb;
    if (b->n + k > b->max) {
        b->too_big = 1;
        return 0;
    }
    if (b->n + k + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 65536;
        while (nc < b->n + k + 1) nc *= 2;
        char *p = realloc(b->p, nc);
        if (!p) return 0;
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->n, ptr, k);
    b->n += k;
    return k;
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* http:// or https:// with a host curl can parse; else a message */
static const char *bad_url(const char *url)
{
    if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)
        return "must start with http:// or https://";
    CURLU *u = curl_url();
    if (!u) return "out of memory";
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    char *host = NULL;
    if (!uc) uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
    const char *why = uc ? curl_url_strerror(uc) : NULL;
    curl_free(host);
    curl_url_cleanup(u);
    return why;
}

/* Open path for appending; *created: this call made the file (O_EXCL). */
static FILE *open_append(const char *path, int *created, struct stat *sb)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
    *created = fd >= 0;
    /* it exists (or is a dangling link, created through as by >>): not ours to remove */
    if (fd < 0 && errno == EEXIST) fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0) return NULL;
    FILE *f = fstat(fd, sb) == 0 ? fdopen(fd, "a") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* Remove path if it is still the empty file this run created (sb: as opened). */
static int remove_if_ours_and_empty(const char *path, const struct stat *sb)
{
    struct stat now;
    if (lstat(path, &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != sb->st_dev || now.st_ino != sb->st_ino ||
        now.st_size != 0)
        return 0;
    return unlink(path) == 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cmd_record(int argc, char **argv)
{
    const char *cmd = "record";
    enum { O_URL = 1, O_IV, O_DUR, O_COUNT, O_TO, O_MAX, O_MAXFAIL };
    static const struct option lo[] = {{"url", required_argument, NULL, O_URL},
                                       {"interval", required_argument, NULL, O_IV},
                                       {"duration", required_argument, NULL, O_DUR},
                                       {"count", required_argument, NULL, O_COUNT},
                                       {"timeout", required_argument, NULL, O_TO},
                                       {"max-mb", required_argument, NULL, O_MAX},
                                       {"max-failures", required_argument, NULL, O_MAXFAIL},
                                       {"output", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    const char *url = NULL, *path = NULL;
    double interval = 5, duration = INFINITY, timeout = NAN, v;
    long count = -1, max_failures = 10;
    size_t max = 64u << 20;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'h': return cli_help(cmd);
        case 'o': path = optarg; break;
        case O_URL: url = optarg; break;
        case O_IV:
            if (cli_parse_num(cmd, "--interval", optarg, 0.01, 86400, &interval)) return CLI_USAGE;
            break;
        case O_DUR:
            if (cli_parse_num(cmd, "--duration", optarg, 0, 1e9, &duration)) return CLI_USAGE;
            break;
        case O_COUNT:
            if (cli_parse_num(cmd, "--count", optarg, 1, 1e12, &v)) return CLI_USAGE;
            count = (long)v;
            break;
        case O_TO:
            if (cli_parse_num(cmd, "--timeout", optarg, 0.01, 3600, &timeout)) return CLI_USAGE;
            break;
        case O_MAX:
            if (cli_parse_num(cmd, "--max-mb", optarg, 1, 65536, &v)) return CLI_USAGE;
            max = (size_t)v << 20;
            break;
        case O_MAXFAIL:
            if (cli_parse_num(cmd, "--max-failures", optarg, 1, 1e9, &v)) return CLI_USAGE;
            max_failures = (long)v;
            break;
        default: return cli_bad_option(cmd, argv);
        }
    }
    if (!url) return cli_usage_error(cmd, "--url is required");
    const char *why = bad_url(url);
    if (why) return cli_usage_error(cmd, "--url '%s': %s", url, why);
    if (!path || strcmp(path, "-") == 0) return cli_usage_error(cmd, "-o FILE is required");
    if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (isnan(timeout)) timeout = interval;
    int created;
    struct stat fsb;
    FILE *f = open_append(path, &created, &fsb);
    if (!f) {
        cli_error(cmd, "%s: cannot open for appending: %s", path, strerror(errno));
        return CLI_FAIL;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    body b = {NULL, 0, 0, max, 0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
    double start = now_mono();
    long written = 0, failed = 0, in_a_row = 0;
    int rc = CLI_OK;
    char last_error[CURL_ERROR_SIZE + 32] = "";
    for (long k = 0; !stop_flag; k++) {
        double due = start + (double)k * interval;
        double wait = due - now_mono();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
            if (nanosleep(&ts, NULL) != 0 && stop_flag) break;
        }
        if (now_mono() - start > duration || stop_flag) break;
        b.n = 0;
        b.too_big = 0;
        long long t = now_ms();
        CURLcode cc = curl_easy_perform(h);
        if (cc != CURLE_OK) {
            failed++;
            snprintf(last_error, sizeof last_error, "%s", b.too_big ? "larger than --max-mb" : curl_easy_strerror(cc));
            if (++in_a_row >= max_failures) break;
            fprintf(stderr, "pfi record: warning: scrape %ld failed: %s\n", k, last_error);
            continue;
        }
        in_a_row = 0;
        if (fprintf(f, "# pfi-scrape-time %lld\n", t) < 0 || (b.n && fwrite(b.p, 1, b.n, f) != b.n) ||
            (b.n && b.p[b.n - 1] != '\n' && fputc('\n', f) == EOF) || fflush(f) != 0) {
            cli_error(cmd, "%s: write failed: %s", path, strerror(errno));
            rc = CLI_FAIL;
            break;
        }
        written++;
        if (count > 0 && written >= count) break;
    }
    /* a pipe or character device answers fsync with EINVAL: only files are synced */
    if (fflush(f) != 0 || (S_ISREG(fsb.st_mode) && fsync(fileno(f)) != 0)) {
        if (rc == CLI_OK) cli_error(cmd, "%s: flush failed: %s", path, strerror(errno));
        rc = CLI_FAIL;
    }
    fclose(f);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    free(b.p);
    /* on any failure, only an empty file this run created goes; a user's file stays */
    int gave_up = in_a_row >= max_failures, none = written == 0;
    int removed = (rc != CLI_OK || gave_up || none) && created && remove_if_ours_and_empty(path, &fsb);
    if (rc == CLI_OK && (gave_up || none)) {
        char what[96];
        if (gave_up) snprintf(what, sizeof what, "gave up after %ld failed scrapes in a row (--max-failures %ld)", in_a_row, max_failures);
        else snprintf(what, sizeof what, "no successful scrape in %ld tries", failed);
        cli_error(cmd, "%s: %s%s%s%s; %ld scrapes written to %s%s", url, what, failed ? ", the last: " : "", last_error,
                  stop_flag ? ", stopped by signal" : "", written, path, removed ? ", which was removed" : "");
        rc = CLI_FAIL;
    } else if (rc == CLI_OK) {
        fprintf(stderr, "pfi record: %ld scrapes written to %s (%ld failed)%s\n", written, path, failed,
                stop_flag ? ", stopped by signal" : "");
    }
    return rc;
}
