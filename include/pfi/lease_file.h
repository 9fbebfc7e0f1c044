/* lease_file.h — the agent's state file as text (lease.h has the rules and
 * the types): JSON with format_version 1, generation_max, the lease (or
 * null) and, per GPU whose cap the agent changed, its uuid, baseline_w and
 * cap_w. The parser is given whatever is on disk — truncated, corrupt,
 * hand-edited — and either fills the state or fails with a one-line
 * message naming the file, line or field (tests/fuzz/fuzz_lease_file.c). */
#ifndef PFI_LEASE_FILE_H
#define PFI_LEASE_FILE_H

#include <stddef.h>

#include "pfi/lease.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest state file read (64 GPUs need about 12 KB). */
#define PFI_LEASE_FILE_MAX ((size_t)1 << 20)

/* Parse text[0..len) (path names it in messages). On failure s is left
 * initialized (no lease, no GPUs). */
pfi_status pfi_lease_parse(const char *text, size_t len, const char *path, pfi_lease_state *s, pfi_error *err);
/* The file's text (malloc'd), or NULL when out of memory. */
char *pfi_lease_format(const pfi_lease_state *s);

#ifdef __cplusplus
}
#endif
#endif
