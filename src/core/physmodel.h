/* physmodel.h — a physical model of a training job on power-capped GPUs.
 *
 * Under a power cap the GPU lowers its SM clock; the memory clock stays
 * fixed. At normalized SM clock x = f/f_max:
 *
 *   step time     t(x) = phi/x + mu + kappa     (t(1) = 1)
 *     phi: SM-clock-bound (compute) share, mu: memory-bound share,
 *     kappa: communication/host share, at the maximum clock
 *   throughput    T(x) = T_ref / t(x)
 *   time shares   s_c = (phi/x)/t, s_m = mu/t, s_k = kappa/t
 *   voltage       v(x) = v_min below x_knee, rising linearly to 1 at x = 1
 *   power / GPU   P(x) = board + leak v^2                       (static)
 *                      + hbm (s_c d_c + s_m d_m)                (DRAM traffic)
 *                      + link 0.9 s_k                           (NVLink)
 *                      + sm_w (s_c + beta (1 - s_c)) x v^2      (SM switching)
 *
 * The power controller holds the average power over the step's mix of
 * phases at the cap (a setpoint 3% below it, as throttling controllers
 * leave headroom): the operating clock is the largest x in [x_min, 1] with
 * P(x) <= 0.97 cap (x_min if even that exceeds the cap: the cap is not held).
 * The "uncapped" run is the default limit (TDP, 700 W on H100/H200), which
 * itself binds for most training jobs. DCGM metrics follow from the same
 * operating point (pfi_phys_dcgm). docs/model.md derives every parameter. */
#ifndef PFI_PHYSMODEL_H
#define PFI_PHYSMODEL_H

#include "pfi/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_hw {
    const char *gpu_model; /* "H200", "H100" */
    double tdp_w;          /* default and maximum power limit */
    double min_cap_w;      /* minimum settable power limit */
    double sm_clock_max_mhz;
    double x_min; /* lowest SM clock the power controller uses, / max */
    double mem_clock_mhz;
    double mem_bw_tbs;
    double fb_mib;
    double bf16_dense_tflops;
    double idle_w;                         /* no job: board + leakage at v_min + idle HBM */
    double board_w, leak_w, hbm_w, link_w; /* power components at full activity, v = 1 */
    double v_min, x_knee;                  /* voltage floor (relative) and where it ends */
    double dram_compute, dram_memory;      /* DRAM activity in compute / memory phases */
    double setpoint;                       /* fraction of the cap a throttling controller holds */
} pfi_hw;

/* Built-in profiles ("H200", "H100"); NULL if unknown. */
const pfi_hw *pfi_hw_get(const char *gpu_model);

typedef struct pfi_job {
    int gpus;
    double phi, mu, kappa;   /* step-time shares at max clock; sum 1 */
    double sm_w;             /* SM switching power at full clock and activity, W/GPU */
    double beta;             /* SM activity during memory/communication time */
    double tokens_per_s_ref; /* whole-job throughput at max clock */
    double flops_per_token;  /* model FLOPs per token (6 N_active for PT) */
    double tensor_eff;       /* tensor-pipe activity during compute phases */
    double occupancy;        /* DCGM_FI_PROF_SM_OCCUPANCY */
    double copy_gain;        /* MEM_COPY_UTIL (%) per unit DRAM activity */
    double host_idle;        /* fraction of training time with no kernel running */
    double fb_mib;           /* framebuffer used per GPU during training */
    double nvlink_bps;       /* NVLink bytes/s per GPU (each direction) while communicating */
} pfi_job;

typedef struct pfi_op {
    double cap_w;
    double x;            /* SM clock / max */
    double power_w;      /* per GPU */
    double tokens_per_s; /* whole job */
    double mfu;
    int cap_held;
    double dcgm[PFI_M_COUNT]; /* per-GPU DCGM values at this operating point */
} pfi_op;

double pfi_phys_voltage(const pfi_hw *hw, double x);
/* Per-GPU power and whole-job throughput at clock x. */
double pfi_phys_power(const pfi_hw *hw, const pfi_job *j, double x);
double pfi_phys_tokens(const pfi_job *j, double x);
/* Operating point under a per-GPU cap (with its DCGM metrics). */
void pfi_phys_at_cap(const pfi_hw *hw, const pfi_job *j, double cap_w, pfi_op *op);
void pfi_phys_at_clock(const pfi_hw *hw, const pfi_job *j, double x, double cap_w, pfi_op *op);

#ifdef __cplusplus
}
#endif
#endif
