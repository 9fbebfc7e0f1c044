/* etcd.c — etcd's v3 API over its JSON gateway (etcd.h): requests built
 * with jansson, sent with libcurl (one easy handle, reused, under a
 * mutex), answers read by etcd_json.c. */
#include "etcd.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_client.h"
#include "etcd_internal.h"

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

pfi_status pfi_etcd_open(const pfi_etcd_cfg *cfg, pfi_etcd **out, pfi_error *err)
{
    *out = NULL;
    if (!cfg->nendpoints || cfg->nendpoints > PFI_ETCD_MAX_ENDPOINTS)
        return pfi_errorf(err, PFI_EINVAL, "etcd: 1..%d endpoints, not %zu", PFI_ETCD_MAX_ENDPOINTS,
                          cfg->nendpoints);
    if (!(cfg->timeout_s > 0 && cfg->timeout_s <= 600))
        return pfi_errorf(err, PFI_EINVAL, "etcd: timeout_s must be in (0, 600]");
    if (!cfg->user != !cfg->password)
        return pfi_errorf(err, PFI_EINVAL, "etcd: user and password go together");
    if (!cfg->cert_file != !cfg->key_file)
        return pfi_errorf(err, PFI_EINVAL, "etcd: cert_file and key_file go together");
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        const char *u = cfg->endpoints[i];
        if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
            return pfi_errorf(err, PFI_EINVAL, "etcd: endpoint %s: not http:// or https://", u);
        if (cfg->password && !pfi_url_secret_ok(u, 0))
            return pfi_errorf(err, PFI_EINVAL,
                              "etcd: endpoint %s: a password goes over https, or http to loopback",
                              u);
    }
    pfi_etcd *e = calloc(1, sizeof *e);
    if (!e) return pfi_errorf(err, PFI_ENOMEM, "etcd: out of memory");
    pthread_mutex_init(&e->mu, NULL);
    e->curl = curl_easy_init();
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        e->endpoints[i] = strdup(cfg->endpoints[i]);
        size_t k = e->endpoints[i] ? strlen(e->endpoints[i]) : 0;
        while (k && e->endpoints[i][k - 1] == '/') e->endpoints[i][--k] = 0;
    }
    e->n = cfg->nendpoints;
    e->prefix = strdup(cfg->prefix ? cfg->prefix : "");
    e->prefix_len = e->prefix ? strlen(e->prefix) : 0;
    e->timeout_s = cfg->timeout_s;
    e->ca_file = dup_or_null(cfg->ca_file);
    e->cert_file = dup_or_null(cfg->cert_file);
    e->key_file = dup_or_null(cfg->key_file);
    e->user = dup_or_null(cfg->user);
    e->password = dup_or_null(cfg->password);
    if (!e->curl || !e->prefix) {
        pfi_etcd_close(e);
        return pfi_errorf(err, PFI_ENOMEM, "etcd: out of memory");
    }
    *out = e;
    return PFI_OK;
}

void pfi_etcd_close(pfi_etcd *e)
{
    if (!e) return;
    if (e->curl) curl_easy_cleanup(e->curl);
    for (size_t i = 0; i < e->n; i++) free(e->endpoints[i]);
    free(e->prefix);
    free(e->ca_file);
    free(e->cert_file);
    free(e->key_file);
    free(e->user);
    if (e->password) memset(e->password, 0, strlen(e->password));
    free(e->password);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

const char *pfi_etcd_endpoint(const pfi_etcd *e)
{
    return e->endpoints[e->cur];
}

typedef struct body_buf {
    char *p;
    size_t n;
} body_buf;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    body_buf *b = ud;
    size_t k = size * nmemb;
    if (b->n + k > 4 * (size_t)PFI_ETCD_MAX_VALUE + 65536 * 16) return 0; /* absurd: abort */
    char *q = realloc(b->p, b->n + k + 1);
    if (!q) return 0;
    memcpy(q + b->n, ptr, k);
    b->p = q;
    b->n += k;
    q[b->n] = 0;
    return k;
}

/* one POST to one endpoint: 0 answered (any HTTP status), -1 no answer */
int pfi_etcd_post_with(pfi_etcd *e, size_t ep, const char *path, const char *body, double timeout_s,
                       size_t (*write_fn)(char *, size_t, size_t, void *), void *write_ud,
                       long *code, char *why, size_t nwhy)
{
    char url[1024], auth[600];
    snprintf(url, sizeof url, "%s%s", e->endpoints[ep], path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (e->token[0]) {
        snprintf(auth, sizeof auth, "Authorization: %s", e->token);
        h = curl_slist_append(h, auth);
    }
    CURL *c = e->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    /* at least 1 ms: curl takes 0 as no deadline at all */
    long ms = timeout_s * 1000 >= 1 ? (long)(timeout_s * 1000) : 1;
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_fn);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, write_ud);
    if (e->ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, e->ca_file);
    if (e->cert_file) curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert_file);
    if (e->key_file) curl_easy_setopt(c, CURLOPT_SSLKEY, e->key_file);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    *code = 0;
    if (rc != CURLE_OK) {
        snprintf(why, nwhy, "%s: %s", e->endpoints[ep], curl_easy_strerror(rc));
        return rc == CURLE_OPERATION_TIMEDOUT ? -2 : rc == CURLE_WRITE_ERROR ? -3 : -1;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    return 0;
}

static int post(pfi_etcd *e, size_t ep, const char *path, const char *body, double timeout_s,
                body_buf *b, long *code, char *why, size_t nwhy)
{
    return pfi_etcd_post_with(e, ep, path, body, timeout_s, on_data, b, code, why, nwhy);
}

void pfi_etcd_strip_prefix(const pfi_etcd *e, pfi_etcd_kv *kv)
{
    if (e->prefix_len && kv->key_len >= e->prefix_len &&
        !memcmp(kv->key, e->prefix, e->prefix_len)) {
        memmove(kv->key, kv->key + e->prefix_len, kv->key_len - e->prefix_len + 1);
        kv->key_len -= e->prefix_len;
    }
}

/* one call on one endpoint, answered: 0; no answer or UNAVAILABLE: -1 (try
   another), -2 when the deadline passed; otherwise the status */
static int call_one(pfi_etcd *e, size_t ep, const char *path, const char *body, double timeout_s,
                    pfi_etcd_answer *a, pfi_status *st, pfi_error *err)
{
    body_buf b = {0};
    long code;
    char why[512];
    int r = post(e, ep, path, body, timeout_s, &b, &code, why, sizeof why);
    if (r) {
        free(b.p);
        *st = pfi_errorf(err, PFI_EIO, "etcd: %s", why);
        return r;
    }
    char name[600];
    snprintf(name, sizeof name, "etcd %s%s (HTTP %ld)", e->endpoints[ep], path, code);
    *st = b.p ? pfi_etcd_parse(b.p, b.n, name, a, err)
              : pfi_errorf(err, PFI_EPARSE, "%s: an empty answer", name);
    free(b.p);
    if (*st) return code >= 500 ? -1 : 0;
    if (a->code || code < 200 || code > 299) {
        if (!a->code) a->code = 2;
        *st = pfi_errorf(err, PFI_ESTATE, "%s: %s (gRPC code %d)", name, a->message, a->code);
        return a->code == PFI_ETCD_GRPC_UNAVAILABLE ? -1 : 0;
    }
    for (size_t i = 0; i < a->nkvs; i++) pfi_etcd_strip_prefix(e, &a->kvs[i]);
    for (size_t i = 0; i < a->nevents; i++) pfi_etcd_strip_prefix(e, &a->events[i].kv);
    return 0;
}

static pfi_status authenticate(pfi_etcd *e, size_t ep, double timeout_s, pfi_error *err)
{
    json_t *j = json_pack("{ssss}", "name", e->user, "password", e->password);
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!body) return pfi_errorf(err, PFI_ENOMEM, "etcd: out of memory");
    pfi_etcd_answer a;
    pfi_status st;
    e->token[0] = 0;
    call_one(e, ep, "/v3/auth/authenticate", body, timeout_s, &a, &st, err);
    memset(body, 0, strlen(body));
    free(body);
    if (st) return st;
    /* the token becomes a header line: printable ASCII only */
    int ok = a.token[0] != 0;
    for (const char *p = a.token; *p; p++) ok &= *p > ' ' && *p < 127;
    if (ok) snprintf(e->token, sizeof e->token, "%s", a.token);
    pfi_etcd_answer_free(&a);
    return ok ? PFI_OK : pfi_errorf(err, PFI_EPARSE, "etcd: authenticate: no usable token");
}

/* long_poll: a deadline passing is the answer (a campaign not won), not a
   reason to try the next endpoint */
static pfi_status call(pfi_etcd *e, const char *path, const char *body, double timeout_s,
                       int long_poll, pfi_etcd_answer *a, pfi_error *err)
{
    if (timeout_s <= 0) timeout_s = e->timeout_s;
    memset(a, 0, sizeof *a);
    pfi_status st = PFI_EIO;
    pthread_mutex_lock(&e->mu);
    for (size_t k = 0; k < e->n; k++) {
        size_t ep = (e->cur + k) % e->n;
        if (e->user && !e->token[0] && (st = authenticate(e, ep, e->timeout_s, err))) {
            if (st == PFI_EIO) continue;
            break;
        }
        int r = call_one(e, ep, path, body, timeout_s, a, &st, err);
        if (!r && st == PFI_ESTATE && e->user && a->code == PFI_ETCD_GRPC_UNAUTHENTICATED) {
            pfi_etcd_answer_free(a); /* the token expired: once more with a new one */
            if (!(st = authenticate(e, ep, e->timeout_s, err)))
                r = call_one(e, ep, path, body, timeout_s, a, &st, err);
        }
        if (!r || (r == -2 && long_poll)) {
            e->cur = ep;
            break;
        }
        pfi_etcd_answer_free(a);
    }
    pthread_mutex_unlock(&e->mu);
    return st;
}

pfi_status pfi_etcd_call(pfi_etcd *e, const char *path, const char *body, double timeout_s,
                         pfi_etcd_answer *a, pfi_error *err)
{
    return call(e, path, body, timeout_s, 0, a, err);
}

/* the prefixed key, base64 */
char *pfi_etcd_key64(const pfi_etcd *e, const char *key)
{
    size_t k = strlen(key);
    char *full = malloc(e->prefix_len + k + 1);
    if (!full) return NULL;
    memcpy(full, e->prefix, e->prefix_len);
    memcpy(full + e->prefix_len, key, k + 1);
    char *b = pfi_base64_encode(full, e->prefix_len + k);
    free(full);
    return b;
}

/* range_end for every key starting with key: the key with its last byte
   below 0xff incremented (etcd's "prefix" rule, clientv3.GetPrefixRangeEnd) */
char *pfi_etcd_prefix_end64(const pfi_etcd *e, const char *key)
{
    size_t k = strlen(key), n = e->prefix_len + k;
    unsigned char *full = malloc(n + 1);
    if (!full) return NULL;
    memcpy(full, e->prefix, e->prefix_len);
    memcpy(full + e->prefix_len, key, k + 1);
    while (n && full[n - 1] == 0xff) n--;
    char *b;
    if (!n) b = pfi_base64_encode("", 1); /* "\0": every key */
    else {
        full[n - 1]++;
        b = pfi_base64_encode(full, n);
    }
    free(full);
    return b;
}

/* sets key (and range_end) in object o; -1 out of memory */
static int set_key(const pfi_etcd *e, json_t *o, const char *key, int prefix)
{
    char *k = pfi_etcd_key64(e, key), *end = prefix ? pfi_etcd_prefix_end64(e, key) : NULL;
    int rc = !k || (prefix && !end) ? -1 : 0;
    if (!rc) json_object_set_new(o, "key", json_string(k));
    if (!rc && prefix) json_object_set_new(o, "range_end", json_string(end));
    free(k);
    free(end);
    return rc;
}

static pfi_status send_json_poll(pfi_etcd *e, const char *path, json_t *j, double timeout_s,
                                 int long_poll, pfi_etcd_answer *a, pfi_error *err)
{
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    memset(a, 0, sizeof *a);
    if (!body) return pfi_errorf(err, PFI_ENOMEM, "etcd: out of memory");
    pfi_status st = call(e, path, body, timeout_s, long_poll, a, err);
    free(body);
    return st;
}

static pfi_status send_json(pfi_etcd *e, const char *path, json_t *j, double timeout_s,
                            pfi_etcd_answer *a, pfi_error *err)
{
    return send_json_poll(e, path, j, timeout_s, 0, a, err);
}

static json_t *i64(long long v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", v);
    return json_string(s);
}

pfi_status pfi_etcd_get(pfi_etcd *e, const char *key, pfi_etcd_answer *a, pfi_error *err)
{
    json_t *j = json_object();
    if (j && set_key(e, j, key, 0)) json_decref(j), j = NULL;
    return send_json(e, "/v3/kv/range", j, 0, a, err);
}

pfi_status pfi_etcd_range_prefix(pfi_etcd *e, const char *key_prefix, long long rev,
                                 pfi_etcd_answer *a, pfi_error *err)
{
    json_t *j = json_object();
    if (j && set_key(e, j, key_prefix, 1)) json_decref(j), j = NULL;
    if (j && rev > 0) json_object_set_new(j, "revision", i64(rev));
    return send_json(e, "/v3/kv/range", j, 0, a, err);
}

static json_t *value_json(const char *value, size_t len)
{
    char *v = pfi_base64_encode(value, len);
    json_t *s = v ? json_string(v) : NULL;
    free(v);
    return s;
}

pfi_status pfi_etcd_put(pfi_etcd *e, const char *key, const char *value, size_t len,
                        long long lease, pfi_etcd_answer *a, pfi_error *err)
{
    if (len > PFI_ETCD_MAX_VALUE)
        return pfi_errorf(err, PFI_ERANGE, "etcd: %s: a value of %zu bytes (at most %d)", key, len,
                          PFI_ETCD_MAX_VALUE);
    json_t *j = json_object();
    if (j && set_key(e, j, key, 0)) json_decref(j), j = NULL;
    if (j) json_object_set_new(j, "value", value_json(value, len));
    if (j && lease) json_object_set_new(j, "lease", i64(lease));
    return send_json(e, "/v3/kv/put", j, 0, a, err);
}

static json_t *cmp_json(const pfi_etcd *e, const pfi_etcd_cmp *c)
{
    static const char *const target[] = {"CREATE", "MOD", "VERSION", "VALUE"};
    static const char *const field[] = {"create_revision", "mod_revision", "version", "value"};
    json_t *o = json_object();
    if (!o || set_key(e, o, c->key, 0)) {
        json_decref(o);
        return NULL;
    }
    json_object_set_new(o, "result", json_string("EQUAL"));
    json_object_set_new(o, "target", json_string(target[c->target]));
    json_object_set_new(o, field[c->target],
                        c->target == PFI_ETCD_VALUE
                            ? value_json(c->value ? c->value : "", c->value ? strlen(c->value) : 0)
                            : i64(c->n));
    return o;
}

static json_t *op_json(const pfi_etcd *e, const pfi_etcd_op *op)
{
    static const char *const name[] = {"request_put", "request_delete_range", "request_range"};
    json_t *in = json_object(), *o = json_object();
    if (!in || !o || set_key(e, in, op->key, op->type != PFI_ETCD_OP_PUT && op->prefix)) {
        json_decref(in);
        json_decref(o);
        return NULL;
    }
    if (op->type == PFI_ETCD_OP_PUT) {
        json_object_set_new(in, "value", value_json(op->value ? op->value : "", op->len));
        if (op->lease) json_object_set_new(in, "lease", i64(op->lease));
    }
    json_object_set_new(o, name[op->type], in);
    return o;
}

pfi_status pfi_etcd_txn(pfi_etcd *e, const pfi_etcd_cmp *cmp, size_t ncmp, const pfi_etcd_op *ok,
                        size_t nok, const pfi_etcd_op *fail, size_t nfail, pfi_etcd_answer *a,
                        pfi_error *err)
{
    if (ncmp + nok + nfail > 128) /* etcd's --max-txn-ops default */
        return pfi_errorf(err, PFI_ERANGE, "etcd: a transaction of %zu operations (at most 128)",
                          ncmp + nok + nfail);
    json_t *j = json_object(), *c = json_array(), *s = json_array(), *f = json_array();
    int bad = !j || !c || !s || !f;
    for (size_t i = 0; !bad && i < ncmp; i++) bad = json_array_append_new(c, cmp_json(e, &cmp[i]));
    for (size_t i = 0; !bad && i < nok; i++) bad = json_array_append_new(s, op_json(e, &ok[i]));
    for (size_t i = 0; !bad && i < nfail; i++) bad = json_array_append_new(f, op_json(e, &fail[i]));
    if (bad) {
        json_decref(j);
        json_decref(c);
        json_decref(s);
        json_decref(f);
        return pfi_errorf(err, PFI_ENOMEM, "etcd: out of memory");
    }
    json_object_set_new(j, "compare", c);
    json_object_set_new(j, "success", s);
    json_object_set_new(j, "failure", f);
    return send_json(e, "/v3/kv/txn", j, 0, a, err);
}

pfi_status pfi_etcd_lease_grant(pfi_etcd *e, long long ttl_s, long long *id, long long *granted_s,
                                pfi_error *err)
{
    pfi_etcd_answer a;
    pfi_status st =
        send_json(e, "/v3/lease/grant", json_pack("{so}", "TTL", i64(ttl_s)), 0, &a, err);
    *id = a.lease_id;
    *granted_s = a.ttl_s;
    pfi_etcd_answer_free(&a);
    if (!st && *id == 0) st = pfi_errorf(err, PFI_EPARSE, "etcd: lease/grant: no ID");
    return st;
}

pfi_status pfi_etcd_lease_keepalive(pfi_etcd *e, long long id, long long *ttl_s, pfi_error *err)
{
    pfi_etcd_answer a;
    pfi_status st =
        send_json(e, "/v3/lease/keepalive", json_pack("{so}", "ID", i64(id)), 0, &a, err);
    *ttl_s = st ? 0 : a.ttl_s;
    pfi_etcd_answer_free(&a);
    return st;
}

pfi_status pfi_etcd_lease_revoke(pfi_etcd *e, long long id, pfi_error *err)
{
    pfi_etcd_answer a;
    pfi_status st = send_json(e, "/v3/lease/revoke", json_pack("{so}", "ID", i64(id)), 0, &a, err);
    pfi_etcd_answer_free(&a);
    return st;
}

pfi_status pfi_etcd_campaign(pfi_etcd *e, const char *name, long long lease, const char *value,
                             double timeout_s, pfi_etcd_answer *a, pfi_error *err)
{
    json_t *j = json_object();
    char *k = pfi_etcd_key64(e, name);
    if (j && k) {
        json_object_set_new(j, "name", json_string(k));
        json_object_set_new(j, "lease", i64(lease));
        json_object_set_new(j, "value", value_json(value, strlen(value)));
    } else json_decref(j), j = NULL;
    free(k);
    pfi_status st = send_json_poll(e, "/v3/election/campaign", j, timeout_s, 1, a, err);
    if (!st && !a->leader_key)
        st = pfi_errorf(err, PFI_EPARSE, "etcd: election/campaign: no leader key");
    return st;
}

pfi_status pfi_etcd_leader(pfi_etcd *e, const char *name, pfi_etcd_answer *a, pfi_error *err)
{
    json_t *j = json_object();
    char *k = pfi_etcd_key64(e, name);
    if (j && k) json_object_set_new(j, "name", json_string(k));
    else json_decref(j), j = NULL;
    free(k);
    pfi_status st = send_json(e, "/v3/election/leader", j, 0, a, err);
    /* etcd 3.4.23 answers HTTP 500 {"error":"election: no leader","code":2}
       (seen; v3election's ErrElectionNoLeader, sent as gRPC UNKNOWN) */
    if (st == PFI_ESTATE && strstr(a->message, "election: no leader")) st = PFI_ENOTFOUND;
    if (!st && !a->nkvs) st = PFI_ENOTFOUND;
    return st;
}

pfi_status pfi_etcd_resign(pfi_etcd *e, const pfi_etcd_answer *c, pfi_error *err)
{
    char *n = pfi_base64_encode(c->leader_name, c->leader_name_len);
    char *k = pfi_base64_encode(c->leader_key, c->leader_key_len);
    json_t *j = n && k ? json_pack("{s{ssssso so}}", "leader", "name", n, "key", k, "rev",
                                   i64(c->leader_rev), "lease", i64(c->leader_lease))
                       : NULL;
    free(n);
    free(k);
    pfi_etcd_answer a;
    pfi_status st = send_json(e, "/v3/election/resign", j, 0, &a, err);
    pfi_etcd_answer_free(&a);
    return st;
}

int pfi_etcd_nospace(const pfi_etcd_answer *a)
{
    return a->code == PFI_ETCD_GRPC_RESOURCE_EXHAUSTED ||
           strstr(a->message, "database space exceeded") != NULL;
}

pfi_status pfi_etcd_put_new(pfi_etcd *e, const char *key, const char *value, size_t len,
                            int *created, pfi_error *err)
{
    pfi_etcd_cmp absent = {key, PFI_ETCD_CREATE, 0, NULL};
    pfi_etcd_op put = {PFI_ETCD_OP_PUT, key, value, len, 0, 0};
    pfi_etcd_answer a;
    pfi_status st = pfi_etcd_txn(e, &absent, 1, &put, 1, NULL, 0, &a, err);
    if (st) return st;
    *created = a.succeeded;
    pfi_etcd_answer_free(&a);
    return PFI_OK;
}
