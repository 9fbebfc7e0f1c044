/* physmodel.c — the physical power/performance model (see physmodel.h and
 * docs/model.md for the equations and every number's source). */
#include "physmodel.h"

#include <math.h>
#include <string.h>

/* Public specifications (NVIDIA H200 / H100 SXM datasheets, nvidia-smi -q):
 * TDP 700 W, minimum power limit 200 W, max SM clock 1980 MHz, dense BF16
 * 989 TFLOPS; H200 141 GB HBM3e at 4.8 TB/s (memory clock 3201 MHz), H100
 * 80 GB HBM3 at 3.35 TB/s (2619 MHz). The power components and the V-f
 * knee are not published: they are shared by every group on a GPU model and
 * were chosen so that the model can reproduce the shape of the paper's
 * per-cap ratios (table 9): docs/model.md. */
static const pfi_hw profiles[] = {
    {"H200", 700, 200, 1980, 0.08, 3201, 4.8, 143771, 989.4, 62, 40, 45, 140, 40, 0.70, 0.92, 0.15,
     0.80, 0.97},
    {"H100", 700, 200, 1980, 0.08, 2619, 3.35, 81559, 989.4, 62, 40, 45, 120, 40, 0.70, 0.92, 0.15,
     0.80, 0.97},
};

const pfi_hw *pfi_hw_get(const char *gpu_model)
{
    for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++)
        if (strcmp(profiles[i].gpu_model, gpu_model) == 0) return &profiles[i];
    return NULL;
}

double pfi_phys_voltage(const pfi_hw *hw, double x)
{
    if (x <= hw->x_knee) return hw->v_min;
    return hw->v_min + (1 - hw->v_min) * (x - hw->x_knee) / (1 - hw->x_knee);
}

double pfi_phys_tokens(const pfi_job *j, double x)
{
    return j->tokens_per_s_ref / (j->phi / x + j->mu + j->kappa);
}

double pfi_phys_power(const pfi_hw *hw, const pfi_job *j, double x)
{
    double t = j->phi / x + j->mu + j->kappa;
    double sc = (j->phi / x) / t, sm = j->mu / t, sk = j->kappa / t;
    double v = pfi_phys_voltage(hw, x);
    return hw->board_w + hw->leak_w * v * v +
           hw->hbm_w * (sc * hw->dram_compute + sm * hw->dram_memory) + hw->link_w * 0.9 * sk +
           j->sm_w * (sc + j->beta * (1 - sc)) * x * v * v;
}

void pfi_phys_at_clock(const pfi_hw *hw, const pfi_job *j, double x, double cap_w, pfi_op *op)
{
    memset(op, 0, sizeof *op);
    op->cap_w = cap_w;
    op->x = x;
    op->power_w = pfi_phys_power(hw, j, x);
    op->cap_held = op->power_w <= cap_w + 1e-9;
    op->tokens_per_s = pfi_phys_tokens(j, x);
    double peak = hw->bf16_dense_tflops * 1e12 * j->gpus;
    op->mfu = j->flops_per_token > 0 ? op->tokens_per_s * j->flops_per_token / peak : 0;
    double t = j->phi / x + j->mu + j->kappa;
    double sc = (j->phi / x) / t, sm = j->mu / t, sk = j->kappa / t;
    double busy = 1 - j->host_idle;
    double dram = (sc * hw->dram_compute + sm * hw->dram_memory) * busy;
    double *d = op->dcgm;
    for (int m = 0; m < PFI_M_COUNT; m++) d[m] = NAN;
    d[PFI_M_GPU_UTIL] = 100 * busy;
    d[PFI_M_MEM_COPY_UTIL] = fmin(100, j->copy_gain * dram);
    d[PFI_M_FB_USED] = j->fb_mib;
    d[PFI_M_POWER_USAGE] = op->power_w;
    d[PFI_M_SM_CLOCK] = x * hw->sm_clock_max_mhz;
    d[PFI_M_MEM_CLOCK] = hw->mem_clock_mhz;
    d[PFI_M_GPU_TEMP] = 28 + 0.055 * op->power_w;
    d[PFI_M_GR_ENGINE_ACTIVE] = busy * 0.99;
    d[PFI_M_SM_ACTIVE] = busy * (sc * 0.95 + (1 - sc) * j->beta * 0.8);
    d[PFI_M_SM_OCCUPANCY] = j->occupancy * busy;
    d[PFI_M_PIPE_TENSOR_ACTIVE] = busy * sc * j->tensor_eff;
    d[PFI_M_DRAM_ACTIVE] = dram;
    d[PFI_M_NVLINK_TX_BYTES] = d[PFI_M_NVLINK_RX_BYTES] = busy * sk * j->nvlink_bps;
    d[PFI_M_PCIE_TX_BYTES] = d[PFI_M_PCIE_RX_BYTES] = 2e8 * busy;
    d[PFI_M_ENFORCED_LIMIT] = d[PFI_M_MGMT_LIMIT] = cap_w;
}

void pfi_phys_at_cap(const pfi_hw *hw, const pfi_job *j, double cap_w, pfi_op *op)
{
    double x;
    /* a throttling controller holds the average a little below the limit */
    double target = cap_w * hw->setpoint;
    if (pfi_phys_power(hw, j, 1.0) <= target) {
        x = 1.0;
    } else if (pfi_phys_power(hw, j, hw->x_min) > target) {
        x = hw->x_min;
    } else {
        double lo = hw->x_min, hi = 1.0;
        for (int i = 0; i < 60; i++) {
            double m = 0.5 * (lo + hi);
            if (pfi_phys_power(hw, j, m) > target) hi = m;
            else lo = m;
        }
        x = lo;
    }
    pfi_phys_at_clock(hw, j, x, cap_w, op);
}
