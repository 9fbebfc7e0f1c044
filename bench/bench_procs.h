/* bench_procs.h — starting the daemons a benchmark measures: a process
 * with its output in a log file, its kernel-chosen port from its port file,
 * and a pfi-agent on the sim backend as the demo starts one. */
#ifndef PFI_BENCH_PROCS_H
#define PFI_BENCH_PROCS_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

/* a token file at path (mode 0600) holding a token named after the
   benchmark (name) and this process; the token in tok */
static inline void bench_make_token(const char *path, const char *name, char *tok, size_t n)
{
    snprintf(tok, n, "bench-%s-token-%ld-0123456789abcdef", name, (long)getpid());
    FILE *f = fopen(path, "w");
    if (f) fprintf(f, "%s\n", tok), fclose(f);
    chmod(path, 0600);
}

/* a daemon started by bench_spawn stopped (SIGTERM) and reaped; p <= 0: none */
static inline void bench_stop(pid_t p)
{
    if (p > 0) kill(p, SIGTERM), waitpid(p, NULL, 0);
}

/* qsort's order of doubles */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* argv[0] with stdout and stderr in log */
static inline pid_t bench_spawn(char *const argv[], const char *log)
{
    pid_t p = fork();
    if (p == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    return p;
}

/* the port pid wrote to path, waiting up to limit_s; -1 when it exited first
 * or the time ran out */
static inline int bench_read_port(const char *path, pid_t pid, double limit_s)
{
    double end = bench_now() + limit_s;
    while (bench_now() < end) {
        FILE *f = fopen(path, "r");
        int port = 0;
        if (f) {
            int ok = fscanf(f, "%d", &port) == 1 && port > 0;
            fclose(f);
            if (ok) return port;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) return -1;
        usleep(25000);
    }
    return -1;
}

/* pfi-agent number i on backend (sim:...), its files dir/aI.{port,state,log},
 * token file tokf, sampling every interval_s: its port, or -1 (*pid set
 * either way) */
static inline int bench_start_agent(const char *agent_bin, const char *dir, int i,
                                    const char *backend, const char *tokf, const char *interval_s,
                                    pid_t *pid)
{
    char be[1024], portf[512], state[512], log[512];
    snprintf(be, sizeof be, "%s", backend);
    snprintf(portf, sizeof portf, "%s/a%d.port", dir, i);
    snprintf(state, sizeof state, "%s/a%d.state", dir, i);
    snprintf(log, sizeof log, "%s/a%d.log", dir, i);
    char *argv[] = {(char *)agent_bin,
                    "--backend",
                    be,
                    "--listen",
                    "127.0.0.1:0",
                    "--port-file",
                    portf,
                    "--token-file",
                    (char *)tokf,
                    "--state-file",
                    state,
                    "--interval",
                    (char *)interval_s,
                    NULL};
    *pid = bench_spawn(argv, log);
    return bench_read_port(portf, *pid, 10);
}

/* the demo's controller (default tier 3, no ramp, 10 s baseline window) over
 * n agents at urls with token tokf, its files DIR/NAME.{json,port,db} and its
 * log at log: its port, or -1 (*pid set when it was started) */
static inline int bench_start_demo_controller(const char *ctl_bin, const char *dir,
                                              const char *name, const char *tokf, char urls[][64],
                                              int n, const char *log, pid_t *pid)
{
    char cfg[512], portf[512], db[512];
    snprintf(cfg, sizeof cfg, "%s/%s.json", dir, name);
    snprintf(portf, sizeof portf, "%s/%s.port", dir, name);
    snprintf(db, sizeof db, "%s/%s.db", dir, name);
    *pid = -1;
    FILE *f = fopen(cfg, "w");
    if (!f) return -1;
    fprintf(f,
            "{\"listen\": \"127.0.0.1:0\", \"token_file\": \"%s\", \"db\": \"%s\", "
            "\"baseline_window_s\": 10, \"ramp_s\": 0, \"default_tier\": 3, \"agents\": [",
            tokf, db);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s{\"name\": \"a%d\", \"url\": \"%s\", \"token_file\": \"%s\"}", i ? ", " : "",
                i, urls[i], tokf);
    fprintf(f, "]}\n");
    fclose(f);
    char *argv[] = {(char *)ctl_bin, "--config", cfg, "--port-file", portf, NULL};
    *pid = bench_spawn(argv, log);
    return bench_read_port(portf, *pid, 10);
}

#endif
