/* recon_io.h — reading the reconstruction's spec (data/reconstruction/
 * spec.csv: every published group, its identity and its targets) and its
 * calibrated parameters (params.csv), and writing the latter. */
#ifndef PFI_RECON_IO_H
#define PFI_RECON_IO_H

#include "recon.h"

#ifdef __cplusplus
extern "C" {
#endif

/* params_path may be NULL (uncalibrated: phi and sm_w unset). */
pfi_status pfi_recon_load(const char *spec_path, const char *params_path, pfi_recon *out,
                          pfi_error *err);
pfi_status pfi_recon_save_params(const pfi_recon *r, const char *path, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
