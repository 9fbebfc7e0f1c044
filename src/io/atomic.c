/* atomic.c — temp file + fsync + rename (see atomic.h). */
#include "pfi/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

pfi_status pfi_out_open(pfi_outfile *o, const char *path, pfi_error *err)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return PFI_OK;
    }
    size_t n = strlen(path);
    o->path = strdup(path);
    o->tmp = malloc(n + 16);
    if (!o->path || !o->tmp) {
        free(o->path);
        free(o->tmp);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".tmp.XXXXXX", 12);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        pfi_status st = pfi_errorf(err, PFI_EIO, "%s: cannot create: %s", path, strerror(errno));
        free(o->path);
        free(o->tmp);
        memset(o, 0, sizeof *o);
        return st;
    }
    fchmod(fd, 0644);
    o->f = fdopen(fd, "w");
    if (!o->f) {
        close(fd);
        unlink(o->tmp);
        free(o->path);
        free(o->tmp);
        memset(o, 0, sizeof *o);
        return pfi_errorf(err, PFI_EIO, "%s: fdopen failed", path);
    }
    return PFI_OK;
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
    if (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0)
        st = pfi_errorf(err, PFI_EIO, "%s: write failed: %s", o->path, strerror(errno));
    if (fclose(o->f) != 0 && !st)
        st = pfi_errorf(err, PFI_EIO, "%s: close failed: %s", o->path, strerror(errno));
    o->f = NULL;
    if (!st && rename(o->tmp, o->path) != 0)
        st = pfi_errorf(err, PFI_EIO, "%s: rename failed: %s", o->path, strerror(errno));
    if (st) unlink(o->tmp);
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    return st;
}

void pfi_out_abort(pfi_outfile *o)
{
    if (o->f && o->path) {
        fclose(o->f);
        unlink(o->tmp);
    } else if (o->f) {
        fflush(o->f);
    }
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

pfi_status pfi_write_file_atomic(const char *path, const void *data, size_t len, pfi_error *err)
{
    pfi_outfile o;
    pfi_status st = pfi_out_open(&o, path, err);
    if (st) return st;
    if (len && fwrite(data, 1, len, o.f) != len) {
        pfi_out_abort(&o);
        return pfi_errorf(err, PFI_EIO, "%s: write failed", path);
    }
    return pfi_out_commit(&o, err);
}
