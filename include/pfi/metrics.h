/* metrics.h — the telemetry metrics pfi understands, by DCGM field name
 * (and by the pfi_gpu_* name pfi-agent exports each under).
 *
 * Each metric has an id (pfi_metric), a DCGM name (as dcgm-exporter prints
 * it and as sweep-table columns are named) and how it is combined over a
 * job's GPUs in one scrape: summed (power, bytes) or averaged (ratios,
 * utilizations, clocks, temperature, framebuffer per GPU). Unknown metric
 * names are ignored by every reader, never fatal. */
#ifndef PFI_METRICS_H
#define PFI_METRICS_H

#include <stddef.h>

#include "pfi/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_metric {
    PFI_M_GPU_UTIL = 0,       /* DCGM_FI_DEV_GPU_UTIL, % */
    PFI_M_MEM_COPY_UTIL,      /* DCGM_FI_DEV_MEM_COPY_UTIL, % */
    PFI_M_FB_USED,            /* DCGM_FI_DEV_FB_USED, MiB */
    PFI_M_POWER_USAGE,        /* DCGM_FI_DEV_POWER_USAGE, W */
    PFI_M_SM_CLOCK,           /* DCGM_FI_DEV_SM_CLOCK, MHz */
    PFI_M_MEM_CLOCK,          /* DCGM_FI_DEV_MEM_CLOCK, MHz */
    PFI_M_GPU_TEMP,           /* DCGM_FI_DEV_GPU_TEMP, C */
    PFI_M_GR_ENGINE_ACTIVE,   /* DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0..1 */
    PFI_M_SM_ACTIVE,          /* DCGM_FI_PROF_SM_ACTIVE, 0..1 */
    PFI_M_SM_OCCUPANCY,       /* DCGM_FI_PROF_SM_OCCUPANCY, 0..1 */
    PFI_M_PIPE_TENSOR_ACTIVE, /* DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 0..1 */
    PFI_M_DRAM_ACTIVE,        /* DCGM_FI_PROF_DRAM_ACTIVE, 0..1 */
    PFI_M_NVLINK_TX_BYTES,    /* DCGM_FI_PROF_NVLINK_TX_BYTES, B/s */
    PFI_M_NVLINK_RX_BYTES,    /* DCGM_FI_PROF_NVLINK_RX_BYTES, B/s */
    PFI_M_PCIE_TX_BYTES,      /* DCGM_FI_PROF_PCIE_TX_BYTES, B/s */
    PFI_M_PCIE_RX_BYTES,      /* DCGM_FI_PROF_PCIE_RX_BYTES, B/s */
    PFI_M_ENFORCED_LIMIT,     /* DCGM_FI_DEV_ENFORCED_POWER_LIMIT, W (cap check, not a feature) */
    PFI_M_MGMT_LIMIT,         /* DCGM_FI_DEV_POWER_MGMT_LIMIT, W (cap check, not a feature) */
    PFI_M_COUNT
} pfi_metric;

typedef enum pfi_metric_agg { PFI_AGG_AVG = 0, PFI_AGG_SUM = 1 } pfi_metric_agg;

typedef struct pfi_metric_info {
    const char *name;
    pfi_metric_agg agg;
    int feature; /* one of the paper's 13 telemetry features (or part of nvlink_bytes) */
    /* pfi-agent's own name for it on /metrics (Prometheus conventions: base
       units, ratios 0..1) and the factor from that unit to DCGM's (e.g. 1e-6
       from Hz to MHz, 100 from a ratio to %) */
    const char *pfi_name;
    double pfi_scale;
} pfi_metric_info;

PFI_API const pfi_metric_info *pfi_metric_get(pfi_metric m);
/* Id of a DCGM name (exact, len bytes), or -1 if unknown. */
PFI_API int pfi_metric_lookup(const char *name, size_t len);

/* Id of a pfi-agent name (pfi_gpu_..., exact), or -1; its values times
 * pfi_metric_get(id)->pfi_scale are in the DCGM metric's unit. */
PFI_API int pfi_metric_lookup_pfi(const char *name, size_t len);

/* dcgm-exporter prints DCGM's blank sentinels (no data) as huge numbers:
 * INT32 0x7ffffff0.., INT64 0x7ffffffffffffff0.. (about 2^63) and FP64 2^47..
 * (each +0..15). Such values are missing, not measurements. */
PFI_API int pfi_dcgm_is_blank(double v);

/* Derived features (computed per scrape from the job's GPU-averaged values,
 * then aggregated like any metric). */
typedef enum pfi_derived {
    PFI_D_DRAM_COPY_PRODUCT = 0, /* DRAM_ACTIVE (0..1) x MEM_COPY_UTIL/100 */
    PFI_D_ARITHMETIC_INTENSITY,  /* PIPE_TENSOR_ACTIVE / DRAM_ACTIVE */
    PFI_D_TENSOR_SM_RATIO,       /* PIPE_TENSOR_ACTIVE / SM_ACTIVE */
    PFI_D_NVLINK_BYTES,          /* NVLINK TX + RX, summed over the job's GPUs */
    PFI_D_COUNT
} pfi_derived;
PFI_API const char *pfi_derived_name(pfi_derived d);
/* Derived feature d from a job's metric values m[PFI_M_COUNT] (one scrape's,
 * or means over its training phase; job values as the sweep table holds
 * them: summed over the job's GPUs for a PFI_AGG_SUM metric, averaged
 * otherwise): the formulas above, NaN where a ratio's divisor is not
 * above 0 or a value it needs is NaN. The one place they are written. */
PFI_API double pfi_derived_value(pfi_derived d, const double *m);

#ifdef __cplusplus
}
#endif
#endif
