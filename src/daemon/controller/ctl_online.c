/* ctl_online.c — safe-online in pfi-controller (docs/allocation.md, "The
 * controller"): one pfi_online_round per control period during an event,
 * its per-job power targets handed to pfi_pc_allocate as fixed targets (the
 * feedback term and the learned power/cap ratios stay there).
 *
 * State keyed by job (id, tier), for the event:
 *   - a job that leaves drops out; a new one starts at its reference share;
 *     the others keep what they learned and their targets, the budget's
 *     difference spread by equal weight (pfi_online_rejob) — no restart;
 *   - a job on an unreachable agent keeps its target and cap and is out of
 *     moves (pfi_online_hold); the others share the budget less its target;
 *   - a job that reports no tokens/s (no step log) is held at its reference
 *     share: without evidence nothing is moved.
 * Measurements and their standard errors: the agents answer one sample a
 * period (a 1 s power reading, tokens/s over the steps of the last second),
 * so a job's measurement at its current target is the mean of its samples
 * there (taken while the agent shows the cap the control law gave it; that
 * cap may move by a watt with the learned power/cap ratio), the first one
 * after the target changed discarded (settling: one control period), at
 * most CTL_ON_SAMPLES of them. Its standard error is the
 * sample standard deviation / sqrt(k) with k >= 3 samples (never less than a
 * quarter of the prior's), else the prior coefficient of variation of one
 * sample (power 2%, tokens/s 3%) / sqrt(k).
 * A round runs when every job not held has a settled measurement (or has
 * waited CTL_ON_WAIT periods for one: then it goes without). While the
 * event's budget changes (a ramp) each period restarts from the reference
 * at the new budget (pfi_online_round's rule), keeping what was learned. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_learn.h"
#include "power_control.h"

#define CTL_ON_SAMPLES 8
#define CTL_ON_WAIT 3
#define CTL_ON_CV_POWER 0.02
#define CTL_ON_CV_TOKENS 0.03

typedef struct on_job {
    char id[64];
    int tier;
    pfi_alloc_job aj;
    int no_tokens;         /* no baseline throughput: held at its reference share */
    double target_w, at_w; /* its target now; the target its samples are at (0: none) */
    double first_w;        /* its target when the state last started from the reference
                              (and what is known: the plan before any round; NaN: none) */
    int settled, wait;
    double sp[CTL_ON_SAMPLES], st[CTL_ON_SAMPLES];
    size_t ns, head;
    int present, held;
    size_t k; /* this period's ctl_job index */
} on_job;

struct ctl_online {
    pfi_online *s;
    on_job *j;
    size_t n;
    size_t *order; /* j's indices sorted by (id, tier): lookups in O(log n) at fleet scale */
    double event_budget_w, online_budget_w; /* last period's: the event's, the state's */
    unsigned long long rounds, rejobs;
    const char *action;
    /* measured totals of the jobs not held (tokens/s, standard error): at the
       reference allocation (the first round after a restart from it, with
       the same jobs and budget since; NaN: none) and at the last round */
    double ref_tok, ref_se, now_tok, now_se;
    int at_reference; /* the targets are the reference's (not moved since) */
    /* the power the SLA floors need beyond the budget (W; 0 they fit) and
       whether that was said for this budget */
    double shortfall_w, shortfall_said_w;
    pfi_curve *prior; /* the prior bounds the state points at (restate) */
    size_t nprior;
};

static void priors_free(pfi_curve *pr, size_t n);

static void drop(ctl_online_t *o)
{
    if (!o) return;
    pfi_online_free(o->s);
    priors_free(o->prior, o->nprior);
    free(o->j);
    free(o->order);
    free(o);
}

void ctl_online_end(ctl_state *s)
{
    drop(s->online);
    s->online = NULL;
}

static int key_cmp(const char *id_a, int tier_a, const char *id_b, int tier_b)
{
    int r = strcmp(id_a, id_b);
    return r ? r : (tier_a > tier_b) - (tier_a < tier_b);
}

static int order_cmp(const void *a, const void *b, void *base)
{
    const on_job *j = base, *x = &j[*(const size_t *)a], *y = &j[*(const size_t *)b];
    return key_cmp(x->id, x->tier, y->id, y->tier);
}

/* o->order for o->j (0 when out of memory: then lookups find nothing) */
static int reorder(ctl_online_t *o)
{
    free(o->order);
    o->order = malloc((o->n + 1) * sizeof *o->order);
    if (!o->order) return -1;
    for (size_t i = 0; i < o->n; i++) o->order[i] = i;
    qsort_r(o->order, o->n, sizeof *o->order, order_cmp, o->j);
    return 0;
}

static on_job *find_key(const ctl_online_t *o, const char *id, int tier)
{
    size_t lo = 0, hi = o->order ? o->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        on_job *q = &o->j[o->order[mid]];
        int r = key_cmp(id, tier, q->id, q->tier);
        if (!r) return q;
        if (r < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

static on_job *find(const ctl_online_t *o, const ctl_job *j)
{
    return find_key(o, j->id, j->tier);
}

/* a new job's entry from what the controller knows at the event's start
 * (or, for a late job, when it is first seen) */
static void job_init(on_job *q, const ctl_job *j)
{
    memset(q, 0, sizeof *q);
    q->first_w = NAN;
    snprintf(q->id, sizeof q->id, "%s", j->id);
    q->tier = j->tier;
    double pmax = j->base_w, pmin = j->gpus * j->cap_min_w * 0.97;
    if (!(pmin < pmax * 0.99)) pmin = pmax * 0.5;
    q->no_tokens = !(j->base_tokens > 0);
    q->aj = (pfi_alloc_job){.gpus = j->gpus,
                            .tokens_per_s_max = q->no_tokens ? 1 : j->base_tokens,
                            .power_max_w = pmax,
                            .power_min_w = pmin,
                            .pfi_pred = 1,
                            .sla_tier = j->tier,
                            .cap_min_w = j->cap_min_w,
                            .cap_max_w = j->cap_max_w};
}

/* this period's sample of job q (the ctl_job j): kept when the agent shows
 * the cap we gave it (held at its ceiling: the cap sent) for a second
 * period running */
static void sample(on_job *q, const ctl_job *j)
{
    if (!(q->target_w > 0) || !(j->alloc_cap_w > 0)) return;
    if (fabs(q->target_w - q->at_w) > 1e-9 * q->aj.power_max_w) { /* moved: start over */
        q->at_w = q->target_w;
        q->settled = 0;
        q->ns = q->head = 0;
        q->wait = 0;
    }
    /* the cap the control law gave it is on the GPUs (it follows the target;
       it may move by a watt as the learned power/cap ratio does) */
    if (fabs(j->cap_w - ctl_job_cap_sent(j)) >= 0.5 || !isfinite(j->tokens_per_s) ||
        !(j->measured_w > 0))
        return;
    if (!q->settled) { /* the first sample at the new target: settling */
        q->settled = 1;
        return;
    }
    q->sp[q->head] = j->measured_w;
    /* elasticity at most 1 (ctl_claims.c) */
    q->st[q->head] = ctl_claim_clamp(j->tokens_per_s, j->measured_w, j->base_tokens, j->base_w);
    q->head = (q->head + 1) % CTL_ON_SAMPLES;
    if (q->ns < CTL_ON_SAMPLES) q->ns++;
}

/* the jobs of this period against the state's: kept (present, held when
 * unreachable), new (appended), gone (dropped). *nj: the new list (malloc'd),
 * *from: each one's index in the old list (-1: new); the count, or -1 when
 * out of memory; *changed when a job came or went */
static long match_jobs(const ctl_online_t *o, const ctl_state *c, on_job **nj_out, long **from_out,
                       int *changed)
{
    for (size_t i = 0; i < o->n; i++) o->j[i].present = 0;
    on_job *nj = malloc((o->n + c->njobs + 1) * sizeof *nj);
    long *from = malloc((o->n + c->njobs + 1) * sizeof *from);
    if (!nj || !from) {
        free(nj), free(from);
        return -1;
    }
    size_t m = 0;
    *changed = 0;
    for (size_t k = 0; k < c->njobs; k++) {
        const ctl_job *j = &c->job[k];
        on_job *q = find(o, j);
        if (q) {
            q->present = 1;
            q->held = !j->reachable;
            q->k = k;
        } else if (j->reachable && j->base_w > 0 && j->gpus > 0) {
            on_job *x = &nj[o->n + m]; /* appended below */
            job_init(x, j);
            x->present = 1;
            x->k = k;
            m++;
            *changed = 1;
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < o->n; i++)
        if (o->j[i].present) {
            nj[n] = o->j[i];
            from[n++] = (long)i;
        } else *changed = 1;
    for (size_t i = 0; i < m; i++) {
        nj[n] = nj[o->n + i];
        from[n++] = -1;
    }
    *nj_out = nj;
    *from_out = from;
    return (long)n;
}

/* no job left: the state is dropped (a job that comes starts afresh) */
static void empty(ctl_online_t *o)
{
    pfi_online_free(o->s);
    o->s = NULL;
    priors_free(o->prior, o->nprior);
    o->prior = NULL, o->nprior = 0;
    free(o->j), free(o->order);
    o->j = NULL;
    o->order = NULL;
    o->n = 0;
}

/* the held jobs' targets in the online state at positions of list l (from:
   the new list's old positions, NULL: l is the state's own list) */
static double held_targets(const ctl_online_t *o, const on_job *l, const long *from, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++)
        if (l[i].held && (!from || from[i] >= 0))
            w += pfi_online_targets(o->s)[from ? (size_t)from[i] : i];
    return w;
}

/* a new online state (the first period of the event: the reference) or
 * the old one carried over to the new jobs (pfi_online_rejob); *held_w the
 * held jobs' targets */
/* the prior's bounds of the jobs with nothing known (their first floors:
   issue 44), kept with the state that points at them (o->prior); NULL
   when there is no curve model */
static pfi_curve *priors(const pfi_modelfile *cm, const ctl_state *c, const on_job *nj, size_t n,
                         pfi_alloc_job *aj)
{
    pfi_curve *pr = cm ? calloc(n + 1, sizeof *pr) : NULL;
    for (size_t i = 0; pr && i < n; i++) {
        const ctl_job *j = &c->job[nj[i].k];
        if (nj[i].no_tokens || j->nknown || !j->reachable) continue;
        if (ctl_job_prior(cm, j, j->base_w, j->base_tokens, &pr[i])) aj[i].prior_curve = &pr[i];
    }
    return pr;
}

static void priors_free(pfi_curve *pr, size_t n)
{
    for (size_t i = 0; pr && i < n; i++)
        if (pr[i].n) pfi_curve_dispose(&pr[i]);
    free(pr);
}

static pfi_status restate(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_state *c,
                          ctl_online_t *o, const on_job *nj, const long *from, size_t n,
                          int changed, double budget_w, double *held_w, pfi_error *e)
{
    pfi_alloc_job *aj = malloc(n * sizeof *aj);
    if (!aj) return pfi_errorf(e, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        aj[i] = nj[i].aj;
        /* what is known of it (a profile, earlier events: ctl_profile.c),
           from this period's job table (it moves between periods) */
        const ctl_job *j = &c->job[nj[i].k];
        aj[i].known = nj[i].no_tokens ? NULL : j->known;
        aj[i].n_known = nj[i].no_tokens ? 0 : j->nknown;
        aj[i].prior_curve = NULL;
    }
    pfi_curve *pr = !o->s || changed ? priors(cm, c, nj, n, aj) : NULL;
    pfi_alloc_opts ao;
    pfi_alloc_opts_default(&ao);
    ao.strategy = cfg->strategy; /* a strategy that learns in rounds (ctl_learn.c) */
    pfi_online_opts oo;
    pfi_online_opts_default(&oo);
    oo.period_s = cfg->period_s;
    pfi_status st = PFI_OK;
    /* the budget of the online state: the reachable jobs' (budget - fixed)
       and the held jobs' targets */
    *held_w = o->s && !changed ? held_targets(o, nj, NULL, n) : 0;
    if (!o->s) {
        st = pfi_online_new(aj, n, budget_w, &ao, &oo, &o->s, e);
        o->action = "reference";
        o->at_reference = 1;
    } else if (changed) {
        *held_w += held_targets(o, nj, from, n); /* the held jobs' targets from the old state */
        pfi_online *ns = NULL;
        st = pfi_online_rejob(o->s, aj, n, from, budget_w + *held_w, &ns, e);
        if (!st) {
            pfi_online_free(o->s);
            o->s = ns;
            o->rejobs++;
            o->action = "rejob";
            o->at_reference = 0;
        }
    }
    if (!st && pr) { /* the new state points at pr, the old one is gone */
        priors_free(o->prior, o->nprior);
        o->prior = pr, o->nprior = n, pr = NULL;
    }
    priors_free(pr, n);
    free(aj);
    return st;
}

/* the measured totals (tokens/s) of the jobs not held at this round */
static void totals(ctl_online_t *o, const double *tk, const double *tse)
{
    double tot = 0, var = 0;
    int all = 1;
    for (size_t i = 0; i < o->n; i++) {
        if (o->j[i].held || o->j[i].no_tokens) continue;
        all &= isfinite(tk[i]);
        if (isfinite(tk[i])) tot += tk[i], var += tse[i] * tse[i];
    }
    o->now_tok = all ? tot : NAN;
    o->now_se = all ? sqrt(var) : NAN;
    if (o->at_reference) o->ref_tok = o->now_tok, o->ref_se = o->now_se;
}

/* this period's move with the same jobs: a new budget from a ramp (back to
 * the reference), a fault (rebudget), a round on settled measurements, or
 * settling */
static pfi_status move(ctl_online_t *o, double ob, int ramp, pfi_error *e)
{
    size_t n = o->n;
    double *buf = malloc((5 * n + 1) * sizeof *buf);
    if (!buf) return pfi_errorf(e, PFI_ENOMEM, "out of memory");
    double *pw = buf, *pse = buf + n, *tk = buf + 2 * n, *tse = buf + 3 * n, *tg = buf + 4 * n;
    int ready = 1;
    for (size_t i = 0; i < n; i++) {
        on_job *q = &o->j[i];
        pw[i] = pse[i] = tk[i] = tse[i] = NAN;
        if (q->held || q->no_tokens) continue;
        if (q->ns) {
            ctl_mean_se(q->sp, q->ns, CTL_ON_CV_POWER, &pw[i], &pse[i]);
            ctl_mean_se(q->st, q->ns, CTL_ON_CV_TOKENS, &tk[i], &tse[i]);
        } else if (q->wait++ < CTL_ON_WAIT) ready = 0;
    }
    pfi_status st = PFI_OK;
    if (ramp) { /* a new budget: pfi_online_round restarts from the reference */
        st = pfi_online_round(o->s, ob, pw, pse, tk, tse, tg, e);
        o->action = "reference";
        o->at_reference = 1;
    } else if (fabs(ob - o->online_budget_w) > 1e-3 * ob) {
        pfi_online_rebudget(o->s, ob); /* a fault came or went */
        o->action = "rebudget";
        o->at_reference = 0;
    } else if (ready) {
        totals(o, tk, tse);
        st = pfi_online_round(o->s, ob, pw, pse, tk, tse, tg, e);
        o->rounds++;
        o->action = "round";
        o->at_reference = 0;
        for (size_t i = 0; i < n; i++) o->j[i].wait = 0;
    } else o->action = "settling";
    free(buf);
    return st;
}

/* the targets as the reachable jobs' fixed targets */
static void hand_targets(ctl_online_t *o, const ctl_state *c, pfi_pc_job *pj, const size_t *idx,
                         size_t np)
{
    const double *t = pfi_online_targets(o->s);
    int first = !strcmp(o->action, "reference");
    for (size_t i = 0; i < o->n; i++) {
        o->j[i].target_w = t[i];
        if (first) o->j[i].first_w = t[i];
    }
    for (size_t q = 0; q < np; q++) {
        on_job *x = find(o, &c->job[idx[q]]);
        if (x) {
            pj[q].fixed_target_w = t[x - o->j];
            pj[q].fixed_floor_w = pfi_online_floor(o->s, (size_t)(x - o->j));
        }
    }
}

/* where the floors of the jobs that move do not fit what the budget leaves
 * them (the held jobs' targets out), the shortfall (W), said once per
 * change of more than 1% (docs/controller.md, "Profiles": the allocator then
 * lowers floors by tier, Flex 3 first) */
static void shortfall(ctl_online_t *o, double ob, ctl_notes *notes)
{
    const double *t = pfi_online_targets(o->s);
    double need = 0, avail = ob;
    for (size_t i = 0; i < o->n; i++) {
        if (o->j[i].held || o->j[i].no_tokens) avail -= t[i];
        else need += pfi_online_floor(o->s, i);
    }
    o->shortfall_w = fmax(0, need - avail);
    if (fabs(o->shortfall_w - o->shortfall_said_w) <= 0.01 * fmax(need, 1)) return;
    if (o->shortfall_w > 0)
        ctl_note(notes,
                 "warning: SLA shortfall: the jobs' floors need %.2f kW more than the budget "
                 "leaves them (%.2f kW of %.2f kW): floors are lowered by tier, Flex 3 first and "
                 "Flex 0 last",
                 o->shortfall_w / 1000, need / 1000, avail / 1000);
    else ctl_note(notes, "SLA shortfall over: the jobs' floors fit the budget");
    o->shortfall_said_w = o->shortfall_w;
}

void ctl_online_period(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *c, ctl_notes *notes,
                       double budget_w, double fixed_w, pfi_pc_job *pj, const size_t *idx,
                       size_t np)
{
    ctl_online_t *o = c->online;
    if (!o) {
        if (!(o = c->online = calloc(1, sizeof *o))) goto fail;
        o->ref_tok = o->ref_se = o->now_tok = o->now_se = o->event_budget_w = NAN;
    }
    o->action = "none";
    on_job *nj;
    long *from;
    int changed;
    long n = match_jobs(o, c, &nj, &from, &changed);
    if (n < 0) goto fail;
    if (n == 0) {
        free(nj), free(from);
        empty(o);
        return;
    }
    for (long i = 0; i < n; i++) {                          /* this period's samples */
        if (c->job[nj[i].k].untrusted) nj[i].no_tokens = 1; /* its claims set aside */
        if (!nj[i].held) sample(&nj[i], &c->job[nj[i].k]);
    }
    int ramp =
        isfinite(o->event_budget_w) && o->s && fabs(budget_w - o->event_budget_w) > 1e-3 * budget_w;
    double held_w = 0;
    pfi_error e;
    pfi_status st =
        restate(cfg, cm, c, o, nj, from, (size_t)n, changed, budget_w - fixed_w, &held_w, &e);
    free(o->j);
    o->j = nj;
    o->n = (size_t)n;
    free(from);
    if (reorder(o)) st = pfi_errorf(&e, PFI_ENOMEM, "out of memory");
    if (!st)
        for (long i = 0; i < n; i++) pfi_online_hold(o->s, i, o->j[i].held || o->j[i].no_tokens);
    double ob = budget_w - fixed_w + held_w;
    if (!st && !strcmp(o->action, "none")) st = move(o, ob, ramp, &e);
    if (strcmp(o->action, "round") && strcmp(o->action, "settling"))
        o->ref_tok = o->ref_se = o->now_tok = o->now_se = NAN; /* other jobs or budget */
    o->event_budget_w = budget_w;
    o->online_budget_w = ob;
    if (st) {
        ctl_note(notes, "error: safe-online: %s (this period: the reference allocator)", e.msg);
        pfi_online_free(o->s);
        o->s = NULL; /* the next period starts over from the reference */
        return;
    }
    hand_targets(o, c, pj, idx, np);
    shortfall(o, ob, notes);
    return;
fail:
    ctl_note(notes, "error: out of memory: safe-online skipped this period (the reference "
                    "allocator)");
}

json_t *ctl_online_json(const ctl_state *s)
{
    const ctl_online_t *o = s->online;
    if (!o || !o->s) return json_null();
    json_t *jobs = json_array();
    const double *t = pfi_online_targets(o->s);
    for (size_t i = 0; i < o->n && i < 256; i++) {
        const on_job *q = &o->j[i];
        json_t *x =
            json_pack("{s:s,s:i,s:f,s:f,s:b,s:i,s:i}", "job_id", q->id, "tier", q->tier, "target_w",
                      t[i], "floor_w", pfi_online_floor(o->s, i), "held", q->held || q->no_tokens,
                      "samples", (int)q->ns, "points", (int)pfi_online_points(o->s, i));
        json_object_set_new(x, "first_target_w",
                            isfinite(q->first_w) ? json_real(q->first_w) : json_null());
        json_array_append_new(jobs, x);
    }
    json_t *r = json_pack("{s:I,s:I,s:s,s:o}", "round", (json_int_t)o->rounds, "job_changes",
                          (json_int_t)o->rejobs, "action", o->action, "jobs", jobs);
    /* the measured totals (tokens/s): at the reference allocation and now */
    json_object_set_new(r, "reference_tokens_per_s",
                        isfinite(o->ref_tok) ? json_real(o->ref_tok) : json_null());
    json_object_set_new(r, "reference_tokens_se",
                        isfinite(o->ref_se) ? json_real(o->ref_se) : json_null());
    json_object_set_new(r, "tokens_per_s",
                        isfinite(o->now_tok) ? json_real(o->now_tok) : json_null());
    json_object_set_new(r, "tokens_se", isfinite(o->now_se) ? json_real(o->now_se) : json_null());
    return r;
}

unsigned long long ctl_online_rounds(const ctl_state *s)
{
    return s->online ? s->online->rounds : 0;
}

double ctl_online_target_w(const ctl_state *s, const char *id, int tier)
{
    const ctl_online_t *o = s->online;
    const on_job *q = o && o->s ? find_key(o, id, tier) : NULL;
    return q ? pfi_online_targets(o->s)[q - o->j] : NAN;
}

double ctl_online_shortfall_w(const ctl_state *s)
{
    return s->online && s->online->s ? s->online->shortfall_w : NAN;
}

size_t ctl_online_points(const ctl_state *s, const ctl_job *j, pfi_online_point *pt, size_t max)
{
    const ctl_online_t *o = s->online;
    const on_job *q = o && o->s ? find_key(o, j->id, j->tier) : NULL;
    return q && !q->no_tokens ? pfi_online_export(o->s, (size_t)(q - o->j), pt, max) : 0;
}

void ctl_online_remember(ctl_state *s, ctl_decision *d)
{
    const ctl_online_t *o = s->online;
    if (!o || !o->s) return;
    pfi_online_point pt[CTL_KNOWN_MAX * 2];
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        const on_job *q = find_key(o, j->id, j->tier);
        if (!q || q->no_tokens) continue;
        size_t n = pfi_online_export(o->s, (size_t)(q - o->j), pt, CTL_KNOWN_MAX * 2);
        if (n <= j->nknown) continue; /* nothing new measured */
        ctl_known_set(j, pt, n);
        ctl_profile_keep(s, j, d);
    }
}
