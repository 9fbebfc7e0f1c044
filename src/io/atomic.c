/* atomic.c — output files written whole, never clobbering special files
 * (see atomic.h for the rules). Choices: a symlink is resolved to its final
 * target, and the temporary file is made in that target's directory so the
 * rename stays within one file system; a dangling symlink has its target
 * created, as the shell's `>` would; "/dev/stdout" and "/dev/fd/N" write to
 * the descriptor itself (a dup), so a pipe, socket or a file opened for
 * appending by the shell is written in place rather than renamed over; a
 * block device is refused (writing a table onto a disk is never wanted).
 * Renaming replaces hard links to the old file with the new file at this
 * name only. The owner is kept where permitted (root, or a group the user
 * is in); the mode always. */
#include "atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINK_HOPS 40

/* Create target + ".tmp.XXXXXX" exclusively (never through a symlink). */
static int make_tmp(const char *target, mode_t mode, char **tmp_out)
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static unsigned counter;
    size_t n = strlen(target);
    char *tmp = malloc(n + 12);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(tmp, target, n);
    memcpy(tmp + n, ".tmp.", 5);
    for (int attempt = 0; attempt < 100; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t r = ((uint64_t)ts.tv_nsec << 16) ^ ((uint64_t)getpid() << 40) ^
                     (uint64_t)ts.tv_sec ^ (uint64_t)(++counter) * 0x9E3779B97F4A7C15ull;
        for (int i = 0; i < 6; i++, r /= 62) tmp[n + 5 + i] = abc[r % 62];
        tmp[n + 11] = '\0';
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST) break;
    }
    int e = errno;
    free(tmp);
    errno = e;
    return -1;
}

/* fsync the directory holding target, so the rename itself is durable. A
 * directory we may write but not read cannot be opened: best effort there. */
static int fsync_dir(const char *target)
{
    const char *sl = strrchr(target, '/');
    char *d = !sl ? strdup(".") : strndup(target, sl == target ? 1 : (size_t)(sl - target));
    if (!d) return -1;
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(d);
    if (fd < 0) return 0;
    int rc = fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* path does not exist: follow a chain of (dangling) symlinks to the name
 * that open(O_CREAT) would create. NULL with errno set on a loop. */
static char *resolve_new(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < MAX_LINK_HOPS; hops++) {
        struct stat sb;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) return cur;
        char buf[PATH_MAX];
        ssize_t k = readlink(cur, buf, sizeof buf - 1);
        if (k < 0) return cur;
        buf[k] = '\0';
        const char *sl = strrchr(cur, '/');
        size_t dl = buf[0] == '/' || !sl ? 0 : (size_t)(sl - cur + 1);
        char *next = malloc(dl + (size_t)k + 1);
        if (next) {
            memcpy(next, cur, dl);
            memcpy(next + dl, buf, (size_t)k + 1);
        }
        free(cur);
        cur = next;
    }
    if (cur) {
        free(cur);
        errno = ELOOP;
    }
    return NULL;
}

/* "/dev/stdout", "/dev/stderr", "/dev/fd/N", "/proc/self/fd/N": N, else -1 */
static int named_fd(const char *path)
{
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    const char *p = !strncmp(path, "/dev/fd/", 8)          ? path + 8
                    : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                           : NULL;
    if (!p || !*p) return -1;
    long n = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || n > INT_MAX / 10) return -1;
        n = n * 10 + (*p - '0');
    }
    return (int)n;
}

static pfi_status fail_open(pfi_outfile *o, int fd, pfi_status st)
{
    if (fd >= 0) close(fd);
    if (o->tmp) unlink(o->tmp);
    free(o->path);
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    return st;
}

static pfi_status attach(pfi_outfile *o, int fd, pfi_error *err)
{
    o->f = fdopen(fd, "w");
    if (!o->f)
        return fail_open(
            o, fd, pfi_errorf(err, PFI_EIO, "%s: fdopen failed: %s", o->path, strerror(errno)));
    return PFI_OK;
}

/* a device, FIFO or descriptor: written in place, no temporary file */
static pfi_status open_direct(pfi_outfile *o, int fd_named, pfi_error *err)
{
    int fd = fd_named >= 0 ? fcntl(fd_named, F_DUPFD_CLOEXEC, 3)
                           : open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return fail_open(o, -1,
                         pfi_errorf(err, PFI_EIO, "%s: cannot open: %s", o->path, strerror(errno)));
    struct stat sb;
    if (fd_named < 0 && (fstat(fd, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)))
        return fail_open(o, fd,
                         pfi_errorf(err, PFI_EIO, "%s: changed while being opened", o->path));
    return attach(o, fd, err);
}

/* the temporary file next to target; st: the existing file, or NULL */
static pfi_status open_tmp(pfi_outfile *o, const struct stat *st, mode_t new_mode, pfi_error *err)
{
    int fd = make_tmp(o->target, st ? 0600 : new_mode, &o->tmp);
    if (fd < 0)
        return fail_open(
            o, -1, pfi_errorf(err, PFI_EIO, "%s: cannot create: %s", o->path, strerror(errno)));
    if (st) {
        if (fchown(fd, st->st_uid, st->st_gid) != 0 && fchown(fd, (uid_t)-1, st->st_gid) != 0) {
            /* not permitted to give the file away: it stays ours */
        }
        if (fchmod(fd, st->st_mode & 07777) != 0)
            return fail_open(
                o, fd,
                pfi_errorf(err, PFI_EIO, "%s: cannot set mode: %s", o->path, strerror(errno)));
    }
    return attach(o, fd, err);
}

static pfi_status start(pfi_outfile *o, const char *path, pfi_error *err)
{
    memset(o, 0, sizeof *o);
    o->path = strdup(path);
    return o->path ? PFI_OK : pfi_errorf(err, PFI_ENOMEM, "out of memory");
}

/* The kernel's fs.protected_symlinks rule, kept although we resolve links
 * ourselves: a link in a sticky, world-writable directory (/tmp) is followed
 * only if its owner owns the directory or is us. Otherwise root writing
 * "/tmp/out" could be sent by another user's link to any file. Checked for
 * each link of a chain ending at path (at most 40, as the kernel). */
static int link_forbidden(const char *path)
{
    char cur[4096], tgt[4096], dir[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hop = 0; hop < 40; hop++) {
        struct stat ls, ds;
        if (lstat(cur, &ls) != 0 || !S_ISLNK(ls.st_mode)) return 0;
        const char *slash = strrchr(cur, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == cur) snprintf(dir, sizeof dir, "/");
        else snprintf(dir, sizeof dir, "%.*s", (int)(slash - cur), cur);
        if (stat(dir, &ds) != 0) return 0;
        if ((ds.st_mode & S_ISVTX) && (ds.st_mode & S_IWOTH) && ls.st_uid != ds.st_uid &&
            ls.st_uid != geteuid())
            return 1;
        ssize_t n = readlink(cur, tgt, sizeof tgt - 1);
        if (n < 0) return 0;
        tgt[n] = '\0';
        if (tgt[0] == '/') snprintf(cur, sizeof cur, "%s", tgt);
        else if ((size_t)snprintf(cur, sizeof cur, "%s/%s", dir, tgt) >= sizeof cur) return 0;
    }
    return 0;
}

pfi_status pfi_out_open(pfi_outfile *o, const char *path, pfi_error *err)
{
    if (!path || strcmp(path, "-") == 0) {
        memset(o, 0, sizeof *o);
        o->f = stdout;
        return PFI_OK;
    }
    pfi_status st = start(o, path, err);
    if (st) return st;
    int nfd = named_fd(path);
    if (nfd >= 0) return open_direct(o, nfd, err);
    if (link_forbidden(path))
        return fail_open(
            o, -1,
            pfi_errorf(err, PFI_EIO,
                       "%s: a symbolic link owned by another user in a sticky world-writable "
                       "directory; not followed (fs.protected_symlinks)",
                       path));
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return fail_open(o, -1, pfi_errorf(err, PFI_EIO, "%s: is a directory", path));
        if (S_ISBLK(sb.st_mode))
            return fail_open(
                o, -1,
                pfi_errorf(err, PFI_EIO, "%s: is a block device; refusing to write to it", path));
        if (!S_ISREG(sb.st_mode)) return open_direct(o, -1, err);
        o->target = realpath(path, NULL);
        if (!o->target)
            return fail_open(o, -1, pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(errno)));
        return open_tmp(o, &sb, 0, err);
    }
    if (errno != ENOENT)
        return fail_open(o, -1, pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(errno)));
    o->target = resolve_new(path);
    if (!o->target)
        return fail_open(o, -1, pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(errno)));
    return open_tmp(o, NULL, 0666, err);
}

pfi_status pfi_out_open_private(pfi_outfile *o, const char *path, pfi_error *err)
{
    pfi_status st = start(o, path, err);
    if (st) return st;
    o->target = strdup(path);
    if (!o->target) return fail_open(o, -1, pfi_errorf(err, PFI_ENOMEM, "out of memory"));
    int fd = make_tmp(path, 0600, &o->tmp);
    if (fd < 0)
        return fail_open(o, -1,
                         pfi_errorf(err, PFI_EIO, "%s: cannot create: %s", path, strerror(errno)));
    if (fchmod(fd, 0644) != 0)
        return fail_open(
            o, fd, pfi_errorf(err, PFI_EIO, "%s: cannot set mode: %s", path, strerror(errno)));
    return attach(o, fd, err);
}

pfi_status pfi_out_commit(pfi_outfile *o, pfi_error *err)
{
    if (!o->f) return PFI_OK;
    if (!o->path) {
        int bad = fflush(o->f) != 0 || ferror(o->f);
        o->f = NULL;
        return bad ? pfi_errorf(err, PFI_EIO, "write to standard output failed") : PFI_OK;
    }
    pfi_status st = PFI_OK;
    /* written directly: a pipe or /dev/null answers fsync with EINVAL, which
     * is no write failure, so there is no fsync at all */
    if (fflush(o->f) != 0 || ferror(o->f) || (o->tmp && fsync(fileno(o->f)) != 0))
        st = pfi_errorf(err, PFI_EIO, "%s: write failed: %s", o->path, strerror(errno));
    if (fclose(o->f) != 0 && !st)
        st = pfi_errorf(err, PFI_EIO, "%s: close failed: %s", o->path, strerror(errno));
    o->f = NULL;
    if (o->tmp) {
        if (!st && rename(o->tmp, o->target) != 0)
            st = pfi_errorf(err, PFI_EIO, "%s: rename failed: %s", o->path, strerror(errno));
        if (st) unlink(o->tmp);
        else if (fsync_dir(o->target) != 0)
            st = pfi_errorf(err, PFI_EIO, "%s: fsync of its directory failed: %s", o->path,
                            strerror(errno));
    }
    free(o->path);
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    return st;
}

void pfi_out_abort(pfi_outfile *o)
{
    if (o->f && o->path) {
        fclose(o->f);
        if (o->tmp) unlink(o->tmp);
    } else if (o->f) {
        fflush(o->f);
    }
    free(o->path);
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

static pfi_status write_whole(pfi_outfile *o, const char *path, const void *data, size_t len,
                              pfi_error *err)
{
    if (len && fwrite(data, 1, len, o->f) != len) {
        pfi_out_abort(o);
        return pfi_errorf(err, PFI_EIO, "%s: write failed", path);
    }
    return pfi_out_commit(o, err);
}

pfi_status pfi_write_file_atomic(const char *path, const void *data, size_t len, pfi_error *err)
{
    pfi_outfile o;
    pfi_status st = pfi_out_open(&o, path, err);
    return st ? st : write_whole(&o, path, data, len, err);
}

pfi_status pfi_write_file_private(const char *path, const void *data, size_t len, pfi_error *err)
{
    pfi_outfile o;
    pfi_status st = pfi_out_open_private(&o, path, err);
    return st ? st : write_whole(&o, path, data, len, err);
}
