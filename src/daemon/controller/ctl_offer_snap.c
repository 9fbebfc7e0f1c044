/* ctl_offer_snap.c — the allocation the offer and its forecast evaluate
 * the snapshot with (ctl_offer_snap.h): the response plan's pfi_pc_allocate
 * at a cut of the steerable baselines, the unsteerable power fixed. */
#include "ctl_offer_snap.h"

#include "power_control.h"

/* the plan's allocation at a cut of the steerable baselines */
int ctl_offer_snap_alloc(void *ud, double cut_pct, double *target_w)
{
    snap *S = ud;
    int feasible = 1;
    double budget = S->fixed_w + S->base_w * (1 - cut_pct / 100);
    if (pfi_pc_allocate(S->ai.pj, S->ai.np, budget, S->fixed_w, 0, &S->o, S->ai.po, &feasible,
                        NULL))
        return -1;
    if (!feasible) return 1;
    for (size_t q = 0; q < S->ai.np; q++) target_w[q] = S->ai.po[q].target_w;
    return 0;
}
