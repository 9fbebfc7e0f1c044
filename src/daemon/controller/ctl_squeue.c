/* ctl_squeue.c — Slurm's queue for the offer's forecast (ctl_squeue.h): the
 * configured squeue run with its arguments fixed here (squeue.h's format,
 * SLURM_TIME_FORMAT=%s for Unix times), stdin from /dev/null, its output
 * read within a wall-clock deadline; past it the process is killed (a dead
 * slurmctld makes squeue wait its MessageTimeout and retry). posix_spawnp,
 * not fork: the controller is multithreaded. */
#include "ctl_squeue.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"

#define OUT_MAX (64u << 20) /* 1,000,000 jobs at ~60 bytes */

extern char **environ;

/* environ with SLURM_TIME_FORMAT=%s (malloc'd array; the strings are environ's) */
static char **env_with_time_format(void)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **e = calloc(n + 2, sizeof *e);
    if (!e) return NULL;
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (strncmp(environ[k], "SLURM_TIME_FORMAT=", 18)) e[m++] = environ[k];
    e[m++] = "SLURM_TIME_FORMAT=%s";
    return e;
}

static pid_t spawn(const char *cmd, int out_fd, int err_fd, char *why, size_t whyn)
{
    char *const argv[] = {(char *)cmd,       "-h", "-a", "-t", "RUNNING,PENDING", "-o",
                          PFI_SQUEUE_FORMAT, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    char **env = env_with_time_format();
    pid_t pid = -1;
    int rc = env ? posix_spawnp(&pid, cmd, &fa, NULL, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (rc) {
        snprintf(why, whyn, "%s: %s", cmd, strerror(rc));
        return -1;
    }
    return pid;
}

/* read both pipes until EOF on stdout or the deadline; 0, or -1 with why */
static int drain(int out_fd, int err_fd, double deadline, char **out, size_t *len, char *err_line,
                 size_t errn, char *why, size_t whyn)
{
    size_t cap = 0, elen = 0;
    int open_out = 1, open_err = 1;
    while (open_out) {
        double left = deadline - pfi_wall_monotonic();
        if (left <= 0) return snprintf(why, whyn, "no answer within its timeout"), -1;
        struct pollfd p[2] = {{out_fd, POLLIN, 0}, {open_err ? err_fd : -1, POLLIN, 0}};
        int r = poll(p, 2, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR) return snprintf(why, whyn, "poll: %s", strerror(errno)), -1;
        if (r <= 0) continue;
        if (p[1].revents) {
            char b[512];
            ssize_t k = read(err_fd, b, sizeof b);
            if (k <= 0) open_err = 0;
            for (ssize_t i = 0; i < k && elen + 1 < errn; i++) err_line[elen++] = b[i];
            err_line[elen] = '\0';
        }
        if (!p[0].revents) continue;
        if (*len + 65536 > cap) {
            if (cap >= OUT_MAX) return snprintf(why, whyn, "over %u bytes of output", OUT_MAX), -1;
            char *nb = realloc(*out, cap = cap ? cap * 2 : 65536 * 2);
            if (!nb) return snprintf(why, whyn, "out of memory"), -1;
            *out = nb;
        }
        ssize_t k = read(out_fd, *out + *len, cap - *len - 1);
        if (k < 0 && errno != EINTR && errno != EAGAIN)
            return snprintf(why, whyn, "read: %s", strerror(errno)), -1;
        if (k == 0) open_out = 0;
        if (k > 0) *len += (size_t)k;
    }
    return 0;
}

/* the first line of squeue's stderr, printable ASCII only (a log line) */
static void first_line(char *s)
{
    size_t k = 0;
    for (; s[k] && s[k] != '\n'; k++)
        if (s[k] < 0x20 || s[k] > 0x7e) s[k] = '?';
    s[k] = '\0';
}

int ctl_squeue_read(const char *cmd, double timeout_s, pfi_squeue_job **jobs, size_t *n, char *why,
                    size_t whyn)
{
    *jobs = NULL, *n = 0;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC)) return snprintf(why, whyn, "pipe: %s", strerror(errno)), -1;
    if (pipe2(pe, O_CLOEXEC)) {
        close(po[0]), close(po[1]);
        return snprintf(why, whyn, "pipe: %s", strerror(errno)), -1;
    }
    double deadline = pfi_wall_monotonic() + timeout_s;
    pid_t pid = spawn(cmd, po[1], pe[1], why, whyn);
    close(po[1]), close(pe[1]);
    char *out = NULL, err_line[256] = "";
    size_t len = 0;
    int rc = pid < 0
                 ? -1
                 : drain(po[0], pe[0], deadline, &out, &len, err_line, sizeof err_line, why, whyn);
    close(po[0]), close(pe[0]);
    int st = 0;
    if (pid > 0) {
        if (rc) kill(pid, SIGKILL);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st))) {
        first_line(err_line);
        snprintf(why, whyn, "%s exited with status %d%s%s", cmd,
                 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), *err_line ? ": " : "",
                 err_line);
        rc = -1;
    }
    if (!rc) {
        pfi_error e;
        if (pfi_squeue_parse(out ? out : "", len, cmd, jobs, n, &e)) {
            snprintf(why, whyn, "%s", e.msg);
            rc = -1;
        }
    }
    free(out);
    return rc;
}
