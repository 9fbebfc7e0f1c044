/* state_file.c — bounded reads and durable writes of state files
 * (state_file.h). */
#include "state_file.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"

pfi_status pfi_state_file_read(const char *path, size_t max, char **text, size_t *len, int *found,
                               pfi_error *err)
{
    *text = NULL;
    *len = 0;
    *found = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? PFI_OK : pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(errno));
    char *buf = malloc(max + 2);
    if (!buf) {
        fclose(f);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    size_t n = fread(buf, 1, max + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > max) {
        free(buf);
        return bad ? pfi_errorf(err, PFI_EIO, "%s: read failed", path)
                   : pfi_errorf(err, PFI_ERANGE, "%s: larger than %zu bytes", path, max);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    *found = 1;
    return PFI_OK;
}

pfi_status pfi_fsync_parent_dir(const char *path, pfi_error *err)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else return pfi_errorf(err, PFI_EINVAL, "%s: path too long", path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return pfi_errorf(err, PFI_EIO, "%s: cannot open its directory %s: %s", path, dir,
                          strerror(errno));
    pfi_status st = PFI_OK;
    if (fsync(fd) != 0 && errno != EINVAL) /* EINVAL: a file system that cannot sync directories */
        st = pfi_errorf(err, PFI_EIO, "%s: fsync of its directory %s failed: %s", path, dir,
                        strerror(errno));
    close(fd);
    return st;
}

pfi_status pfi_state_json_open(const char *text, size_t len, const char *path, json_t **out,
                               pfi_error *err)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    *out = o;
    if (!o) return pfi_errorf(err, PFI_EPARSE, "%s:%d: %s", path, je.line, je.text);
    json_t *v = json_object_get(o, "format_version");
    if (!json_is_object(o)) return pfi_errorf(err, PFI_EINVAL, "%s: expected a JSON object", path);
    if (!json_is_integer(v) || json_integer_value(v) != 1)
        return pfi_errorf(err, PFI_EINVAL, "%s: format_version: expected 1", path);
    return PFI_OK;
}

pfi_status pfi_state_file_write(const char *path, const char *text, pfi_error *err)
{
    /* atomic, file and directory fsynced, never through a symlink */
    return pfi_write_file_private(path, text, strlen(text), err);
}
