/* ctl_lock.c — one controller per database (docs/controller.md, "One
 * writer"; docs/deploy.md, "Standby"): two exclusive flock(2)s taken
 * before the database is opened and held for the process's life:
 *  - on the database file itself (created 0600 when missing), so that
 *    every path to it — a symbolic link, a hard link, another spelling —
 *    meets the same lock (issue 41: the lock was per configured path, and a
 *    symlinked db path ran a second writer);
 *  - on DB.lock beside the database's real path (realpath(3)), which holds
 *    its holder as one line, "pid P on host H, listening on ADDR", so that
 *    a second controller's refusal names the first, and whether that pid
 *    still runs on this host. Earlier versions took only DB.lock: during
 *    an upgrade the old and the new controller meet at that one, the new
 *    taking both.
 *
 * Why flock and not SQLite's locking: in WAL mode SQLite lets many
 * connections (and processes) read and write the same database, and its
 * locks name no holder. flock is released by the kernel when the holder
 * exits however it exits (SIGKILL, a crash), so the lock is never a stale
 * blocker; the files stay (a file without a holder is no lock). DB.lock is
 * never unlinked: unlinking a lock file another process has opened but not
 * yet locked would let two holders lock two files. flock on Linux is
 * independent of SQLite's POSIX (fcntl) locks on the same file; the
 * database's lock descriptor is never closed, since closing any descriptor
 * of the file would drop SQLite's POSIX locks. flock holds between
 * processes of one host only: on NFS it is emulated (or not at all), so it
 * does not keep two hosts apart (docs/deploy.md). Both files are created
 * 0600 (they were 0644 outside the unit). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

static int g_lock_fd = -1, g_db_fd = -1;

/* the holder's line from fd (at most n - 1 bytes, newline dropped); "" when empty */
static void read_holder(int fd, char *b, size_t n)
{
    ssize_t k = pread(fd, b, n - 1, 0);
    b[k > 0 ? k : 0] = '\0';
    b[strcspn(b, "\n")] = '\0';
    for (char *p = b; *p; p++)
        if ((unsigned char)*p < 0x20) *p = '?';
}

/* the holder's line, waiting a moment for it: a holder writes it just after
 * it locks (up to 1 s) */
static void wait_holder(int fd, char *b, size_t n)
{
    for (int i = 0; i < 40; i++) {
        read_holder(fd, b, n);
        if (b[0]) return;
        struct timespec ts = {0, 25 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    snprintf(b, n, "its pid not written yet");
}

/* the holder's line, and whether its pid still runs when it is on this host */
static void holder_said(int fd, char *b, size_t n)
{
    wait_holder(fd, b, n);
    long pid = 0;
    char host[256] = "", me[256] = "";
    gethostname(me, sizeof me);
    me[sizeof me - 1] = '\0';
    if (sscanf(b, "pid %ld on host %255[^,]", &pid, host) == 2 && pid > 0 && !strcmp(host, me)) {
        size_t k = strlen(b);
        snprintf(b + k, n - k, "%s",
                 kill((pid_t)pid, 0) == 0 || errno == EPERM
                     ? "; it runs"
                     : "; that pid no longer runs: the lock is held by a process it left behind");
    }
}

static void refused(ctl *c, int fd, const char *lock_path)
{
    char holder[400];
    holder_said(fd, holder, sizeof holder);
    ctl_log(c,
            "error: %s: in use by another pfi-controller (%s; lock %s): one controller "
            "per database",
            c->cfg.db, holder, lock_path);
}

int ctl_lock_take(ctl *c)
{
    char real[PATH_MAX], path[PATH_MAX + 8];
    /* beside the real path: a symlinked db meets the same holder file */
    snprintf(path, sizeof path, "%s.lock", realpath(c->cfg.db, real) ? real : c->cfg.db);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        ctl_log(c, "error: %s: cannot open the database's lock file: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) refused(c, fd, path);
        else ctl_log(c, "error: %s: cannot lock: %s", path, strerror(e));
        close(fd);
        return -1;
    }
    /* the database itself: every path to it meets this one */
    int dfd = open(c->cfg.db, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
    if (dfd < 0) {
        ctl_log(c, "error: %s: cannot open the database: %s", c->cfg.db, strerror(errno));
        close(fd);
        return -1;
    }
    if (flock(dfd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) refused(c, fd, path);
        else ctl_log(c, "error: %s: cannot lock: %s", c->cfg.db, strerror(e));
        close(dfd);
        close(fd);
        return -1;
    }
    g_lock_fd = fd, g_db_fd = dfd;
    return ctl_lock_name(c, c->cfg.listen);
}

int ctl_lock_name(ctl *c, const char *listen)
{
    char host[256] = "?", line[512];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    int k = snprintf(line, sizeof line, "pid %ld on host %s, listening on %s\n", (long)getpid(),
                     host, listen);
    if (g_lock_fd < 0) return 0;
    if (k < 0 || (size_t)k >= sizeof line) k = (int)strlen(line);
    if (ftruncate(g_lock_fd, 0) != 0 || pwrite(g_lock_fd, line, (size_t)k, 0) != k) {
        ctl_log(c, "warning: %s.lock: cannot write its holder: %s", c->cfg.db, strerror(errno));
        return 0; /* the lock holds all the same; a second controller names no holder */
    }
    return 0;
}
