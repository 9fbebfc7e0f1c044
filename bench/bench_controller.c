/* bench_controller.c — pfi-controller's speed, wall clock at time scale 1:
 *  - the scaling curve: N simulated agents x 8 GPUs (N = 100, 1,000, 5,000,
 *    12,500 by default; BENCH_CTL_AGENTS="100,1000" to choose) served by
 *    one process on loopback (a "farm": one HTTP server on one listener,
 *    each agent under its own name aN.localhost — its own kept-alive
 *    connection, as real agents — URL prefix /a/<i>/, one job of 8 GPUs per
 *    agent whose power follows its cap), a real pfi-controller with control
 *    period 1 s. During a 20% event it reads every period's wall time
 *    (GET /healthz: one whole period, GET /v1/control from all agents,
 *    allocate, PUT /v1/caps to all) and prints p50 / p99 / max (target
 *    < 1 s at 12,500), the controller's RSS (target < 1 GiB) and CPU per
 *    period, and how much CPU the farm (this process) took meanwhile: the
 *    farm shares the machine (BENCH_CTL_PERIOD sets another period). Before
 *    the event, every job is profiled at its start (issue 31, on by default):
 *    the periods while profiles run, p50 / p99 (same targets), and how many
 *    jobs were profiled and went back to the ceiling (BENCH_CTL_PROFILE=0:
 *    none; the event then finds no known points). Then
 *    BENCH_CTL_TRIGGERS (8) triggers
 *    (POST /v1/trigger, deeper each time) and, from the controller's log,
 *    trigger -> every cap written (its last successful PUT) p50 / p99
 *    (target < 200 ms at 12,500);
 *  - latency on the demo's shape: 4 real pfi-agent processes (8 simulated
 *    H200 each, jobs of the reconstruction, the sim's default response
 *    model), controller period 5 s (the default): from POST /v1/events
 *    (start now, no ramp) until every agent's /v1/node shows every GPU
 *    capped (sampled every 0.1 s) and until the GPUs' summed power is within
 *    2% of the event's target (target <= 1 s); then 10 triggers
 *    (POST /v1/trigger, deeper each time): trigger -> all 32 caps written,
 *    p50 / p99 from the controller's log (target < 100 ms; Emerald's field
 *    trial: 30 s). BENCH_CTL_AGENTS=0 runs only this part,
 *    BENCH_CTL_DEMO=0 skips it. The farm's agents serve GET /v1/control, the
 *    controller's compact view; BENCH_CTL_FULL_NODE=1 makes them answer it 404
 *    (agents older than it), so that the controller reads GET /v1/node.
 * Fleet margins (issue 28): BENCH_CTL_LOAD=1 runs one busy thread of the
 * benchmark's own for the whole measurement (a machine doing other work)
 * and prints the load average; BENCH_CTL_PERIODS=N measures N periods
 * (20; p99 wants at least 100) and BENCH_CTL_TRIGGERS=N triggers (at most
 * 40); sizes above 10,000 agents are served by several listeners of the
 * farm (FARM_SLICE agents each, on ports of their own: one destination port
 * leaves the controller 28,231 ephemeral source ports). Targets: 12,500
 * agents period p99 < 1 s, trigger -> every cap p99 < 200 ms; 25,000 agents
 * period p99 < 2 s with every agent answering every period (/healthz's
 * agents_up), controller RSS < 2 GiB.
 * BENCH_CTL_OFFER=S sets the offer's interval (30 s, the daemon's; 0: none;
 * "none": no "offer" key at all, for a controller built before it);
 * BENCH_CTL_DEEP=K sets the profiles' deep points (4, the daemon's)
 * and the offer's last evaluation time is printed (issue 44).
 * BENCH_CTL_IDLE=S (issue 43) first measures the controller idle for S
 * seconds (no event, profiles off): CPU seconds and voluntary context
 * switches per minute, all its threads, the farm excluded.
 * Needs PFI_CONTROLLER_BIN and PFI_AGENT_BIN (scripts/run-bench.sh sets
 * them); raises its open-file limit, the hard one too where allowed (root):
 * 25,000 agents are 25,000 connections on each side. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "agent_client.h"
#include "bench_common.h"
#include "bench_procs.h"
#include "fast_trigger.h"
#include "httpd.h"

#define GPUS 8

/* ---- the farm: g_nfarm fake agents behind one server ---- */
typedef struct farm_agent {
    double cap_w;            /* per GPU */
    double uncapped_w;       /* per GPU, what the job draws without a cap */
    double tokens_per_s_max; /* job tokens/s at full power */
    double pfi;              /* throughput loss per power cut, roughly */
    double capped_at;        /* wall time the first cap below baseline arrived */
    uint64_t ft_last_seq;    /* the last fast trigger datagram taken */
    long long gen_max;       /* the highest generation taken (bench_failover.h) */
    double lease_until;      /* its lease's end (wall; 0: none) */
} farm_agent;
/* in memory shared with the farm's other processes (above FARM_SLICE agents):
 * the agents and the mutex over them (process-shared) */
static farm_agent *g_farm;
static size_t g_farm_bytes;
static unsigned g_nfarm;
static pthread_mutex_t *g_mu;
static int *g_ft_port_shared; /* the fast trigger port, for every process of the farm */

static int cmp(const void *a, const void *b);
static double quant(const double *v, int n, double q);
#include "bench_failover.h"

static int farm_protected(void *ud, const char *method, const char *url)
{
    (void)ud, (void)url;
    return strcmp(method, "GET") != 0;
}

/* fast trigger datagrams (fast_trigger.h), as pfi-agent takes them (MAC, freshness, the
 * caps), on the farm's port number in UDP; BENCH_CTL_NO_FAST=1: none (HTTP alone) */
static int g_ft_fd = -1, g_ft_port;
static char g_ft_token[128];
static atomic_int g_ft_stop;
static unsigned long long g_ft_taken, g_ft_views;

/* the cap for farm agent i (the last "cap_w" of the body: one job per agent) */
static void farm_set_cap(unsigned i, double c)
{
    pthread_mutex_lock(g_mu);
    g_farm[i].cap_w = c;
    if (c < 699 && !(g_farm[i].capped_at > 0)) g_farm[i].capped_at = bench_now();
    pthread_mutex_unlock(g_mu);
}

static char *farm_control(unsigned i, const farm_agent *fa, size_t *len);

/* farm agent i takes seq if fresh (as pfi-agent: above its last, within 5 s) */
static int farm_fresh(unsigned i, uint64_t seq)
{
    pthread_mutex_lock(g_mu);
    int fresh = pfi_ft_fresh(seq, g_farm[i].ft_last_seq, pfi_ft_now_us());
    if (fresh) g_farm[i].ft_last_seq = seq;
    pthread_mutex_unlock(g_mu);
    return fresh;
}

/* the answer to a request (m, the NUL-terminated body), malloc'd into *body
 * (NULL: none, the request is dropped) */
static char *farm_answer(const pfi_ft_msg *m, size_t *len)
{
    if (m->type == PFI_FT_VIEW) { /* {"path":"/a/I/v1/control"} */
        const char *q = strstr(m->body, "\"/a/");
        unsigned i = q ? (unsigned)strtoul(q + 4, NULL, 10) : g_nfarm;
        if (i >= g_nfarm || !farm_fresh(i, m->seq)) return NULL;
        pthread_mutex_lock(g_mu);
        farm_agent fa = g_farm[i];
        pthread_mutex_unlock(g_mu);
        g_ft_views++;
        return farm_control(i, &fa, len);
    }
    /* caps: the job's (one per agent, "jobN": agent N), the last "cap_w" */
    const char *j = strstr(m->body, "\"job_id\":\"job");
    unsigned i = j ? (unsigned)strtoul(j + 13, NULL, 10) : g_nfarm;
    if (i >= g_nfarm || !farm_fresh(i, m->seq)) return NULL;
    pthread_mutex_lock(g_mu);
    int stale = farm_fence(&g_farm[i], m->body, bench_now()); /* as the PUT's */
    pthread_mutex_unlock(g_mu);
    if (stale) return NULL; /* no answer: the controller sends it again by HTTP */
    double c = 700;
    for (const char *p = m->body; (p = strstr(p, "\"cap_w\":")); p += 8) c = atof(p + 8);
    farm_set_cap(i, c);
    g_ft_taken++;
    *len = 11;
    return strdup("{\"ok\":true}");
}

static void *farm_fast_thread(void *arg)
{
    (void)arg;
    enum { B = 2048 }; /* a trigger's datagrams are taken before the views received with them */
    static unsigned char in[B][PFI_FT_MAX_BYTES + 1], out[B][PFI_FT_MAX_BYTES];
    struct mmsghdr mi[B], mo[B];
    struct iovec ii[B], io[B];
    struct sockaddr_in from[B];
    while (!atomic_load(&g_ft_stop)) {
        struct pollfd pf = {.fd = g_ft_fd, .events = POLLIN};
        if (poll(&pf, 1, 100) <= 0) continue;
        for (int k = 0; k < B; k++) {
            ii[k].iov_base = in[k];
            ii[k].iov_len = PFI_FT_MAX_BYTES;
            memset(&mi[k], 0, sizeof mi[k]);
            mi[k].msg_hdr.msg_iov = &ii[k];
            mi[k].msg_hdr.msg_iovlen = 1;
            mi[k].msg_hdr.msg_name = &from[k];
            mi[k].msg_hdr.msg_namelen = sizeof from[k];
        }
        int n = recvmmsg(g_ft_fd, mi, B, MSG_DONTWAIT, NULL);
        int no = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < n; k++) {
                if ((in[k][5] == PFI_FT_VIEW) != pass) continue; /* caps first */
                pfi_ft_msg m;
                pfi_error e;
                if (pfi_ft_decode(in[k], mi[k].msg_len, g_ft_token, &m, &e) ||
                    m.type == PFI_FT_ANSWER)
                    continue;
                in[k][mi[k].msg_len] = '\0';
                size_t len = 0;
                char *body = farm_answer(&m, &len);
                if (!body) continue;
                pfi_ft_msg a = {PFI_FT_ANSWER, 200, m.seq, body, len};
                io[no].iov_base = out[no];
                io[no].iov_len = pfi_ft_encode(&a, g_ft_token, out[no]);
                free(body);
                memset(&mo[no], 0, sizeof mo[no]);
                mo[no].msg_hdr.msg_iov = &io[no];
                mo[no].msg_hdr.msg_iovlen = 1;
                mo[no].msg_hdr.msg_name = &from[k];
                mo[no].msg_hdr.msg_namelen = sizeof from[k];
                no++;
            }
        for (int sent = 0; sent < no;) {
            int r = sendmmsg(g_ft_fd, mo + sent, (unsigned)(no - sent), 0);
            if (r <= 0) break;
            sent += r;
        }
    }
    return NULL;
}

static void farm_fast_stop(pthread_t tid, unsigned nfarm)
{
    if (g_ft_port <= 0) return;
    atomic_store(&g_ft_stop, 1);
    pthread_join(tid, NULL);
    close(g_ft_fd);
    printf("bench controller %u agents: the farm took %llu caps datagrams and answered %llu view "
           "datagrams\n",
           nfarm, g_ft_taken, g_ft_views);
    g_ft_port = 0;
}

/* farm agent i's readings: per-GPU power (its cap or what it draws uncapped) and its
 * job's tokens/s (the loss its pfi gives for the cut) */
static void farm_reading(unsigned i, const farm_agent *fa, double *power_w, double *tokens_per_s)
{
    double unc = fa->uncapped_w, w = fmin(fa->cap_w, unc);
    *power_w = w - 2.0 * (double)(i % 3);
    *tokens_per_s = fa->tokens_per_s_max * fmax(0.3, 1 - fa->pfi * (1 - w / unc));
}

/* GET /v1/node, written directly (the farm must cost little next to the controller) */
static char *farm_node(unsigned i, const farm_agent *fa, size_t *len)
{
    double p, tok, cap = fa->cap_w, pfi = fa->pfi;
    farm_reading(i, fa, &p, &tok);
    size_t n = 4096;
    char *b = malloc(n);
    if (!b) return NULL;
    size_t k = (size_t)snprintf(b, n,
                                "{\"hostname\":\"farm\",\"backend\":\"farm\",\"time\":%ld,"
                                "\"time_scale\":1,\"lease\":null,\"generation_max\":0,\"gpus\":[",
                                (long)time(NULL));
    for (int g = 0; g < GPUS; g++)
        k += (size_t)snprintf(b + k, n - k,
                              "%s{\"index\":%d,\"uuid\":\"GPU-farm-%05u-%d\",\"name\":\"NVIDIA "
                              "H200 (farm)\",\"cap_min_w\":200,\"cap_max_w\":700,"
                              "\"cap_default_w\":700,\"cap_w\":%.0f,\"enforced_w\":%.0f,"
                              "\"power_w\":%.1f,\"job_id\":\"job%u\"}",
                              g ? "," : "", g, i, g, cap, cap, p, i);
    k += (size_t)snprintf(b + k, n - k,
                          "],\"jobs\":[{\"job_id\":\"job%u\",\"gpus\":[0,1,2,3,4,5,6,7],"
                          "\"source\":\"farm\",\"power_w\":%.1f,\"tokens_per_s\":%.1f,"
                          "\"pfi_predicted\":%.3f,\"training_means\":{}}]}",
                          i, p * GPUS, tok, pfi);
    *len = k < n ? k : n - 1;
    return b;
}

/* GET /v1/control, the controller's compact view (docs/agent.md) */
static char *farm_control(unsigned i, const farm_agent *fa, size_t *len)
{
    double p, tok, cap = fa->cap_w, pfi = fa->pfi;
    farm_reading(i, fa, &p, &tok);
    size_t n = 1024;
    char *b = malloc(n);
    if (!b) return NULL;
    size_t k = (size_t)snprintf(b, n, "{\"generation_max\":0,");
    int ftp = *g_ft_port_shared; /* the farm's other processes learn it here */
    if (ftp > 0) k += (size_t)snprintf(b + k, n - k, "\"fast_trigger_port\":%d,", ftp);
    k += (size_t)snprintf(b + k, n - k, "\"gpus\":[");
    for (int g = 0; g < GPUS; g++)
        k += (size_t)snprintf(b + k, n - k, "%s[200,700,%.0f]", g ? "," : "", cap);
    k += (size_t)snprintf(b + k, n - k,
                          "],\"jobs\":[{\"job_id\":\"job%u\",\"gpus\":[0,1,2,3,4,5,6,7],"
                          "\"power_w\":%.1f,\"tokens_per_s\":%.1f,\"pfi_predicted\":%.3f,"
                          "\"training_means\":{}}]}",
                          i, p * GPUS, tok, pfi);
    *len = k < n ? k : n - 1;
    return b;
}

/* BENCH_CTL_FULL_NODE=1: the farm's agents have no /v1/control (as before it existed) */
static int g_full_node;

static void farm_handle(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    (void)ud;
    unsigned i = 0;
    char rest[64] = "";
    if (sscanf(rq->url, "/a/%u/%63s", &i, rest) != 2 || i >= g_nfarm) {
        pfi_http_error(rs, 404, "no such agent");
        return;
    }
    pthread_mutex_lock(g_mu);
    farm_agent a = g_farm[i];
    pthread_mutex_unlock(g_mu);
    if (!strcmp(rest, "v1/node") && !strcmp(rq->method, "GET")) {
        rs->body = farm_node(i, &a, &rs->len);
        rs->code = rs->body ? 200 : 500;
        return;
    }
    if (!strcmp(rest, "v1/control") && !strcmp(rq->method, "GET") && !g_full_node) {
        rs->body = farm_control(i, &a, &rs->len);
        rs->code = rs->body ? 200 : 500;
        return;
    }
    if (!strcmp(rest, "v1/caps") && !strcmp(rq->method, "PUT")) {
        /* the job's cap: the last "cap_w" of the request (one job per agent) */
        double c = 700;
        pthread_mutex_lock(g_mu);
        int stale = farm_fence(&g_farm[i], rq->body, bench_now());
        pthread_mutex_unlock(g_mu);
        if (stale) return pfi_http_error(rs, 409, "generation below generation_max");
        for (const char *p = rq->body; p && (p = strstr(p, "\"cap_w\":")); p += 8) c = atof(p + 8);
        farm_set_cap(i, c);
        rs->code = 200;
        rs->body = strdup("{\"ok\":true}");
        rs->len = rs->body ? strlen(rs->body) : 0;
        return;
    }
    pfi_http_error(rs, 404, "not here");
}

static double metric(const char *url, const char *name)
{
    pfi_http_reply r;
    pfi_error e;
    char full[256];
    snprintf(full, sizeof full, "%s/metrics", url);
    if (pfi_http_request("GET", full, NULL, NULL, 30, &r, &e)) return NAN;
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = r.body ? strstr(r.body, key) : NULL;
    double v = p ? atof(p + strlen(key)) : NAN;
    pfi_http_reply_dispose(&r);
    return v;
}

/* the offer's last evaluation (GET /v1/offer: compute_s, the jobs in it); NaN: none */
static double offer_compute_s(const char *url, double *njobs)
{
    pfi_http_reply r;
    pfi_error e;
    char full[256];
    snprintf(full, sizeof full, "%s/v1/offer", url);
    *njobs = NAN;
    if (pfi_http_request("GET", full, NULL, NULL, 30, &r, &e)) return NAN;
    json_t *o = json_loadb(r.body, r.len, JSON_DECODE_ANY, NULL);
    int is = json_is_object(o);
    double s = is ? json_number_value(json_object_get(o, "compute_s")) : NAN;
    if (is) *njobs = (double)json_array_size(json_object_get(o, "jobs"));
    json_decref(o);
    pfi_http_reply_dispose(&r);
    return s;
}

/* the controller's /healthz: cycles, the last period's wall time; -1 when it does not answer */
static double g_phase[4];  /* the last /healthz's phases: collect, decide, persist, push */
static double g_agents_up; /* ... and the agents that answered its last period */

static int health(const char *url, double *cycles, double *period_s)
{
    pfi_http_reply r;
    pfi_error e;
    char full[256];
    snprintf(full, sizeof full, "%s/healthz", url);
    if (pfi_http_request("GET", full, NULL, NULL, 10, &r, &e)) return -1;
    json_t *o = r.body ? json_loads(r.body, 0, NULL) : NULL;
    pfi_http_reply_dispose(&r);
    if (!o) return -1;
    *cycles = json_number_value(json_object_get(o, "cycles"));
    *period_s = json_number_value(json_object_get(o, "period_s"));
    static const char *ph[4] = {"collect", "decide", "persist", "push"};
    for (int k = 0; k < 4; k++)
        g_phase[k] = json_number_value(json_object_get(json_object_get(o, "phase_s"), ph[k]));
    g_agents_up = json_number_value(json_object_get(o, "agents_up"));
    json_decref(o);
    return 0;
}

static int post_json(const char *url, const char *path, const char *token, const char *body,
                     long want)
{
    char full[256];
    snprintf(full, sizeof full, "%s%s", url, path);
    pfi_http_reply r;
    pfi_error e;
    if (pfi_http_request("POST", full, token, body, 10, &r, &e)) {
        fprintf(stderr, "bench_controller: POST %s: %s\n", path, e.msg);
        return -1;
    }
    int ok = r.code == want;
    if (!ok)
        fprintf(stderr, "bench_controller: POST %s: HTTP %ld %s\n", path, r.code,
                r.body ? r.body : "");
    pfi_http_reply_dispose(&r);
    return ok ? 0 : -1;
}

static int post_event(const char *url, const char *token, const char *id, double pct,
                      double *t_sent)
{
    char body[512], ts[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(
        body, sizeof body,
        "{\"id\":\"%s\",\"start\":\"%s\",\"duration_s\":600,\"reduction_pct\":%g,\"ramp_s\":0}", id,
        ts, pct);
    *t_sent = bench_now();
    return post_json(url, "/v1/events", token, body, 201);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the q-quantile of n sorted values (nearest rank) */
static double quant(const double *v, int n, double q)
{
    if (n <= 0) return NAN;
    int k = (int)ceil(q * n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (f) fputs(s, f), fclose(f);
}

static void make_token(const char *path, char *tok, size_t n)
{
    unsigned long long a =
        (unsigned long long)getpid() * 0x9E3779B97F4A7C15ull ^ (unsigned long long)time(NULL);
    snprintf(tok, n, "bench%016llx%016llx", a, a * 6364136223846793005ull + 1);
    write_text(path, tok);
    chmod(path, 0600);
}

/* a process's CPU seconds (user + system) and RSS / peak RSS in MiB from /proc */
static double proc_cpu_s(pid_t p)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *q = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return NAN;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* the voluntary context switches of every thread of p (/proc/p/task/N/status) */
static double proc_vcs(pid_t p)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task", (int)p);
    DIR *d = opendir(path);
    if (!d) return NAN;
    double sum = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char st[128], line[256];
        snprintf(st, sizeof st, "/proc/%d/task/%.32s/status", (int)p, de->d_name);
        FILE *f = fopen(st, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "voluntary_ctxt_switches:", 24)) sum += atof(line + 24);
        fclose(f);
    }
    closedir(d);
    return sum;
}

/* BENCH_CTL_IDLE=S (issue 43): the controller idle (no event; the
   configuration turns profiles off) for S seconds: its CPU seconds (all
   threads, /proc/PID/stat) and voluntary context switches (every thread)
   per minute; the farm is another process and is not counted */
static void idle_phase(pid_t p, unsigned nfarm, double period_s, double secs)
{
    double c0 = proc_cpu_s(p), v0 = proc_vcs(p), t0 = bench_now();
    while (bench_now() - t0 < secs) usleep(200000);
    double dt = bench_now() - t0, c = proc_cpu_s(p) - c0, v = proc_vcs(p) - v0;
    char what[128];
    printf("bench controller %u agents: idle %.0f s (no event, period %g s, no profiles)\n", nfarm,
           dt, period_s);
    snprintf(what, sizeof what, "controller %ux8 idle: CPU per minute", nfarm);
    BENCH_RESULT(what, c * 60 / dt, "s", "reported (issue 43: the loop sleeps)");
    snprintf(what, sizeof what, "controller %ux8 idle: voluntary context switches per minute",
             nfarm);
    BENCH_RESULT(what, v * 60 / dt, "", "reported");
}

static double proc_rss_mib(pid_t p, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)p);
    FILE *f = fopen(path, "r");
    double v = NAN;
    if (!f) return v;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field))) v = atof(line + strlen(field) + 1) / 1024;
    fclose(f);
    return v;
}

/* the triggers' agents, and those reached by datagram (trigger_figures) */
static unsigned long long g_trig_agents, g_trig_datagram;

/* trigger -> every cap written, in ms, from the controller's log lines */
static int trigger_figures(const char *log, double *ms, int max)
{
    FILE *f = fopen(log, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f) && n < max) {
        const char *p = strstr(line, "every cap written ");
        const char *q = strstr(line, ": caps pushed to ");
        if (p && q) {
            ms[n++] = atof(p + 18);
            unsigned to = 0, dg = 0;
            if (sscanf(q, ": caps pushed to %u agents in %*f ms (%u by datagram", &to, &dg) == 2)
                g_trig_agents += to, g_trig_datagram += dg;
        }
    }
    if (f) fclose(f);
    return n;
}

/* a trigger's request building time, in ms, from the same lines */
static int build_figures(const char *log, double *ms, int max)
{
    FILE *f = fopen(log, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f) && n < max) {
        const char *p = strstr(line, "requests built in ");
        if (p) ms[n++] = atof(p + 18);
    }
    if (f) fclose(f);
    return n;
}

/* BENCH_CTL_LOAD=1: one busy thread of the benchmark's own beside the farm
 * and the controller, for the whole measurement (a machine doing other
 * work); the load average is printed with the figures */
static atomic_int g_burn_stop;
static void *burn(void *arg)
{
    (void)arg;
    volatile unsigned long long x = 0;
    while (!atomic_load(&g_burn_stop)) x = x * 6364136223846793005ULL + 1;
    return NULL;
}

static double loadavg1(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l = NAN;
    if (f && fscanf(f, "%lf", &l) != 1) l = NAN;
    if (f) fclose(f);
    return l;
}

/* the farm's listeners: FARM_SLICE agents each, on ports of their own (one
 * destination port gives the controller at most 28,231 ephemeral source
 * ports: 25,000 agents need two), the slices after the first each in a
 * process of its own (an open-file limit per process: 20,000 here) */
#define FARM_SLICE 12500
#define FARM_MAX_SLICES 16

/* Profiles at job start (issue 31), before the event: every farm job (Flex 3) is
 * profiled once its baseline is steady — the controller steps its caps through
 * the schedule and back to the ceiling. Measures the periods while any job is
 * profiled (the profile rule and the memory of points at fleet scale) and how
 * many jobs were profiled and are back at the ceiling; then clears capped_at so
 * the event's figures count the event's caps alone. BENCH_CTL_PROFILE=0 skips it. */
static void profile_phase(const char *url, unsigned nfarm, double period_s)
{
    enum { MAXP = 512 };
    static double pers[MAXP];
    int n = 0, started = 0;
    unsigned ever = 0, now_capped = 0;
    double cy = 0, per = 0, last_cycles = -1, t0 = bench_now(), t_first = NAN,
           t_end = t0 + 120 + 80 * period_s;
    while (bench_now() < t_end) {
        usleep(50000);
        ever = now_capped = 0;
        pthread_mutex_lock(g_mu);
        for (unsigned i = 0; i < nfarm; i++) {
            if (g_farm[i].capped_at > 0) ever++;
            if (g_farm[i].cap_w < 699) now_capped++;
        }
        pthread_mutex_unlock(g_mu);
        if (!started && now_capped) started = 1, t_first = bench_now();
        if (started && ever == nfarm && now_capped == 0) break;
        if (health(url, &cy, &per) || !(cy > last_cycles)) continue;
        if (started && last_cycles >= 0 && n < MAXP) {
            if (getenv("BENCH_VERBOSE"))
                fprintf(stderr,
                        "profiling period %d: %.3f s (collect %.3f, decide %.3f, persist %.3f, "
                        "push %.3f), %u jobs below the ceiling\n",
                        n, per, g_phase[0], g_phase[1], g_phase[2], g_phase[3], now_capped);
            pers[n++] = per;
        }
        last_cycles = cy;
    }
    /* the caps handed back (the farm cannot tell whose a datagram without a job is: those go
       by HTTP after the datagram's 200 ms) settle before the event is measured */
    double c_end = cy, t_done = bench_now();
    while (bench_now() < t_end + 30 && (health(url, &cy, &per) || cy < c_end + 5)) usleep(50000);
    printf("bench controller %u agents: profiles at job start: %u of %u jobs profiled, %u still "
           "below the ceiling, first profile cap %.1f s after start-up, the profiles took %.1f s "
           "(%d periods measured)\n",
           nfarm, ever, nfarm, now_capped, t_first - t0, t_done - t_first, n);
    if (n) {
        char what[128];
        const char *target = nfarm >= 25000 ? "< 2" : nfarm >= 12500 ? "< 1" : "reported";
        qsort(pers, (size_t)n, sizeof *pers, cmp);
        snprintf(what, sizeof what, "controller %ux8 profiling: period p50", nfarm);
        BENCH_RESULT(what, quant(pers, n, 0.5), "s", target);
        snprintf(what, sizeof what, "controller %ux8 profiling: period p99", nfarm);
        BENCH_RESULT(what, quant(pers, n, 0.99), "s", target);
    }
    pthread_mutex_lock(g_mu);
    for (unsigned i = 0; i < nfarm; i++) g_farm[i].capped_at = 0;
    pthread_mutex_unlock(g_mu);
}

/* a slice of the farm in a child process: its port through the pipe, then
 * it serves until killed; -1 when it did not start */
static pid_t farm_child(const pfi_httpd_opts *o, int *port)
{
    int fd[2];
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        pfi_httpd *h;
        pfi_error e;
        int p = -1;
        if (pfi_httpd_start(o, &h, &p, &e)) p = -1;
        if (write(fd[1], &p, sizeof p) != (ssize_t)sizeof p || p < 0) _exit(1);
        close(fd[1]);
        for (;;) pause();
    }
    close(fd[1]);
    int p = -1;
    if (pid < 0 || read(fd[0], &p, sizeof p) != (ssize_t)sizeof p || p <= 0) {
        if (pid > 0) kill(pid, SIGKILL), waitpid(pid, NULL, 0);
        pid = -1;
    }
    close(fd[0]);
    *port = p;
    return pid;
}

static void farm_children_stop(pid_t *kids, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        if (kids[k] > 0) kill(kids[k], SIGTERM), waitpid(kids[k], NULL, 0), kids[k] = 0;
}

/* the CPU time of the farm's other processes */
static double farm_children_cpu(const pid_t *kids, unsigned n)
{
    double s = 0;
    for (unsigned k = 0; k < n; k++)
        if (kids[k] > 0) s += proc_cpu_s(kids[k]);
    return s;
}

static void scale_one(const char *ctl_bin, const char *dir, unsigned nfarm)
{
    char tokf[512], tok[128], cfg[600], portf[512], log[512], db[512], what[64];
    snprintf(tokf, sizeof tokf, "%s/token", dir);
    snprintf(cfg, sizeof cfg, "%s/farm%u.json", dir, nfarm);
    snprintf(portf, sizeof portf, "%s/farm%u.port", dir, nfarm);
    snprintf(log, sizeof log, "%s/farm%u-ctl.log", dir, nfarm);
    snprintf(db, sizeof db, "%s/farm%u.db", dir, nfarm);
    make_token(tokf, tok, sizeof tok);
    if (g_farm) munmap(g_mu, g_farm_bytes);
    g_farm_bytes = 4096 + (size_t)nfarm * sizeof *g_farm;
    void *shm = mmap(NULL, g_farm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED) return;
    g_mu = shm;
    g_ft_port_shared = (int *)((char *)shm + 2048);
    g_farm = (farm_agent *)((char *)shm + 4096);
    g_fo = (farm_fo *)((char *)shm + 3072);
    memset(g_fo, 0, sizeof *g_fo);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(g_mu, &ma);
    pthread_mutexattr_destroy(&ma);
    g_nfarm = nfarm;
    for (unsigned i = 0; i < nfarm; i++) {
        g_farm[i].cap_w = 700;
        g_farm[i].gen_max = 0, g_farm[i].lease_until = 0;
        g_farm[i].uncapped_w = 520 + 150 * (double)((i * 37) % 100) / 100;
        g_farm[i].tokens_per_s_max = 20000 + 500 * (double)(i % 50);
        g_farm[i].pfi = 0.4 + 2.0 * (double)((i * 53) % 100) / 100;
    }
    const char *sl = getenv("BENCH_CTL_SLICE"); /* agents per farm process (12,500) */
    unsigned slice = sl && atoi(sl) > 0 ? (unsigned)atoi(sl) : FARM_SLICE;
    unsigned nslice = (nfarm + slice - 1) / slice;
    if (nslice > FARM_MAX_SLICES) return;
    pfi_httpd_opts o = {.listen = "127.0.0.1:0",
                        .max_body = 1 << 20,
                        .max_connections = 2 * (nfarm < slice ? nfarm : slice) + 64,
                        .max_per_ip =
                            PFI_HTTPD_PER_IP_OFF, /* every agent of the farm is 127.0.0.1 */
                        .token = tok,
                        .is_protected = farm_protected,
                        .handle = farm_handle};
    pfi_httpd *h;
    int ports[FARM_MAX_SLICES], fport;
    pid_t kids[FARM_MAX_SLICES] = {0};
    pfi_error e;
    /* the children first: fork before this process has threads */
    for (unsigned k = 1; k < nslice; k++)
        if ((kids[k] = farm_child(&o, &ports[k])) < 0) {
            printf("bench controller %u agents: a farm process did not start\n", nfarm);
            farm_children_stop(kids, k);
            return;
        }
    if (pfi_httpd_start(&o, &h, &ports[0], &e)) {
        printf("bench controller %u agents: farm did not start: %s\n", nfarm, e.msg);
        farm_children_stop(kids, nslice);
        return;
    }
    fport = ports[0];
    pthread_t ft_tid;
    g_ft_port = 0;
    g_ft_taken = g_ft_views = 0;
    snprintf(g_ft_token, sizeof g_ft_token, "%s", tok);
    if (!(getenv("BENCH_CTL_NO_FAST") && atoi(getenv("BENCH_CTL_NO_FAST")))) {
        atomic_store(&g_ft_stop, 0);
        if (pfi_ft_socket("127.0.0.1:0", fport, 64 << 20, &g_ft_fd, &g_ft_port, &e) ||
            pthread_create(&ft_tid, NULL, farm_fast_thread, NULL)) {
            printf("bench controller %u agents: no fast trigger datagrams: %s\n", nfarm, e.msg);
            g_ft_port = 0;
        }
    }
    *g_ft_port_shared = g_ft_port;
    FILE *f = fopen(cfg, "w");
    if (!f) return;
    /* BENCH_CTL_PERIOD (1 s): a longer one shows a trigger's fan-out between periods (at
       1 s most triggers land in a collection at 12,500 agents) */
    const char *pe = getenv("BENCH_CTL_PERIOD"), *ie = getenv("BENCH_CTL_IDLE"),
               *oe = getenv("BENCH_CTL_OFFER");
    double offer_s = oe ? atof(oe) : 30; /* the offer's interval (the daemon's default) */
    double period_s = pe && atof(pe) >= 0.1 ? atof(pe) : 1, idle_s = ie ? atof(ie) : 0;
    /* BENCH_CTL_OFFER=none: no "offer" key, for a controller from before it
       (PFI_CONTROLLER_BIN of an older build: a baseline on the same machine) */
    char offer[128] = "";
    if (!oe || strcmp(oe, "none"))
        snprintf(offer, sizeof offer, "\"offer\": {\"interval_s\": %g}, ", offer_s);
    /* BENCH_CTL_DEEP=K: the profiles' deep points (the daemon's default: 4) */
    const char *de = getenv("BENCH_CTL_DEEP");
    if (de)
        snprintf(offer + strlen(offer), sizeof offer - strlen(offer),
                 "\"profile_deep_points\": %d, ", atoi(de));
    /* BENCH_CTL_ETCD: failover on that etcd (bench_failover.h); BENCH_CTL_KILLS=K:
       a second controller, K leader kills, the agents' lease at 15 s */
    static char fo[4096];
    fo_config(fo, sizeof fo, "ctl-a");
    const char *ke = getenv("BENCH_CTL_KILLS");
    int kills = fo[0] ? (ke ? atoi(ke) : 20) : 0;
    fprintf(f,
            "{\"listen\": \"127.0.0.1:0\", \"token_file\": \"%s\", \"db\": \"%s\", "
            "\"control_period_s\": %g, \"baseline_window_s\": %g, \"lease_s\": %g, "
            "\"ramp_s\": 0, \"default_tier\": 3, %s%s%s\"agents\": [",
            tokf, db, period_s, 3 * period_s, kills > 0 ? 15 : fmax(60, 3 * period_s),
            idle_s > 0 ? "\"profile\": false, " : "", offer, fo);
    for (unsigned i = 0; i < nfarm; i++)
        fprintf(f,
                "%s{\"name\": \"farm%u\", \"url\": \"http://a%u.localhost:%d/a/%u\", "
                "\"token_file\": \"%s\"}",
                i ? ", " : "", i, i, ports[i / slice], i, tokf);
    fprintf(f, "]}\n");
    fclose(f);
    char *argv[] = {(char *)ctl_bin, "--config", cfg, "--port-file", portf, NULL};
    double t_start = bench_now();
    pid_t p = bench_spawn(argv, log);
    int cport = bench_read_port(portf, p, 300); /* 12,500 agents take a while */
    if (cport < 0) {
        printf("bench controller %u agents: controller did not start (see %s)\n", nfarm, log);
        kill(p, SIGTERM);
        waitpid(p, NULL, 0);
        pfi_httpd_stop(h);
        farm_children_stop(kids, nslice);
        farm_fast_stop(ft_tid, nfarm);
        return;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", cport);
    fo_ctl foc[2] = {{.pid = p, .restarts = 1}, {0}};
    if (kills > 0) { /* the follower, ctl-b */
        snprintf(foc[0].cfg, sizeof foc[0].cfg, "%s", cfg);
        snprintf(foc[0].log, sizeof foc[0].log, "%s", log);
        snprintf(foc[0].portf, sizeof foc[0].portf, "%s", portf);
        snprintf(foc[0].url, sizeof foc[0].url, "%s", url);
        snprintf(foc[1].log, sizeof foc[1].log, "%s.b", log);
        snprintf(foc[1].portf, sizeof foc[1].portf, "%s.b", portf);
        if (fo_config_b(cfg, db, foc[1].cfg, sizeof foc[1].cfg) || fo_start(ctl_bin, &foc[1])) {
            printf("bench controller %u agents: the second controller did not start\n", nfarm);
            kills = 0;
        }
    }
    double cy = 0, per = 0;
    /* baselines over the window: 4 periods */
    while (bench_now() - t_start < 300 + 5 * period_s && (health(url, &cy, &per) || cy < 4))
        usleep(100000);
    double startup_s = bench_now() - t_start;
    if (idle_s > 0) idle_phase(p, nfarm, period_s, idle_s);
    const char *pr = getenv("BENCH_CTL_PROFILE");
    if (!(pr && atoi(pr) == 0)) profile_phase(url, nfarm, period_s);
    double t_sent;
    pthread_t burner;
    const char *ld = getenv("BENCH_CTL_LOAD");
    int load = ld && atoi(ld) > 0;
    atomic_store(&g_burn_stop, 0);
    if (load && pthread_create(&burner, NULL, burn, NULL)) load = 0;
    const char *np = getenv("BENCH_CTL_PERIODS"); /* periods measured (20; p99 wants 100) */
    int nper = np && atoi(np) > 0 ? atoi(np) : 20;
    double min_up = INFINITY;
    if (post_event(url, tok, "bench-farm", 20, &t_sent) == 0) {
        enum { MAXP = 512 };
        if (nper > MAXP) nper = MAXP;
        static double pers[MAXP], phases[4][MAXP];
        int n = 0;
        double last_cycles = cy, c_cpu0 = proc_cpu_s(p),
               f_cpu0 = bench_cpu() + farm_children_cpu(kids, nslice), cy0 = -1,
               t_end = bench_now() + (2 * nper + 20) * period_s;
        while (bench_now() < t_end && n < nper) {
            usleep(50000);
            if (health(url, &cy, &per) || !(cy > last_cycles)) continue;
            if (cy0 < 0) { /* the window starts at the first period after the POST */
                cy0 = cy, c_cpu0 = proc_cpu_s(p),
                f_cpu0 = bench_cpu() + farm_children_cpu(kids, nslice), last_cycles = cy;
                continue;
            }
            last_cycles = cy;
            for (int k = 0; k < 4; k++) phases[k][n] = g_phase[k];
            if (g_agents_up < min_up) min_up = g_agents_up;
            pers[n++] = per;
        }
        double c_cpu = proc_cpu_s(p) - c_cpu0,
               f_cpu = bench_cpu() + farm_children_cpu(kids, nslice) - f_cpu0,
               periods = last_cycles - cy0;
        double rss = proc_rss_mib(p, "VmRSS:"), hwm = proc_rss_mib(p, "VmHWM:");
        double up = metric(url, "pfi_ctl_agents_up");
        int capped = 0;
        double last = 0;
        pthread_mutex_lock(g_mu);
        for (unsigned i = 0; i < nfarm; i++)
            if (g_farm[i].capped_at > 0) capped++, last = fmax(last, g_farm[i].capped_at - t_sent);
        pthread_mutex_unlock(g_mu);
        if (getenv("BENCH_VERBOSE"))
            for (int k = 0; k < n; k++) fprintf(stderr, "period %d: %.3f s\n", k, pers[k]);
        qsort(pers, (size_t)n, sizeof *pers, cmp);
        printf("bench controller: %u agents x %d GPUs: %.0f up (at least %.0f in every period "
               "measured), %d of %u capped by the event, %d periods measured, start-up %.1f s; "
               "%s, load average %.2f\n",
               nfarm, GPUS, up, min_up, capped, nfarm, n, startup_s,
               load ? "one busy thread beside it (BENCH_CTL_LOAD)" : "no added load", loadavg1());
        if (n) {
            snprintf(what, sizeof what, "controller %ux8: period p50", nfarm);
            const char *target = nfarm >= 25000 ? "< 2" : nfarm >= 12500 ? "< 1" : "reported";
            BENCH_RESULT(what, quant(pers, n, 0.5), "s", target);
            snprintf(what, sizeof what, "controller %ux8: period p99", nfarm);
            BENCH_RESULT(what, quant(pers, n, 0.99), "s", target);
            snprintf(what, sizeof what, "controller %ux8: period max", nfarm);
            BENCH_RESULT(what, pers[n - 1], "s", "reported");
        }
        if (n) {
            for (int k = 0; k < 4; k++) qsort(phases[k], (size_t)n, sizeof **phases, cmp);
            printf("bench controller %u agents: a period's steps (p50): collect %.3f s, decide "
                   "%.3f s, persist %.3f s, push %.3f s\n",
                   nfarm, quant(phases[0], n, 0.5), quant(phases[1], n, 0.5),
                   quant(phases[2], n, 0.5), quant(phases[3], n, 0.5));
        }
        if (periods > 0) {
            snprintf(what, sizeof what, "controller %ux8: controller CPU per period", nfarm);
            BENCH_RESULT(what, c_cpu / periods, "s", "reported");
            snprintf(what, sizeof what, "controller %ux8: farm CPU per period", nfarm);
            BENCH_RESULT(what, f_cpu / periods, "s", "reported (shares the machine)");
        }
        double offer_jobs, offer_eval_s = offer_compute_s(url, &offer_jobs);
        if (isfinite(offer_eval_s)) {
            snprintf(what, sizeof what, "controller %ux8: offer evaluation, %.0f jobs", nfarm,
                     offer_jobs);
            BENCH_RESULT(what, offer_eval_s, "s", "reported (off the period's path)");
        }
        snprintf(what, sizeof what, "controller %ux8: controller RSS", nfarm);
        const char *rss_target = nfarm > 12500 ? "< 2048" : "< 1024";
        BENCH_RESULT(what, rss, "MiB", rss_target);
        snprintf(what, sizeof what, "controller %ux8: controller peak RSS", nfarm);
        BENCH_RESULT(what, hwm, "MiB", rss_target);
        snprintf(what, sizeof what, "controller %ux8: event POST -> last capped", nfarm);
        BENCH_RESULT(what, last, "s", "reported");
        /* triggers, each deeper (the fast path only lowers caps), 2 periods apart */
        const char *nt = getenv("BENCH_CTL_TRIGGERS");
        int ntrig = nt ? atoi(nt) : 8;
        if (ntrig > 40) ntrig = 40;
        for (int k = 0; k < ntrig && k < 40; k++) {
            char body[128];
            snprintf(body, sizeof body, "{\"reduction_pct\": %d, \"duration_s\": 600}", 22 + 2 * k);
            if (post_json(url, "/v1/trigger", tok, body, 201)) break;
            double c0 = cy;
            t_end = bench_now() + 30 * period_s;
            while (bench_now() < t_end && (health(url, &cy, &per) || cy < c0 + 2)) usleep(50000);
        }
        if (kills > 0) fo_kills(ctl_bin, foc, nfarm, period_s, kills);
        p = foc[0].pid;
        usleep(500000);
        double ms[64];
        int nm = trigger_figures(log, ms, 64);
        {
            double bms[64];
            int nb = build_figures(log, bms, 64);
            qsort(bms, (size_t)nb, sizeof *bms, cmp);
            if (nb)
                printf("bench controller %u agents: a trigger's requests built in %.1f ms (p50)\n",
                       nfarm, quant(bms, nb, 0.5));
        }
        atomic_store(&g_burn_stop, 1);
        qsort(ms, (size_t)nm, sizeof *ms, cmp);
        printf("bench controller %u agents: %d triggers measured; triggers' caps by datagram to "
               "%llu of %llu agents "
               "(the rest by HTTP)\n",
               nfarm, nm, g_trig_datagram, g_trig_agents);
        g_trig_agents = g_trig_datagram = 0;
        if (nm) {
            snprintf(what, sizeof what, "controller %ux8: trigger -> every cap p50", nfarm);
            BENCH_RESULT(what, quant(ms, nm, 0.5), "ms", nfarm >= 12500 ? "< 200" : "reported");
            snprintf(what, sizeof what, "controller %ux8: trigger -> every cap p99", nfarm);
            BENCH_RESULT(what, quant(ms, nm, 0.99), "ms", nfarm >= 12500 ? "< 200" : "reported");
        } else {
            printf("bench controller %u agents: no trigger figure in %s\n", nfarm, log);
        }
    }
    atomic_store(&g_burn_stop, 1);
    if (load) pthread_join(burner, NULL);
    if (foc[1].pid > 0) bench_stop(foc[1].pid);
    kill(p, SIGTERM);
    int status = 0;
    waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) { /* e.g. a sanitizer's report */
        printf("bench controller %u agents: the controller exited with status %d; its log:\n",
               nfarm, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        char cmd[700];
        snprintf(cmd, sizeof cmd, "tail -n 40 '%s'", log);
        if (system(cmd) != 0) printf("(no log)\n");
    }
    pfi_httpd_stop(h);
    farm_children_stop(kids, nslice);
    farm_fast_stop(ft_tid, nfarm);
}

static void scale_bench(const char *ctl_bin, const char *dir)
{
    const char *list = getenv("BENCH_CTL_AGENTS");
    g_full_node = getenv("BENCH_CTL_FULL_NODE") && atoi(getenv("BENCH_CTL_FULL_NODE"));
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list && *list ? list : "100,1000,5000,12500");
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long n = strtol(t, NULL, 10);
        if (n > 0 && n <= 100000) scale_one(ctl_bin, dir, (unsigned)n);
    }
}

/* ---- 4 real agents, the demo's shape ---- */
/* every GPU's cap (caps[agent][gpu]) and the power of all GPUs summed, from each agent's
 * /v1/node; -1 when an agent does not answer */
static int node_caps(char urls[][64], int n, double caps[][8], double *power_w)
{
    *power_w = 0;
    for (int i = 0; i < n; i++) {
        pfi_http_reply r;
        pfi_error e;
        if (pfi_agent_get(urls[i], "/v1/node", 2, &r, &e)) return -1;
        json_t *o = r.body ? json_loads(r.body, 0, NULL) : NULL;
        pfi_http_reply_dispose(&r);
        size_t k;
        json_t *g;
        if (!o) return -1;
        json_array_foreach(json_object_get(o, "gpus"), k, g) if (k < 8)
        {
            caps[i][k] = json_number_value(json_object_get(g, "cap_w"));
            /* delivery: the instant reading where the driver has it (NVML field 186), which
               follows a cap within one sample; else the 1 s average */
            json_t *pi = json_object_get(g, "power_instant_w");
            *power_w += json_number_value(pi ? pi : json_object_get(g, "power_w"));
        }
        json_decref(o);
    }
    return 0;
}

/* every GPU capped below its maximum */
static int all_capped(double caps[][8], int n)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 8; k++)
            if (!(caps[i][k] < 699)) return 0;
    return 1;
}

/* an event's target_w from the controller (NaN until it started) */
static double event_target_w(const char *url, const char *id)
{
    char full[256];
    snprintf(full, sizeof full, "%s/v1/events/%s", url, id);
    pfi_http_reply r;
    pfi_error e;
    if (pfi_http_request("GET", full, NULL, NULL, 5, &r, &e)) return NAN;
    json_t *o = r.body ? json_loads(r.body, 0, NULL) : NULL;
    pfi_http_reply_dispose(&r);
    json_t *t = json_object_get(o, "target_w");
    double v = json_is_number(t) ? json_number_value(t) : NAN;
    json_decref(o);
    return v;
}

static void demo_latency(const char *ctl_bin, const char *agent_bin, const char *dir)
{
    static const char *jobs[4] = {"moe-ft-qwen30ba3b-x8", "dense-pt-llama70b-x8-compile",
                                  "moe-pt-gptoss20b-x8-ep1-nocompile",
                                  "dense-ft-llama70b-x8-compile"}; /* the demo's */
    char tokf[512], tok[128], urls[4][64];
    pid_t ap[4];
    snprintf(tokf, sizeof tokf, "%s/demo-token", dir);
    make_token(tokf, tok, sizeof tok);
    int n = 0;
    for (int i = 0; i < 4; i++) {
        char be[256];
        /* the sim backend's default response model (delay 0.05 s, tau 0.1 s: docs/agent.md) */
        snprintf(be, sizeof be, "sim:gpus=8,job=job%d:%s@0-7,load=0,seed=%d", i + 1, jobs[i],
                 i + 1);
        int port = bench_start_agent(agent_bin, dir, i, be, tokf, "0.1", &ap[i]);
        if (port < 0) {
            printf("bench controller demo: agent %d did not start (see %s/a%d.log)\n", i, dir, i);
            for (int k = 0; k <= i; k++) kill(ap[k], SIGTERM), waitpid(ap[k], NULL, 0);
            return;
        }
        snprintf(urls[i], sizeof urls[i], "http://127.0.0.1:%d", port);
        n++;
    }
    char log[512];
    snprintf(log, sizeof log, "%s/demo-ctl.log", dir);
    pid_t p;
    int cport = bench_start_demo_controller(ctl_bin, dir, "demo", tokf, urls, n, log, &p);
    if (cport >= 0) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", cport);
        sleep(12); /* jobs warm up; baselines over the window (period 5 s) */
        double caps[4][8], pw = NAN, t_sent, t_caps = NAN, t_power = NAN;
        /* the first: an event that starts now; caps and then measured power at target */
        if (post_event(url, tok, "bench-demo", 30, &t_sent) == 0) {
            double target = NAN;
            while (bench_now() - t_sent < 15) {
                if (node_caps(urls, n, caps, &pw) == 0) {
                    if (isnan(t_caps) && all_capped(caps, n)) t_caps = bench_now() - t_sent;
                    if (isnan(target)) target = event_target_w(url, "bench-demo");
                    if (!isnan(t_caps) && pw <= target * 1.02) {
                        t_power = bench_now() - t_sent;
                        break;
                    }
                }
                usleep(5000);
            }
            printf("bench controller demo: 4 agents x 8 simulated H200, control period 5 s, event "
                   "start now, no ramp; target %.0f W, measured %.0f W\n",
                   target, pw);
            BENCH_RESULT("controller demo: event POST -> all 32 caps in /v1/node", t_caps, "s",
                         "reported (sampled every 0.1 s)");
            BENCH_RESULT("controller demo: event POST -> power within 2% of target", t_power, "s",
                         "< 1 (sim response model)");
        }
        /* then triggers, each deeper; trigger -> every cap written (each agent answered
           its PUT, which it does once the caps are applied) from the controller's log: the
           agents' /v1/node shows caps as last sampled (every 0.1 s here) */
        for (int k = 0; k < 10; k++) {
            char body[96];
            snprintf(body, sizeof body, "{\"reduction_pct\": %d, \"duration_s\": 300}", 32 + 2 * k);
            if (post_json(url, "/v1/trigger", tok, body, 201)) break;
            sleep(1);
        }
        double ms[64];
        int nl = trigger_figures(log, ms, 64);
        qsort(ms, (size_t)nl, sizeof *ms, cmp);
        if (nl) {
            printf("bench controller demo: %d triggers (the event, then POST /v1/trigger, deeper "
                   "each time)\n",
                   nl);
            BENCH_RESULT("controller demo: trigger -> all 32 caps written p50", quant(ms, nl, 0.5),
                         "ms", "< 100");
            BENCH_RESULT("controller demo: trigger -> all 32 caps written p99", quant(ms, nl, 0.99),
                         "ms", "< 100");
        }
        kill(p, SIGTERM);
        waitpid(p, NULL, 0);
    } else {
        printf("bench controller demo: controller did not start (see %s)\n", log);
        if (p > 0) kill(p, SIGTERM), waitpid(p, NULL, 0);
    }
    for (int i = 0; i < n; i++) kill(ap[i], SIGTERM), waitpid(ap[i], NULL, 0);
}

int main(void)
{
    const char *ctl = getenv("PFI_CONTROLLER_BIN"), *agent = getenv("PFI_AGENT_BIN");
    if (!ctl || !agent) {
        fprintf(stderr, "bench_controller: set PFI_CONTROLLER_BIN and PFI_AGENT_BIN "
                        "(scripts/run-bench.sh does)\n");
        return 2;
    }
    /* 25,000 agents: 25,000 connections on each side, and the controller
       inherits the limit: the hard limit raised where allowed (root) */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_max < 65536) {
            struct rlimit more = {65536, 65536};
            if (setrlimit(RLIMIT_NOFILE, &more) == 0) rl = more;
            else
                printf("bench controller: open-file hard limit %llu (not raised: %s): about %llu "
                       "agents at most\n",
                       (unsigned long long)rl.rlim_max, strerror(errno),
                       (unsigned long long)rl.rlim_max * 4 / 5);
        }
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/pfi-bench-ctl-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    const char *demo = getenv("BENCH_CTL_DEMO"); /* 0: the scaling curve only */
    scale_bench(ctl, dir);
    if (!demo || strcmp(demo, "0")) demo_latency(ctl, agent, dir);
    if (getenv("BENCH_KEEP")) { /* the logs, for a closer look */
        printf("bench controller: logs kept in %s\n", dir);
        return 0;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return 0;
}
