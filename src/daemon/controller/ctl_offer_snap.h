/* ctl_offer_snap.h — the offer's snapshot, shared by the offer
 * (ctl_offer.c) and its forecast (ctl_forecast.c): everything the offer's
 * thread reads, owned by it, so the thread never touches the controller's
 * state. Private to those two files. */
#ifndef PFI_CTL_OFFER_SNAP_H
#define PFI_CTL_OFFER_SNAP_H

#include <jansson.h>

#include "ctl.h"
#include "ctl_alloc_in.h"
#include "offer.h"
#include "squeue.h"

#define CTL_OFFER_JOB_COST 3 /* the per-job parts are given at pfi_offer_costs[3], 5% */

typedef struct snap {
    ctl_alloc_in ai;
    pfi_alloc_opts o;
    double fixed_w, base_w; /* the unsteerable jobs' power; the steerable baselines */
    pfi_offer_job *jobs;
    pfi_online_point (*known)[CTL_KNOWN_MAX];
    char (*id)[CTL_JOB_ID_MAX + 1];
    int *tier, *clamped;
    pfi_curve *prior; /* the prior's bound for a job with nothing measured */
    int *prior_of;    /* 0 none, 1 from its features, 2 the population's (ctl_job_prior) */
    double t, shed_now_w, ramp_s, trigger_s, facility;
    int active;
    /* the forecast's settings (cfg's, at the snapshot) */
    char squeue[1024];
    double squeue_s, squeue_timeout_s;
    int horizon_h, default_tier;
    pfi_strategy cfg_strategy; /* the configured strategy (its fallback without curves) */
} snap;

/* the plan's allocation at a cut of the steerable baselines (the offer's
   pfi_offer_alloc_fn; ud: a snap) */
int ctl_offer_snap_alloc(void *ud, double cut_pct, double *target_w);

/* Slurm's queue as last read by the offer's thread (ctl_forecast.c): its
   jobs, when (Unix wall time; NaN: never), the last error ("" none) */
typedef struct ctl_queue {
    pfi_squeue_job *job;
    size_t n;
    double read_t, next_mono;
    char error[256];
} ctl_queue;

/* in the offer's thread: the queue read when due (s->squeue set) */
void ctl_forecast_refresh(ctl_queue *q, const snap *S);
/* the forecast and the sustain time into the offer's JSON o: the offer at
   each cost each hour to S->horizon_h (running jobs end at their time
   limit, pending ones start at Slurm's expected start with the fleet's
   per-GPU baseline and no curve; no queue: the present fleet persists);
   job_shed_w: each steerable job's shed in the offer at OFFER_JOB_COST
   (NULL: none) */
void ctl_forecast_json(json_t *o, snap *S, const ctl_queue *q, const double *job_shed_w);

/* the offer for state s with Slurm's queue q (NULL: none) evaluated at
   once, as GET /v1/offer would serve it (a new object, jobs and forecast
   included; NULL when out of memory): bench_forecast */
json_t *ctl_offer_eval_json(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_state *s,
                            const ctl_queue *q);

#endif
