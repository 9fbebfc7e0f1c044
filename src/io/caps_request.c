/* caps_request.c — parse and format the PUT /v1/caps body (caps_request.h). */
#include "caps_request.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
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

/* a JSON string, escaped as jansson escapes it (the names are printable:
   quotes and backslashes; control characters as \u00XX all the same) */
static void put_string(pfi_buf *b, const char *s)
{
    pfi_buf_add(b, "\"", 1);
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            pfi_buf_add(b, e, 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            pfi_buf_printf(b, "\\u%04x", ch);
        } else {
            pfi_buf_add(b, p, 1);
        }
    }
    pfi_buf_add(b, "\"", 1);
}

/* a number as jansson writes a real: 17 significant digits, ".0" when it
   would read as an integer */
static void put_real(pfi_buf *b, double v)
{
    char t[40];
    int n = snprintf(t, sizeof t, "%.17g", v);
    if (n > 0 && !strpbrk(t, ".eEn")) /* "nan", "inf": never here (the parser refuses them) */
        memcpy(t + n, ".0", 3), n += 2;
    pfi_buf_add(b, t, (size_t)n);
}

/* Written out by hand, byte for byte what jansson's json_dumps(JSON_COMPACT)
 * wrote (tests/daemon/test_lease.c compares them): a trigger formats 12,500
 * of these under the controller's lock, and jansson's objects were 5 us
 * each of it. */
char *pfi_caps_request_format(const pfi_caps_request *r)
{
    pfi_buf b = {0};
    pfi_buf_add(&b, "{\"lease_s\":", 11);
    put_real(&b, r->lease_s);
    pfi_buf_add(&b, ",\"controller\":", 14);
    put_string(&b, r->controller);
    pfi_buf_printf(&b, ",\"generation\":%lld,\"gpus\":[", (long long)r->generation);
    for (size_t i = 0; i < r->ngpus; i++) {
        pfi_buf_add(&b, i ? ",{" : "{", i ? 2 : 1);
        if (r->gpus[i].uuid[0]) {
            pfi_buf_add(&b, "\"uuid\":", 7);
            put_string(&b, r->gpus[i].uuid);
        } else {
            pfi_buf_printf(&b, "\"index\":%lld", (long long)r->gpus[i].index);
        }
        pfi_buf_add(&b, ",\"cap_w\":", 9);
        put_real(&b, r->gpus[i].cap_w);
        pfi_buf_add(&b, "}", 1);
    }
    pfi_buf_add(&b, "],\"jobs\":[", 10);
    for (size_t i = 0; i < r->njobs; i++) {
        pfi_buf_add(&b, i ? ",{\"job_id\":" : "{\"job_id\":", i ? 11 : 10);
        put_string(&b, r->jobs[i].job_id);
        pfi_buf_add(&b, ",\"cap_w\":", 9);
        put_real(&b, r->jobs[i].cap_w);
        pfi_buf_add(&b, "}", 1);
    }
    pfi_buf_add(&b, "]}", 2);
    return pfi_buf_take(&b, NULL); /* NULL when out of memory */
}
