/* ctl_agents.c — the controller's side of the agents: every control period
 * GET /v1/node from all agents, and PUT /v1/caps to those whose caps
 * change; a trigger (ctl_trigger.c) PUTs its precomputed caps at once, in
 * the middle of a period's transfers if need be. libcurl's multi interface
 * drives every transfer, event-driven (curl_multi_socket_action on one
 * epoll set; multi handles per shard of 64 agents, see SHARD_AGENTS), with
 * one kept-alive connection per agent (at most one connection per
 * host:port, so a trigger's PUT to an agent whose GET is in
 * flight waits for it on the same connection instead of opening a second
 * one — 12,500 agents stay within 20,000 open files). At most
 * agent_concurrency transfers are in flight at once (a burst of 12,500 new
 * connections overflows the listeners' SYN backlogs: the kernel then retries
 * after 1 s); the next starts as one ends, so a slow agent never holds up
 * another. Each transfer has its own deadline (agent_timeout_s, from when it
 * starts): an agent that misses it is marked down and its caps left to its
 * lease. Called without the lock; results are stored under it; only the
 * control loop's thread calls in here (a trigger from an HTTP handler sets
 * c->trigger_req and wakes the transfers through an eventfd in the epoll
 * set). A trigger cancels the period's PUTs that have not started (their
 * caps predate it).
 *
 * Lease generations: a push carries each agent's stored generation
 * (ctl_agent.generation). What an agent answers about it (a 409: stale; a
 * 400 about the generation: out of reach, an alarm counted in /metrics)
 * is kept for the next period's decision (ctl_generation.c), which raises
 * that agent's generation; the period's transaction stores it before the
 * push carries it (ctl_persist.c). Nothing here writes to SQLite. */
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

#include "buf.h"
#include "caps_request.h"
#include "clock.h"
#include "ctl.h"
#include "fast_trigger.h"
#include "vec.h"

/* an agent's answer: at most 64 MiB */
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
} ctl_pool;

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

int ctl_agents_open(ctl *c)
{
    ctl_pool *P = calloc(1, sizeof *P);
    if (!P) return -1;
    P->ep = P->wake_fd = P->ft_fd = -1;
    c->io.pool = P;
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
static int ensure(ctl *c, size_t n)
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

static void enqueue(xfer *x)
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
static void tls_opts(CURL *h, const ctl_agent *a)
{
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (a->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, a->ca_file);
    if (a->client_cert) curl_easy_setopt(h, CURLOPT_SSLCERT, a->client_cert);
    if (a->client_key) curl_easy_setopt(h, CURLOPT_SSLKEY, a->client_key);
}

/* the agent's generation_max from its last /v1/node; -1 if unknown */
static long long agent_generation_max(const ctl_agent *a)
{
    json_t *g = a->node ? json_object_get(a->node, "generation_max") : NULL;
    return json_is_integer(g) && json_integer_value(g) >= 0 ? (long long)json_integer_value(g) : -1;
}

/* may datagrams go to this agent at all? Not with client certificates (a
   datagram carries none), nor to an https agent unless fast_path_cleartext
   (issue 41: a datagram is HMAC-authenticated, not encrypted: its caps,
   job ids and throughputs cross the network in clear) */
static int fast_allowed(const ctl *c, const ctl_agent *a)
{
    return !a->client_cert && (!a->https || c->cfg.fast_path_cleartext);
}

static int fast_usable(const ctl *c, int kind, size_t i, const char *body);
static int fast_view_usable(const ctl *c, size_t i);
static void fast_new_base(ctl_pool *P);
static void ft_repos(ctl_pool *P, size_t at, size_t from);
static void fast_add(xfer *x);

/* each agent's jobs (CSR: the jobs of agent i are idx[start[i] .. start[i+1])), built
 * once per push instead of a scan of every job for every agent; -1 when out of memory */
static int agent_jobs(const ctl *c, size_t **start, size_t **idx)
{
    size_t total = 0;
    for (size_t k = 0; k < c->st.njobs; k++) total += c->st.job[k].nagent;
    *start = calloc(c->io.nagents + 1, sizeof **start);
    *idx = calloc(total + 1, sizeof **idx);
    size_t *fillp = calloc(c->io.nagents + 1, sizeof *fillp);
    if (!*start || !*idx || !fillp) {
        free(*start), free(*idx), free(fillp);
        return -1;
    }
    for (size_t k = 0; k < c->st.njobs; k++)
        for (size_t q = 0; q < c->st.job[k].nagent; q++) (*start)[c->st.job[k].agent_idx[q] + 1]++;
    for (size_t i = 0; i < c->io.nagents; i++) (*start)[i + 1] += (*start)[i];
    for (size_t k = 0; k < c->st.njobs; k++)
        for (size_t q = 0; q < c->st.job[k].nagent; q++) {
            size_t i = (size_t)c->st.job[k].agent_idx[q];
            (*idx)[(*start)[i] + fillp[i]++] = k;
        }
    free(fillp);
    return 0;
}

/* queue PUT /v1/caps of one kind to every agent that is up (lock held):
 * X_PUT the allocation (alloc_cap_w; release: hand back), X_TRIGGER the
 * trigger's caps (trig_cap_w); the number queued */
static size_t queue_puts(ctl *c, int kind, int release)
{
    ctl_pool *P = c->io.pool;
    size_t *start, *idx, added = 0;
    if (agent_jobs(c, &start, &idx)) {
        ctl_log(c, "error: out of memory: no caps pushed");
        return 0;
    }
    char host[64] = "controller";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    static pfi_caps_request rq; /* 35 kB, zeroed once; only the loop's thread is here */
    double now = pfi_clock_now();
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *a = &c->io.agent[i];
        if (!a->up || (release && !a->pushed)) continue;
        rq.ngpus = rq.njobs = 0; /* not the whole 35 kB: 12,500 agents */
        rq.lease_s = release ? 1 : c->cfg.lease_s;
        snprintf(rq.controller, sizeof rq.controller, "pfi-controller@%.100s", host);
        rq.generation = a->generation; /* the stored one (ctl_generation.c, ctl_persist.c) */
        for (size_t q = start[i]; !release && q < start[i + 1] && rq.njobs < PFI_CAPS_MAX_ENTRIES;
             q++) {
            ctl_job *j = &c->st.job[idx[q]];
            double cap = kind == X_TRIGGER ? j->trig_cap_w : j->alloc_cap_w;
            if (!j->seen || !j->reachable || !(cap > 0)) continue;
            /* the last word: no cap above the job's ceiling leaves here,
               whichever path (allocation, trigger plan, fallback) made it */
            if (isfinite(j->cap_max_w) && cap > j->cap_max_w) cap = j->cap_max_w;
            snprintf(rq.jobs[rq.njobs].job_id, sizeof rq.jobs[0].job_id, "%s", j->id);
            rq.jobs[rq.njobs].index = -1;
            rq.jobs[rq.njobs++].cap_w = cap;
        }
        if (kind == X_TRIGGER && !rq.njobs) continue;
        xfer *x = &P->x[kind][i];
        if (x->queued || x->running) continue;
        free(x->body);
        x->body = pfi_caps_request_format(&rq);
        if (!x->body) continue;
        /* the same caps the agent holds, with more than half of the lease left: not sent */
        if (kind == X_PUT && !release && a->pushed && x->sent && !strcmp(x->sent, x->body) &&
            a->lease_until - now > c->cfg.lease_s / 2)
            continue;
        if (!x->set_up) {
            char url[600], auth[PFI_TOKEN_MAX + 32];
            snprintf(url, sizeof url, "%s/v1/caps", a->url);
            snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->token);
            x->hdr = curl_slist_append(NULL, auth);
            x->hdr = curl_slist_append(x->hdr, "Content-Type: application/json");
            curl_easy_setopt(x->h, CURLOPT_URL, url);
            tls_opts(x->h, a);
            curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, "PUT");
            curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
            x->set_up = x->hdr != NULL;
        }
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, x->body);
        x->release = release;
        if (fast_usable(c, kind, i, x->body)) fast_add(x);
        else enqueue(x);
        added++;
    }
    free(start), free(idx);
    return added;
}

/* the trigger waiting (c->trigger_req): its PUTs join the transfers now */
static void take_trigger(ctl *c)
{
    ctl_pool *P = c->io.pool;
    if (!atomic_exchange(&c->trigger_req, 0)) return;
    pthread_mutex_lock(&c->mu);
    double t0 = pfi_wall_monotonic();
    /* a period's PUTs not started yet carry caps from before the trigger: sent after it,
       they would raise what it lowered (those already sent are answered before the
       trigger's PUT on the same connection) */
    for (size_t i = 0; i < P->n; i++)
        if (P->x[X_PUT][i].queued) P->x[X_PUT][i].cancel = 1;
    fast_new_base(P);
    c->trigger_fast = 0;
    size_t n0 = P->ft_n;
    c->trigger_agents = queue_puts(c, X_TRIGGER, 0);
    /* its datagrams go out before a period's view requests not sent yet */
    for (size_t k = n0, t = P->ft_send; k < P->ft_n && P->n; k++, t++) {
        size_t cap = X_KINDS * P->n, *a = &P->ft_list[k % cap], *b = &P->ft_list[t % cap], q = *a;
        *a = *b, *b = q;
        ft_repos(P, k, t), ft_repos(P, t, k); /* the entries now at t and k */
    }
    c->trigger_build_s = pfi_wall_monotonic() - t0;
    c->trigger_failed = 0;
    c->trigger_push_s = NAN;
    if (!c->trigger_agents) ctl_log(c, "trigger %s: no agent to push to", c->trigger_id);
    pthread_mutex_unlock(&c->mu);
}

/* the trigger's last answer came: its summary (lock held) */
static void trigger_done(ctl *c)
{
    ctl_pool *P = c->io.pool;
    if (P->pending[X_TRIGGER] != 0) return;
    ctl_log(c,
            "trigger %s: caps pushed to %zu agents in %.1f ms (%zu by datagram; %zu failed); "
            "every cap written %.1f ms after the trigger (requests built in %.1f ms)",
            c->trigger_id, c->trigger_agents, 1000 * (pfi_wall_monotonic() - c->trigger_t0),
            c->trigger_fast, c->trigger_failed, 1000 * c->trigger_push_s,
            1000 * c->trigger_build_s);
}

/* a PUT that ended (lock held): answered (an HTTP status in code and the
 * agent's body), or not (why: the transport's error) */
static void put_result(ctl *c, xfer *x, double now, int answered, long code, const char *why,
                       const char *body)
{
    ctl_pool *P = c->io.pool;
    ctl_agent *a = &c->io.agent[x->agent];
    xfer *put = &P->x[X_PUT][x->agent];
    free(put->sent); /* what the agent holds now: this body (a period's), else unknown */
    put->sent = NULL;
    if (answered && code == 200 && x->kind == X_PUT && !x->release) {
        put->sent = x->body;
        x->body = NULL; /* the transfer is done with it */
    }
    if (answered && code == 200) {
        c->pushes++;
        if (x->kind == X_TRIGGER) c->trigger_push_s = pfi_wall_monotonic() - c->trigger_t0;
        a->pushed = !x->release;
        if (!x->release) a->lease_until = now + c->cfg.lease_s;
    } else {
        c->push_errors++;
        if (x->kind == X_TRIGGER) c->trigger_failed++;
        ctl_log(c, "warning: agent %s: PUT /v1/caps%s failed: %s %.200s", a->name,
                x->kind == X_TRIGGER ? " (trigger)" : "", answered ? "HTTP" : why,
                body ? body : "");
        long long gm = agent_generation_max(a);
        if (!answered) { /* no answer within its deadline: down until it answers */
            if (a->up) ctl_log(c, "warning: agent %s (%s) marked down", a->name, a->url);
            a->up = 0;
            snprintf(a->err, sizeof a->err, "PUT: %s", why);
        } else if (code == 409) {
            /* someone wrote a newer generation: the next period's decision
               continues above it, on this agent only, stored before sent */
            a->gen_answer = CTL_GEN_ANSWER_STALE;
        } else if (code == 400 && body && strstr(body, "generation")) {
            c->generation_rejects++;
            ctl_log(c,
                    "ALARM: agent %s rejected our generation %lld (its generation_max: %lld): "
                    "its lease state was reset or "
                    "is out of reach; see \"Resetting generations\" in docs/controller.md",
                    a->name, a->generation, gm);
            a->gen_answer = CTL_GEN_ANSWER_OUT_OF_REACH;
        }
    }
    if (x->kind == X_TRIGGER) trigger_done(c);
}

static void put_done(ctl *c, xfer *x, double now)
{
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    put_result(c, x, now, x->res == CURLE_OK, code, curl_easy_strerror(x->res), x->buf.p);
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
static int fast_usable(const ctl *c, int kind, size_t i, const char *body)
{
    ctl_pool *P = c->io.pool;
    const ctl_agent *a = &c->io.agent[i];
    if (P->ft_fd < 0 || a->fast_port <= 0 || !a->fast_ip || !a->token[0] || a->fast_misses >= 3 ||
        !fast_allowed(c, a) || strlen(body) > PFI_FT_MAX_BODY)
        return 0;
    if (kind == X_PUT) return c->cfg.fast_collect; /* a period's caps: with its views */
    return c->cfg.fast_trigger && !P->x[X_PUT][i].running &&
           !(P->x[X_PUT][i].queued && !P->x[X_PUT][i].cancel);
}

/* a new base for seqs: agent i's next datagram carries P->ft_base + i, a
 * multiple of the agents, so an answer's seq names its agent; microseconds
 * of the wall clock, increasing */
static void fast_new_base(ctl_pool *P)
{
    uint64_t n = P->n ? P->n : 1, t = pfi_ft_now_us();
    P->ft_base = ((t > P->ft_next ? t : P->ft_next) + n - 1) / n * n;
    P->ft_next = P->ft_base + n;
}

/* the live entry now at ring position at, moved there from from */
static void ft_repos(ctl_pool *P, size_t at, size_t from)
{
    size_t e = P->ft_list[at % (X_KINDS * P->n)];
    xfer *y = &P->x[e / P->n][e % P->n];
    if (y->fast && y->ft_pos == from) y->ft_pos = at;
}

/* on its way by datagram (or, when the ring is full of entries still waiting, by HTTP) */
static void fast_add(xfer *x)
{
    ctl_pool *P = x->pool;
    if (P->ft_n - P->ft_wait >= X_KINDS * P->n) { /* an old one's answer still out: keep it */
        enqueue(x);
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
static double fast_send(ctl *c)
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
        if (P->ft_base + x->agent <= P->ft_last[x->agent]) fast_new_base(P);
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
static void fast_recv(ctl *c)
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
                if (m.status != 200) enqueue(x);
                continue;
            }
            dg[k][mm[k].msg_len] = '\0';
            if (!locked) pthread_mutex_lock(&c->mu), locked = 1, now = pfi_clock_now();
            c->fast_answered[0]++;
            if (x->kind == X_TRIGGER) c->trigger_fast++;
            x->cancel = 0;
            put_result(c, x, now, 1, (long)m.status, NULL, m.body);
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
static double fast_expire(ctl *c)
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
        enqueue(x);
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
            put_done(c, x, now);
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
            fast_recv(c);
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
static void run_until(ctl *c, int kind)
{
    ctl_pool *P = c->io.pool;
    struct epoll_event ev[512];
    int running;
    for (;;) {
        take_trigger(c);
        fill(c);
        /* a trigger's datagrams first, all of them, with their answers read between
           batches: the collection's transfers wait (a trigger's caps come first) */
        double ft_next = INFINITY;
        while (P->ft_fd >= 0 && P->ft_send < P->ft_n && !isfinite(ft_next = fast_send(c)))
            fast_recv(c);
        if (P->ft_fd >= 0) {
            fast_recv(c);
            ft_next = fmin(ft_next, fast_expire(c));
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
void ctl_agents_idle(ctl *c, double wait_s)
{
    ctl_pool *P = c->io.pool;
    if (!ensure(c, c->io.nagents) && P->ep >= 0 && !atomic_load(&c->trigger_req)) {
        struct epoll_event ev[64];
        int n = epoll_wait(P->ep, ev, 64, wait_s > 0 ? (int)ceil(wait_s * 1000) : 0);
        if (n > 0) {
            dispatch(c, ev, n);
            reap(c);
        }
    }
    ctl_agents_service(c);
}

void ctl_agents_wake(ctl *c)
{
    ctl_pool *P = c->io.pool;
    uint64_t one = 1;
    if (P && P->wake_fd >= 0 && write(P->wake_fd, &one, sizeof one) < 0) { /* already signalled */
    }
}

void ctl_agents_service(ctl *c)
{
    ctl_pool *P = c->io.pool;
    if (ensure(c, c->io.nagents) || (!atomic_load(&c->trigger_req) && !P->pending[X_TRIGGER]))
        return;
    run_until(c, X_TRIGGER);
}

/* whether agent i's view may be read by datagram this period: as a trigger's
 * caps (fast_usable), and an agent that answered GET /v1/control; every 16th
 * period by HTTP (a sixteenth of the agents each period, not all at once),
 * which keeps that path tried and says where the agent is now (fast_ip; an
 * agent that moved, or restarted on another port, misses its datagrams and
 * is read by HTTP at once anyway) */
static int fast_view_usable(const ctl *c, size_t i)
{
    ctl_pool *P = c->io.pool;
    const ctl_agent *a = &c->io.agent[i];
    return P->ft_fd >= 0 && c->cfg.fast_collect && a->up && a->fast_port > 0 && a->fast_ip &&
           a->token[0] && a->fast_misses < 3 && fast_allowed(c, a) && !P->x[X_GET][i].full_node &&
           (c->cycles + i) % 16 != 0;
}

/* each agent's way to its view this period: datagrams, or HTTP only after
 * 3 misses until the probe is due; client certificates: HTTPS only */
static void view_modes(ctl *c)
{
    double mono = pfi_wall_monotonic();
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *ag = &c->io.agent[i];
        /* HTTP only after 3 misses: one datagram again when the probe is due
           (answered: misses back to 0; missed: 3 again, next probe later) */
        if (ag->fast_misses >= 3 && ag->fast_probe_at > 0 && mono >= ag->fast_probe_at) {
            ag->fast_misses = 2;
            ag->fast_probe_at = mono + CTL_FAST_PROBE_S;
        }
        /* client certificates: a datagram carries none (the agent turns
           them off too and advertises no port; said once here) */
        if (!fast_allowed(c, ag) && ag->fast_port > 0 && !ag->fast_mtls_logged) {
            if (ag->client_cert)
                ctl_log(c,
                        "agent %s: client certificates in use: no fast trigger datagrams, HTTPS "
                        "only",
                        ag->name);
            else
                ctl_log(c,
                        "agent %s: https: no fast trigger datagrams (they are authenticated, not "
                        "encrypted); fast_path_cleartext: true allows them",
                        ag->name);

            ag->fast_mtls_logged = 1;
        }
    }
}

/* an agent without GET /v1/control (older than it): /v1/node from now on, at once */
static void views_again(ctl *c)
{
    ctl_pool *P = c->io.pool;
    size_t older = 0;
    for (size_t i = 0; i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        if (x->res != CURLE_OK || x->code != 404 || x->full_node || x->by_datagram) continue;
        char url[600];
        snprintf(url, sizeof url, "%s/v1/node", c->io.agent[i].url);
        curl_easy_setopt(x->h, CURLOPT_URL, url);
        x->full_node = 1;
        pthread_mutex_lock(&c->mu);
        ctl_log(c, "agent %s has no GET /v1/control (404): reading GET /v1/node",
                c->io.agent[i].name);
        pthread_mutex_unlock(&c->mu);
        enqueue(x);
        older++;
    }
    if (older) run_until(c, X_GET);
}

/* the parsed views into the agents (lock taken): up, back, unreachable */
static void take_views(ctl *c, json_t **node)
{
    ctl_pool *P = c->io.pool;
    double now = pfi_clock_now();
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        ctl_agent *a = &c->io.agent[i];
        json_t *nd = node ? node[i] : NULL;
        if (nd && json_is_array(json_object_get(nd, "gpus"))) {
            if (!a->up)
                ctl_log(c, "agent %s (%s) is %s", a->name, a->url, a->ever_up ? "back" : "up");
            json_decref(a->node);
            a->node = nd;
            /* where its fast trigger datagrams go: the address this GET reached */
            char *ip = NULL;
            struct in_addr in;
            json_t *fp = json_object_get(nd, "fast_trigger_port");
            if (!x->by_datagram) /* a view by datagram came from where we sent it */
                a->fast_ip = curl_easy_getinfo(x->h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip &&
                                     inet_pton(AF_INET, ip, &in) == 1
                                 ? in.s_addr
                                 : 0;
            a->fast_port =
                json_is_integer(fp) && json_integer_value(fp) > 0 && json_integer_value(fp) < 65536
                    ? (int)json_integer_value(fp)
                    : 0;
            a->up = a->ever_up = 1;
            a->last_ok_t = now;
            a->err[0] = '\0';
        } else {
            json_decref(nd);
            const char *why = x->res == CURLE_OK ? "bad answer" : curl_easy_strerror(x->res);
            if (a->up) ctl_log(c, "warning: agent %s (%s) unreachable: %s", a->name, a->url, why);
            snprintf(a->err, sizeof a->err, "%s", why);
            a->up = 0;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void ctl_agents_collect(ctl *c)
{
    ctl_pool *P = c->io.pool;
    if (ensure(c, c->io.nagents)) return;
    fast_new_base(P);
    view_modes(c);
    for (size_t i = 0; i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        if (!x->set_up) {
            char url[600];
            snprintf(url, sizeof url, "%s/v1/control", c->io.agent[i].url);
            curl_easy_setopt(x->h, CURLOPT_URL, url);
            curl_easy_setopt(x->h, CURLOPT_HTTPGET, 1L);
            tls_opts(x->h, &c->io.agent[i]);
            /* reads carry the read token when one is configured (never the control token) */
            if (c->io.agent[i].read_token[0]) {
                char auth[PFI_TOKEN_MAX + 32];
                snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->io.agent[i].read_token);
                x->hdr = curl_slist_append(NULL, auth);
            }
            curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
            x->set_up = 1;
        }
        if (fast_view_usable(c, i)) fast_add(x);
        else enqueue(x);
    }
    run_until(c, X_GET);
    views_again(c);
    /* the answers parsed outside the lock */
    json_t **node = calloc(c->io.nagents + 1, sizeof *node);
    for (size_t i = 0; node && i < c->io.nagents; i++) {
        xfer *x = &P->x[X_GET][i];
        node[i] =
            x->res == CURLE_OK && x->code == 200 ? json_loadb(x->buf.p, x->buf.n, 0, NULL) : NULL;
    }
    take_views(c, node);
    free(node);
}

void ctl_agents_push(ctl *c, int release)
{
    ctl_pool *P = c->io.pool;
    if (ensure(c, c->io.nagents)) return;
    fast_new_base(P); /* the caps' datagrams carry seqs above the views' */
    pthread_mutex_lock(&c->mu);
    size_t added = queue_puts(c, X_PUT, release);
    pthread_mutex_unlock(&c->mu);
    if (added) run_until(c, X_PUT);
}
