/* ctl_slots.h — the open-addressing table under the controller's indexes by
 * job (the period's jobs, ctl_jobidx.c; the remembered curves, ctl_profile.c):
 * positions + 1 in slot[cap] (0: empty), linear probing, cap a power of two
 * kept at least twice the entries. The caller hashes and compares keys. */
#ifndef PFI_CTL_SLOTS_H
#define PFI_CTL_SLOTS_H
#include <stddef.h>

typedef struct ctl_slots {
    size_t *slot; /* position + 1; 0: empty */
    size_t cap;   /* a power of two, at least twice the entries; 0: none yet */
} ctl_slots;

/* the hash of the entry at position pos (to place it again when the table grows) */
typedef size_t (*ctl_slots_hash_fn)(const void *ud, size_t pos);

/* room for want entries, the present ones placed again by hash_of(ud, pos);
 * -1 when out of memory (the table unchanged) */
int ctl_slots_reserve(ctl_slots *x, size_t want, ctl_slots_hash_fn hash_of, const void *ud);
/* add position pos under hash h (room reserved) */
void ctl_slots_put(ctl_slots *x, size_t h, size_t pos);
void ctl_slots_free(ctl_slots *x);

/* the slots to look at for hash h, in order, until an empty one:
 * for (size_t k = ctl_slots_first(x, h); k < x->cap && x->slot[k]; k = ctl_slots_next(x, k)) */
static inline size_t ctl_slots_first(const ctl_slots *x, size_t h)
{
    return x->cap ? h & (x->cap - 1) : 0;
}
static inline size_t ctl_slots_next(const ctl_slots *x, size_t k)
{
    return (k + 1) & (x->cap - 1);
}
#endif
