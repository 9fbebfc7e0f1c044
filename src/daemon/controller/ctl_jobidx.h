/* ctl_jobidx.h — the period's index of the controller's jobs by (id, tier): an
 * open-addressing hash table of positions in the state's jobs, rebuilt each period. It
 * replaced a JSON object (key "tier:id" -> position) whose string keys and
 * per-entry allocations were a tenth of the controller's CPU at 5,000 agents. */
#ifndef PFI_CTL_JOBIDX_H
#define PFI_CTL_JOBIDX_H
#include <stddef.h>

#include "ctl_slots.h"
#include "ctl_state.h"

typedef struct ctl_jobidx {
    ctl_slots t; /* positions in c->job */
    size_t n;
} ctl_jobidx;

/* an index of the state's jobs c->job[0 .. c->njobs); -1 when out of memory */
int ctl_jobidx_build(ctl_jobidx *x, const ctl_state *c);
/* the position of job (id, tier) in the state's jobs, -1 when absent */
long ctl_jobidx_find(const ctl_jobidx *x, const ctl_state *c, const char *id, int tier);
/* add c->job[pos] (not in the index yet); -1 when out of memory */
int ctl_jobidx_add(ctl_jobidx *x, const ctl_state *c, size_t pos);
void ctl_jobidx_free(ctl_jobidx *x);
/* the hash of (id, tier) the index uses (FNV-1a), for other indexes by job */
size_t ctl_jobidx_hash(const char *id, int tier);
#endif
