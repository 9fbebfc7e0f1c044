/* ctl_trigger.c — the fast path for grid triggers (docs/controller.md,
 * "Triggers").
 *
 * The plan: at the end of every control period, each job's cap for each
 * cut the grid may ask for next — the configured levels 1..3 (levels_pct)
 * and every scheduled event's cut — computed by the configured strategy
 * from the current baselines (the job's event baseline while one runs,
 * else its mean over baseline_window_s) and its current estimates (the
 * curve model, the closed loop's observations; equal weight where there
 * are none yet), without feedback (the loop adds that once it runs).
 *
 * A trigger (POST /v1/trigger, an API or OpenADR event that starts now
 * without a ramp) takes its caps from the plan: the planned cut itself; a
 * cut between two planned ones (or between 0 and the lowest) interpolated
 * per job linearly in the cut; a cut beyond the plan, or with no plan yet,
 * equal-weight caps computed at once (every job's power cut by the same
 * share: cap = baseline x (1 - cut) / (GPUs x r), r its learned power/cap
 * ratio). A trigger only ever lowers a cap the controller holds. The
 * control loop's thread pushes the caps to every agent at once
 * (ctl_agents.c), in the middle of a period if need be; the event it
 * belongs to then starts at the next period (run at once) and the normal
 * allocation with feedback refines them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "power_control.h"

/* the job's baseline for the plan: its event baseline while one runs, else
 * its mean over the baseline window, else what it draws now */
static double plan_base_w(const ctl *c, const ctl_job *j)
{
    if (c->active && isfinite(j->base_w)) return j->base_w;
    double s = 0;
    int n = 0;
    for (size_t k = 0; k < j->hist_n; k++) {
        size_t i = (j->hist_head + CTL_HIST - 1 - k) % CTL_HIST;
        if (c->now - j->hist_t[i] > c->cfg.baseline_window_s) break;
        if (isfinite(j->hist_w[i])) s += j->hist_w[i], n++;
    }
    return n ? s / n : j->measured_w;
}

double ctl_event_cut_pct(const ctl *c, const ctl_event *e)
{
    double ramp = isnan(e->ev.ramp_s) ? c->cfg.ramp_s : e->ev.ramp_s;
    if (ramp > 0) return NAN; /* a ramp starts from no cut: the loop follows it */
    double cut = e->ev.kind == PFI_EV_REDUCTION ? e->ev.reduction_pct
                 : e->ev.kind == PFI_EV_LEVEL   ? c->cfg.level_cut_pct[e->ev.level]
                 : c->plan_base_w > 0 ? 100 * (1 - e->ev.target_kw * 1000 / c->plan_base_w)
                                      : NAN;
    return cut > 0 ? fmin(cut, 90) : NAN;
}

static void add_cut(ctl *c, double cut)
{
    if (!(cut > 0) || c->nplan == CTL_PLAN_MAX) return;
    for (size_t p = 0; p < c->nplan; p++)
        if (fabs(c->plan_cut_pct[p] - cut) < 1e-9) return;
    size_t p = c->nplan++;
    for (; p > 0 && c->plan_cut_pct[p - 1] > cut; p--) c->plan_cut_pct[p] = c->plan_cut_pct[p - 1];
    c->plan_cut_pct[p] = cut;
}

void ctl_plan_update(ctl *c)
{
    size_t n = c->njobs;
    pfi_pc_job *pj = calloc(n + 1, sizeof *pj);
    pfi_pc_out *po = calloc(n + 1, sizeof *po);
    pfi_curve *curves = calloc(n + 1, sizeof *curves);
    size_t *idx = calloc(n + 1, sizeof *idx), np = 0;
    if (!pj || !po || !curves || !idx) {
        free(pj), free(po), free(curves), free(idx);
        ctl_log(c, "error: out of memory: the response plan was not updated");
        return;
    }
    double base = 0, fixed = 0;
    int missing_curve = 0;
    for (size_t k = 0; k < n; k++) {
        ctl_job *j = &c->job[k];
        double bw = plan_base_w(c, j);
        base += bw;
        for (size_t p = 0; p < CTL_PLAN_MAX; p++) j->plan_cap_w[p] = 0;
        if (!j->reachable || !(bw > 0) || j->gpus <= 0) {
            fixed += j->measured_w;
            continue;
        }
        pfi_pc_job *x = &pj[np];
        x->gpus = j->gpus;
        x->cap_min_w = j->cap_min_w;
        x->cap_max_w = j->cap_max_w;
        x->baseline_w = bw;
        x->baseline_tokens_per_s = isfinite(j->base_tokens) ? j->base_tokens : j->tokens_per_s;
        x->pfi_pred = j->pfi_pred;
        x->sla_tier = j->tier;
        x->measured_w = j->measured_w;
        x->cap_w = j->cap_w;
        x->ratio = j->ratio;
        if (ctl_job_belief(c, j, bw, x->baseline_tokens_per_s, &curves[np]) == 0)
            x->pred_curve = &curves[np];
        missing_curve |= !x->pred_curve;
        idx[np++] = k;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = c->cfg.strategy;
    if ((o.strategy == PFI_STRAT_CURVE_AWARE || o.strategy == PFI_STRAT_CLOSED_LOOP) &&
        missing_curve)
        o.strategy = PFI_STRAT_PFI_AWARE;
    if (o.strategy == PFI_STRAT_CLOSED_LOOP) o.strategy = PFI_STRAT_CURVE_AWARE;
    c->plan_base_w = base;
    c->nplan = 0;
    for (int l = 1; l <= 3; l++) add_cut(c, c->cfg.level_cut_pct[l]);
    for (size_t i = 0; i < c->nevents; i++)
        if (!strcmp(c->event[i].status, "scheduled"))
            add_cut(c, ctl_event_cut_pct(c, &c->event[i]));
    for (size_t p = 0; p < c->nplan && np; p++) {
        int feasible;
        pfi_error e;
        if (pfi_pc_allocate(pj, np, base * (1 - c->plan_cut_pct[p] / 100), fixed, 0, &o, po,
                            &feasible, &e)) {
            ctl_log(c, "error: response plan for a %.1f%% cut: %s", c->plan_cut_pct[p], e.msg);
            continue;
        }
        for (size_t q = 0; q < np; q++) c->job[idx[q]].plan_cap_w[p] = po[q].cap_w;
    }
    c->plan_t = c->now;
    for (size_t q = 0; q < np; q++)
        if (pj[q].pred_curve) pfi_curve_dispose(&curves[q]);
    free(pj), free(po), free(curves), free(idx);
}

/* equal weight: the job's power cut by cut_pct of its baseline */
static double equal_cap_w(const ctl *c, const ctl_job *j, double cut_pct)
{
    double r = j->ratio > 0 ? j->ratio : 0.97;
    double cap = plan_base_w(c, j) * (1 - cut_pct / 100) / (j->gpus * r);
    return fmin(fmax(cap, j->cap_min_w), j->cap_max_w);
}

int ctl_trigger(ctl *c, const char *id, double cut_pct, pfi_error *err)
{
    if (!(cut_pct > 0 && cut_pct <= 90))
        return pfi_errorf(err, PFI_EINVAL, "a trigger's cut must be in (0, 90] %%"), -1;
    /* the plan's points around cut_pct: lo (cut 0: no cap when -1) and hi */
    int lo = -1, hi = -1, exact = -1;
    for (size_t p = 0; p < c->nplan; p++) {
        if (fabs(c->plan_cut_pct[p] - cut_pct) < 1e-6) exact = (int)p;
        if (c->plan_cut_pct[p] < cut_pct) lo = (int)p;
        if (c->plan_cut_pct[p] > cut_pct && hi < 0) hi = (int)p;
    }
    const char *how = exact >= 0 ? "plan" : hi >= 0 ? "interpolated" : "equal weight";
    size_t capped = 0;
    for (size_t k = 0; k < c->njobs; k++) {
        ctl_job *j = &c->job[k];
        j->trig_cap_w = 0;
        if (!j->seen || !j->reachable || j->gpus <= 0 || !(plan_base_w(c, j) > 0)) continue;
        double cap;
        if (exact >= 0 && j->plan_cap_w[exact] > 0) cap = j->plan_cap_w[exact];
        else if (exact < 0 && hi >= 0 && j->plan_cap_w[hi] > 0 &&
                 (lo < 0 || j->plan_cap_w[lo] > 0)) {
            double c0 = lo < 0 ? 0 : c->plan_cut_pct[lo],
                   w0 = lo < 0 ? j->cap_max_w : j->plan_cap_w[lo];
            double f = (cut_pct - c0) / (c->plan_cut_pct[hi] - c0);
            cap = w0 + f * (j->plan_cap_w[hi] - w0);
        } else cap = equal_cap_w(c, j, cut_pct);
        if (c->active && j->alloc_cap_w > 0) cap = fmin(cap, j->alloc_cap_w); /* only lowers */
        j->trig_cap_w = floor(cap);
        capped++;
    }
    if (!capped)
        return pfi_errorf(err, PFI_ESTATE, "no job to cap yet (no agent has answered)"), -1;
    snprintf(c->trigger_id, sizeof c->trigger_id, "%s", id);
    c->trigger_t0 = pfi_wall_monotonic();
    c->triggers++;
    ctl_log(c, "trigger %s: %.1f%% cut, caps for %zu jobs from the %s (plan of %.0f s ago)", id,
            cut_pct, capped, how, isfinite(c->plan_t) ? pfi_clock_now() - c->plan_t : NAN);
    atomic_store(&c->trigger_req, 1);
    ctl_agents_wake();
    return 0;
}
