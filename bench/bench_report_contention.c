/* bench_report_contention.c — a trigger's answer while the controller's
 * open pages are read hard (issue 30: eight clients fetching report.png in
 * a loop pushed a trigger's cap writes from 71 to 529 ms while the chart
 * was drawn under the controller's lock). The demo's shape: 4 real
 * pfi-agent processes (8 simulated H200 each, the demo's jobs, sampling
 * every 0.1 s), a real pfi-controller (control period 5 s), an event
 * running (30%) with samples, so that GET /v1/events/ID/report.png draws
 * a chart. Then BENCH_RC_TRIGGERS (20) triggers (POST /v1/trigger, deeper
 * each time, about a second apart) twice: quiet, then with BENCH_RC_CLIENTS
 * (8) threads each fetching the event's report.png in a loop (one
 * connection per fetch, as a browser's reload). For each run it prints, p50
 * and p99:
 *   - trigger -> every cap written: the controller's own figure (its log's
 *     "every cap written X ms after the trigger": from the trigger's
 *     handler to the last agent's answer; /healthz trigger_push_s);
 *   - POST sent -> every cap written: from the client's send (wall clock)
 *     to the log line's time stamp written at the last answer (ms
 *     resolution), which also counts the time the POST waited for a
 *     server thread and for the lock;
 *   - the POST's round trip, and the report.png fetches (count, p50/p99;
 *     each client on one kept-alive connection from 127.0.0.2, the trigger
 *     from 127.0.0.1: the server limits connections per client address).
 * Target: every cap written within 100 ms p99 with 8 clients.
 * BENCH_RC_MIX=1 makes the clients fetch report.png, the report JSON,
 * /v1/status and /metrics in turn (every open read that used to build its
 * answer under the lock). The clients share this machine with the
 * controller and the agents: at 18,000-24,000 kept-chart answers a second
 * they and the kernel's loopback take most of 2 cores, which is what is left
 * in the tail; BENCH_RC_CLIENT_NICE=N runs them at nice N, as remote
 * browsers whose CPU is not the controller host's. Needs PFI_CONTROLLER_BIN and PFI_AGENT_BIN
 * (scripts/run-bench.sh sets them); BENCH_KEEP=1 keeps the logs. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent_client.h"
#include "bench_common.h"
#include "bench_procs.h"

#define MAX_TRIG 64
#define MAX_FETCH 1000000

static const char *g_url;
static atomic_int g_stop;
static int g_mix;
static double g_fetch_ms[MAX_FETCH];
static atomic_int g_nfetch, g_fetch_err; /* g_nfetch: all, the first MAX_FETCH timed */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the q-quantile of n values (sorted here; nearest rank) */
static double quant(double *v, int n, double q)
{
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp);
    int k = (int)ceil(q * n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void make_token(const char *path, char *tok, size_t n)
{
    unsigned long long a =
        (unsigned long long)getpid() * 0x9E3779B97F4A7C15ull ^ (unsigned long long)time(NULL);
    snprintf(tok, n, "bench%016llx%016llx", a, a * 6364136223846793005ull + 1);
    FILE *f = fopen(path, "w");
    if (f) fputs(tok, f), fclose(f);
    chmod(path, 0600);
}

/* GET url+path: the HTTP status (0: no answer) */
static long get(const char *path, double timeout_s)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", g_url, path);
    pfi_http_reply r;
    pfi_error e;
    if (pfi_http_request("GET", full, NULL, NULL, timeout_s, &r, &e)) return 0;
    long code = r.code;
    pfi_http_reply_dispose(&r);
    return code;
}

static long post(const char *path, const char *token, const char *body)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", g_url, path);
    pfi_http_reply r;
    pfi_error e;
    if (pfi_http_request("POST", full, token, body, 10, &r, &e)) {
        fprintf(stderr, "bench_report_contention: POST %s: %s\n", path, e.msg);
        return 0;
    }
    long code = r.code;
    if (code >= 300)
        fprintf(stderr, "bench_report_contention: POST %s: HTTP %ld %s\n", path, code,
                r.body ? r.body : "");
    pfi_http_reply_dispose(&r);
    return code;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p, (void)ud;
    return size * n;
}

/* a client: the event's report.png (or, BENCH_RC_MIX, each open read in
 * turn) in a loop on one kept-alive connection, as a browser reloading it,
 * from its own loopback address (BENCH_RC_CLIENT_ADDR, 127.0.0.2): the
 * server's per-address connection limit is the clients', not the trigger's */
static void *client(void *arg)
{
    static const char *const mix[4] = {"/v1/events/bench-ev/report.png",
                                       "/v1/events/bench-ev/report", "/v1/status", "/metrics"};
    unsigned k = (unsigned)(size_t)arg;
    const char *addr = getenv("BENCH_RC_CLIENT_ADDR"), *nice_s = getenv("BENCH_RC_CLIENT_NICE");
    /* clients that stand for remote browsers: their own CPU at a lower priority */
    if (nice_s) setpriority(PRIO_PROCESS, (id_t)gettid(), atoi(nice_s));
    CURL *h = curl_easy_init();
    if (!h) return NULL;
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_INTERFACE, addr ? addr : "127.0.0.2");
    while (!atomic_load(&g_stop)) {
        char full[512];
        snprintf(full, sizeof full, "%s%s", g_url, mix[g_mix ? k++ % 4 : 0]);
        curl_easy_setopt(h, CURLOPT_URL, full);
        double t0 = bench_now();
        long code = 0;
        if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        double ms = 1000 * (bench_now() - t0);
        if (code != 200) atomic_fetch_add(&g_fetch_err, 1);
        int i = atomic_fetch_add(&g_nfetch, 1);
        if (i < MAX_FETCH) g_fetch_ms[i] = ms;
    }
    curl_easy_cleanup(h);
    return NULL;
}

/* the wall-clock time of a log line's "YYYY-MM-DDTHH:MM:SS.mmmZ" stamp (NaN: none) */
static double line_time(const char *line)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int ms = 0;
    if (sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
        return NAN;
    tm.tm_year -= 1900, tm.tm_mon -= 1;
    return (double)timegm(&tm) + ms / 1000.0;
}

/* trigger "rcR-k" (k < n) from the controller's log: its figure (ms) into
 * own[k], the log line's time into done[k] (NaN where none was logged) */
static void log_figures(const char *log, int run, int n, double *own, double *done)
{
    for (int k = 0; k < n; k++) own[k] = done[k] = NAN;
    FILE *f = fopen(log, "r");
    char line[1024], pre[32];
    snprintf(pre, sizeof pre, "trigger rc%d-", run);
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, pre), *q = strstr(line, "every cap written ");
        if (!p || !q) continue;
        int k = atoi(p + strlen(pre));
        if (k < 0 || k >= n) continue;
        own[k] = atof(q + 18);
        done[k] = line_time(line);
    }
    if (f) fclose(f);
}

/* n triggers about a second apart: each one's send time (wall clock) and round trip (ms) */
static int fire(const char *tok, int run, int n, double *sent, double *rtt)
{
    for (int k = 0; k < n; k++) {
        char body[128];
        snprintf(body, sizeof body,
                 "{\"reduction_pct\": %d, \"duration_s\": 300, \"id\": \"rc%d-%d\"}",
                 32 + (k % 20) * 2, run, k);
        sent[k] = wall_now();
        double t0 = bench_now();
        if (post("/v1/trigger", tok, body) != 201) return k;
        rtt[k] = 1000 * (bench_now() - t0);
        usleep(800000 + (unsigned)(rand() % 400000)); /* not in step with the period */
    }
    return n;
}

static void print_q(const char *what, double *v, int n, const char *target)
{
    char name[96];
    snprintf(name, sizeof name, "%s p50", what);
    BENCH_RESULT(name, quant(v, n, 0.5), "ms", target);
    snprintf(name, sizeof name, "%s p99", what);
    BENCH_RESULT(name, quant(v, n, 0.99), "ms", target);
}

/* one run of n triggers with nclients fetching meanwhile; its figures printed */
static void run(const char *tok, const char *log, int id, int n, int nclients)
{
    pthread_t th[64];
    atomic_store(&g_stop, 0);
    atomic_store(&g_nfetch, 0);
    atomic_store(&g_fetch_err, 0);
    double t0 = bench_now();
    for (int i = 0; i < nclients; i++) pthread_create(&th[i], NULL, client, (void *)(size_t)i);
    if (nclients) sleep(2); /* the clients under way */
    double sent[MAX_TRIG], rtt[MAX_TRIG], own[MAX_TRIG], done[MAX_TRIG], e2e[MAX_TRIG];
    int fired = fire(tok, id, n, sent, rtt);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < nclients; i++) pthread_join(th[i], NULL);
    double secs = bench_now() - t0; /* the clients' time */
    sleep(1);                       /* the last trigger's line in the log */
    log_figures(log, id, fired, own, done);
    int m = 0, m2 = 0;
    for (int k = 0; k < fired; k++) {
        if (!isnan(own[k])) own[m++] = own[k];
        if (!isnan(done[k])) e2e[m2++] = 1000 * (done[k] - sent[k]);
    }
    printf("bench report contention: %d clients fetching %s in a loop; %d triggers fired, %d "
           "logged as every cap written\n",
           nclients, g_mix ? "report.png, report, /v1/status, /metrics" : "report.png", fired, m);
    char what[96];
    snprintf(what, sizeof what, "%d clients: trigger -> every cap (controller)", nclients);
    print_q(what, own, m, "< 100");
    snprintf(what, sizeof what, "%d clients: POST sent -> every cap written", nclients);
    print_q(what, e2e, m2, "< 100");
    snprintf(what, sizeof what, "%d clients: POST /v1/trigger round trip", nclients);
    print_q(what, rtt, fired, "reported");
    int nf = atomic_load(&g_nfetch), timed = nf < MAX_FETCH ? nf : MAX_FETCH;
    if (nclients) {
        printf("bench report contention: %d fetches in %.1f s (%.1f/s), %d not 200\n", nf, secs,
               nf / secs, atomic_load(&g_fetch_err));
        snprintf(what, sizeof what, "%d clients: a fetch", nclients);
        print_q(what, g_fetch_ms, timed, "reported");
    }
}

/* the demo's 4 agents: their URLs; the count started */
static int start_agents(const char *agent_bin, const char *dir, const char *tokf, pid_t *ap,
                        char urls[][64])
{
    static const char *jobs[4] = {"moe-ft-qwen30ba3b-x8", "dense-pt-llama70b-x8-compile",
                                  "moe-pt-gptoss20b-x8-ep1-nocompile",
                                  "dense-ft-llama70b-x8-compile"};
    for (int i = 0; i < 4; i++) {
        char be[256];
        snprintf(be, sizeof be, "sim:gpus=8,job=job%d:%s@0-7,load=0,seed=%d", i + 1, jobs[i],
                 i + 1);
        int port = bench_start_agent(agent_bin, dir, i, be, tokf, "0.1", &ap[i]);
        if (port < 0) {
            printf("bench report contention: agent %d did not start (see %s/a%d.log)\n", i, dir, i);
            return i;
        }
        snprintf(urls[i], 64, "http://127.0.0.1:%d", port);
    }
    return 4;
}

static pid_t start_controller(const char *ctl_bin, const char *dir, const char *tokf,
                              char urls[][64], int n, const char *log)
{
    pid_t p;
    static char url[64];
    int port = bench_start_demo_controller(ctl_bin, dir, "ctl", tokf, urls, n, log, &p);
    if (port < 0) {
        printf("bench report contention: controller did not start (see %s)\n", log);
        if (p > 0) kill(p, SIGTERM), waitpid(p, NULL, 0);
        return -1;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    g_url = url;
    return p;
}

/* the event running with a chart to draw: report.png answers 200 (two samples) */
static int event_with_samples(const char *tok)
{
    sleep(12); /* jobs warm up; baselines over the window (period 5 s) */
    char body[256], ts[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(body, sizeof body,
             "{\"id\":\"bench-ev\",\"start\":\"%s\",\"duration_s\":3600,\"reduction_pct\":30,"
             "\"ramp_s\":0}",
             ts);
    if (post("/v1/events", tok, body) != 201) return -1;
    for (double end = bench_now() + 60; bench_now() < end; usleep(200000))
        if (get("/v1/events/bench-ev/report.png", 10) == 200) return 0;
    printf("bench report contention: the event's report.png never answered 200\n");
    return -1;
}

int main(void)
{
    const char *ctl_bin = getenv("PFI_CONTROLLER_BIN"), *agent_bin = getenv("PFI_AGENT_BIN");
    if (!ctl_bin || !agent_bin) {
        fprintf(stderr, "bench_report_contention: set PFI_CONTROLLER_BIN and PFI_AGENT_BIN "
                        "(scripts/run-bench.sh does)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT); /* once, before the clients' threads */
    const char *s = getenv("BENCH_RC_TRIGGERS");
    int ntrig = s ? atoi(s) : 20, nclients = (s = getenv("BENCH_RC_CLIENTS")) ? atoi(s) : 8;
    g_mix = (s = getenv("BENCH_RC_MIX")) && !strcmp(s, "1");
    if (ntrig < 1 || ntrig > MAX_TRIG) ntrig = 20;
    if (nclients < 0 || nclients > 64) nclients = 8;
    char dir[] = "/tmp/pfi-bench-rc-XXXXXX", tokf[512], tok[128], log[512], urls[4][64];
    if (!mkdtemp(dir)) return 1;
    snprintf(tokf, sizeof tokf, "%s/token", dir);
    snprintf(log, sizeof log, "%s/ctl.log", dir);
    make_token(tokf, tok, sizeof tok);
    pid_t ap[4], cp = -1;
    int n = start_agents(agent_bin, dir, tokf, ap, urls);
    if (n == 4 && (cp = start_controller(ctl_bin, dir, tokf, urls, n, log)) > 0 &&
        event_with_samples(tok) == 0) {
        printf("bench report contention: 4 agents x 8 simulated H200, control period 5 s, "
               "an event running (30%%); controller %s\n",
               ctl_bin);
        run(tok, log, 0, ntrig, 0);
        if (nclients) run(tok, log, 1, ntrig, nclients);
    }
    if (cp > 0) kill(cp, SIGTERM), waitpid(cp, NULL, 0);
    for (int i = 0; i < n; i++) kill(ap[i], SIGTERM), waitpid(ap[i], NULL, 0);
    if (getenv("BENCH_KEEP")) {
        printf("bench report contention: logs kept in %s\n", dir);
        return 0;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) != 0;
}
