/* lease.h — the agent's caps lease and per-GPU baselines, and the state
 * file that keeps them across restarts (JSON, written atomically).
 *
 * Rules (docs/agent.md):
 *  - A controller holds the node's caps under a lease of lease_s seconds,
 *    renewed by writing again before it ends.
 *  - While a lease is live, a write with a lower generation is stale, and a
 *    write with the same generation from another controller is busy (both
 *    HTTP 409); a higher generation takes the lease over.
 *  - With no live lease, any generation not below the highest ever accepted
 *    (generation_max) is admitted: a controller that restarts must continue
 *    its generation count (GET /v1/node reports generation_max).
 *  - No write may raise the generation more than PFI_LEASE_GENERATION_STEP
 *    above generation_max (too far: HTTP 400): one request cannot push the
 *    persisted count out of every controller's reach.
 *  - The first time the agent changes a GPU's cap it records the cap it
 *    found (baseline); when the lease ends or the agent stops, baselines are
 *    restored and forgotten. */
#ifndef PFI_LEASE_H
#define PFI_LEASE_H

#include <stddef.h>

#include "clock.h"
#include "lease_file.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_lease_verdict {
    PFI_LEASE_ADMIT = 0,
    PFI_LEASE_STALE,
    PFI_LEASE_BUSY,
    PFI_LEASE_TOO_FAR
} pfi_lease_verdict;

void pfi_lease_init(pfi_lease_state *s);
/* May this write take or renew the lease? When not, why gets a one-line
 * reason (code PFI_ESTATE: stale or busy, 409; PFI_ERANGE: too far, 400). */
pfi_lease_verdict pfi_lease_admit(const pfi_lease_state *s, const char *controller,
                                  long long generation, double now, pfi_error *why);
/* also sets expires_at from the wall clock, so the lease can be saved at once */
void pfi_lease_grant(pfi_lease_state *s, const char *controller, long long generation,
                     double lease_s, double now);
int pfi_lease_live(const pfi_lease_state *s, double now);
/* GPU entry by UUID (added when absent; NULL if full). */
pfi_lease_gpu *pfi_lease_gpu_get(pfi_lease_state *s, const char *uuid);
/* expires_at from expires_mono (before saving or showing the lease), and
 * back (after loading it), with the two clocks' current readings; a
 * monotonic time does not survive a reboot, so the file keeps wall time. */
void pfi_lease_wall_from_mono(pfi_lease_state *s, double wall_now, double mono_now);
void pfi_lease_mono_from_wall(pfi_lease_state *s, double wall_now, double mono_now);

pfi_status pfi_lease_save(const pfi_lease_state *s, const char *path, pfi_error *err);
/* *found = 0 (and s initialized) when the file does not exist. */
pfi_status pfi_lease_load(const char *path, pfi_lease_state *s, int *found, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
