/* ctl_profile.c — a job's profile at job start and what the controller
 * remembers of each job's curve (docs/controller.md, "Profiles";
 * docs/allocation.md, "Profiles and memory"). Part of the decision: pure,
 * no I/O (what is to be stored goes out in the decision's mem_rows).
 *
 * The rule is the study's (pfi_profile_next, src/core/profile.c): once a
 * job has a steady uncapped baseline with a throughput, and no event runs
 * or is due within a point's time and a lease, its caps (every GPU of the
 * job, on every agent, the same cap) step down the schedule: each point
 * is profile_settle_periods control periods not measured, then
 * profile_samples periods measured (power and tokens/s means with their
 * standard errors, ctl_mean_se), then the next point, and back to the
 * ceiling when the rule stops: every point done, the next point below the
 * job's SLA tier (+ the rule's margin), or the throughput given up would
 * pass profile_cost_frac of the job's first hour; or when its GPUs do not
 * show the point's cap (a whole watt) for more than 5 periods in a row
 * ("cap not taken": an administrator's limit, a driver that clamps it),
 * rather than spend the budget on a point never measured. The caps go out under
 * the controller's lease like an event's, so a controller that dies hands
 * them back when the lease expires. Never for Flex 0, a job in
 * profile_opt_out, or with "profile": false.
 *
 * An event (or one due soon) takes over at once: the point in progress is
 * dropped (its samples discarded; the throughput it gave up stays counted)
 * and the profile resumes after the event where it was.
 *
 * Memory: a finished profile's points, and after an event the points that
 * event measured (ctl_online.c), become the job's known points, which
 * start safe-online at the next event (pfi_alloc_job.known) and are stored
 * (SQLite job_points) under the job's key: id, tier, GPU count, hardware
 * power limit (the compact node view carries no GPU model name: the limit
 * stands for it), and the telemetry features the predictor uses, each
 * within 15% where both are known. A job that restarts with the same key
 * starts from them and is not profiled again; one whose features differ is
 * a different job under the same id: its remembered points are not used
 * (noted) and its own replace them. */
#include <math.h>
#include <string.h>

#include "ctl.h"
#include "ctl_jobidx.h"
#include "pfi/profile.h"
#include "vec.h"

/* periods in a row a point's cap may be missing from its GPUs (a push
 * retried, an agent catching up) before the profile stops: "cap not taken" */
#define CTL_PROF_OFF_CAP_PERIODS 5
#define CTL_PROF_CV_POWER 0.02  /* one sample's prior coefficient of variation */
#define CTL_PROF_CV_TOKENS 0.03 /* (as safe-online's, ctl_online.c) */
#define CTL_MEM_FEAT_TOL 0.15
#define CTL_MEM_EXPIRE_S (30 * 86400.0) /* remembered points older than 30 days: not used */

void ctl_mean_se(const double *v, size_t k, double cv, double *mean, double *se)
{
    double s = 0, ss = 0;
    for (size_t i = 0; i < k; i++) s += v[i];
    double m = s / k;
    for (size_t i = 0; i < k; i++) ss += (v[i] - m) * (v[i] - m);
    double prior = cv * fabs(m);
    double sd = k >= 3 ? fmax(sqrt(ss / (k - 1)), 0.25 * prior) : prior;
    *mean = m;
    *se = sd / sqrt((double)k);
}

static void job_feat(const ctl_job *j, double f[4])
{
    f[0] = j->feat_dram, f[1] = j->feat_copy, f[2] = j->feat_tensor, f[3] = j->feat_sm;
}

/* the memory's key: id, tier, GPU count, hardware limit (to the watt) */
static int key_eq(const ctl_mem *m, const char *id, int tier, int gpus, double hw_max_w)
{
    return m->tier == tier && m->gpus == gpus && llround(m->hw_max_w) == llround(hw_max_w) &&
           !strcmp(m->id, id);
}

/* can the key tell this job from another under the same id? Only with
   telemetry on both sides (issue 41: a new job reusing an id inherited
   another's curve when the features were unknown) */
static int feat_known(const ctl_mem *m, const ctl_job *j)
{
    double f[4];
    job_feat(j, f);
    for (int i = 0; i < 4; i++)
        if (m->feat[i] > 0 && f[i] > 0) return 1;
    return 0;
}

static int feat_same(const ctl_mem *m, const ctl_job *j)
{
    double f[4];
    job_feat(j, f);
    for (int i = 0; i < 4; i++)
        if (m->feat[i] > 0 && f[i] > 0 &&
            fabs(m->feat[i] - f[i]) > CTL_MEM_FEAT_TOL * fmax(m->feat[i], f[i]))
            return 0;
    return 1;
}

/* the memory's index (s->mem_idx, ctl_slots.h): ctl_jobidx's hash with the
   GPU count; O(1) lookups at fleet scale */
static size_t mem_hash(const char *id, int tier, int gpus)
{
    return ctl_jobidx_hash(id, tier) ^ ((size_t)gpus * 0x9e3779b97f4a7c15ull);
}

static size_t mem_hash_at(const void *ud, size_t pos)
{
    const ctl_mem *m = &((const ctl_state *)ud)->mem[pos];
    return mem_hash(m->id, m->tier, m->gpus);
}

static long mem_pos(const ctl_state *s, const char *id, int tier, int gpus, double hw_max_w)
{
    const ctl_slots *t = &s->mem_idx;
    for (size_t k = ctl_slots_first(t, mem_hash(id, tier, gpus)); k < t->cap && t->slot[k];
         k = ctl_slots_next(t, k))
        if (key_eq(&s->mem[t->slot[k] - 1], id, tier, gpus, hw_max_w))
            return (long)(t->slot[k] - 1);
    return -1;
}

static ctl_mem *mem_find(ctl_state *s, const ctl_job *j)
{
    long at = mem_pos(s, j->id, j->tier, j->gpus, j->hw_max_w);
    return at >= 0 ? &s->mem[at] : NULL;
}

/* job j's remembered points forgotten (its job ended: the key cannot
   tell the next job under its id apart, issue 41): out of the table (the
   index rebuilt) and, through the decision, out of SQLite */
void ctl_mem_forget(ctl_state *s, const ctl_job *j, ctl_decision *d)
{
    long at = mem_pos(s, j->id, j->tier, j->gpus, j->hw_max_w);
    if (at < 0) return;
    ctl_mem gone = s->mem[at];
    s->mem[at] = s->mem[--s->nmem];
    ctl_slots_free(&s->mem_idx);
    if (ctl_slots_reserve(&s->mem_idx, s->nmem + 1, mem_hash_at, s) == 0)
        for (size_t k = 0; k < s->nmem; k++) ctl_slots_put(&s->mem_idx, mem_hash_at(s, k), k);
    gone.npt = 0; /* a row with no points: deleted (ctl_persist.c) */
    gone.forget = 1;
    if (PFI_VEC_RESERVE(d->mem_rows, d->mem_rows_cap, d->nmem_rows + 1, NULL)) return;
    d->mem_rows[d->nmem_rows++] = gone;
}

int ctl_mem_put(ctl_state *s, const ctl_mem *m)
{
    long at = mem_pos(s, m->id, m->tier, m->gpus, m->hw_max_w);
    if (at >= 0) {
        s->mem[at] = *m;
        return 0;
    }
    if (PFI_VEC_RESERVE(s->mem, s->mem_cap, s->nmem + 1, NULL) ||
        ctl_slots_reserve(&s->mem_idx, s->nmem + 1, mem_hash_at, s))
        return -1;
    s->mem[s->nmem] = *m;
    ctl_slots_put(&s->mem_idx, mem_hash_at(s, s->nmem), s->nmem);
    s->nmem++;
    return 0;
}

void ctl_profile_keep(ctl_state *s, const ctl_job *j, ctl_decision *d)
{
    ctl_mem m;
    memset(&m, 0, sizeof m);
    snprintf(m.id, sizeof m.id, "%s", j->id);
    m.tier = j->tier, m.gpus = j->gpus, m.hw_max_w = j->hw_max_w;
    job_feat(j, m.feat);
    for (int i = 0; i < 4; i++)
        if (!(m.feat[i] > 0)) m.feat[i] = 0;
    m.profiled = j->prof.state == CTL_PROF_DONE && j->prof.npt > 0;
    m.cost_ratio = j->prof.cost_ratio;
    m.npt = j->nknown;
    memcpy(m.pt, j->known, j->nknown * sizeof *m.pt);
    m.t = s->now;
    if (ctl_mem_put(s, &m) ||
        PFI_VEC_RESERVE(d->mem_rows, d->mem_rows_cap, d->nmem_rows + 1, NULL)) {
        ctl_note(&d->notes, "error: out of memory: job %s's measured points not kept", j->id);
        return;
    }
    d->mem_rows[d->nmem_rows++] = m;
}

void ctl_known_set(ctl_job *j, const pfi_online_point *pt, size_t n)
{
    if (n > CTL_KNOWN_MAX) pt += n - CTL_KNOWN_MAX, n = CTL_KNOWN_MAX; /* the newest */
    memcpy(j->known, pt, n * sizeof *pt);
    j->nknown = n;
}

static void known_add(ctl_job *j, const pfi_online_point *pt, size_t n)
{
    pfi_online_point all[CTL_KNOWN_MAX + CTL_PROFILE_MAX];
    memcpy(all, j->known, j->nknown * sizeof *all);
    memcpy(all + j->nknown, pt, n * sizeof *all);
    ctl_known_set(j, all, j->nknown + n);
}

static void opts(const ctl_cfg *cfg, pfi_profile_opts *o)
{
    pfi_profile_opts_default(o);
    o->points = (int)cfg->profile_points;
    o->steps = (int)cfg->profile_samples;
    o->step_s = cfg->period_s;
    o->settle_s = cfg->profile_settle_periods * cfg->period_s;
    o->cost_max = cfg->profile_cost_frac;
    o->deep_points = (int)cfg->profile_deep_points;
}

static pfi_alloc_job rule_job(const ctl_job *j)
{
    double pmax = j->prof.p_max, pmin = j->gpus * j->cap_min_w * 0.97;
    if (!(pmin < pmax * 0.99)) pmin = pmax; /* no room below the ceiling */
    return (pfi_alloc_job){.gpus = j->gpus,
                           .tokens_per_s_max = j->prof.t_max,
                           .power_max_w = pmax,
                           .power_min_w = pmin,
                           .sla_tier = j->tier,
                           .cap_min_w = j->cap_min_w,
                           .cap_max_w = j->cap_max_w};
}

static int opted_out(const ctl_cfg *cfg, const char *id)
{
    size_t i;
    json_t *x;
    json_array_foreach(cfg->profile_opt_out, i, x) if (!strcmp(json_string_value(x), id)) return 1;
    return 0;
}

/* why job j is never profiled ("" : it may be) */
static const char *off_reason(const ctl_cfg *cfg, const ctl_job *j)
{
    if (!cfg->profile) return "profiles off";
    if (cfg->dry_run) return "dry run";
    if (j->tier == 0) return "Flex 0";
    if (cfg->profile_opt_out && opted_out(cfg, j->id)) return "opted out";
    return "";
}

static void finish(ctl_state *s, ctl_job *j, const char *why, ctl_decision *d)
{
    ctl_profile *p = &j->prof;
    p->state = CTL_PROF_DONE;
    p->why = why;
    p->target_w = p->cap_w = 0;
    p->ended_t = s->now;
    known_add(j, p->pt, p->npt);
    ctl_note(&d->notes,
             "job %s: profile done: %zu points in %.0f s, %.2f%% of its first hour's throughput "
             "given up (stopped: %s)",
             j->id, p->npt, s->now - p->started_t, 100 * p->cost_ratio, why);
    ctl_profile_keep(s, j, d);
}

/* the next point, or the end of the profile */
static void next_point(const ctl_cfg *cfg, ctl_state *s, ctl_job *j, ctl_decision *d)
{
    ctl_profile *p = &j->prof;
    pfi_profile_opts o;
    opts(cfg, &o);
    pfi_alloc_job aj = rule_job(j);
    double next_w = 0;
    pfi_profile_stop st = pfi_profile_next(&aj, &o, p->pt, p->npt, p->spent_token_s, &next_w);
    if (p->npt >= CTL_PROFILE_MAX) st = PFI_PROFILE_DONE; /* room for no more */
    double cap = next_w / j->gpus;
    if (st == PFI_PROFILE_GO && cap >= j->cap_max_w - 0.5) st = PFI_PROFILE_NOT_ALLOWED;
    if (st != PFI_PROFILE_GO) {
        finish(s, j, pfi_profile_stop_name(st), d);
        return;
    }
    p->target_w = next_w;
    /* a whole watt, as the allocator's caps (pfi_alloc_out.cap_w): an agent
       or driver that keeps whole watts still shows the cap asked for (a cap
       of 313.5 W read back as 314 W was never "at the cap": the point was
       never measured while its cost ran) */
    p->cap_w = fmax(floor(cap), ceil(j->cap_min_w));
    p->settle_left = (int)cfg->profile_settle_periods;
    p->ns = 0;
    p->off_cap = 0;
}

/* start job j's profile if it may and can: its remembered points first */
static void maybe_start(const ctl_cfg *cfg, ctl_state *s, ctl_job *j, ctl_decision *d)
{
    ctl_profile *p = &j->prof;
    const char *off = off_reason(cfg, j);
    if (*off) {
        p->state = CTL_PROF_OFF;
        p->why = off;
        return;
    }
    double w, tok;
    if (!j->reachable || ctl_baseline_now(cfg, j, &w, &tok) != CTL_BASE_STEADY || !(tok > 0) ||
        !(j->gpus > 0) || !(j->cap_min_w > 0) || !isfinite(j->cap_max_w))
        return; /* not yet */
    if (!j->mem_checked) {
        j->mem_checked = 1;
        ctl_mem *m = mem_find(s, j);
        if (m && s->now - m->t > CTL_MEM_EXPIRE_S) {
            ctl_note(&d->notes, "job %s: its remembered points are %.0f days old: not used", j->id,
                     (s->now - m->t) / 86400);
            m = NULL;
        } else if (m && !feat_known(m, j)) {
            ctl_note(&d->notes,
                     "job %s: remembered points under its id, but no telemetry to tell the "
                     "jobs apart: profiled again",
                     j->id);
            m = NULL;
        }
        if (m && !feat_same(m, j))
            ctl_note(&d->notes,
                     "warning: job %s: its remembered points are from a job whose telemetry "
                     "differs by more than 15%%: not used (a different job under the same id)",
                     j->id);
        else if (m) {
            ctl_known_set(j, m->pt, m->npt);
            if (m->profiled) {
                p->state = CTL_PROF_DONE;
                p->why = "remembered";
                p->cost_ratio = m->cost_ratio;
                /* its points as remembered (the profile's, and any event's since) */
                p->npt = m->npt < CTL_PROFILE_MAX ? m->npt : CTL_PROFILE_MAX;
                memcpy(p->pt, m->pt, p->npt * sizeof *p->pt);
                ctl_note(&d->notes,
                         "job %s: %zu points remembered from its profile: not profiled "
                         "again",
                         j->id, m->npt);
                return;
            }
        }
    }
    p->state = CTL_PROF_RUN;
    p->why = "";
    p->t_max = tok, p->p_max = w;
    p->spent_token_s = p->cost_ratio = 0;
    p->npt = 0;
    p->started_t = s->now;
    p->ended_t = NAN;
    ctl_note(&d->notes, "job %s: profile started at %.0f W, %.4g tokens/s", j->id, w, tok);
    next_point(cfg, s, j, d);
}

/* a period of a running profile: cost, samples, the next point */
static void run(const ctl_cfg *cfg, ctl_state *s, ctl_job *j, double dt, ctl_decision *d)
{
    ctl_profile *p = &j->prof;
    p->paused = 0;
    if (!j->reachable) return; /* its agent is away: the lease hands the caps back */
    int at_cap = fabs(j->cap_w - p->cap_w) < 0.5;
    p->off_cap = at_cap ? 0 : p->off_cap + 1;
    if (isfinite(j->tokens_per_s) && j->cap_w < j->cap_max_w - 0.5)
        p->spent_token_s += fmax(0, p->t_max - j->tokens_per_s) * dt;
    p->cost_ratio = p->spent_token_s / (p->t_max * 3600);
    if (at_cap && isfinite(j->tokens_per_s) && j->measured_w > 0) {
        if (p->settle_left > 0) p->settle_left--;
        else if (p->ns < CTL_PROF_SAMPLES_MAX) {
            p->sp[p->ns] = j->measured_w;
            /* elasticity at most 1 (ctl_claims.c) */
            p->st[p->ns++] = ctl_claim_clamp(j->tokens_per_s, j->measured_w, p->t_max, p->p_max);
        }
    }
    /* the cost as it goes: a point that reaches the bound ends there, kept
       with at least a quarter of its samples (and 2), the profile with it */
    int spent = p->spent_token_s >= cfg->profile_cost_frac * p->t_max * 3600;
    size_t quarter = (size_t)ceil(cfg->profile_samples / 4), least = quarter > 2 ? quarter : 2;
    int full = p->ns >= (size_t)cfg->profile_samples;
    if (full || (spent && p->ns >= least)) {
        pfi_online_point *x = &p->pt[p->npt++];
        ctl_mean_se(p->sp, p->ns, CTL_PROF_CV_POWER, &x->power_w, &x->power_se_w);
        ctl_mean_se(p->st, p->ns, CTL_PROF_CV_TOKENS, &x->tokens_per_s, &x->tokens_se);
        p->ns = 0;
    }
    if (spent) finish(s, j, "cost", d);
    else if (full) next_point(cfg, s, j, d);
    /* the GPUs do not take the point's cap (an administrator's limit, a
       driver that clamps it, a lost push): stop rather than spend the
       budget on a point that is never measured */
    else if (p->off_cap > CTL_PROF_OFF_CAP_PERIODS) finish(s, j, "cap not taken", d);
}

/* an event runs or is due within a point's time and a lease */
static int grid_busy(const ctl_cfg *cfg, const ctl_state *s, double now, int active)
{
    if (active) return 1;
    double horizon =
        (cfg->profile_settle_periods + cfg->profile_samples + 1) * cfg->period_s + cfg->lease_s;
    for (size_t i = 0; i < s->nevents; i++)
        if (s->event[i].status == CTL_EV_SCHEDULED && s->event[i].ev.start < now + horizon)
            return 1;
    return 0;
}

void ctl_profile_period(const ctl_cfg *cfg, ctl_state *s, double now, double dt, int active,
                        ctl_decision *d)
{
    int busy = grid_busy(cfg, s, now, active);
    s->profiling = 0;
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        ctl_profile *p = &j->prof;
        if (busy) {
            if (p->state == CTL_PROF_RUN && !p->paused) {
                p->paused = 1;
                p->ns = 0; /* the point starts over after the event */
                p->off_cap = 0;
                p->settle_left = (int)cfg->profile_settle_periods;
                ctl_note(&d->notes, "job %s: profile paused (%s)", j->id,
                         active ? "an event runs" : "an event is due");
            }
            continue;
        }
        if (j->untrusted && (p->npt || j->nknown || p->state < CTL_PROF_DONE)) {
            /* its claims are set aside (ctl_claims.c): its points too */
            p->npt = 0;
            j->nknown = 0;
            if (p->state == CTL_PROF_RUN) finish(s, j, "claims not corroborated", d);
            else if (p->state == CTL_PROF_WAIT)
                p->state = CTL_PROF_OFF, p->why = "claims not corroborated";
            continue;
        }
        if (p->state == CTL_PROF_WAIT) maybe_start(cfg, s, j, d);
        else if (p->state == CTL_PROF_RUN) run(cfg, s, j, p->paused ? 0 : dt, d);
        if (p->state == CTL_PROF_RUN && p->cap_w > 0 && j->reachable) {
            j->alloc_cap_w = p->cap_w;
            j->alloc_w = p->target_w;
            s->profiling = 1;
        }
    }
    d->profiling = s->profiling;
}

static const char *const state_name[] = {"waiting", "running", "done", "off"};

json_t *ctl_profile_json(const ctl_job *j)
{
    const ctl_profile *p = &j->prof;
    json_t *pts = json_array();
    for (size_t i = 0; i < p->npt; i++)
        json_array_append_new(pts,
                              json_pack("{s:f,s:f,s:f,s:f}", "power_w", p->pt[i].power_w,
                                        "power_se_w", p->pt[i].power_se_w, "tokens_per_s",
                                        p->pt[i].tokens_per_s, "tokens_se", p->pt[i].tokens_se));
    json_t *o = json_pack("{s:s,s:s,s:o,s:i,s:b}", "state", state_name[p->state], "stopped",
                          p->why ? p->why : "", "points", pts, "known_points", (int)j->nknown,
                          "paused", p->paused);
    json_object_set_new(o, "cost_ratio", json_real(p->cost_ratio));
    json_object_set_new(o, "cap_w", p->cap_w > 0 ? json_real(p->cap_w) : json_null());
    return o;
}

const char *ctl_profile_state_name(const ctl_job *j)
{
    return state_name[j->prof.state];
}
