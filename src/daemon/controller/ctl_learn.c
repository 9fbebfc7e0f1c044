/* ctl_learn.c — the controller's learners, one row per way of learning
 * (pfi_learning, strategy.h), not per strategy (ctl_learn.h). A learning
 * strategy that learns as an existing row is a row of src/core/strategy.c
 * alone; a new way of learning is a row here. Pure: no I/O. */
#include <math.h>
#include <stddef.h>

#include "ctl_learn.h"
#include "pfi/alloc.h"
#include "pfi/features.h"
#include "pfi/metrics.h"
#include "strategy.h"

typedef struct ctl_learner {
    int (*belief)(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_job *j, double base_w,
                  double base_tokens, pfi_curve *out);
    void (*observe)(ctl_job *j); /* NULL: it keeps nothing */
    void (*period)(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s, ctl_notes *notes,
                   double budget_w, double fixed_w, struct pfi_pc_job *pj, const size_t *idx,
                   size_t np);
} ctl_learner;

static int job_curve(const pfi_modelfile *cm, const ctl_job *j, pfi_curve *out)
{
    double x[32];
    if (ctl_job_features(cm, j, x)) return -1;
    double tmax = j->base_tokens > 0 ? j->base_tokens : 1;
    return pfi_curve_model_curve(&cm->curve, x, j->hw_max_w, tmax, j->base_w, out, NULL) == PFI_OK
               ? 0
               : -1;
}

/* the curve the row says it believes: the predicted one, or none */
static int belief_stated(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_job *j,
                         double base_w, double base_tokens, pfi_curve *out)
{
    (void)base_w, (void)base_tokens;
    const pfi_strategy_ops *row = pfi_strategy_get(cfg->strategy);
    if (!row || row->believes != PFI_BELIEVES_PREDICTED || !cm) return -1;
    return job_curve(cm, j, out);
}

/* the curve estimate from the job's observations, the model's curve its prior */
static int belief_fit(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_job *j, double base_w,
                      double base_tokens, pfi_curve *out)
{
    (void)cfg;
    pfi_alloc_job aj = {j->gpus,
                        base_tokens > 0 ? base_tokens : 1,
                        base_w,
                        j->gpus * j->cap_min_w * 0.97,
                        NULL,
                        NULL,
                        j->pfi_pred > 0 ? j->pfi_pred : 1,
                        0,
                        0,
                        j->tier,
                        j->cap_min_w,
                        j->cap_max_w,
                        NULL,
                        NULL,
                        0,
                        NULL};
    pfi_curve prior;
    int hp = cm && job_curve(cm, j, &prior) == 0;
    if (hp) aj.pred_curve = &prior;
    int ok = pfi_alloc_curve_estimate(&aj, j->obs_p, j->obs_t, j->nobs, out, NULL) == PFI_OK;
    if (hp) pfi_curve_dispose(&prior);
    return ok ? 0 : -1;
}

/* a job is observed where it runs: settled at the cap we gave it last
   period, below its baseline, with a throughput */
static void observe_settled(ctl_job *j)
{
    if (j->alloc_cap_w > 0 && fabs(j->cap_w - ctl_job_cap_sent(j)) < 0.5 &&
        isfinite(j->tokens_per_s) && j->nobs < 64 && j->measured_w < j->base_w * 0.995) {
        j->obs_p[j->nobs] = j->measured_w;
        j->obs_t[j->nobs++] = j->tokens_per_s;
    }
}

static const ctl_learner learners[] = {
    [PFI_LEARNS_NOTHING] = {belief_stated, NULL, NULL},
    [PFI_LEARNS_FIT] = {belief_fit, observe_settled, NULL},
    [PFI_LEARNS_ROUNDS] = {belief_stated, NULL, ctl_online_period},
};

static const ctl_learner *learner(const ctl_cfg *cfg)
{
    const pfi_strategy_ops *row = pfi_strategy_get(cfg->strategy);
    size_t k = row ? (size_t)row->learns : 0;
    return &learners[k < sizeof learners / sizeof *learners ? k : 0];
}

int ctl_job_belief(const ctl_cfg *cfg, const pfi_modelfile *cm, const ctl_job *j, double base_w,
                   double base_tokens, pfi_curve *out)
{
    return learner(cfg)->belief(cfg, cm, j, base_w, base_tokens, out);
}

void ctl_learn_observe(const ctl_cfg *cfg, ctl_job *j)
{
    const ctl_learner *l = learner(cfg);
    if (l->observe) l->observe(j);
}

void ctl_learn_period(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s, ctl_notes *notes,
                      double budget_w, double fixed_w, struct pfi_pc_job *pj, const size_t *idx,
                      size_t np)
{
    const ctl_learner *l = learner(cfg);
    if (l->period) l->period(cfg, cm, s, notes, budget_w, fixed_w, pj, idx, np);
}
