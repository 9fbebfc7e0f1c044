/* etcd_check.c — drives pfi's etcd client (src/runtime/etcd.c) against a
 * real etcd for tests/cli/test_etcd.sh:
 *
 *   etcd_check ENDPOINTS PREFIX suite        every call's behaviour, checked
 *   etcd_check ENDPOINTS PREFIX get KEY      prints the value (3: no key)
 *   etcd_check ENDPOINTS PREFIX put KEY VAL  prints the revision
 *   etcd_check ENDPOINTS PREFIX fill         puts until NOSPACE (0: it came)
 *
 * ENDPOINTS: comma-separated URLs. Environment: EC_USER, EC_PASSWORD,
 * EC_CA, EC_CERT, EC_KEY, EC_TIMEOUT_S (default 2). Prints the
 * endpoint that answered on stderr ("endpoint URL"). Exit 0 ok, 1 a check
 * failed (the line says which), 2 usage, 3 no such key, 4 etcd refused
 * (its message on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd.h"

static int nchecks;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL line %d: %s: ", __LINE__, #c);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
        nchecks++;                                                                                 \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static pfi_etcd *open_with(const char *endpoints, const char *prefix)
{
    static char buf[4096];
    static const char *eps[PFI_ETCD_MAX_ENDPOINTS];
    snprintf(buf, sizeof buf, "%s", endpoints);
    size_t n = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t && n < PFI_ETCD_MAX_ENDPOINTS;
         t = strtok_r(NULL, ",", &save))
        eps[n++] = t;
    const char *to = getenv("EC_TIMEOUT_S");
    pfi_etcd_cfg cfg = {.endpoints = eps,
                        .nendpoints = n,
                        .prefix = prefix,
                        .timeout_s = to ? atof(to) : 2,
                        .ca_file = getenv("EC_CA"),
                        .cert_file = getenv("EC_CERT"),
                        .key_file = getenv("EC_KEY"),
                        .user = getenv("EC_USER"),
                        .password = getenv("EC_PASSWORD")};
    pfi_etcd *e;
    pfi_error err = {0};
    if (pfi_etcd_open(&cfg, &e, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(2);
    }
    return e;
}

static int value_is(const pfi_etcd_answer *a, size_t i, const char *v)
{
    return i < a->nkvs && a->kvs[i].value_len == strlen(v) &&
           !memcmp(a->kvs[i].value, v, strlen(v));
}

/* revisions, old revisions, prefixes and a compaction */
static void check_kv(pfi_etcd *e, pfi_etcd *other)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    CHECK(!pfi_etcd_put(e, "k", "v1", 2, 0, &a, &err), "%s", err.msg);
    long long r1 = a.revision;
    pfi_etcd_answer_free(&a);
    /* a value holding a NUL and every byte value survives */
    char bin[256];
    for (int i = 0; i < 256; i++) bin[i] = (char)i;
    CHECK(!pfi_etcd_put(e, "bin", bin, sizeof bin, 0, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_put(e, "k", "v2", 2, 0, &a, &err), "%s", err.msg);
    long long r2 = a.revision;
    pfi_etcd_answer_free(&a);
    CHECK(r2 > r1 && r1 > 0, "revisions %lld then %lld", r1, r2);
    CHECK(!pfi_etcd_get(e, "bin", &a, &err), "%s", err.msg);
    CHECK(a.nkvs == 1 && a.kvs[0].value_len == 256 && !memcmp(a.kvs[0].value, bin, 256),
          "binary value");
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_get(e, "k", &a, &err), "%s", err.msg);
    CHECK(value_is(&a, 0, "v2") && a.kvs[0].mod_revision == r2 && a.kvs[0].create_revision == r1 &&
              !strcmp(a.kvs[0].key, "k"),
          "get k: key relative to the prefix, its revisions");
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_range_prefix(e, "k", r1, &a, &err), "%s", err.msg);
    CHECK(value_is(&a, 0, "v1"), "range at revision %lld: the value then", r1);
    pfi_etcd_answer_free(&a);
    /* the other prefix sees none of these */
    CHECK(!pfi_etcd_range_prefix(other, "", 0, &a, &err), "%s", err.msg);
    CHECK(a.nkvs == 0, "another prefix sees %zu keys", a.nkvs);
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_put(other, "k", "x", 1, 0, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_range_prefix(e, "", 0, &a, &err), "%s", err.msg);
    CHECK(a.nkvs == 2 && value_is(&a, 1, "v2"), "our prefix: 2 keys, got %zu", a.nkvs);
    pfi_etcd_answer_free(&a);
    /* compacted: an old revision is refused with etcd's OUT_OF_RANGE (11) */
    char body[128];
    snprintf(body, sizeof body, "{\"revision\":\"%lld\",\"physical\":true}", r2);
    CHECK(!pfi_etcd_call(e, "/v3/kv/compaction", body, 0, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
    pfi_status st = pfi_etcd_range_prefix(e, "k", r1, &a, &err);
    CHECK(st == PFI_ESTATE && a.code == 11 && strstr(a.message, "compacted"),
          "range below the compaction: status %d code %d %s", st, a.code, a.message);
    pfi_etcd_answer_free(&a);
}

/* the election and the guarded term raise of docs/controller.md */
static long long raise_term(pfi_etcd *e, const pfi_etcd_answer *lead, int *succeeded)
{
    pfi_etcd_answer t, a;
    pfi_error err = {0};
    CHECK(!pfi_etcd_get(e, "term", &t, &err), "%s", err.msg);
    long long term = t.nkvs ? atoll(t.kvs[0].value) : 0, mod = t.nkvs ? t.kvs[0].mod_revision : 0;
    pfi_etcd_answer_free(&t);
    char key[512], v[32];
    snprintf(key, sizeof key, "%.*s", (int)lead->leader_key_len, lead->leader_key);
    /* the leader key is returned whole: compare it without our prefix */
    const char *rel = strstr(key, "election/");
    snprintf(v, sizeof v, "%lld", term + 1);
    pfi_etcd_cmp cmp[2] = {{rel, PFI_ETCD_CREATE, lead->leader_rev, NULL},
                           {"term", PFI_ETCD_MOD, mod, NULL}};
    pfi_etcd_op op = {PFI_ETCD_OP_PUT, "term", v, strlen(v), 0, 0};
    CHECK(!pfi_etcd_txn(e, cmp, 2, &op, 1, NULL, 0, &a, &err), "%s", err.msg);
    *succeeded = a.succeeded;
    pfi_etcd_answer_free(&a);
    return term + 1;
}

static void check_election(pfi_etcd *e1, pfi_etcd *e2)
{
    pfi_error err = {0};
    long long l1, l2, g;
    CHECK(!pfi_etcd_lease_grant(e1, 2, &l1, &g, &err) && g >= 2, "grant: %s", err.msg);
    CHECK(!pfi_etcd_lease_grant(e2, 2, &l2, &g, &err), "grant: %s", err.msg);
    pfi_etcd_answer c1, c2, a;
    CHECK(!pfi_etcd_campaign(e1, "election", l1, "ctl-1", 5, &c1, &err), "%s", err.msg);
    int ok;
    long long t1 = raise_term(e1, &c1, &ok);
    CHECK(ok, "the leader raises the term");
    CHECK(!pfi_etcd_leader(e2, "election", &a, &err) && value_is(&a, 0, "ctl-1"), "leader: %s",
          err.msg);
    pfi_etcd_answer_free(&a);
    /* the second does not win while the first leads (and keeps its lease) */
    double t0 = now_s();
    pfi_status st = pfi_etcd_campaign(e2, "election", l2, "ctl-2", 1.5, &c2, &err);
    CHECK(st == PFI_EIO && now_s() - t0 >= 1.4, "a campaign against a leader: status %d", st);
    pfi_etcd_answer_free(&c2);
    long long ttl;
    CHECK(!pfi_etcd_lease_keepalive(e1, l1, &ttl, &err) && ttl >= 2, "keepalive: %s", err.msg);
    CHECK(!pfi_etcd_lease_keepalive(e2, l2, &ttl, &err), "keepalive: %s", err.msg);
    CHECK(!pfi_etcd_resign(e1, &c1, &err), "resign: %s", err.msg);
    CHECK(!pfi_etcd_campaign(e2, "election", l2, "ctl-2", 5, &c2, &err), "%s", err.msg);
    long long t2 = raise_term(e2, &c2, &ok);
    CHECK(ok && t2 == t1 + 1, "the new leader raises the term by one: %lld -> %lld", t1, t2);
    /* the deposed leader's guarded write is refused */
    raise_term(e1, &c1, &ok);
    CHECK(!ok, "the deposed leader's guarded transaction succeeded");
    /* the leader's lease lapses without keepalives: no leader within the TTL's bound */
    double t_exp = now_s();
    for (;;) {
        st = pfi_etcd_leader(e1, "election", &a, &err);
        pfi_etcd_answer_free(&a);
        if (st == PFI_ENOTFOUND || now_s() - t_exp > 10) break;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    CHECK(st == PFI_ENOTFOUND, "the leader's lease expired: status %d", st);
    CHECK(!pfi_etcd_lease_keepalive(e2, l2, &ttl, &err) && ttl == 0, "a lapsed lease: ttl %lld",
          ttl);
    pfi_etcd_answer_free(&c1);
    pfi_etcd_answer_free(&c2);
    /* a revoked lease takes its keys at once */
    long long l3;
    CHECK(!pfi_etcd_lease_grant(e1, 30, &l3, &g, &err), "grant: %s", err.msg);
    CHECK(!pfi_etcd_put(e1, "leased", "x", 1, l3, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_lease_revoke(e1, l3, &err), "revoke: %s", err.msg);
    CHECK(!pfi_etcd_get(e1, "leased", &a, &err) && a.nkvs == 0, "a revoked lease's key stays");
    pfi_etcd_answer_free(&a);
    st = pfi_etcd_lease_revoke(e1, l1, &err);
    CHECK(st == PFI_ESTATE && strstr(err.msg, "lease not found"), "revoking a lapsed lease: %d",
          st);
}

static void check_txn(pfi_etcd *e)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    pfi_etcd_cmp absent = {"events/e1", PFI_ETCD_CREATE, 0, NULL};
    pfi_etcd_op put = {PFI_ETCD_OP_PUT, "events/e1", "{}", 2, 0, 0};
    pfi_etcd_op get = {PFI_ETCD_OP_RANGE, "events/", NULL, 0, 0, 1};
    CHECK(!pfi_etcd_txn(e, &absent, 1, &put, 1, &get, 1, &a, &err) && a.succeeded, "%s", err.msg);
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_txn(e, &absent, 1, &put, 1, &get, 1, &a, &err) && !a.succeeded && a.nkvs == 1 &&
              !strcmp(a.kvs[0].key, "events/e1"),
          "a second create-if-absent fails and reads what is there");
    pfi_etcd_answer_free(&a);
    pfi_etcd_op many[129];
    for (int i = 0; i < 129; i++) many[i] = put;
    CHECK(pfi_etcd_txn(e, NULL, 0, many, 129, NULL, 0, &a, &err) == PFI_ERANGE,
          "129 operations refused before sending");
    pfi_etcd_op del = {PFI_ETCD_OP_DELETE, "events/", NULL, 0, 0, 1};
    CHECK(!pfi_etcd_txn(e, NULL, 0, &del, 1, NULL, 0, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
}

/* pfi_etcd_follow: changes after a revision, a compacted watch resynced */
typedef struct seen {
    int changes, snapshots, deleted;
    size_t snapshot_keys;
} seen;
static int on_change(void *ud, const pfi_etcd_watch_event *ev)
{
    seen *s = ud;
    s->changes++;
    s->deleted += ev->deleted;
    return s->changes >= 3; /* stop once the three changes came */
}
static int on_snapshot(void *ud, const pfi_etcd_answer *a)
{
    seen *s = ud;
    s->snapshots++;
    s->snapshot_keys = a->nkvs;
    return 0;
}

static void check_watch(pfi_etcd *e)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    CHECK(!pfi_etcd_put(e, "w/a", "1", 1, 0, &a, &err), "%s", err.msg);
    long long r0 = a.revision;
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_put(e, "w/b", "2", 1, 0, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
    CHECK(!pfi_etcd_put(e, "other", "x", 1, 0, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
    pfi_etcd_op del = {PFI_ETCD_OP_DELETE, "w/a", NULL, 0, 0, 0};
    CHECK(!pfi_etcd_txn(e, NULL, 0, &del, 1, NULL, 0, &a, &err), "%s", err.msg);
    long long r_del = a.revision;
    pfi_etcd_answer_free(&a);
    /* from r0 - 1: the put of w/a, of w/b, the delete of w/a; not "other" */
    seen s = {0};
    long long rev = r0 - 1;
    double t0 = now_s();
    CHECK(!pfi_etcd_follow(e, "w/", &rev, 10, on_change, on_snapshot, &s, &err), "%s", err.msg);
    CHECK(s.changes == 3 && s.deleted == 1 && !s.snapshots && rev == r_del && now_s() - t0 < 5,
          "follow: %d changes (%d deletes), %d snapshots, revision %lld (want %lld)", s.changes,
          s.deleted, s.snapshots, rev, r_del);
    /* compacted past where the watcher was: it reads the prefix whole and goes on */
    char body[128];
    snprintf(body, sizeof body, "{\"revision\":\"%lld\"}", r_del);
    CHECK(!pfi_etcd_call(e, "/v3/kv/compaction", body, 0, &a, &err), "%s", err.msg);
    pfi_etcd_answer_free(&a);
    memset(&s, 0, sizeof s);
    rev = r0 - 1;
    CHECK(!pfi_etcd_follow(e, "w/", &rev, 1.5, on_change, on_snapshot, &s, &err), "%s", err.msg);
    CHECK(s.snapshots == 1 && s.snapshot_keys == 1 && rev >= r_del && !s.changes,
          "after a compaction: %d snapshots of %zu keys, revision %lld", s.snapshots,
          s.snapshot_keys, rev);
}

static int usage(void)
{
    fprintf(stderr, "usage: etcd_check ENDPOINTS PREFIX suite|get KEY|put KEY VALUE\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 4) return usage();
    pfi_etcd *e = open_with(argv[1], argv[2]);
    pfi_etcd_answer a;
    pfi_error err = {0};
    int rc = 0;
    if (!strcmp(argv[3], "suite")) {
        char other[256];
        /* a sibling prefix, not one under ours */
        snprintf(other, sizeof other, "%.*s-other/", (int)strcspn(argv[2] + 1, "/") + 1, argv[2]);
        pfi_etcd *e2 = open_with(argv[1], argv[2]), *eo = open_with(argv[1], other);
        pfi_etcd_op wipe = {PFI_ETCD_OP_DELETE, "", NULL, 0, 0, 1};
        CHECK(!pfi_etcd_txn(e, NULL, 0, &wipe, 1, NULL, 0, &a, &err), "%s", err.msg);
        pfi_etcd_answer_free(&a);
        CHECK(!pfi_etcd_txn(eo, NULL, 0, &wipe, 1, NULL, 0, &a, &err), "%s", err.msg);
        pfi_etcd_answer_free(&a);
        check_kv(e, eo);
        check_txn(e);
        check_election(e, e2);
        check_watch(e);
        pfi_etcd_close(e2);
        pfi_etcd_close(eo);
        printf("ok: %d checks\n", nchecks);
    } else if (!strcmp(argv[3], "get") && argc == 5) {
        if (pfi_etcd_get(e, argv[4], &a, &err)) rc = 4, fprintf(stderr, "%s\n", err.msg);
        else if (!a.nkvs) rc = 3;
        else printf("%s\n", a.kvs[0].value);
        pfi_etcd_answer_free(&a);
    } else if (!strcmp(argv[3], "put") && argc == 6) {
        if (pfi_etcd_put(e, argv[4], argv[5], strlen(argv[5]), 0, &a, &err))
            rc = 4, fprintf(stderr, "%s\n", err.msg);
        else printf("%lld\n", a.revision);
        pfi_etcd_answer_free(&a);
    } else if (!strcmp(argv[3], "fill")) {
        /* 100 kB values until etcd refuses: NOSPACE is the answer wanted */
        static char big[100000];
        memset(big, 'a', sizeof big);
        int i;
        pfi_status st = PFI_OK;
        for (i = 0; i < 1000 && !st; i++) {
            char key[32];
            snprintf(key, sizeof key, "fill%d", i);
            st = pfi_etcd_put(e, key, big, sizeof big, 0, &a, &err);
            if (st && pfi_etcd_nospace(&a)) printf("nospace after %d puts: %s\n", i, err.msg);
            else if (st) rc = 4, fprintf(stderr, "%s\n", err.msg);
            pfi_etcd_answer_free(&a);
        }
        if (!st) rc = 1, fprintf(stderr, "1000 puts and no NOSPACE\n");
    } else rc = usage();
    fprintf(stderr, "endpoint %s\n", pfi_etcd_endpoint(e));
    pfi_etcd_close(e);
    return rc;
}
