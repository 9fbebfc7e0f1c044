/* ctl_slots.c — the open-addressing table of positions (ctl_slots.h). */
#include "ctl_slots.h"

#include <stdlib.h>
#include <string.h>

void ctl_slots_put(ctl_slots *x, size_t h, size_t pos)
{
    size_t k = h & (x->cap - 1);
    while (x->slot[k]) k = (k + 1) & (x->cap - 1);
    x->slot[k] = pos + 1;
}

int ctl_slots_reserve(ctl_slots *x, size_t want, ctl_slots_hash_fn hash_of, const void *ud)
{
    if (2 * want <= x->cap) return 0;
    size_t cap = 64;
    while (cap < 2 * want) cap *= 2;
    ctl_slots n = {calloc(cap, sizeof(size_t)), cap};
    if (!n.slot) return -1;
    for (size_t k = 0; k < x->cap; k++)
        if (x->slot[k]) ctl_slots_put(&n, hash_of(ud, x->slot[k] - 1), x->slot[k] - 1);
    free(x->slot);
    *x = n;
    return 0;
}

void ctl_slots_free(ctl_slots *x)
{
    free(x->slot);
    memset(x, 0, sizeof *x);
}
