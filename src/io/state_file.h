/* state_file.h — small files that guard GPU caps (the agent's and pfi
 * sweep's state files): read whole with a size bound, written durably.
 * A renamed file's new directory entry reaches the disk only when the
 * directory itself is fsynced; a state file must survive a power loss, so
 * pfi_state_file_write uses pfi_write_file_private, which fsyncs both and
 * never follows a link (docs/security.md). pfi_fsync_parent_dir is the
 * same directory fsync for a caller that wrote a file by other means. */
#ifndef PFI_STATE_FILE_H
#define PFI_STATE_FILE_H

#include <stddef.h>

#include <jansson.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read all of path (at most max bytes) into *text (malloc'd, NUL-terminated).
 * *found = 0, *text = NULL and PFI_OK when the file does not exist. */
pfi_status pfi_state_file_read(const char *path, size_t max, char **text, size_t *len, int *found,
                               pfi_error *err);

/* Parse text as the JSON object every state file is: an object with
 * "format_version": 1. *out is NULL (and the error names path, line and
 * message) when the text is not JSON; otherwise *out is the parsed value,
 * to be released by the caller, and a non-OK status says which of the two
 * rules it broke. */
pfi_status pfi_state_json_open(const char *text, size_t len, const char *path, json_t **out,
                               pfi_error *err);

/* pfi_write_file_private: atomic, durable (file and directory fsynced),
 * never through a symlink. */
pfi_status pfi_state_file_write(const char *path, const char *text, pfi_error *err);

/* fsync the directory containing path (its dirname; "." when it has none). */
pfi_status pfi_fsync_parent_dir(const char *path, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
