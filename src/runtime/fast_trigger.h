/* fast_trigger.h — the fast trigger datagram: a controller's PUT /v1/caps
 * carried in one UDP datagram, for grid triggers that must reach thousands
 * of agents within a fraction of a second (docs/agent.md, "Fast trigger
 * datagrams"; docs/controller.md, "Triggers"). HTTP stays the reliable
 * path: a controller that gets no answer within its deadline sends the same
 * body as PUT /v1/caps.
 *
 * Layout (all integers big-endian):
 *
 *   0  "PFIT"   magic
 *   4  1        version
 *   5  type     'C' a caps request, 'V' a view request (controller -> agent),
 *               'A' the answer to either
 *   6  status   u16: 0 in a request; the HTTP status PUT would give in an answer
 *   8  seq      u64: microseconds since the Unix epoch when the controller
 *               sent it, strictly increasing per controller; an answer
 *               repeats its request's
 *   16 mac      HMAC-SHA256 keyed by the agent's control token over bytes
 *               0..15 and the body
 *   48 body     a caps request: the JSON of PUT /v1/caps (caps_request.h);
 *               its answer: {"ok":true}, or the start of PUT's error body;
 *               a view request: {"path": the request target of the GET it
 *               stands for}; its answer: GET /v1/control's JSON (status
 *               200), or 413 when that does not fit in one datagram
 *
 * at most PFI_FT_MAX_BYTES in all (one datagram fits a 1,500-byte MTU with
 * IPv6 and UDP headers). Authentication and freshness: the MAC, then an
 * agent takes a request only if its seq is above the last it took and
 * within PFI_FT_SKEW_S of its own wall clock (a captured datagram cannot be
 * replayed, and one held back is stale within seconds); a datagram that
 * fails either gets no answer (no reflection). Everything else is PUT's:
 * the generation and the lease rules (lease.h), the same parser. Only
 * the control token keys datagrams (pfi-agent: agent_fast.c says why). */
#ifndef PFI_FAST_TRIGGER_H
#define PFI_FAST_TRIGGER_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/status.h"

#define PFI_FT_MAX_BYTES 1400
#define PFI_FT_HEADER_BYTES 48
#define PFI_FT_MAX_BODY (PFI_FT_MAX_BYTES - PFI_FT_HEADER_BYTES)
#define PFI_FT_SKEW_S 5.0 /* an agent's wall clock against the seq */

typedef enum { PFI_FT_REQUEST = 'C', PFI_FT_VIEW = 'V', PFI_FT_ANSWER = 'A' } pfi_ft_type;

typedef struct pfi_ft_msg {
    pfi_ft_type type;
    unsigned status;  /* HTTP status in an answer, 0 in a request */
    uint64_t seq;     /* microseconds since the epoch */
    const char *body; /* points into the datagram (not NUL-terminated) */
    size_t body_len;
} pfi_ft_msg;

/* The datagram for m keyed by token into out (PFI_FT_MAX_BYTES): its length,
 * or 0 when the body does not fit. */
size_t pfi_ft_encode(const pfi_ft_msg *m, const char *token, unsigned char *out);

/* Check a received datagram against token: PFI_OK with *m (body pointing
 * into d), or PFI_EINVAL naming what is wrong (size, magic, version, type,
 * MAC). Checks nothing about freshness (pfi_ft_fresh). */
pfi_status pfi_ft_decode(const unsigned char *d, size_t n, const char *token, pfi_ft_msg *m,
                         pfi_error *err);

/* Whether a request's seq may be taken: above last_seq and within
 * PFI_FT_SKEW_S of now_us (the receiver's wall clock, microseconds). */
int pfi_ft_fresh(uint64_t seq, uint64_t last_seq, uint64_t now_us);

/* The wall clock in microseconds since the epoch (CLOCK_REALTIME). */
uint64_t pfi_ft_now_us(void);

/* A non-blocking UDP socket (close-on-exec) bound to listen's IPv4 address
 * ("ADDR:PORT", as the HTTP listeners take it) with port instead of
 * listen's (the TCP listener's bound port: the same number in UDP), with
 * receive and send buffers of at least buf_bytes where the system allows
 * (SO_RCVBUFFORCE when privileged). listen NULL: any address, port as given
 * (0: the kernel picks; *port_out says which). */
pfi_status pfi_ft_socket(const char *listen, int port, int buf_bytes, int *fd, int *port_out,
                         pfi_error *err);

#endif
