/* ctl_forecast.c — the offer over the next hours and how long it lasts
 * (issue 44; docs/controller.md, "The forecast"), in the offer's thread.
 *
 * Slurm's queue (ctl_squeue.c, every offer.squeue_interval_s, 300 s) says
 * when each running job ends at the latest (its time limit: an upper bound,
 * jobs end earlier) and when each pending job is expected to start (the
 * backfill scheduler's estimate, what `squeue --start` prints). At each
 * whole hour to offer.horizon_h the fleet is the steerable jobs still
 * running then, plus the pending GPU jobs started by then, each taken as
 * the fleet's mean per-GPU baseline and limits and no curve (the offer's
 * proportional bound: it errs low), at the default tier. Without a queue
 * (no squeue configured, or it failed) the present fleet persists. A job
 * Slurm does not list (not a Slurm job) persists too.
 *
 * sustain_s: how long the offer at 5% holds as it is: the time until jobs
 * carrying more than 5% of its shed have reached their time limits (null:
 * no known limit ends it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "ctl_offer_snap.h"
#include "ctl_squeue.h"
#include "grid_event.h"
#include "strategy.h"

#define SUSTAIN_SHARE 0.05 /* the share of the shed whose end ends the offer */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ctl_forecast_refresh(ctl_queue *q, const snap *S)
{
    if (!S->squeue[0] || S->horizon_h <= 0) return;
    double now = pfi_wall_monotonic();
    if (now < q->next_mono) return; /* not due */
    q->next_mono = now + S->squeue_s;
    pfi_squeue_job *j = NULL;
    size_t n = 0;
    char why[256];
    free(q->job), q->job = NULL, q->n = 0, q->read_t = NAN;
    if (ctl_squeue_read(S->squeue, S->squeue_timeout_s, &j, &n, why, sizeof why)) {
        snprintf(q->error, sizeof q->error, "%s", why);
        return;
    }
    q->job = j, q->n = n, q->read_t = wall_now(), q->error[0] = '\0';
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const pfi_squeue_job *)a)->id, ((const pfi_squeue_job *)b)->id);
}

/* each steerable job's end (Unix; NaN: none known) from the queue, sorted
   by id here (the queue is the thread's own) */
static void job_ends(snap *S, ctl_queue *q, double *end_t)
{
    if (q->n) qsort(q->job, q->n, sizeof *q->job, by_id);
    for (size_t k = 0; k < S->ai.np; k++) {
        pfi_squeue_job key;
        snprintf(key.id, sizeof key.id, "%s", S->id[k]);
        const pfi_squeue_job *x = q->n ? bsearch(&key, q->job, q->n, sizeof *q->job, by_id) : NULL;
        end_t[k] = x && x->running ? x->end_t : NAN;
    }
}

typedef struct ending {
    double end_t, shed_w;
} ending;

static int by_end(const void *a, const void *b)
{
    double x = ((const ending *)a)->end_t, y = ((const ending *)b)->end_t;
    return (x > y) - (x < y);
}

static double sustain_s(const snap *S, const double *end_t, const double *shed_w, double now)
{
    ending *e = malloc((S->ai.np + 1) * sizeof *e);
    double total = 0, ended = 0, r = NAN;
    size_t n = 0;
    if (!e) return NAN;
    for (size_t k = 0; k < S->ai.np; k++) {
        total += shed_w[k];
        if (shed_w[k] > 0 && isfinite(end_t[k])) e[n++] = (ending){end_t[k], shed_w[k]};
    }
    if (n) qsort(e, n, sizeof *e, by_end);
    for (size_t k = 0; k < n && total > 0; k++) {
        ended += e[k].shed_w;
        if (ended > SUSTAIN_SHARE * total) {
            r = fmax(0, e[k].end_t - now);
            break;
        }
    }
    free(e);
    return r;
}

/* the fleet's per-GPU prior for a job the forecast knows only by its GPUs
   (pending, or refilling): the mean baseline and limits, and the
   population's curve measured on the site's own fleet — at each fraction
   f = 1, 0.95, .. 0.5 of the baseline the GPU-weighted mean throughput (a
   share of the job's own) over the jobs measured there; nf: the fractions
   down to the first no job was measured at (fewer than 2: no curve) */
#define PRIOR_NF 11
typedef struct prior {
    double base_w, cap_min_w, cap_max_w;
    double t_frac[PRIOR_NF];
    int ok, nf;
} prior;

static double prior_f(int k)
{
    return 1 - 0.05 * k;
}

static void fleet_curve(const snap *S, prior *p)
{
    p->nf = 0;
    for (int k = 0; k < PRIOR_NF; k++) {
        double g = 0, t = 0;
        for (size_t q = 0; q < S->ai.np; q++) {
            const pfi_offer_job *j = &S->jobs[q];
            int m = 0;
            double v = pfi_offer_tokens(j, prior_f(k) * j->base_w, &m);
            double bt = pfi_offer_tokens(j, j->base_w, NULL);
            if (!m || !j->nknown || !(bt > 0)) continue;
            g += j->gpus, t += j->gpus * v / bt;
        }
        if (!(g > 0)) break;
        p->t_frac[k] = t / g, p->nf = k + 1;
    }
    if (p->nf < 2) p->nf = 0;
}

static prior fleet_prior(const snap *S)
{
    prior p = {0};
    double g = 0;
    for (size_t k = 0; k < S->ai.np; k++) {
        const pfi_pc_job *x = &S->ai.pj[k];
        g += x->gpus, p.base_w += x->baseline_w;
        p.cap_min_w += x->cap_min_w * x->gpus, p.cap_max_w += x->cap_max_w * x->gpus;
    }
    p.ok = g > 0 && isfinite(p.cap_max_w);
    if (p.ok) p.base_w /= g, p.cap_min_w /= g, p.cap_max_w /= g;
    if (p.ok) fleet_curve(S, &p);
    return p;
}

typedef struct point {
    double total_w[PFI_OFFER_NCOST];
    int jobs, pending, refill_gpus;
} point;

/* a job the forecast knows only by its GPUs: the fleet's prior, its
   population curve (cv, the job's own, disposed of by the caller) where
   the fleet has one */
static void add_unknown(snap *X, int gpus, const prior *P, int tier, pfi_curve *cv)
{
    prior pr = *P;
    double bw = gpus * pr.base_w;
    const pfi_curve *pred = NULL;
    pfi_point pts[PRIOR_NF];
    for (int k = 0; k < pr.nf; k++)
        pts[k] = (pfi_point){prior_f(k) * pr.cap_max_w, prior_f(k) * bw, pr.t_frac[k], NAN, NAN, 1};
    cv->n = 0;
    if (pr.nf >= 2 && pfi_curve_init(cv, pts, (size_t)pr.nf, NULL) == PFI_OK) pred = cv;
    X->ai.pj[X->ai.np] = (pfi_pc_job){.gpus = gpus,
                                      .cap_min_w = pr.cap_min_w,
                                      .cap_max_w = pr.cap_max_w,
                                      .baseline_w = bw,
                                      .baseline_tokens_per_s = NAN,
                                      .pfi_pred = NAN,
                                      .sla_tier = tier,
                                      .measured_w = bw,
                                      .cap_w = pr.cap_max_w};
    X->jobs[X->ai.np++] = (pfi_offer_job){gpus, bw, NAN, NULL, 0, pred};
    X->base_w += bw;
}

/* the offer at wall time t: the jobs running then, and the GPUs busy now
   that no known job holds then refilled (jobs not yet submitted) */
static int offer_at(const snap *S, const ctl_queue *q, const double *end_t, prior pr, double t,
                    pfi_strategy cfg_strategy, point *pt)
{
    size_t cap = S->ai.np + q->n + 1;
    snap X = *S; /* borrows S's curves and points; only these arrays are its own */
    X.ai.pj = calloc(cap, sizeof *X.ai.pj), X.ai.po = calloc(cap, sizeof *X.ai.po);
    X.jobs = calloc(cap, sizeof *X.jobs);
    double *tw = calloc(cap, sizeof *tw);
    pfi_curve *cv = calloc(cap, sizeof *cv);
    size_t ncv = 0;
    int rc = -1, missing_curve = 0;
    if (!X.ai.pj || !X.ai.po || !X.jobs || !tw || !cv) goto out;
    X.ai.np = 0, X.base_w = 0, pt->jobs = pt->pending = pt->refill_gpus = 0;
    long gpus_now = 0, gpus_then = 0;
    for (size_t k = 0; k < S->ai.np; k++) {
        gpus_now += S->ai.pj[k].gpus;
        if (end_t[k] <= t) continue; /* ended by then (NaN: persists) */
        X.ai.pj[X.ai.np] = S->ai.pj[k], X.jobs[X.ai.np++] = S->jobs[k];
        X.base_w += S->jobs[k].base_w, pt->jobs++, gpus_then += S->ai.pj[k].gpus;
        missing_curve |= !S->ai.pj[k].pred_curve;
    }
    for (size_t k = 0; pr.ok && k < q->n; k++) {
        const pfi_squeue_job *x = &q->job[k];
        if (x->running || x->gpus <= 0 || !(x->start_t <= t) || x->end_t <= t) continue;
        add_unknown(&X, x->gpus, &pr, S->default_tier, &cv[ncv++]);
        pt->jobs++, pt->pending++, gpus_then += x->gpus, missing_curve = 1;
    }
    if (pr.ok && gpus_then < gpus_now) { /* today's use persists */
        pt->refill_gpus = (int)(gpus_now - gpus_then);
        add_unknown(&X, pt->refill_gpus, &pr, S->default_tier, &cv[ncv++]);
        missing_curve = 1;
    }
    X.o.strategy = pfi_strategy_runs_as(pfi_strategy_fallback(cfg_strategy, missing_curve));
    pfi_offer o;
    if (pfi_offer_compute(X.jobs, X.ai.np, ctl_offer_snap_alloc, &X, tw, &o, NULL)) goto out;
    for (int c = 0; c < PFI_OFFER_NCOST; c++)
        pt->total_w[c] = X.base_w * o.cut_pct[c] / 100 * S->facility;
    rc = 0;
out:
    for (size_t k = 0; k < ncv; k++)
        if (cv[k].n) pfi_curve_dispose(&cv[k]);
    free(X.ai.pj), free(X.ai.po), free(X.jobs), free(tw), free(cv);
    return rc;
}

static json_t *time_or_null(double t)
{
    if (!isfinite(t)) return json_null();
    char b[40];
    pfi_rfc3339_format(t, b, sizeof b);
    return json_string(b);
}

void ctl_forecast_json(json_t *o, snap *S, const ctl_queue *q, const double *job_shed_w)
{
    ctl_queue none = {.read_t = NAN};
    int have = q && q->read_t == q->read_t;
    ctl_queue *Q = have ? (ctl_queue *)q : &none;
    double now = wall_now();
    double *end_t = malloc((S->ai.np + 1) * sizeof *end_t);
    if (!end_t) return;
    job_ends(S, Q, end_t);
    double ss = job_shed_w ? sustain_s(S, end_t, job_shed_w, now) : NAN;
    json_object_set_new(o, "sustain_s", isfinite(ss) ? json_real(ss) : json_null());
    json_t *f =
        json_pack("{s:s,s:o,s:i}", "source", have ? "squeue" : "present fleet", "squeue_read_at",
                  time_or_null(have ? q->read_t : NAN), "horizon_h", S->horizon_h);
    json_object_set_new(f, "squeue_error", q && q->error[0] ? json_string(q->error) : json_null());
    json_t *pts = json_array();
    const json_t *offers = json_object_get(o, "offers");
    prior pr = have ? fleet_prior(S) : (prior){0}; /* only a queue needs it */
    for (int h = 1; h <= S->horizon_h; h++) {
        point pt = {{0}, (int)S->ai.np, 0, 0};
        if (have) {
            if (offer_at(S, Q, end_t, pr, now + 3600.0 * h, S->cfg_strategy, &pt)) break;
        } else /* the present fleet persists: the offer now */
            for (int c = 0; c < PFI_OFFER_NCOST; c++)
                pt.total_w[c] = 1000 * json_number_value(json_object_get(
                                           json_array_get(offers, (size_t)c), "total_kw"));
        json_t *kw = json_array();
        for (int c = 0; c < PFI_OFFER_NCOST; c++)
            json_array_append_new(kw, json_real(pt.total_w[c] / 1000));
        json_array_append_new(pts, json_pack("{s:i,s:o,s:i,s:i,s:i,s:o}", "in_h", h, "at",
                                             time_or_null(now + 3600.0 * h), "jobs", pt.jobs,
                                             "pending_jobs", pt.pending, "refill_gpus",
                                             pt.refill_gpus, "total_kw", kw));
    }
    json_object_set_new(f, "points", pts);
    json_object_set_new(o, "forecast", f);
    free(end_t);
}
