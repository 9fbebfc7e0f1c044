/* ctl_fast.c — the controller's datagrams to its agents (fast_trigger.h;
 * docs/controller.md, "Triggers: the fast path"): a trigger's caps and a
 * period's views by UDP where an agent offers it, HMAC-authenticated, with
 * the same request by HTTP when no answer comes by its deadline. Part of
 * the transfers (ctl_pool.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "caps_request.h"
#include "clock.h"
#include "ctl_pool.h"
#include "fast_trigger.h"

/* may datagrams go to this agent at all? Not with client certificates (a
   datagram carries none), nor to an https agent unless fast_path_cleartext
   (issue 41: a datagram is HMAC-authenticated, not encrypted: its caps,
   job ids and throughputs cross the network in clear) */
int ctl_fast_allowed(const ctl *c, const ctl_agent *a)
{
    return !a->client_cert && (!a->https || c->cfg.fast_path_cleartext);
}

/* ---- fast trigger datagrams (fast_trigger.h) ---- */

/* whether agent i's PUT of kind (body) may go by datagram: it offers a port,
 * we know its address and key, the body fits, it answered the last ones; a
 * period's caps when its views do (fast_collect); a trigger's (fast_trigger)
 * when no PUT of a period is on its way by HTTP (that one, answered after
 * the datagram, would raise what the trigger lowered; on HTTP it is answered
 * first; one still queued or waiting for its datagram's answer was cancelled
 * by the trigger: a datagram of a period that arrives after the trigger's is
 * stale at the agent, and it is not sent again by HTTP) */
int ctl_fast_usable(const ctl *c, int kind, size_t i, const char *body)
{
    ctl_pool *P = c->io.pool;
    const ctl_agent *a = &c->io.agent[i];
    if (P->ft_fd < 0 || a->fast_port <= 0 || !a->fast_ip || !a->token[0] || a->fast_misses >= 3 ||
        !ctl_fast_allowed(c, a) || strlen(body) > PFI_FT_MAX_BODY)
        return 0;
    if (kind == X_PUT) return c->cfg.fast_collect; /* a period's caps: with its views */
    return c->cfg.fast_trigger && !P->x[X_PUT][i].running &&
           !(P->x[X_PUT][i].queued && !P->x[X_PUT][i].cancel);
}

/* a new base for seqs: agent i's next datagram carries P->ft_base + i, a
 * multiple of the agents, so an answer's seq names its agent; microseconds
 * of the wall clock, increasing */
void ctl_fast_new_base(ctl_pool *P)
{
    uint64_t n = P->n ? P->n : 1, t = pfi_ft_now_us();
    P->ft_base = ((t > P->ft_next ? t : P->ft_next) + n - 1) / n * n;
    P->ft_next = P->ft_base + n;
}

uint64_t ctl_fast_seq_high(const ctl_pool *P)
{
    return __atomic_load_n(&P->ft_next, __ATOMIC_RELAXED);
}

void ctl_fast_seq_floor(ctl_pool *P, uint64_t seq)
{
    if (seq >= __atomic_load_n(&P->ft_next, __ATOMIC_RELAXED))
        __atomic_store_n(&P->ft_next, seq + 1, __ATOMIC_RELAXED);
}

/* the live entry now at ring position at, moved there from from */
void ctl_fast_repos(ctl_pool *P, size_t at, size_t from)
{
    size_t e = P->ft_list[at % (X_KINDS * P->n)];
    xfer *y = &P->x[e / P->n][e % P->n];
    if (y->fast && y->ft_pos == from) y->ft_pos = at;
}

/* on its way by datagram (or, when the ring is full of entries still waiting, by HTTP) */
void ctl_fast_add(xfer *x)
{
    ctl_pool *P = x->pool;
    if (P->ft_n - P->ft_wait >= X_KINDS * P->n) { /* an old one's answer still out: keep it */
        ctl_pool_enqueue(x);
        return;
    }
    x->fast = 1;
    x->fast_sent = 0;
    x->fast_seq = 0;
    x->queued = 1; /* on its way: not queued again until it ends */
    x->ft_pos = P->ft_n;
    P->ft_list[P->ft_n++ % (X_KINDS * P->n)] = (size_t)x->kind * P->n + x->agent;
    P->pending[x->kind]++;
    P->fast_pending[x->kind]++;
}

/* the transfer at ring position k, NULL when that entry is dead (it ended, or
 * the transfer went on its way again from a later position) */
static xfer *fast_at(ctl_pool *P, size_t k)
{
    size_t q = P->ft_list[k % (X_KINDS * P->n)];
    xfer *x = &P->x[q / P->n][q % P->n];
    return x->fast && x->ft_pos == k ? x : NULL;
}

/* a datagram that ended (answered, or given up): no longer on its way */
static void fast_end(xfer *x)
{
    ctl_pool *P = x->pool;
    x->fast = 0;
    x->queued = 0;
    P->pending[x->kind]--;
    P->fast_pending[x->kind]--;
}

/* send the next FT_BATCH datagrams not sent yet; the time to call again
 * when the socket's buffer was full (else +inf). A period's caps that a
 * trigger cancelled before they were sent are not sent: sent after the
 * trigger's, with a higher seq, they would raise what it lowered. */
double ctl_fast_send(ctl *c)
{
    ctl_pool *P = c->io.pool;
    static unsigned char dg[FT_BATCH][PFI_FT_MAX_BYTES];
    struct mmsghdr mm[FT_BATCH];
    struct iovec iov[FT_BATCH];
    struct sockaddr_in to[FT_BATCH];
    xfer *bx[FT_BATCH];
    size_t pos[FT_BATCH], nb = 0, k = P->ft_send;
    for (; k < P->ft_n && nb < FT_BATCH; k++) {
        xfer *x = fast_at(P, k);
        if (!x) continue;
        if (x->kind == X_PUT && x->cancel) {
            fast_end(x);
            x->cancel = 0;
            x->res = CURLE_ABORTED_BY_CALLBACK;
            continue;
        }
        const ctl_agent *a = &c->io.agent[x->agent];
        /* its seq, given as it is sent (a trigger's datagrams overtake views not sent yet):
           above the last this agent was sent */
        if (P->ft_base + x->agent <= P->ft_last[x->agent]) ctl_fast_new_base(P);
        x->fast_seq = P->ft_last[x->agent] = P->ft_base + x->agent;
        pfi_ft_msg m = {PFI_FT_REQUEST, 0, x->fast_seq, x->body, 0};
        char path[600];
        if (x->kind == X_GET) { /* the request target, as the GET's (an agent behind a path) */
            const char *h = strstr(a->url, "://"), *sl = h ? strchr(h + 3, '/') : NULL;
            snprintf(path, sizeof path, "{\"path\":\"%.500s/v1/control\"}", sl ? sl : "");
            m.type = PFI_FT_VIEW;
            m.body = path;
        }
        m.body_len = strlen(m.body);
        memset(&to[nb], 0, sizeof to[nb]);
        to[nb].sin_family = AF_INET;
        to[nb].sin_port = htons((uint16_t)a->fast_port);
        to[nb].sin_addr.s_addr = a->fast_ip;
        iov[nb].iov_base = dg[nb];
        iov[nb].iov_len = pfi_ft_encode(&m, a->token, dg[nb]);
        memset(&mm[nb], 0, sizeof mm[nb]);
        mm[nb].msg_hdr.msg_name = &to[nb];
        mm[nb].msg_hdr.msg_namelen = sizeof to[nb];
        mm[nb].msg_hdr.msg_iov = &iov[nb];
        mm[nb].msg_hdr.msg_iovlen = 1;
        bx[nb] = x;
        pos[nb++] = k;
    }
    if (!nb) {
        P->ft_send = k; /* dead or cancelled entries only */
        return INFINITY;
    }
    int sent = sendmmsg(P->ft_fd, mm, (unsigned)nb, 0);
    double now = pfi_wall_monotonic();
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
        P->ft_send = pos[0];
        return now + 0.001;
    }
    /* the first one failed (sent < 0): its deadline is now, so it goes by HTTP */
    size_t done = sent > 0 ? (size_t)sent : 1;
    unsigned long long views = 0;
    for (size_t q = 0; q < done; q++) {
        bx[q]->fast_sent = 1;
        bx[q]->fast_deadline = sent > 0 ? now + c->cfg.fast_trigger_ack_s : now;
        views += sent > 0 && bx[q]->kind == X_GET;
    }
    P->ft_send = done < nb ? pos[done] : k;
    pthread_mutex_lock(&c->mu); /* the counters /metrics reads */
    c->fast_sent[0] += (sent > 0 ? (unsigned long long)sent : 0) - views;
    c->fast_sent[1] += views;
    pthread_mutex_unlock(&c->mu);
    return INFINITY;
}

/* an answer to agent i's datagram (seq), checked: its transfer, else NULL */
static xfer *fast_match(const ctl *c, const unsigned char *d, size_t len, pfi_ft_msg *m)
{
    ctl_pool *P = c->io.pool;
    if (len < PFI_FT_HEADER_BYTES || !P->n) return NULL;
    uint64_t seq = 0;
    for (int b = 8; b < 16; b++) seq = seq << 8 | d[b];
    for (int kind = 0; kind < X_KINDS; kind++) {
        xfer *x = &P->x[kind][seq % P->n];
        pfi_error e;
        if (x->fast && x->fast_sent && x->fast_seq == seq &&
            !pfi_ft_decode(d, len, c->io.agent[x->agent].token, m, &e) && m->type == PFI_FT_ANSWER)
            return x;
    }
    return NULL; /* late (already sent by HTTP), or not from the agent */
}

/* the answers waiting on the socket */
void ctl_fast_recv(ctl *c)
{
    ctl_pool *P = c->io.pool;
    static unsigned char dg[FT_BATCH][PFI_FT_MAX_BYTES + 1];
    struct mmsghdr mm[FT_BATCH];
    struct iovec iov[FT_BATCH];
    for (int round = 0; round < 16; round++) { /* then back to epoll: a flood holds no one */
        for (size_t k = 0; k < FT_BATCH; k++) {
            iov[k].iov_base = dg[k];
            iov[k].iov_len = PFI_FT_MAX_BYTES; /* one byte left for a NUL */
            memset(&mm[k], 0, sizeof mm[k]);
            mm[k].msg_hdr.msg_iov = &iov[k];
            mm[k].msg_hdr.msg_iovlen = 1;
        }
        int n = recvmmsg(P->ft_fd, mm, FT_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0) return;
        int locked = 0;
        double now = 0;
        unsigned long long views = 0;
        for (int k = 0; k < n; k++) {
            pfi_ft_msg m;
            xfer *x = mm[k].msg_hdr.msg_flags & MSG_TRUNC ? NULL /* longer than any answer */
                                                          : fast_match(c, dg[k], mm[k].msg_len, &m);
            if (!x) continue;
            fast_end(x);
            if (c->io.agent[x->agent].fast_probe_at > 0) { /* it was HTTP only */
                ctl_log(c, "agent %s answers datagrams again", c->io.agent[x->agent].name);
                c->io.agent[x->agent].fast_probe_at = 0;
            }
            c->io.agent[x->agent].fast_misses = 0; /* only this thread writes it */
            if (x->kind == X_GET) {
                views++;
                /* the view as a GET's answer; one that did not fit: by HTTP */
                pfi_buf_clear(&x->buf);
                x->code = (long)m.status;
                x->res = pfi_buf_add(&x->buf, m.body, m.body_len) ? CURLE_OUT_OF_MEMORY : CURLE_OK;
                x->by_datagram = 1;
                if (m.status != 200) ctl_pool_enqueue(x);
                continue;
            }
            dg[k][mm[k].msg_len] = '\0';
            if (!locked) pthread_mutex_lock(&c->mu), locked = 1, now = pfi_clock_now();
            c->fast_answered[0]++;
            if (x->kind == X_TRIGGER) c->trigger_fast++;
            x->cancel = 0;
            P->procs.put_result(c, x, now, 1, (long)m.status, NULL, m.body);
        }
        if (views) {
            if (!locked) pthread_mutex_lock(&c->mu), locked = 1;
            c->fast_answered[1] += views;
        }
        if (locked) pthread_mutex_unlock(&c->mu);
    }
}

/* datagrams not answered by their deadline: the same request by HTTP; the
 * next deadline (+inf: none) */
double ctl_fast_expire(ctl *c)
{
    ctl_pool *P = c->io.pool;
    double now = pfi_wall_monotonic();
    size_t late[X_KINDS] = {0};
    while (P->ft_wait < P->ft_send) {
        xfer *x = fast_at(P, P->ft_wait);
        if (x && x->fast_sent && x->fast_deadline > now) break;
        P->ft_wait++;
        if (!x || !x->fast_sent) continue; /* answered, moved on, or not sent yet (see fast_send) */
        fast_end(x);
        ctl_agent *ag = &c->io.agent[x->agent];
        if (++ag->fast_misses == 3) {
            /* HTTP only from now on, but not for good: a clock step or a
               lost burst is enough for 3 misses; a datagram is tried again
               every CTL_FAST_PROBE_S and one answer brings them back */
            if (ag->fast_probe_at == 0)
                ctl_log(c,
                        "warning: agent %s answered none of 3 datagrams in a row: HTTP only, a "
                        "datagram tried again every %.0f s",
                        ag->name, CTL_FAST_PROBE_S);
            ag->fast_probe_at = now + CTL_FAST_PROBE_S;
        }
        late[x->kind]++;
        if (x->kind == X_PUT && x->cancel) { /* a trigger came since: its caps stand */
            x->cancel = 0;
            continue;
        }
        ctl_pool_enqueue(x);
    }
    if (late[X_TRIGGER] || late[X_GET] || late[X_PUT]) {
        pthread_mutex_lock(&c->mu);
        c->fast_fallbacks[0] += late[X_TRIGGER] + late[X_PUT];
        c->fast_fallbacks[1] += late[X_GET];
        if (late[X_PUT])
            ctl_log(c,
                    "warning: %zu agents did not answer the caps datagram within %.0f ms: sent "
                    "by HTTP",
                    late[X_PUT], 1000 * c->cfg.fast_trigger_ack_s);
        if (late[X_TRIGGER])
            ctl_log(c,
                    "trigger %s: %zu agents did not answer the datagram within %.0f ms: their caps "
                    "go by HTTP",
                    c->trigger_id, late[X_TRIGGER], 1000 * c->cfg.fast_trigger_ack_s);
        if (late[X_GET])
            ctl_log(c,
                    "warning: %zu agents did not answer the view datagram within %.0f ms: read by "
                    "HTTP",
                    late[X_GET], 1000 * c->cfg.fast_trigger_ack_s);
        pthread_mutex_unlock(&c->mu);
    }
    if (P->ft_wait == P->ft_n) P->ft_wait = P->ft_send = P->ft_n = 0; /* none on its way */
    xfer *head = P->ft_wait < P->ft_send ? fast_at(P, P->ft_wait) : NULL;
    return head ? head->fast_deadline : P->ft_wait < P->ft_send ? pfi_wall_monotonic() : INFINITY;
}

/* whether agent i's view may be read by datagram this period: as a trigger's
 * caps (fast_usable), and an agent that answered GET /v1/control; every 16th
 * period by HTTP (a sixteenth of the agents each period, not all at once),
 * which keeps that path tried and says where the agent is now (fast_ip; an
 * agent that moved, or restarted on another port, misses its datagrams and
 * is read by HTTP at once anyway) */
int ctl_fast_view_usable(const ctl *c, size_t i)
{
    ctl_pool *P = c->io.pool;
    const ctl_agent *a = &c->io.agent[i];
    return P->ft_fd >= 0 && c->cfg.fast_collect && a->up && a->fast_port > 0 && a->fast_ip &&
           a->token[0] && a->fast_misses < 3 && ctl_fast_allowed(c, a) &&
           !P->x[X_GET][i].full_node && (c->cycles + i) % 16 != 0;
}
