/* manifest.c — parsing and validating run.json (see manifest.h). */
#include "pfi/manifest.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_obj.h"
#include "vec.h"

int pfi_manifest_path_ok(const char *p)
{
    if (!p[0] || p[0] == '/') return 0;
    const char *s = p;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') return 0;
        if (!e) break;
        s = e + 1;
    }
    return 1;
}

/* what the readers of run.json's keys share */
typedef struct mctx {
    pfi_manifest *m;
    const char *name; /* the file, for messages */
} mctx;

/* every string of run.json: null reads as absent; an empty one is wrong where it is required */
#define MSTR(key, flags, dst)                                                                      \
    {                                                                                              \
        key, PFI_J_STRING, PFI_J_NULL_ABSENT | (flags), dst,                                       \
            .expect = "expected a non-empty string"                                                \
    }
#define MSTR_REQ (PFI_J_REQUIRED | PFI_J_NONEMPTY)

static pfi_status arch_task_check(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                  pfi_error *err)
{
    (void)k, (void)v;
    const pfi_manifest *m = ((mctx *)ud)->m;
    if (m->arch && strcmp(m->arch, "dense") && strcmp(m->arch, "moe"))
        return pfi_errorf(err, PFI_EINVAL, "%s: key 'arch': '%s' is not dense or moe", name,
                          m->arch);
    if (m->task && strcmp(m->task, "pt") && strcmp(m->task, "ft"))
        return pfi_errorf(err, PFI_EINVAL, "%s: key 'task': '%s' is not pt or ft", name, m->task);
    return PFI_OK;
}

static pfi_status hosts_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                              pfi_error *err)
{
    (void)k;
    pfi_manifest *m = ((mctx *)ud)->m;
    if (!(m->hosts = pfi_calloc(json_array_size(v) + 1, sizeof *m->hosts, err))) return PFI_ENOMEM;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
    {
        if (!json_is_string(x))
            return pfi_errorf(err, PFI_EINVAL, "%s[%zu]: expected a string", name, i);
        if (!(m->hosts[m->nhosts] = strdup(json_string_value(x))))
            return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        m->nhosts++;
    }
    return PFI_OK;
}

/* free metadata: strings, numbers and booleans, kept as text */
static pfi_status metadata_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                 pfi_error *err)
{
    (void)k, (void)name;
    mctx *c = ud;
    pfi_manifest *m = c->m;
    if (!(m->meta = pfi_calloc(json_object_size(v) + 1, sizeof *m->meta, err))) return PFI_ENOMEM;
    const char *k2;
    json_t *v2;
    json_object_foreach(v, k2, v2)
    {
        char buf[64];
        const char *vs = buf;
        if (json_is_string(v2)) vs = json_string_value(v2);
        else if (json_is_integer(v2))
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v2));
        else if (json_is_real(v2)) snprintf(buf, sizeof buf, "%.10g", json_real_value(v2));
        else if (json_is_boolean(v2)) vs = json_is_true(v2) ? "true" : "false";
        else
            return pfi_errorf(err, PFI_EINVAL,
                              "%s: metadata '%s': expected a string, number or boolean", c->name,
                              k2);
        pfi_kv *e = &m->meta[m->nmeta++];
        e->key = strdup(k2);
        e->value = strdup(vs);
        if (!e->key || !e->value) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    return PFI_OK;
}

/* one entry of "telemetry": path, format, host; other keys are ignored */
static pfi_status tel_entry(json_t *t, const char *where, pfi_tel_ref *r, pfi_error *err)
{
    char *fmt = NULL;
    const pfi_jkey keys[] = {
        MSTR("path", MSTR_REQ, &r->path),
        MSTR("format", MSTR_REQ, &fmt),
        MSTR("host", 0, &r->host),
    };
    pfi_jopts o = {.prefix = where, .quoted = 1, .table_order = 1, .unknown = PFI_J_UNKNOWN_IGNORE};
    pfi_status st = PFI_JSON_OBJ_READ(t, keys, &o, err);
    if (!st) {
        if (strcmp(fmt, "prometheus") == 0 || strcmp(fmt, "dcgm") == 0)
            r->format = PFI_TEL_PROMETHEUS;
        else if (strcmp(fmt, "query_range") == 0) r->format = PFI_TEL_QUERY_RANGE;
        else if (strcmp(fmt, "nvidia-smi") == 0) r->format = PFI_TEL_NVSMI;
        else
            st = pfi_errorf(err, PFI_EINVAL,
                            "%s: key 'format': '%s' is not prometheus, query_range or nvidia-smi",
                            where, fmt);
    }
    free(fmt);
    if (!st && !pfi_manifest_path_ok(r->path))
        st = pfi_errorf(err, PFI_EINVAL,
                        "%s: key 'path': '%s' must be relative to the run directory", where,
                        r->path);
    return st;
}

static pfi_status telemetry_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                  pfi_error *err)
{
    (void)k, (void)name;
    mctx *c = ud;
    pfi_manifest *m = c->m;
    if (!(m->tel = pfi_calloc(json_array_size(v), sizeof *m->tel, err))) return PFI_ENOMEM;
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t)
    {
        if (!json_is_object(t))
            return pfi_errorf(err, PFI_EINVAL, "%s: telemetry[%zu]: expected an object", c->name,
                              i);
        char where[PFI_ERROR_MSG_MAX];
        snprintf(where, sizeof where, "%s: telemetry[%zu]", c->name, i);
        m->ntel++; /* counted before reading: pfi_manifest_dispose frees what it got */
        pfi_status st = tel_entry(t, where, &m->tel[i], err);
        if (st) return st;
    }
    return PFI_OK;
}

pfi_status pfi_manifest_parse(const char *json, size_t len, const char *name, pfi_manifest *m,
                              pfi_log *log, pfi_error *err)
{
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return pfi_errorf(err, PFI_EPARSE, "%s:%d:%d: invalid JSON: %s", name, je.line, je.column,
                          je.text);
    const pfi_jkey keys[] = {
        MSTR("group", MSTR_REQ, &m->group),
        MSTR("gpu_model", MSTR_REQ, &m->gpu_model),
        MSTR("arch", 0, &m->arch),
        MSTR("task", 0, &m->task),
        MSTR("model", 0, &m->model),
        MSTR("split", 0, &m->split),
        MSTR("steplog", 0, &m->steplog),
        {NULL, .fn = arch_task_check},
        {"gpus", PFI_J_INTEGER, PFI_J_NEEDED, &m->gpus, sizeof m->gpus, .lo = 1, .hi = 1048576,
         .expect = "expected an integer >= 1"},
        {"cap_w", PFI_J_NUMBER, PFI_J_NEEDED | PFI_J_LO_OPEN, &m->cap_w, .lo = 0, .hi = 100000,
         .expect = "expected a positive number of watts"},
        {"interval_s", PFI_J_NUMBER, 0, &m->interval_s, .lo = 0.01, .hi = 3600,
         .expect = "expected 0.01..3600 seconds"},
        {"hosts", PFI_J_ARRAY, 0, .fn = hosts_field, .expect = "expected an array of strings"},
        {"metadata", PFI_J_OBJECT, 0, .fn = metadata_field},
        {"telemetry", PFI_J_ARRAY, PFI_J_NEEDED | PFI_J_NONEMPTY, .fn = telemetry_field,
         .expect = "expected a non-empty array"},
        /* known, not read here */
        {"format_version", PFI_J_ANY, .dst = NULL},
        {"generator", PFI_J_ANY, .dst = NULL},
    };
    mctx c = {m, name};
    pfi_jopts opts = {.prefix = name,
                      .quoted = 1,
                      .table_order = 1,
                      .unknown = PFI_J_UNKNOWN_WARN,
                      .unknown_text = "ignored (free metadata goes in 'metadata')",
                      .log = log,
                      .ud = &c};
    pfi_status st = json_is_object(o) ? PFI_JSON_OBJ_READ(o, keys, &opts, err)
                                      : pfi_errorf(err, PFI_EPARSE, "%s: not a JSON object", name);
    if (!st && m->steplog && !pfi_manifest_path_ok(m->steplog))
        st = pfi_errorf(err, PFI_EINVAL,
                        "%s: key 'steplog': '%s' must be relative to the run directory", name,
                        m->steplog);
    json_decref(o);
    if (st) pfi_manifest_dispose(m);
    return st;
}
