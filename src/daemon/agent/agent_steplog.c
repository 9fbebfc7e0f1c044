/* agent_steplog.c — each job's step log, read outside the agent's lock
 * (agent.h: agent_jobs_read_steplogs; docs/agent.md, "Step logs are the job
 * user's files"): the file is the job user's, so it is checked before it is
 * opened and read without following links, at most the newest
 * AGENT_STEPLOG_MAX_BYTES a round. Split from agent_jobs.c (the mapping of
 * GPUs to jobs), which had grown past 800 lines. */
#include "agent.h"
#include "agent_client.h"
#include "atomic.h"
#include "clock.h"
#include "job_id.h"
#include "pfi/features.h"
#include "pfi/prom.h"
#include "pfi/steplog.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One job's step log, read outside the agent's lock. The path is the job
 * user's (its environment, or a file in a directory the job can write), so:
 * an absolute path; its last component is looked at without following a
 * symbolic link and must be a regular file owned by the job's user (else
 * it is not even opened: no FIFO to block on, no device to open); it is
 * opened O_NONBLOCK|O_NOFOLLOW relative to the directory already opened,
 * and must still be the same file; at most AGENT_STEPLOG_MAX_BYTES — the
 * newest — are read. */
typedef struct steplog_read {
    char id[64], path[1024];
    long long uid;
    long off;
    unsigned long long dev, ino;
    char why[200];      /* refused or unreadable: why ("" if read or absent) */
    double sum, last_t; /* over the complete records read */
    int n;
    unsigned refused; /* lines refused (pfi_steplog_parse_line: a bad key, not JSON) */
    char bad[120];    /* the first one's reason */
} steplog_read;

/* may the agent open this step log? PFI_EPERM with the reason in why if not */
static pfi_status steplog_check(const steplog_read *r, const struct stat *st, pfi_error *why)
{
    if (S_ISLNK(st->st_mode)) return pfi_errorf(why, PFI_EPERM, "a symbolic link (refused)");
    if (!S_ISREG(st->st_mode)) return pfi_errorf(why, PFI_EPERM, "not a regular file (refused)");
    long long want = r->uid == AGENT_UID_UNKNOWN ? (long long)geteuid() : r->uid;
    if (r->uid != AGENT_UID_ANY && (long long)st->st_uid != want)
        return pfi_errorf(
            why, PFI_EPERM, "owned by uid %lld, not the job's user (uid %lld%s; refused)",
            (long long)st->st_uid, want,
            r->uid == AGENT_UID_UNKNOWN ? ", the agent's: the job file names no uid" : "");
    return PFI_OK;
}

static void steplog_read_one(steplog_read *r, char *buf)
{
    r->why[0] = '\0';
    const char *slash = strrchr(r->path, '/');
    if (r->path[0] != '/' || !slash[1]) {
        snprintf(r->why, sizeof r->why, "not an absolute path to a file (refused)");
        return;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%.*s", slash == r->path ? 1 : (int)(slash - r->path), r->path);
    const char *base = slash + 1;
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return; /* not there (yet) */
    struct stat lst, st;
    pfi_error why = {.code = PFI_OK};
    if (fstatat(dfd, base, &lst, AT_SYMLINK_NOFOLLOW) != 0 || steplog_check(r, &lst, &why)) {
        if (why.code) snprintf(r->why, sizeof r->why, "%.*s", (int)sizeof r->why - 1, why.msg);
        close(dfd);
        return;
    }
    int fd = openat(dfd, base, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    close(dfd);
    if (fd < 0) {
        snprintf(r->why, sizeof r->why, "%s",
                 errno == ELOOP ? "a symbolic link (refused)" : strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0 || st.st_dev != lst.st_dev || st.st_ino != lst.st_ino) {
        snprintf(r->why, sizeof r->why, "replaced while being opened (skipped this round)");
        close(fd);
        return;
    }
    if ((unsigned long long)st.st_dev != r->dev || (unsigned long long)st.st_ino != r->ino ||
        st.st_size < r->off)
        r->off = 0; /* another file, or truncated: from its start */
    r->dev = (unsigned long long)st.st_dev;
    r->ino = (unsigned long long)st.st_ino;
    long size = (long)st.st_size, skip = 0;
    if (size - r->off > AGENT_STEPLOG_MAX_BYTES) { /* far behind: only the newest records count */
        r->off = size - AGENT_STEPLOG_MAX_BYTES;
        skip = 1;
    }
    size_t want = (size_t)(size - r->off), got = 0;
    while (got < want) {
        ssize_t k = pread(fd, buf + got, want - got, r->off + (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    size_t p = 0, done = 0;
    for (size_t e = 0; e < got; e++) {
        if (buf[e] != '\n') continue;
        double t, tps, mfu, tf;
        const char *bad;
        int k = skip ? 0 : pfi_steplog_parse_line(buf + p, e - p, &t, &tps, &mfu, &tf, &bad);
        if (k == 1) {
            r->sum += tps;
            r->n++;
            r->last_t = t;
        } else if (k < 0) { /* refused: counted, the first reason kept for the log */
            if (!r->refused++) snprintf(r->bad, sizeof r->bad, "%s", bad);
        }
        skip = 0;
        p = done = e + 1;
    }
    if (skip && got == want) done = got; /* the whole window is one unfinished line */
    r->off += (long)done;                /* a last line still being written is read next round */
}

void agent_jobs_read_steplogs(agent *a)
{
    pthread_mutex_lock(&a->mu);
    size_t n = 0;
    steplog_read *r = a->njobs ? calloc(a->njobs, sizeof *r) : NULL;
    for (size_t k = 0; r && k < a->njobs; k++) {
        const agent_job *j = &a->job[k];
        if (!j->steplog[0]) continue;
        steplog_read *x = &r[n++];
        snprintf(x->id, sizeof x->id, "%s", j->id);
        snprintf(x->path, sizeof x->path, "%s", j->steplog);
        x->uid = j->uid;
        x->off = j->steplog_off;
        x->dev = j->steplog_dev;
        x->ino = j->steplog_ino;
    }
    pthread_mutex_unlock(&a->mu);
    char *buf = n ? malloc(AGENT_STEPLOG_MAX_BYTES) : NULL;
    if (!buf) n = 0;
    for (size_t q = 0; q < n; q++) steplog_read_one(&r[q], buf);
    free(buf);
    pthread_mutex_lock(&a->mu);
    for (size_t q = 0; q < n; q++)
        for (size_t k = 0; k < a->njobs; k++) {
            agent_job *j = &a->job[k];
            if (strcmp(j->id, r[q].id) || strcmp(j->steplog, r[q].path))
                continue; /* changed meanwhile */
            if (r[q].why[0] && strcmp(r[q].why, j->steplog_why))
                agent_log(a, "warning: job %s: step log %s: %s", j->id, j->steplog, r[q].why);
            snprintf(j->steplog_why, sizeof j->steplog_why, "%s", r[q].why);
            j->steplog_off = r[q].off;
            j->steplog_dev = r[q].dev;
            j->steplog_ino = r[q].ino;
            if (r[q].refused) {
                a->steplog_refused += r[q].refused;
                if (!j->steplog_refused_logged++)
                    agent_log(a,
                              "warning: job %s: step log %s: %u lines refused (%s); counted in "
                              "pfi_agent_steplog_lines_refused_total, logged once per job",
                              j->id, j->steplog, r[q].refused, r[q].bad);
            }
            if (r[q].n) {
                j->tokens_per_s = r[q].sum / r[q].n; /* mean over the steps since the last sample */
                j->tokens_t = r[q].last_t;
            }
        }
    pthread_mutex_unlock(&a->mu);
    free(r);
}
