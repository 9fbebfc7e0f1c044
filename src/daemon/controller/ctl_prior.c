/* ctl_prior.c — a job's curve-model features and its prior (ctl_learn.h):
 * the model's features from the agent's training means, and the prior's
 * conservative bound the offer and safe-online's first floors take for a
 * job with nothing measured (issue 44). Pure: no I/O. */
#include <math.h>
#include <stddef.h>

#include "ctl_learn.h"
#include "pfi/features.h"
#include "pfi/metrics.h"

/* the model's features from the agent's training means, by the one
   formula of each (pfi_feature_from_metrics): 0, -1 if one is unknown */
int ctl_job_features(const pfi_modelfile *cm, const ctl_job *j, double *x)
{
    double m[PFI_M_COUNT];
    for (size_t k = 0; k < PFI_M_COUNT; k++) m[k] = NAN;
    m[PFI_M_DRAM_ACTIVE] = j->feat_dram;
    m[PFI_M_MEM_COPY_UTIL] = j->feat_copy;
    m[PFI_M_PIPE_TENSOR_ACTIVE] = j->feat_tensor;
    m[PFI_M_SM_ACTIVE] = j->feat_sm;
    size_t p = cm->p < 32 ? cm->p : 32;
    for (size_t k = 0; k < p; k++) {
        int known;
        x[k] = pfi_feature_from_metrics(cm->features[k], m, &known);
        if (!known || !isfinite(x[k])) return -1;
    }
    return 0;
}

int ctl_job_prior(const pfi_modelfile *cm, const ctl_job *j, double base_w, double base_tokens,
                  pfi_curve *out)
{
    if (!cm || cm->kind != PFI_MODELFILE_CURVE || !(base_w > 0)) return 0;
    double x[32], tmax = base_tokens > 0 ? base_tokens : 1;
    int feat = ctl_job_features(cm, j, x) == 0;
    if (pfi_curve_model_bound(&cm->curve, feat ? x : NULL, CTL_PRIOR_Z, j->hw_max_w, tmax, base_w,
                              out, NULL) != PFI_OK)
        return 0;
    return feat ? 1 : 2;
}
