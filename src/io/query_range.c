/* query_range.c — Prometheus /api/v1/query_range matrix responses
 * (see telemetry.h). Parsed with jansson; every series' __name__ is
 * matched against the known DCGM metrics, others are skipped. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "num.h"
#include "telemetry.h"

pfi_status pfi_reader_slurp(pfi_reader *r, size_t max, char **data, size_t *len, pfi_error *err)
{
    pfi_buf b = {0};
    size_t lim = max < SIZE_MAX ? max + 1 : max; /* one byte more tells a larger input */
    for (;;) {
        size_t want = b.n < 65536 ? 65536 : b.n; /* doubling */
        if (want > lim - b.n) want = lim - b.n;
        if (pfi_buf_reserve(&b, want)) {
            pfi_buf_dispose(&b);
            return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        }
        ssize_t k = pfi_reader_read(r, b.p + b.n, want, err);
        if (k < 0) {
            pfi_buf_dispose(&b);
            return err ? err->code : PFI_EIO;
        }
        if (k == 0) break;
        b.n += (size_t)k;
        b.p[b.n] = '\0';
        if (b.n > max) {
            pfi_buf_dispose(&b);
            return pfi_errorf(err, PFI_ENOMEM, "%s: larger than %zu bytes", r->name, max);
        }
    }
    *data = pfi_buf_take(&b, len);
    return *data ? PFI_OK : pfi_errorf(err, PFI_ENOMEM, "out of memory");
}

static pfi_str label(json_t *metric, const char *name)
{
    json_t *v = json_object_get(metric, name);
    pfi_str s = {NULL, 0};
    if (json_is_string(v)) {
        s.p = json_string_value(v);
        s.n = json_string_length(v);
    }
    return s;
}

pfi_status pfi_query_range_read(pfi_reader *r, size_t max_bytes, pfi_sample_fn fn, void *ud,
                                pfi_log *log, pfi_error *err)
{
    (void)log;
    char *data;
    size_t len;
    pfi_status st =
        pfi_reader_slurp(r, max_bytes ? max_bytes : PFI_QUERY_RANGE_DEFAULT_MAX, &data, &len, err);
    if (st) return st;
    json_error_t je;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    free(data);
    if (!root)
        return pfi_errorf(err, PFI_EPARSE, "%s:%d:%d: invalid JSON: %s", r->name, je.line,
                          je.column, je.text);
    const char *fail = NULL;
    json_t *status = json_object_get(root, "status");
    json_t *d = json_object_get(root, "data");
    json_t *rt = json_object_get(d, "resultType");
    json_t *res = json_object_get(d, "result");
    if (!json_is_string(status) || strcmp(json_string_value(status), "success") != 0)
        fail = "field 'status' is not \"success\"";
    else if (!json_is_object(d)) fail = "no 'data' object";
    else if (!json_is_string(rt) || strcmp(json_string_value(rt), "matrix") != 0)
        fail = "data.resultType is not \"matrix\" (use /api/v1/query_range)";
    else if (!json_is_array(res)) fail = "data.result is not an array";
    if (fail) {
        json_decref(root);
        return pfi_errorf(err, PFI_EPARSE, "%s: %s", r->name, fail);
    }
    size_t i;
    json_t *series;
    json_array_foreach(res, i, series)
    {
        json_t *metric = json_object_get(series, "metric");
        json_t *values = json_object_get(series, "values");
        if (!json_is_object(metric) || !json_is_array(values)) {
            json_decref(root);
            return pfi_errorf(err, PFI_EPARSE, "%s: data.result[%zu]: needs 'metric' and 'values'",
                              r->name, i);
        }
        pfi_str name = label(metric, "__name__");
        int m = name.n ? pfi_metric_lookup(name.p, name.n) : -1, named = 0;
        if (m < 0 && name.n && (m = pfi_metric_lookup_pfi(name.p, name.n)) >= 0) named = 1;
        if (m < 0) continue;
        pfi_sample s;
        s.metric = (pfi_metric)m;
        s.pfi_named = named;
        s.uuid = label(metric, "UUID");
        if (!s.uuid.n) s.uuid = label(metric, "uuid");
        s.gpu = label(metric, "gpu");
        s.host = label(metric, "Hostname");
        if (!s.host.n) s.host = label(metric, "hostname");
        size_t j;
        json_t *pt;
        json_array_foreach(values, j, pt)
        {
            json_t *ts = json_array_get(pt, 0), *vs = json_array_get(pt, 1);
            if (!json_is_array(pt) || json_array_size(pt) != 2 || !json_is_number(ts) ||
                !json_is_string(vs)) {
                json_decref(root);
                return pfi_errorf(err, PFI_EPARSE,
                                  "%s: data.result[%zu].values[%zu]: expected [seconds, \"value\"]",
                                  r->name, i, j);
            }
            double t = json_number_value(ts);
            if (!isfinite(t) || fabs(t) > 1e13) {
                json_decref(root);
                return pfi_errorf(err, PFI_EPARSE,
                                  "%s: data.result[%zu].values[%zu]: bad timestamp", r->name, i, j);
            }
            const char *v = json_string_value(vs);
            double x;
            if (pfi_parse_double(v, strlen(v), &x) != PFI_NUM_OK) continue; /* NaN, +Inf: missing */
            if (pfi_dcgm_is_blank(x)) continue;
            s.t_ms = (int64_t)llround(t * 1000.0);
            s.value = named ? x * pfi_metric_get(s.metric)->pfi_scale : x;
            s.line = 0;
            if ((st = fn(ud, &s, err)) != PFI_OK) {
                json_decref(root);
                return st;
            }
        }
    }
    json_decref(root);
    return PFI_OK;
}
