/* ctl_pool.c — the transport of the controller's transfers to its agents
 * (ctl_pool.h), the bottom of them: libcurl's multi interface driven
 * event by event (curl_multi_socket_action on one epoll set; multi handles
 * per shard of 64 agents, see SHARD_AGENTS), one kept-alive connection per
 * agent, at most agent_concurrency transfers in flight, each with its own
 * deadline, the queues (a trigger's first), the wake eventfd and the loop's
 * sleep between periods. What a transfer's end means, and the datagrams,
 * are the protocol's (ctl_agents_push.c, ctl_fast.c): called back through
 * the pool's procs (ctl_pool_procs, in the style of Redis ae.c's), so the
 * transport references none of them (issue 43: scripts/check-cycles.py). */
#include "ctl_pool.h"
#include "buf.h"
#include "caps_request.h"
#include "clock.h"
#include "ctl.h"
#include "fast_trigger.h"
#include "vec.h"
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    xfer *x = ud;
    size_t k = sz * nm;
    return pfi_buf_add(&x->buf, p, k) ? 0 : k; /* too large or out of memory: the transfer fails */
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *ud, void *sockp)
{
    (void)e;
    shard *sh = ud;
    ctl_pool *P = sh->pool;
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.data.u64 = (uint64_t)(sh - P->sh) << 32 | (uint32_t)s;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(P->ep, EPOLL_CTL_DEL, s, NULL);
        curl_multi_assign(sh->m, s, NULL);
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (sockp || (epoll_ctl(P->ep, EPOLL_CTL_ADD, s, &ev) && errno == EEXIST))
        epoll_ctl(P->ep, EPOLL_CTL_MOD, s, &ev);
    if (!sockp) curl_multi_assign(sh->m, s, (void *)1);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
    (void)m;
    shard *sh = ud;
    sh->timer_at = timeout_ms < 0 ? -1 : pfi_wall_monotonic() + (double)timeout_ms / 1000;
    return 0;
}

/* the connections each shard keeps between periods: one per agent, unless
 * the open-file limit cannot hold one per agent besides the transfers in
 * flight and the controller's other files (then fewer, said once: the
 * agents beyond it are reached on a new connection when HTTP is needed —
 * datagrams carry most views and caps) */
static long kept_per_shard(ctl *c, size_t nsh)
{
    struct rlimit rl;
    long want = SHARD_AGENTS + 4;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY) return want;
    double inflight = c->cfg.agent_concurrency > 0 ? c->cfg.agent_concurrency : 1024;
    double budget = (double)rl.rlim_cur - inflight - 256;
    long per = (long)(budget / (double)(nsh ? nsh : 1));
    if (per >= want) return want;
    if (per < 4) per = 4;
    ctl_log(c,
            "warning: open-file limit %llu is below one kept connection per agent (%zu agents, "
            "%.0f transfers in flight): %ld kept per %d agents; raise LimitNOFILE to keep them all",
            (unsigned long long)rl.rlim_cur, c->io.nagents, inflight, per, SHARD_AGENTS);
    return per;
}

/* transfers for n agents; -1 (logged) when out of memory */
int ctl_pool_ensure(ctl *c, size_t n)
{
    ctl_pool *P = c->io.pool;
    if (!P) return -1;
    if (P->n >= n) return 0;
    if (P->n > 0) return -1; /* the agents are fixed at start-up: sized once */
    if (P->ep < 0) {
        P->ep = epoll_create1(EPOLL_CLOEXEC);
        P->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event ev;
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN;
        ev.data.u64 = WAKE_KEY;
        if (P->ep < 0 || P->wake_fd < 0 || epoll_ctl(P->ep, EPOLL_CTL_ADD, P->wake_fd, &ev)) {
            ctl_log(c, "error: epoll: %s; no requests to the agents", strerror(errno));
            return -1;
        }
        pfi_error e;
        ev.data.u64 = FAST_KEY;
        if (c->cfg.fast_trigger) {
            /* answers from 12,500 agents arrive within milliseconds: a large buffer */
            if (pfi_ft_socket(NULL, 0, 32 << 20, &P->ft_fd, NULL, &e) ||
                epoll_ctl(P->ep, EPOLL_CTL_ADD, P->ft_fd, &ev)) {
                ctl_log(c, "warning: fast trigger datagrams off: %s",
                        P->ft_fd < 0 ? e.msg : strerror(errno));
                if (P->ft_fd >= 0) close(P->ft_fd);
                P->ft_fd = -1;
            }
        }
    }
    size_t nsh = (n + SHARD_AGENTS - 1) / SHARD_AGENTS;
    long kept = kept_per_shard(c, nsh);
    int bad = PFI_VEC_RESIZE(P->sh, nsh, NULL) != PFI_OK;
    for (size_t k = 0; !bad && k < nsh; k++) {
        shard *sh = &P->sh[k];
        sh->pool = P;
        sh->timer_at = -1;
        sh->done = 0;
        if (!(sh->m = curl_multi_init())) {
            bad = 1;
            break;
        }
        P->nsh = k + 1;
        /* one connection per agent (host:port); every one kept between periods
           while the open-file limit allows */
        curl_multi_setopt(sh->m, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
        curl_multi_setopt(sh->m, CURLMOPT_MAXCONNECTS, kept);
        curl_multi_setopt(sh->m, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(sh->m, CURLMOPT_SOCKETDATA, sh);
        curl_multi_setopt(sh->m, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(sh->m, CURLMOPT_TIMERDATA, sh);
    }
    for (int k = 0; !bad && k < X_KINDS; k++) bad = PFI_VEC_RESIZE(P->x[k], n, NULL) != PFI_OK;
    bad = bad || PFI_VEC_RESIZE(P->queue.q, X_KINDS * n, NULL) != PFI_OK ||
          PFI_VEC_RESIZE(P->ft_list, X_KINDS * n, NULL) != PFI_OK ||
          PFI_VEC_RESIZE(P->ft_last, n, NULL) != PFI_OK ||
          PFI_VEC_RESIZE(P->trigger_queue.q, n, NULL) != PFI_OK;
    for (size_t i = 0; !bad && i < n; i++)
        for (int k = 0; k < X_KINDS; k++) {
            xfer *x = &P->x[k][i];
            memset(x, 0, sizeof *x);
            x->pool = P;
            x->buf.max = XFER_MAX_BYTES;
            x->kind = k;
            x->agent = i;
            if (!(x->h = curl_easy_init())) bad = 1;
            else {
                curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
                /* libcurl keeps a receive buffer per handle (16 kB by default): three
                   handles per agent at 12,500 agents would be 600 MB; the answers are
                   small (a node view: a few kB, read in several pieces if larger) */
                curl_easy_setopt(x->h, CURLOPT_BUFFERSIZE, k == X_GET ? 8192L : 1024L);
            }
        }
    if (bad) {
        ctl_log(
            c,
            "error: out of memory for the transfers to %zu agents; skipping this period's requests",
            n);
        return -1;
    }
    memset(P->ft_last, 0, n * sizeof *P->ft_last);
    P->queue.cap = X_KINDS * n;
    P->trigger_queue.cap = n;
    P->n = n;
    return 0;
}

/* start queued transfers while slots are free */
static void fill(const ctl *c)
{
    ctl_pool *P = c->io.pool;
    size_t max = c->cfg.agent_concurrency > 0 ? (size_t)c->cfg.agent_concurrency : 1024;
    /* while a trigger's datagrams wait for their answers, a period's transfers wait too:
       on a busy machine they would compete with the agents' work on the caps */
    int hold = P->fast_pending[X_TRIGGER] > 0;
    while ((P->trigger_queue.n || (P->queue.n && !hold)) && P->inflight < max) {
        xqueue *from = P->trigger_queue.n ? &P->trigger_queue : &P->queue;
        size_t q = from->q[from->head];
        from->head = (from->head + 1) % from->cap;
        from->n--;
        xfer *x = &P->x[q / P->n][q % P->n];
        x->queued = 0;
        if (x->cancel) {
            x->cancel = 0;
            x->res = CURLE_ABORTED_BY_CALLBACK;
            P->pending[x->kind]--;
            continue;
        }
        x->running = 1;
        curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)(1000 * c->cfg.agent_timeout_s));
        curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, (long)(1000 * c->cfg.agent_timeout_s));
        curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
        if (curl_multi_add_handle(P->sh[x->agent / SHARD_AGENTS].m, x->h) == CURLM_OK)
            P->inflight++;
        else x->running = 0, x->res = CURLE_FAILED_INIT, P->pending[x->kind]--;
    }
}

void ctl_pool_enqueue(xfer *x)
{
    ctl_pool *P = x->pool;
    if (x->queued || x->running) return; /* already on its way (a trigger before the last ended) */
    x->queued = 1;
    x->res = CURLE_OPERATION_TIMEDOUT;
    x->code = 0;
    x->by_datagram = 0;
    pfi_buf_clear(&x->buf);
    xqueue *to = x->kind == X_TRIGGER ? &P->trigger_queue : &P->queue;
    to->q[(to->head + to->n++) % to->cap] = (size_t)x->kind * P->n + x->agent;
    P->pending[x->kind]++;
}

/* TLS to an agent: its CA (else the system's) and our client certificate (mTLS) */
void ctl_pool_tls(CURL *h, const ctl_agent *a)
{
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (a->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, a->ca_file);
    if (a->client_cert) curl_easy_setopt(h, CURLOPT_SSLCERT, a->client_cert);
    if (a->client_key) curl_easy_setopt(h, CURLOPT_SSLKEY, a->client_key);
}

/* collect what ended; PUT results are stored at once (GETs by ctl_agents_collect) */
static void reap(ctl *c)
{
    ctl_pool *P = c->io.pool;
    CURLMsg *m;
    int left, locked = 0;
    double now = 0;
    for (size_t k = 0; k < P->nsh; k++) {
        shard *sh = &P->sh[k];
        if (!sh->done) continue;
        sh->done = 0;
        while ((m = curl_multi_info_read(sh->m, &left))) {
            if (m->msg != CURLMSG_DONE) continue;
            xfer *x;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            x->res = m->data.result;
            x->running = 0;
            curl_multi_remove_handle(sh->m, x->h);
            P->inflight--;
            P->pending[x->kind]--;
            curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->code);
            if (x->kind == X_GET) continue;
            if (!locked) pthread_mutex_lock(&c->mu), locked = 1, now = pfi_clock_now();
            P->procs.put_done(c, x, now); /* ctl_agents_push.c */
        }
    }
    if (locked) pthread_mutex_unlock(&c->mu);
}

/* the epoll set's events: the wake eventfd drained, datagrams read, each
   socket handed to its shard's curl multi handle */
static void dispatch(ctl *c, const struct epoll_event *ev, int n)
{
    ctl_pool *P = c->io.pool;
    int running;
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == WAKE_KEY) {
            uint64_t v;
            if (read(P->wake_fd, &v, sizeof v) < 0) { /* drained */
            }
            continue;
        }
        if (ev[i].data.u64 == FAST_KEY) {
            P->procs.ft_recv(c);
            continue;
        }
        shard *sh = &P->sh[ev[i].data.u64 >> 32];
        int what = (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                   (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                   (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(sh->m, (curl_socket_t)(uint32_t)ev[i].data.u64, what, &running);
        sh->done = 1;
    }
}

/* run the transfers until none of kind is left (kind X_KINDS: none at all);
 * a trigger that arrives meanwhile joins at once */
void ctl_pool_run_until(ctl *c, int kind)
{
    ctl_pool *P = c->io.pool;
    struct epoll_event ev[512];
    int running;
    for (;;) {
        P->procs.take_trigger(c);
        fill(c);
        /* a trigger's datagrams first, all of them, with their answers read between
           batches: the collection's transfers wait (a trigger's caps come first) */
        double ft_next = INFINITY;
        while (P->ft_fd >= 0 && P->ft_send < P->ft_n && !isfinite(ft_next = P->procs.ft_send(c)))
            P->procs.ft_recv(c);
        if (P->ft_fd >= 0) {
            P->procs.ft_recv(c);
            ft_next = fmin(ft_next, P->procs.ft_expire(c));
        }
        fill(c); /* datagrams that fell back to HTTP */
        double now = pfi_wall_monotonic(), next = fmin(now + 0.05, ft_next);
        for (size_t k = 0; k < P->nsh; k++) {
            shard *sh = &P->sh[k];
            if (sh->timer_at >= 0 && now >= sh->timer_at) {
                sh->timer_at = -1;
                curl_multi_socket_action(sh->m, CURL_SOCKET_TIMEOUT, 0, &running);
                sh->done = 1;
            }
            if (sh->timer_at >= 0 && sh->timer_at < next) next = sh->timer_at;
        }
        reap(c);
        fill(c);
        size_t left = 0;
        for (int k = 0; k < X_KINDS; k++)
            if (kind == X_KINDS || k == kind) left += P->pending[k];
        if (P->ft_send < P->ft_n) left++; /* datagrams not sent yet */
        if (!left) break;
        double wait_s = next - pfi_wall_monotonic();
        int n = epoll_wait(P->ep, ev, 512, wait_s > 0 ? (int)ceil(wait_s * 1000) : 0);
        dispatch(c, ev, n);
        reap(c);
    }
}

/* Between periods (the control loop's thread): sleep on the epoll set
 * until wait_s wall seconds pass or something is due — the wake eventfd
 * (a trigger, an event that starts now, an OpenADR event: ctl_agents_wake),
 * a datagram, a kept-alive connection the agent closed (curl told at once:
 * a readable socket left alone would wake the loop again and again) —
 * then a trigger's caps go out (ctl_agents_service). Issue 43: the loop
 * polled every 2 ms between periods (about 470 wake-ups a second). */
void ctl_pool_wait(ctl *c, double wait_s)
{
    ctl_pool *P = c->io.pool;
    if (ctl_pool_ensure(c, c->io.nagents) || P->ep < 0 || atomic_load(&c->trigger_req)) return;
    struct epoll_event ev[64];
    int n = epoll_wait(P->ep, ev, 64, wait_s > 0 ? (int)ceil(wait_s * 1000) : 0);
    if (n > 0) {
        dispatch(c, ev, n);
        reap(c);
    }
}

int ctl_agents_wake_fd(const ctl *c)
{
    const ctl_pool *P = c->io.pool;
    return P ? P->wake_fd : -1;
}

void ctl_agents_wake(ctl *c)
{
    ctl_pool *P = c->io.pool;
    uint64_t one = 1;
    if (P && P->wake_fd >= 0 && write(P->wake_fd, &one, sizeof one) < 0) { /* already signalled */
    }
}
