/* manifest.c — parsing and validating run.json (see manifest.h). */
#include "pfi/manifest.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const char *const known_keys[] = {"group", "gpu_model", "gpus", "cap_w", "arch",
                                         "task", "model", "split", "hosts", "interval_s",
                                         "metadata", "telemetry", "steplog", "format_version",
                                         "generator", NULL};

static pfi_status str_field(json_t *o, const char *key, int required, char **out, const char *name,
                            pfi_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return pfi_errorf(err, PFI_EINVAL, "%s: key '%s': missing", name, key);
        return PFI_OK;
    }
    if (!json_is_string(v) || (required && json_string_length(v) == 0))
        return pfi_errorf(err, PFI_EINVAL, "%s: key '%s': expected a non-empty string", name, key);
    *out = strdup(json_string_value(v));
    return *out ? PFI_OK : pfi_errorf(err, PFI_ENOMEM, "out of memory");
}

pfi_status pfi_manifest_parse(const char *json, size_t len, const char *name, pfi_manifest *m,
                              pfi_log *log, pfi_error *err)
{
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return pfi_errorf(err, PFI_EPARSE, "%s:%d:%d: invalid JSON: %s", name, je.line, je.column, je.text);
    pfi_status st = PFI_OK;
    if (!json_is_object(o)) {
        st = pfi_errorf(err, PFI_EPARSE, "%s: not a JSON object", name);
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val) {
        int known = 0;
        for (int i = 0; known_keys[i]; i++) known |= strcmp(key, known_keys[i]) == 0;
        if (!known) pfi_warnf(log, "%s: unknown key '%s' ignored (free metadata goes in 'metadata')", name, key);
    }
    if ((st = str_field(o, "group", 1, &m->group, name, err))) goto out;
    if ((st = str_field(o, "gpu_model", 1, &m->gpu_model, name, err))) goto out;
    if ((st = str_field(o, "arch", 0, &m->arch, name, err))) goto out;
    if ((st = str_field(o, "task", 0, &m->task, name, err))) goto out;
    if ((st = str_field(o, "model", 0, &m->model, name, err))) goto out;
    if ((st = str_field(o, "split", 0, &m->split, name, err))) goto out;
    if ((st = str_field(o, "steplog", 0, &m->steplog, name, err))) goto out;
    if (m->arch && strcmp(m->arch, "dense") && strcmp(m->arch, "moe")) {
        st = pfi_errorf(err, PFI_EINVAL, "%s: key 'arch': '%s' is not dense or moe", name, m->arch);
        goto out;
    }
    if (m->task && strcmp(m->task, "pt") && strcmp(m->task, "ft")) {
        st = pfi_errorf(err, PFI_EINVAL, "%s: key 'task': '%s' is not pt or ft", name, m->task);
        goto out;
    }
    json_t *g = json_object_get(o, "gpus");
    if (!json_is_integer(g) || json_integer_value(g) < 1 || json_integer_value(g) > 1048576) {
        st = pfi_errorf(err, PFI_EINVAL, "%s: key 'gpus': expected an integer >= 1", name);
        goto out;
    }
    m->gpus = (int)json_integer_value(g);
    json_t *c = json_object_get(o, "cap_w");
    if (!json_is_number(c) || !(json_number_value(c) > 0) || json_number_value(c) > 100000) {
        st = pfi_errorf(err, PFI_EINVAL, "%s: key 'cap_w': expected a positive number of watts", name);
        goto out;
    }
    m->cap_w = json_number_value(c);
    json_t *iv = json_object_get(o, "interval_s");
    if (iv) {
        if (!json_is_number(iv) || !(json_number_value(iv) >= 0.01 && json_number_value(iv) <= 3600)) {
            st = pfi_errorf(err, PFI_EINVAL, "%s: key 'interval_s': expected 0.01..3600 seconds", name);
            goto out;
        }
        m->interval_s = json_number_value(iv);
    }
    json_t *h = json_object_get(o, "hosts");
    if (h) {
        if (!json_is_array(h)) {
            st = pfi_errorf(err, PFI_EINVAL, "%s: key 'hosts': expected an array of strings", name);
            goto out;
        }
        m->hosts = calloc(json_array_size(h) + 1, sizeof *m->hosts);
        size_t i;
        json_t *x;
        json_array_foreach(h, i, x) {
            if (!json_is_string(x)) {
                st = pfi_errorf(err, PFI_EINVAL, "%s: key 'hosts'[%zu]: expected a string", name, i);
                goto out;
            }
            m->hosts[m->nhosts++] = strdup(json_string_value(x));
        }
    }
    json_t *md = json_object_get(o, "metadata");
    if (md) {
        if (!json_is_object(md)) {
            st = pfi_errorf(err, PFI_EINVAL, "%s: key 'metadata': expected an object", name);
            goto out;
        }
        m->meta = calloc(json_object_size(md) + 1, sizeof *m->meta);
        const char *k2;
        json_t *v2;
        json_object_foreach(md, k2, v2) {
            char buf[64];
            const char *vs;
            if (json_is_string(v2)) vs = json_string_value(v2);
            else if (json_is_integer(v2)) {
                snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v2));
                vs = buf;
            } else if (json_is_real(v2)) {
                snprintf(buf, sizeof buf, "%.10g", json_real_value(v2));
                vs = buf;
            } else if (json_is_boolean(v2)) vs = json_is_true(v2) ? "true" : "false";
            else {
                st = pfi_errorf(err, PFI_EINVAL, "%s: metadata '%s': expected a string, number or boolean", name, k2);
                goto out;
            }
            m->meta[m->nmeta].key = strdup(k2);
            m->meta[m->nmeta].value = strdup(vs);
            m->nmeta++;
        }
    }
    json_t *tel = json_object_get(o, "telemetry");
    if (!json_is_array(tel) || json_array_size(tel) == 0) {
        st = pfi_errorf(err, PFI_EINVAL, "%s: key 'telemetry': expected a non-empty array", name);
        goto out;
    }
    m->tel = calloc(json_array_size(tel), sizeof *m->tel);
    size_t i;
    json_t *t;
    json_array_foreach(tel, i, t) {
        pfi_tel_ref *r = &m->tel[m->ntel];
        if (!json_is_object(t)) {
            st = pfi_errorf(err, PFI_EINVAL, "%s: telemetry[%zu]: expected an object", name, i);
            goto out;
        }
        char fmt_name[48];
        snprintf(fmt_name, sizeof fmt_name, "%s: telemetry[%zu]", name, i);
        char *fmt = NULL;
        if ((st = str_field(t, "path", 1, &r->path, fmt_name, err))) goto out;
        m->ntel++;
        if ((st = str_field(t, "format", 1, &fmt, fmt_name, err))) goto out;
        if ((st = str_field(t, "host", 0, &r->host, fmt_name, err))) {
            free(fmt);
            goto out;
        }
        if (strcmp(fmt, "prometheus") == 0 || strcmp(fmt, "dcgm") == 0) r->format = PFI_TEL_PROMETHEUS;
        else if (strcmp(fmt, "query_range") == 0) r->format = PFI_TEL_QUERY_RANGE;
        else if (strcmp(fmt, "nvidia-smi") == 0) r->format = PFI_TEL_NVSMI;
        else {
            st = pfi_errorf(err, PFI_EINVAL, "%s: key 'format': '%s' is not prometheus, query_range or nvidia-smi", fmt_name, fmt);
            free(fmt);
            goto out;
        }
        free(fmt);
        if (!pfi_manifest_path_ok(r->path)) {
            st = pfi_errorf(err, PFI_EINVAL, "%s: key 'path': '%s' must be relative to the run directory", fmt_name, r->path);
            goto out;
        }
    }
    if (m->steplog && !pfi_manifest_path_ok(m->steplog)) {
        st = pfi_errorf(err, PFI_EINVAL, "%s: key 'steplog': '%s' must be relative to the run directory", name, m->steplog);
        goto out;
    }
out:
    json_decref(o);
    if (st) pfi_manifest_free(m);
    return st;
}
