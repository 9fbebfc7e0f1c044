/* ctl_pool.h — the controller's transfers to its agents, shared by the
 * three files that make them (issue 43: one file of 1,120 lines before):
 * ctl_agents.c the transport (curl multi on one epoll set, the queues,
 * the period's collection), ctl_agents_push.c the agent protocol's writes
 * (PUT /v1/caps, a trigger's caps, the answers), ctl_fast.c the datagrams
 * (fast_trigger.h). Only the control loop's thread uses the pool (the
 * wake eventfd excepted). */
#ifndef PFI_CTL_POOL_H
#define PFI_CTL_POOL_H

#include <curl/curl.h>
#include <stdint.h>

#include "buf.h"
#include "ctl.h"

#define XFER_MAX_BYTES ((64u << 20) - 1)

enum { X_GET, X_PUT, X_TRIGGER, X_KINDS };

typedef struct xfer {
    CURL *h;
    pfi_buf buf; /* the answer */
    struct curl_slist *hdr;
    char *body;
    int kind, queued, running, release, set_up; /* set_up: URL, headers, TLS set (once) */
    int cancel;    /* queued, no longer to be sent (a trigger came after its body was built) */
    char *sent;    /* X_PUT: the body the agent last accepted (unchanged caps are not sent again) */
    int full_node; /* X_GET: the agent has no GET /v1/control (404): read /v1/node */
    long code;     /* the answer's HTTP status (0: none) */
    int by_datagram;      /* X_GET: the answer came by datagram (a view) */
    int fast;             /* going by datagram (waiting to be sent or for its answer) */
    int fast_sent;        /* ... and sent: only then may an answer match (fast_seq) */
    size_t ft_pos;        /* its position in ft_list (an older entry there is dead) */
    uint64_t fast_seq;    /* the seq it was sent with */
    double fast_deadline; /* monotonic s: no answer by then, the same request by HTTP */
    size_t agent;
    CURLcode res;
    struct ctl_pool *pool; /* the pool it belongs to */
} xfer;

/* The agents in shards of SHARD_AGENTS, each with its own multi handle and so
 * its own connection cache: libcurl 7.88's curl_multi_remove_handle walks its
 * whole cache once per finished transfer (close_connect_only), which with one
 * cache of 5,000 connections is O(agents^2) per period and most of the
 * controller's CPU. */
#define SHARD_AGENTS 64
typedef struct shard {
    struct ctl_pool *pool;
    CURLM *m;
    double timer_at; /* monotonic s when curl wants its timeout; -1: none */
    int done;        /* a transfer may have ended: read its messages */
} shard;
/* the transfers waiting for a slot, in order (indexes into x: kind * n + agent);
 * a trigger's in a queue of their own, served first: they never wait behind a
 * period's 12,500 GETs */
typedef struct xqueue {
    size_t *q, head, n, cap;
} xqueue;
/* event-driven transfers: curl tells us its sockets (on_socket) and its
 * timer (on_timer); epoll says which are ready; curl_multi_socket_action
 * then works on those alone (curl_multi_perform looks at every transfer each
 * time, which grows as transfers x wake-ups). wake_fd: an eventfd that
 * ctl_agents_wake writes from any thread. */
#define WAKE_KEY UINT64_MAX       /* the eventfd's epoll key; sockets: shard << 32 | fd */
#define FAST_KEY (UINT64_MAX - 1) /* the fast trigger socket's */
/* fast trigger datagrams (fast_trigger.h): one UDP socket; a trigger's
 * agents in the order they are sent (send: the next to send; wait: the
 * oldest whose answer may still come, so deadlines expire in order); agent
 * i's datagram carries seq ft_base + i */
#define FT_BATCH 256 /* datagrams per sendmmsg / recvmmsg */

/* what the transport calls back (set by ctl_agents_open): a PUT that ended
 * by HTTP (put_done) or was answered by datagram or given up (put_result,
 * called by ctl_fast.c), a trigger to take (take_trigger), the datagrams'
 * turn in the loop (ft_send, ft_recv, ft_expire: ctl_fast.c) */
struct ctl_pool;
typedef struct ctl_pool_procs {
    void (*put_done)(ctl *c, struct xfer *x, double now);
    void (*put_result)(ctl *c, struct xfer *x, double now, int answered, long code, const char *why,
                       const char *body);
    void (*take_trigger)(ctl *c);
    double (*ft_send)(ctl *c);
    void (*ft_recv)(ctl *c);
    double (*ft_expire)(ctl *c);
} ctl_pool_procs;

/* the transfers to the agents, owned by the controller (c->io.pool; made by
 * ctl_agents_open, used by the control loop's thread; wake_fd by any) */
typedef struct ctl_pool {
    xfer *x[X_KINDS]; /* per kind, one per agent */
    shard *sh;
    size_t nsh, n;
    xqueue queue, trigger_queue;
    size_t inflight, pending[X_KINDS]; /* queued or running, per kind */
    int ep, wake_fd;
    int ft_fd;
    size_t *ft_list, ft_n, ft_send, ft_wait; /* a ring of X_KINDS x agents */
    size_t fast_pending[X_KINDS];            /* datagrams on their way, per kind */
    uint64_t ft_base, ft_next, *ft_last;     /* ft_last: per agent, the last seq sent */
    ctl_pool_procs procs;
} ctl_pool;

/* ctl_pool.c: the transport */
void ctl_pool_enqueue(xfer *x);
void ctl_pool_tls(CURL *h, const ctl_agent *a);
int ctl_pool_ensure(ctl *c, size_t n);
void ctl_pool_run_until(ctl *c, int kind);
/* between periods: sleep on the epoll set up to wait_s wall seconds, less
   when woken (the wake eventfd, a datagram, a socket) */
void ctl_pool_wait(ctl *c, double wait_s);

/* ctl_fast.c: the datagrams */
double ctl_fast_send(ctl *c);
void ctl_fast_recv(ctl *c);
double ctl_fast_expire(ctl *c);
int ctl_fast_view_usable(const ctl *c, size_t i);
int ctl_fast_usable(const ctl *c, int kind, size_t i, const char *body);
void ctl_fast_repos(ctl_pool *P, size_t at, size_t from);
void ctl_fast_add(xfer *x);
int ctl_fast_allowed(const ctl *c, const ctl_agent *a);
void ctl_fast_new_base(ctl_pool *P);
/* failover (ctl_store_etcd.c): the highest seq handed out, committed each
 * period; a new leader's seqs start above the stored one (floor), so one
 * whose clock is behind the old leader's is not dropped as a replay
 * (issue 45). Read on the loop's thread while the pool's may hand out
 * seqs: an atomic load; the floor is set at the takeover, before any push. */
uint64_t ctl_fast_seq_high(const ctl_pool *P);
void ctl_fast_seq_floor(ctl_pool *P, uint64_t seq);

/* ctl_agents_push.c: the writes */
void ctl_push_result(ctl *c, xfer *x, double now, int answered, long code, const char *why,
                     const char *body);
void ctl_push_take_trigger(ctl *c);
void ctl_push_done(ctl *c, xfer *x, double now);
size_t ctl_push_queue(ctl *c, int kind, int release);
/* failover: every agent's caps of the allocation as the store keeps them,
   {"AGENT": [["JOB", cap_w], ...], ...} (lock held; malloc'd; NULL out of
   memory), and a new leader's first push, before its first period: those
   caps, as the last leader committed them, under this controller's
   generations (lock not held): the number of agents sent to */
char *ctl_push_caps_json(ctl *c);
size_t ctl_push_committed(ctl *c, json_t *caps);

#endif
