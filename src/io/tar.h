/* tar.h — sequential tar archives: the stream form of run directories
 * (`pfi synth --tar - | pfi ingest -`).
 *
 * Reading accepts ustar, pax ('x' per-file headers: path, size; 'g'
 * ignored) and GNU long names ('L'); other member types are skipped. It
 * never seeks and keeps no member in memory: pfi_tar_member gives a
 * pfi_reader over the current member's bytes. Errors: a bad header checksum
 * (binary garbage), a truncated stream, oversized pax/long-name records.
 * Writing produces ustar (with a pax header for paths over 100 bytes). */
#ifndef PFI_TAR_H
#define PFI_TAR_H

#include <stdint.h>
#include <stdio.h>

#include "pfi/reader.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_tar {
    pfi_reader *r;
    char path[4096];
    uint64_t size, remaining, pad;
    int is_dir;
    uint64_t offset; /* bytes consumed, for messages */
    char pending_path[4096];
    int have_pending;
    int64_t pending_size;
    pfi_reader member; /* over the current member's bytes */
} pfi_tar;

void pfi_tar_init(pfi_tar *t, pfi_reader *r);
/* 1: next member (t->path, t->size, t->is_dir); 0: end of archive; -1 error.
 * Unread data of the previous member is skipped. */
int pfi_tar_next(pfi_tar *t, pfi_error *err);
/* A reader over the current member (max = line limit for its parsers);
 * valid until the next pfi_tar_next. */
pfi_reader *pfi_tar_member(pfi_tar *t, size_t max);
void pfi_tar_dispose(pfi_tar *t);

/* writing */
pfi_status pfi_tar_write(FILE *f, const char *path, const void *data, size_t len, pfi_error *err);
pfi_status pfi_tar_write_end(FILE *f, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
