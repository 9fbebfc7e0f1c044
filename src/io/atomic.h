/* atomic.h — output files that are written whole or not at all, and that
 * never clobber what is not a regular file.
 *
 * pfi_out_open (the CLI's outputs, -o FILE) decides by what the path is,
 * in this order:
 *   - NULL or "-": standard output;
 *   - "/dev/stdout", "/dev/stderr", "/dev/fd/N": that descriptor, written
 *     directly (a pipe, socket or terminal stays what it is);
 *   - stat() following links: a directory is an error; a character device,
 *     FIFO or socket is opened and written directly (no temporary file, no
 *     fsync); a block device is an error;
 *   - a regular file (through any symlinks) or a new path: the data goes to
 *     a temporary file in the final target's directory, which gets the
 *     existing file's mode and (where permitted) owner, is fsynced and
 *     renamed over the final target, then the directory is fsynced. A
 *     symlink stays a symlink and its target gets the new content; a
 *     dangling symlink gets its target created, as the shell's `>` does.
 *     A new file's mode is 0666 less the umask.
 *
 * pfi_out_open_private (the daemons' own state, port and job-mapping files)
 * never follows a symlink: the temporary file is created next to the path
 * with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0644, and renamed over the path
 * itself (replacing a symlink there rather than writing through it). */
#ifndef PFI_ATOMIC_H
#define PFI_ATOMIC_H

#include <stdio.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_outfile {
    FILE *f;
    char *path;   /* the path as given, for messages; NULL for stdout */
    char *target; /* what tmp is renamed over; NULL when written directly */
    char *tmp;    /* temporary path; NULL when written directly */
} pfi_outfile;

pfi_status pfi_out_open(pfi_outfile *o, const char *path, pfi_error *err);
pfi_status pfi_out_open_private(pfi_outfile *o, const char *path, pfi_error *err);
pfi_status pfi_out_commit(pfi_outfile *o, pfi_error *err);
void pfi_out_abort(pfi_outfile *o);

/* Write a whole buffer to path by pfi_out_open's rules. */
pfi_status pfi_write_file_atomic(const char *path, const void *data, size_t len, pfi_error *err);
/* Write a whole buffer to path by pfi_out_open_private's rules. */
pfi_status pfi_write_file_private(const char *path, const void *data, size_t len, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
