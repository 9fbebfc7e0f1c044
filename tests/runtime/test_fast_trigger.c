/* test_fast_trigger.c — the fast trigger datagram (fast_trigger.h): a
 * caps request, a view request and an answer round-trip; a change to any byte of the header or
 * the body, or another token, fails the MAC; sizes outside 48..1400 bytes,
 * another magic, version or type are refused with a message naming the
 * field; a body too long to fit is not encoded; freshness: above the last
 * seq taken and within 5 s of the receiver's clock; the socket binds the
 * port it is given in UDP. */
#include "../testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fast_trigger.h"

static const char *TOK = "test-token-0123456789abcdef";
static const char *BODY =
    "{\"lease_s\":60,\"controller\":\"c\",\"generation\":7,\"jobs\":[{\"job_id\":\"j\",\"cap_w\":"
    "400}]}";

static size_t make(unsigned char *d, pfi_ft_type type, unsigned status, uint64_t seq,
                   const char *body)
{
    pfi_ft_msg m = {type, status, seq, body, strlen(body)};
    return pfi_ft_encode(&m, TOK, d);
}

static void test_round_trip(void **state)
{
    (void)state;
    unsigned char d[PFI_FT_MAX_BYTES];
    size_t n = make(d, PFI_FT_REQUEST, 0, 1234567890123456ull, BODY);
    assert_int_equal(n, PFI_FT_HEADER_BYTES + strlen(BODY));
    assert_memory_equal(d,
                        "PFIT\x01"
                        "C",
                        6);
    pfi_ft_msg m;
    pfi_error e;
    assert_int_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_int_equal(m.type, PFI_FT_REQUEST);
    assert_int_equal(m.status, 0);
    assert_true(m.seq == 1234567890123456ull);
    assert_int_equal(m.body_len, strlen(BODY));
    assert_memory_equal(m.body, BODY, m.body_len);
    n = make(d, PFI_FT_ANSWER, 409, 42, "{\"error\":\"x\"}");
    assert_int_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_int_equal(m.type, PFI_FT_ANSWER);
    assert_int_equal(m.status, 409);
    assert_true(m.seq == 42);
    n = make(d, PFI_FT_VIEW, 0, 43, "{\"path\":\"/v1/control\"}");
    assert_int_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_int_equal(m.type, PFI_FT_VIEW);
    /* an empty body is a valid datagram (the caps parser then refuses it) */
    n = make(d, PFI_FT_REQUEST, 0, 1, "");
    assert_int_equal(n, PFI_FT_HEADER_BYTES);
    assert_int_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_int_equal(m.body_len, 0);
}

static void test_mac(void **state)
{
    (void)state;
    unsigned char d[PFI_FT_MAX_BYTES];
    size_t n = make(d, PFI_FT_REQUEST, 0, 99, BODY);
    pfi_ft_msg m;
    pfi_error e;
    /* every byte but magic, version and type (checked before the MAC) */
    for (size_t k = 6; k < n; k++) {
        d[k] ^= 0x01;
        assert_int_not_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
        assert_non_null(strstr(e.msg, "mac"));
        d[k] ^= 0x01;
    }
    assert_int_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_int_not_equal(pfi_ft_decode(d, n, "another-token-0123456789", &m, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "another token"));
    assert_int_not_equal(pfi_ft_decode(d, n, "", &m, &e), PFI_OK);
    /* a body cut short, or one byte added */
    assert_int_not_equal(pfi_ft_decode(d, n - 1, TOK, &m, &e), PFI_OK);
    d[n] = 'x';
    assert_int_not_equal(pfi_ft_decode(d, n + 1, TOK, &m, &e), PFI_OK);
}

static void test_refused(void **state)
{
    (void)state;
    unsigned char d[PFI_FT_MAX_BYTES + 8];
    size_t n = make(d, PFI_FT_REQUEST, 0, 5, BODY);
    pfi_ft_msg m;
    pfi_error e;
    assert_int_not_equal(pfi_ft_decode(d, PFI_FT_HEADER_BYTES - 1, TOK, &m, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "47 bytes"));
    assert_int_not_equal(pfi_ft_decode(d, PFI_FT_MAX_BYTES + 1, TOK, &m, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "1401 bytes"));
    d[0] = 'X';
    assert_int_not_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "magic"));
    d[0] = 'P', d[4] = 2;
    assert_int_not_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "version: 2"));
    d[4] = 1, d[5] = 'Z';
    assert_int_not_equal(pfi_ft_decode(d, n, TOK, &m, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "type"));
    /* too long to encode; the longest that fits */
    char big[PFI_FT_MAX_BODY + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(make(d, PFI_FT_REQUEST, 0, 1, big), 0);
    big[PFI_FT_MAX_BODY] = '\0';
    assert_int_equal(make(d, PFI_FT_REQUEST, 0, 1, big), PFI_FT_MAX_BYTES);
    assert_int_equal(pfi_ft_decode(d, PFI_FT_MAX_BYTES, TOK, &m, &e), PFI_OK);
}

static void test_fresh(void **state)
{
    (void)state;
    uint64_t now = 1796326922000000ull, s5 = 5000000ull;
    assert_true(pfi_ft_fresh(now, 0, now));
    assert_true(pfi_ft_fresh(now + 1, now, now));
    assert_false(pfi_ft_fresh(now, now, now));     /* the same seq again: a replay */
    assert_false(pfi_ft_fresh(now - 1, now, now)); /* older */
    assert_true(pfi_ft_fresh(now + s5, 0, now));
    assert_false(pfi_ft_fresh(now + s5 + 1, 0, now)); /* from more than 5 s ahead */
    assert_true(pfi_ft_fresh(now - s5, 0, now));
    assert_false(pfi_ft_fresh(now - s5 - 1, 0, now)); /* held back more than 5 s */
    assert_false(pfi_ft_fresh(1, 0, now));
    uint64_t t = pfi_ft_now_us();
    assert_true(t > 1700000000ull * 1000000ull); /* microseconds of the wall clock */
}

static void test_socket(void **state)
{
    (void)state;
    int a, b, pa, pb;
    pfi_error e;
    assert_int_equal(pfi_ft_socket("127.0.0.1:0", 0, 1 << 16, &a, &pa, &e), PFI_OK);
    assert_true(pa > 0);
    /* the same port again in UDP is taken */
    assert_int_not_equal(pfi_ft_socket("127.0.0.1:0", pa, 1 << 16, &b, &pb, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "UDP port"));
    assert_int_not_equal(pfi_ft_socket("localhost:0", 0, 1 << 16, &b, &pb, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "not an IPv4 address"));
    assert_int_not_equal(pfi_ft_socket("127.0.0.1", 0, 1 << 16, &b, &pb, &e), PFI_OK);
    assert_int_equal(pfi_ft_socket(NULL, 0, 1 << 16, &b, &pb, &e), PFI_OK);
    /* a datagram from b reaches a */
    unsigned char d[PFI_FT_MAX_BYTES], r[PFI_FT_MAX_BYTES + 1];
    size_t n = make(d, PFI_FT_REQUEST, 0, 77, BODY);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)pa)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(sendto(b, d, n, 0, (struct sockaddr *)&to, sizeof to), (ssize_t)n);
    ssize_t got = -1;
    for (int k = 0; k < 1000 && got < 0; k++) { /* non-blocking: poll for it, 1 s at most */
        got = recv(a, r, sizeof r, 0);
        if (got < 0) usleep(1000);
    }
    assert_int_equal(got, (ssize_t)n);
    pfi_ft_msg m;
    assert_int_equal(pfi_ft_decode(r, (size_t)got, TOK, &m, &e), PFI_OK);
    assert_true(m.seq == 77);
    close(a);
    close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_mac),
        cmocka_unit_test(test_refused),    cmocka_unit_test(test_fresh),
        cmocka_unit_test(test_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
