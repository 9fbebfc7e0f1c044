/* features.c — per-group predictor features (see features.h). */
#include "pfi/features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/metrics.h"
#include "vec.h"

const char *const pfi_all_dcgm_features[13] = {"DCGM_FI_DEV_GPU_UTIL",
                                               "DCGM_FI_DEV_MEM_COPY_UTIL",
                                               "DCGM_FI_DEV_FB_USED",
                                               "DCGM_FI_DEV_POWER_USAGE",
                                               "DCGM_FI_DEV_SM_CLOCK",
                                               "DCGM_FI_DEV_MEM_CLOCK",
                                               "DCGM_FI_DEV_GPU_TEMP",
                                               "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                                               "DCGM_FI_PROF_SM_ACTIVE",
                                               "DCGM_FI_PROF_SM_OCCUPANCY",
                                               "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                               "DCGM_FI_PROF_DRAM_ACTIVE",
                                               "nvlink_bytes"};

static int push(char ***v, size_t *n, size_t *cap, const char *s, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen((*v)[i]) == len && strncmp((*v)[i], s, len) == 0) return 0; /* no duplicates */
    if (PFI_VEC_RESERVE(*v, *cap, *n + 1, NULL)) return -1;
    (*v)[*n] = strndup(s, len);
    if (!(*v)[*n]) return -1;
    (*n)++;
    return 0;
}

pfi_status pfi_features_expand(const char *list, char ***names, size_t *n, pfi_error *err)
{
    *names = NULL;
    *n = 0;
    size_t cap = 0;
    const char *p = list;
    while (*p) {
        const char *e = p;
        while (*e && *e != ',' && *e != '+') e++;
        size_t len = (size_t)(e - p);
        int rc = 0;
        if (len == 0) {
            pfi_features_free(*names, *n);
            return pfi_errorf(err, PFI_EINVAL, "empty feature name in '%s'", list);
        }
        if (len == 12 && strncmp(p, "job_metadata", 12) == 0) {
            rc |= push(names, n, &cap, "arch", 4);
            rc |= push(names, n, &cap, "task", 4);
            rc |= push(names, n, &cap, "log_gpus", 8);
        } else if (len == 16 && strncmp(p, "all_dcgm_metrics", 16) == 0) {
            for (int k = 0; k < 13; k++)
                rc |= push(names, n, &cap, pfi_all_dcgm_features[k],
                           strlen(pfi_all_dcgm_features[k]));
        } else {
            rc = push(names, n, &cap, p, len);
        }
        if (rc) {
            pfi_features_free(*names, *n);
            return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        }
        p = *e ? e + 1 : e;
    }
    if (*n == 0) return pfi_errorf(err, PFI_EINVAL, "no features given");
    return PFI_OK;
}

void pfi_features_free(char **names, size_t n)
{
    if (!names) return;
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

const char *pfi_feature_source(const char *name)
{
    if (!strcmp(name, "arch")) return "job metadata: 1 for moe, 0 for dense";
    if (!strcmp(name, "task"))
        return "job metadata: 1 for fine-tuning (ft), 0 for pretraining (pt)";
    if (!strcmp(name, "log_gpus")) return "job metadata: log2 of the job's GPU count";
    if (!strcmp(name, "power_frac")) return "uncapped aggregate power / (GPUs x largest cap)";
    if (!strcmp(name, "dram_copy_product"))
        return "DCGM_FI_PROF_DRAM_ACTIVE x DCGM_FI_DEV_MEM_COPY_UTIL/100, per scrape, top-10% mean "
               "of the uncapped run";
    if (!strcmp(name, "arithmetic_intensity"))
        return "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE / DCGM_FI_PROF_DRAM_ACTIVE, per scrape, top-10% "
               "mean of the uncapped run";
    if (!strcmp(name, "tensor_sm_ratio"))
        return "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE / DCGM_FI_PROF_SM_ACTIVE, per scrape, top-10% mean "
               "of the uncapped run";
    if (!strcmp(name, "nvlink_bytes"))
        return "DCGM_FI_PROF_NVLINK_TX_BYTES + RX_BYTES summed over the job's GPUs, top-10% mean "
               "of the uncapped run";
    return "telemetry column, top-10% mean of the uncapped run's training phase";
}

const char *pfi_feature_unit(const char *name)
{
    if (!strcmp(name, "arch") || !strcmp(name, "task")) return "indicator (0/1)";
    if (!strcmp(name, "log_gpus")) return "log2(GPUs)";
    if (!strcmp(name, "power_frac") || !strcmp(name, "dram_copy_product") ||
        !strcmp(name, "tensor_sm_ratio"))
        return "fraction (0..1)";
    if (!strcmp(name, "arithmetic_intensity")) return "ratio";
    if (!strcmp(name, "nvlink_bytes") || strstr(name, "_BYTES")) return "bytes/s";
    if (strstr(name, "_UTIL")) return "%";
    if (strstr(name, "FB_USED")) return "MiB";
    if (strstr(name, "POWER")) return "W";
    if (strstr(name, "CLOCK")) return "MHz";
    if (strstr(name, "TEMP")) return "C";
    if (!strncmp(name, "DCGM_FI_PROF_", 13)) return "fraction (0..1)";
    return "as in the sweep table";
}

double pfi_feature_value(const pfi_table *t, const pfi_group *g, const char *name, int *known)
{
    if (known) *known = 1;
    if (!strcmp(name, "arch")) return g->arch[0] ? (strcmp(g->arch, "moe") == 0) : NAN;
    if (!strcmp(name, "task")) return g->task[0] ? (strcmp(g->task, "ft") == 0) : NAN;
    if (!strcmp(name, "log_gpus")) return log2((double)g->gpus);
    if (!strcmp(name, "power_frac")) {
        const pfi_point *u = pfi_curve_uncapped(&g->curve);
        return u->power_w / ((double)g->gpus * u->cap_w);
    }
    long c = pfi_table_col(t, name);
    if (c < 0 || pfi_table_coltype(t, (size_t)c) != PFI_COL_NUM) {
        if (known) *known = 0;
        return NAN;
    }
    return pfi_group_uncapped_mean(t, g, (size_t)c);
}

pfi_status pfi_features_extract(const pfi_table *t, const pfi_groups *gs, char *const *names,
                                size_t p, double *X, pfi_error *err)
{
    for (size_t k = 0; k < p; k++) {
        int known = 0;
        if (gs->n) pfi_feature_value(t, &gs->g[0], names[k], &known);
        if (!known)
            return pfi_errorf(
                err, PFI_ENOTFOUND,
                "feature '%s' is not a numeric column of the table nor a known feature "
                "(arch, task, log_gpus, power_frac)",
                names[k]);
        for (size_t g = 0; g < gs->n; g++)
            X[g * p + k] = pfi_feature_value(t, &gs->g[g], names[k], NULL);
    }
    return PFI_OK;
}

double pfi_feature_from_metrics(const char *name, const double *m, int *known)
{
    if (known) *known = 1;
    int i = pfi_metric_lookup(name, strlen(name));
    if (i >= 0) return m[i];
    for (int d = 0; d < PFI_D_COUNT; d++)
        if (!strcmp(name, pfi_derived_name((pfi_derived)d)))
            return pfi_derived_value((pfi_derived)d, m);
    if (known) *known = 0;
    return NAN;
}
