/* ctl_decide.c — one control period's decision (docs/controller.md, "One
 * period"): a pure function of the collected inputs, the events and the
 * controller's state (ctl_state.h). No I/O, no lock, no clock: what is to
 * be stored and logged is returned in the decision, and the period
 * (ctl_period.c) stores it, logs it and pushes the caps.
 *
 *  1. Jobs from the agents' views: a job id seen on several agents is one
 *     job across them (GPUs and power summed) only when they agree on its
 *     tier. The same id under two tiers is two jobs, each with its own
 *     agents, allocation and caps (noted once as a conflict): an id is no
 *     credential — where a user can choose theirs (an agent with
 *     --job-env), claiming a Flex-0 job's id must neither shelter the
 *     claimant's GPUs under tier 0 nor put the real job under the
 *     claimant's tier.
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
 *  6. The response plan for the next trigger (ctl_plan.c). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_alloc_in.h"
#include "ctl_jobidx.h"
#include "ctl_learn.h"
#include "power_control.h"
#include "vec.h"

/* the job (id, tier), made if new; a job is its id under one tier. The
 * index (ctl_jobidx.h) keeps this O(1) per job at 12,500 agents; an id under
 * another tier is found through the same index. */
static ctl_job *job_get(ctl_state *s, ctl_jobidx *index, const char *id, int tier,
                        const char *agent, ctl_decision *d)
{
    long at = ctl_jobidx_find(index, s, id, tier);
    if (at >= 0) return &s->job[at];
    if (PFI_VEC_RESERVE(s->job, s->job_cap, s->njobs + 1, NULL)) return NULL;
    for (int t = -1; t <= 3; t++) { /* the same id under another tier */
        long o = t == tier ? -1 : ctl_jobidx_find(index, s, id, t);
        const ctl_job *other = o >= 0 ? &s->job[o] : NULL;
        if (other && other->seen) /* both reported this period (not a job whose tier changed) */
            ctl_note(&d->notes,
                     "warning: job %s: agent %s reports it under tier %d, another agent under "
                     "tier %d: kept as two jobs",
                     id, agent, tier, other->tier);
    }
    ctl_job *j = &s->job[s->njobs];
    ctl_job_init(j, id, tier);
    if (ctl_jobidx_add(index, s, s->njobs)) return NULL;
    s->njobs++;
    return j;
}

void ctl_job_init(ctl_job *j, const char *id, int tier)
{
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    j->tier = tier;
    j->base_w = j->base_tokens = NAN;
    j->prev_cap_w = NAN;
    j->enforced_w = INFINITY;
    j->uncapped_since = j->steady_t = j->steady_eval_t = NAN; /* no baseline samples yet */
    j->steady_w = j->steady_tokens = NAN;
}

/* the first view of a job this period: what it carried last period is reset */
static void job_reset(ctl_job *j, int reachable)
{
    j->seen = 1;
    j->reachable = reachable;
    j->gpus = 0;
    j->nagent = 0;
    j->measured_w = 0;
    j->tokens_per_s = NAN;
    j->pfi_pred = NAN;
    j->sm_clock_mhz = j->sm_active = NAN;
    j->cap_w = INFINITY;
    j->cap_min_w = 0;
    j->cap_max_w = INFINITY;
    j->hw_max_w = INFINITY;
    j->enforced_w = INFINITY;
    j->gpu_unavailable = 0;
}

/* one agent's view of a job folded into the job */
static void job_fold(ctl_job *j, const ctl_job_view *v, size_t ai)
{
    j->gpu_unavailable |= v->gpu_unavailable;
    if (v->cap_min_w > j->cap_min_w) j->cap_min_w = v->cap_min_w;
    if (v->hw_max_w < j->hw_max_w) j->hw_max_w = v->hw_max_w;
    if (v->ceiling_w < j->cap_max_w) j->cap_max_w = v->ceiling_w;
    if (v->cap_w < j->cap_w) j->cap_w = v->cap_w;
    if (v->enforced_w > 0 && v->enforced_w < j->enforced_w) j->enforced_w = v->enforced_w;
    /* the telemetry, a mean over its GPUs (unknown on one agent: unknown) */
    double g0 = j->gpus, g = g0 + v->gpus;
    if (g > 0) {
        j->sm_clock_mhz =
            g0 ? (j->sm_clock_mhz * g0 + v->sm_clock_mhz * v->gpus) / g : v->sm_clock_mhz;
        j->sm_active = g0 ? (j->sm_active * g0 + v->sm_active * v->gpus) / g : v->sm_active;
    }
    j->gpus += v->gpus;
    if (!PFI_VEC_RESERVE(j->agent_idx, j->agent_cap, j->nagent + 1, NULL))
        j->agent_idx[j->nagent++] = (int)ai;
    j->measured_w += v->power_w;
    if (isnan(j->tokens_per_s)) j->tokens_per_s = v->tokens_per_s;
    if (isnan(j->pfi_pred)) j->pfi_pred = v->pfi_pred;
    j->feat_dram = v->feat_dram;
    j->feat_copy = v->feat_copy;
    j->feat_tensor = v->feat_tensor;
    j->feat_sm = v->feat_sm;
}

/* a job whose limits are unknown or whose GPUs cannot be capped is
 * unreachable: its power is fixed load */
static void job_limits(ctl_job *j, ctl_decision *d)
{
    /* no ceiling known (an agent that reports no limits): the cap in force is
       the most it may get; nothing known: not cappable */
    if (!isfinite(j->cap_max_w)) j->cap_max_w = j->cap_w;
    if (!isfinite(j->cap_w)) j->cap_w = j->cap_max_w;
    if (!isfinite(j->hw_max_w)) j->hw_max_w = j->cap_max_w;
    int unusable = j->gpu_unavailable || !isfinite(j->cap_max_w);
    if (!unusable && j->unavailable_logged) {
        ctl_note(&d->notes, "job %s: its GPUs are available again", j->id);
        j->unavailable_logged = 0;
    }
    if (unusable) {
        if (!j->unavailable_logged++)
            ctl_note(&d->notes, "job %s: %s: treated as unreachable (its power as fixed load)",
                     j->id,
                     j->gpu_unavailable
                         ? "a GPU of it is unavailable or not to be capped (MIG) on its node"
                         : "its GPUs' limits are unknown");
        j->reachable = 0;
    }
}

/* step 1: the jobs of this period from the agents' views; jobs no agent
 * reports are gone. 0, or -1 when out of memory (then the jobs stay as
 * they were last period) */
static int take_jobs(ctl_state *s, const ctl_inputs *in, ctl_decision *d)
{
    ctl_jobidx index;
    if (ctl_jobidx_build(&index, s)) {
        ctl_note(&d->notes, "error: out of memory for the job index: the agents' views not read");
        return -1;
    }
    for (size_t k = 0; k < s->njobs; k++) s->job[k].seen = 0;
    for (size_t ai = 0; ai < in->nagents; ai++) {
        const ctl_agent_view *a = &in->agent[ai];
        for (size_t q = 0; q < a->njobs; q++) {
            const ctl_job_view *v = &a->job[q];
            ctl_job *j = job_get(s, &index, v->id, v->tier, a->name, d);
            if (!j) continue;
            if (!j->seen) job_reset(j, a->up);
            else if (!a->up) j->reachable = 0;
            job_fold(j, v, ai);
        }
    }
    ctl_jobidx_free(&index);
    for (size_t k = 0; k < s->njobs;) {
        if (s->job[k].seen) {
            k++;
            continue;
        }
        ctl_note(&d->notes, "job %s is gone", s->job[k].id);
        ctl_mem_forget(s, &s->job[k], d); /* its remembered points end with it */
        free(s->job[k].agent_idx);
        s->job[k] = s->job[--s->njobs];
    }
    for (size_t k = 0; k < s->njobs; k++) job_limits(&s->job[k], d);
    return 0;
}

int ctl_event_running(const ctl_event *e, double now)
{
    return e->status == CTL_EV_ACTIVE && now < pfi_grid_event_end(&e->ev) + e->ramp_down_s;
}

static void event_row(ctl_decision *d, const ctl_event *e)
{
    if (!PFI_VEC_RESERVE(d->event_rows, d->event_rows_cap, d->nevent_rows + 1, NULL))
        d->event_rows[d->nevent_rows++] = *e;
    else ctl_note(&d->notes, "error: out of memory: event %s's new state not stored", e->ev.id);
}

/* an event starts: every job's baseline (ctl_baseline.c: the lowest of its
   last steady windows before the announcement, at most its knee's draw;
   shared by the steps of one event and back-to-back events), the event's
   target */
static void event_start(const ctl_cfg *cfg, ctl_state *s, ctl_event *e, double now, ctl_decision *d)
{
    double base = 0;
    size_t by_src[CTL_BASE_LATE + 1] = {0};
    e->baseline_src = CTL_BASE_NONE;
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        double announced = isfinite(e->announced_t) ? e->announced_t : e->ev.start;
        j->base_src =
            ctl_baseline_for(cfg, j, announced, &j->base_w, &j->base_tokens, &j->base_how);
        if (j->untrusted) j->base_tokens = NAN; /* its claims set aside (ctl_claims.c) */
        if (!PFI_VEC_RESERVE(d->base_rows, d->base_rows_cap, d->nbase_rows + 1, NULL)) {
            ctl_base_row *r = &d->base_rows[d->nbase_rows++];
            snprintf(r->event_id, sizeof r->event_id, "%s", e->ev.id);
            snprintf(r->job_id, sizeof r->job_id, "%s", j->id);
            r->tier = j->tier, r->base_w = j->base_w, r->src = j->base_src, r->how = j->base_how;
        }
        j->nobs = 0;
        j->late = 0;
        base += j->base_w;
        by_src[j->base_src]++;
        if (j->base_src > e->baseline_src) e->baseline_src = j->base_src;
    }
    e->baseline_w = base;
    e->target_w = ctl_event_target_w(cfg, e);
    e->status = CTL_EV_ACTIVE;
    s->integral_w = 0;
    char how[96] = "";
    if (by_src[CTL_BASE_SHORT] || by_src[CTL_BASE_ESTIMATE])
        snprintf(how, sizeof how, " (steady %zu, short window %zu, estimate %zu)",
                 by_src[CTL_BASE_STEADY], by_src[CTL_BASE_SHORT], by_src[CTL_BASE_ESTIMATE]);
    ctl_note(
        &d->notes, "event %s started: baseline %.0f W of %zu jobs%s, target %.0f W (%.1f%% cut)%s",
        e->ev.id, base, s->njobs, how, e->target_w, base > 0 ? 100 * (1 - e->target_w / base) : 0,
        e->ev.dry_run || cfg->dry_run ? " [dry run]" : "");
    if (!s->njobs || !(base > 0))
        ctl_note(&d->notes,
                 "warning: event %s: nothing to shed (no managed load: %zu jobs, baseline %.0f W)",
                 e->ev.id, s->njobs, base);
    event_row(d, e);
}

/* step 3: events start and finish; 1 if one runs now */
static int step_events(const ctl_cfg *cfg, ctl_state *s, double now, ctl_decision *d)
{
    int active = 0;
    for (size_t i = 0; i < s->nevents; i++) {
        ctl_event *e = &s->event[i];
        if (e->status == CTL_EV_SCHEDULED && now >= e->ev.start) event_start(cfg, s, e, now, d);
        if (e->status == CTL_EV_ACTIVE && !ctl_event_running(e, now)) {
            e->status = e->cancelled ? CTL_EV_CANCELLED : CTL_EV_DONE;
            ctl_note(&d->notes, "event %s %s", e->ev.id,
                     e->cancelled ? "cancelled and ramped down" : "finished");
            if (e->cancelled && !e->shed_any && e->baseline_w > 0)
                ctl_note(&d->notes,
                         "warning: event %s: cancelled before it shed anything: not applicable "
                         "(neither met nor missed)",
                         e->ev.id);
            event_row(d, e);
        }
        if (ctl_event_running(e, now)) active = 1;
    }
    return active;
}

/* step 2: baselines (ctl_baseline.c: samples only while nothing runs) */
static void keep_baselines(const ctl_cfg *cfg, ctl_state *s, double now, int active)
{
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        ctl_baseline_observe(cfg, j, now, active);
        if (!active && j->reachable) {
            j->alloc_cap_w = 0;
            j->alloc_w = NAN;
        }
    }
}

/* an event's rank among overlapping ones: its priority (lower is more
   important), events without one after every prioritized one */
static long long rank(const ctl_event *e)
{
    return e->ev.has_priority ? e->ev.priority : (long long)1 << 40;
}

/* the budget: among the running events of the highest priority (the lowest
   number; events without a priority rank last), the most stringent; *gov
   the event it comes from, *target the lowest target among them */
static double budget_now(ctl_state *s, double now, ctl_event **gov, double *target)
{
    long long best = LLONG_MAX;
    for (size_t i = 0; i < s->nevents; i++)
        if (ctl_event_running(&s->event[i], now) && rank(&s->event[i]) < best)
            best = rank(&s->event[i]);
    double budget = INFINITY;
    *target = INFINITY;
    *gov = NULL;
    for (size_t i = 0; i < s->nevents; i++) {
        ctl_event *e = &s->event[i];
        if (!ctl_event_running(e, now) || rank(e) != best) continue;
        double b = pfi_pc_budget(e->baseline_w, e->target_w, now, e->ev.start,
                                 pfi_grid_event_end(&e->ev), e->ramp_s, e->ramp_down_s);
        if (b < budget) budget = b, *gov = e;
        if (now < pfi_grid_event_end(&e->ev) && e->target_w < *target) *target = e->target_w;
    }
    return budget;
}

/* a job that started during the event: its baseline from what it draws */
static void late_baseline(ctl_job *j)
{
    int uncapped = j->cap_w >= j->cap_max_w - 0.5;
    if (!isfinite(j->base_w)) { /* started during the event */
        j->base_w = uncapped ? j->measured_w : j->gpus * j->cap_max_w * 0.97;
        j->base_tokens = j->tokens_per_s;
        j->base_src = CTL_BASE_LATE;
        j->late = 1;
    } else if (j->late && uncapped && j->reachable) {
        /* its first samples can be from before it really ran (a job ramping
           up draws a fraction of its power): until we cap it, its baseline
           is the most it has drawn uncapped */
        if (j->measured_w > j->base_w) j->base_w = j->measured_w;
        if (isfinite(j->tokens_per_s) && !(j->tokens_per_s <= j->base_tokens))
            j->base_tokens = j->tokens_per_s;
    }
}

/* an unreachable job's assumed power: its last reading while our lease on
 * its agents holds, then its uncapped power */
static double assumed_w(const ctl_job *j, const ctl_inputs *in, double now)
{
    double lease_until = 0;
    for (size_t q = 0; q < j->nagent; q++)
        if ((size_t)j->agent_idx[q] < in->nagents)
            lease_until = fmax(lease_until, in->agent[j->agent_idx[q]].lease_until);
    return now < lease_until ? j->measured_w : fmax(j->base_w, j->gpus * j->cap_max_w * 0.97);
}

/* the period's allocation inputs: reachable jobs with their baselines;
   unreachable ones as fixed load (*fixed_w); *meas_w the measured total */
static void period_inputs(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s,
                          const ctl_inputs *in, double now, ctl_alloc_in *ai, double *fixed_w,
                          double *meas_w)
{
    *fixed_w = *meas_w = 0;
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        late_baseline(j);
        if (!j->reachable) {
            double a = assumed_w(j, in, now);
            *fixed_w += a;
            *meas_w += a;
            continue;
        }
        *meas_w += j->measured_w;
        pfi_pc_job *x = ctl_alloc_in_add(ai, j, k, j->base_w, j->base_tokens);
        pfi_pc_learn_ratio(x);
        j->ratio = x->ratio;
        ctl_learn_observe(cfg, j); /* the strategy's learner (ctl_learn.c) */
        ctl_alloc_in_belief(ai, cfg, cm, j);
    }
}

/* the allocation's caps into the jobs; the count of settled periods */
static void take_caps(ctl_state *s, const ctl_alloc_in *ai, double budget_w)
{
    int same = fabs(budget_w - s->budget_w) <= 0.005 * budget_w;
    for (size_t q = 0; q < ai->np; q++) {
        ctl_job *j = &s->job[ai->idx[q]];
        if (fabs(j->alloc_cap_w - ai->po[q].cap_w) >= 0.5 ||
            fabs(j->cap_w - ai->po[q].cap_w) >= 0.5)
            same = 0;
        j->alloc_w = ai->po[q].target_w;
        j->alloc_cap_w = ai->po[q].cap_w;
    }
    s->stable_periods = same ? s->stable_periods + 1 : 0;
}

/* the rows of this period: the governing event's sample, every job's */
static void sample_rows(ctl_state *s, const ctl_event *gov, double now, double budget_w,
                        double target_w, double meas_w, ctl_decision *d)
{
    d->sample = 1;
    snprintf(d->sample_event, sizeof d->sample_event, "%s", gov->ev.id);
    d->t = now;
    d->budget_w = budget_w;
    d->target_w = isfinite(target_w) ? target_w : gov->target_w;
    d->measured_w = meas_w;
    if (PFI_VEC_RESERVE(d->rows, d->rows_cap, s->njobs + 1, NULL)) {
        ctl_note(&d->notes, "error: out of memory: this period's job samples not stored");
        return;
    }
    for (size_t k = 0; k < s->njobs; k++) {
        const ctl_job *j = &s->job[k];
        ctl_job_row *r = &d->rows[d->nrows++];
        snprintf(r->id, sizeof r->id, "%s", j->id);
        r->tier = j->tier;
        r->power_w = j->measured_w;
        r->tokens_per_s = j->tokens_per_s;
        r->cap_w = j->cap_w;
        r->alloc_w = j->alloc_w;
        r->base_w = j->base_w;
        r->base_tokens = j->base_tokens;
    }
}

/* steps 4 and 5 during an event: budget, faults, feedback, allocation */
static int control(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s, const ctl_inputs *in,
                   double now, ctl_decision *d)
{
    ctl_event *gov;
    double target, budget = budget_now(s, now, &gov, &target), fixed, meas;
    ctl_alloc_in ai;
    if (ctl_alloc_in_new(&ai, s->njobs)) {
        ctl_note(&d->notes, "error: out of memory: this period's allocation was skipped");
        return -1;
    }
    period_inputs(cfg, cm, s, in, now, &ai, &fixed, &meas);
    ctl_learn_period(cfg, cm, s, &d->notes, budget, fixed, ai.pj, ai.idx, ai.np);
    /* feedback only on a settled plant: the same caps and budget for a whole
       period before this one (a ramp or a new allocation is not an error to
       integrate); dips cannot wind it up either (power_control.h) */
    if (s->stable_periods >= 1) pfi_pc_feedback(&s->integral_w, meas, budget);
    pfi_alloc_opts o;
    ctl_alloc_in_opts(&ai, cfg, &o);
    int feasible = 1;
    pfi_error e;
    if (pfi_pc_allocate(ai.pj, ai.np, budget, fixed, s->integral_w, &o, ai.po, &feasible, &e))
        ctl_note(&d->notes, "error: allocation: %s", e.msg);
    else take_caps(s, &ai, budget);
    if (!feasible && s->feasible)
        ctl_note(&d->notes,
                 "warning: the target %.0f W cannot be met within the jobs' SLA floors: the "
                 "budget holds, jobs go below their floors by tier, Flex 3 first and Flex 0 last",
                 budget);
    s->feasible = feasible;
    s->budget_w = budget;
    s->measured_w = meas;
    for (size_t i = 0; i < s->nevents; i++) { /* what the verdicts need (ctl_report.c) */
        ctl_event *ev = &s->event[i];
        if (ctl_event_running(ev, now) && meas < ev->baseline_w * (1 - cfg->tolerance_pct / 100))
            ev->shed_any = 1;
    }
    s->fixed_w = fixed;
    if (gov) {
        snprintf(s->gov_id, sizeof s->gov_id, "%s", gov->ev.id);
        if (isnan(gov->reached_t) && now >= gov->ev.start && now < pfi_grid_event_end(&gov->ev) &&
            ctl_within_target(cfg, meas, gov->target_w)) {
            gov->reached_t = now;
            /* the bound ctl_within_target used: the target plus the tolerance */
            ctl_note(&d->notes,
                     "event %s: at target after %.1f s (%.0f W <= %.0f W, the target %.0f W + %g%% "
                     "tolerance)",
                     gov->ev.id, now - gov->ev.start, meas,
                     gov->target_w * (1 + cfg->tolerance_pct / 100), gov->target_w,
                     cfg->tolerance_pct);
            event_row(d, gov);
        }
        sample_rows(s, gov, now, budget, target, meas, d);
    }
    ctl_alloc_in_free(&ai);
    return 0;
}

/* each agent's lease generation for this period's push (ctl_generation.c;
   one controller: every raise may be made): the changes, and the alarms
   (a generation no agent accepts), go out as rows, stored before the push
   carries them (ctl_persist.c); -1 when out of memory */
static int decide_generations(const ctl_inputs *in, ctl_decision *d)
{
    for (size_t i = 0; i < in->nagents; i++) {
        const ctl_agent_view *a = &in->agent[i];
        int why;
        long long g = ctl_generation_next(a->generation_floor, a->generation, a->generation_max,
                                          a->gen_answer, 1, &why);
        if (g == a->generation && why != CTL_GEN_WHY_BEYOND) continue;
        if (PFI_VEC_RESERVE(d->gen_rows, d->gen_rows_cap, d->ngen_rows + 1, NULL)) return -1;
        long long want =
            (a->generation_max > a->generation ? a->generation_max : a->generation) + 1;
        d->gen_rows[d->ngen_rows++] = (ctl_gen_row){i, a->generation, g, why, want};
    }
    return 0;
}

int ctl_decide(const ctl_cfg *cfg, const pfi_modelfile *curve_model, ctl_state *s,
               const ctl_inputs *in, double now, ctl_decision *d)
{
    ctl_decision_clear(d);
    /* the clock since the last period (the profiles' cost), at most 3 periods */
    double dt = s->now > 0 && now > s->now ? fmin(now - s->now, 3 * cfg->period_s) : 0;
    s->now = now;
    int rc = take_jobs(s, in, d);
    ctl_claims_period(s, s->active, d);
    for (size_t k = 0; k < s->njobs; k++)
        if (s->job[k].untrusted) s->job[k].tokens_per_s = NAN; /* set aside */
    ctl_baseline_snapshots(cfg, s, now);
    int active = step_events(cfg, s, now, d);
    keep_baselines(cfg, s, now, active);
    ctl_profile_period(cfg, s, now, dt, active, d);
    s->active = d->active = active;
    s->gov_id[0] = 0;
    s->sla_shortfall_w = NAN;
    if (!active) {
        ctl_online_remember(s, d); /* what the event measured, for the next one */
        ctl_online_end(s);
        s->budget_w = s->measured_w = s->fixed_w = NAN;
        s->stable_periods = 0;
    } else if (control(cfg, curve_model, s, in, now, d)) {
        rc = -1;
    } else s->sla_shortfall_w = ctl_online_shortfall_w(s);
    d->integral_w = s->integral_w;
    ctl_plan_update(cfg, curve_model, s, &d->notes);
    if (decide_generations(in, d)) rc = -1;
    return rc;
}

void ctl_state_free(ctl_state *s)
{
    ctl_online_end(s);
    for (size_t k = 0; k < s->njobs; k++) free(s->job[k].agent_idx);
    free(s->job);
    s->job = NULL;
    s->njobs = s->job_cap = 0;
    free(s->event);
    s->event = NULL;
    s->nevents = s->event_cap = 0;
    free(s->mem);
    s->mem = NULL;
    s->nmem = s->mem_cap = 0;
    ctl_slots_free(&s->mem_idx);
}
