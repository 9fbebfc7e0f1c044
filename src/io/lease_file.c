/* lease_file.c — the agent's state file, parsed and formatted
 * (lease_file.h). Everything is checked: types, finite positive watts,
 * lengths that fit the state's fields, no GPU listed twice, at most
 * PFI_LEASE_MAX_GPUS GPUs. Device ranges are checked by the agent, which
 * knows them. */
#include "lease_file.h"
#include "state_file.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a power in W that can be a GPU's limit at all (device ranges are the agent's) */
static int watts_ok(json_t *v)
{
    return json_is_number(v) && isfinite(json_number_value(v)) && json_number_value(v) > 0 &&
           json_number_value(v) < 1e6;
}

static pfi_status parse_gpus(json_t *g, const char *path, pfi_lease_state *s, pfi_error *err)
{
    size_t i;
    json_t *e;
    json_array_foreach(g, i, e)
    {
        json_t *u = json_object_get(e, "uuid"), *b = json_object_get(e, "baseline_w"),
               *c = json_object_get(e, "cap_w");
        if (!json_is_string(u) || !json_string_length(u) ||
            json_string_length(u) >= sizeof s->gpu[0].uuid)
            return pfi_errorf(err, PFI_EINVAL, "%s: gpus[%zu].uuid: expected a GPU UUID", path, i);
        if (!watts_ok(b))
            return pfi_errorf(err, PFI_EINVAL,
                              "%s: gpus[%zu].baseline_w: expected a positive number of W", path, i);
        if (!watts_ok(c))
            return pfi_errorf(err, PFI_EINVAL,
                              "%s: gpus[%zu].cap_w: expected a positive number of W", path, i);
        for (size_t k = 0; k < s->n; k++)
            if (!strcmp(s->gpu[k].uuid, json_string_value(u)))
                return pfi_errorf(err, PFI_EINVAL, "%s: gpus[%zu].uuid: %s is listed twice", path,
                                  i, json_string_value(u));
        if (s->n == PFI_LEASE_MAX_GPUS)
            return pfi_errorf(err, PFI_ERANGE, "%s: gpus: more than %d GPUs", path,
                              PFI_LEASE_MAX_GPUS);
        pfi_lease_gpu *x = &s->gpu[s->n++];
        memset(x, 0, sizeof *x);
        memcpy(x->uuid, json_string_value(u), json_string_length(u));
        x->changed = 1;
        x->baseline_w = json_number_value(b);
        x->cap_w = json_number_value(c);
    }
    return PFI_OK;
}

/* /proc/sys/kernel/random/boot_id's form: a UUID; any hex and '-' up to 63 */
static int boot_id_ok(const char *b)
{
    size_t n = strlen(b);
    return n > 0 && n < sizeof((pfi_lease_state *)0)->boot_id &&
           strspn(b, "0123456789abcdefABCDEF-") == n;
}

static pfi_status parse_lease(json_t *l, const char *path, pfi_lease_state *s, pfi_error *err)
{
    if (!l || json_is_null(l)) return PFI_OK;
    json_t *c = json_object_get(l, "controller"), *ge = json_object_get(l, "generation"),
           *ex = json_object_get(l, "expires_at");
    if (!json_is_object(l))
        return pfi_errorf(err, PFI_EINVAL, "%s: lease: expected an object or null", path);
    if (!json_is_string(c) || json_string_length(c) >= sizeof s->controller)
        return pfi_errorf(err, PFI_EINVAL,
                          "%s: lease.controller: expected a name (under %zu bytes)", path,
                          sizeof s->controller);
    if (!json_is_integer(ge) || json_integer_value(ge) < 0)
        return pfi_errorf(err, PFI_EINVAL, "%s: lease.generation: expected a non-negative integer",
                          path);
    if (!json_is_number(ex) || !isfinite(json_number_value(ex)))
        return pfi_errorf(err, PFI_EINVAL, "%s: lease.expires_at: expected a time in s", path);
    s->active = 1;
    memcpy(s->controller, json_string_value(c), json_string_length(c) + 1);
    s->generation = (long long)json_integer_value(ge);
    s->expires_at = json_number_value(ex);
    return PFI_OK;
}

pfi_status pfi_lease_parse(const char *text, size_t len, const char *path, pfi_lease_state *s,
                           pfi_error *err)
{
    memset(s, 0, sizeof *s);
    json_t *o;
    pfi_status st = pfi_state_json_open(text, len, path, &o, err);
    if (!o) return st;
    json_t *gm = json_object_get(o, "generation_max"), *g = json_object_get(o, "gpus"),
           *bi = json_object_get(o, "boot_id");
    if (st)
        ;
    else if (bi && (!json_is_string(bi) || !boot_id_ok(json_string_value(bi))))
        st = pfi_errorf(err, PFI_EINVAL, "%s: boot_id: expected a boot id (hex digits and '-')",
                        path);
    else if (!json_is_integer(gm) || json_integer_value(gm) < 0)
        st = pfi_errorf(err, PFI_EINVAL, "%s: generation_max: expected a non-negative integer",
                        path);
    else if (!json_is_array(g))
        st = pfi_errorf(err, PFI_EINVAL, "%s: gpus: expected an array", path);
    else if (!(st = parse_lease(json_object_get(o, "lease"), path, s, err))) {
        s->generation_max = (long long)json_integer_value(gm);
        if (s->generation > s->generation_max)
            st = pfi_errorf(err, PFI_EINVAL,
                            "%s: lease.generation: %lld is above generation_max %lld", path,
                            s->generation, s->generation_max);
        else st = parse_gpus(g, path, s, err);
    }
    if (!st && bi) snprintf(s->boot_id, sizeof s->boot_id, "%s", json_string_value(bi));
    json_decref(o);
    if (st) memset(s, 0, sizeof *s);
    return st;
}

char *pfi_lease_format(const pfi_lease_state *s)
{
    json_t *g = json_array();
    for (size_t i = 0; i < s->n; i++) {
        const pfi_lease_gpu *x = &s->gpu[i];
        if (!x->changed) continue;
        json_array_append_new(g, json_pack("{s:s,s:f,s:f}", "uuid", x->uuid, "baseline_w",
                                           x->baseline_w, "cap_w", x->cap_w));
    }
    json_t *lease = s->active
                        ? json_pack("{s:s,s:I,s:f}", "controller", s->controller, "generation",
                                    (json_int_t)s->generation, "expires_at", s->expires_at)
                        : json_null();
    json_t *o = json_pack("{s:i,s:I,s:o,s:o}", "format_version", 1, "generation_max",
                          (json_int_t)s->generation_max, "lease", lease, "gpus", g);
    if (o && s->boot_id[0]) json_object_set_new(o, "boot_id", json_string(s->boot_id));
    char *txt = o ? json_dumps(o, JSON_INDENT(1)) : NULL;
    json_decref(o);
    return txt;
}
