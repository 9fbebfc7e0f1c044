/* lease.c — lease rules and the agent's state file (lease.h). */
#include "lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease_file.h"
#include "state_file.h"

void pfi_lease_init(pfi_lease_state *s)
{
    memset(s, 0, sizeof *s);
}

int pfi_lease_live(const pfi_lease_state *s, double now)
{
    return s->active && now < s->expires_mono;
}

pfi_lease_verdict pfi_lease_admit(const pfi_lease_state *s, const char *controller,
                                  long long generation, double now, pfi_error *why)
{
    if (generation - s->generation_max > PFI_LEASE_GENERATION_STEP) {
        pfi_errorf(
            why, PFI_ERANGE,
            "generation: %lld is more than %lld above generation_max %lld (the highest accepted)",
            generation, PFI_LEASE_GENERATION_STEP, s->generation_max);
        return PFI_LEASE_TOO_FAR;
    }
    if (pfi_lease_live(s, now)) {
        if (generation < s->generation) {
            pfi_errorf(why, PFI_ESTATE,
                       "generation %lld is older than the live lease's %lld (controller %s)",
                       generation, s->generation, s->controller);
            return PFI_LEASE_STALE;
        }
        if (generation == s->generation && strcmp(controller, s->controller)) {
            pfi_errorf(why, PFI_ESTATE,
                       "controller %s holds the lease at generation %lld; take it over with a "
                       "higher generation",
                       s->controller, s->generation);
            return PFI_LEASE_BUSY;
        }
        return PFI_LEASE_ADMIT;
    }
    if (generation < s->generation_max) {
        pfi_errorf(why, PFI_ESTATE,
                   "generation %lld is older than %lld, already accepted (see generation_max in "
                   "GET /v1/node)",
                   generation, s->generation_max);
        return PFI_LEASE_STALE;
    }
    return PFI_LEASE_ADMIT;
}

void pfi_lease_grant(pfi_lease_state *s, const char *controller, long long generation,
                     double lease_s, double now)
{
    s->active = 1;
    snprintf(s->controller, sizeof s->controller, "%s", controller);
    s->generation = generation;
    if (generation > s->generation_max) s->generation_max = generation;
    s->expires_mono = now + lease_s;
    s->expires_at = pfi_clock_now() + lease_s;
}

void pfi_lease_wall_from_mono(pfi_lease_state *s, double wall_now, double mono_now)
{
    s->expires_at = s->expires_mono - mono_now + wall_now;
}

void pfi_lease_mono_from_wall(pfi_lease_state *s, double wall_now, double mono_now)
{
    s->expires_mono = s->expires_at - wall_now + mono_now;
}

pfi_lease_gpu *pfi_lease_gpu_get(pfi_lease_state *s, const char *uuid)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->gpu[i].uuid, uuid)) return &s->gpu[i];
    if (s->n == PFI_LEASE_MAX_GPUS) return NULL;
    pfi_lease_gpu *g = &s->gpu[s->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    return g;
}

pfi_status pfi_lease_save(const pfi_lease_state *s, const char *path, pfi_error *err)
{
    char *txt = pfi_lease_format(s);
    if (!txt) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    pfi_status st = pfi_state_file_write(path, txt, err); /* durable: the caps depend on it */
    free(txt);
    return st;
}

pfi_status pfi_lease_load(const char *path, pfi_lease_state *s, int *found, pfi_error *err)
{
    pfi_lease_init(s);
    char *txt;
    size_t n;
    pfi_status st = pfi_state_file_read(path, PFI_LEASE_FILE_MAX, &txt, &n, found, err);
    if (!st && *found) st = pfi_lease_parse(txt, n, path, s, err);
    free(txt);
    if (st) *found = 0;
    return st;
}
