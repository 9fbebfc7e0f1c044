/* agent_caps.c — setting and restoring caps (agent.h, docs/agent.md).
 * Baselines are the GPU layer's saved caps (gpu.h: pfi_gpu_save writes
 * them ahead, pfi_gpu_restore_caps puts them back), kept in the lease
 * state and its file; the lease rules are lease.c's.
 *
 * A PUT is the complete desired state of the node: listed GPUs (by UUID,
 * index, or through a job) get their cap; unlisted GPUs return to their
 * baseline. Everything is validated before anything is changed. The
 * changed GPUs are set at once (pfi_gpu_set_caps: one thread per GPU with
 * NVML) and the answer waits for all of them; if the device refuses any,
 * the GPUs that took their cap are put back and the request fails (503),
 * so a PUT applies entirely or not at all — over the GPUs that are
 * available: an unavailable one (lost, no permission, a read that failed,
 * a limit that cannot be read, or one that stops answering during this
 * request: a call past --gpu-call-timeout, gpu.h) is left as it is and
 * listed under "skipped" in the answer; one that became unavailable
 * during the set stays in the state file with the cap asked, so its
 * baseline is restored once it answers again. A cap above a GPU's ceiling (its baseline:
 * agent_baseline.c) is clamped to it and listed under "clamped". */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "caps_request.h"
#include "clock.h"

static char *err_json(const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* the GPU's cap right now (its management limit alone), NaN when it
 * cannot be read: never the default limit in its place */
static double current_cap(agent *a, size_t i)
{
    double c = NAN;
    if (!agent_gpu_usable(a, i) || pfi_gpu_cap_now(a->gpu, i, 0, &c, NULL)) return NAN;
    return c;
}

/* the state file as the GPU layer writes it: the lease with its GPUs */
static pfi_status store_state(const pfi_gpu_state_file *f, pfi_error *err)
{
    agent *a = f->ud;
    snprintf(a->lease.boot_id, sizeof a->lease.boot_id, "%s", a->boot_id);
    return pfi_lease_save(&a->lease, f->path, err);
}

static pfi_status load_lease(const pfi_gpu_state_file *f, int *found, pfi_error *err)
{
    return pfi_lease_load(f->path, &((agent *)f->ud)->lease, found, err);
}

static void state_file_init(agent *a)
{
    if (a->sf.store) return; /* once */
    pfi_gpu_state_file_init(&a->sf, a->cfg.state_file, a->lease.gpu, &a->lease.n,
                            PFI_LEASE_MAX_GPUS);
    a->sf.load = load_lease;
    a->sf.store = store_state;
    a->sf.ud = a;
    a->sf.keep = 1;             /* it also keeps generation_max and the lease */
    a->sf.fallback_default = 0; /* a cap NVML cannot read: that GPU is not capped */
}

/* Quiet by default (docs/agent.md, "Logging"): each GPU's change is a
 * debug line; at info, one line for the first request that changes caps
 * and then at most one every CAPS_LOG_S, counting the requests and GPUs
 * since and the range of caps set: a steady event on an 8-GPU node logs a
 * handful of lines a minute, not one per GPU per period. */
#define CAPS_LOG_S 15.0
static void caps_log(agent *a, size_t nd, const double *target, const size_t *done,
                     const char *controller, long long generation)
{
    if (!nd) return;
    if (!a->caps_log_req) a->caps_log_lo_w = INFINITY, a->caps_log_hi_w = -INFINITY;
    a->caps_log_req++;
    a->caps_log_gpus += (unsigned)nd;
    for (size_t q = 0; q < nd; q++) {
        a->caps_log_lo_w = fmin(a->caps_log_lo_w, target[done[q]]);
        a->caps_log_hi_w = fmax(a->caps_log_hi_w, target[done[q]]);
    }
    double now = pfi_wall_monotonic();
    if (a->caps_log_t > 0 && now - a->caps_log_t < CAPS_LOG_S) return;
    agent_log(a,
              "caps: %u request%s set %u GPU cap%s, %.0f..%.0f W%s (controller %s, generation "
              "%lld)",
              a->caps_log_req, a->caps_log_req == 1 ? "" : "s", a->caps_log_gpus,
              a->caps_log_gpus == 1 ? "" : "s", a->caps_log_lo_w, a->caps_log_hi_w,
              a->caps_log_t > 0 ? " since the last such line" : "", controller, generation);
    a->caps_log_t = now;
    a->caps_log_req = a->caps_log_gpus = 0;
}

/* a request refused before anything changed: its answer, counted */
static int reject(agent *a, char **resp, const char *msg, int code)
{
    *resp = err_json(msg);
    a->rejected++;
    return code;
}

/* one PUT's caps, GPU by GPU (index i), and the GPUs it changes */
typedef struct caps_plan {
    double want[AGENT_MAX_GPUS];  /* the cap to set; NaN: not listed, back to its baseline */
    double asked[AGENT_MAX_GPUS]; /* the cap asked where it was clamped, else NaN */
    double cur[AGENT_MAX_GPUS];   /* its cap now; NaN: not capped (skip) */
    double target[AGENT_MAX_GPUS];
    int skip[AGENT_MAX_GPUS], nskip, nclamp;
    size_t idx[AGENT_MAX_GPUS], nch; /* the GPUs whose cap changes */
    size_t done[AGENT_MAX_GPUS], nd; /* those the device set */
} caps_plan;

/* the cap the request asks for each GPU (p->want): GPUs by UUID or index,
 * the GPUs of each job, each within its device's range; 0, or the
 * answer's HTTP code */
static int requested_caps(agent *a, const pfi_caps_request *rq, caps_plan *p, char **resp)
{
    char msg[600];
    double *want = p->want;
    for (size_t i = 0; i < a->n; i++) want[i] = p->asked[i] = NAN;
    for (size_t k = 0; k < rq->ngpus; k++) {
        const pfi_caps_entry *x = &rq->gpus[k];
        long i = -1;
        if (x->uuid[0]) {
            for (size_t q = 0; q < a->n; q++)
                if (!strcmp(a->g[q].info.uuid, x->uuid)) i = (long)q;
        } else if (x->index >= 0 && (size_t)x->index < a->n) {
            i = x->index;
        }
        if (i < 0) {
            snprintf(msg, sizeof msg, "gpus[%zu]: no GPU %s%s on this node", k,
                     x->uuid[0] ? "with UUID " : "with index ", x->uuid[0] ? x->uuid : "");
            if (!x->uuid[0])
                snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%ld (%zu GPUs)", x->index,
                         a->n);
            return reject(a, resp, msg, 422);
        }
        if (!isnan(want[i])) {
            snprintf(msg, sizeof msg, "gpus[%zu]: GPU %ld is listed twice", k, i);
            return reject(a, resp, msg, 422);
        }
        want[i] = x->cap_w;
    }
    for (size_t k = 0; k < rq->njobs; k++) {
        size_t idx[AGENT_MAX_GPUS];
        int m = agent_job_gpus(a, rq->jobs[k].job_id, idx, AGENT_MAX_GPUS);
        if (m <= 0) {
            snprintf(msg, sizeof msg, "jobs[%zu].job_id: no job '%s' on this node", k,
                     rq->jobs[k].job_id);
            return reject(a, resp, msg, 422);
        }
        for (int q = 0; q < m; q++) {
            if (!isnan(want[idx[q]]) && fabs(want[idx[q]] - rq->jobs[k].cap_w) > 1e-9) {
                snprintf(msg, sizeof msg,
                         "jobs[%zu]: GPU %zu of job %s already has a different cap in this request",
                         k, idx[q], rq->jobs[k].job_id);
                return reject(a, resp, msg, 422);
            }
            want[idx[q]] = rq->jobs[k].cap_w;
        }
    }
    for (size_t i = 0; i < a->n; i++) {
        const pfi_gpu_info *in = &a->g[i].info;
        if (!agent_gpu_usable(a, i)) continue; /* skipped, below */
        if (!isnan(want[i]) &&
            !(want[i] >= in->cap_min_w - 1e-9 && want[i] <= in->cap_max_w + 1e-9)) {
            snprintf(msg, sizeof msg, "GPU %zu (%s): cap %g W outside the device's %g..%g W", i,
                     in->uuid, want[i], in->cap_min_w, in->cap_max_w);
            return reject(a, resp, msg, 422);
        }
    }
    return 0;
}

/* what the request changes: each GPU's cap now (NaN: skipped), its target
 * (the cap asked, clamped to its ceiling, or back to its baseline when not
 * listed) and the GPUs whose cap changes; the lease's GPUs take their new
 * caps */
static void plan_caps(agent *a, caps_plan *p)
{
    double *want = p->want, *cur = p->cur, *target = p->target;
    p->nch = 0, p->nskip = 0, p->nclamp = 0, p->nd = 0;
    for (size_t i = 0; i < a->n; i++) {
        p->skip[i] = 0;
        /* NaN: unavailable, its limit unreadable, or MIG enabled: not capped */
        cur[i] = agent_gpu_not_capped(a, i) ? NAN : current_cap(a, i);
        if (isnan(cur[i])) { /* unavailable, or its limit unreadable: not capped */
            p->skip[i] = 1;
            p->nskip++;
            if (!isnan(want[i]) && agent_gpu_usable(a, i))
                agent_log(a, "error: GPU %zu %s: its power limit cannot be read: not capped", i,
                          a->g[i].info.uuid);
            continue;
        }
        /* the ceiling: never above the limit the GPU had before pfi touched it */
        double ceil_w = agent_gpu_ceiling(a, i);
        if (!isnan(want[i]) && isfinite(ceil_w) && want[i] > ceil_w + 0.5) {
            p->asked[i] = want[i];
            want[i] = fmax(ceil_w, a->g[i].info.cap_min_w);
            p->nclamp++;
        }
        pfi_lease_gpu *lg = pfi_lease_gpu_get(&a->lease, a->g[i].info.uuid);
        if (!lg) continue;
        target[i] = !isnan(want[i]) ? want[i] : lg->changed ? lg->baseline_w : cur[i];
        if (fabs(target[i] - cur[i]) < 0.5) {
            if (!isnan(want[i]) && lg->changed) lg->cap_w = target[i];
            continue;
        }
        p->idx[p->nch++] = i;
        lg->cap_w = target[i];
    }
}

/* every changed GPU at once (one thread per GPU with NVML: gpu.h),
 * returning only once all of them are set or failed; the position in
 * p->idx of the first GPU (by index) the device refused, with its error in
 * *fe, or -1 */
static long set_caps(agent *a, caps_plan *p, const pfi_caps_request *rq, pfi_error *fe)
{
    double tw[AGENT_MAX_GPUS];
    pfi_status src[AGENT_MAX_GPUS];
    pfi_error serr[AGENT_MAX_GPUS];
    for (size_t k = 0; k < p->nch; k++) tw[k] = p->target[p->idx[k]];
    pfi_gpu_set_caps(a->gpu, p->idx, tw, p->nch, src, serr);
    long failed = -1;
    for (size_t k = 0; k < p->nch; k++) a->g[p->idx[k]].cap_gen++; /* older samples show no drift */
    for (size_t k = 0; k < p->nch; k++) {
        size_t i = p->idx[k];
        pfi_gpu_avail av = src[k] ? pfi_gpu_avail_get(a->gpu, i) : PFI_GPU_OK;
        if (av != PFI_GPU_OK) { /* unavailable now (timeout, lost): skipped, not refused */
            a->g[i].avail = av;
            p->skip[i] = 1;
            p->nskip++;
            agent_log(a,
                      "error: GPU %zu %s: setting %g W failed (%s): it is unavailable (%s), "
                      "skipped; its saved cap stays in the state file until it answers again",
                      i, a->g[i].info.uuid, p->target[i], serr[k].msg, pfi_gpu_avail_name(av));
            continue;
        }
        if (src[k]) {
            agent_log(a, "error: GPU %zu: setting %g W failed (%s); undoing this request", i,
                      p->target[i], serr[k].msg);
            if (failed < 0) failed = (long)k, *fe = serr[k];
            continue;
        }
        p->done[p->nd++] = i;
        a->cap_changes++;
        agent_log(a, "debug: GPU %zu %s: cap %.0f -> %.0f W (controller %s, generation %lld%s)", i,
                  a->g[i].info.uuid, p->cur[i], p->target[i], rq->controller, rq->generation,
                  isnan(p->want[i]) ? ", back to baseline" : "");
    }
    return failed;
}

/* the device refused a GPU's cap: every GPU that took its cap goes back to
 * the cap it had (at once too), and the lease and its file to what they
 * were; frees prev; the answer's HTTP code */
static int undo_caps(agent *a, const caps_plan *p, pfi_lease_state *prev, size_t failed_gpu,
                     const pfi_error *fe, char **resp)
{
    double back[AGENT_MAX_GPUS];
    pfi_status brc[AGENT_MAX_GPUS];
    pfi_error berr[AGENT_MAX_GPUS];
    for (size_t q = 0; q < p->nd; q++) back[q] = p->cur[p->done[q]];
    pfi_gpu_set_caps(a->gpu, p->done, back, p->nd, brc, berr);
    int stuck = 0;
    for (size_t q = 0; q < p->nd; q++)
        if (brc[q]) {
            agent_log(a, "error: GPU %zu: undo failed: %s", p->done[q], berr[q].msg);
            stuck = 1;
        }
    /* a GPU the undo could not put back keeps its baseline in the
     * saved state (restored when the lease ends) */
    if (!stuck) {
        a->lease = *prev;
        agent_save_state(a);
    }
    free(prev);
    char msg[600];
    snprintf(msg, sizeof msg, "GPU %zu: %s", failed_gpu, fe->msg);
    *resp = err_json(msg);
    return fe->code == PFI_ERANGE ? 422 : 503;
}

/* GPUs now at their baseline are forgotten (if this save fails the file
 * only lists them at their baseline: harmless) */
static void forget_baselines(agent *a)
{
    int forgot = 0;
    for (size_t k = 0; k < a->lease.n; k++) {
        pfi_lease_gpu *lg = &a->lease.gpu[k];
        if (lg->changed && fabs(lg->cap_w - lg->baseline_w) < 0.5) lg->changed = 0, forgot = 1;
    }
    if (forgot) agent_save_state(a);
}

/* the request's log lines: the caps set, the lease taken over or granted,
 * the caps clamped to their ceiling */
static void log_put(agent *a, const caps_plan *p, const pfi_caps_request *rq,
                    const pfi_lease_state *prev, int renewed, int taken_over)
{
    caps_log(a, p->nd, p->target, p->done, rq->controller, rq->generation);
    if (taken_over)
        agent_log(a, "lease taken over: controller %s generation %lld replaces %s generation %lld",
                  rq->controller, rq->generation, prev->controller, prev->generation);
    if (!renewed)
        agent_log(a, "lease granted: controller %s generation %lld for %g s", rq->controller,
                  rq->generation, rq->lease_s);
    if (p->nclamp) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < a->n; i++)
            if (!isnan(p->asked[i])) lo = fmin(lo, p->want[i]), hi = fmax(hi, p->asked[i]);
        agent_log(a,
                  "warning: %d GPUs' caps clamped to their ceiling (the limit they had before pfi, "
                  "down to %.0f W; asked up to %.0f W) (controller %s, generation %lld)",
                  p->nclamp, lo, hi, rq->controller, rq->generation);
    }
}

/* the answer: each GPU capped, with its cap and baseline; the GPUs skipped
 * and the caps clamped, when there are */
static char *put_answer(agent *a, const caps_plan *p, const pfi_caps_request *rq, double now)
{
    json_t *sk = json_array(), *cl = json_array();
    for (size_t i = 0; i < a->n; i++) {
        if (p->skip[i])
            json_array_append_new(sk, json_pack("{s:I,s:s,s:s}", "index", (json_int_t)i, "uuid",
                                                a->g[i].info.uuid, "state",
                                                !agent_gpu_usable(a, i) ? agent_gpu_state(a, i)
                                                : agent_gpu_not_capped(a, i)
                                                    ? agent_gpu_not_capped(a, i)
                                                    : agent_gpu_state(a, i)));
        else if (!isnan(p->asked[i]))
            json_array_append_new(cl, json_pack("{s:I,s:s,s:f,s:f}", "index", (json_int_t)i, "uuid",
                                                a->g[i].info.uuid, "requested_w", p->asked[i],
                                                "cap_w", p->want[i]));
    }
    json_t *g = json_array();
    for (size_t i = 0; i < a->n; i++) {
        if (p->skip[i]) continue;
        pfi_lease_gpu *lg = pfi_lease_gpu_get(&a->lease, a->g[i].info.uuid);
        json_t *x = json_pack("{s:I,s:s,s:f}", "index", (json_int_t)i, "uuid", a->g[i].info.uuid,
                              "cap_w", lg && lg->changed ? lg->cap_w : current_cap(a, i));
        if (lg && lg->changed) json_object_set_new(x, "baseline_w", json_real(lg->baseline_w));
        json_array_append_new(g, x);
    }
    json_t *o =
        json_pack("{s:b,s:s,s:I,s:f,s:f,s:o}", "ok", 1, "controller", rq->controller, "generation",
                  (json_int_t)rq->generation, "lease_expires_at", a->lease.expires_at,
                  "lease_expires_in_s", a->lease.expires_mono - now, "gpus", g);
    if (p->nskip) json_object_set_new(o, "skipped", sk);
    else json_decref(sk);
    if (p->nclamp) json_object_set_new(o, "clamped", cl);
    else json_decref(cl);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

int agent_put_caps(agent *a, const char *body, size_t len, char **resp)
{
    pfi_caps_request rq;
    pfi_error e;
    char msg[600];
    if (pfi_caps_request_parse(body, len, &rq, &e)) return reject(a, resp, e.msg, 400);
    if (rq.lease_s > a->cfg.max_lease_s) {
        snprintf(msg, sizeof msg,
                 "lease_s: %g s is longer than this agent allows (%g s, --max-lease)", rq.lease_s,
                 a->cfg.max_lease_s);
        return reject(a, resp, msg, 400);
    }
    double now = pfi_clock_mono(); /* leases run on the monotonic clock (lease.h) */
    state_file_init(a);
    pfi_error why;
    pfi_lease_verdict v = pfi_lease_admit(&a->lease, rq.controller, rq.generation, now, &why);
    if (v != PFI_LEASE_ADMIT) {
        agent_log(a, "rejected caps from controller %s generation %lld: %s", rq.controller,
                  rq.generation, why.msg);
        return reject(a, resp, why.msg, v == PFI_LEASE_TOO_FAR ? 400 : 409);
    }
    caps_plan p;
    int code = requested_caps(a, &rq, &p, resp);
    if (code) return code;
    /* Write ahead: the state after this request (baselines of the GPUs about
     * to change, their new caps, the lease) is saved before any device is
     * touched; if it cannot be saved nothing changes (503). A GPU going back
     * to its baseline stays listed until it is there. */
    pfi_lease_state *prev = malloc(sizeof *prev);
    if (!prev) {
        *resp = err_json("out of memory");
        return 503;
    }
    *prev = a->lease;
    plan_caps(a, &p);
    int renewed = a->lease.active && !strcmp(a->lease.controller, rq.controller) &&
                  a->lease.generation == rq.generation;
    int taken_over = a->lease.active && !renewed && pfi_lease_live(&a->lease, now);
    pfi_lease_grant(&a->lease, rq.controller, rq.generation, rq.lease_s, now);
    /* the baselines of the GPUs about to change (the caps found now) are
       saved, and the file written, before any device is touched */
    if (pfi_gpu_save(a->gpu, p.idx, p.nch, &a->sf, &e)) {
        agent_log(a,
                  "error: cannot save the state file, so no cap is changed (controller %s, "
                  "generation %lld): %s",
                  rq.controller, rq.generation, e.msg);
        a->lease = *prev;
        free(prev);
        snprintf(msg, sizeof msg, "cannot save the agent's state file, so no cap was changed: %s",
                 e.msg);
        *resp = err_json(msg);
        return 503;
    }
    long failed = set_caps(a, &p, &rq, &e);
    if (failed >= 0) return undo_caps(a, &p, prev, p.idx[failed], &e, resp);
    forget_baselines(a);
    log_put(a, &p, &rq, prev, renewed, taken_over);
    free(prev);
    *resp = put_answer(a, &p, &rq, now);
    return 200;
}

static long gpu_index(agent *a, const char *uuid)
{
    for (size_t q = 0; q < a->n; q++)
        if (!strcmp(a->g[q].info.uuid, uuid)) return (long)q;
    return -1;
}

/* a restore's events, as the agent logs them */
typedef struct restore_ctx {
    agent *a;
    const char *why;
    double delay_s;
    int any, failed, nrestored;
} restore_ctx;

static void on_restored(void *ud, size_t k, const pfi_saved_cap *lg, long i, double from_w)
{
    restore_ctx *x = ud;
    if (k < PFI_LEASE_MAX_GPUS) x->a->restore_logged[k] = 0;
    if (i >= 0 && (size_t)i < x->a->n) x->a->g[i].cap_gen++; /* older samples show no drift */
    agent_log(x->a, "debug: GPU %ld %s: cap %.0f -> %.0f W (baseline restored: %s)", i, lg->uuid,
              from_w, lg->baseline_w, x->why);
    x->nrestored++;
    x->a->cap_changes++;
    x->any = 1;
}

static void on_failed(void *ud, size_t k, const pfi_saved_cap *lg, long i, const pfi_error *e)
{
    restore_ctx *x = ud;
    int all = pfi_gpu_all_available(x->a->gpu);
    /* only a change is logged: a GPU lost for hours is not a line every 30 s */
    int logged = k < PFI_LEASE_MAX_GPUS && x->a->restore_logged[k];
    if (k < PFI_LEASE_MAX_GPUS) x->a->restore_logged[k] = 1;
    if (i < 0 && all) {
        agent_log(x->a,
                  "warning: GPU %s of the state file is not on this node (every GPU enumerates, "
                  "none has its UUID); forgetting its baseline",
                  lg->uuid);
        return;
    }
    x->failed = 1;
    if (logged) return;
    if (i < 0)
        agent_log(x->a,
                  "error: GPU %s (baseline %g W) is not available now (a GPU of this node is "
                  "unavailable): its baseline is kept and restored once it is found again",
                  lg->uuid, lg->baseline_w);
    else
        agent_log(x->a, "error: GPU %ld: restoring %g W failed: %s (retried with back-off)", i,
                  lg->baseline_w, e->msg);
}

void agent_restore(agent *a, const char *why)
{
    state_file_init(a);
    /* a failure is retried with a back-off (0.1 s doubling to 30 s), not every 50 ms */
    restore_ctx x = {a, why, a->restore_delay_s > 0 ? fmin(2 * a->restore_delay_s, 30) : 0.1,
                     0, 0,   0};
    pfi_gpu_restore_report r = {.restored = on_restored, .failed = on_failed, .ud = &x};
    int pending = pfi_gpu_restore_caps(a->gpu, &a->sf.saved, 0, 1, &r) > 0;
    if (x.nrestored)
        agent_log(a, "baselines restored on %d GPU%s (%s)", x.nrestored,
                  x.nrestored == 1 ? "" : "s", why);
    a->restore_delay_s = x.failed ? x.delay_s : 0;
    if (x.failed) a->restore_retry_at_s = pfi_wall_monotonic() + x.delay_s;
    if (!pending) a->lease.active = 0;
    if (x.any || !pending) agent_save_state(a);
}

void agent_check_lease(agent *a)
{
    double now = pfi_clock_mono();
    if (a->save_pending &&
        pfi_wall_monotonic() >= a->save_retry_at_s) { /* the agent's own file only; once a second */
        a->save_retry_at_s = pfi_wall_monotonic() + 1;
        agent_save_state(a);
    }
    int pending = 0;
    for (size_t k = 0; k < a->lease.n; k++) pending |= a->lease.gpu[k].changed;
    if (a->lease.active && now >= a->lease.expires_mono) {
        agent_log(a, "lease of controller %s generation %lld expired", a->lease.controller,
                  a->lease.generation);
        a->lease.active = 0;
        agent_restore(a, "lease expired");
    } else if (!a->lease.active && pending && pfi_wall_monotonic() >= a->restore_retry_at_s) {
        agent_restore(a, "no lease");
    }
}

/* Baselines and caps from the file that this node's devices cannot take
 * (a hand edit, another GPU model) are replaced by the device default. */
static void on_out_of_range(void *ud, size_t k, const pfi_saved_cap *lg, long i,
                            const pfi_gpu_info *in, const char *which, double v, double repl)
{
    agent *a = ud;
    if (!strcmp(which, "baseline_w"))
        agent_log(a,
                  "warning: %s: GPU %ld %s: baseline_w %g W is outside the device's %g..%g W; "
                  "using its default limit %g W",
                  a->cfg.state_file, i, lg->uuid, v, in->cap_min_w, in->cap_max_w, repl);
    else
        agent_log(a,
                  "warning: %s: GPU %ld %s: cap_w %g W is outside the device's %g..%g W; restoring "
                  "its baseline",
                  a->cfg.state_file, i, lg->uuid, v, in->cap_min_w, in->cap_max_w);
}

/* The state file, or (corrupt: baselines unknown) every GPU's device
 * default as its baseline. Returns 1 when the file was corrupt. */
static int load_state(agent *a, int *found)
{
    pfi_error e;
    state_file_init(a);
    if (!a->sf.load(&a->sf, found, &e)) {
        pfi_gpu_restore_report r = {.out_of_range = on_out_of_range, .ud = a};
        if (*found) pfi_gpu_check_saved(a->gpu, &a->sf.saved, &r);
        return 0;
    }
    agent_log(a,
              "warning: state file %s is unreadable or corrupt (%s): the GPUs' baselines are "
              "unknown, so every GPU goes back to "
              "its device default limit; the file is kept as %s.corrupt",
              a->cfg.state_file, e.msg, a->cfg.state_file);
    char keep[4200];
    snprintf(keep, sizeof keep, "%s.corrupt", a->cfg.state_file);
    if (rename(a->cfg.state_file, keep) != 0)
        agent_log(a, "warning: %s: cannot rename it to %s: %s", a->cfg.state_file, keep,
                  strerror(errno));
    pfi_lease_init(&a->lease);
    pfi_gpu_saved_defaults(
        a->gpu, 1, &a->sf.saved); /* GPUs not at their default: the default is their baseline */
    /* ... unless the baselines file (agent_baseline.c), which no crash can
       corrupt, knows the admin's own limit */
    for (size_t k = 0; k < a->lease.n; k++) {
        pfi_lease_gpu *lg = &a->lease.gpu[k];
        long i = gpu_index(a, lg->uuid);
        double known = agent_baseline_known(a, lg->uuid);
        if (!lg->changed || i < 0) continue;
        const pfi_gpu_info *in = &a->g[i].info;
        if (isfinite(known) && known >= in->cap_min_w - 1e-9 && known <= in->cap_max_w + 1e-9) {
            agent_log(a, "GPU %ld %s: its baseline %.0f W from %s.baselines (the admin's limit)", i,
                      lg->uuid, known, a->cfg.state_file);
            lg->baseline_w = known;
        } else {
            agent_log(a,
                      "error: GPU %ld %s: no trusted baseline (state file corrupt, none in "
                      "%s.baselines): it goes back to its default limit %.0f W",
                      i, lg->uuid, a->cfg.state_file, lg->baseline_w);
        }
    }
    agent_save_state(a); /* the device defaults are the baselines from now on, also after a crash */
    *found = 1;
    return 1;
}

/* Without a live lease: a saved GPU whose limit is no longer the cap pfi
 * set was changed by someone else since (a reset, an admin, the boot): it
 * is forgotten, not restored over their limit. */
static void forget_changed_since(agent *a)
{
    for (size_t k = 0; k < a->lease.n; k++) {
        pfi_lease_gpu *lg = &a->lease.gpu[k];
        long i = gpu_index(a, lg->uuid);
        if (!lg->changed || i < 0 || !isfinite(lg->cap_w)) continue;
        double now_w = current_cap(a, (size_t)i);
        if (!isfinite(now_w) || fabs(now_w - lg->cap_w) < 1.0) continue;
        agent_log(a,
                  "GPU %ld %s: its limit %.0f W is not the cap pfi set (%.0f W): changed since by "
                  "someone else; not restored to %.0f W, forgotten",
                  i, lg->uuid, now_w, lg->cap_w, lg->baseline_w);
        lg->changed = 0;
    }
}

int agent_startup_state(agent *a)
{
    int found;
    agent_read_boot_id(a);
    agent_baselines_load(a);
    int corrupt = load_state(a, &found);
    if (!found) {
        agent_baselines_first_sight(a);
        /* no state file: the limits in force are the baselines (an admin's own limits are kept) */
        if (agent_save_state(a))
            agent_log(
                a,
                "warning: every PUT /v1/caps is refused (503) until the state file can be written");
        return 0;
    }
    if (!corrupt && agent_dropped_after_reboot(a)) {
        agent_baselines_first_sight(a);
        agent_save_state(a);
        return 0;
    }
    agent_baselines_first_sight(a); /* GPUs on which no cap is held */
    double now = pfi_clock_mono();
    pfi_lease_mono_from_wall(&a->lease, pfi_clock_now(), now);
    if (a->lease.active && a->lease.expires_mono - now > a->cfg.max_lease_s) {
        /* longer than any lease we grant: written before a wall-clock step
           (or by hand); honouring it could hold caps for hours */
        agent_log(a,
                  "state file: the lease of controller %s generation %lld ends in %.0f s, more "
                  "than --max-lease %g s; dropped",
                  a->lease.controller, a->lease.generation, a->lease.expires_mono - now,
                  a->cfg.max_lease_s);
        a->lease.active = 0;
    }
    if (!corrupt && pfi_lease_live(&a->lease, now)) {
        agent_log(a,
                  "state file: lease of controller %s generation %lld still live for %.0f s; "
                  "honouring it",
                  a->lease.controller, a->lease.generation, a->lease.expires_mono - now);
        for (size_t k = 0; k < a->lease.n; k++) {
            pfi_lease_gpu *lg = &a->lease.gpu[k];
            long i = gpu_index(a, lg->uuid);
            pfi_error e;
            if (!lg->changed || i < 0) continue;
            a->g[i].cap_gen++;
            if (fabs(current_cap(a, (size_t)i) - lg->cap_w) >= 0.5 &&
                pfi_gpu_set_cap(a->gpu, (size_t)i, lg->cap_w, &e))
                agent_log(a, "error: GPU %ld: re-applying %g W failed: %s", i, lg->cap_w, e.msg);
        }
        if (!a->lease.boot_id[0]) agent_save_state(a); /* an older file: now with the boot id */
        return 0;
    }
    if (a->lease.active)
        agent_log(a, "state file: the lease of controller %s generation %lld has expired",
                  a->lease.controller, a->lease.generation);
    a->lease.active = 0;
    if (!corrupt) forget_changed_since(a);
    agent_restore(a, corrupt ? "corrupt state file" : "start-up without a live lease");
    agent_baselines_first_sight(a);
    return 0;
}

void agent_probe_write_path(agent *a)
{
    size_t tried = 0, refused = 0;
    a->write_path = 1;
    a->write_path_error[0] = '\0';
    for (size_t i = 0; i < a->n; i++) {
        agent_gpu *g = &a->g[i];
        g->write_refused = 0;
        double cap = agent_gpu_not_capped(a, i) ? NAN : current_cap(a, i); /* never capped */
        if (!isfinite(cap)) continue;
        pfi_error e;
        tried++;
        if (pfi_gpu_set_cap(a->gpu, i, cap, &e) == PFI_OK) continue;
        g->write_refused = 1;
        if (!refused++)
            snprintf(a->write_path_error, sizeof a->write_path_error, "GPU %zu: %s", i, e.msg);
    }
    if (!refused) {
        if (tried)
            agent_log(a, "write path: each GPU's limit written back unchanged (%zu GPU%s)", tried,
                      tried == 1 ? "" : "s");
        return;
    }
    a->write_path = 0;
    agent_log(a,
              "error: write path refused on %zu of %zu GPUs (%s): caps cannot be set, a grid "
              "event gets 503. Setting a limit needs CAP_SYS_ADMIN (the agent has: %s) and the "
              "device nodes /dev/nvidiactl and /dev/nvidiaN (the unit's DeviceAllow=char-nvidia*, "
              "resolved when the unit starts: start it after the driver created them)",
              refused, tried, a->write_path_error, a->privs);
}

int agent_restore_pending(const agent *a)
{
    for (size_t k = 0; k < a->lease.n; k++)
        if (a->lease.gpu[k].changed) return 1;
    return 0;
}

int agent_restore_and_exit(agent *a)
{
    int found;
    agent_read_boot_id(a);
    agent_baselines_load(a);
    int corrupt = load_state(a, &found);
    if (found && !corrupt && agent_dropped_after_reboot(a)) {
        agent_log(a, "--restore-and-exit: nothing to restore in this boot");
        return agent_save_state(a) ? 1 : 0;
    }
    if (!found) {
        agent_log(a,
                  "--restore-and-exit: no state file %s: no cap was changed by the agent; nothing "
                  "to restore",
                  a->cfg.state_file);
        return 0;
    }
    if (a->lease.active)
        agent_log(a, "--restore-and-exit: ending the lease of controller %s generation %lld",
                  a->lease.controller, a->lease.generation);
    a->lease.active = 0;
    agent_restore(a, corrupt ? "--restore-and-exit, corrupt state file: device default"
                             : "--restore-and-exit");
    if (agent_restore_pending(a)) {
        char names[2048] = "";
        size_t m = 0;
        for (size_t k = 0; k < a->lease.n; k++)
            if (a->lease.gpu[k].changed && m < sizeof names - 1)
                m += (size_t)snprintf(names + m, sizeof names - m, "%s%s (baseline %.0f W)",
                                      m ? ", " : "", a->lease.gpu[k].uuid,
                                      a->lease.gpu[k].baseline_w);
        agent_save_state(a); /* the others are forgotten, these are kept */
        agent_log(a,
                  "error: --restore-and-exit: every other GPU is restored; not restored: %s; %s "
                  "still lists them for the next try",
                  names, a->cfg.state_file);
        return 1;
    }
    if (agent_save_state(a)) return 1;
    agent_log(a, "--restore-and-exit: every GPU is at its baseline");
    return 0;
}

/* The enforced limit is the one the GPU obeys: the lowest of ours and any
 * other (the BMC's, a power brake, another tool's). Below our cap, the GPU
 * runs at less than the controller believes it gave: logged at each change
 * (either way) and exported (agent_render.c). */
#define ENFORCED_TOL_W 1.0
void agent_check_enforced(agent *a)
{
    for (size_t i = 0; i < a->n; i++) {
        agent_gpu *g = &a->g[i];
        const pfi_gpu_sample *s = &g->last;
        if (!g->sampled || !(s->have & PFI_GS_CAP) || !(s->have & PFI_GS_ENFORCED)) continue;
        int oob = s->enforced_w < s->cap_w - ENFORCED_TOL_W;
        if (oob && !g->limit_out_of_band)
            agent_log(a,
                      "warning: GPU %zu %s: enforced power limit %.0f W is below the cap %.0f W: "
                      "a limit set out of band (BMC or another tool)",
                      i, g->info.uuid, s->enforced_w, s->cap_w);
        else if (!oob && g->limit_out_of_band)
            agent_log(a, "GPU %zu %s: enforced power limit %.0f W is back at the cap %.0f W", i,
                      g->info.uuid, s->enforced_w, s->cap_w);
        g->limit_out_of_band = oob;
    }
}
