/* test_etcd_json.c — etcd's v3 gateway answers read (src/io/etcd_json.c).
 * The answers are etcd 3.4.23's own (Debian 12's etcd-server, captured with
 * curl against a member on loopback), the errors as it sends them. */
#include "../testutil.h"

#include <stdlib.h>
#include <string.h>

#include "etcd_json.h"

static void parse_ok(const char *body, pfi_etcd_answer *a)
{
    pfi_error err = {0};
    assert_int_equal(pfi_etcd_parse(body, strlen(body), "t", a, &err), PFI_OK);
}

static void parse_bad(const char *body, const char *field)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    assert_int_equal(pfi_etcd_parse(body, strlen(body), "t", &a, &err), PFI_EPARSE);
    assert_non_null(strstr(err.msg, field));
    assert_null(a.kvs); /* nothing left allocated */
}

static void range(void **state)
{
    (void)state;
    pfi_etcd_answer a;
    parse_ok(
        "{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":"
        "\"13668033151171901709\",\"revision\":\"2\",\"raft_term\":\"2\"},\"kvs\":[{\"key\":"
        "\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":\"2\",\"version\":\"1\",\"value\":"
        "\"YmFy\"}],\"count\":\"1\"}",
        &a);
    assert_int_equal(a.revision, 2);
    assert_int_equal(a.raft_term, 2);
    assert_int_equal(a.nkvs, 1);
    assert_string_equal(a.kvs[0].key, "foo");
    assert_string_equal(a.kvs[0].value, "bar");
    assert_int_equal(a.kvs[0].create_revision, 2);
    assert_int_equal(a.kvs[0].version, 1);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.code, 0);
    pfi_etcd_answer_free(&a);
}

static void txn_lease_election(void **state)
{
    (void)state;
    pfi_etcd_answer a;
    parse_ok("{\"header\":{\"revision\":\"4\",\"raft_term\":\"2\"},\"succeeded\":true,"
             "\"responses\":[{\"response_put\":{\"header\":{\"revision\":\"4\"}}},"
             "{\"response_range\":{\"header\":{},\"kvs\":[{\"key\":\"YQ==\",\"value\":\"\"}]}}]}",
             &a);
    assert_true(a.succeeded);
    assert_int_equal(a.nkvs, 1);
    assert_string_equal(a.kvs[0].key, "a");
    assert_int_equal(a.kvs[0].value_len, 0);
    pfi_etcd_answer_free(&a);
    parse_ok("{\"header\":{\"revision\":\"2\"},\"ID\":\"4111120505848236294\",\"TTL\":\"2\"}", &a);
    assert_int_equal(a.lease_id, 4111120505848236294LL);
    assert_int_equal(a.ttl_s, 2);
    pfi_etcd_answer_free(&a);
    /* keepalive (streamed: wrapped in result); an expired lease has no TTL */
    parse_ok("{\"result\":{\"header\":{\"revision\":\"4\"},\"ID\":\"4111120505848236298\"}}", &a);
    assert_int_equal(a.ttl_s, 0);
    assert_int_equal(a.lease_id, 4111120505848236298LL);
    pfi_etcd_answer_free(&a);
    parse_ok("{\"header\":{\"revision\":\"3\"},\"leader\":{\"name\":\"cGZpL2xlYWRlcg==\",\"key\":"
             "\"cGZpL2xlYWRlci8zOTBkYTI1MTgzZTg4OTBh\",\"rev\":\"3\",\"lease\":"
             "\"4111120505848236298\"}}",
             &a);
    assert_string_equal(a.leader_name, "pfi/leader");
    assert_string_equal(a.leader_key, "pfi/leader/390da25183e8890a");
    assert_int_equal(a.leader_rev, 3);
    pfi_etcd_answer_free(&a);
    parse_ok("{\"header\":{},\"kv\":{\"key\":\"cGZpL2xlYWRlci8zOTBkYTI1MTgzZTg4OTBh\","
             "\"create_revision\":\"3\",\"value\":\"Y3RsQQ==\",\"lease\":\"4111120505848236298\"}}",
             &a);
    assert_int_equal(a.nkvs, 1);
    assert_string_equal(a.kvs[0].value, "ctlA");
    pfi_etcd_answer_free(&a);
}

static void errors(void **state)
{
    (void)state;
    pfi_etcd_answer a;
    parse_ok("{\"error\":\"etcdserver: mvcc: database space exceeded\",\"message\":\"etcdserver: "
             "mvcc: database space exceeded\",\"code\":8}",
             &a);
    assert_int_equal(a.code, 8);
    assert_non_null(strstr(a.message, "space exceeded"));
    pfi_etcd_answer_free(&a);
    parse_ok("{\"error\":\"election: no leader\",\"message\":\"election: no leader\",\"code\":2}",
             &a);
    assert_int_equal(a.code, 2);
    pfi_etcd_answer_free(&a);
    /* a streamed error */
    parse_ok("{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no leader\","
             "\"http_status\":\"Service Unavailable\"}}",
             &a);
    assert_int_equal(a.code, 14);
    assert_string_equal(a.message, "etcdserver: no leader");
    pfi_etcd_answer_free(&a);
}

static void watch_events(void **state)
{
    (void)state;
    pfi_etcd_answer a;
    parse_ok("{\"result\":{\"header\":{\"revision\":\"9\"},\"watch_id\":\"1\",\"events\":[{\"kv\":"
             "{\"key\":\"YQ==\",\"value\":\"Yg==\",\"mod_revision\":\"9\"}},{\"type\":\"DELETE\","
             "\"kv\":{\"key\":\"Yw==\",\"mod_revision\":\"9\"}}]}}",
             &a);
    assert_int_equal(a.nevents, 2);
    assert_false(a.events[0].deleted);
    assert_true(a.events[1].deleted);
    assert_string_equal(a.events[1].kv.key, "c");
    pfi_etcd_answer_free(&a);
    parse_ok("{\"result\":{\"header\":{},\"canceled\":true,\"compact_revision\":\"7\"}}", &a);
    assert_true(a.canceled);
    assert_int_equal(a.compact_revision, 7);
    pfi_etcd_answer_free(&a);
}

static void malformed(void **state)
{
    (void)state;
    parse_bad("{\"kvs\":[{\"key\":\"Zm9\"}]}", "kv.key"); /* not a multiple of 4 */
    parse_bad("{\"kvs\":[{\"key\":\"Zm9v\",\"value\":\"Y*==\"}]}", "kv.value");
    parse_bad("{\"kvs\":[{\"key\":\"Zh==\"}]}", "kv.key"); /* pad bits set */
    parse_bad("{\"header\":{\"revision\":\"12a\"}}", "header.revision");
    parse_bad("{\"header\":{\"revision\":\"99999999999999999999\"}}", "header.revision");
    parse_bad("{\"header\":{\"revision\":1.5}}", "header.revision");
    parse_bad("{\"succeeded\":\"yes\"}", "succeeded");
    parse_bad("{\"kvs\":{}}", "kvs");
    parse_bad("{\"events\":[{\"type\":\"MOVE\",\"kv\":{}}]}", "events[].type");
    parse_bad("[1]", "not an object");
    parse_bad("{\"a\":1,\"a\":2}", "not JSON");
    parse_bad("{\"token\":\"" /* 600 bytes */
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaa\"}",
              "token");
}

static void base64_roundtrip(void **state)
{
    (void)state;
    unsigned char all[256];
    for (int i = 0; i < 256; i++) all[i] = (unsigned char)i;
    for (size_t n = 0; n <= sizeof all; n += 1) {
        char *e = pfi_base64_encode(all, n), *d;
        size_t dn;
        assert_int_equal(strlen(e), (n + 2) / 3 * 4);
        assert_int_equal(pfi_base64_decode(e, strlen(e), &d, &dn), 0);
        assert_int_equal(dn, n);
        assert_memory_equal(d, all, n);
        free(e);
        free(d);
    }
    char *e = pfi_base64_encode("foobar", 6);
    assert_string_equal(e, "Zm9vYmFy"); /* RFC 4648 section 10 */
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(range),     cmocka_unit_test(txn_lease_election),
        cmocka_unit_test(errors),    cmocka_unit_test(watch_events),
        cmocka_unit_test(malformed), cmocka_unit_test(base64_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
