/* lease_file.h — the agent's state as data and its state file as text
 * (lease.h has the rules): JSON with format_version 1, generation_max, the lease (or
 * null), boot_id (optional: the boot the caps were set in) and, per GPU
 * whose cap the agent changed, its uuid, baseline_w and cap_w. The parser is given whatever is on
 * disk — truncated, corrupt, hand-edited — and either fills the state or fails with a one-line
 * message naming the file, line or field (tests/fuzz/fuzz_lease_file.c). */
#ifndef PFI_LEASE_FILE_H
#define PFI_LEASE_FILE_H

#include <stddef.h>

#include "pfi/status.h"
#include "saved_cap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_LEASE_MAX_GPUS 64
/* how far one write may raise the generation above generation_max (2^20) */
#define PFI_LEASE_GENERATION_STEP (1LL << 20)

/* a GPU whose cap the agent changed: its baseline_w and the cap_w it set */
typedef pfi_saved_cap pfi_lease_gpu;

typedef struct pfi_lease_state {
    int active;
    char controller[128];
    long long generation, generation_max;
    double expires_at;   /* pfi clock, wall (pfi_clock_now()): what the state file keeps */
    double expires_mono; /* pfi_clock_mono(): what expiry is checked against, so a
                            wall-clock step neither prolongs nor shortens a lease.
                            Every `now` in lease.h is on this clock. */
    size_t n;
    pfi_lease_gpu gpu[PFI_LEASE_MAX_GPUS];
    char boot_id[64]; /* the boot the caps were set in (/proc/sys/kernel/random/boot_id);
                         "" where unknown: a file written before issue 40 */
} pfi_lease_state;

/* Largest state file read (64 GPUs need about 12 KB). */
#define PFI_LEASE_FILE_MAX ((size_t)1 << 20)

/* Parse text[0..len) (path names it in messages). On failure s is left
 * initialized (no lease, no GPUs). */
pfi_status pfi_lease_parse(const char *text, size_t len, const char *path, pfi_lease_state *s,
                           pfi_error *err);
/* The file's text (malloc'd), or NULL when out of memory. */
char *pfi_lease_format(const pfi_lease_state *s);

#ifdef __cplusplus
}
#endif
#endif
