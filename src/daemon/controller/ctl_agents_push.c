/* ctl_agents_push.c — the controller's writes to its agents: PUT /v1/caps
 * of a period (the allocation, or the caps handed back) and of a trigger,
 * each agent's body with its jobs' caps under our lease and its stored
 * generation, and what the answers mean (a 409 or a 400 about the
 * generation kept for the next decision: ctl_generation.c). Part of the
 * transfers (ctl_pool.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "caps_request.h"
#include "clock.h"
#include "ctl_failover.h"
#include "ctl_pool.h"

/* the agent's generation_max from its last /v1/node; -1 if unknown */
static long long agent_generation_max(const ctl_agent *a)
{
    json_t *g = a->node ? json_object_get(a->node, "generation_max") : NULL;
    return json_is_integer(g) && json_integer_value(g) >= 0 ? (long long)json_integer_value(g) : -1;
}

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

/* agent i's jobs' caps of one kind into rq (lock held): X_PUT the
 * allocation, X_TRIGGER the trigger's caps; the number of jobs */
static size_t fill_caps(const ctl *c, size_t i, int kind, const size_t *start, const size_t *idx,
                        pfi_caps_request *rq)
{
    rq->njobs = 0;
    for (size_t q = start[i]; q < start[i + 1] && rq->njobs < PFI_CAPS_MAX_ENTRIES; q++) {
        const ctl_job *j = &c->st.job[idx[q]];
        double cap = kind == X_TRIGGER ? j->trig_cap_w : j->alloc_cap_w;
        if (!j->seen || !j->reachable || !(cap > 0)) continue;
        /* the last word: no cap above the job's ceiling leaves here,
           whichever path (allocation, trigger plan, fallback) made it */
        if (isfinite(j->cap_max_w) && cap > j->cap_max_w) cap = j->cap_max_w;
        snprintf(rq->jobs[rq->njobs].job_id, sizeof rq->jobs[0].job_id, "%s", j->id);
        rq->jobs[rq->njobs].index = -1;
        rq->jobs[rq->njobs++].cap_w = cap;
    }
    return rq->njobs;
}

/* this host's name, once a push (not once an agent: 12,500 calls) */
static void host_name(char host[64])
{
    snprintf(host, 64, "controller");
    gethostname(host, 64);
    host[63] = '\0';
}

/* rq (lease, controller, generation) for agent i */
static void fill_head(const ctl *c, const char *host, const ctl_agent *a, int release,
                      pfi_caps_request *rq)
{
    rq->ngpus = 0;
    rq->lease_s = release ? 1 : c->cfg.lease_s;
    if (c->fo) /* which of the controllers: the agents log it */
        snprintf(rq->controller, sizeof rq->controller, "pfi-controller@%.40s/%.40s", host,
                 c->cfg.fo.name);
    else snprintf(rq->controller, sizeof rq->controller, "pfi-controller@%.100s", host);
    rq->generation = a->generation; /* the stored one (ctl_generation.c, ctl_persist.c) */
}

/* agent i's transfer of one kind set up for its body and queued */
static void queue_put(ctl *c, int kind, size_t i, int release)
{
    ctl_agent *a = &c->io.agent[i];
    xfer *x = &c->io.pool->x[kind][i];
    if (!x->set_up) {
        char url[600], auth[PFI_TOKEN_MAX + 32];
        snprintf(url, sizeof url, "%s/v1/caps", a->url);
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->token);
        x->hdr = curl_slist_append(NULL, auth);
        x->hdr = curl_slist_append(x->hdr, "Content-Type: application/json");
        curl_easy_setopt(x->h, CURLOPT_URL, url);
        ctl_pool_tls(x->h, a);
        curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
        x->set_up = x->hdr != NULL;
    }
    curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, x->body);
    x->release = release;
    if (ctl_fast_usable(c, kind, i, x->body)) ctl_fast_add(x);
    else ctl_pool_enqueue(x);
}

/* queue PUT /v1/caps of one kind to every agent that is up (lock held):
 * X_PUT the allocation (alloc_cap_w; release: hand back), X_TRIGGER the
 * trigger's caps (trig_cap_w); the number queued */
size_t ctl_push_queue(ctl *c, int kind, int release)
{
    ctl_pool *P = c->io.pool;
    size_t *start, *idx, added = 0;
    /* failover: only a leader before its cutoff starts a push (ctl_failover.h) */
    if (!ctl_failover_may_push(c)) return 0;
    if (agent_jobs(c, &start, &idx)) {
        ctl_log(c, "error: out of memory: no caps pushed");
        return 0;
    }
    static pfi_caps_request rq; /* 35 kB, zeroed once; only the loop's thread is here */
    char host[64];
    host_name(host);
    double now = pfi_clock_now();
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *a = &c->io.agent[i];
        if (!a->up || (release && !a->pushed)) continue;
        fill_head(c, host, a, release, &rq); /* not the whole 35 kB: 12,500 agents */
        rq.njobs = 0;
        if (!release) fill_caps(c, i, kind, start, idx, &rq);
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
        queue_put(c, kind, i, release);
        added++;
    }
    free(start), free(idx);
    return added;
}

char *ctl_push_caps_json(ctl *c)
{
    size_t *start, *idx;
    if (agent_jobs(c, &start, &idx)) return NULL;
    static pfi_caps_request rq; /* only the loop's thread is here */
    json_t *o = json_object();
    for (size_t i = 0; o && i < c->io.nagents; i++) {
        if (!fill_caps(c, i, X_PUT, start, idx, &rq)) continue;
        json_t *a = json_array();
        for (size_t q = 0; a && q < rq.njobs; q++)
            json_array_append_new(a, json_pack("[sf]", rq.jobs[q].job_id, rq.jobs[q].cap_w));
        if (!a || json_object_set_new(o, c->io.agent[i].name, a)) {
            json_decref(o);
            o = NULL;
        }
    }
    free(start), free(idx);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return s;
}

size_t ctl_push_committed(ctl *c, json_t *caps)
{
    ctl_pool *P = c->io.pool;
    size_t added = 0;
    if (!json_is_object(caps) || ctl_pool_ensure(c, c->io.nagents)) return 0;
    ctl_fast_new_base(P);
    pthread_mutex_lock(&c->mu);
    if (!ctl_failover_may_push(c)) {
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    static pfi_caps_request rq; /* only the loop's thread is here */
    char host[64];
    host_name(host);
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *a = &c->io.agent[i];
        json_t *jobs = json_object_get(caps, a->name); /* a hash lookup */
        if (!json_is_array(jobs)) continue;
        xfer *x = &P->x[X_PUT][i];
        if (x->queued || x->running) continue;
        fill_head(c, host, a, 0, &rq);
        rq.njobs = 0;
        size_t k;
        json_t *e;
        json_array_foreach(jobs, k, e)
        {
            const char *id = json_string_value(json_array_get(e, 0));
            double cap = json_number_value(json_array_get(e, 1));
            if (!id || !(cap > 0) || rq.njobs >= PFI_CAPS_MAX_ENTRIES) continue;
            snprintf(rq.jobs[rq.njobs].job_id, sizeof rq.jobs[0].job_id, "%s", id);
            rq.jobs[rq.njobs].index = -1;
            rq.jobs[rq.njobs++].cap_w = cap;
        }
        if (!rq.njobs) continue;
        free(x->body);
        x->body = pfi_caps_request_format(&rq);
        if (!x->body) continue;
        a->up = 1; /* not polled yet: tried; no answer marks it down */
        queue_put(c, X_PUT, i, 0);
        added++;
    }
    pthread_mutex_unlock(&c->mu);
    if (added) ctl_pool_run_until(c, X_PUT);
    return added;
}

/* the trigger waiting (c->trigger_req): its PUTs join the transfers now */
void ctl_push_take_trigger(ctl *c)
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
    ctl_fast_new_base(P);
    c->trigger_fast = 0;
    size_t n0 = P->ft_n;
    c->trigger_agents = ctl_push_queue(c, X_TRIGGER, 0);
    /* its datagrams go out before a period's view requests not sent yet */
    for (size_t k = n0, t = P->ft_send; k < P->ft_n && P->n; k++, t++) {
        size_t cap = X_KINDS * P->n, *a = &P->ft_list[k % cap], *b = &P->ft_list[t % cap], q = *a;
        *a = *b, *b = q;
        ctl_fast_repos(P, k, t), ctl_fast_repos(P, t, k); /* the entries now at t and k */
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
void ctl_push_result(ctl *c, xfer *x, double now, int answered, long code, const char *why,
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

void ctl_push_done(ctl *c, xfer *x, double now)
{
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    ctl_push_result(c, x, now, x->res == CURLE_OK, code, curl_easy_strerror(x->res), x->buf.p);
}

void ctl_agents_push(ctl *c, int release)
{
    ctl_pool *P = c->io.pool;
    if (ctl_pool_ensure(c, c->io.nagents)) return;
    ctl_fast_new_base(P); /* the caps' datagrams carry seqs above the views' */
    pthread_mutex_lock(&c->mu);
    size_t added = ctl_push_queue(c, X_PUT, release);
    pthread_mutex_unlock(&c->mu);
    if (added) ctl_pool_run_until(c, X_PUT);
}
