/* http_fixture.c — test fixture: a tiny HTTP server (libmicrohttpd) on
 * 127.0.0.1 that serves dcgm-exporter-style text at /metrics, for the
 * `pfi record` tests. Writes its port to the file given as argv[1], then
 * serves until SIGTERM. Every scrape's values carry the scrape number so a
 * test can check that scrapes are whole and in order:
 *   DCGM_FI_DEV_POWER_USAGE = 500 + n, GPU_UTIL 97, FB 60000, limit 700,
 * for two GPUs on host "fixture". /status500 answers 500; /flaky answers
 * 500 and /metrics' text by turns, starting with 500; /moved answers 302
 * to /metrics with an HTML page (as a proxy's login page does). With a second
 * argument FILE, /file serves FILE's current contents (JSON; e.g. an
 * OpenADR VTN's events for the controller's poller). */
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int s)
{
    (void)s;
    stop = 1;
}
static long scrapes, flaky;
static const char *g_file;

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ptr)
{
    (void)cls, (void)method, (void)version, (void)data, (void)size, (void)ptr;
    char body[8192];
    int status = MHD_HTTP_OK;
    size_t n = 0;
    if (strcmp(url, "/metrics") == 0 || (strcmp(url, "/flaky") == 0 && ++flaky % 2 == 0)) {
        long k = ++scrapes;
        const char *m[] = {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
                           "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"};
        double v[] = {500.0 + (double)k, 97, 60000, 700};
        for (int i = 0; i < 4; i++) {
            n += (size_t)snprintf(body + n, sizeof body - n, "# HELP %s x\n# TYPE %s gauge\n", m[i],
                                  m[i]);
            for (int g = 0; g < 2; g++)
                n += (size_t)snprintf(body + n, sizeof body - n,
                                      "%s{gpu=\"%d\",UUID=\"GPU-f%d\",Hostname=\"fixture\"} %g\n",
                                      m[i], g, g, v[i]);
        }
    } else if (strcmp(url, "/moved") == 0) {
        status = MHD_HTTP_FOUND;
        n = (size_t)snprintf(body, sizeof body, "<html><body>moved</body></html>\n");
    } else if (g_file && strcmp(url, "/file") == 0) {
        FILE *f = fopen(g_file, "r");
        n = f ? fread(body, 1, sizeof body, f) : 0;
        if (f) fclose(f);
        if (!f) status = MHD_HTTP_NOT_FOUND;
    } else {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        n = (size_t)snprintf(body, sizeof body, "error\n");
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_COPY);
    if (status == MHD_HTTP_FOUND) MHD_add_response_header(r, "Location", "/metrics");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    g_file = argc > 2 ? argv[2] : NULL;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, NULL,
                         MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_END);
    if (!d) return 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%u\n", (unsigned)info->port);
    fclose(f);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    while (!stop) usleep(20000);
    MHD_stop_daemon(d);
    return 0;
}
