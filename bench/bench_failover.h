/* bench_failover.h — bench_controller's failover measurement (issue 45;
 * docs/controller.md, "Failover on etcd"), included by bench_controller.c
 * after its farm. With BENCH_CTL_ETCD=URL[,URL...] (an etcd cluster the
 * caller runs: scripts/bench-failover.sh starts three members on loopback)
 * the controller fails over on it ("failover" in its configuration);
 * BENCH_CTL_KILLS=K (20) then starts a second controller, a follower, and
 * during the event SIGKILLs whichever leads K times, restarting it as a
 * follower each time, a random fraction of a period apart. The farm fences
 * as a pfi-agent does (a lower generation than its highest: 409) and keeps
 * each agent's lease (lease_s from the PUT). Printed: takeover (kill ->
 * the first PUT the farm accepts from the other controller) p50 / p99 /
 * max, target <= TTL + one period + 2 s; agents whose lease lapsed
 * (target 0 at lease_s 15 s); pushes refused as stale. */
#ifndef BENCH_FAILOVER_H
#define BENCH_FAILOVER_H

/* in the farm's shared memory (at +3072): what the kill loop watches */
typedef struct farm_fo {
    double kill_t;                    /* the last kill's time (0: none yet) */
    char killed[32];                  /* its controller's name */
    double first_new_t;               /* the first PUT accepted from another controller after it */
    unsigned long long stale, lapsed; /* 409s; PUTs that found the lease lapsed */
} farm_fo;
static farm_fo *g_fo;

/* a PUT's generation and lease against the agent's (g_mu held): 0 take
   it, 409 refuse it (stale) */
static int farm_fence(farm_agent *fa, const char *body, double now)
{
    const char *g = body ? strstr(body, "\"generation\":") : NULL;
    const char *l = body ? strstr(body, "\"lease_s\":") : NULL;
    const char *c = body ? strstr(body, "\"controller\":\"") : NULL;
    long long gen = g ? atoll(g + 13) : 0;
    if (gen < fa->gen_max) {
        g_fo->stale++;
        return 409;
    }
    if (fa->lease_until > 0 && now > fa->lease_until) g_fo->lapsed++;
    fa->gen_max = gen;
    fa->lease_until = now + (l ? atof(l + 10) : 0);
    if (g_fo->kill_t > 0 && !(g_fo->first_new_t > 0) && c) {
        char name[32];
        const char *slash = strchr(c + 14, '/'), *q = strchr(c + 14, '"');
        if (slash && q && slash < q) {
            snprintf(name, sizeof name, "%.*s", (int)(q - slash - 1), slash + 1);
            if (strcmp(name, g_fo->killed)) g_fo->first_new_t = now;
        }
    }
    return 0;
}

/* 1 when the controller at url says it leads */
static int fo_leads(const char *url)
{
    pfi_http_reply r;
    pfi_error e;
    char full[256];
    snprintf(full, sizeof full, "%s/metrics", url);
    if (pfi_http_request("GET", full, NULL, NULL, 5, &r, &e)) return 0;
    int lead = r.body && strstr(r.body, "pfi_ctl_leader{role=\"leader\"} 1");
    pfi_http_reply_dispose(&r);
    return lead;
}

/* the "failover" key of the configuration, or "" */
static void fo_config(char *out, size_t n, const char *name)
{
    const char *eps = getenv("BENCH_CTL_ETCD");
    out[0] = 0;
    if (!eps || !*eps) return;
    size_t k = (size_t)snprintf(out, n, "\"failover\": {\"etcd\": [");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", eps);
    int first = 1;
    for (char *save, *t = strtok_r(buf, ",", &save); t && k < n; t = strtok_r(NULL, ",", &save))
        k += (size_t)snprintf(out + k, n - k, "%s\"%s\"", first ? "" : ", ", t), first = 0;
    if (k < n)
        snprintf(out + k, n - k,
                 "], \"prefix\": \"/pfi/bench-%d/\", \"name\": \"%s\", \"ttl_s\": 2, "
                 "\"timeout_s\": 1}, ",
                 (int)getpid(), name);
}

/* a copy of the configuration at cfg for controller ctl-b (its own database) */
static int fo_config_b(const char *cfg, const char *db, char *cfg_b, size_t n)
{
    if (snprintf(cfg_b, n, "%s.b", cfg) >= (int)n) return -1;
    FILE *f = fopen(cfg, "r"), *o = fopen(cfg_b, "w");
    if (!f || !o) {
        if (f) fclose(f);
        if (o) fclose(o);
        return -1;
    }
    static char text[1 << 22];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
    char *p = strstr(text, "\"ctl-a\""), *d = strstr(text, db);
    if (!p || !d) {
        fclose(o);
        return -1;
    }
    p[5] = 'b';
    fwrite(text, 1, (size_t)(d - text), o);
    fprintf(o, "%s.b%s", db, d + strlen(db));
    fclose(o);
    return 0;
}

typedef struct fo_ctl {
    pid_t pid;
    char cfg[600], log[600], portf[600], url[64];
    int restarts;
} fo_ctl;

static int fo_start(const char *ctl_bin, fo_ctl *c)
{
    char log[700];
    snprintf(log, sizeof log, "%s.%d", c->log, c->restarts++);
    char *argv[] = {(char *)ctl_bin, "--config", c->cfg, "--port-file", c->portf, NULL};
    unlink(c->portf);
    c->pid = bench_spawn(argv, log);
    int port = bench_read_port(c->portf, c->pid, 300);
    snprintf(c->url, sizeof c->url, "http://127.0.0.1:%d", port);
    return port > 0 ? 0 : -1;
}

static void fo_kills(const char *ctl_bin, fo_ctl *ctl, unsigned nfarm, double period_s, int kills)
{
    double take[64];
    int n = 0;
    for (int k = 0; k < kills && k < 64; k++) {
        int lead = -1;
        for (double end = bench_now() + 30; lead < 0 && bench_now() < end; usleep(50000))
            lead = fo_leads(ctl[0].url) ? 0 : fo_leads(ctl[1].url) ? 1 : -1;
        if (lead < 0) break;
        usleep((useconds_t)(1e6 * period_s * (double)(rand() % 100) / 100)); /* any phase */
        pthread_mutex_lock(g_mu);
        snprintf(g_fo->killed, sizeof g_fo->killed, "ctl-%c", 'a' + lead);
        g_fo->first_new_t = 0;
        g_fo->kill_t = bench_now();
        pthread_mutex_unlock(g_mu);
        kill(ctl[lead].pid, SIGKILL);
        waitpid(ctl[lead].pid, NULL, 0);
        double t_new = 0;
        for (double end = bench_now() + 60; !(t_new > 0) && bench_now() < end; usleep(10000)) {
            pthread_mutex_lock(g_mu);
            t_new = g_fo->first_new_t;
            pthread_mutex_unlock(g_mu);
        }
        if (t_new > 0) take[n++] = t_new - g_fo->kill_t;
        if (fo_start(ctl_bin, &ctl[lead])) break;
        usleep((useconds_t)(3e6 * period_s)); /* a few periods under the new leader */
    }
    double now = bench_now();
    unsigned long long left = 0;
    pthread_mutex_lock(g_mu);
    for (unsigned i = 0; i < nfarm; i++)
        left += g_farm[i].lease_until > 0 && now > g_farm[i].lease_until;
    unsigned long long lapsed = g_fo->lapsed + left, stale = g_fo->stale;
    pthread_mutex_unlock(g_mu);
    qsort(take, (size_t)n, sizeof *take, cmp);
    printf("bench controller %u agents: %d leader kills during the event (failover on etcd, TTL "
           "2 s, period %g s, lease 15 s), %llu pushes refused as stale\n",
           nfarm, n, period_s, stale);
    char what[96];
    if (n) {
        snprintf(what, sizeof what, "failover %ux8: takeover p50", nfarm);
        BENCH_RESULT(what, quant(take, n, 0.5), "s", "reported");
        snprintf(what, sizeof what, "failover %ux8: takeover p99", nfarm);
        BENCH_RESULT(what, quant(take, n, 0.99), "s", "<= TTL + period + 2 s");
        snprintf(what, sizeof what, "failover %ux8: takeover max", nfarm);
        BENCH_RESULT(what, take[n - 1], "s", "reported");
    }
    snprintf(what, sizeof what, "failover %ux8: agents' leases lapsed", nfarm);
    BENCH_RESULT(what, (double)lapsed, "", "0");
}

#endif
