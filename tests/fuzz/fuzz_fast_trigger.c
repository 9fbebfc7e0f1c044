/* fuzz_fast_trigger.c — libFuzzer target: a fast trigger datagram as the
 * agent receives it (fast_trigger.h). Input: one byte choosing the key
 * (the fixed token, or the datagram re-signed with it so the MAC passes and
 * the body reaches the caps parser), then the datagram. Any input either
 * fails with a message or decodes to a body inside the datagram; a decoded
 * request's body then goes through the PUT /v1/caps parser, which must
 * answer too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caps_request.h"
#include "fast_trigger.h"

static const char *TOKEN = "fuzz-token-0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int resign = data[0] & 1;
    const unsigned char *d = data + 1;
    size_t n = size - 1;
    unsigned char buf[PFI_FT_MAX_BYTES];
    if (resign && n >= PFI_FT_HEADER_BYTES && n <= PFI_FT_MAX_BYTES) {
        /* the same header fields and body, with a valid MAC */
        pfi_ft_msg m = {(pfi_ft_type)d[5], (unsigned)d[6] << 8 | d[7], 0,
                        (const char *)d + PFI_FT_HEADER_BYTES, n - PFI_FT_HEADER_BYTES};
        for (int k = 8; k < 16; k++) m.seq = m.seq << 8 | d[k];
        size_t len = pfi_ft_encode(&m, TOKEN, buf);
        if (len != n) abort();
        buf[4] = d[4]; /* keep the version as given (it is under the MAC too: fails if not 1) */
        d = buf;
    }
    pfi_ft_msg m;
    pfi_error err;
    if (pfi_ft_decode(d, n, TOKEN, &m, &err) != PFI_OK) {
        if (!err.msg[0]) abort();
        return 0;
    }
    if (m.body != (const char *)d + PFI_FT_HEADER_BYTES || m.body_len + PFI_FT_HEADER_BYTES != n)
        abort();
    if (m.type != PFI_FT_REQUEST && m.type != PFI_FT_VIEW && m.type != PFI_FT_ANSWER) abort();
    (void)pfi_ft_fresh(m.seq, 0, pfi_ft_now_us());
    if (m.type == PFI_FT_REQUEST) {
        pfi_caps_request r;
        if (pfi_caps_request_parse(m.body, m.body_len, &r, &err) != PFI_OK && !err.msg[0]) abort();
    }
    return 0;
}
