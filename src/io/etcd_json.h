/* etcd_json.h — the answers of etcd's v3 JSON gateway (the grpc-gateway of
 * etcd 3.4, 3.5 and 3.6 at /v3/...), read into one struct, for the
 * controller's failover store (issue 45; docs/controller.md, "Failover on
 * etcd"). The gateway's forms, as etcd 3.4.23 answers them (seen on
 * Debian 12's etcd-server; the wire forms of api/etcdserverpb/rpc.proto
 * and v3electionpb/v3election.proto under proto3's JSON mapping):
 *
 *   - 64-bit integers are JSON strings of digits ("revision":"42"); a plain
 *     number is accepted too (a proxy may re-encode them); fields left at
 *     their zero value are omitted (proto3);
 *   - keys and values are base64 (RFC 4648, standard alphabet, padded);
 *   - a unary error is {"error":"etcdserver: ...","message":...,"code":N}
 *     (the gRPC code: 8 RESOURCE_EXHAUSTED for NOSPACE, 9
 *     FAILED_PRECONDITION, 14 UNAVAILABLE, ...); a streamed one (watch,
 *     keepalive) is {"error":{"grpc_code":N,"http_code":H,"message":...}};
 *   - streamed answers wrap each message in {"result": {...}}.
 *
 * Strict: a field of the wrong type, a number that is not one, bad base64,
 * more than PFI_ETCD_MAX_KVS keys are errors naming the field. */
#ifndef PFI_ETCD_JSON_H
#define PFI_ETCD_JSON_H

#include <stddef.h>

#include "pfi/status.h"

#define PFI_ETCD_MAX_KVS 1000000
#define PFI_ETCD_MAX_VALUE (1536 * 1024) /* etcd's default request limit, 1.5 MiB */

typedef struct pfi_etcd_kv {
    char *key, *value; /* decoded, NUL-terminated (they may hold NULs: use the lengths) */
    size_t key_len, value_len;
    long long create_revision, mod_revision, version, lease;
} pfi_etcd_kv;

typedef struct pfi_etcd_watch_event {
    int deleted; /* 0 PUT, 1 DELETE */
    pfi_etcd_kv kv;
} pfi_etcd_watch_event;

typedef struct pfi_etcd_answer {
    long long revision, raft_term; /* header; 0 when absent */
    /* an error answer: code the gRPC code (0: none), message its text */
    int code;
    char message[256];
    /* range: kvs, count, more; txn: succeeded, and the kvs of every
       response_range in order; election/leader: its kv */
    pfi_etcd_kv *kvs;
    size_t nkvs;
    long long count;
    int more, succeeded;
    /* lease grant/keepalive/timetolive: ID and TTL (keepalive of an expired
       lease: TTL absent, 0) */
    long long lease_id, ttl_s;
    /* election/campaign: the leader key we hold */
    char *leader_name, *leader_key;
    size_t leader_name_len, leader_key_len;
    long long leader_rev, leader_lease;
    /* watch: one streamed message */
    long long watch_id, compact_revision;
    int created, canceled;
    pfi_etcd_watch_event *events;
    size_t nevents;
    /* auth/authenticate: the simple token, sent as "Authorization: TOKEN" */
    char token[512];
} pfi_etcd_answer;

/* One answer (a unary body or one message of a stream); name names it in
 * errors. A gateway error is not a parse error: *a holds code and message. */
pfi_status pfi_etcd_parse(const char *body, size_t len, const char *name, pfi_etcd_answer *a,
                          pfi_error *err);
void pfi_etcd_answer_free(pfi_etcd_answer *a);

/* base64 (RFC 4648 section 4, padded): *out malloc'd, NUL-terminated */
char *pfi_base64_encode(const void *data, size_t len);
/* 0, or -1 for anything but padded standard base64; *out malloc'd,
   NUL-terminated, *out_len without the NUL */
int pfi_base64_decode(const char *s, size_t len, char **out, size_t *out_len);

#endif
