/* bench_agent.c — pfi-agent's costs, wall clock at time scale 1:
 *  - sampling 8 GPUs at 1 Hz: the agent's own sampling CPU time (its
 *    pfi_agent_sampling_cpu_seconds_total counter) and the whole process's
 *    CPU time (/proc/PID/stat: idle loop and HTTP thread included), as a
 *    share of one core, for the sim backend and the NVML test double;
 *  - GET /metrics latency at a fixed 200 requests/s on loopback over one
 *    kept-alive connection (libcurl), measured from each request's scheduled
 *    time (no coordinated omission): p50, p99, max.
 * Needs PFI_AGENT_BIN, FAKE_NVML (scripts/run-bench.sh sets them). */
#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

static char g_body[1 << 20];
static size_t g_len;
static size_t sink(char *p, size_t s, size_t n, void *u)
{
    (void)u;
    size_t k = s * n;
    if (g_len + k < sizeof g_body) memcpy(g_body + g_len, p, k), g_len += k;
    return k;
}

static double metric(const char *url, const char *name)
{
    CURL *c = curl_easy_init();
    char full[256];
    snprintf(full, sizeof full, "%s/metrics", url);
    g_len = 0;
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    g_body[g_len] = '\0';
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(g_body, key);
    return p ? atof(p + strlen(key)) : NAN;
}

static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    /* fields after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return NAN;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static pid_t start(const char *bin, const char *backend, const char *dir, char *url, size_t n)
{
    char portf[512], state[512], log[512];
    snprintf(portf, sizeof portf, "%s/port", dir);
    snprintf(state, sizeof state, "%s/state.json", dir);
    snprintf(log, sizeof log, "%s/agent.log", dir);
    unlink(portf);
    pid_t p = fork();
    if (p == 0) {
        execl(bin, bin, "--backend", backend, "--listen", "127.0.0.1:0", "--port-file", portf,
              "--state-file", state, "--interval", "1", "--log", log, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(portf, "r");
        int port = 0;
        if (f && fscanf(f, "%d", &port) == 1 && port > 0) {
            fclose(f);
            snprintf(url, n, "http://127.0.0.1:%d", port);
            return p;
        }
        if (f) fclose(f);
        usleep(50000);
    }
    kill(p, SIGKILL);
    return -1;
}

static void sampling(const char *bin, const char *backend, const char *label, const char *dir,
                     double seconds)
{
    char url[128];
    pid_t p = start(bin, backend, dir, url, sizeof url);
    if (p < 0) {
        printf("bench agent %s: could not start\n", label);
        return;
    }
    sleep(2);
    double s0 = metric(url, "pfi_agent_sampling_cpu_seconds_total"),
           n0 = metric(url, "pfi_agent_samples_total");
    double c0 = proc_cpu_s(p), t0 = bench_now();
    usleep((useconds_t)(seconds * 1e6));
    double s1 = metric(url, "pfi_agent_sampling_cpu_seconds_total"),
           n1 = metric(url, "pfi_agent_samples_total");
    double c1 = proc_cpu_s(p), dt = bench_now() - t0;
    char name[128];
    snprintf(name, sizeof name, "agent %s 8 GPUs @1 Hz: sampling CPU", label);
    BENCH_RESULT(name, 100 * (s1 - s0) / dt, "%core", "< 1");
    snprintf(name, sizeof name, "agent %s 8 GPUs @1 Hz: whole process", label);
    BENCH_RESULT(name, 100 * (c1 - c0) / dt, "%core", "reported");
    snprintf(name, sizeof name, "agent %s: sampling rounds per second", label);
    BENCH_RESULT(name, (n1 - n0) / dt, "Hz", "1");
    kill(p, SIGTERM);
    waitpid(p, NULL, 0);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void metrics_latency(const char *bin, const char *dir, double rate, double seconds)
{
    char url[128], full[160];
    pid_t p = start(bin, "sim:gpus=8,job=1:moe-ft-qwen30ba3b-x8@0-7,load=0", dir, url, sizeof url);
    if (p < 0) {
        printf("bench agent metrics: could not start\n");
        return;
    }
    sleep(2);
    snprintf(full, sizeof full, "%s/metrics", url);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    size_t n = (size_t)(rate * seconds), bad = 0;
    double *lat = malloc(n * sizeof *lat), t0 = bench_now() + 0.1, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        double due = t0 + (double)i / rate;
        double now = bench_now();
        if (due > now) usleep((useconds_t)((due - now) * 1e6));
        g_len = 0;
        long code = 0;
        if (curl_easy_perform(c) != CURLE_OK) bad++;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code != 200) bad++;
        lat[i] = (bench_now() - due) * 1000;
        bytes += (double)g_len;
    }
    curl_easy_cleanup(c);
    qsort(lat, n, sizeof *lat, cmp);
    printf("bench agent GET /metrics: %zu requests at %.0f/s, %.0f bytes each, %zu errors\n", n,
           rate, bytes / (double)n, bad);
    BENCH_RESULT("agent GET /metrics p50 latency", lat[n / 2], "ms", "-");
    BENCH_RESULT("agent GET /metrics p99 latency", lat[(size_t)(0.99 * (double)n)], "ms", "< 5");
    BENCH_RESULT("agent GET /metrics max latency", lat[n - 1], "ms", "-");
    free(lat);
    kill(p, SIGTERM);
    waitpid(p, NULL, 0);
}

int main(void)
{
    const char *bin = getenv("PFI_AGENT_BIN"), *fake = getenv("FAKE_NVML");
    if (!bin) {
        fprintf(stderr, "bench_agent: set PFI_AGENT_BIN (scripts/run-bench.sh does)\n");
        return 2;
    }
    char dir[] = "/tmp/pfi-bench-agent-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    sampling(bin, "sim:gpus=8,job=1:moe-ft-qwen30ba3b-x8@0-7,load=0", "sim", dir, 15);
    if (fake) {
        setenv("PFI_NVML_LIBRARY", fake, 1);
        setenv("FAKE_NVML_GPUS", "8", 1);
        sampling(bin, "nvml", "nvml-double", dir, 15);
        unsetenv("PFI_NVML_LIBRARY");
    }
    metrics_latency(bin, dir, 200, 10);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return 0;
}
