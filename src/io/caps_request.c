/* caps_request.c — parse and format the PUT /v1/caps body (caps_request.h). */
#include "caps_request.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 0;
    return 1;
}

static pfi_status str_field(json_t *v, const char *where, char *dst, size_t n, pfi_error *err)
{
    if (!json_is_string(v)) return pfi_errorf(err, PFI_EINVAL, "%s: expected a string", where);
    const char *s = json_string_value(v);
    if (!*s) return pfi_errorf(err, PFI_EINVAL, "%s: empty", where);
    if (strlen(s) >= n) return pfi_errorf(err, PFI_EINVAL, "%s: longer than %zu characters", where, n - 1);
    if (!printable(s)) return pfi_errorf(err, PFI_EINVAL, "%s: contains control characters", where);
    snprintf(dst, n, "%s", s);
    return PFI_OK;
}

static pfi_status cap_field(json_t *v, const char *where, double *cap, pfi_error *err)
{
    if (!json_is_number(v)) return pfi_errorf(err, PFI_EINVAL, "%s: expected a number (W per GPU)", where);
    double c = json_number_value(v);
    if (!isfinite(c) || !(c > 0) || c > 100000) return pfi_errorf(err, PFI_ERANGE, "%s: %g is not a power cap in W", where, c);
    *cap = c;
    return PFI_OK;
}

static pfi_status entries(json_t *a, const char *list, int gpus, pfi_caps_entry *out, size_t *n, pfi_error *err)
{
    *n = 0;
    if (!a) return PFI_OK;
    if (!json_is_array(a)) return pfi_errorf(err, PFI_EINVAL, "%s: expected an array", list);
    if (json_array_size(a) > PFI_CAPS_MAX_ENTRIES)
        return pfi_errorf(err, PFI_ERANGE, "%s: %zu entries, at most %d", list, json_array_size(a), PFI_CAPS_MAX_ENTRIES);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        char where[96];
        snprintf(where, sizeof where, "%s[%zu]", list, i);
        if (!json_is_object(e)) return pfi_errorf(err, PFI_EINVAL, "%s: expected an object", where);
        pfi_caps_entry *x = &out[i];
        memset(x, 0, sizeof *x);
        x->index = -1;
        x->cap_w = NAN;
        const char *k;
        json_t *v;
        int have_uuid = 0, have_index = 0, have_cap = 0, have_job = 0;
        json_object_foreach(e, k, v) {
            char w2[160];
            snprintf(w2, sizeof w2, "%s.%s", where, k);
            pfi_status st = PFI_OK;
            if (!strcmp(k, "cap_w")) st = cap_field(v, w2, &x->cap_w, err), have_cap = 1;
            else if (gpus && !strcmp(k, "uuid")) st = str_field(v, w2, x->uuid, sizeof x->uuid, err), have_uuid = 1;
            else if (gpus && !strcmp(k, "index")) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 4096)
                    st = pfi_errorf(err, PFI_EINVAL, "%s: expected a GPU index 0..4096", w2);
                else x->index = (long)json_integer_value(v);
                have_index = 1;
            } else if (!gpus && !strcmp(k, "job_id")) st = str_field(v, w2, x->job_id, sizeof x->job_id, err), have_job = 1;
            else st = pfi_errorf(err, PFI_EINVAL, "%s: unknown field (expected %s)", w2, gpus ? "uuid or index, cap_w" : "job_id, cap_w");
            if (st) return st;
        }
        if (!have_cap) return pfi_errorf(err, PFI_EINVAL, "%s.cap_w: missing", where);
        if (gpus && have_uuid + have_index != 1) return pfi_errorf(err, PFI_EINVAL, "%s: give exactly one of uuid and index", where);
        if (!gpus && !have_job) return pfi_errorf(err, PFI_EINVAL, "%s.job_id: missing", where);
        (*n)++;
    }
    return PFI_OK;
}

pfi_status pfi_caps_request_parse(const char *body, size_t len, pfi_caps_request *r, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return pfi_errorf(err, PFI_EPARSE, "request body: line %d column %d: %s", je.line, je.column, je.text);
    pfi_status st = PFI_OK;
    int have_lease = 0, have_ctl = 0, have_gen = 0;
    if (!json_is_object(o)) st = pfi_errorf(err, PFI_EINVAL, "request body: expected a JSON object");
    const char *k;
    json_t *v;
    if (!st) json_object_foreach(o, k, v) {
        if (!strcmp(k, "lease_s")) {
            have_lease = 1;
            if (!json_is_number(v) || !(json_number_value(v) >= 1 && json_number_value(v) <= 86400))
                st = pfi_errorf(err, PFI_ERANGE, "lease_s: expected a number of seconds in 1..86400");
            else r->lease_s = json_number_value(v);
        } else if (!strcmp(k, "controller")) {
            have_ctl = 1;
            st = str_field(v, "controller", r->controller, sizeof r->controller, err);
        } else if (!strcmp(k, "generation")) {
            have_gen = 1;
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > PFI_CAPS_GENERATION_MAX)
                st = pfi_errorf(err, PFI_EINVAL, "generation: expected an integer 0..2^53");
            else r->generation = (long long)json_integer_value(v);
        } else if (!strcmp(k, "gpus")) {
            st = entries(v, "gpus", 1, r->gpus, &r->ngpus, err);
        } else if (!strcmp(k, "jobs")) {
            st = entries(v, "jobs", 0, r->jobs, &r->njobs, err);
        } else {
            st = pfi_errorf(err, PFI_EINVAL, "%s: unknown field (expected lease_s, controller, generation, gpus, jobs)", k);
        }
        if (st) break;
    }
    if (!st && !have_lease) st = pfi_errorf(err, PFI_EINVAL, "lease_s: missing");
    if (!st && !have_ctl) st = pfi_errorf(err, PFI_EINVAL, "controller: missing");
    if (!st && !have_gen) st = pfi_errorf(err, PFI_EINVAL, "generation: missing");
    json_decref(o);
    return st;
}

char *pfi_caps_request_format(const pfi_caps_request *r)
{
    json_t *g = json_array(), *j = json_array();
    for (size_t i = 0; i < r->ngpus; i++) {
        json_t *e = r->gpus[i].uuid[0] ? json_pack("{s:s,s:f}", "uuid", r->gpus[i].uuid, "cap_w", r->gpus[i].cap_w)
                                       : json_pack("{s:I,s:f}", "index", (json_int_t)r->gpus[i].index, "cap_w", r->gpus[i].cap_w);
        json_array_append_new(g, e);
    }
    for (size_t i = 0; i < r->njobs; i++)
        json_array_append_new(j, json_pack("{s:s,s:f}", "job_id", r->jobs[i].job_id, "cap_w", r->jobs[i].cap_w));
    json_t *o = json_pack("{s:f,s:s,s:I,s:o,s:o}", "lease_s", r->lease_s, "controller", r->controller, "generation",
                          (json_int_t)r->generation, "gpus", g, "jobs", j);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}
