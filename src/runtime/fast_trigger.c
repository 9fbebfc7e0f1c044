/* fast_trigger.c — the fast trigger datagram (fast_trigger.h): its layout,
 * its MAC (HMAC-SHA256 from nettle, GnuTLS's own crypto library, already
 * linked for the HTTP server's TLS) and the freshness rule. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <nettle/hmac.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fast_trigger.h"
#include "httpd.h"

static const unsigned char MAGIC[4] = {'P', 'F', 'I', 'T'};

static void put_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8), p[1] = (unsigned char)v;
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int k = 7; k >= 0; k--, v >>= 8) p[k] = (unsigned char)v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) v = v << 8 | p[k];
    return v;
}

/* HMAC-SHA256(token, d[0..16) || body) */
static void mac(const char *token, const unsigned char *d, const unsigned char *body, size_t n,
                unsigned char out[SHA256_DIGEST_SIZE])
{
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, strlen(token), (const uint8_t *)token);
    hmac_sha256_update(&ctx, 16, d);
    hmac_sha256_update(&ctx, n, body);
    hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

size_t pfi_ft_encode(const pfi_ft_msg *m, const char *token, unsigned char *out)
{
    if (m->body_len > PFI_FT_MAX_BODY || !token) return 0;
    memcpy(out, MAGIC, 4);
    out[4] = 1;
    out[5] = (unsigned char)m->type;
    put_u16(out + 6, m->status);
    put_u64(out + 8, m->seq);
    memcpy(out + PFI_FT_HEADER_BYTES, m->body, m->body_len);
    mac(token, out, out + PFI_FT_HEADER_BYTES, m->body_len, out + 16);
    return PFI_FT_HEADER_BYTES + m->body_len;
}

pfi_status pfi_ft_decode(const unsigned char *d, size_t n, const char *token, pfi_ft_msg *m,
                         pfi_error *err)
{
    if (n < PFI_FT_HEADER_BYTES || n > PFI_FT_MAX_BYTES)
        return pfi_errorf(err, PFI_EINVAL, "datagram of %zu bytes (expected %d..%d)", n,
                          PFI_FT_HEADER_BYTES, PFI_FT_MAX_BYTES);
    if (memcmp(d, MAGIC, 4)) return pfi_errorf(err, PFI_EINVAL, "magic: not PFIT");
    if (d[4] != 1) return pfi_errorf(err, PFI_EINVAL, "version: %u (expected 1)", d[4]);
    if (d[5] != PFI_FT_REQUEST && d[5] != PFI_FT_VIEW && d[5] != PFI_FT_ANSWER)
        return pfi_errorf(err, PFI_EINVAL, "type: 0x%02x (expected 'C', 'V' or 'A')", d[5]);
    if (!token || !token[0]) return pfi_errorf(err, PFI_EINVAL, "mac: no key");
    unsigned char want[SHA256_DIGEST_SIZE], diff = 0;
    mac(token, d, d + PFI_FT_HEADER_BYTES, n - PFI_FT_HEADER_BYTES, want);
    for (int k = 0; k < SHA256_DIGEST_SIZE; k++) diff |= (unsigned char)(want[k] ^ d[16 + k]);
    if (diff) return pfi_errorf(err, PFI_EINVAL, "mac: does not match (another token?)");
    m->type = (pfi_ft_type)d[5];
    m->status = (unsigned)d[6] << 8 | d[7];
    m->seq = get_u64(d + 8);
    m->body = (const char *)d + PFI_FT_HEADER_BYTES;
    m->body_len = n - PFI_FT_HEADER_BYTES;
    return PFI_OK;
}

int pfi_ft_fresh(uint64_t seq, uint64_t last_seq, uint64_t now_us)
{
    uint64_t skew_us = (uint64_t)(PFI_FT_SKEW_S * 1e6);
    return seq > last_seq && seq <= now_us + skew_us && seq + skew_us >= now_us;
}

uint64_t pfi_ft_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

pfi_status pfi_ft_socket(const char *listen, int port, int buf_bytes, int *fd, int *port_out,
                         pfi_error *err)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (listen && pfi_listen_addr(listen, &sa, err)) return PFI_EINVAL; /* as the HTTP listeners */
    sa.sin_port = htons((uint16_t)port);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return pfi_errorf(err, PFI_EIO, "UDP socket: %s", strerror(errno));
    for (int k = 0; k < 2; k++) {
        int opt = k ? SO_SNDBUF : SO_RCVBUF, force = k ? SO_SNDBUFFORCE : SO_RCVBUFFORCE;
        if (setsockopt(s, SOL_SOCKET, force, &buf_bytes, sizeof buf_bytes))
            setsockopt(s, SOL_SOCKET, opt, &buf_bytes, sizeof buf_bytes); /* capped by the system */
    }
    if (bind(s, (struct sockaddr *)&sa, sizeof sa)) {
        pfi_status rc = pfi_errorf(err, PFI_EIO, "UDP port %d: %s", port, strerror(errno));
        close(s);
        return rc;
    }
    socklen_t len = sizeof sa;
    getsockname(s, (struct sockaddr *)&sa, &len);
    if (port_out) *port_out = ntohs(sa.sin_port);
    *fd = s;
    return PFI_OK;
}
