/* ctl_lock.c — one controller per database (docs/controller.md, "One
 * writer"; docs/deploy.md, "Standby"): an exclusive flock(2) on DB.lock,
 * next to the database, taken before the database is opened and held for
 * the process's life. The file holds its holder as one line, "pid P on
 * host H, listening on ADDR", so that a second controller's refusal names
 * the first.
 *
 * Why flock on a file of our own and not SQLite's locking: in WAL mode
 * SQLite lets many connections (and processes) read and write the same
 * database, and its locks name no holder. flock is released by the kernel
 * when the holder exits however it exits (SIGKILL, a crash), so the lock is
 * never a stale blocker; the file itself stays (a file without a holder is
 * no lock). It is never unlinked: unlinking a lock file another process has
 * opened but not yet locked would let two holders lock two files. flock
 * holds between processes of one host only: on NFS it is emulated (or not
 * at all), so it does not keep two hosts apart (docs/deploy.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

static int g_lock_fd = -1;

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

int ctl_lock_take(ctl *c)
{
    char path[sizeof c->cfg.db + 8];
    snprintf(path, sizeof path, "%s.lock", c->cfg.db);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        ctl_log(c, "error: %s: cannot open the database's lock file: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[256];
        if (e == EWOULDBLOCK) wait_holder(fd, holder, sizeof holder);
        close(fd);
        if (e != EWOULDBLOCK) ctl_log(c, "error: %s: cannot lock: %s", path, strerror(e));
        else
            ctl_log(c,
                    "error: %s: in use by another pfi-controller (%s; lock %s): one controller "
                    "per database",
                    c->cfg.db, holder, path);
        return -1;
    }
    g_lock_fd = fd;
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
