/* etcd.h — a client of etcd's v3 API through its JSON gateway (etcd 3.4's
 * /v3/... paths, which 3.5 and 3.6 serve too), with libcurl and jansson:
 * no maintained C client of the v3 gRPC API exists and gRPC is heavy
 * (issue 45; docs/controller.md, "Failover on etcd").
 *
 *   - every call has a deadline (timeout_s) and rotates over the configured
 *     endpoints: a transport failure, a timeout or an UNAVAILABLE answer
 *     tries the next endpoint, each at most once a call; the endpoint that
 *     answered is tried first next time;
 *   - reads are linearizable (etcd's default: serializable is never set);
 *   - every key is under the configured prefix (etcd is often shared, with
 *     Kubernetes among others); keys given to and returned by these calls
 *     are relative to it;
 *   - TLS: ca_file, cert_file + key_file (etcd's --client-cert-auth);
 *     authentication: user + password (POST /v3/auth/authenticate, the
 *     token sent as "Authorization: TOKEN", fetched again once when etcd
 *     answers that it is invalid); a password goes over plain http only to
 *     loopback (pfi_url_secret_ok, as every secret pfi sends);
 *   - one call at a time per handle (a mutex): a blocking campaign and the
 *     keepalives of the lease it holds need a handle each.
 *
 * An answer etcd refused is PFI_ESTATE with etcd's message, and *a holds
 * the gRPC code (pfi_etcd_nospace: the space quota is reached). */
#ifndef PFI_ETCD_H
#define PFI_ETCD_H

#include <stddef.h>

#include "etcd_json.h"
#include "pfi/status.h"

#define PFI_ETCD_MAX_ENDPOINTS 16
#define PFI_ETCD_GRPC_UNAVAILABLE 14
#define PFI_ETCD_GRPC_RESOURCE_EXHAUSTED 8 /* NOSPACE: the space quota is reached */
#define PFI_ETCD_GRPC_UNAUTHENTICATED 16

typedef struct pfi_etcd_cfg {
    const char *const *endpoints; /* "http(s)://host:port", 1..PFI_ETCD_MAX_ENDPOINTS */
    size_t nendpoints;
    const char *prefix;    /* e.g. "/pfi/site-a/" ("" or NULL: none) */
    double timeout_s;      /* one request's deadline on one endpoint */
    const char *ca_file;   /* NULL: the system's */
    const char *cert_file; /* client certificate + key, or NULL */
    const char *key_file;
    const char *user; /* NULL: no authentication */
    const char *password;
} pfi_etcd_cfg;

typedef struct pfi_etcd pfi_etcd;

pfi_status pfi_etcd_open(const pfi_etcd_cfg *cfg, pfi_etcd **e, pfi_error *err);
void pfi_etcd_close(pfi_etcd *e);
/* the endpoint the last call was answered by */
const char *pfi_etcd_endpoint(const pfi_etcd *e);

/* one request: path "/v3/...", body JSON (keys already prefixed and
   base64), its answer parsed into *a (the caller frees it); timeout_s 0:
   the handle's */
pfi_status pfi_etcd_call(pfi_etcd *e, const char *path, const char *body, double timeout_s,
                         pfi_etcd_answer *a, pfi_error *err);

/* The key value API. A key is a string relative to the prefix. */
pfi_status pfi_etcd_get(pfi_etcd *e, const char *key, pfi_etcd_answer *a, pfi_error *err);
/* every key starting with key_prefix, at revision rev (0: the latest) */
pfi_status pfi_etcd_range_prefix(pfi_etcd *e, const char *key_prefix, long long rev,
                                 pfi_etcd_answer *a, pfi_error *err);
pfi_status pfi_etcd_put(pfi_etcd *e, const char *key, const char *value, size_t len,
                        long long lease, pfi_etcd_answer *a, pfi_error *err);

typedef enum { PFI_ETCD_CREATE, PFI_ETCD_MOD, PFI_ETCD_VERSION, PFI_ETCD_VALUE } pfi_etcd_target;
typedef struct pfi_etcd_cmp {
    const char *key;
    pfi_etcd_target target;
    long long n;       /* CREATE, MOD, VERSION: must EQUAL n (0: the key does not exist) */
    const char *value; /* VALUE: must EQUAL value */
} pfi_etcd_cmp;
typedef enum { PFI_ETCD_OP_PUT, PFI_ETCD_OP_DELETE, PFI_ETCD_OP_RANGE } pfi_etcd_optype;
typedef struct pfi_etcd_op {
    pfi_etcd_optype type;
    const char *key;
    const char *value; /* PUT */
    size_t len;
    long long lease; /* PUT: 0 none */
    int prefix;      /* DELETE, RANGE: every key starting with key */
} pfi_etcd_op;
/* a transaction: if every compare holds, the ok operations, else the
   others; a->succeeded says which; the ranges' kvs in a->kvs. etcd holds at
   most 128 operations a transaction (--max-txn-ops). */
pfi_status pfi_etcd_txn(pfi_etcd *e, const pfi_etcd_cmp *cmp, size_t ncmp, const pfi_etcd_op *ok,
                        size_t nok, const pfi_etcd_op *fail, size_t nfail, pfi_etcd_answer *a,
                        pfi_error *err);
/* key = value only where key does not exist (a transaction on its
   create_revision == 0): *created 1 when written, 0 when it was there */
pfi_status pfi_etcd_put_new(pfi_etcd *e, const char *key, const char *value, size_t len,
                            int *created, pfi_error *err);

/* Leases: granted TTL in *ttl_s (etcd may grant more than asked: 2 s for 1
   with its default ticks); keepalive: *ttl_s 0 when the lease is gone */
pfi_status pfi_etcd_lease_grant(pfi_etcd *e, long long ttl_s, long long *id, long long *granted_s,
                                pfi_error *err);
pfi_status pfi_etcd_lease_keepalive(pfi_etcd *e, long long id, long long *ttl_s, pfi_error *err);
pfi_status pfi_etcd_lease_revoke(pfi_etcd *e, long long id, pfi_error *err);

/* Elections (v3election): campaign blocks until this lease leads name or
   timeout_s passes (PFI_EIO); *a holds leader_key and leader_rev. leader:
   the current leader's kv in a->kvs[0] (none: PFI_ENOTFOUND). resign gives
   up the leadership a campaign returned. */
pfi_status pfi_etcd_campaign(pfi_etcd *e, const char *name, long long lease, const char *value,
                             double timeout_s, pfi_etcd_answer *a, pfi_error *err);
pfi_status pfi_etcd_leader(pfi_etcd *e, const char *name, pfi_etcd_answer *a, pfi_error *err);
pfi_status pfi_etcd_resign(pfi_etcd *e, const pfi_etcd_answer *campaign, pfi_error *err);

int pfi_etcd_nospace(const pfi_etcd_answer *a);

/* Watching a prefix: follow calls cb with every change to keys starting
   with key_prefix after revision *rev, for up to wait_s seconds (one
   streamed POST /v3/watch from *rev + 1, with progress_notify), and moves
   *rev to the last revision seen. When etcd has compacted past *rev + 1
   (the watch is cancelled with compact_revision), or *rev is 0, it reads
   the whole prefix at the current revision R instead, calls snapshot with
   it, and watches on from R + 1: a watcher never misses a change, whether
   its watch was compacted away or stalled. cb and snapshot return 0 to go
   on. PFI_OK when wait_s passed or a callback stopped it. */
typedef int (*pfi_etcd_change_fn)(void *ud, const pfi_etcd_watch_event *ev);
typedef int (*pfi_etcd_snapshot_fn)(void *ud, const pfi_etcd_answer *range);
pfi_status pfi_etcd_follow(pfi_etcd *e, const char *key_prefix, long long *rev, double wait_s,
                           pfi_etcd_change_fn cb, pfi_etcd_snapshot_fn snapshot, void *ud,
                           pfi_error *err);

#endif
