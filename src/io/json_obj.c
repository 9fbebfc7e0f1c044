/* json_obj.c — reading a JSON object through a table of its keys
 * (json_obj.h). */
#include "json_obj.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const pfi_jopts no_opts;

const char *pfi_json_obj_name(const pfi_jopts *o, const char *key, char *buf, size_t n)
{
    if (!o) o = &no_opts;
    int km = o->key_max && o->key_max < INT_MAX ? (int)o->key_max : INT_MAX;
    size_t lim = o->name_max && o->name_max < n ? o->name_max + 1 : n;
    if (o->quoted) snprintf(buf, lim, "%s: key '%.*s'", o->prefix ? o->prefix : "", km, key);
    else if (o->prefix) snprintf(buf, lim, "%s.%.*s", o->prefix, km, key);
    else snprintf(buf, lim, "%.*s", km, key);
    return buf;
}

/* "NAME: ..." for a value of the wrong type or out of range */
static pfi_status wrong(const pfi_jkey *k, const char *name, pfi_error *err)
{
    pfi_status code = k->code ? k->code : PFI_EINVAL;
    if (k->expect) return pfi_errorf(err, code, "%s: %s", name, k->expect);
    const char *ne = k->flags & PFI_J_NONEMPTY ? "non-empty " : "";
    switch (k->type) {
    case PFI_J_STRING:
        if (k->size)
            return pfi_errorf(err, code, "%s: expected a string (at most %zu characters)", name,
                              k->size - 1);
        return pfi_errorf(err, code, "%s: expected a %sstring", name, ne);
    case PFI_J_NUMBER:
        return pfi_errorf(err, code, "%s: expected a number in %g..%g", name, k->lo, k->hi);
    case PFI_J_INTEGER:
        return pfi_errorf(err, code, "%s: expected an integer in %.0f..%.0f", name, k->lo, k->hi);
    case PFI_J_BOOL: return pfi_errorf(err, code, "%s: expected true or false", name);
    case PFI_J_OBJECT: return pfi_errorf(err, code, "%s: expected an object", name);
    case PFI_J_ARRAY: return pfi_errorf(err, code, "%s: expected a %sarray", name, ne);
    case PFI_J_ANY: break;
    }
    return pfi_errorf(err, code, "%s: wrong type", name);
}

static int in_range(const pfi_jkey *k, double x)
{
    if (k->flags & PFI_J_LO_OPEN ? !(x > k->lo) : !(x >= k->lo)) return 0;
    return k->flags & PFI_J_HI_OPEN ? x < k->hi : x <= k->hi;
}

/* integers compare as integers: 2^53 + 1 is not 2^53 */
static int int_in_range(const pfi_jkey *k, long long x)
{
    long long lo = (long long)k->lo, hi = (long long)k->hi;
    if (x < lo || (x == lo && (k->flags & PFI_J_LO_OPEN))) return 0;
    return x < hi || (x == hi && !(k->flags & PFI_J_HI_OPEN));
}

/* the type check, then fn or the store */
pfi_status pfi_json_value_read(json_t *v, const pfi_jkey *k, const char *name, void *ud,
                               pfi_error *err)
{
    switch (k->type) {
    case PFI_J_ANY: break;
    case PFI_J_STRING:
        if (!json_is_string(v) || ((k->flags & PFI_J_NONEMPTY) && json_string_length(v) == 0) ||
            (k->size && strlen(json_string_value(v)) >= k->size))
            return wrong(k, name, err);
        break;
    case PFI_J_NUMBER:
        if (!json_is_number(v) || !in_range(k, json_number_value(v))) return wrong(k, name, err);
        break;
    case PFI_J_INTEGER:
        if (!json_is_integer(v) || !int_in_range(k, (long long)json_integer_value(v)))
            return wrong(k, name, err);
        break;
    case PFI_J_BOOL:
        if (!json_is_boolean(v)) return wrong(k, name, err);
        break;
    case PFI_J_OBJECT:
        if (!json_is_object(v)) return wrong(k, name, err);
        break;
    case PFI_J_ARRAY:
        if (!json_is_array(v) || ((k->flags & PFI_J_NONEMPTY) && json_array_size(v) == 0))
            return wrong(k, name, err);
        break;
    }
    if (k->fn) return k->fn(k, v, name, ud, err);
    if (!k->dst) return PFI_OK;
    switch (k->type) {
    case PFI_J_STRING:
        if (k->size) {
            snprintf(k->dst, k->size, "%s", json_string_value(v));
        } else {
            char *c = strdup(json_string_value(v));
            if (!c) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
            memcpy(k->dst, &c, sizeof c);
        }
        break;
    case PFI_J_NUMBER: *(double *)k->dst = json_number_value(v); break;
    case PFI_J_INTEGER:
        if (k->size == sizeof(int)) *(int *)k->dst = (int)json_integer_value(v);
        else *(long long *)k->dst = (long long)json_integer_value(v);
        break;
    case PFI_J_BOOL: *(int *)k->dst = json_is_true(v); break;
    default: break;
    }
    return PFI_OK;
}

static int absent(const pfi_jkey *k, json_t *v)
{
    return !v || (json_is_null(v) && (k->flags & PFI_J_NULL_ABSENT));
}

/* a present key (absent ones are the caller's) */
static pfi_status read_key(const pfi_jkey *k, json_t *v, const pfi_jopts *o, pfi_error *err)
{
    if (absent(k, v)) return PFI_OK;
    if (k->seen) *k->seen = 1;
    char name[PFI_ERROR_MSG_MAX];
    return pfi_json_value_read(v, k, pfi_json_obj_name(o, k->key, name, sizeof name), o->ud, err);
}

static pfi_status missing(const pfi_jkey *k, const pfi_jopts *o, pfi_error *err)
{
    if (!(k->flags & (PFI_J_REQUIRED | PFI_J_NEEDED))) return PFI_OK;
    char name[PFI_ERROR_MSG_MAX];
    pfi_json_obj_name(o, k->key, name, sizeof name);
    if (k->flags & PFI_J_REQUIRED) return pfi_errorf(err, PFI_EINVAL, "%s: missing", name);
    return wrong(k, name, err);
}

/* "; did you mean 'KEY'?" for the table's key closest to a misspelt one
 * (pfi_opts_suggest, as for options), or "" */
static const char *did_you_mean(const char *key, const pfi_jkey *keys, size_t nkeys, char *buf,
                                size_t n)
{
    const char *cands[64];
    size_t m = 0;
    for (size_t i = 0; i < nkeys && m < sizeof cands / sizeof *cands; i++)
        if (keys[i].key) cands[m++] = keys[i].key;
    const char *s = pfi_opts_suggest(key, cands, m);
    if (!s) return "";
    snprintf(buf, n, "; did you mean '%s'?", s);
    return buf;
}

static pfi_status unknown(const char *key, const pfi_jkey *keys, size_t nkeys, const pfi_jopts *o,
                          pfi_error *err)
{
    char name[PFI_ERROR_MSG_MAX], mean[128];
    switch (o->unknown) {
    case PFI_J_UNKNOWN_ERROR:
        return pfi_errorf(err, PFI_EINVAL, "%s: %s%s", pfi_json_obj_name(o, key, name, sizeof name),
                          o->unknown_text ? o->unknown_text : "unknown key",
                          did_you_mean(key, keys, nkeys, mean, sizeof mean));
    case PFI_J_UNKNOWN_WARN:
        pfi_warnf(o->log, "%s: unknown key '%s' %s%s", o->prefix ? o->prefix : "", key,
                  o->unknown_text ? o->unknown_text : "ignored",
                  did_you_mean(key, keys, nkeys, mean, sizeof mean));
        break;
    case PFI_J_UNKNOWN_IGNORE: break;
    }
    return PFI_OK;
}

static const pfi_jkey *find(const pfi_jkey *keys, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (keys[i].key && !strcmp(keys[i].key, key)) return &keys[i];
    return NULL;
}

pfi_status pfi_json_obj_read(json_t *o, const pfi_jkey *keys, size_t nkeys, const pfi_jopts *opts,
                             pfi_error *err)
{
    if (!opts) opts = &no_opts;
    if (!json_is_object(o))
        return pfi_errorf(err, PFI_EINVAL, "%s: expected an object",
                          opts->prefix ? opts->prefix : "JSON");
    const char *key;
    json_t *v;
    /* the object's keys, in its order: unknown ones, and the others unless
       the table's order is the reading order */
    json_object_foreach(o, key, v)
    {
        const pfi_jkey *k = find(keys, nkeys, key);
        pfi_status st = !k                  ? unknown(key, keys, nkeys, opts, err)
                        : opts->table_order ? PFI_OK
                                            : read_key(k, v, opts, err);
        if (st) return st;
    }
    /* the table's entries, in its order: absent keys (and in table order,
       everything) */
    for (size_t i = 0; i < nkeys; i++) {
        const pfi_jkey *k = &keys[i];
        pfi_status st = PFI_OK;
        if (!k->key) {
            if (opts->table_order && k->fn)
                st = k->fn(k, NULL, opts->prefix ? opts->prefix : "", opts->ud, err);
        } else {
            json_t *x = json_object_get(o, k->key);
            if (absent(k, x)) st = missing(k, opts, err);
            else if (opts->table_order) st = read_key(k, x, opts, err);
        }
        if (st) return st;
    }
    return PFI_OK;
}
