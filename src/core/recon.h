/* recon.h — the reconstruction of the paper's H200/H100 dataset:
 * "reconstruction calibrated to published tables" (the raw data is not
 * public). Each sweep group of tables 6, 7 and 8 becomes a job of the
 * physical model (physmodel.h) whose parameters come from
 *   - the group's identity (model size, task, GPUs, EP: spec.csv),
 *   - family priors (documented in docs/model.md and below), and
 *   - two calibrated numbers, phi (compute share) and sm_w (SM power),
 *     solved so that Eq. 1 on the noisy aggregated synthetic runs of the
 *     default seed matches the published PFI (and table 9's 4-cap PFI).
 * The calibrated numbers live in data/reconstruction/params.csv. */
#ifndef PFI_RECON_H
#define PFI_RECON_H

#include <stdint.h>

#include "pfi/status.h"
#include "physmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_RECON_PROVENANCE "reconstruction calibrated to published tables (arXiv:2609.11542)"
#define PFI_RECON_MAX_CAPS 8

typedef struct pfi_recon_group {
    char group[96], split[16], gpu_model[8], arch[8], task[4], model[48];
    double total_params_b, active_params_b;
    int gpus;
    double caps_w[PFI_RECON_MAX_CAPS];
    int ncaps;
    double pfi_target, pfi4_target; /* NaN when not published */
    int compile;                    /* 1, 0, or -1 when not stated */
    int ep, seq_len, batch;
    pfi_job job;         /* the model job */
    double mfu_uncapped; /* prior MFU at the uncapped point */
    int calibrated;      /* phi, sm_w from params.csv */
    const pfi_hw *hw;
} pfi_recon_group;

typedef struct pfi_recon {
    size_t n;
    pfi_recon_group *g;
} pfi_recon;

void pfi_recon_dispose(pfi_recon *r);
/* Family priors: everything but phi and sm_w, from the group's identity.
 * Uses phi (must be set) to split the clock-independent time into memory
 * and communication shares and to set the reference throughput. */
void pfi_recon_apply_priors(pfi_recon_group *g);
/* Stable per-group key (for noise streams). */
uint64_t pfi_recon_key(const pfi_recon_group *g);
/* Find a group by (group, gpu_model); NULL if absent. */
pfi_recon_group *pfi_recon_find(pfi_recon *r, const char *group, const char *gpu_model);

/* A new job drawn from the families (pfi synth --fleet): family by the
 * headline mix, parameters with spread around the calibrated groups. */
pfi_status pfi_recon_draw_fleet(const pfi_recon *base, size_t n, uint64_t seed, pfi_recon *out,
                                pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
