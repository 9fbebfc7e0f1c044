/* ctl_alloc_in.c — the controller's jobs as the allocator's inputs, one
 * conversion for the period, the response plan and safe-online, and the one
 * fallback of the curve strategies (ctl_alloc_in.h). Pure: no I/O. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_alloc_in.h"
#include "ctl_learn.h"
#include "strategy.h"

int ctl_alloc_in_new(ctl_alloc_in *a, size_t n)
{
    a->pj = calloc(n + 1, sizeof *a->pj);
    a->po = calloc(n + 1, sizeof *a->po);
    a->curves = calloc(n + 1, sizeof *a->curves);
    a->idx = calloc(n + 1, sizeof *a->idx);
    a->np = 0;
    if (a->pj && a->po && a->curves && a->idx) return 0;
    ctl_alloc_in_free(a);
    return -1;
}

void ctl_alloc_in_free(ctl_alloc_in *a)
{
    for (size_t q = 0; a->pj && q < a->np; q++)
        if (a->pj[q].pred_curve) pfi_curve_dispose(&a->curves[q]);
    free(a->pj), free(a->po), free(a->curves), free(a->idx);
    memset(a, 0, sizeof *a);
}

pfi_pc_job *ctl_alloc_in_add(ctl_alloc_in *a, const ctl_job *j, size_t k, double base_w,
                             double base_tokens)
{
    pfi_pc_job *x = &a->pj[a->np];
    x->gpus = j->gpus;
    x->cap_min_w = j->cap_min_w;
    x->cap_max_w = j->cap_max_w;
    x->baseline_w = base_w;
    x->baseline_tokens_per_s = base_tokens;
    x->pfi_pred = j->pfi_pred;
    x->sla_tier = j->tier;
    x->measured_w = j->measured_w;
    x->cap_w = j->cap_w;
    x->ratio = j->ratio;
    a->idx[a->np++] = k;
    return x;
}

void ctl_alloc_in_belief(ctl_alloc_in *a, const ctl_cfg *cfg, const pfi_modelfile *cm,
                         const ctl_job *j)
{
    size_t q = a->np - 1;
    pfi_pc_job *x = &a->pj[q];
    if (ctl_job_belief(cfg, cm, j, x->baseline_w, x->baseline_tokens_per_s, &a->curves[q]) == 0)
        x->pred_curve = &a->curves[q];
}

void ctl_alloc_in_opts(const ctl_alloc_in *a, const ctl_cfg *cfg, pfi_alloc_opts *o)
{
    pfi_alloc_opts_default(o);
    int missing_curve = 0;
    for (size_t q = 0; q < a->np; q++) missing_curve |= !a->pj[q].pred_curve;
    /* the strategy table's rule (strategy.h): its fallback when a job has no
       curve, then what a one-shot allocation runs for it */
    o->strategy = pfi_strategy_runs_as(pfi_strategy_fallback(cfg->strategy, missing_curve));
}
