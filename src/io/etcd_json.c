/* etcd_json.c — etcd's v3 JSON gateway answers read (etcd_json.h). Keys
 * the gateway may add in later versions are ignored (3.5 and 3.6 answer
 * with more header fields); the ones read are checked for type. */
#include "etcd_json.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *pfi_base64_encode(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len > (SIZE_MAX - 1) / 4 * 3 - 3) return NULL;
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < len ? p[i + 2] : 0);
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? b64[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static int b64_val(char c)
{
    const char *q = c ? strchr(b64, c) : NULL;
    return q ? (int)(q - b64) : -1;
}

int pfi_base64_decode(const char *s, size_t len, char **out, size_t *out_len)
{
    if (len % 4) return -1;
    char *o = malloc(len / 4 * 3 + 1);
    if (!o) return -1;
    size_t n = 0;
    for (size_t i = 0; i < len; i += 4) {
        int last = i + 4 == len;
        int pad = last ? (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=') : 0;
        int v[4];
        for (int k = 0; k < 4; k++) v[k] = k >= 4 - pad ? 0 : b64_val(s[i + k]);
        if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) goto bad;
        unsigned w = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | v[3];
        /* RFC 4648 3.5: the pad bits are zero in canonical base64 */
        if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff))) goto bad;
        o[n++] = (char)(w >> 16);
        if (pad < 2) o[n++] = (char)(w >> 8 & 0xff);
        if (pad < 1) o[n++] = (char)(w & 0xff);
    }
    o[n] = 0;
    *out = o;
    *out_len = n;
    return 0;
bad:
    free(o);
    return -1;
}

/* an int64 as the gateway writes it: a string of digits (optionally '-'),
   or a JSON integer; absent: 0 */
static int read_i64(json_t *o, const char *key, long long *v)
{
    json_t *j = json_object_get(o, key);
    *v = 0;
    if (!j) return 0;
    if (json_is_integer(j)) {
        *v = json_integer_value(j);
        return 0;
    }
    if (!json_is_string(j)) return -1;
    const char *s = json_string_value(j);
    const char *d = *s == '-' ? s + 1 : s;
    if (!*d || strspn(d, "0123456789") != strlen(d) || strlen(d) > 19) return -1;
    errno = 0;
    char *end;
    unsigned long long u = strtoull(d, &end, 10);
    /* uint64 fields (member ids) are not read; an int64 beyond its range is
       an error, not a wrapped value */
    if (errno || u > (unsigned long long)INT64_MAX) return -1;
    *v = d == s ? (long long)u : -(long long)u;
    return 0;
}

static int read_bytes(json_t *o, const char *key, char **out, size_t *len)
{
    json_t *j = json_object_get(o, key);
    *out = NULL;
    *len = 0;
    if (!j) return pfi_base64_decode("", 0, out, len);
    if (!json_is_string(j)) return -1;
    if (json_string_length(j) > PFI_ETCD_MAX_VALUE / 3 * 4 + 4) return -1;
    return pfi_base64_decode(json_string_value(j), json_string_length(j), out, len);
}

static const char *read_kv(json_t *o, pfi_etcd_kv *kv)
{
    memset(kv, 0, sizeof *kv);
    if (!json_is_object(o)) return "kv: not an object";
    if (read_bytes(o, "key", &kv->key, &kv->key_len)) return "kv.key: not base64";
    if (read_bytes(o, "value", &kv->value, &kv->value_len)) return "kv.value: not base64";
    if (read_i64(o, "create_revision", &kv->create_revision)) return "kv.create_revision";
    if (read_i64(o, "mod_revision", &kv->mod_revision)) return "kv.mod_revision";
    if (read_i64(o, "version", &kv->version)) return "kv.version";
    if (read_i64(o, "lease", &kv->lease)) return "kv.lease";
    return NULL;
}

static void kv_free(pfi_etcd_kv *kv)
{
    free(kv->key);
    free(kv->value);
}

/* append the kvs of array j (range's "kvs") to a->kvs */
static const char *read_kvs(json_t *j, pfi_etcd_answer *a)
{
    if (!j) return NULL;
    if (!json_is_array(j)) return "kvs: not an array";
    size_t n = json_array_size(j);
    if (n > PFI_ETCD_MAX_KVS - a->nkvs) return "kvs: too many";
    pfi_etcd_kv *k = realloc(a->kvs, (a->nkvs + n + 1) * sizeof *k);
    if (!k) return "kvs: out of memory";
    a->kvs = k;
    for (size_t i = 0; i < n; i++) {
        const char *why = read_kv(json_array_get(j, i), &a->kvs[a->nkvs]);
        if (why) {
            kv_free(&a->kvs[a->nkvs]);
            return why;
        }
        a->nkvs++;
    }
    return NULL;
}

static const char *read_error(json_t *root, pfi_etcd_answer *a)
{
    json_t *e = json_object_get(root, "error");
    json_t *msg = json_object_get(root, "message");
    long long code = 0;
    if (json_is_object(e)) { /* streamed: {"error":{"grpc_code":..,"message":..}} */
        if (read_i64(e, "grpc_code", &code)) return "error.grpc_code";
        msg = json_object_get(e, "message");
    } else if (json_is_string(e)) {
        if (read_i64(root, "code", &code)) return "code";
        if (!msg) msg = e;
    } else return "error: not a string or an object";
    a->code = code > 0 && code < 100 ? (int)code : 2; /* 2: UNKNOWN */
    snprintf(a->message, sizeof a->message, "%s",
             json_is_string(msg) ? json_string_value(msg) : "(no message)");
    return NULL;
}

static const char *read_leader(json_t *l, pfi_etcd_answer *a)
{
    if (!json_is_object(l)) return "leader: not an object";
    if (read_bytes(l, "name", &a->leader_name, &a->leader_name_len)) return "leader.name";
    if (read_bytes(l, "key", &a->leader_key, &a->leader_key_len)) return "leader.key";
    if (read_i64(l, "rev", &a->leader_rev)) return "leader.rev";
    if (read_i64(l, "lease", &a->leader_lease)) return "leader.lease";
    return NULL;
}

static const char *read_txn(json_t *r, pfi_etcd_answer *a)
{
    if (!json_is_array(r)) return "responses: not an array";
    for (size_t i = 0; i < json_array_size(r); i++) {
        json_t *rr = json_object_get(json_array_get(r, i), "response_range");
        if (!rr) continue;
        const char *why = read_kvs(json_object_get(rr, "kvs"), a);
        if (why) return why;
    }
    return NULL;
}

static const char *read_events(json_t *ev, pfi_etcd_answer *a)
{
    if (!json_is_array(ev)) return "events: not an array";
    size_t n = json_array_size(ev);
    if (n > PFI_ETCD_MAX_KVS) return "events: too many";
    a->events = calloc(n + 1, sizeof *a->events);
    if (!a->events) return "events: out of memory";
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(ev, i), *type = json_object_get(e, "type");
        if (type && !(json_is_string(type) && (!strcmp(json_string_value(type), "PUT") ||
                                               !strcmp(json_string_value(type), "DELETE"))))
            return "events[].type: not PUT or DELETE";
        a->events[i].deleted = type && !strcmp(json_string_value(type), "DELETE");
        const char *why = read_kv(json_object_get(e, "kv"), &a->events[i].kv);
        a->nevents++;
        if (why) return why;
    }
    return NULL;
}

static const char *read_flag(json_t *o, const char *key, int *v)
{
    json_t *j = json_object_get(o, key);
    if (j && !json_is_boolean(j)) return key;
    *v = json_is_true(j);
    return NULL;
}

static const char *read_body(json_t *o, pfi_etcd_answer *a)
{
    json_t *h = json_object_get(o, "header");
    const char *why = NULL;
    if (h && !json_is_object(h)) return "header: not an object";
    if (h && read_i64(h, "revision", &a->revision)) return "header.revision";
    if (h && read_i64(h, "raft_term", &a->raft_term)) return "header.raft_term";
    if (read_i64(o, "count", &a->count)) return "count";
    if (read_i64(o, "ID", &a->lease_id)) return "ID";
    if (read_i64(o, "TTL", &a->ttl_s)) return "TTL";
    if (read_i64(o, "watch_id", &a->watch_id)) return "watch_id";
    if (read_i64(o, "compact_revision", &a->compact_revision)) return "compact_revision";
    if ((why = read_flag(o, "more", &a->more)) ||
        (why = read_flag(o, "succeeded", &a->succeeded)) ||
        (why = read_flag(o, "created", &a->created)) ||
        (why = read_flag(o, "canceled", &a->canceled)))
        return why;
    if ((why = read_kvs(json_object_get(o, "kvs"), a))) return why;
    if (json_object_get(o, "responses") && (why = read_txn(json_object_get(o, "responses"), a)))
        return why;
    if (json_object_get(o, "leader") && (why = read_leader(json_object_get(o, "leader"), a)))
        return why;
    if (json_object_get(o, "events") && (why = read_events(json_object_get(o, "events"), a)))
        return why;
    json_t *tok = json_object_get(o, "token");
    if (tok && (!json_is_string(tok) || json_string_length(tok) >= sizeof a->token))
        return "token: not a string of at most 511 bytes";
    if (tok) memcpy(a->token, json_string_value(tok), json_string_length(tok) + 1);
    json_t *kv = json_object_get(o, "kv"); /* election/leader */
    if (kv) {
        json_t *arr = json_array();
        json_array_append(arr, kv);
        why = read_kvs(arr, a);
        json_decref(arr);
    }
    return why;
}

pfi_status pfi_etcd_parse(const char *body, size_t len, const char *name, pfi_etcd_answer *a,
                          pfi_error *err)
{
    memset(a, 0, sizeof *a);
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return pfi_errorf(err, PFI_EPARSE, "%s: not JSON: %s", name, je.text);
    const char *why = NULL;
    if (!json_is_object(root)) why = "not an object";
    else if (json_object_get(root, "error")) why = read_error(root, a);
    else {
        json_t *r = json_object_get(root, "result");
        if (r && !json_is_object(r)) why = "result: not an object";
        else why = read_body(r ? r : root, a);
    }
    json_decref(root);
    if (why) {
        pfi_etcd_answer_free(a);
        return pfi_errorf(err, PFI_EPARSE, "%s: field %s", name, why);
    }
    return PFI_OK;
}

void pfi_etcd_answer_free(pfi_etcd_answer *a)
{
    for (size_t i = 0; i < a->nkvs; i++) kv_free(&a->kvs[i]);
    for (size_t i = 0; i < a->nevents; i++) kv_free(&a->events[i].kv);
    free(a->kvs);
    free(a->events);
    free(a->leader_name);
    free(a->leader_key);
    memset(a, 0, sizeof *a);
}
