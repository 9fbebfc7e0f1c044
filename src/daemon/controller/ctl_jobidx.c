/* ctl_jobidx.c — the period's job index (ctl_jobidx.h): FNV-1a of the id and
 * tier over the shared table of positions (ctl_slots.h). */
#include "ctl_jobidx.h"

#include <stdint.h>
#include <string.h>

size_t ctl_jobidx_hash(const char *id, int tier)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(unsigned)tier;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (size_t)(h ^ h >> 29);
}

static size_t job_hash(const void *ud, size_t pos)
{
    const ctl_job *j = &((const ctl_state *)ud)->job[pos];
    return ctl_jobidx_hash(j->id, j->tier);
}

int ctl_jobidx_build(ctl_jobidx *x, const ctl_state *c)
{
    memset(x, 0, sizeof *x);
    if (ctl_slots_reserve(&x->t, c->njobs + 1, job_hash, c)) return -1;
    for (size_t k = 0; k < c->njobs; k++) ctl_slots_put(&x->t, job_hash(c, k), k);
    x->n = c->njobs;
    return 0;
}

long ctl_jobidx_find(const ctl_jobidx *x, const ctl_state *c, const char *id, int tier)
{
    const ctl_slots *t = &x->t;
    for (size_t k = ctl_slots_first(t, ctl_jobidx_hash(id, tier)); k < t->cap && t->slot[k];
         k = ctl_slots_next(t, k)) {
        const ctl_job *j = &c->job[t->slot[k] - 1];
        if (j->tier == tier && !strcmp(j->id, id)) return (long)(t->slot[k] - 1);
    }
    return -1;
}

int ctl_jobidx_add(ctl_jobidx *x, const ctl_state *c, size_t pos)
{
    if (ctl_slots_reserve(&x->t, x->n + 1, job_hash, c)) return -1;
    ctl_slots_put(&x->t, job_hash(c, pos), pos);
    x->n++;
    return 0;
}

void ctl_jobidx_free(ctl_jobidx *x)
{
    ctl_slots_free(&x->t);
    x->n = 0;
}
