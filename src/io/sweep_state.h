/* sweep_state.h — `pfi sweep`'s state file in direct mode (no agent): the
 * selected GPUs' caps from before the sweep, written (durably) before the
 * first cap is set and removed once they are restored, so a sweep that was
 * killed is undone at the next start. JSON: format_version 1, pid, gpus
 * [{index, uuid, cap_w}]. The parser takes whatever is on disk and either
 * fills the state or fails with a one-line message naming the file and
 * field (tests/fuzz/fuzz_sweep_state.c). */
#ifndef PFI_SWEEP_STATE_H
#define PFI_SWEEP_STATE_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_SWEEP_STATE_MAX_GPUS 64
#define PFI_SWEEP_STATE_FILE_MAX ((size_t)1 << 20)

typedef struct pfi_sweep_state_gpu {
    char uuid[96];
    long index;
    double cap_w; /* the cap before the sweep */
} pfi_sweep_state_gpu;

typedef struct pfi_sweep_state {
    long pid;
    size_t n;
    pfi_sweep_state_gpu gpu[PFI_SWEEP_STATE_MAX_GPUS];
} pfi_sweep_state;

pfi_status pfi_sweep_state_parse(const char *text, size_t len, const char *path, pfi_sweep_state *s,
                                 pfi_error *err);
/* The file's text (malloc'd), or NULL when out of memory. */
char *pfi_sweep_state_format(const pfi_sweep_state *s);
/* Read and parse path; *found = 0 (and PFI_OK) when it does not exist. */
pfi_status pfi_sweep_state_load(const char *path, pfi_sweep_state *s, int *found, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
