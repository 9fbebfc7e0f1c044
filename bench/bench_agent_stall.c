/* bench_agent_stall.c — a GPU that hangs (issue 40 (e)): pfi-agent on the
 * NVML test double with 8 GPUs, GPU 3's every call stalling (FAKE_NVML_STALL,
 * as a hung GSP call does), wall clock:
 *  - one GPU stalling 6 s a call, the default --gpu-call-timeout (2 s): how
 *    long until GPU 3 is reported timeout; the slowest GET /metrics and the
 *    sampling rounds in the 10 s after the stall began; a PUT capping all
 *    eight: its answer, and when the seven healthy GPUs' limits had landed
 *    (the double's state file); the release the same;
 *  - the driver-wide variant (FAKE_NVML_STALL_GLOBAL: the stall holds a
 *    lock every GPU's call takes), 1.5 s a call, a 1 s deadline: how long
 *    until the seven healthy GPUs are available again and GPU 3 alone is
 *    out, then the PUT and release the same.
 * Targets (issue 40): the seven capped and restored within 1 s of the
 * request; after the sick GPU is found, every request within 1 s.
 * Needs PFI_AGENT_BIN, FAKE_NVML (scripts/run-bench.sh sets them). */
#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

static char g_body[1 << 20], g_dir[256], g_token[80];
static size_t g_len;
static size_t sink(char *p, size_t s, size_t n, void *u)
{
    (void)u;
    size_t k = s * n;
    if (g_len + k < sizeof g_body) memcpy(g_body + g_len, p, k), g_len += k;
    return k;
}

/* GET or PUT (body) URL+path: the body in g_body; the seconds it took */
static double http(const char *url, const char *path, const char *put_body)
{
    CURL *c = curl_easy_init();
    char full[256], auth[128];
    snprintf(full, sizeof full, "%s%s", url, path);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", g_token);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    g_len = 0;
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (put_body) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, put_body);
    }
    double t0 = bench_now();
    curl_easy_perform(c);
    double dt = bench_now() - t0;
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    g_body[g_len] = '\0';
    return dt;
}

static void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "w");
    if (f) fputs(text, f), fclose(f);
}

/* the double's limits of GPUs 0..7 in W (its state file), 1 when read */
static int limits(double *w)
{
    char p[512];
    snprintf(p, sizeof p, "%s/nvml", g_dir);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    int k = 0;
    double mw;
    while (k < 8 && fscanf(f, "%lf", &mw) == 1) w[k++] = mw / 1000;
    fclose(f);
    return k == 8;
}

/* polls (5 ms) until the seven healthy GPUs are at cap_w: seconds since t0, NaN after 30 s */
static double seven_at(double cap_w, double t0)
{
    while (bench_now() - t0 < 30) {
        double w[8];
        int all = limits(w);
        for (int k = 0; all && k < 8; k++)
            if (k != 3 && fabs(w[k] - cap_w) > 0.5) all = 0;
        if (all) return bench_now() - t0;
        usleep(5000);
    }
    return NAN;
}

static pid_t start(const char *bin, const char *timeout_s, char *url, size_t n)
{
    char portf[512], state[512], log[512], tok[512];
    snprintf(portf, sizeof portf, "%s/port", g_dir);
    snprintf(state, sizeof state, "%s/state.json", g_dir);
    snprintf(log, sizeof log, "%s/agent.log", g_dir);
    snprintf(tok, sizeof tok, "%s/token", g_dir);
    unlink(portf);
    unlink(state);
    write_file("nvml", "700000\n700000\n700000\n700000\n700000\n700000\n700000\n700000\n");
    write_file("stall", "");
    pid_t p = fork();
    if (p == 0) {
        execl(bin, bin, "--backend", "nvml", "--listen", "127.0.0.1:0", "--port-file", portf,
              "--state-file", state, "--token-file", tok, "--interval", "0.2", "--gpu-call-timeout",
              timeout_s, "--log", log, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) {
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

static double metric(const char *url, const char *name)
{
    http(url, "/metrics", NULL);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(g_body, key);
    return p ? atof(p + strlen(key)) : NAN;
}

/* GPUs whose pfi_gpu_up line says state="ok"} 1; *gpu3_timeout: GPU 3's says timeout */
static int up_ok(const char *url, int *gpu3_timeout)
{
    http(url, "/metrics", NULL);
    int n = 0;
    *gpu3_timeout = 0;
    for (char *line = strtok(g_body, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "pfi_gpu_up{", 11)) continue;
        if (strstr(line, "state=\"ok\"} 1")) n++;
        if (!strncmp(line, "pfi_gpu_up{gpu=\"3\"", 18) && strstr(line, "state=\"timeout\"} 0"))
            *gpu3_timeout = 1;
    }
    return n;
}

static const char *ALL = "{\"lease_s\":600,\"controller\":\"b\",\"generation\":%d,\"gpus\":["
                         "{\"index\":0,\"cap_w\":300},{\"index\":1,\"cap_w\":300},"
                         "{\"index\":2,\"cap_w\":300},{\"index\":3,\"cap_w\":300},"
                         "{\"index\":4,\"cap_w\":300},{\"index\":5,\"cap_w\":300},"
                         "{\"index\":6,\"cap_w\":300},{\"index\":7,\"cap_w\":300}]}";

static void cap_and_release(const char *url, const char *label, int gen)
{
    char body[1024], name[160];
    snprintf(body, sizeof body, ALL, gen);
    double t0 = bench_now();
    double ans = http(url, "/v1/caps", body);
    double landed = seven_at(300, t0);
    snprintf(name, sizeof name, "%s: PUT capping 7 of 8, answer", label);
    BENCH_RESULT(name, ans, "s", "< 1");
    snprintf(name, sizeof name, "%s: PUT capping 7 of 8, all 7 landed", label);
    BENCH_RESULT(name, landed, "s", "< 1");
    snprintf(body, sizeof body,
             "{\"lease_s\":600,\"controller\":\"b\",\"generation\":%d,\"gpus\":[]}", gen);
    t0 = bench_now();
    ans = http(url, "/v1/caps", body);
    landed = seven_at(700, t0);
    snprintf(name, sizeof name, "%s: release, answer", label);
    BENCH_RESULT(name, ans, "s", "< 1");
    snprintf(name, sizeof name, "%s: release, all 7 restored", label);
    BENCH_RESULT(name, landed, "s", "< 1");
}

static void one_gpu(const char *bin)
{
    char url[128];
    unsetenv("FAKE_NVML_STALL_GLOBAL");
    pid_t p = start(bin, "2", url, sizeof url);
    if (p < 0) {
        printf("bench agent stall: could not start\n");
        return;
    }
    sleep(1);
    double n0 = metric(url, "pfi_agent_samples_total");
    write_file("stall", "3 6000\n");
    double t0 = bench_now(), found = NAN, worst = 0;
    while (bench_now() - t0 < 10) {
        double w0 = bench_now();
        int t3 = 0;
        up_ok(url, &t3);
        double dt = bench_now() - w0;
        if (dt > worst) worst = dt;
        if (t3 && isnan(found)) found = bench_now() - t0;
        usleep(100000);
    }
    double n1 = metric(url, "pfi_agent_samples_total");
    BENCH_RESULT("one GPU stalling 6 s a call: reported timeout after", found, "s",
                 "~ 2 (deadline)");
    BENCH_RESULT("one GPU stalling 6 s a call: slowest GET /metrics in 10 s", worst, "s", "< 1");
    BENCH_RESULT("one GPU stalling 6 s a call: sampling rounds in 10 s (5 Hz asked)", n1 - n0, "",
                 "reported");
    cap_and_release(url, "one GPU stalling 6 s a call", 1);
    write_file("stall", "");
    kill(p, SIGTERM);
    waitpid(p, NULL, 0);
}

static void driver_wide(const char *bin)
{
    char url[128];
    setenv("FAKE_NVML_STALL_GLOBAL", "1", 1);
    pid_t p = start(bin, "1", url, sizeof url);
    if (p < 0) {
        printf("bench agent stall (driver-wide): could not start\n");
        return;
    }
    sleep(1);
    write_file("stall", "3 1500\n");
    double t0 = bench_now(), isolated = NAN;
    while (bench_now() - t0 < 120 && isnan(isolated)) {
        int t3 = 0;
        if (up_ok(url, &t3) == 7 && t3) isolated = bench_now() - t0;
        usleep(100000);
    }
    BENCH_RESULT("driver-wide stall 1.5 s a call: 7 healthy back, GPU 3 alone out, after", isolated,
                 "s", "reported");
    cap_and_release(url, "driver-wide stall, GPU 3 isolated", 2);
    write_file("stall", "");
    unsetenv("FAKE_NVML_STALL_GLOBAL");
    kill(p, SIGTERM);
    waitpid(p, NULL, 0);
}

int main(void)
{
    const char *bin = getenv("PFI_AGENT_BIN"), *fake = getenv("FAKE_NVML");
    if (!bin || !fake) {
        fprintf(stderr, "bench_agent_stall: PFI_AGENT_BIN and FAKE_NVML are needed\n");
        return 2;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/pfi-bench-stall-XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    char p[512];
    snprintf(p, sizeof p, "%s/token", g_dir);
    unsigned char r[32];
    FILE *u = fopen("/dev/urandom", "r");
    if (!u || fread(r, 1, sizeof r, u) != sizeof r) return 1;
    fclose(u);
    for (size_t k = 0; k < sizeof r; k++) snprintf(g_token + 2 * k, 3, "%02x", r[k]);
    write_file("token", g_token);
    chmod(p, 0600);
    char nv[512], st[512];
    snprintf(nv, sizeof nv, "%s/nvml", g_dir);
    snprintf(st, sizeof st, "%s/stall", g_dir);
    setenv("PFI_NVML_LIBRARY", fake, 1);
    setenv("FAKE_NVML_GPUS", "8", 1);
    setenv("FAKE_NVML_STATE", nv, 1);
    setenv("FAKE_NVML_STALL", st, 1);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    one_gpu(bin);
    driver_wide(bin);
    curl_global_cleanup();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd)) return 0;
    return 0;
}
