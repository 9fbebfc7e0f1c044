/* ctl_offer.c — the offer's snapshot, its thread and its surfaces
 * (ctl_offer.h). The snapshot owns everything the thread reads (the
 * allocation inputs with their curves, each job's measured points), so the
 * thread never touches the controller's state; the result is built whole
 * and swapped in under the offer's own lock, which is never held while the
 * controller's is taken. */
#include "ctl_offer.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl_alloc_in.h"
#include "ctl_learn.h"
#include "ctl_offer_snap.h"
#include "offer.h"
#include "power_control.h"
#include "strategy.h"

#define OFFER_HIST_MAX 2880  /* the status page's day at the default 30 s */
#define OFFER_HIST_S 86400.0 /* ... and never older than a day */

typedef struct result {
    double t, base_w, floors_w, measured_ratio, shed_now_w, facility;
    int floors_pct, normalized, active;
    double offer_w[PFI_OFFER_NCOST], total_w[PFI_OFFER_NCOST], measured[PFI_OFFER_NCOST];
    json_t *json; /* with the jobs */
} result;

struct ctl_offer {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    snap *pending; /* handed over, not yet taken */
    int stop, busy;
    result *last;
    uint64_t jobs_hash;
    double next_t;
    unsigned long long computed;
    double compute_s; /* the last evaluation's wall time */
    ctl_queue queue;  /* Slurm's queue: the thread's alone */
    char queue_said[sizeof((ctl_queue *)0)->error];
    /* the whole offer at each cost over the last day (a ring, oldest at
       hist_head): the status page's plot, kept here, not in the database */
    double hist_t[OFFER_HIST_MAX], hist_w[OFFER_HIST_MAX][PFI_OFFER_NCOST];
    size_t hist_n, hist_head;
};

static void history_add(struct ctl_offer *F, const result *R)
{
    while (F->hist_n && R->t - F->hist_t[F->hist_head] > OFFER_HIST_S) /* older than a day */
        F->hist_head = (F->hist_head + 1) % OFFER_HIST_MAX, F->hist_n--;
    size_t at = (F->hist_head + F->hist_n) % OFFER_HIST_MAX;
    if (F->hist_n == OFFER_HIST_MAX) F->hist_head = (F->hist_head + 1) % OFFER_HIST_MAX;
    else F->hist_n++;
    F->hist_t[at] = R->t;
    memcpy(F->hist_w[at], R->total_w, sizeof F->hist_w[at]);
}

static void snap_free(snap *S)
{
    if (!S) return;
    for (size_t q = 0; S->prior_of && q < S->ai.np; q++)
        if (S->prior_of[q]) pfi_curve_dispose(&S->prior[q]);
    ctl_alloc_in_free(&S->ai);
    free(S->jobs), free(S->known), free(S->id), free(S->tier), free(S->clamped);
    free(S->prior), free(S->prior_of);
    free(S);
}

static void result_free(result *R)
{
    if (!R) return;
    json_decref(R->json);
    free(R);
}

static const char *const prior_name[] = {NULL, "features", "population"};

/* a job's part at the per-job cost: its baseline, its shed (also into
   shed_w), measured or not, the prior its unmeasured part rests on */
static json_t *jobs_json(snap *S, const pfi_offer *o, double *target_w, double *shed_w)
{
    json_t *a = json_array();
    int k = o->cut_pct[CTL_OFFER_JOB_COST];
    int ok = k > 0 && ctl_offer_snap_alloc(S, k, target_w) == 0;
    for (size_t q = 0; q < S->ai.np; q++) {
        int m = 0;
        double tw = ok ? target_w[q] : S->jobs[q].base_w;
        pfi_offer_tokens(&S->jobs[q], tw, &m);
        shed_w[q] = fmax(0, S->jobs[q].base_w - tw);
        json_array_append_new(a,
                              json_pack("{s:s,s:i,s:f,s:f,s:b,s:b,s:s?}", "id", S->id[q], "tier",
                                        S->tier[q], "base_kw", S->jobs[q].base_w / 1000, "shed_kw",
                                        fmax(0, S->jobs[q].base_w - tw) * S->facility / 1000,
                                        "measured", m && S->jobs[q].nknown > 0, "clamped",
                                        S->clamped[q], "prior", prior_name[S->prior_of[q]]));
    }
    return a;
}

static json_t *offers_json(const result *R)
{
    json_t *a = json_array();
    for (int c = 0; c < PFI_OFFER_NCOST; c++)
        json_array_append_new(a, json_pack("{s:f,s:f,s:f,s:f}", "max_loss_pct",
                                           100 * pfi_offer_costs[c], "kw", R->offer_w[c] / 1000,
                                           "total_kw", R->total_w[c] / 1000, "measured_share",
                                           R->measured[c]));
    return a;
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static result *evaluate(snap *S, const ctl_queue *queue)
{
    result *R = calloc(1, sizeof *R);
    double *tw = malloc((S->ai.np + 1) * sizeof *tw), *shed = malloc((S->ai.np + 1) * sizeof *shed);
    pfi_offer o;
    if (!R || !tw || !shed ||
        pfi_offer_compute(S->jobs, S->ai.np, ctl_offer_snap_alloc, S, tw, &o, NULL)) {
        free(tw), free(shed), free(R);
        return NULL;
    }
    R->t = S->t, R->base_w = S->base_w * S->facility, R->facility = S->facility;
    R->floors_pct = o.floors_pct, R->normalized = o.normalized, R->active = S->active;
    R->floors_w = S->base_w * o.floors_pct / 100 * S->facility;
    R->shed_now_w = S->active ? S->shed_now_w * S->facility : 0;
    for (int c = 0; c < PFI_OFFER_NCOST; c++) {
        R->total_w[c] = S->base_w * o.cut_pct[c] / 100 * S->facility;
        R->offer_w[c] = fmax(0, R->total_w[c] - R->shed_now_w); /* what remains */
        R->measured[c] = o.cut_pct[c] > 0 ? o.measured[o.cut_pct[c]] : 1;
    }
    R->measured_ratio = R->measured[CTL_OFFER_JOB_COST];
    char t[40];
    pfi_rfc3339_format(S->t, t, sizeof t);
    json_t *j =
        json_pack("{s:s,s:s,s:f,s:f,s:i,s:f,s:b,s:f,s:b,s:o}", "computed_at", t, "strategy",
                  pfi_strategy_name(S->o.strategy), "baseline_kw", R->base_w / 1000, "floors_kw",
                  R->floors_w / 1000, "floors_cut_pct", o.floors_pct, "facility_factor",
                  S->facility, "event_active", S->active, "shed_now_kw", R->shed_now_w / 1000,
                  "normalized", o.normalized, "offers", offers_json(R));
    static const char *const why[] = {"tier", "measured", "grid"};
    json_object_set_new(j, "floors_by", json_string(why[o.floors_why]));
    json_object_set_new(j, "trigger_latency_s", num_or_null(S->trigger_s));
    json_object_set_new(j, "ramp_s", json_real(S->ramp_s));
    json_object_set_new(j, "time_to_full_shed_s",
                        num_or_null(S->ramp_s + (isfinite(S->trigger_s) ? S->trigger_s : 0)));
    json_object_set_new(j, "jobs", jobs_json(S, &o, tw, shed));
    ctl_forecast_json(j, S, queue, shed);
    R->json = j;
    free(tw), free(shed);
    return R;
}

static void *offer_thread(void *arg)
{
    ctl *c = arg;
    struct ctl_offer *F = c->offer;
    pthread_mutex_lock(&F->mu);
    while (!F->stop) {
        if (!F->pending) {
            pthread_cond_wait(&F->cv, &F->mu);
            continue;
        }
        snap *S = F->pending;
        F->pending = NULL;
        F->busy = 1;
        pthread_mutex_unlock(&F->mu);
        ctl_forecast_refresh(&F->queue, S);
        if (strcmp(F->queue.error, F->queue_said)) { /* logged when it changes */
            if (F->queue.error[0])
                ctl_log(c, "warning: the offer's forecast: %s: the present fleet persists",
                        F->queue.error);
            else ctl_log(c, "the offer's forecast reads Slurm's queue again");
            snprintf(F->queue_said, sizeof F->queue_said, "%s", F->queue.error);
        }
        double w0 = pfi_wall_monotonic();
        result *R = evaluate(S, &F->queue);
        double dt = pfi_wall_monotonic() - w0;
        snap_free(S);
        pthread_mutex_lock(&F->mu);
        F->busy = 0;
        if (R) {
            result_free(F->last);
            F->last = R;
            history_add(F, R);
            F->computed++;
            F->compute_s = dt;
        }
    }
    pthread_mutex_unlock(&F->mu);
    return NULL;
}

int ctl_offer_start(ctl *c)
{
    struct ctl_offer *F = calloc(1, sizeof *F);
    if (!F) return -1;
    pthread_mutex_init(&F->mu, NULL);
    pthread_cond_init(&F->cv, NULL);
    F->next_t = -INFINITY;
    F->queue.read_t = NAN;
    c->offer = F;
    if (pthread_create(&F->th, NULL, offer_thread, c)) {
        ctl_log(c, "error: the offer's thread could not start");
        return -1;
    }
    F->started = 1;
    return 0;
}

void ctl_offer_stop(ctl *c)
{
    struct ctl_offer *F = c->offer;
    if (!F) return;
    pthread_mutex_lock(&F->mu);
    F->stop = 1;
    pthread_cond_signal(&F->cv);
    pthread_mutex_unlock(&F->mu);
    if (F->started) pthread_join(F->th, NULL);
    snap_free(F->pending);
    result_free(F->last);
    free(F->queue.job);
    pthread_mutex_destroy(&F->mu);
    pthread_cond_destroy(&F->cv);
    free(F);
    c->offer = NULL;
}

/* FNV-1a over the jobs' ids and tiers: the set changed */
static uint64_t jobs_hash(const ctl_state *s)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < s->njobs; k++) {
        for (const char *p = s->job[k].id; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
        h = (h ^ (uint64_t)(s->job[k].tier + 2)) * 1099511628211ull;
    }
    return h;
}

/* job j into the snapshot at q (the plan's inputs: ctl_plan.c). A job an
   admin's or an out-of-band limit holds below its baseline counts at that
   limit (issue 44: what it draws, not what it would) */
static void snap_job(snap *S, const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_job *j,
                     size_t k, double bw)
{
    size_t q = S->ai.np;
    double lim_w = j->gpus * ctl_job_limit_w(j);
    S->clamped[q] = ctl_job_clamped(j) || lim_w < bw;
    if (lim_w < bw) bw = lim_w;
    double tok = isfinite(j->base_tokens) ? j->base_tokens : j->tokens_per_s;
    if (j->untrusted) tok = NAN; /* its claims were not corroborated (ctl_claims.c) */
    ctl_alloc_in_add(&S->ai, j, k, bw, tok);
    ctl_alloc_in_belief(&S->ai, cfg, cm, j);
    snprintf(S->id[q], sizeof S->id[q], "%s", j->id);
    S->tier[q] = j->tier;
    size_t nk = j->untrusted ? 0 : j->nknown;
    memcpy(S->known[q], j->known, nk * sizeof *j->known);
    /* nothing measured: the prior's conservative bound where a curve model
       gives one, else the curve the strategy believes (or none) */
    const pfi_curve *pred = S->ai.pj[q].pred_curve;
    if (!nk && (S->prior_of[q] = ctl_job_prior(cm, j, bw, tok, &S->prior[q]))) pred = &S->prior[q];
    S->jobs[q] = (pfi_offer_job){j->gpus, bw, tok, S->known[q], nk, pred};
    S->base_w += bw;
    if (S->active) S->shed_now_w += fmax(0, bw - j->measured_w);
}

static snap *snap_of(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_state *s)
{
    snap *S = calloc(1, sizeof *S);
    size_t n = s->njobs + 1;
    if (!S || ctl_alloc_in_new(&S->ai, s->njobs)) return free(S), NULL;
    S->jobs = calloc(n, sizeof *S->jobs), S->known = calloc(n, sizeof *S->known);
    S->id = calloc(n, sizeof *S->id), S->tier = calloc(n, sizeof *S->tier);
    S->clamped = calloc(n, sizeof *S->clamped);
    S->prior = calloc(n, sizeof *S->prior), S->prior_of = calloc(n, sizeof *S->prior_of);
    if (!S->jobs || !S->known || !S->id || !S->tier || !S->clamped || !S->prior || !S->prior_of)
        return snap_free(S), NULL;
    S->t = s->now, S->active = s->active, S->facility = cfg->offer_facility;
    S->ramp_s = cfg->ramp_s;
    snprintf(S->squeue, sizeof S->squeue, "%s", cfg->offer_squeue);
    S->squeue_s = cfg->offer_squeue_s, S->squeue_timeout_s = cfg->offer_squeue_timeout_s;
    S->horizon_h = cfg->offer_horizon_h, S->default_tier = cfg->default_tier;
    S->cfg_strategy = cfg->strategy;
    S->trigger_s = NAN;
    for (size_t k = 0; k < s->njobs; k++) {
        const ctl_job *j = &s->job[k];
        double bw = ctl_plan_base_w(cfg, s, j);
        /* unsteerable: unreachable, a GPU the agent will not cap, no baseline */
        if (!j->reachable || j->gpu_unavailable || !(bw > 0) || j->gpus <= 0)
            S->fixed_w += j->measured_w;
        else snap_job(S, cfg, cm, j, k, bw);
    }
    ctl_alloc_in_opts(&S->ai, cfg, &S->o);
    return S;
}

static snap *snap_take(ctl *c)
{
    snap *S = snap_of(&c->cfg, c->have_curve_model ? &c->curve_model : NULL, &c->st);
    if (S) S->trigger_s = c->triggers ? c->trigger_push_s : NAN;
    return S;
}

json_t *ctl_offer_eval_json(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_state *s,
                            const ctl_queue *q)
{
    snap *S = snap_of(cfg, cm, s);
    result *R = S ? evaluate(S, q) : NULL;
    snap_free(S);
    json_t *o = R ? json_incref(R->json) : NULL;
    result_free(R);
    return o;
}

int ctl_offer_eval(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_state *s, double *base_w,
                   double *total_w, double *floors_w)
{
    snap *S = snap_of(cfg, cm, s);
    result *R = S ? evaluate(S, NULL) : NULL;
    snap_free(S);
    if (!R) return -1;
    *base_w = R->base_w, *floors_w = R->floors_w;
    for (int c = 0; c < PFI_OFFER_NCOST; c++) total_w[c] = R->total_w[c];
    result_free(R);
    return 0;
}

_Static_assert(sizeof((ctl_event *)0)->offer_start_w / sizeof(double) == PFI_OFFER_NCOST,
               "ctl_event's offer arrays hold one value per cost");

/* the offer each event was notified with and started with (its report):
   the last one computed before; unknown for one seen late (a restart) */
static void events_offers(ctl *c, const result *R)
{
    double now = pfi_clock_now(), late = 3 * c->cfg.period_s;
    for (size_t i = 0; i < c->st.nevents; i++) {
        ctl_event *e = &c->st.event[i];
        double ann = isfinite(e->announced_t) ? e->announced_t : e->ev.start;
        if (!e->offer_notified) {
            e->offer_notified = 1;
            for (int k = 0; k < PFI_OFFER_NCOST; k++)
                e->offer_notified_w[k] = R && now - ann <= late ? R->total_w[k] : NAN;
        }
        if (!e->offer_started && e->status == CTL_EV_ACTIVE) {
            e->offer_started = 1;
            for (int k = 0; k < PFI_OFFER_NCOST; k++)
                e->offer_start_w[k] = R && now - e->ev.start <= late ? R->total_w[k] : NAN;
        }
    }
}

void ctl_offer_period(ctl *c)
{
    struct ctl_offer *F = c->offer;
    if (!F || !(c->cfg.offer_s > 0)) return;
    pthread_mutex_lock(&F->mu);
    events_offers(c, F->last);
    pthread_mutex_unlock(&F->mu);
    uint64_t h = jobs_hash(&c->st);
    double now = pfi_clock_now();
    pthread_mutex_lock(&F->mu);
    int due = (now >= F->next_t || h != F->jobs_hash) && !F->pending && !F->busy;
    pthread_mutex_unlock(&F->mu);
    if (!due) return;
    snap *S = snap_take(c);
    if (!S) {
        ctl_log(c, "warning: out of memory: the offer was not updated");
        return;
    }
    pthread_mutex_lock(&F->mu);
    F->pending = S;
    F->jobs_hash = h;
    F->next_t = now + c->cfg.offer_s;
    pthread_cond_signal(&F->cv);
    pthread_mutex_unlock(&F->mu);
}

json_t *ctl_offer_event_json(const ctl_event *e, double delivered_w)
{
    json_t *costs = json_array(), *at_n = json_array(), *at_s = json_array();
    for (int k = 0; k < PFI_OFFER_NCOST; k++) {
        json_array_append_new(costs, json_real(100 * pfi_offer_costs[k]));
        double n = e->offer_notified ? e->offer_notified_w[k] : NAN;
        double s = e->offer_started ? e->offer_start_w[k] : NAN;
        json_array_append_new(at_n, num_or_null(n / 1000));
        json_array_append_new(at_s, num_or_null(s / 1000));
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "max_loss_pct", costs, "at_notification_kw", at_n,
                     "at_start_kw", at_s, "delivered_kw", num_or_null(delivered_w / 1000));
}

json_t *ctl_offer_history_json(ctl *c)
{
    struct ctl_offer *F = c->offer;
    json_t *costs = json_array(), *pts = json_array();
    for (int k = 0; k < PFI_OFFER_NCOST; k++)
        json_array_append_new(costs, json_real(100 * pfi_offer_costs[k]));
    if (F) {
        pthread_mutex_lock(&F->mu);
        for (size_t i = 0; i < F->hist_n; i++) {
            size_t at = (F->hist_head + i) % OFFER_HIST_MAX;
            json_t *p = json_array();
            json_array_append_new(p, json_real(F->hist_t[at]));
            for (int k = 0; k < PFI_OFFER_NCOST; k++)
                json_array_append_new(p, json_real(F->hist_w[at][k] / 1000));
            json_array_append_new(pts, p);
        }
        pthread_mutex_unlock(&F->mu);
    }
    return json_pack("{s:o,s:o}", "max_loss_pct", costs, "points", pts);
}

json_t *ctl_offer_json(ctl *c, int with_jobs)
{
    struct ctl_offer *F = c->offer;
    if (!F) return json_null();
    pthread_mutex_lock(&F->mu);
    json_t *o = F->last ? json_deep_copy(F->last->json) : json_null();
    double dt = F->compute_s;
    pthread_mutex_unlock(&F->mu);
    if (json_is_object(o)) {
        if (!with_jobs) json_object_del(o, "jobs");
        json_object_set_new(o, "compute_s", json_real(dt));
    }
    return o ? o : json_null();
}

void ctl_offer_metrics(ctl *c, pfi_buf *b)
{
    struct ctl_offer *F = c->offer;
    if (!F) return;
    pthread_mutex_lock(&F->mu);
    result R = F->last ? *F->last : (result){0};
    int have = F->last != NULL;
    pthread_mutex_unlock(&F->mu);
    if (!have) return;
    pfi_buf_printf(b, "# HELP pfi_ctl_offer_watts What the site can shed now (GPU board power x "
                      "offer.facility_factor) at an expected loss of throughput of at most "
                      "max_loss_ratio (issue 44).\n# TYPE pfi_ctl_offer_watts gauge\n");
    for (int k = 0; k < PFI_OFFER_NCOST; k++)
        pfi_buf_printf(b, "pfi_ctl_offer_watts{max_loss_ratio=\"%g\"} %g\n", pfi_offer_costs[k],
                       R.offer_w[k]);
    pfi_buf_printf(b,
                   "# HELP pfi_ctl_offer_floors_watts The shed with every steerable job at its "
                   "floor (tier, admin limit).\n# TYPE pfi_ctl_offer_floors_watts gauge\n"
                   "pfi_ctl_offer_floors_watts %g\n",
                   R.floors_w);
    pfi_buf_printf(b,
                   "# HELP pfi_ctl_offer_measured_ratio The share of the 5%% offer backed by "
                   "measured curves.\n# TYPE pfi_ctl_offer_measured_ratio gauge\n"
                   "pfi_ctl_offer_measured_ratio %g\n",
                   R.measured_ratio);
}
