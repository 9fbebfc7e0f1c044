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
 * if this run created it and left it empty (a user's file is never removed).
 * An agent deployed with TLS and a read token (docs/deploy.md) is scraped
 * with --ca-file (its CA, as ca_file in the controller's and the CLI's
 * configuration) and --token-file (a bearer token, mode 0600, read before
 * anything is written); the token goes over plain http only to loopback
 * unless --allow-insecure-http or $PFI_ALLOW_INSECURE_HTTP=1
 * (pfi_url_secret_ok, the rule of the daemons and the other clients). */
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

#include "agent_client.h"
#include "cli.h"
#include "clock.h"

typedef struct record_args {
    const char *url, *path, *ca_file, *token_file;
    double interval, duration, timeout, max_mb;
    long count, max_failures;
    int allow_insecure_http;
    char token[PFI_TOKEN_MAX + 1]; /* read from token_file */
} record_args;

#define OPT_T record_args
static const pfi_opt record_options[] = {
    OPT_STRING(0, "url", url, "URL", "the endpoint: http://HOST... or https://HOST... (required)"),
    OPT_FILENAME('o', "output", path, "FILE", "the file scrapes are appended to (required)"),
    OPT_DOUBLE(0, "interval", interval, "S", 0.01, 86400, "seconds between scrapes (default 5)"),
    OPT_DOUBLE(0, "duration", duration, "S", 0, 1e9, "stop after S seconds (default: at a signal)"),
    OPT_LONG(0, "count", count, "N", 1, 1e12, "stop after N successful scrapes"),
    OPT_DOUBLE(0, "timeout", timeout, "S", 0.01, 3600,
               "per-scrape timeout (default: the interval)"),
    OPT_DOUBLE(0, "max-mb", max_mb, "N", 1, 65536, "largest scrape accepted, MiB (default 64)"),
    OPT_LONG(0, "max-failures", max_failures, "N", 1, 1e9,
             "consecutive failed scrapes before giving up (default 10)"),
    OPT_FILENAME(0, "ca-file", ca_file, "FILE",
                 "PEM CA to check an https --url's certificate with (default: the system's)"),
    OPT_FILENAME(0, "token-file", token_file, "FILE",
                 "bearer token sent with each scrape (mode 0600), e.g. the agent's read token"),
    OPT_BOOLEAN(0, "allow-insecure-http", allow_insecure_http,
                "send the token over plain http to a host other than loopback (a trusted network "
                "only; also $PFI_ALLOW_INSECURE_HTTP=1)"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_record_opts = CLI_OPTS(
    record,
    .usage = "pfi record --url URL -o FILE [--interval S] [--duration S | --count N]\n"
             "           [--max-failures N] [--ca-file FILE] [--token-file FILE]\n"
             "           [--allow-insecure-http]",
    .description = "Scrape URL (Prometheus text, e.g. http://localhost:9400/metrics from\n"
                   "dcgm-exporter) every S seconds (default 5) and append each scrape to FILE,\n"
                   "preceded by a line '# pfi-scrape-time <unix_ms>' (the time the scrape\n"
                   "started). Runs until --duration seconds have passed, --count successful\n"
                   "scrapes were written, or SIGINT/SIGTERM; then flushes and fsyncs FILE. The\n"
                   "result is the 'prometheus' telemetry format of a run directory. URL must be\n"
                   "http://HOST... or https://HOST... (else exit 2). A failed scrape is reported\n"
                   "and skipped; --max-failures failures in a row give up with exit 1, and so\n"
                   "does an end without a single successful scrape. FILE is appended to; on\n"
                   "failure it is removed only if this run created it and wrote nothing.\n"
                   "A pfi-agent with TLS and a read token (docs/deploy.md): --ca-file CA.pem\n"
                   "--token-file READ-TOKEN. The token goes over plain http only to loopback\n"
                   "unless --allow-insecure-http (or $PFI_ALLOW_INSECURE_HTTP=1).\n",
    .options = record_options);

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

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
    /* 0600: the scrapes may carry job ids and host names a site keeps to itself */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0600);
    *created = fd >= 0;
    /* it exists (or is a dangling link, created through as by >>): not ours to remove */
    if (fd < 0 && errno == EEXIST)
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY | O_CLOEXEC, 0600);
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
    if (lstat(path, &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != sb->st_dev ||
        now.st_ino != sb->st_ino || now.st_size != 0)
        return 0;
    return unlink(path) == 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct scrapes {
    long written, failed, in_a_row;
    char last_error[CURL_ERROR_SIZE + 32];
    char curl_error[CURL_ERROR_SIZE];
} scrapes;

/* scrape until the end, a signal, or too many failures; CLI_FAIL if FILE cannot be written */
static int scrape_loop(const char *cmd, const record_args *a, CURL *h, body *b, FILE *f, scrapes *n)
{
    char *errbuf = n->curl_error; /* curl's CURLOPT_ERRORBUFFER */
    double start = pfi_wall_monotonic();
    for (long k = 0; !stop_flag; k++) {
        double due = start + (double)k * a->interval;
        double wait = due - pfi_wall_monotonic();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
            if (nanosleep(&ts, NULL) != 0 && stop_flag) break;
        }
        if (pfi_wall_monotonic() - start > a->duration || stop_flag) break;
        b->n = 0;
        b->too_big = 0;
        errbuf[0] = '\0';
        long long t = now_ms();
        CURLcode cc = curl_easy_perform(h);
        long code = 0;
        char *loc = NULL;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        if (cc == CURLE_OK && code >= 300 && code < 400) {
            /* a redirect is not followed (the token would go where the
               answer says) and its page is not metrics: a failed scrape */
            curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
            snprintf(errbuf, CURL_ERROR_SIZE, "HTTP %ld: redirected%s%.200s, not followed", code,
                     loc ? " to " : "", loc ? loc : "");
            cc = CURLE_HTTP_RETURNED_ERROR;
        }
        if (cc != CURLE_OK) {
            n->failed++;
            /* curl's own line where it has one ("The requested URL returned
               error: 401", the certificate's problem), else its code's */
            snprintf(n->last_error, sizeof n->last_error, "%s",
                     b->too_big  ? "larger than --max-mb"
                     : errbuf[0] ? errbuf
                                 : curl_easy_strerror(cc));
            if (++n->in_a_row >= a->max_failures) break;
            fprintf(stderr, "pfi record: warning: scrape %ld failed: %s\n", k, n->last_error);
            continue;
        }
        n->in_a_row = 0;
        if (fprintf(f, "# pfi-scrape-time %lld\n", t) < 0 ||
            (b->n && fwrite(b->p, 1, b->n, f) != b->n) ||
            (b->n && b->p[b->n - 1] != '\n' && fputc('\n', f) == EOF) || fflush(f) != 0) {
            cli_error(cmd, "%s: write failed: %s", a->path, strerror(errno));
            return CLI_FAIL;
        }
        n->written++;
        if (a->count > 0 && n->written >= a->count) break;
    }
    return CLI_OK;
}

/* record into an open FILE (fsb: as opened; created: by this run) */
static int record_to(const char *cmd, const record_args *a, FILE *f, int created,
                     const struct stat *fsb)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    body b = {NULL, 0, 0, (size_t)a->max_mb << 20, 0};
    curl_easy_setopt(h, CURLOPT_URL, a->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(a->timeout * 1000));
    if (a->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, a->ca_file);
    struct curl_slist *hdr = NULL;
    char auth[PFI_TOKEN_MAX + 32];
    if (a->token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->token);
        hdr = curl_slist_append(NULL, auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    }
    scrapes n = {0, 0, 0, "", ""};
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, n.curl_error);
    int rc = scrape_loop(cmd, a, h, &b, f, &n);
    /* a pipe or character device answers fsync with EINVAL: only files are synced */
    if (fflush(f) != 0 || (S_ISREG(fsb->st_mode) && fsync(fileno(f)) != 0)) {
        if (rc == CLI_OK) cli_error(cmd, "%s: flush failed: %s", a->path, strerror(errno));
        rc = CLI_FAIL;
    }
    fclose(f);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    curl_global_cleanup();
    free(b.p);
    /* on any failure, only an empty file this run created goes; a user's file stays */
    int gave_up = n.in_a_row >= a->max_failures, none = n.written == 0;
    int removed =
        (rc != CLI_OK || gave_up || none) && created && remove_if_ours_and_empty(a->path, fsb);
    if (rc == CLI_OK && (gave_up || none)) {
        char what[96];
        if (gave_up)
            snprintf(what, sizeof what,
                     "gave up after %ld failed scrapes in a row (--max-failures %ld)", n.in_a_row,
                     a->max_failures);
        else snprintf(what, sizeof what, "no successful scrape in %ld tries", n.failed);
        cli_error(cmd, "%s: %s%s%s%s; %ld scrapes written to %s%s", a->url, what,
                  n.failed ? ", the last: " : "", n.last_error,
                  stop_flag ? ", stopped by signal" : "", n.written, a->path,
                  removed ? ", which was removed" : "");
        rc = CLI_FAIL;
    } else if (rc == CLI_OK) {
        fprintf(stderr, "pfi record: %ld scrapes written to %s (%ld failed)%s\n", n.written,
                a->path, n.failed, stop_flag ? ", stopped by signal" : "");
    }
    return rc;
}

/* --ca-file and --token-file: the CA readable and for an https URL, the
 * token read (mode 0600) and only for a URL it may travel to; CLI_OK, or
 * the exit status after one line naming the option */
static int credentials(const char *cmd, record_args *a)
{
    if (a->ca_file) {
        if (strncasecmp(a->url, "https://", 8) != 0)
            return cli_usage_error(cmd, "--ca-file applies to an https:// --url, not '%s'", a->url);
        FILE *f = fopen(a->ca_file, "r");
        if (!f) {
            cli_error(cmd, "--ca-file %s: %s", a->ca_file, strerror(errno));
            return CLI_FAIL;
        }
        fclose(f);
    }
    if (!a->token_file) return CLI_OK;
    const char *env = getenv("PFI_ALLOW_INSECURE_HTTP");
    if (!pfi_url_secret_ok(a->url, a->allow_insecure_http || (env && !strcmp(env, "1")))) {
        cli_error(cmd,
                  "--url %.200s: plain http to a non-loopback host would send the token in "
                  "cleartext; use https:// or --allow-insecure-http (a trusted network only)",
                  a->url);
        return CLI_FAIL;
    }
    pfi_error e;
    if (pfi_token_read(a->token_file, a->token, sizeof a->token, &e)) {
        cli_error(cmd, "--token-file: %s", e.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cmd_record(int argc, char **argv)
{
    const char *cmd = "record";
    record_args a = {.interval = 5,
                     .duration = INFINITY,
                     .timeout = NAN,
                     .max_mb = 64,
                     .count = -1,
                     .max_failures = 10};
    int first, rc = cli_parse(&cmd_record_opts, &a, argc, argv, &first);
    if (rc >= 0) return rc;
    if (!a.url) return cli_usage_error(cmd, "--url is required");
    const char *why = bad_url(a.url);
    if (why) return cli_usage_error(cmd, "--url '%s': %s", a.url, why);
    if (!a.path || strcmp(a.path, "-") == 0) return cli_usage_error(cmd, "-o FILE is required");
    if (first < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[first]);
    if (isnan(a.timeout)) a.timeout = a.interval;
    if ((rc = credentials(cmd, &a)) != CLI_OK) return rc;
    int created;
    struct stat fsb;
    FILE *f = open_append(a.path, &created, &fsb);
    if (!f) {
        cli_error(cmd, "%s: cannot open for appending: %s", a.path, strerror(errno));
        return CLI_FAIL;
    }
    return record_to(cmd, &a, f, created, &fsb);
}
