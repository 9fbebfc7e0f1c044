/* ctl_offer.h — the offer in the controller (issue 44; docs/controller.md,
 * "The offer"): what the site can shed now and at what cost to its work.
 * Every offer.interval_s (30 s) and when the set of jobs changes, the
 * period hands a snapshot of the response plan's inputs (the baselines an
 * event starting now would take, the tiers, the admin limits, the curves
 * the strategy believes, each job's measured points) to a thread of its
 * own, which evaluates the offer (src/core/offer.c) off the period's
 * critical path with the plan's own allocation (pfi_pc_allocate); /v1/offer,
 * /v1/status and /metrics read the last result. */
#ifndef PFI_CTL_OFFER_H
#define PFI_CTL_OFFER_H

#include <jansson.h>

#include "buf.h"
#include "ctl.h"

/* the thread (0; -1 logged); stop joins it and frees what it holds */
int ctl_offer_start(ctl *c);
void ctl_offer_stop(ctl *c);
/* in the period, under c->mu, after the decision: a snapshot when due */
void ctl_offer_period(ctl *c);
/* an event's offers at notification and start, and what it delivered, for
   its report (JSON: null values where unknown) */
json_t *ctl_offer_event_json(const ctl_event *e, double delivered_w);
/* the last offer (a new object; with_jobs: each job's part), or JSON null
   before the first */
json_t *ctl_offer_json(ctl *c, int with_jobs);
/* the offer now, evaluated at once in the caller's thread (bench_offer):
   the steerable baselines, the whole offer at each cost of pfi_offer_costs
   (PFI_OFFER_NCOST), the floors point, all in W x the facility factor;
   0, or -1 when out of memory */
int ctl_offer_eval(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_state *s, double *base_w,
                   double *total_w, double *floors_w);
/* the whole offer at each cost over the last day (GET /v1/offer/history):
   {"max_loss_pct": [...], "points": [[t, kW at each cost], ...]} */
json_t *ctl_offer_history_json(ctl *c);
/* its gauges for /metrics */
void ctl_offer_metrics(ctl *c, pfi_buf *b);

#endif
