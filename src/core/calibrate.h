/* calibrate.h — fitting the reconstruction's two per-group numbers (phi,
 * sm_w) so that Eq. 1 on the group's noisy aggregated synthetic runs (the
 * default seed, the summary path) equals the published PFI, and for 8-GPU
 * groups the 4-cap PFI of table 9 as well. Groups without a table-9 target
 * take sm_w from their family's calibrated 8-GPU groups. */
#ifndef PFI_CALIBRATE_H
#define PFI_CALIBRATE_H

#include "recon.h"
#include "synth.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Eq. 1 of g on its own grid, and on 200/500/600/700 when g has all six caps
 * (NaN otherwise), from summaries of every run. */
pfi_status pfi_recon_group_pfi(const pfi_recon_group *g, const pfi_synth_opts *o, double *pfi_own,
                               double *pfi4, pfi_error *err);

/* Calibrate every group of r in place (8-GPU H200 groups with a table-9
 * target first, then the others with their family's median sm_w). */
pfi_status pfi_calibrate_all(pfi_recon *r, const pfi_synth_opts *o, pfi_log *log, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
