/* agent_fast.c — fast trigger datagrams (fast_trigger.h; docs/agent.md,
 * "Fast trigger datagrams"): a controller's PUT /v1/caps, or its read of
 * GET /v1/control, in one UDP datagram, on the control listener's address
 * and port number (UDP), on by default where a control token is configured
 * (--no-fast-trigger turns it off; without a token there is no key, so no
 * fast path). Every datagram, both ways, is keyed by the control token
 * alone: a read token's holder may read the node over HTTP but can neither
 * forge a controller's view nor spend the datagrams' seqs.
 *
 * One thread receives. A datagram whose MAC fails is dropped without an
 * answer and without the agent's lock (a flood of forged datagrams costs
 * the HTTP handlers nothing); one whose seq is not fresh (above the last
 * taken, within 5 s of this node's wall clock) likewise, without an answer.
 * Both are counted and logged at most once a minute. The last seq taken
 * starts at the agent's start time (a datagram captured before a restart
 * cannot be replayed after it) and every HTTP PUT /v1/caps raises it to
 * the agent's clock (agent_http.c): a datagram sent before a PUT, held back
 * or retried by the network, cannot undo it. A valid caps datagram goes
 * through agent_put_caps exactly as PUT /v1/caps (the same parser,
 * generation and lease rules, write-ahead state file), and its answer
 * ({"ok":true}, or PUT's error body, cut to fit) is sent back once the caps
 * are applied. A view request is answered with that view, or 413 when it
 * does not fit in one datagram (the controller then GETs it). */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "fast_trigger.h"

static pthread_mutex_t g_drop_mu = PTHREAD_MUTEX_INITIALIZER; /* log_dropped's state */

/* unauthenticated or stale traffic: counted; logged once a minute at most */
static void log_dropped(agent *a, const char *from, const char *why)
{
    pthread_mutex_lock(&g_drop_mu);
    double now = pfi_wall_monotonic();
    a->fast_dropped_unlogged++;
    if (a->fast_drop_logged_t == 0 || now - a->fast_drop_logged_t >= 60) {
        agent_log(a,
                  "warning: fast trigger datagram from %s dropped: %s (%llu dropped since the "
                  "last such line)",
                  from, why, a->fast_dropped_unlogged);
        a->fast_dropped_unlogged = 0;
        a->fast_drop_logged_t = now;
    }
    pthread_mutex_unlock(&g_drop_mu);
}

/* the answer to seq (the token does not change while the agent runs) */
static void answer(agent *a, const struct sockaddr_in *to, uint64_t seq, int code, const char *body)
{
    pfi_ft_msg ans = {PFI_FT_ANSWER, (unsigned)code, seq, body, strlen(body)};
    if (ans.body_len > PFI_FT_MAX_BODY) ans.body_len = PFI_FT_MAX_BODY; /* an error: logged there */
    unsigned char out[PFI_FT_MAX_BYTES];
    size_t len = pfi_ft_encode(&ans, a->token, out);
    if (len) sendto(a->fast_fd, out, len, 0, (const struct sockaddr *)to, sizeof *to);
}

static void take(agent *a, const unsigned char *d, size_t n, const struct sockaddr_in *from)
{
    char who[64];
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &from->sin_addr, ip, sizeof ip);
    snprintf(who, sizeof who, "%s:%u", ip, (unsigned)ntohs(from->sin_port));
    pfi_ft_msg m;
    pfi_error e;
    /* outside the lock: the token is read-only once the agent runs */
    int bad = pfi_ft_decode(d, n, a->token, &m, &e) != PFI_OK;
    if (bad || m.type == PFI_FT_ANSWER) {
        __atomic_fetch_add(&a->fast_bad, 1, __ATOMIC_RELAXED);
        log_dropped(a, who, bad ? e.msg : "type: an answer, not a request");
        return;
    }
    pthread_mutex_lock(&a->mu);
    uint64_t now_us = pfi_ft_now_us();
    if (!pfi_ft_fresh(m.seq, a->fast_last_seq, now_us)) {
        uint64_t last = a->fast_last_seq;
        pthread_mutex_unlock(&a->mu);
        __atomic_fetch_add(&a->fast_stale, 1, __ATOMIC_RELAXED);
        char why[160];
        if (m.seq <= last)
            snprintf(why, sizeof why,
                     "seq %llu is not above the last taken (a replay, or sent before a PUT)",
                     (unsigned long long)m.seq);
        else
            snprintf(why, sizeof why,
                     "seq %llu is %.1f s from this node's clock (more than 5 s: clocks apart?)",
                     (unsigned long long)m.seq, ((double)m.seq - (double)now_us) / 1e6);
        log_dropped(a, who, why);
        return;
    }
    a->fast_last_seq = m.seq;
    char *resp = NULL;
    if (m.type == PFI_FT_VIEW) { /* GET /v1/control: no log line (one every period) */
        resp = agent_render_control(a);
        a->fast_views++;
        pthread_mutex_unlock(&a->mu);
        int fits = resp && strlen(resp) <= PFI_FT_MAX_BODY;
        answer(a, from, m.seq,
               fits   ? 200
               : resp ? 413
                      : 500,
               fits   ? resp
               : resp ? "{\"error\":\"the view does not fit in a datagram\"}"
                      : "{\"error\":\"out of memory\"}");
        free(resp);
        return;
    }
    int code = agent_put_caps(a, m.body, m.body_len, &resp);
    if (code == 200) a->fast_taken++;
    else a->fast_refused++;
    agent_log(a, "debug: fast trigger datagram from %s: %d%s%.200s", who, code,
              code == 200 ? "" : " ", code == 200 || !resp ? "" : resp);
    pthread_mutex_unlock(&a->mu);
    answer(a, from, m.seq, code,
           code == 200 ? "{\"ok\":true}"
           : resp      ? resp
                       : "{\"error\":\"out of memory\"}");
    free(resp);
}

static void *fast_thread(void *arg)
{
    agent *a = arg;
    unsigned char d[PFI_FT_MAX_BYTES + 1]; /* one more: a longer datagram is seen as one */
    while (!atomic_load(&a->fast_stop)) {
        struct pollfd p = {.fd = a->fast_fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        /* at most 64 at a time, then the stop flag again: a flood cannot hold up a stop
           (whose restore of the caps waits for this thread) */
        for (int k = 0; k < 64 && !atomic_load(&a->fast_stop); k++) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            ssize_t n = recvfrom(a->fast_fd, d, sizeof d, 0, (struct sockaddr *)&from, &fl);
            if (n < 0) break;
            if (fl != sizeof from || from.sin_family != AF_INET) continue;
            take(a, d, (size_t)n, &from);
        }
    }
    return NULL;
}

int agent_fast_start(agent *a)
{
    a->fast_fd = -1;
    if (a->cfg.no_fast_trigger || !a->have_token || a->cfg.read_only || a->cfg.tls_client_ca) {
        if (a->cfg.read_only && !a->cfg.no_fast_trigger)
            agent_log(a, "fast trigger datagrams: off (--read-only)");
        else if (a->cfg.tls_client_ca && !a->cfg.no_fast_trigger)
            /* a datagram is keyed by the bearer token alone: it would let a
               peer without a client certificate set caps (and read views in
               cleartext). Off until the fast path has keys of its own; the
               controller, seeing no fast_trigger_port, uses HTTPS alone. */
            agent_log(a, "fast trigger datagrams: off: --tls-client-ca requires a client "
                         "certificate, which a datagram cannot carry; caps go over HTTPS only");
        else if (!a->cfg.no_fast_trigger)
            agent_log(a, "fast trigger datagrams: off (no --token-file: no key)");
        return 0;
    }
    const char *listen = a->cfg.control_listen ? a->cfg.control_listen : a->cfg.listen;
    int port = a->cfg.control_listen ? a->control_port : a->port;
    pfi_error e;
    if (pfi_ft_socket(listen ? listen : "127.0.0.1:0", port, 1 << 20, &a->fast_fd, &a->fast_port,
                      &e)) {
        /* the controller then uses HTTP alone (it learns the port from GET /v1/control) */
        agent_log(a, "warning: fast trigger datagrams: off: %s", e.msg);
        a->fast_fd = -1;
        return 0;
    }
    /* nothing sent before this start is taken (a replay across a restart) */
    pthread_mutex_lock(&a->mu);
    a->fast_last_seq = pfi_ft_now_us();
    pthread_mutex_unlock(&a->mu);
    atomic_store(&a->fast_stop, 0);
    if (pthread_create(&a->fast_tid, NULL, fast_thread, a)) {
        agent_log(a, "error: cannot start the fast trigger thread");
        close(a->fast_fd);
        a->fast_fd = -1;
        return -1;
    }
    agent_log(a, "fast trigger datagrams on udp port %d", a->fast_port);
    return 0;
}

void agent_fast_stop(agent *a)
{
    if (a->fast_fd < 0) return;
    atomic_store(&a->fast_stop, 1);
    pthread_join(a->fast_tid, NULL);
    close(a->fast_fd);
    a->fast_fd = -1;
}
