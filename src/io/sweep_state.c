/* sweep_state.c — `pfi sweep`'s state file, parsed and formatted
 * (sweep_state.h). Device ranges are checked by the sweep, which knows them. */
#include "sweep_state.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_file.h"

pfi_status pfi_sweep_state_parse(const char *text, size_t len, const char *path, pfi_sweep_state *s,
                                 pfi_error *err)
{
    memset(s, 0, sizeof *s);
    json_t *o;
    pfi_status st = pfi_state_json_open(text, len, path, &o, err);
    if (!o) return st;
    json_t *p = json_object_get(o, "pid"), *g = json_object_get(o, "gpus");
    if (st)
        ;
    else if (!json_is_integer(p) || json_integer_value(p) < 0 || json_integer_value(p) > 1L << 30)
        st = pfi_errorf(err, PFI_EINVAL, "%s: pid: expected a process id", path);
    else if (!json_is_array(g))
        st = pfi_errorf(err, PFI_EINVAL, "%s: gpus: expected an array", path);
    else {
        s->pid = (long)json_integer_value(p);
        size_t i;
        json_t *e;
        json_array_foreach(g, i, e)
        {
            json_t *u = json_object_get(e, "uuid"), *x = json_object_get(e, "index"),
                   *c = json_object_get(e, "cap_w");
            double cw = json_number_value(c);
            if (!json_is_string(u) || !json_string_length(u) ||
                json_string_length(u) >= sizeof s->gpu[0].uuid) {
                st =
                    pfi_errorf(err, PFI_EINVAL, "%s: gpus[%zu].uuid: expected a GPU UUID", path, i);
                break;
            }
            if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= 4096) {
                st = pfi_errorf(err, PFI_EINVAL, "%s: gpus[%zu].index: expected a GPU index", path,
                                i);
                break;
            }
            if (!json_is_number(c) || !isfinite(cw) || !(cw > 0) || cw >= 1e6) {
                st = pfi_errorf(err, PFI_EINVAL,
                                "%s: gpus[%zu].cap_w: expected a positive number of W", path, i);
                break;
            }
            for (size_t k = 0; k < s->n && !st; k++)
                if (!strcmp(s->gpu[k].uuid, json_string_value(u)))
                    st = pfi_errorf(err, PFI_EINVAL, "%s: gpus[%zu].uuid: %s is listed twice", path,
                                    i, json_string_value(u));
            if (!st && s->n == PFI_SWEEP_STATE_MAX_GPUS)
                st = pfi_errorf(err, PFI_ERANGE, "%s: gpus: more than %d GPUs", path,
                                PFI_SWEEP_STATE_MAX_GPUS);
            if (st) break;
            pfi_sweep_state_gpu *q = &s->gpu[s->n++];
            memcpy(q->uuid, json_string_value(u), json_string_length(u) + 1);
            q->index = (long)json_integer_value(x);
            q->cap_w = cw;
        }
    }
    json_decref(o);
    if (st) memset(s, 0, sizeof *s);
    return st;
}

char *pfi_sweep_state_format(const pfi_sweep_state *s)
{
    json_t *a = json_array();
    for (size_t k = 0; k < s->n; k++)
        json_array_append_new(a, json_pack("{s:I,s:s,s:f}", "index", (json_int_t)s->gpu[k].index,
                                           "uuid", s->gpu[k].uuid, "cap_w", s->gpu[k].cap_w));
    json_t *o =
        json_pack("{s:i,s:I,s:o}", "format_version", 1, "pid", (json_int_t)s->pid, "gpus", a);
    char *t = o ? json_dumps(o, JSON_INDENT(1)) : NULL;
    json_decref(o);
    return t;
}

pfi_status pfi_sweep_state_load(const char *path, pfi_sweep_state *s, int *found, pfi_error *err)
{
    memset(s, 0, sizeof *s);
    char *txt;
    size_t n;
    pfi_status st = pfi_state_file_read(path, PFI_SWEEP_STATE_FILE_MAX, &txt, &n, found, err);
    if (!st && *found) st = pfi_sweep_state_parse(txt, n, path, s, err);
    free(txt);
    if (st) *found = 0;
    return st;
}
