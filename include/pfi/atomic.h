/* atomic.h — output files written atomically: data goes to a temporary file
 * in the target's directory, which is fsynced and renamed over the target
 * only on commit, so a crash or an error never leaves a half-written file.
 * Path NULL or "-" writes to standard output (no atomicity possible). */
#ifndef PFI_ATOMIC_H
#define PFI_ATOMIC_H

#include <stdio.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_outfile {
    FILE *f;
    char *path;  /* final path; NULL for stdout */
    char *tmp;   /* temporary path */
} pfi_outfile;

pfi_status pfi_out_open(pfi_outfile *o, const char *path, pfi_error *err);
pfi_status pfi_out_commit(pfi_outfile *o, pfi_error *err);
void pfi_out_abort(pfi_outfile *o);

/* Write a whole buffer to path atomically. */
pfi_status pfi_write_file_atomic(const char *path, const void *data, size_t len, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
