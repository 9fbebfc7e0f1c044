/* demo_failover.c — `pfi demo --failover` (issue 45; docs/controller.md,
 * "Failover on etcd"): three etcd members on loopback (Debian's
 * etcd-server, found on PATH), two controllers (ctl-a, ctl-b) failing over
 * on them, the leader SIGKILLed during the event, and one line: how long
 * until every agent held the new leader's lease, and how many GPUs' caps
 * lapsed back to their baseline meanwhile (the agents' leases are 12 wall
 * seconds, the etcd lease 2 s). */
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "demo_internal.h"
#include "etcd.h"

/* n ports the kernel picked (bound to port 0, then released) */
static int free_ports(int *port, int n)
{
    int fd[2 * DEMO_ETCD];
    for (int i = 0; i < n; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
        socklen_t len = sizeof a;
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fd[i] < 0 || bind(fd[i], (struct sockaddr *)&a, sizeof a) ||
            getsockname(fd[i], (struct sockaddr *)&a, &len))
            return -1;
        port[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++) close(fd[i]);
    return 0;
}

static int etcd_healthy(const demo *d)
{
    const char *eps[DEMO_ETCD];
    char buf[sizeof d->etcd_eps];
    snprintf(buf, sizeof buf, "%s", d->etcd_eps);
    size_t n = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t && n < DEMO_ETCD;
         t = strtok_r(NULL, ",", &save))
        eps[n++] = t;
    pfi_etcd_cfg cfg = {.endpoints = eps, .nendpoints = n, .prefix = "/pfi-demo/", .timeout_s = 1};
    pfi_etcd *e;
    pfi_error err;
    if (pfi_etcd_open(&cfg, &e, &err)) return 0;
    pfi_etcd_answer a;
    int ok = !pfi_etcd_put(e, "up", "1", 1, 0, &a, &err);
    pfi_etcd_answer_free(&a);
    pfi_etcd_close(e);
    return ok;
}

int demo_fo_etcd(demo *d)
{
    int port[2 * DEMO_ETCD];
    if (free_ports(port, 2 * DEMO_ETCD)) return demo_fail(d, "no free ports on 127.0.0.1");
    char init[512] = "";
    d->etcd_eps[0] = 0;
    for (int i = 0; i < DEMO_ETCD; i++) {
        size_t k = strlen(init), e = strlen(d->etcd_eps);
        snprintf(init + k, sizeof init - k, "%se%d=http://127.0.0.1:%d", i ? "," : "", i + 1,
                 port[DEMO_ETCD + i]);
        snprintf(d->etcd_eps + e, sizeof d->etcd_eps - e, "%shttp://127.0.0.1:%d", i ? "," : "",
                 port[i]);
    }
    for (int i = 0; i < DEMO_ETCD; i++) {
        char name[8], data[4300], log[4300], cu[64], pu[64];
        snprintf(name, sizeof name, "e%d", i + 1);
        snprintf(data, sizeof data, "%s/etcd-%s", d->dir, name);
        snprintf(log, sizeof log, "%s/etcd-%s.log", d->dir, name);
        snprintf(cu, sizeof cu, "http://127.0.0.1:%d", port[i]);
        snprintf(pu, sizeof pu, "http://127.0.0.1:%d", port[DEMO_ETCD + i]);
        char *av[] = {"etcd", "--name",
                      name,   "--data-dir",
                      data,   "--listen-client-urls",
                      cu,     "--advertise-client-urls",
                      cu,     "--listen-peer-urls",
                      pu,     "--initial-advertise-peer-urls",
                      pu,     "--initial-cluster",
                      init,   "--initial-cluster-state",
                      "new",  NULL};
        d->etcd_pids[i] = demo_spawn(av, log);
    }
    for (int k = 0; k < 300; k++) { /* 30 s */
        if (etcd_healthy(d)) {
            fprintf(d->o->out, "pfi demo: 3 etcd members at %s\n", d->etcd_eps);
            return 0;
        }
        for (int i = 0; i < DEMO_ETCD; i++)
            if (waitpid(d->etcd_pids[i], NULL, WNOHANG) == d->etcd_pids[i]) {
                d->etcd_pids[i] = 0;
                return demo_fail(d,
                                 "etcd did not start (see %s/etcd-e%d.log; pfi demo --failover "
                                 "needs the Debian package etcd-server)",
                                 d->dir, i + 1);
            }
        usleep(100000);
    }
    return demo_fail(d, "etcd did not become healthy within 30 s; see %s/etcd-e*.log", d->dir);
}

json_t *demo_fo_config(const demo *d, const char *name)
{
    json_t *eps = json_array();
    char buf[sizeof d->etcd_eps];
    snprintf(buf, sizeof buf, "%s", d->etcd_eps);
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(eps, json_string(t));
    return json_pack("{s:o,s:s,s:s,s:f,s:f}", "etcd", eps, "prefix", "/pfi-demo/", "name", name,
                     "ttl_s", 2.0, "timeout_s", 1.0);
}

static const char *role(const char *url)
{
    json_t *s = demo_get_json(url, "/v1/status");
    const char *r = json_string_value(json_object_get(json_object_get(s, "failover"), "role"));
    static char out[16];
    snprintf(out, sizeof out, "%s", r ? r : "");
    json_decref(s);
    return out;
}

int demo_fo_wait_roles(demo *d)
{
    for (int k = 0; k < 300; k++) { /* 30 s */
        if (!strcmp(role(d->url), "leader") && !strcmp(role(d->url_b), "follower")) {
            fprintf(d->o->out, "  failover: ctl-a leads at %s, ctl-b follows at %s\n", d->url,
                    d->url_b);
            return 0;
        }
        usleep(100000);
    }
    return demo_fail(d, "ctl-a did not lead with ctl-b following within 30 s; see %s", d->clog);
}

/* GPUs at their baseline (700 W) now, and whether every agent holds ctl-b's lease */
static int agents_now(const demo *d, int *at_baseline)
{
    int all_b = 1;
    *at_baseline = 0;
    for (int i = 0; i < NAG; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", d->ports[i]);
        json_t *n = demo_get_json(url, "/v1/node");
        const char *ctl =
            json_string_value(json_object_get(json_object_get(n, "lease"), "controller"));
        all_b &= ctl && strstr(ctl, "/ctl-b") != NULL;
        size_t k;
        json_t *g;
        json_array_foreach(json_object_get(n, "gpus"), k, g) *at_baseline +=
            json_number_value(json_object_get(g, "cap_w")) >= 699.5;
        json_decref(n);
    }
    return all_b;
}

void demo_fo_kill(demo *d)
{
    double t0 = pfi_wall_monotonic(), at = (pfi_clock_now() - d->ev.start) / 60;
    kill(d->pids[NAG], SIGKILL);
    waitpid(d->pids[NAG], NULL, 0);
    d->pids[NAG] = 0;
    d->killed = 1;
    snprintf(d->url, sizeof d->url, "%s", d->url_b);
    snprintf(d->clog, sizeof d->clog, "%s", d->clog_b);
    int lapsed = 0, now, all_b = 0;
    while (!all_b && pfi_wall_monotonic() - t0 < 30) {
        all_b = agents_now(d, &now);
        if (now > lapsed) lapsed = now;
        usleep(50000);
    }
    if (all_b)
        fprintf(d->o->out,
                "  failover: leader ctl-a SIGKILLed at %+.1f min; ctl-b took over in %.1f s "
                "(every agent under its lease); %d of %d caps lapsed\n",
                at, pfi_wall_monotonic() - t0, lapsed, NAG * 8);
    else
        fprintf(d->o->out,
                "  failover: leader ctl-a SIGKILLed at %+.1f min; ctl-b did NOT take over "
                "within 30 s (see %s); %d of %d caps lapsed\n",
                at, d->clog_b, lapsed, NAG * 8);
    fflush(d->o->out);
}

void demo_fo_stop(demo *d)
{
    if (d->pid_b > 0) kill(d->pid_b, SIGTERM), waitpid(d->pid_b, NULL, 0);
    for (int i = 0; i < DEMO_ETCD; i++)
        if (d->etcd_pids[i] > 0) kill(d->etcd_pids[i], SIGTERM), waitpid(d->etcd_pids[i], NULL, 0);
}
