/* fuzz_etcd_json.c — libFuzzer target: etcd's v3 gateway answers as the
 * failover store reads them (etcd_json.h). Parsed or refused, never a
 * crash; what is read is consistent: each key and value NUL-terminated at
 * its length, every decoded base64 re-encodes to a string that decodes to
 * the same bytes, and a refused answer leaves nothing allocated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_json.h"

static void check_bytes(const char *p, size_t n)
{
    if (!p || p[n] != 0) abort();
    char *e = pfi_base64_encode(p, n), *d;
    size_t dn;
    if (!e || pfi_base64_decode(e, strlen(e), &d, &dn) || dn != n || memcmp(d, p, n)) abort();
    free(e);
    free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_etcd_answer a;
    pfi_error err;
    if (pfi_etcd_parse((const char *)data, size, "fuzz", &a, &err) == PFI_OK) {
        for (size_t i = 0; i < a.nkvs; i++) {
            check_bytes(a.kvs[i].key, a.kvs[i].key_len);
            check_bytes(a.kvs[i].value, a.kvs[i].value_len);
        }
        for (size_t i = 0; i < a.nevents; i++)
            check_bytes(a.events[i].kv.key, a.events[i].kv.key_len);
        if (a.code < 0 || a.code >= 100 || strlen(a.message) >= sizeof a.message) abort();
        pfi_etcd_answer_free(&a);
    } else if (a.kvs || a.events || a.leader_key || a.nkvs) abort();
    return 0;
}
