/* ctl_jobidx.c — the period's job index (ctl_jobidx.h): FNV-1a of the id and
 * tier, linear probing, doubled at half full. */
#include "ctl_jobidx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t ctl_jobidx_hash(const char *id, int tier)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(unsigned)tier;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (size_t)(h ^ h >> 29);
}

static void put(size_t *slot, size_t cap, const ctl_state *c, size_t pos)
{
    size_t k = ctl_jobidx_hash(c->job[pos].id, c->job[pos].tier) & (cap - 1);
    while (slot[k]) k = (k + 1) & (cap - 1);
    slot[k] = pos + 1;
}

static int grow(ctl_jobidx *x, const ctl_state *c, size_t want)
{
    if (2 * want <= x->cap) return 0;
    size_t cap = 64;
    while (cap < 2 * want) cap *= 2;
    size_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t k = 0; k < x->cap; k++)
        if (x->slot[k]) put(slot, cap, c, x->slot[k] - 1);
    free(x->slot);
    x->slot = slot;
    x->cap = cap;
    return 0;
}

int ctl_jobidx_build(ctl_jobidx *x, const ctl_state *c)
{
    memset(x, 0, sizeof *x);
    if (grow(x, c, c->njobs + 1)) return -1;
    for (size_t k = 0; k < c->njobs; k++) put(x->slot, x->cap, c, k);
    x->n = c->njobs;
    return 0;
}

long ctl_jobidx_find(const ctl_jobidx *x, const ctl_state *c, const char *id, int tier)
{
    if (!x->cap) return -1;
    for (size_t k = ctl_jobidx_hash(id, tier) & (x->cap - 1); x->slot[k];
         k = (k + 1) & (x->cap - 1)) {
        const ctl_job *j = &c->job[x->slot[k] - 1];
        if (j->tier == tier && !strcmp(j->id, id)) return (long)(x->slot[k] - 1);
    }
    return -1;
}

int ctl_jobidx_add(ctl_jobidx *x, const ctl_state *c, size_t pos)
{
    if (grow(x, c, x->n + 1)) return -1;
    put(x->slot, x->cap, c, pos);
    x->n++;
    return 0;
}

void ctl_jobidx_free(ctl_jobidx *x)
{
    free(x->slot);
    memset(x, 0, sizeof *x);
}
