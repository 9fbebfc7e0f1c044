/* ctl_learn.h — how the controller learns jobs' curves online, by the
 * strategy row's `learns` (strategy.h): the curve it allocates on, what it
 * keeps of a settled period, and what it moves each period before the
 * allocation. ctl_decide and the allocation inputs call these three and
 * never ask which strategy runs. Pure: no I/O. */
#ifndef PFI_CTL_LEARN_H
#define PFI_CTL_LEARN_H

#include "ctl.h"
#include "pfi/curve.h"
#include "pfi/predictor.h"

struct pfi_pc_job;

/* the curve the configured strategy believes for job j with this baseline:
 * closed-loop's estimate from the job's observations (the curve model as
 * its prior), a strategy believing the predicted curve (curve-aware) the
 * model's curve; 0 and *out set when there is one (the caller disposes of
 * it), -1 otherwise. cm: NULL when there is no curve model. */
int ctl_job_belief(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_job *j, double base_w,
                   double base_tokens, pfi_curve *out);
/* the curve model's features of job j from the agent's training means (by
   pfi_feature_from_metrics): 0, -1 when one is unknown; x: room for 32 */
int ctl_job_features(const pfi_modelfile *cm, const ctl_job *j, double *x);
/* The prior's conservative bound for job j (issue 44: the offer of a job
 * with nothing measured; the strategy's decisions never use it): the curve
 * model's curve for its features, throughput 2 residual standard errors
 * low and power 2 high, else (features unknown) the model's population
 * curve 2 standard deviations so. 1 features, 2 population (*out set, the
 * caller disposes of it), 0 none (no curve model, or one without them). */
#define CTL_PRIOR_Z 2.0
int ctl_job_prior(const pfi_modelfile *cm, const ctl_job *j, double base_w, double base_tokens,
                  pfi_curve *out);
/* keeps what this period shows of job j, if the strategy learns from it */
void ctl_learn_observe(const ctl_cfg *cfg, ctl_job *j);
/* the strategy's moves of this period, before the allocation: the managed
 * jobs' fixed targets (pj[q] is the ctl_job idx[q]; ctl_online_period) */
void ctl_learn_period(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s, ctl_notes *notes,
                      double budget_w, double fixed_w, struct pfi_pc_job *pj, const size_t *idx,
                      size_t np);

#endif
