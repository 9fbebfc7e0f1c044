/* ctl_alloc_in.h — the controller's jobs as the allocator's inputs
 * (ctl_alloc_in.c): one conversion for the period (ctl_decide.c), the
 * response plan (ctl_plan.c) and safe-online (ctl_online.c), and the one
 * fallback of a strategy whose curves are missing. */
#ifndef PFI_CTL_ALLOC_IN_H
#define PFI_CTL_ALLOC_IN_H

#include "ctl_state.h"
#include "power_control.h"

struct ctl_cfg;

/* the allocation inputs of np jobs: pj[q] is the ctl_job idx[q]; po[q]
 * its answer; curves[q] its belief where pj[q].pred_curve points at it */
typedef struct ctl_alloc_in {
    pfi_pc_job *pj;
    pfi_pc_out *po;
    pfi_curve *curves;
    size_t *idx, np;
} ctl_alloc_in;

/* room for n jobs: 0, or -1 when out of memory */
int ctl_alloc_in_new(ctl_alloc_in *a, size_t n);
void ctl_alloc_in_free(ctl_alloc_in *a);
/* the job j (index k) with this baseline: its entry, to be completed by the
 * caller (learned ratio, fixed targets) */
pfi_pc_job *ctl_alloc_in_add(ctl_alloc_in *a, const ctl_job *j, size_t k, double base_w,
                             double base_tokens);
/* the last added job's curve as the configured strategy believes it */
void ctl_alloc_in_belief(ctl_alloc_in *a, const struct ctl_cfg *cfg, const pfi_modelfile *cm,
                         const ctl_job *j);
/* the allocator's options: the configured strategy, or the strategy
 * table's fallback when a job has no curve (curve-aware and closed-loop:
 * pfi-aware), run as the table says a one-shot allocation runs it
 * (closed-loop: curve-aware on its estimates; safe-online: its reference) */
void ctl_alloc_in_opts(const ctl_alloc_in *a, const struct ctl_cfg *cfg, pfi_alloc_opts *o);

#endif
