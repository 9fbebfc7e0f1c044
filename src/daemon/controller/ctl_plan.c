/* ctl_plan.c — the response plan and a trigger's caps from it (docs/
 * controller.md, "Triggers"). Pure: no I/O, no clock (ctl_trigger.c sends).
 *
 * The plan: at the end of every control period, each job's cap for each
 * cut the grid may ask for next — the configured levels 1..3 (levels_pct)
 * and every scheduled event's cut — computed by the configured strategy
 * from the current baselines (the job's event baseline while one runs,
 * else the baseline an event starting now would take, ctl_baseline.c) and
 * its current estimates (the
 * curve model, the closed loop's observations; equal weight where there
 * are none yet), without feedback (the loop adds that once it runs).
 *
 * A trigger takes its caps from the plan: the planned cut itself; a cut
 * between two planned ones (or between 0 and the lowest) interpolated per
 * job linearly in the cut; a cut beyond the plan, or with no plan yet,
 * equal-weight caps computed at once (every job's power cut by the same
 * share: cap = baseline x (1 - cut) / (GPUs x r), r its learned power/cap
 * ratio). A trigger only ever lowers a cap the controller holds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_alloc_in.h"
#include "event_kind.h"

double ctl_plan_base_w(const ctl_cfg *cfg, const ctl_state *s, const ctl_job *j)
{
    if (s->active && isfinite(j->base_w)) return j->base_w;
    double w, tok;
    ctl_base_how how;
    ctl_baseline_event(cfg, j, s->now, &w, &tok, &how); /* what an event starting now would take */
    return w;
}

double ctl_event_cut_pct(const ctl_cfg *cfg, const ctl_state *s, const ctl_event *e)
{
    double ramp = isnan(e->ev.ramp_s) ? cfg->ramp_s : e->ev.ramp_s;
    if (ramp > 0) return NAN; /* a ramp starts from no cut: the loop follows it */
    double cut = pfi_grid_event_cut(&e->ev, cfg->level_cut_pct, s->plan_base_w).cut_pct;
    return cut > 0 ? fmin(cut, 90) : NAN;
}

static void add_cut(ctl_state *s, double cut)
{
    if (!(cut > 0) || s->nplan == CTL_PLAN_MAX) return;
    for (size_t p = 0; p < s->nplan; p++)
        if (fabs(s->plan_cut_pct[p] - cut) < 1e-9) return;
    size_t p = s->nplan++;
    for (; p > 0 && s->plan_cut_pct[p - 1] > cut; p--) s->plan_cut_pct[p] = s->plan_cut_pct[p - 1];
    s->plan_cut_pct[p] = cut;
}

/* the plan's inputs: the reachable jobs at their plan baselines; the others
   as fixed load (their measured power); the sum of the baselines */
static double plan_inputs(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s,
                          ctl_alloc_in *ai, double *fixed_w)
{
    double base = 0;
    *fixed_w = 0;
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        double bw = ctl_plan_base_w(cfg, s, j);
        base += bw;
        for (size_t p = 0; p < CTL_PLAN_MAX; p++) j->plan_cap_w[p] = 0;
        if (!j->reachable || !(bw > 0) || j->gpus <= 0) {
            *fixed_w += j->measured_w;
            continue;
        }
        ctl_alloc_in_add(ai, j, k, bw, isfinite(j->base_tokens) ? j->base_tokens : j->tokens_per_s);
        ctl_alloc_in_belief(ai, cfg, cm, j);
    }
    return base;
}

void ctl_plan_update(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s, ctl_notes *notes)
{
    ctl_alloc_in ai;
    if (ctl_alloc_in_new(&ai, s->njobs)) {
        ctl_note(notes, "error: out of memory: the response plan was not updated");
        return;
    }
    double fixed, base = plan_inputs(cfg, cm, s, &ai, &fixed);
    pfi_alloc_opts o;
    ctl_alloc_in_opts(&ai, cfg, &o);
    s->plan_base_w = base;
    s->nplan = 0;
    for (int l = 1; l <= 3; l++) add_cut(s, cfg->level_cut_pct[l]);
    for (size_t i = 0; i < s->nevents; i++)
        if (s->event[i].status == CTL_EV_SCHEDULED)
            add_cut(s, ctl_event_cut_pct(cfg, s, &s->event[i]));
    for (size_t p = 0; p < s->nplan && ai.np; p++) {
        int feasible;
        pfi_error e;
        if (pfi_pc_allocate(ai.pj, ai.np, base * (1 - s->plan_cut_pct[p] / 100), fixed, 0, &o,
                            ai.po, &feasible, &e)) {
            ctl_note(notes, "error: response plan for a %.1f%% cut: %s", s->plan_cut_pct[p], e.msg);
            continue;
        }
        for (size_t q = 0; q < ai.np; q++) s->job[ai.idx[q]].plan_cap_w[p] = ai.po[q].cap_w;
    }
    s->plan_t = s->now;
    ctl_alloc_in_free(&ai);
}

/* equal weight: the job's power cut by cut_pct of its baseline */
static double equal_cap_w(const ctl_cfg *cfg, const ctl_state *s, const ctl_job *j, double cut_pct)
{
    double r = j->ratio > 0 ? j->ratio : 0.97;
    double cap = ctl_plan_base_w(cfg, s, j) * (1 - cut_pct / 100) / (j->gpus * r);
    return fmin(fmax(cap, j->cap_min_w), j->cap_max_w);
}

/* job j's cap for cut_pct from the plan's points around it: lo (cut 0, no
   cap, when -1) and hi, or exact */
static double plan_cap_w(const ctl_cfg *cfg, const ctl_state *s, const ctl_job *j, double cut_pct,
                         int lo, int hi, int exact)
{
    if (exact >= 0 && j->plan_cap_w[exact] > 0) return j->plan_cap_w[exact];
    if (exact < 0 && hi >= 0 && j->plan_cap_w[hi] > 0 && (lo < 0 || j->plan_cap_w[lo] > 0)) {
        double c0 = lo < 0 ? 0 : s->plan_cut_pct[lo],
               w0 = lo < 0 ? j->cap_max_w : j->plan_cap_w[lo];
        double f = (cut_pct - c0) / (s->plan_cut_pct[hi] - c0);
        return w0 + f * (j->plan_cap_w[hi] - w0);
    }
    return equal_cap_w(cfg, s, j, cut_pct);
}

size_t ctl_plan_trigger(const ctl_cfg *cfg, ctl_state *s, double cut_pct, const char **how)
{
    int lo = -1, hi = -1, exact = -1;
    for (size_t p = 0; p < s->nplan; p++) {
        if (fabs(s->plan_cut_pct[p] - cut_pct) < 1e-6) exact = (int)p;
        if (s->plan_cut_pct[p] < cut_pct) lo = (int)p;
        if (s->plan_cut_pct[p] > cut_pct && hi < 0) hi = (int)p;
    }
    *how = exact >= 0 ? "plan" : hi >= 0 ? "interpolated" : "equal weight";
    size_t capped = 0;
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        j->trig_cap_w = 0;
        if (!j->seen || !j->reachable || j->gpus <= 0 || !(ctl_plan_base_w(cfg, s, j) > 0))
            continue;
        double cap = plan_cap_w(cfg, s, j, cut_pct, lo, hi, exact);
        if (s->active && j->alloc_cap_w > 0) cap = fmin(cap, j->alloc_cap_w); /* only lowers */
        j->trig_cap_w = floor(cap);
        capped++;
    }
    return capped;
}
