/* state_file.h — small files that guard GPU caps (the agent's and pfi
 * sweep's state files): read whole with a size bound, written durably.
 * pfi_write_file_atomic fsyncs the file and renames it, but the new
 * directory entry reaches the disk only when the directory itself is
 * fsynced; a state file must survive a power loss, so both are done
 * (docs/security.md). pfi_fsync_parent_dir is a stop-gap until atomic.c
 * fsyncs the directory itself. */
#ifndef PFI_STATE_FILE_H
#define PFI_STATE_FILE_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read all of path (at most max bytes) into *text (malloc'd, NUL-terminated).
 * *found = 0, *text = NULL and PFI_OK when the file does not exist. */
pfi_status pfi_state_file_read(const char *path, size_t max, char **text, size_t *len, int *found, pfi_error *err);

/* pfi_write_file_atomic, then pfi_fsync_parent_dir. */
pfi_status pfi_state_file_write(const char *path, const char *text, pfi_error *err);

/* fsync the directory containing path (its dirname; "." when it has none). */
pfi_status pfi_fsync_parent_dir(const char *path, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
