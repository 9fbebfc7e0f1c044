/* lease.c — lease rules and the agent's state file (lease.h). */
#include "pfi/lease.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/atomic.h"

void pfi_lease_init(pfi_lease_state *s) { memset(s, 0, sizeof *s); }

int pfi_lease_live(const pfi_lease_state *s, double now) { return s->active && now < s->expires_mono; }

pfi_lease_verdict pfi_lease_admit(const pfi_lease_state *s, const char *controller, long long generation, double now,
                                  char *why, size_t n)
{
    if (pfi_lease_live(s, now)) {
        if (generation < s->generation) {
            snprintf(why, n, "generation %lld is older than the live lease's %lld (controller %s)", generation, s->generation,
                     s->controller);
            return PFI_LEASE_STALE;
        }
        if (generation == s->generation && strcmp(controller, s->controller)) {
            snprintf(why, n, "controller %s holds the lease at generation %lld; take it over with a higher generation",
                     s->controller, s->generation);
            return PFI_LEASE_BUSY;
        }
        return PFI_LEASE_ADMIT;
    }
    if (generation < s->generation_max) {
        snprintf(why, n, "generation %lld is older than %lld, already accepted (see generation_max in GET /v1/node)",
                 generation, s->generation_max);
        return PFI_LEASE_STALE;
    }
    return PFI_LEASE_ADMIT;
}

void pfi_lease_grant(pfi_lease_state *s, const char *controller, long long generation, double lease_s, double now)
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
    json_t *g = json_array();
    for (size_t i = 0; i < s->n; i++) {
        const pfi_lease_gpu *x = &s->gpu[i];
        if (!x->changed) continue;
        json_array_append_new(g, json_pack("{s:s,s:f,s:f}", "uuid", x->uuid, "baseline_w", x->baseline_w, "cap_w", x->cap_w));
    }
    json_t *lease = s->active ? json_pack("{s:s,s:I,s:f}", "controller", s->controller, "generation", (json_int_t)s->generation,
                                          "expires_at", s->expires_at)
                              : json_null();
    json_t *o = json_pack("{s:i,s:I,s:o,s:o}", "format_version", 1, "generation_max", (json_int_t)s->generation_max, "lease",
                          lease, "gpus", g);
    char *txt = o ? json_dumps(o, JSON_INDENT(1)) : NULL;
    json_decref(o);
    if (!txt) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    pfi_status st = pfi_write_file_atomic(path, txt, strlen(txt), err);
    free(txt);
    return st;
}

pfi_status pfi_lease_load(const char *path, pfi_lease_state *s, int *found, pfi_error *err)
{
    pfi_lease_init(s);
    *found = 0;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? PFI_OK : pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(errno));
    json_error_t je;
    json_t *o = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!o) return pfi_errorf(err, PFI_EPARSE, "%s:%d: %s", path, je.line, je.text);
    pfi_status st = PFI_OK;
    json_t *v = json_object_get(o, "format_version"), *gm = json_object_get(o, "generation_max"),
           *l = json_object_get(o, "lease"), *g = json_object_get(o, "gpus");
    if (!json_is_integer(v) || json_integer_value(v) != 1) st = pfi_errorf(err, PFI_EINVAL, "%s: field 'format_version': expected 1", path);
    else if (!json_is_integer(gm) || json_integer_value(gm) < 0) st = pfi_errorf(err, PFI_EINVAL, "%s: field 'generation_max': expected an integer", path);
    else if (!json_is_array(g)) st = pfi_errorf(err, PFI_EINVAL, "%s: field 'gpus': expected an array", path);
    else if (l && !json_is_null(l)) {
        json_t *c = json_object_get(l, "controller"), *ge = json_object_get(l, "generation"), *ex = json_object_get(l, "expires_at");
        if (!json_is_string(c) || !json_is_integer(ge) || !json_is_number(ex) || !isfinite(json_number_value(ex)))
            st = pfi_errorf(err, PFI_EINVAL, "%s: field 'lease': needs controller, generation and expires_at", path);
        else {
            s->active = 1;
            snprintf(s->controller, sizeof s->controller, "%s", json_string_value(c));
            s->generation = (long long)json_integer_value(ge);
            s->expires_at = json_number_value(ex);
        }
    }
    if (!st) {
        s->generation_max = (long long)json_integer_value(gm);
        size_t i;
        json_t *e;
        json_array_foreach(g, i, e) {
            json_t *u = json_object_get(e, "uuid"), *b = json_object_get(e, "baseline_w"), *c = json_object_get(e, "cap_w");
            double bw = json_number_value(b), cw = json_number_value(c);
            if (!json_is_string(u) || !json_is_number(b) || !json_is_number(c) || !(bw > 0) || !(cw > 0) || !isfinite(bw) ||
                !isfinite(cw)) {
                st = pfi_errorf(err, PFI_EINVAL, "%s: gpus[%zu]: needs uuid, baseline_w and cap_w (positive W)", path, i);
                break;
            }
            pfi_lease_gpu *x = pfi_lease_gpu_get(s, json_string_value(u));
            if (!x) {
                st = pfi_errorf(err, PFI_ERANGE, "%s: more than %d GPUs", path, PFI_LEASE_MAX_GPUS);
                break;
            }
            x->changed = 1;
            x->baseline_w = bw;
            x->cap_w = cw;
        }
    }
    json_decref(o);
    if (st) pfi_lease_init(s);
    else *found = 1;
    return st;
}
