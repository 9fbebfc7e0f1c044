/* bench_openadr.c — pfi-controller as an OpenADR 3 VEN (issue 16), wall
 * clock:
 *  - latency: the demo's shape (4 real pfi-agent processes, 8 simulated
 *    H200 each, one job of the reconstruction per node, control period
 *    5 s as the demo's, no ramp). 20 OpenADR 3.1 EVENT versions POSTed to
 *    the webhook /openadr3/events, alternating two IMPORT_CAPACITY_LIMITs
 *    (18 and 16 kW, non_gpu_offset_kw 1: GPU targets 17 and 15 kW of the
 *    jobs' 21.7 kW; every job Flex 3, where the demo has one Flex 1 job that
 *    sits at its floor: its caps would not move between the two targets) so that
 *    every version moves every cap; for each, the time from just before
 *    the POST to the last of the 32 GPUs holding a new cap. "Cap written"
 *    is read on the agents' side, from the sim backend's hardware state
 *    file (sim:...,state=FILE: the backend rewrites it, atomically, inside
 *    each cap write, before the agent answers the controller's PUT), polled
 *    every 1 ms: a GPU counts once its cap differs from the one it held
 *    before the POST. p50/p95/max, target <= 0.5 s. (A control period
 *    that falls inside a measurement also moves caps: with period 5 s and
 *    events a few hundred ms apart, rarely.)
 *  - malformed VTN responses: a fixture VTN (this process, the runtime's
 *    HTTP server) serves, at the controller's openadr.poll_url, 1,000
 *    distinct malformed responses, one per poll, generated from the poll's
 *    number (20 kinds x 50 variants: truncated JSON, deep nesting, a 1 MB
 *    string, not JSON, not a list, binary bytes, wrong types, huge numbers,
 *    NaN strings, unknown units, bad dates, wrong objectType, no
 *    intervals, bad durations, negative limits, levels out of range, deep
 *    nesting in a payload, bad ids, bad targets and operations, no usable
 *    payload). 50 of them also carry a valid event (each served once,
 *    beside a malformed one). The controller polls with poll_s 1 on a
 *    clock sped up 100 times; afterwards: it is alive, GET /v1/events has
 *    every valid event, pfi_ctl_openadr_rejected_total rose. Counts and
 *    time printed; exit status 1 when a check fails (or the latency part
 *    measured nothing).
 * `bench_openadr latency` or `bench_openadr malformed` runs one part. Needs
 * PFI_CONTROLLER_BIN and PFI_AGENT_BIN (scripts/run-bench.sh sets them). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_client.h"
#include "bench_common.h"
#include "bench_procs.h"
#include "bench_sim_caps.h"
#include "clock.h"
#include "grid_event.h"
#include "httpd.h"

#define NAG 4
#define GPUS 8
#define NEVENTS 20
#define NBAD 1000
#define NKINDS 20
#define VALID_KIND 10 /* responses of this kind also carry a valid event */

/* the sum of every labelled series of a metric on /metrics; NAN when unreadable */
static double metric_sum(const char *url, const char *name)
{
    pfi_http_reply r;
    pfi_error e;
    if (pfi_agent_get(url, "/metrics", 5, &r, &e) || r.code != 200) {
        if (r.body) pfi_http_reply_dispose(&r);
        return NAN;
    }
    double sum = 0;
    size_t n = strlen(name);
    for (const char *l = r.body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, n) && (l[n] == ' ' || l[n] == '{')) {
            const char *v = strchr(l, ' ');
            if (l[n] == '{') v = strchr(strchr(l, '}') ? strchr(l, '}') : l, ' ');
            if (v) sum += strtod(v, NULL);
        }
    pfi_http_reply_dispose(&r);
    return sum;
}

/* the labelled series of a metric, one line: reason=N ... */
static void metric_print(const char *url, const char *name)
{
    pfi_http_reply r;
    pfi_error e;
    if (pfi_agent_get(url, "/metrics", 5, &r, &e) || r.code != 200) {
        if (r.body) pfi_http_reply_dispose(&r);
        return;
    }
    size_t n = strlen(name);
    printf("  %s:", name);
    for (const char *l = r.body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *q = strchr(l, '"'), *q2 = q ? strchr(q + 1, '"') : NULL,
                   *v = q2 ? strchr(q2, ' ') : NULL;
        if (!strncmp(l, name, n) && l[n] == '{' && v)
            printf(" %.*s=%.0f", (int)(q2 - q - 1), q + 1, strtod(v, NULL));
    }
    printf("\n");
    pfi_http_reply_dispose(&r);
}

/* ---- latency: webhook -> every cap written ---- */

/* every GPU's cap from the sim backends' state files; 0 when one cannot be read */
static int read_caps(const char *dir, double caps[NAG][GPUS])
{
    return bench_read_sim_caps(dir, NAG, GPUS, &caps[0][0]);
}

static char *capacity_event(const char *id, int version, double limit_kw)
{
    char now[40], mod[40];
    pfi_rfc3339_format((double)time(NULL), now, sizeof now);
    pfi_rfc3339_format(1.7e9 + version, mod, sizeof mod); /* newer each version */
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:[{s:s,s:s,s:s}],s:{s:s,s:s},s:[{s:i,s:[{s:s,s:[f]}]}]}",
                  "id", id, "objectType", "EVENT", "programID", "bench", "createdDateTime", now,
                  "modificationDateTime", mod, "payloadDescriptors", "objectType",
                  "EVENT_PAYLOAD_DESCRIPTOR", "payloadType", "IMPORT_CAPACITY_LIMIT", "units", "KW",
                  "intervalPeriod", "start", "0001-01-01T00:00:00", "duration", "PT1H", "intervals",
                  "id", 0, "payloads", "type", "IMPORT_CAPACITY_LIMIT", "values", limit_kw);
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return t;
}

static int latency(const char *ctl_bin, const char *agent_bin, const char *dir)
{
    static const char *jobs[NAG] = {"moe-ft-qwen30ba3b-x8", "dense-pt-llama70b-x8-compile",
                                    "moe-pt-gptoss20b-x8-ep1-nocompile",
                                    "dense-ft-llama70b-x8-compile"}; /* the demo's */
    char tokf[512], tok[128], urls[NAG][64];
    pid_t ap[NAG] = {0}, cp = 0;
    int rc = 1;
    snprintf(tokf, sizeof tokf, "%s/token", dir);
    bench_make_token(tokf, "openadr", tok, sizeof tok);
    for (int i = 0; i < NAG; i++) {
        char be[1024];
        snprintf(be, sizeof be, "sim:gpus=8,job=job%d:%s@0-7,load=0,seed=%d,state=%s/hw%d.json",
                 i + 1, jobs[i], i + 1, dir, i);
        int port = bench_start_agent(agent_bin, dir, i, be, tokf, "2", &ap[i]);
        if (port < 0) {
            printf("bench openadr latency: agent %d did not start (see %s/a%d.log)\n", i, dir, i);
            goto out;
        }
        snprintf(urls[i], sizeof urls[i], "http://127.0.0.1:%d", port);
    }
    char cfg[512], portf[512], log[512], db[512], url[64];
    snprintf(cfg, sizeof cfg, "%s/ctl.json", dir);
    snprintf(portf, sizeof portf, "%s/ctl.port", dir);
    snprintf(log, sizeof log, "%s/ctl.log", dir);
    snprintf(db, sizeof db, "%s/ctl.db", dir);
    FILE *f = fopen(cfg, "w");
    if (!f) goto out;
    fprintf(f,
            "{\"listen\": \"127.0.0.1:0\", \"token_file\": \"%s\", \"db\": \"%s\", "
            "\"control_period_s\": 5, \"baseline_window_s\": 5, \"ramp_s\": 0, \"ramp_down_s\": 0, "
            "\"lease_s\": 60, \"non_gpu_offset_kw\": 1, \"default_tier\": 3, \"agents\": [",
            tokf, db);
    for (int i = 0; i < NAG; i++)
        fprintf(f, "%s{\"name\": \"node%d\", \"url\": \"%s\", \"token_file\": \"%s\"}",
                i ? ", " : "", i + 1, urls[i], tokf);
    fprintf(f, "]}\n");
    fclose(f);
    char *argv[] = {(char *)ctl_bin, "--config", cfg, "--port-file", portf, NULL};
    cp = bench_spawn(argv, log);
    int cport = bench_read_port(portf, cp, 10);
    if (cport < 0) {
        printf("bench openadr latency: controller did not start (see %s)\n", log);
        goto out;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d/openadr3/events", cport);
    sleep(8); /* jobs load; baselines over the window (period 5 s) */
    double lat[NEVENTS], caps0[NAG][GPUS], caps[NAG][GPUS];
    int n = 0, missed = 0;
    for (int k = 0; k < NEVENTS; k++) {
        double limit = k % 2 ? 16 : 18;
        char *body = capacity_event("bench-latency", k + 1, limit);
        while (!read_caps(dir, caps0)) usleep(1000);
        pfi_http_reply r;
        pfi_error e;
        memset(&r, 0, sizeof r);
        double t0 = bench_now();
        int bad = pfi_http_request("POST", url, tok, body, 5, &r, &e) || r.code != 200;
        if (bad)
            printf("bench openadr latency: event %d: %s %.200s\n", k, r.code ? "HTTP" : e.msg,
                   r.body ? r.body : "");
        if (r.body) pfi_http_reply_dispose(&r);
        free(body);
        if (bad) goto out;
        double t = NAN;
        while (bench_now() - t0 < 5) {
            int all = read_caps(dir, caps);
            for (int i = 0; all && i < NAG; i++)
                for (int g = 0; g < GPUS; g++) all &= fabs(caps[i][g] - caps0[i][g]) > 0.5;
            if (all) {
                t = bench_now() - t0;
                break;
            }
            usleep(1000);
        }
        if (isfinite(t)) lat[n++] = t;
        else if (++missed == 3) break; /* the caps do not follow: no use waiting out the rest */
        usleep(300000); /* the agents answer the push; the next version is a new one */
    }
    qsort(lat, (size_t)n, sizeof *lat, bench_cmp_double);
    printf("bench openadr latency: 4 pfi-agents x 8 simulated H200 (sim backend), control period "
           "5 s, no ramp; %d OpenADR 3.1 EVENT versions to POST /openadr3/events alternating "
           "IMPORT_CAPACITY_LIMIT 18/16 kW; cap written = the sim backend's state file\n",
           NEVENTS);
    if (n) {
        double p50 = lat[(n - 1) / 2], p95 = lat[(int)ceil(0.95 * n) - 1], mx = lat[n - 1];
        BENCH_RESULT("openadr webhook -> all 32 caps written p50", p50, "s", "<= 0.5");
        BENCH_RESULT("openadr webhook -> all 32 caps written p95", p95, "s", "<= 0.5");
        BENCH_RESULT("openadr webhook -> all 32 caps written max", mx, "s", "<= 0.5");
        printf("bench openadr latency: %d/%d events measured, %d not within 5 s; target <= 0.5 s "
               "%s\n",
               n, NEVENTS, missed, !missed && mx <= 0.5 ? "MET" : "NOT MET");
    }
    rc = n == 0; /* a figure, not a check: only a run that measured nothing fails */
out:
    bench_stop(cp);
    for (int i = 0; i < NAG; i++) bench_stop(ap[i]);
    return rc;
}

/* ---- malformed VTN responses ---- */

static struct {
    pthread_mutex_t mu;
    long served, valid_served;
    double start_clock; /* the valid events' start, clock time */
    char id0[32];
} g_vtn = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, ""};

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = 2 * b->cap + (size_t)k + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
}

static void putc_n(sbuf *b, char c, size_t n)
{
    while (b->cap - b->n < n + 1) {
        b->cap = 2 * b->cap + n + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memset(b->p + b->n, c, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* a well-formed 3.1 EVENT with the given pieces */
static void event(sbuf *b, const char *id, const char *otype, const char *start, const char *dur,
                  const char *ptype, const char *units, const char *values)
{
    put(b,
        "{\"id\": %s, \"objectType\": %s, \"programID\": \"p\", \"createdDateTime\": "
        "\"2026-01-01T00:00:00Z\", \"modificationDateTime\": \"2026-01-01T00:00:00Z\", "
        "\"payloadDescriptors\": [{\"payloadType\": \"%s\", \"units\": %s}], "
        "\"intervalPeriod\": {\"start\": %s, \"duration\": %s}, "
        "\"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"%s\", \"values\": %s}]}]}",
        id, otype, ptype, units, start, dur, ptype, values);
}

static void valid_event(sbuf *b, long k)
{
    char id[64], start[64];
    snprintf(id, sizeof id, "\"valid-%ld\"", k);
    start[0] = '"';
    pfi_rfc3339_format(g_vtn.start_clock + 3600.0 * (double)k, start + 1, sizeof start - 2);
    strcat(start, "\"");
    event(b, id, "\"EVENT\"", start, "\"PT1H\"", "SIMPLE", "null", "[1]");
}

/* response i: 20 kinds, 50 variants each; kinds 0..5 spoil the whole body,
   6..19 one event of a list (beside a valid one in kind VALID_KIND) */
static void malformed(sbuf *b, long i)
{
    int kind = (int)(i % NKINDS), v = (int)(i / NKINDS);
    char id[64];
    snprintf(id, sizeof id, "\"bad-%ld\"", i);
    const char *fut = "\"2099-01-01T00:00:00Z\"";
    if (kind == 0) { /* truncated JSON */
        sbuf e = {0};
        put(&e, "[");
        valid_event(&e, 1000 + i);
        put(&e, "]");
        size_t cut = 1 + ((size_t)v * 37) % (e.n - 1);
        put(b, "%.*s", (int)cut, e.p);
        free(e.p);
        return;
    }
    if (kind == 1) { /* deep nesting, around jansson's depth limit of 2048 */
        size_t depth = 1500 + (size_t)v * 20;
        putc_n(b, '[', depth);
        putc_n(b, ']', depth);
        return;
    }
    if (kind == 2) { /* a 1 MB string, as an id */
        put(b, "[{\"id\": \"");
        putc_n(b, 'a' + (char)(v % 26), ((size_t)1 << 20) + (size_t)v);
        put(b, "\", \"objectType\": \"EVENT\"}]");
        return;
    }
    if (kind == 3) { /* not JSON */
        static const char *const t[] = {"NaN", "<html><body>502 Bad Gateway %d</body></html>",
                                        "{\"events\": NaN, \"n\": %d}", "[1, 2, %d,]", "%d ]"};
        put(b, t[v % 5], v);
        return;
    }
    if (kind == 4) { /* JSON, not a list of events */
        static const char *const t[] = {"{\"objectType\": \"EVENT\", \"id\": \"obj-%d\"}", "%d",
                                        "\"events-%d\"", "null", "{\"events\": [%d]}"};
        put(b, t[v % 5], v);
        return;
    }
    if (kind == 5) { /* binary bytes */
        unsigned x = 2654435761u * (unsigned)(i + 1);
        for (int k = 0; k < 200 + v; k++) {
            x = x * 1103515245u + 12345u;
            char c = (char)(1 + (x >> 16) % 255);
            put(b, "%c", c);
        }
        return;
    }
    put(b, "[");
    switch (kind) {
    case 6: /* wrong types */
        if (v % 3 == 0) put(b, "{\"id\": %d, \"objectType\": \"EVENT\", \"intervals\": []}", v);
        else if (v % 3 == 1)
            put(b,
                "{\"id\": %s, \"objectType\": \"EVENT\", \"intervalPeriod\": %d, "
                "\"intervals\": \"x\"}",
                id, v);
        else event(b, id, "\"EVENT\"", fut, "3600", "SIMPLE", "null", "\"one\"");
        break;
    case 7: { /* huge numbers */
        char val[64];
        snprintf(val, sizeof val, "[%de%d]", 1 + v % 9, 300 + v % 8);
        event(b, id, "\"EVENT\"", fut, "\"PT1H\"", "IMPORT_CAPACITY_LIMIT", "\"KW\"", val);
        break;
    }
    case 8: { /* NaN strings */
        static const char *const t[] = {"[\"NaN\"]", "[\"Infinity\"]", "[\"-inf\"]", "[\"nan\"]",
                                        "[\"1e999\"]"};
        event(b, id, "\"EVENT\"", fut, "\"PT1H\"", "IMPORT_CAPACITY_LIMIT", "\"KW\"", t[v % 5]);
        break;
    }
    case 9: { /* unknown units */
        char u[64];
        snprintf(u, sizeof u, "\"%s%d\"", v % 2 ? "KVA" : "furlong", v);
        event(b, id, "\"EVENT\"", fut, "\"PT1H\"", "IMPORT_CAPACITY_LIMIT", u, "[10]");
        break;
    }
    case 10: { /* bad dates */
        char d[64];
        static const char *const t[] = {"\"2025-13-%02dT00:00:00Z\"", "\"2025-02-30T%02d:00:00Z\"",
                                        "\"yesterday %d\"", "\"2025-01-01T25:%02d:00Z\"", "%d"};
        snprintf(d, sizeof d, t[v % 5], v % 60);
        event(b, id, "\"EVENT\"", d, "\"PT1H\"", "SIMPLE", "null", "[1]");
        break;
    }
    case 11: { /* wrong objectType */
        static const char *const t[] = {"\"PROGRAM\"", "\"REPORT\"", "\"SUBSCRIPTION\"", "42",
                                        "\"Event\""}; /* absent or null: read as EVENT */
        event(b, id, t[v % 5], fut, "\"PT1H\"", "SIMPLE", "null", "[1]");
        break;
    }
    case 12: /* no intervals */
        put(b,
            "{\"id\": %s, \"objectType\": \"EVENT\", \"intervalPeriod\": {\"start\": %s, "
            "\"duration\": \"PT1H\"}%s}",
            id, fut, v % 2 ? ", \"intervals\": []" : "");
        break;
    case 13: { /* bad durations */
        static const char *const t[] = {"\"-PT1H\"", "\"PT-1H\"", "\"P1e303W\"", "\"forever\"",
                                        "\"P1.5Y\""}; /* P8D, P10000Y: valid (issue 29) */
        event(b, id, "\"EVENT\"", fut, t[v % 5], "SIMPLE", "null", "[1]");
        break;
    }
    case 14: { /* limits that leave no GPU power */
        char val[32];
        snprintf(val, sizeof val, "[%d]", -v - 1); /* 0 is valid: every job at its floor */
        event(b, id, "\"EVENT\"", fut, "\"PT1H\"", "IMPORT_CAPACITY_LIMIT", "\"KW\"", val);
        break;
    }
    case 15: { /* levels out of range */
        static const char *const t[] = {"[7]", "[-1]", "[1.5]", "[99999999999]", "[]"};
        event(b, id, "\"EVENT\"", fut, "\"PT1H\"", "SIMPLE", "null", t[v % 5]);
        break;
    }
    case 16: { /* deep nesting in a payload */
        sbuf val = {0};
        putc_n(&val, '[', 100 + (size_t)v);
        put(&val, "1");
        putc_n(&val, ']', 100 + (size_t)v);
        event(b, id, "\"EVENT\"", fut, "\"PT1H\"", "SIMPLE", "null", val.p);
        free(val.p);
        break;
    }
    case 17: { /* bad ids */
        char bid[400];
        if (v % 3 == 0) snprintf(bid, sizeof bid, "\"bad.%d/..\"", v);
        else if (v % 3 == 1) snprintf(bid, sizeof bid, "\"%0200d\"", v);
        else snprintf(bid, sizeof bid, "\"\"");
        event(b, bid, "\"EVENT\"", fut, "\"PT1H\"", "SIMPLE", "null", "[1]");
        break;
    }
    case 18: /* bad targets and operations */
        if (v % 2) {
            put(b, "{\"objectType\": \"EVENT\", \"operation\": \"EXPLODE%d\", \"object\": ", v);
            event(b, id, "\"EVENT\"", fut, "\"PT1H\"", "SIMPLE", "null", "[1]");
            put(b, "}");
        } else {
            put(b,
                "{\"id\": %s, \"objectType\": \"EVENT\", \"targets\": %d, "
                "\"intervalPeriod\": {\"start\": %s, \"duration\": \"PT1H\"}, \"intervals\": "
                "[{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [1]}]}]}",
                id, v, fut);
        }
        break;
    default: /* 19: no payload pfi can use */
        event(b, id, "\"EVENT\"", fut, "\"PT1H\"", v % 2 ? "PRICE" : "GHG", "null", "[0.3]");
        break;
    }
    if (kind == VALID_KIND) {
        put(b, ", ");
        valid_event(b, i / NKINDS);
    }
    put(b, "]");
}

static int vtn_protected(void *ud, const char *method, const char *url)
{
    (void)ud, (void)url;
    return strcmp(method, "GET") != 0;
}

static void vtn_handle(void *ud, const pfi_http_req *rq, pfi_http_resp *rs)
{
    (void)ud;
    if (strcmp(rq->url, "/vtn/events")) {
        pfi_http_error(rs, 404, "no such endpoint");
        return;
    }
    pthread_mutex_lock(&g_vtn.mu);
    long i = g_vtn.served++;
    if (i < NBAD && i % NKINDS == VALID_KIND) g_vtn.valid_served++;
    pthread_mutex_unlock(&g_vtn.mu);
    sbuf b = {0};
    if (i < NBAD) malformed(&b, i);
    else put(&b, "[]");
    rs->code = 200;
    rs->body = b.p;
    rs->len = b.n;
}

static int malformed_vtn(const char *ctl_bin, const char *dir)
{
    const double scale = 100;
    double epoch = floor((double)time(NULL));
    char scale_s[32], epoch_s[32];
    snprintf(scale_s, sizeof scale_s, "%g", scale);
    snprintf(epoch_s, sizeof epoch_s, "%.0f", epoch);
    pfi_clock_set(scale, epoch, NULL);
    g_vtn.start_clock = floor(pfi_clock_now()) + 30 * 86400.0; /* scheduled, far ahead */
    pfi_httpd_opts o = {.listen = "127.0.0.1:0",
                        .max_body = 1024,
                        .is_protected = vtn_protected,
                        .handle = vtn_handle};
    pfi_httpd *h;
    int fport, rc = 1;
    pid_t p = 0;
    pfi_error e;
    if (pfi_httpd_start(&o, &h, &fport, &e)) {
        printf("bench openadr malformed: fixture VTN: %s\n", e.msg);
        return 1;
    }
    char tokf[512], tok[128], cfg[512], portf[512], log[512], db[512];
    snprintf(tokf, sizeof tokf, "%s/vtn-token", dir);
    bench_make_token(tokf, "openadr", tok, sizeof tok);
    snprintf(cfg, sizeof cfg, "%s/vtn-ctl.json", dir);
    snprintf(portf, sizeof portf, "%s/vtn-ctl.port", dir);
    snprintf(log, sizeof log, "%s/vtn-ctl.log", dir);
    snprintf(db, sizeof db, "%s/vtn-ctl.db", dir);
    FILE *f = fopen(cfg, "w");
    if (!f) goto out;
    /* the one agent is the fixture too (404: no agent there): the loop goes on fast */
    fprintf(f,
            "{\"listen\": \"127.0.0.1:0\", \"token_file\": \"%s\", \"db\": \"%s\", "
            "\"control_period_s\": 1, \"openadr\": {\"poll_url\": "
            "\"http://127.0.0.1:%d/vtn/events\", \"poll_s\": 1}, \"agents\": [{\"name\": \"a\", "
            "\"url\": \"http://127.0.0.1:%d/agent\", \"token_file\": \"%s\"}]}\n",
            tokf, db, fport, fport, tokf);
    fclose(f);
    setenv("PFI_TIME_SCALE", scale_s, 1);
    setenv("PFI_EPOCH", epoch_s, 1);
    char *argv[] = {(char *)ctl_bin, "--config", cfg, "--port-file", portf, NULL};
    p = bench_spawn(argv, log);
    unsetenv("PFI_TIME_SCALE");
    unsetenv("PFI_EPOCH");
    int cport = bench_read_port(portf, p, 10);
    if (cport < 0) {
        printf("bench openadr malformed: controller did not start (see %s)\n", log);
        goto out;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", cport);
    double rej0 = metric_sum(url, "pfi_ctl_openadr_rejected_total");
    double t0 = bench_now();
    long served = 0;
    int alive = 1;
    /* one response per poll; the poll after the last malformed one means it was read */
    while (bench_now() - t0 < 60) {
        pthread_mutex_lock(&g_vtn.mu);
        served = g_vtn.served;
        pthread_mutex_unlock(&g_vtn.mu);
        if (served > NBAD) break;
        if (waitpid(p, NULL, WNOHANG) == p) {
            alive = 0, p = 0;
            break;
        }
        usleep(20000);
    }
    double wall = bench_now() - t0;
    pfi_http_reply r;
    alive = alive && pfi_agent_get(url, "/healthz", 5, &r, &e) == PFI_OK && r.code == 200;
    if (r.body) pfi_http_reply_dispose(&r);
    double rej1 = metric_sum(url, "pfi_ctl_openadr_rejected_total");
    int accepted = 0, nvalid = (int)g_vtn.valid_served;
    json_t *evs = NULL;
    if (pfi_agent_get(url, "/v1/events", 5, &r, &e) == PFI_OK && r.code == 200)
        evs = json_loads(r.body, 0, NULL);
    if (r.body) pfi_http_reply_dispose(&r);
    json_t *list = json_is_array(evs) ? evs : json_object_get(evs, "events");
    for (int k = 0; k < nvalid; k++) {
        char id[32];
        snprintf(id, sizeof id, "valid-%d", k);
        size_t q;
        json_t *x;
        int found = 0;
        json_array_foreach(list, q, x) found |=
            json_is_string(json_object_get(x, "id")) &&
            !strcmp(json_string_value(json_object_get(x, "id")), id);
        accepted += found;
    }
    size_t q;
    json_t *x;
    int stray = 0; /* events accepted that are not valid-N */
    json_array_foreach(list, q, x)
    {
        const char *id = json_string_value(json_object_get(x, "id"));
        stray += !id || strncmp(id, "valid-", 6);
    }
    json_decref(evs);
    printf("bench openadr malformed: fixture VTN at openadr.poll_url, controller poll_s 1 on a "
           "clock x%g; %ld responses served (%d malformed, %d with a valid event beside a "
           "malformed one) in %.1f s wall\n",
           scale, served, NBAD, nvalid, wall);
    BENCH_RESULT("openadr malformed: responses per second", (double)served / wall, "1/s", "-");
    printf("bench openadr malformed: controller %s; valid events accepted %d/%d; "
           "malformed ones accepted %d; pfi_ctl_openadr_rejected_total %.0f -> %.0f (+%.0f)\n",
           alive ? "alive" : "DEAD", accepted, nvalid, stray, rej0, rej1, rej1 - rej0);
    int ok = alive && served > NBAD && nvalid == NBAD / NKINDS && accepted == nvalid && rej1 > rej0;
    metric_print(url, "pfi_ctl_openadr_rejected_total");
    printf("bench openadr malformed: %s\n", ok ? "PASS" : "FAIL");
    rc = !ok;
out:
    bench_stop(p);
    pfi_httpd_stop(h);
    return rc;
}

int main(int argc, char **argv)
{
    const char *ctl = getenv("PFI_CONTROLLER_BIN"), *agent = getenv("PFI_AGENT_BIN");
    const char *part = argc > 1 ? argv[1] : "all";
    if (!ctl || !agent) {
        fprintf(stderr, "bench_openadr: set PFI_CONTROLLER_BIN and PFI_AGENT_BIN "
                        "(scripts/run-bench.sh does)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/pfi-bench-oadr-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    int rc = 0;
    if (!strcmp(part, "all") || !strcmp(part, "latency")) rc |= latency(ctl, agent, dir);
    if (!strcmp(part, "all") || !strcmp(part, "malformed")) rc |= malformed_vtn(ctl, dir);
    if (!getenv("PFI_BENCH_KEEP")) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) rc = 1;
    } else {
        printf("bench openadr: files in %s\n", dir);
    }
    return rc;
}
