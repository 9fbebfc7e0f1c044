/* ctl_cycle.c — one control period of pfi-controller (docs/controller.md).
 *
 *  1. Jobs from the agents' node views: a job id seen on several agents is
 *     one job across them (GPUs and power summed) only when they agree on
 *     its tier. Its tier: the agent's job file (Slurm), else the
 *     configuration's "tiers", else default_tier. The same id under two
 *     tiers is two jobs, each with its own agents, allocation and caps
 *     (logged once as a conflict): an id is no credential — where a user
 *     can choose theirs (an agent with --job-env), claiming a Flex-0 job's
 *     id must neither shelter the claimant's GPUs under tier 0 nor put the
 *     real job under the claimant's tier. Ids that are not
 *     [A-Za-z0-9._-]{1,63} are ignored (job_id.h), whatever an agent sends.
 *  2. Baselines: while no event is active, each job's power and throughput
 *     are kept for baseline_window_s; at an event's start its baseline is
 *     their mean over that window (its current reading if it has none).
 *  3. Events: start, resolve their target (a cut of the managed jobs'
 *     baseline, a GPU kW target, or a grid level), ramp, end, ramp down.
 *  4. Faults: a job on an unreachable agent cannot be steered; it is
 *     assumed to draw its last measured power until the lease we gave its
 *     agent would have expired, then its uncapped power, and that is taken
 *     out of the budget so the others are cut further. A returning agent is
 *     steered again at the next period.
 *  5. The control law (power_control.h): budget, feedback with anti-windup,
 *     learned power/cap ratios, allocation by the configured strategy, caps.
 * The lock is held; the network I/O happens around this in ctl_main.c. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_jobidx.h"
#include "job_id.h"
#include "pfi/predictor.h"
#include "power_control.h"
#include "vec.h"

ctl_event *ctl_event_find(ctl *c, const char *id)
{
    for (size_t i = 0; i < c->nevents; i++)
        if (!strcmp(c->event[i].ev.id, id)) return &c->event[i];
    return NULL;
}

double ctl_event_target_w(const ctl *c, const ctl_event *e)
{
    double cut = e->ev.kind == PFI_EV_REDUCTION ? e->ev.reduction_pct
                 : e->ev.kind == PFI_EV_LEVEL   ? c->cfg.level_cut_pct[e->ev.level]
                                                : NAN;
    return e->ev.kind == PFI_EV_TARGET_KW ? e->ev.target_kw * 1000
                                          : e->baseline_w * (1 - cut / 100);
}

/* an event's rank among overlapping ones: its priority (lower is more
   important), events without one after every prioritized one */
static long long rank(const ctl_event *e)
{
    return e->ev.has_priority ? e->ev.priority : (long long)1 << 40;
}

/* the answer to an event that is refused: the HTTP status, and the reason */
static pfi_status refuse(int *code, int http, pfi_status st, pfi_error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static pfi_status refuse(int *code, int http, pfi_status st, pfi_error *err, const char *fmt, ...)
{
    if (code) *code = http;
    va_list ap;
    va_start(ap, fmt);
    pfi_verrorf(err, st, fmt, ap);
    va_end(ap);
    return st;
}

pfi_status ctl_event_add(ctl *c, const pfi_grid_event *ev, int *code, pfi_error *err)
{
    ctl_event *old = ctl_event_find(c, ev->id);
    double now = pfi_clock_now();
    if (old && strcmp(old->status, "scheduled"))
        return refuse(code, 409, PFI_ESTATE, err, "event %s is already %s", ev->id, old->status);
    pfi_error pe;
    if (pfi_grid_event_check(
            ev, &pe)) /* events of any origin: the API, OpenADR, a schedule, pfi demo */
        return refuse(code, 400, PFI_EINVAL, err, "event %s: %s", ev->id, pe.msg);
    if (pfi_grid_event_end(ev) <= now)
        return refuse(code, 422, PFI_ERANGE, err,
                      "event %s ended before it arrived (start + duration_s is in the past)",
                      ev->id);
    if (!old && c->nevents == CTL_MAX_EVENTS) {
        /* forget the oldest finished event */
        size_t k;
        for (k = 0; k < c->nevents; k++)
            if (!strcmp(c->event[k].status, "done") || !strcmp(c->event[k].status, "cancelled"))
                break;
        if (k == c->nevents)
            return refuse(code, 503, PFI_ENOMEM, err, "too many pending events (%d)",
                          CTL_MAX_EVENTS);
        c->event[k] = c->event[--c->nevents];
    }
    ctl_event *e = old ? old : &c->event[c->nevents++];
    memset(e, 0, sizeof *e);
    e->ev = *ev;
    snprintf(e->status, sizeof e->status, "scheduled");
    e->baseline_w = e->target_w = e->reached_t = NAN;
    e->ramp_s = isnan(ev->ramp_s) ? c->cfg.ramp_s : ev->ramp_s;
    e->ramp_down_s = isnan(ev->ramp_down_s) ? c->cfg.ramp_down_s : ev->ramp_down_s;
    ctl_db_put_event(c, e);
    char dur[48];
    if (isfinite(pfi_grid_event_end(ev))) snprintf(dur, sizeof dur, "%.0f s", ev->duration_s);
    else snprintf(dur, sizeof dur, "open-ended (until cancelled)");
    ctl_log(c, "event %s (%s) %s: start %.0f s from now, %s", ev->id, ev->source,
            old ? "updated" : "received", ev->start - now, dur);
    if (ev->start <= now + c->cfg.period_s)
        c->wake = 1; /* starts now: do not wait for the next period */
    /* starts now without a ramp: the fast path pushes the planned caps at once */
    double cut = ctl_event_cut_pct(c, e);
    pfi_error te;
    if (ev->start <= now && !ev->dry_run && !c->cfg.dry_run && isfinite(cut) &&
        ctl_trigger(c, ev->id, cut, &te))
        ctl_log(c, "event %s: no fast path: %s; the next period acts on it", ev->id, te.msg);
    if (code) *code = old ? 200 : 201;
    return PFI_OK;
}

int ctl_event_cancel(ctl *c, const char *id)
{
    ctl_event *e = ctl_event_find(c, id);
    if (!e) return 404;
    double now = pfi_clock_now();
    if (!strcmp(e->status, "scheduled")) {
        snprintf(e->status, sizeof e->status, "cancelled");
    } else if (!strcmp(e->status, "active")) {
        if (now < pfi_grid_event_end(&e->ev)) { /* end now; ramp down */
            double max_s = e->ev.open_ended ? PFI_EVENT_MAX_OPEN_ENDED_S : PFI_EVENT_MAX_DURATION_S;
            e->ev.duration_s = fmin(fmax(1, now - e->ev.start), max_s);
        }
        e->cancelled = 1;
    } else {
        return 409;
    }
    ctl_log(c, "event %s cancelled", id);
    ctl_db_put_event(c, e);
    return 200;
}

/* the job (id, tier), made if new; a job is its id under one tier. The
 * index (ctl_jobidx.h) keeps this O(1) per job at 12,500 agents; an id under
 * another tier is found through the same index. */
static ctl_job *job_get(ctl *c, ctl_jobidx *index, const char *id, int tier, const char *agent)
{
    long at = ctl_jobidx_find(index, c, id, tier);
    if (at >= 0) return &c->job[at];
    if (PFI_VEC_RESERVE(c->job, c->job_cap, c->njobs + 1, NULL)) return NULL;
    for (int t = -1; t <= 3; t++) { /* the same id under another tier */
        long o = t == tier ? -1 : ctl_jobidx_find(index, c, id, t);
        const ctl_job *other = o >= 0 ? &c->job[o] : NULL;
        if (other && other->seen) /* both reported this period (not a job whose tier changed) */
            ctl_log(c,
                    "warning: job %s: agent %s reports it under tier %d, another agent under tier "
                    "%d: kept as two jobs",
                    id, agent, tier, other->tier);
    }
    ctl_job *j = &c->job[c->njobs];
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    j->tier = tier;
    j->base_w = j->base_tokens = NAN;
    if (ctl_jobidx_add(index, c, c->njobs)) return NULL;
    c->njobs++;
    return j;
}

/* fold one agent's node view into the jobs */
static void take_node(ctl *c, ctl_jobidx *index, size_t ai, json_t *node, int reachable)
{
    json_t *gpus = json_object_get(node, "gpus"), *jobs = json_object_get(node, "jobs");
    size_t k;
    json_t *jj;
    json_array_foreach(jobs, k, jj)
    {
        const char *id = json_string_value(json_object_get(jj, "job_id"));
        if (!id) continue;
        if (!pfi_job_id_valid(id)) {
            if (!c->agent[ai].bad_id_logged)
                ctl_log(c,
                        "warning: agent %s reports a job id that is not [A-Za-z0-9._-]{1,63} (or "
                        "is . or ..); ignored",
                        c->agent[ai].name);
            c->agent[ai].bad_id_logged = 1;
            continue;
        }
        json_t *tier = json_object_get(jj, "tier");
        json_t *ct = c->cfg.tiers ? json_object_get(c->cfg.tiers, id) : NULL;
        int tn = json_is_integer(tier) ? (int)json_integer_value(tier)
                 : ct                  ? (int)json_integer_value(ct)
                                       : c->cfg.default_tier;
        ctl_job *j = job_get(c, index, id, tn, c->agent[ai].name);
        if (!j) continue;
        if (!j->seen) {
            j->seen = 1;
            j->reachable = reachable;
            j->gpus = 0;
            j->nagent = 0;
            j->measured_w = 0;
            j->tokens_per_s = NAN;
            j->pfi_pred = NAN;
            j->cap_w = INFINITY;
            j->cap_min_w = 0;
            j->cap_max_w = INFINITY;
            j->hw_max_w = INFINITY;
            j->gpu_unavailable = 0;
        } else if (!reachable) {
            j->reachable = 0;
        }
        size_t q;
        json_t *g;
        int n = 0;
        json_array_foreach(json_object_get(jj, "gpus"), q, g)
        {
            json_t *gi = json_array_get(gpus, (size_t)json_integer_value(g));
            /* GET /v1/control: [cap_min_w, cap_max_w, cap_w, ceiling_w] (an
               unavailable GPU: nulls; an older agent: no ceiling_w); GET
               /v1/node: an object (state, ceiling_w) */
            int compact = json_is_array(gi);
            json_t *jlo = compact ? json_array_get(gi, 0) : json_object_get(gi, "cap_min_w"),
                   *jst = compact ? NULL : json_object_get(gi, "state");
            double lo = json_number_value(jlo),
                   hi = json_number_value(compact ? json_array_get(gi, 1)
                                                  : json_object_get(gi, "cap_max_w")),
                   ceil_w = json_number_value(compact ? json_array_get(gi, 3)
                                                      : json_object_get(gi, "ceiling_w"));
            json_t *cw = compact ? json_array_get(gi, 2) : json_object_get(gi, "cap_w"),
                   *jce = compact ? json_array_get(gi, 3) : json_object_get(gi, "ceiling_w");
            /* a ceiling given as null: the GPU is not to be capped (MIG, its
               limit unknown): its draw is fixed load */
            if (jce && json_is_null(jce)) j->gpu_unavailable = 1;
            if (!json_is_number(jlo) ||
                (json_is_string(jst) && strcmp(json_string_value(jst), "ok")))
                j->gpu_unavailable = 1;
            if (lo > j->cap_min_w) j->cap_min_w = lo;
            if (hi > 0 && hi < j->hw_max_w) j->hw_max_w = hi;
            if (!(ceil_w > 0)) ceil_w = hi; /* an older agent: its hardware maximum */
            if (ceil_w > 0 && ceil_w < j->cap_max_w) j->cap_max_w = ceil_w;
            if (json_is_number(cw) && json_number_value(cw) < j->cap_w)
                j->cap_w = json_number_value(cw);
            n++;
        }
        j->gpus += n;
        if (!PFI_VEC_RESERVE(j->agent_idx, j->agent_cap, j->nagent + 1, NULL))
            j->agent_idx[j->nagent++] = (int)ai;
        j->measured_w += json_number_value(json_object_get(jj, "power_w"));
        json_t *t = json_object_get(jj, "tokens_per_s"), *p = json_object_get(jj, "pfi_predicted");
        if (json_is_number(t) && isnan(j->tokens_per_s)) j->tokens_per_s = json_number_value(t);
        if (json_is_number(p) && isnan(j->pfi_pred)) j->pfi_pred = json_number_value(p);
        json_t *f = json_object_get(jj, "training_means");
        j->feat_dram = json_number_value(json_object_get(f, "DCGM_FI_PROF_DRAM_ACTIVE"));
        j->feat_copy = json_number_value(json_object_get(f, "DCGM_FI_DEV_MEM_COPY_UTIL"));
        j->feat_tensor = json_number_value(json_object_get(f, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"));
        j->feat_sm = json_number_value(json_object_get(f, "DCGM_FI_PROF_SM_ACTIVE"));
    }
}

static double mean_window(const ctl_job *j, double now, double window, const double *v)
{
    double s = 0;
    int n = 0;
    for (size_t k = 0; k < j->hist_n; k++) {
        size_t i = (j->hist_head + CTL_HIST - 1 - k) % CTL_HIST;
        if (now - j->hist_t[i] > window) break;
        if (isfinite(v[i])) s += v[i], n++;
    }
    return n ? s / n : NAN;
}

static int event_running(const ctl_event *e, double now)
{
    return !strcmp(e->status, "active") && now < pfi_grid_event_end(&e->ev) + e->ramp_down_s;
}

/* the model's features from the agent's training means */
int ctl_job_curve(ctl *c, ctl_job *j, pfi_curve *out)
{
    double x[32];
    size_t p = c->curve_model.p < 32 ? c->curve_model.p : 32;
    for (size_t k = 0; k < p; k++) {
        const char *f = c->curve_model.features[k];
        if (!strcmp(f, "dram_copy_product")) x[k] = j->feat_dram * j->feat_copy / 100;
        else if (!strcmp(f, "arithmetic_intensity")) x[k] = j->feat_tensor / j->feat_dram;
        else if (!strcmp(f, "tensor_sm_ratio")) x[k] = j->feat_tensor / j->feat_sm;
        else if (!strcmp(f, "DCGM_FI_PROF_DRAM_ACTIVE")) x[k] = j->feat_dram;
        else if (!strcmp(f, "DCGM_FI_DEV_MEM_COPY_UTIL")) x[k] = j->feat_copy;
        else if (!strcmp(f, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")) x[k] = j->feat_tensor;
        else if (!strcmp(f, "DCGM_FI_PROF_SM_ACTIVE")) x[k] = j->feat_sm;
        else return -1;
        if (!isfinite(x[k])) return -1;
    }
    double tmax = j->base_tokens > 0 ? j->base_tokens : 1;
    return pfi_curve_model_curve(&c->curve_model.curve, x, j->hw_max_w, tmax, j->base_w, out,
                                 NULL) == PFI_OK
               ? 0
               : -1;
}

/* the curve the configured strategy believes for job j with this baseline:
 * closed-loop's estimate from the job's observations (the curve model as its
 * prior), curve-aware's model curve; 0 and *out set when there is one (the
 * caller disposes of it), -1 otherwise (and for every other strategy) */
int ctl_job_belief(ctl *c, ctl_job *j, double base_w, double base_tokens, pfi_curve *out)
{
    if (c->cfg.strategy == PFI_STRAT_CURVE_AWARE)
        return c->have_curve_model ? ctl_job_curve(c, j, out) : -1;
    if (c->cfg.strategy != PFI_STRAT_CLOSED_LOOP) return -1;
    pfi_alloc_job aj = {j->gpus,
                        base_tokens > 0 ? base_tokens : 1,
                        base_w,
                        j->gpus * j->cap_min_w * 0.97,
                        NULL,
                        NULL,
                        j->pfi_pred > 0 ? j->pfi_pred : 1,
                        0,
                        0,
                        j->tier,
                        j->cap_min_w,
                        j->cap_max_w,
                        NULL};
    pfi_curve prior;
    int hp = c->have_curve_model && ctl_job_curve(c, j, &prior) == 0;
    if (hp) aj.pred_curve = &prior;
    int ok = pfi_alloc_curve_estimate(&aj, j->obs_p, j->obs_t, j->nobs, out, NULL) == PFI_OK;
    if (hp) pfi_curve_dispose(&prior);
    return ok ? 0 : -1;
}

void ctl_cycle(ctl *c)
{
    double now = pfi_clock_now(), t0 = pfi_wall_monotonic();
    c->now = now;
    ctl_jobidx index;
    for (size_t k = 0; k < c->njobs; k++) c->job[k].seen = 0;
    if (ctl_jobidx_build(&index, c)) {
        ctl_log(c, "error: out of memory for the job index: the agents' views not read");
    } else {
        for (size_t i = 0; i < c->nagents; i++)
            if (c->agent[i].node) take_node(c, &index, i, c->agent[i].node, c->agent[i].up);
    }
    ctl_jobidx_free(&index);
    /* jobs that ended: forget them */
    for (size_t k = 0; k < c->njobs;) {
        if (c->job[k].seen) {
            k++;
            continue;
        }
        ctl_log(c, "job %s is gone", c->job[k].id);
        free(c->job[k].agent_idx);
        c->job[k] = c->job[--c->njobs];
    }
    for (size_t k = 0; k < c->njobs; k++) {
        ctl_job *j = &c->job[k];
        /* no ceiling known (an agent that reports no limits): the cap in
           force is the most it may get; nothing known: not cappable */
        if (!isfinite(j->cap_max_w)) j->cap_max_w = j->cap_w;
        if (!isfinite(j->cap_w)) j->cap_w = j->cap_max_w;
        if (!isfinite(j->hw_max_w)) j->hw_max_w = j->cap_max_w;
        int unusable = j->gpu_unavailable || !isfinite(j->cap_max_w);
        if (!unusable && j->unavailable_logged) {
            ctl_log(c, "job %s: its GPUs are available again", j->id);
            j->unavailable_logged = 0;
        }
        if (unusable) {
            if (!j->unavailable_logged++)
                ctl_log(c, "job %s: %s: treated as unreachable (its power as fixed load)", j->id,
                        j->gpu_unavailable
                            ? "a GPU of it is unavailable or not to be capped (MIG) on its node"
                            : "its GPUs' limits are unknown");
            j->reachable = 0;
        }
    }
    /* events: start and finish */
    int active = 0;
    for (size_t i = 0; i < c->nevents; i++) {
        ctl_event *e = &c->event[i];
        if (!strcmp(e->status, "scheduled") && now >= e->ev.start) {
            double base = 0;
            for (size_t k = 0; k < c->njobs; k++) {
                ctl_job *j = &c->job[k];
                double bw = mean_window(j, now, c->cfg.baseline_window_s, j->hist_w);
                double bt = mean_window(j, now, c->cfg.baseline_window_s, j->hist_tok);
                j->base_w = isfinite(bw) ? bw : j->measured_w;
                j->base_tokens = isfinite(bt) ? bt : j->tokens_per_s;
                j->nobs = 0;
                j->late = 0;
                base += j->base_w;
            }
            e->baseline_w = base;
            e->target_w = ctl_event_target_w(c, e);
            snprintf(e->status, sizeof e->status, "active");
            c->integral_w = 0;
            ctl_log(c,
                    "event %s started: baseline %.0f W of %zu jobs, target %.0f W (%.1f%% cut)%s",
                    e->ev.id, base, c->njobs, e->target_w,
                    base > 0 ? 100 * (1 - e->target_w / base) : 0,
                    e->ev.dry_run || c->cfg.dry_run ? " [dry run]" : "");
            ctl_db_put_event(c, e);
        }
        if (!strcmp(e->status, "active") && !event_running(e, now)) {
            snprintf(e->status, sizeof e->status, "%s", e->cancelled ? "cancelled" : "done");
            ctl_log(c, "event %s %s", e->ev.id,
                    e->cancelled ? "cancelled and ramped down" : "finished");
            ctl_db_put_event(c, e);
        }
        if (event_running(e, now)) active = 1;
    }
    /* baselines: only while nothing is capped by us */
    if (!active)
        for (size_t k = 0; k < c->njobs; k++) {
            ctl_job *j = &c->job[k];
            if (!j->reachable) continue;
            size_t h = j->hist_head;
            j->hist_w[h] = j->measured_w;
            j->hist_tok[h] = j->tokens_per_s;
            j->hist_t[h] = now;
            j->hist_head = (h + 1) % CTL_HIST;
            if (j->hist_n < CTL_HIST) j->hist_n++;
            j->alloc_cap_w = 0;
            j->alloc_w = NAN;
        }
    c->active = active;
    c->gov_id[0] = 0;
    if (!active) {
        ctl_online_end(c);
        c->budget_w = c->measured_w = c->fixed_w = NAN;
        c->stable_periods = 0;
        c->cycle_s = pfi_wall_monotonic() - t0;
        return;
    }
    /* the budget: among the running events of the highest priority (the
       lowest number; events without a priority rank last), the most
       stringent */
    long long best = LLONG_MAX;
    for (size_t i = 0; i < c->nevents; i++)
        if (event_running(&c->event[i], now) && rank(&c->event[i]) < best)
            best = rank(&c->event[i]);
    double budget = INFINITY, target = INFINITY;
    ctl_event *gov = NULL;
    for (size_t i = 0; i < c->nevents; i++) {
        ctl_event *e = &c->event[i];
        if (!event_running(e, now) || rank(e) != best) continue;
        double b = pfi_pc_budget(e->baseline_w, e->target_w, now, e->ev.start,
                                 pfi_grid_event_end(&e->ev), e->ramp_s, e->ramp_down_s);
        if (b < budget) budget = b, gov = e;
        if (now < pfi_grid_event_end(&e->ev) && e->target_w < target) target = e->target_w;
    }
    /* faults: unreachable jobs are fixed load */
    double fixed = 0, meas = 0;
    pfi_pc_job *pj = calloc(c->njobs + 1, sizeof *pj);
    pfi_pc_out *po = calloc(c->njobs + 1, sizeof *po);
    pfi_curve *curves = calloc(c->njobs + 1, sizeof *curves);
    size_t *idx = calloc(c->njobs + 1, sizeof *idx), np = 0;
    if (!pj || !po || !curves || !idx) {
        free(pj), free(po), free(curves), free(idx);
        ctl_log(c, "error: out of memory: this period's allocation was skipped");
        return;
    }
    for (size_t k = 0; k < c->njobs; k++) {
        ctl_job *j = &c->job[k];
        int uncapped = j->cap_w >= j->cap_max_w - 0.5;
        if (!isfinite(j->base_w)) { /* started during the event */
            j->base_w = uncapped ? j->measured_w : j->gpus * j->cap_max_w * 0.97;
            j->base_tokens = j->tokens_per_s;
            j->late = 1;
        } else if (j->late && uncapped && j->reachable) {
            /* its first samples can be from before it really ran (a job
               ramping up draws a fraction of its power): until we cap it,
               its baseline is the most it has drawn uncapped */
            if (j->measured_w > j->base_w) j->base_w = j->measured_w;
            if (isfinite(j->tokens_per_s) && !(j->tokens_per_s <= j->base_tokens))
                j->base_tokens = j->tokens_per_s;
        }
        if (!j->reachable) {
            double lease_until = 0;
            for (size_t q = 0; q < j->nagent; q++)
                lease_until = fmax(lease_until, c->agent[j->agent_idx[q]].lease_until);
            double assumed =
                now < lease_until ? j->measured_w : fmax(j->base_w, j->gpus * j->cap_max_w * 0.97);
            fixed += assumed;
            meas += assumed;
            continue;
        }
        meas += j->measured_w;
        pfi_pc_job *x = &pj[np];
        x->gpus = j->gpus;
        x->cap_min_w = j->cap_min_w;
        x->cap_max_w = j->cap_max_w;
        x->baseline_w = j->base_w;
        x->baseline_tokens_per_s = j->base_tokens;
        x->pfi_pred = j->pfi_pred;
        x->sla_tier = j->tier;
        x->measured_w = j->measured_w;
        x->cap_w = j->cap_w;
        x->ratio = j->ratio;
        pfi_pc_learn_ratio(x);
        j->ratio = x->ratio;
        if (c->cfg.strategy == PFI_STRAT_CLOSED_LOOP) {
            /* observe the job where it runs (settled: at the cap we gave it last period) */
            if (j->alloc_cap_w > 0 && fabs(j->cap_w - j->alloc_cap_w) < 0.5 &&
                isfinite(j->tokens_per_s) && j->nobs < 64 && j->measured_w < j->base_w * 0.995) {
                j->obs_p[j->nobs] = j->measured_w;
                j->obs_t[j->nobs++] = j->tokens_per_s;
            }
        }
        if (ctl_job_belief(c, j, j->base_w, j->base_tokens, &curves[np]) == 0)
            x->pred_curve = &curves[np];
        idx[np++] = k;
    }
    if (c->cfg.strategy == PFI_STRAT_SAFE_ONLINE) ctl_online_period(c, budget, fixed, pj, idx, np);
    /* feedback only on a settled plant: the same caps and budget for a whole
       period before this one (a ramp or a new allocation is not an error to
       integrate); dips cannot wind it up either (power_control.h) */
    if (c->stable_periods >= 1) pfi_pc_feedback(&c->integral_w, meas, budget);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = c->cfg.strategy;
    int missing_curve = 0;
    for (size_t q = 0; q < np; q++) missing_curve |= !pj[q].pred_curve;
    if ((o.strategy == PFI_STRAT_CURVE_AWARE || o.strategy == PFI_STRAT_CLOSED_LOOP) &&
        missing_curve)
        o.strategy = PFI_STRAT_PFI_AWARE;
    if (o.strategy == PFI_STRAT_CLOSED_LOOP)
        o.strategy = PFI_STRAT_CURVE_AWARE; /* on the estimates */
    int feasible = 1;
    pfi_error e;
    if (pfi_pc_allocate(pj, np, budget, fixed, c->integral_w, &o, po, &feasible, &e))
        ctl_log(c, "error: allocation: %s", e.msg);
    else {
        int same = fabs(budget - c->budget_w) <= 0.005 * budget;
        for (size_t q = 0; q < np; q++) {
            ctl_job *j = &c->job[idx[q]];
            if (fabs(j->alloc_cap_w - po[q].cap_w) >= 0.5 || fabs(j->cap_w - po[q].cap_w) >= 0.5)
                same = 0;
            j->alloc_w = po[q].target_w;
            j->alloc_cap_w = po[q].cap_w;
        }
        c->stable_periods = same ? c->stable_periods + 1 : 0;
    }
    if (!feasible && c->feasible)
        ctl_log(c,
                "warning: the target %.0f W cannot be met within the jobs' SLA floors: the budget "
                "holds, jobs go below their floors by tier, Flex 3 first and Flex 0 last",
                budget);
    c->feasible = feasible;
    c->budget_w = budget;
    c->measured_w = meas;
    c->fixed_w = fixed;
    if (gov) {
        snprintf(c->gov_id, sizeof c->gov_id, "%s", gov->ev.id);
        if (isnan(gov->reached_t) && now >= gov->ev.start && now < pfi_grid_event_end(&gov->ev) &&
            ctl_within_target(c, meas, gov->target_w)) {
            gov->reached_t = now;
            ctl_log(c, "event %s: at target after %.1f s (%.0f W <= %.0f W)", gov->ev.id,
                    now - gov->ev.start, meas, gov->target_w);
            ctl_db_put_event(c, gov);
        }
        ctl_db_sample(c, gov->ev.id, now, budget, isfinite(target) ? target : gov->target_w, meas);
        /* one transaction for the period's rows (12,500 jobs: one commit, not 12,500) */
        sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
        for (size_t k = 0; k < c->njobs; k++) ctl_db_job_sample(c, gov->ev.id, now, &c->job[k]);
        sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
    }
    for (size_t q = 0; q < np; q++)
        if (pj[q].pred_curve) pfi_curve_dispose(&curves[q]);
    free(pj), free(po), free(curves), free(idx);
    c->cycle_s = pfi_wall_monotonic() - t0;
}
