/* saved_cap.h — a GPU's saved control as the state files keep it (the
 * agent's, lease_file.h; pfi sweep's, sweep_state.h): the cap a writer
 * found before it first changed the GPU, what a restore puts back. The GPU
 * layer saves and restores them (gpu.h: pfi_gpu_save, pfi_gpu_restore). */
#ifndef PFI_SAVED_CAP_H
#define PFI_SAVED_CAP_H

/* the most GPUs of one node whose caps are saved (as the state files allow) */
#define PFI_SAVED_CAPS_MAX 64

typedef struct pfi_saved_cap {
    char uuid[96];
    int changed;       /* 1: saved and not yet restored; baseline_w is valid */
    double baseline_w; /* the cap found before the first change */
    double cap_w;      /* the cap set since (NaN: not recorded) */
    long index;        /* where the GPU was when saved (pfi sweep's file; informational) */
} pfi_saved_cap;

#endif
