/* bench_controller.c — pfi-controller's speed, wall clock at time scale 1:
 *  - scale: 1,000 simulated agents x 8 GPUs served by one process on
 *    loopback (a "farm": one HTTP server, URL prefix /a/<i>/ per agent, one
 *    job of 8 GPUs per agent whose power follows its cap), a real
 *    pfi-controller with control period 1 s; during a 20% event it reads
 *    pfi_ctl_period_seconds (one whole period: GET /v1/node from all
 *    agents, allocate, PUT /v1/caps to all) and reports median and max
 *    (target < 1 s), and the time from POST /v1/events to the last of the
 *    1,000 agents holding its new cap;
 *  - latency on the demo's shape: 4 real pfi-agent processes (8 simulated
 *    H200 each, jobs of the reconstruction), controller period 5 s (the
 *    default): time from POST /v1/events (start now, no ramp) until every
 *    agent reports every GPU at its new cap (target < 2 s; Emerald's field
 *    trial: 30 s).
 * Needs PFI_CONTROLLER_BIN and PFI_AGENT_BIN (scripts/run-bench.sh sets
 * them); raises its open-file limit. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_client.h"
#include "bench_common.h"
#include "bench_procs.h"
#include "caps_request.h"
#include "httpd.h"

#define NFARM 1000
#define GPUS 8

/* ---- the farm: NFARM fake agents behind one server ---- */
static struct {
    double cap_w;            /* per GPU */
    double uncapped_w;       /* per GPU, what the job draws without a cap */
    double tokens_per_s_max; /* job tokens/s at full power */
    double pfi;              /* throughput loss per power cut, roughly */
    double capped_at;        /* wall time the first cap below baseline arrived */
} g_farm[NFARM];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static int farm_protected(void *ud, const char *method, const char *url)
{
    (void)ud, (void)url;
    return strcmp(method, "GET") != 0;
}

static void farm_handle(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    (void)ud;
    unsigned i = 0;
    char rest[64] = "";
    if (sscanf(rq->url, "/a/%u/%63s", &i, rest) != 2 || i >= NFARM) {
        pfi_http_error(rs, 404, "no such agent");
        return;
    }
    pthread_mutex_lock(&g_mu);
    double cap = g_farm[i].cap_w, unc = g_farm[i].uncapped_w, tmax = g_farm[i].tokens_per_s_max,
           pfi = g_farm[i].pfi;
    pthread_mutex_unlock(&g_mu);
    if (!strcmp(rest, "v1/node") && !strcmp(rq->method, "GET")) {
        double p = fmin(cap, unc) - 2.0 * (double)(i % 3);
        double tok = tmax * fmax(0.3, 1 - pfi * (1 - fmin(cap, unc) / unc));
        char id[32];
        snprintf(id, sizeof id, "job%u", i);
        json_t *gpus = json_array(), *ix = json_array();
        for (int g = 0; g < GPUS; g++) {
            char uuid[64];
            snprintf(uuid, sizeof uuid, "GPU-farm-%04u-%d", i, g);
            json_array_append_new(
                gpus, json_pack("{s:i,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:s}", "index", g, "uuid",
                                uuid, "name", "NVIDIA H200 (farm)", "cap_min_w", 200.0, "cap_max_w",
                                700.0, "cap_default_w", 700.0, "cap_w", cap, "enforced_w", cap,
                                "power_w", p, "job_id", id));
            json_array_append_new(ix, json_integer(g));
        }
        json_t *job = json_pack("{s:s,s:o,s:s,s:f,s:f,s:f,s:{}}", "job_id", id, "gpus", ix,
                                "source", "farm", "power_w", p * GPUS, "tokens_per_s", tok,
                                "pfi_predicted", pfi, "training_means");
        json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:n,s:i,s:o,s:[o]}", "hostname", "farm", "backend",
                              "farm", "time", (double)time(NULL), "time_scale", 1.0, "lease",
                              "generation_max", 0, "gpus", gpus, "jobs", job);
        rs->code = 200;
        rs->body = json_dumps(o, JSON_COMPACT);
        rs->len = rs->body ? strlen(rs->body) : 0;
        json_decref(o);
        return;
    }
    if (!strcmp(rest, "v1/caps") && !strcmp(rq->method, "PUT")) {
        /* large, and the server's threads answer requests at once: one each */
        pfi_caps_request *r = malloc(sizeof *r);
        pfi_error e;
        if (!r) {
            pfi_http_error(rs, 500, "out of memory");
            return;
        }
        if (pfi_caps_request_parse(rq->body, rq->len, r, &e)) {
            free(r);
            pfi_http_error(rs, 400, "%s", e.msg);
            return;
        }
        double c = 700;
        for (size_t k = 0; k < r->njobs; k++) c = r->jobs[k].cap_w;
        free(r);
        pthread_mutex_lock(&g_mu);
        g_farm[i].cap_w = c;
        if (c < 699 && !(g_farm[i].capped_at > 0)) g_farm[i].capped_at = bench_now();
        pthread_mutex_unlock(&g_mu);
        rs->code = 200;
        rs->body = strdup("{\"ok\":true}");
        rs->len = strlen(rs->body);
        return;
    }
    pfi_http_error(rs, 405, "not here");
}

static double metric(const char *url, const char *name)
{
    pfi_http_reply r;
    pfi_error e;
    char full[256];
    snprintf(full, sizeof full, "%s/metrics", url);
    if (pfi_http_request("GET", full, NULL, NULL, 5, &r, &e)) return NAN;
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = r.body ? strstr(r.body, key) : NULL;
    double v = p ? atof(p + strlen(key)) : NAN;
    pfi_http_reply_dispose(&r);
    return v;
}

static int post_event(const char *url, const char *token, const char *id, double pct,
                      double *t_sent)
{
    char body[512], ts[64], full[256];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(
        body, sizeof body,
        "{\"id\":\"%s\",\"start\":\"%s\",\"duration_s\":600,\"reduction_pct\":%g,\"ramp_s\":0}", id,
        ts, pct);
    snprintf(full, sizeof full, "%s/v1/events", url);
    pfi_http_reply r;
    pfi_error e;
    *t_sent = bench_now();
    if (pfi_http_request("POST", full, token, body, 5, &r, &e)) {
        fprintf(stderr, "bench_controller: POST: %s\n", e.msg);
        return -1;
    }
    int ok = r.code == 201;
    if (!ok) fprintf(stderr, "bench_controller: POST: HTTP %ld %s\n", r.code, r.body ? r.body : "");
    pfi_http_reply_dispose(&r);
    return ok ? 0 : -1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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

static void scale_bench(const char *ctl_bin, const char *dir)
{
    char tokf[512], tok[128], cfg[600], portf[512], log[512], db[512];
    snprintf(tokf, sizeof tokf, "%s/token", dir);
    snprintf(cfg, sizeof cfg, "%s/farm.json", dir);
    snprintf(portf, sizeof portf, "%s/farm.port", dir);
    snprintf(log, sizeof log, "%s/farm-ctl.log", dir);
    snprintf(db, sizeof db, "%s/farm.db", dir);
    make_token(tokf, tok, sizeof tok);
    for (int i = 0; i < NFARM; i++) {
        g_farm[i].cap_w = 700;
        g_farm[i].uncapped_w = 520 + 150 * (double)((i * 37) % 100) / 100;
        g_farm[i].tokens_per_s_max = 20000 + 500 * (double)(i % 50);
        g_farm[i].pfi = 0.4 + 2.0 * (double)((i * 53) % 100) / 100;
    }
    pfi_httpd_opts o = {.listen = "127.0.0.1:0",
                        .max_body = 1 << 20,
                        .max_connections = 4 * NFARM,
                        .max_per_ip = 4 * NFARM, /* every agent of the farm is 127.0.0.1 */
                        .token = tok,
                        .is_protected = farm_protected,
                        .handle = farm_handle};
    pfi_httpd *h;
    int fport;
    pfi_error e;
    if (pfi_httpd_start(&o, &h, &fport, &e)) {
        printf("bench controller 1000 agents: farm did not start: %s\n", e.msg);
        return;
    }
    FILE *f = fopen(cfg, "w");
    if (!f) return;
    fprintf(f,
            "{\"listen\": \"127.0.0.1:0\", \"token_file\": \"%s\", \"db\": \"%s\", "
            "\"control_period_s\": 1, "
            "\"baseline_window_s\": 3, \"lease_s\": 60, \"ramp_s\": 0, \"default_tier\": 3, "
            "\"agents\": [",
            tokf, db);
    for (int i = 0; i < NFARM; i++)
        fprintf(f,
                "%s{\"name\": \"farm%d\", \"url\": \"http://127.0.0.1:%d/a/%d\", \"token_file\": "
                "\"%s\"}",
                i ? ", " : "", i, fport, i, tokf);
    fprintf(f, "]}\n");
    fclose(f);
    char *argv[] = {(char *)ctl_bin, "--config", cfg, "--port-file", portf, NULL};
    pid_t p = bench_spawn(argv, log);
    int cport = bench_read_port(portf, p);
    if (cport < 0) {
        printf("bench controller 1000 agents: controller did not start (see %s)\n", log);
        pfi_httpd_stop(h);
        return;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", cport);
    sleep(5); /* baselines over the window */
    double idle_period = metric(url, "pfi_ctl_period_seconds"),
           up = metric(url, "pfi_ctl_agents_up");
    double t_sent;
    if (post_event(url, tok, "bench-farm", 20, &t_sent) == 0) {
        double per[64];
        int n = 0;
        double last_cycles = metric(url, "pfi_ctl_cycles_total");
        double t_end = bench_now() + 20;
        while (bench_now() < t_end && n < 64) {
            usleep(100000);
            double cy = metric(url, "pfi_ctl_cycles_total");
            if (cy > last_cycles) {
                last_cycles = cy;
                double v = metric(url, "pfi_ctl_period_seconds");
                if (isfinite(v)) per[n++] = v;
            }
        }
        double last = 0;
        int capped = 0;
        pthread_mutex_lock(&g_mu);
        for (int i = 0; i < NFARM; i++)
            if (g_farm[i].capped_at > 0) capped++, last = fmax(last, g_farm[i].capped_at - t_sent);
        pthread_mutex_unlock(&g_mu);
        if (getenv("BENCH_VERBOSE"))
            for (int k = 0; k < n; k++) fprintf(stderr, "period %d: %.3f s\n", k, per[k]);
        qsort(per, (size_t)n, sizeof *per, cmp);
        printf("bench controller: %d agents x %d GPUs (%.0f up), %d periods measured during the "
               "event; idle period %.3f s\n",
               NFARM, GPUS, up, n, idle_period);
        if (n) {
            BENCH_RESULT("controller 1000x8 GPUs: period (collect+allocate+push) p50", per[n / 2],
                         "s", "< 1");
            BENCH_RESULT("controller 1000x8 GPUs: period max", per[n - 1], "s", "< 1");
        }
        printf("bench controller 1000 agents: %d of %d capped after the event\n", capped, NFARM);
        BENCH_RESULT("controller 1000x8 GPUs: event POST -> last agent capped", last, "s",
                     "reported");
    }
    kill(p, SIGTERM);
    waitpid(p, NULL, 0);
    pfi_httpd_stop(h);
}

/* ---- 4 real agents, the demo's shape ---- */
static int all_capped(char urls[][64], int n)
{
    for (int i = 0; i < n; i++) {
        pfi_http_reply r;
        pfi_error e;
        if (pfi_agent_get(urls[i], "/v1/node", 2, &r, &e)) return 0;
        json_t *o = r.body ? json_loads(r.body, 0, NULL) : NULL;
        pfi_http_reply_dispose(&r);
        size_t k;
        json_t *g;
        int ok = o != NULL;
        json_array_foreach(json_object_get(o, "gpus"), k,
                           g) if (!(json_number_value(json_object_get(g, "cap_w")) < 699)) ok = 0;
        json_decref(o);
        if (!ok) return 0;
    }
    return 1;
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
        snprintf(be, sizeof be, "sim:gpus=8,job=job%d:%s@0-7,load=0,seed=%d", i + 1, jobs[i],
                 i + 1);
        int port = bench_start_agent(agent_bin, dir, i, be, tokf, "0.5", &ap[i]);
        if (port < 0) {
            printf("bench controller demo: agent %d did not start (see %s/a%d.log)\n", i, dir, i);
            for (int k = 0; k <= i; k++) kill(ap[k], SIGTERM), waitpid(ap[k], NULL, 0);
            return;
        }
        snprintf(urls[i], sizeof urls[i], "http://127.0.0.1:%d", port);
        n++;
    }
    char cfg[512], portf[512], log[512], db[512];
    snprintf(cfg, sizeof cfg, "%s/demo.json", dir);
    snprintf(portf, sizeof portf, "%s/demo.port", dir);
    snprintf(log, sizeof log, "%s/demo-ctl.log", dir);
    snprintf(db, sizeof db, "%s/demo.db", dir);
    FILE *f = fopen(cfg, "w");
    if (!f) return;
    fprintf(f,
            "{\"listen\": \"127.0.0.1:0\", \"token_file\": \"%s\", \"db\": \"%s\", "
            "\"baseline_window_s\": 10, \"ramp_s\": 0, "
            "\"default_tier\": 3, \"agents\": [",
            tokf, db);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s{\"name\": \"a%d\", \"url\": \"%s\", \"token_file\": \"%s\"}", i ? ", " : "",
                i, urls[i], tokf);
    fprintf(f, "]}\n");
    fclose(f);
    char *argv[] = {(char *)ctl_bin, "--config", cfg, "--port-file", portf, NULL};
    pid_t p = bench_spawn(argv, log);
    int cport = bench_read_port(portf, p);
    if (cport >= 0) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", cport);
        sleep(12); /* jobs warm up; baselines over the window (period 5 s) */
        double t_sent, t_done = NAN;
        if (post_event(url, tok, "bench-demo", 30, &t_sent) == 0) {
            while (bench_now() - t_sent < 15) {
                if (all_capped(urls, n)) {
                    t_done = bench_now() - t_sent;
                    break;
                }
                usleep(5000);
            }
            printf("bench controller demo: 4 agents x 8 simulated H200, control period 5 s, event "
                   "start now, no ramp\n");
            BENCH_RESULT("controller demo: event POST -> all 32 caps applied", t_done, "s", "< 2");
        }
        kill(p, SIGTERM);
        waitpid(p, NULL, 0);
    } else {
        printf("bench controller demo: controller did not start (see %s)\n", log);
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
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/pfi-bench-ctl-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    scale_bench(ctl, dir);
    demo_latency(ctl, agent, dir);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return 0;
}
