/* metrics.c — the table of known DCGM metrics and pfi-agent's names for
 * them in base units (see metrics.h). */
#include "pfi/metrics.h"

#include <math.h>
#include <string.h>

static const pfi_metric_info table[PFI_M_COUNT] = {
    [PFI_M_GPU_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", PFI_AGG_AVG, 1, "pfi_gpu_utilization_ratio", 100},
    [PFI_M_MEM_COPY_UTIL] = {"DCGM_FI_DEV_MEM_COPY_UTIL", PFI_AGG_AVG, 1,
                             "pfi_gpu_memory_copy_utilization_ratio", 100},
    [PFI_M_FB_USED] = {"DCGM_FI_DEV_FB_USED", PFI_AGG_AVG, 1, "pfi_gpu_framebuffer_used_bytes",
                       1.0 / 1048576},
    [PFI_M_POWER_USAGE] = {"DCGM_FI_DEV_POWER_USAGE", PFI_AGG_AVG, 1, "pfi_gpu_power_watts", 1},
    [PFI_M_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", PFI_AGG_AVG, 1, "pfi_gpu_sm_clock_hertz", 1e-6},
    [PFI_M_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", PFI_AGG_AVG, 1, "pfi_gpu_memory_clock_hertz",
                         1e-6},
    [PFI_M_GPU_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", PFI_AGG_AVG, 1, "pfi_gpu_temperature_celsius", 1},
    [PFI_M_GR_ENGINE_ACTIVE] = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", PFI_AGG_AVG, 1,
                                "pfi_gpu_graphics_engine_active_ratio", 1},
    [PFI_M_SM_ACTIVE] = {"DCGM_FI_PROF_SM_ACTIVE", PFI_AGG_AVG, 1, "pfi_gpu_sm_active_ratio", 1},
    [PFI_M_SM_OCCUPANCY] = {"DCGM_FI_PROF_SM_OCCUPANCY", PFI_AGG_AVG, 1,
                            "pfi_gpu_sm_occupancy_ratio", 1},
    [PFI_M_PIPE_TENSOR_ACTIVE] = {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", PFI_AGG_AVG, 1,
                                  "pfi_gpu_tensor_pipe_active_ratio", 1},
    [PFI_M_DRAM_ACTIVE] = {"DCGM_FI_PROF_DRAM_ACTIVE", PFI_AGG_AVG, 1, "pfi_gpu_dram_active_ratio",
                           1},
    [PFI_M_NVLINK_TX_BYTES] = {"DCGM_FI_PROF_NVLINK_TX_BYTES", PFI_AGG_SUM, 1,
                               "pfi_gpu_nvlink_transmit_bytes_per_second", 1},
    [PFI_M_NVLINK_RX_BYTES] = {"DCGM_FI_PROF_NVLINK_RX_BYTES", PFI_AGG_SUM, 1,
                               "pfi_gpu_nvlink_receive_bytes_per_second", 1},
    [PFI_M_PCIE_TX_BYTES] = {"DCGM_FI_PROF_PCIE_TX_BYTES", PFI_AGG_SUM, 0,
                             "pfi_gpu_pcie_transmit_bytes_per_second", 1},
    [PFI_M_PCIE_RX_BYTES] = {"DCGM_FI_PROF_PCIE_RX_BYTES", PFI_AGG_SUM, 0,
                             "pfi_gpu_pcie_receive_bytes_per_second", 1},
    [PFI_M_ENFORCED_LIMIT] = {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", PFI_AGG_AVG, 0,
                              "pfi_gpu_power_limit_enforced_watts", 1},
    [PFI_M_MGMT_LIMIT] = {"DCGM_FI_DEV_POWER_MGMT_LIMIT", PFI_AGG_AVG, 0, "pfi_gpu_power_cap_watts",
                          1},
};

const pfi_metric_info *pfi_metric_get(pfi_metric m)
{
    return (unsigned)m < PFI_M_COUNT ? &table[m] : NULL;
}

int pfi_metric_lookup(const char *name, size_t len)
{
    if (len < 9 || memcmp(name, "DCGM_FI_", 8) != 0) return -1;
    for (int i = 0; i < PFI_M_COUNT; i++) {
        const char *n = table[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) return i;
    }
    return -1;
}

int pfi_metric_lookup_pfi(const char *name, size_t len)
{
    if (len < 9 || memcmp(name, "pfi_gpu_", 8) != 0) return -1;
    /* the enforced limit's other name, which agents before issue 30 also
       served: their recordings still read */
    static const char old_enforced[] = "pfi_gpu_enforced_power_limit_watts";
    if (len == sizeof old_enforced - 1 && memcmp(name, old_enforced, len) == 0)
        return PFI_M_ENFORCED_LIMIT;
    for (int i = 0; i < PFI_M_COUNT; i++) {
        const char *n = table[i].pfi_name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) return i;
    }
    return -1;
}

int pfi_dcgm_is_blank(double v)
{
    if (v >= 2147483632.0 && v <= 2147483647.0) return 1;           /* INT32 blanks */
    if (v >= 140737488355328.0 && v <= 140737488355343.0) return 1; /* FP64 blanks, 2^47 */
    if (v >= 9.2233720368547e18) return 1;                          /* INT64 blanks, ~2^63 */
    return 0;
}

const char *pfi_derived_name(pfi_derived d)
{
    static const char *const names[PFI_D_COUNT] = {"dram_copy_product", "arithmetic_intensity",
                                                   "tensor_sm_ratio", "nvlink_bytes"};
    return (unsigned)d < PFI_D_COUNT ? names[d] : NULL;
}

double pfi_derived_value(pfi_derived d, const double *m)
{
    double dram = m[PFI_M_DRAM_ACTIVE], tens = m[PFI_M_PIPE_TENSOR_ACTIVE];
    switch (d) {
    case PFI_D_DRAM_COPY_PRODUCT: return dram * m[PFI_M_MEM_COPY_UTIL] / 100.0;
    case PFI_D_ARITHMETIC_INTENSITY: return dram > 0 ? tens / dram : NAN;
    case PFI_D_TENSOR_SM_RATIO: return m[PFI_M_SM_ACTIVE] > 0 ? tens / m[PFI_M_SM_ACTIVE] : NAN;
    case PFI_D_NVLINK_BYTES: return m[PFI_M_NVLINK_TX_BYTES] + m[PFI_M_NVLINK_RX_BYTES];
    default: return NAN;
    }
}
