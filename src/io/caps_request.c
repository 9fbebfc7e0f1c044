/* caps_request.c — parse and format the PUT /v1/caps body (caps_request.h). */
#include "caps_request.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_obj.h"

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 0;
    return 1;
}

/* a name (controller, uuid, job_id): a printable, non-empty string shorter than k->size */
static pfi_status text_field(const pfi_jkey *k, json_t *v, const char *where, void *ud,
                             pfi_error *err)
{
    (void)ud;
    if (!json_is_string(v)) return pfi_errorf(err, PFI_EINVAL, "%s: expected a string", where);
    const char *s = json_string_value(v);
    if (!*s) return pfi_errorf(err, PFI_EINVAL, "%s: empty", where);
    if (strlen(s) >= k->size)
        return pfi_errorf(err, PFI_EINVAL, "%s: longer than %zu characters", where, k->size - 1);
    if (!printable(s)) return pfi_errorf(err, PFI_EINVAL, "%s: contains control characters", where);
    snprintf(k->dst, k->size, "%s", s);
    return PFI_OK;
}

static pfi_status cap_field(const pfi_jkey *k, json_t *v, const char *where, void *ud,
                            pfi_error *err)
{
    (void)ud;
    if (!json_is_number(v))
        return pfi_errorf(err, PFI_EINVAL, "%s: expected a number (W per GPU)", where);
    double c = json_number_value(v);
    if (!isfinite(c) || !(c > 0) || c > 100000)
        return pfi_errorf(err, PFI_ERANGE, "%s: %g is not a power cap in W", where, c);
    *(double *)k->dst = c;
    return PFI_OK;
}

/* one entry of "gpus" (gpus: uuid or index, cap_w) or of "jobs" (job_id, cap_w) */
static pfi_status entry(json_t *e, const char *where, int gpus, pfi_caps_entry *x, pfi_error *err)
{
    memset(x, 0, sizeof *x);
    x->index = -1;
    x->cap_w = NAN;
    long long index = -1;
    int have_uuid = 0, have_index = 0;
    const pfi_jkey gpu_keys[] = {
        {"cap_w", PFI_J_ANY, PFI_J_REQUIRED, &x->cap_w, .fn = cap_field},
        {"uuid", PFI_J_ANY, 0, x->uuid, sizeof x->uuid, .fn = text_field, .seen = &have_uuid},
        {"index", PFI_J_INTEGER, 0, &index, .lo = 0, .hi = 4096,
         .expect = "expected a GPU index 0..4096", .seen = &have_index},
    };
    const pfi_jkey job_keys[] = {
        {"cap_w", PFI_J_ANY, PFI_J_REQUIRED, &x->cap_w, .fn = cap_field},
        {"job_id", PFI_J_ANY, PFI_J_REQUIRED, x->job_id, sizeof x->job_id, .fn = text_field},
    };
    pfi_jopts o = {.prefix = where,
                   .name_max = 159,
                   .unknown_text = gpus ? "unknown field (expected uuid or index, cap_w)"
                                        : "unknown field (expected job_id, cap_w)"};
    pfi_status st =
        gpus ? PFI_JSON_OBJ_READ(e, gpu_keys, &o, err) : PFI_JSON_OBJ_READ(e, job_keys, &o, err);
    if (st) return st;
    if (gpus && have_uuid + have_index != 1)
        return pfi_errorf(err, PFI_EINVAL, "%s: give exactly one of uuid and index", where);
    if (have_index) x->index = (long)index;
    return PFI_OK;
}

static pfi_status entries(json_t *a, const char *list, int gpus, pfi_caps_entry *out, size_t *n,
                          pfi_error *err)
{
    *n = 0;
    if (!json_is_array(a)) return pfi_errorf(err, PFI_EINVAL, "%s: expected an array", list);
    if (json_array_size(a) > PFI_CAPS_MAX_ENTRIES)
        return pfi_errorf(err, PFI_ERANGE, "%s: %zu entries, at most %d", list, json_array_size(a),
                          PFI_CAPS_MAX_ENTRIES);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e)
    {
        char where[96];
        snprintf(where, sizeof where, "%s[%zu]", list, i);
        pfi_status st = entry(e, where, gpus, &out[i], err);
        if (st) return st;
        (*n)++;
    }
    return PFI_OK;
}

static pfi_status gpus_field(const pfi_jkey *k, json_t *v, const char *where, void *ud,
                             pfi_error *err)
{
    (void)ud, (void)where;
    pfi_caps_request *r = k->dst;
    return entries(v, "gpus", 1, r->gpus, &r->ngpus, err);
}

static pfi_status jobs_field(const pfi_jkey *k, json_t *v, const char *where, void *ud,
                             pfi_error *err)
{
    (void)ud, (void)where;
    pfi_caps_request *r = k->dst;
    return entries(v, "jobs", 0, r->jobs, &r->njobs, err);
}

pfi_status pfi_caps_request_parse(const char *body, size_t len, pfi_caps_request *r, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return pfi_errorf(err, PFI_EPARSE, "request body: line %d column %d: %s", je.line,
                          je.column, je.text);
    const pfi_jkey keys[] = {
        {"lease_s", PFI_J_NUMBER, PFI_J_REQUIRED, &r->lease_s, .lo = 1, .hi = 86400,
         .expect = "expected a number of seconds in 1..86400", .code = PFI_ERANGE},
        {"controller", PFI_J_ANY, PFI_J_REQUIRED, r->controller, sizeof r->controller,
         .fn = text_field},
        {"generation", PFI_J_INTEGER, PFI_J_REQUIRED, &r->generation, .lo = 0,
         .hi = (double)PFI_CAPS_GENERATION_MAX, .expect = "expected an integer 0..2^53"},
        {"gpus", PFI_J_ANY, 0, r, .fn = gpus_field},
        {"jobs", PFI_J_ANY, 0, r, .fn = jobs_field},
    };
    pfi_jopts opts = {.unknown_text =
                          "unknown field (expected lease_s, controller, generation, gpus, jobs)"};
    pfi_status st = json_is_object(o)
                        ? PFI_JSON_OBJ_READ(o, keys, &opts, err)
                        : pfi_errorf(err, PFI_EINVAL, "request body: expected a JSON object");
    json_decref(o);
    return st;
}

char *pfi_caps_request_format(const pfi_caps_request *r)
{
    json_t *g = json_array(), *j = json_array();
    for (size_t i = 0; i < r->ngpus; i++) {
        json_t *e = r->gpus[i].uuid[0]
                        ? json_pack("{s:s,s:f}", "uuid", r->gpus[i].uuid, "cap_w", r->gpus[i].cap_w)
                        : json_pack("{s:I,s:f}", "index", (json_int_t)r->gpus[i].index, "cap_w",
                                    r->gpus[i].cap_w);
        json_array_append_new(g, e);
    }
    for (size_t i = 0; i < r->njobs; i++)
        json_array_append_new(
            j, json_pack("{s:s,s:f}", "job_id", r->jobs[i].job_id, "cap_w", r->jobs[i].cap_w));
    json_t *o =
        json_pack("{s:f,s:s,s:I,s:o,s:o}", "lease_s", r->lease_s, "controller", r->controller,
                  "generation", (json_int_t)r->generation, "gpus", g, "jobs", j);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}
