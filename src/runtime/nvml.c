/* nvml.c — the NVML GPU backend (gpu.h). libnvidia-ml.so.1 (or
 * $PFI_NVML_LIBRARY) is opened with dlopen and every function pfi uses is
 * looked up by name, preferring the versioned symbol (_v2/_v3) and falling
 * back to older ones. NVML errors become pfi errors carrying NVML's own
 * message. A read that answers NOT_SUPPORTED or NO_PERMISSION leaves its
 * field out of the sample and is recorded per device (pfi_gpu_unsupported);
 * it is never fatal. Setting a limit converts W to NVML's mW. Opened
 * read-only (pfi_gpu_open_read_only) the setter is never looked up. No
 * Set*, Reset* or persistence-mode function is called anywhere else.
 * Calls on different devices may run at once (per_device, below).
 *
 * One bad GPU never blocks the others (NVML's own advice: nvmlInit_v2 and
 * nvmlDeviceGetCount_v2 count every GPU so the usable ones stay usable).
 * A GPU whose handle (nvmlDeviceGetHandleByIndex_v2) or UUID cannot be had
 * at open keeps its index and is marked unavailable with the error's kind
 * (GPU_IS_LOST -> lost, NO_PERMISSION -> no_permission: a GPU outside the
 * process's cgroup, NOT_SUPPORTED, else unknown); a GPU that answers
 * GPU_IS_LOST later is marked lost. Every call on an unavailable GPU fails
 * at once without reaching the driver; rescan looks up its handle and UUID
 * again. The UUID, name and limits' range are read once, at open (they do
 * not change while the driver is loaded). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gpu_internal.h"
#include "nvml_api.h"

#define NV_MAX_GPUS 64

typedef struct nv {
    void *dl;
    nvmlShutdown_fn shutdown;
    nvmlErrorString_fn errstr;
    nvmlDeviceGetUUID_fn uuid;
    nvmlDeviceGetName_fn name;
    nvmlDeviceGetPowerUsage_fn power;
    nvmlDeviceGetTotalEnergyConsumption_fn energy;
    nvmlDeviceGetPowerManagementLimitConstraints_fn constraints;
    nvmlDeviceGetPowerManagementDefaultLimit_fn def_limit;
    nvmlDeviceGetPowerManagementLimit_fn limit;
    nvmlDeviceGetEnforcedPowerLimit_fn enforced;
    nvmlDeviceSetPowerManagementLimit_fn set_limit;
    nvmlDeviceGetClockInfo_fn clock;
    nvmlDeviceGetUtilizationRates_fn util;
    nvmlDeviceGetCurrentClocksEventReasons_fn reasons;
    nvmlDeviceGetMemoryInfo_fn mem;
    nvmlDeviceGetTemperature_fn temp;
    nvmlDeviceGetFieldValues_fn fields;
    nvmlDeviceGetComputeRunningProcesses_fn procs;
    nvmlDeviceGetComputeRunningProcesses_v1_fn procs_v1;
    nvmlDeviceGetPersistenceMode_fn persistence;
    nvmlDeviceGetMinorNumber_fn minor;
    nvmlDeviceGetPciInfo_fn pci;
    nvmlDeviceGetMigMode_fn mig;
    nvmlDeviceGetHandleByIndex_fn handle;
    unsigned n;
    nvmlDevice_t dev[NV_MAX_GPUS];
    char unsupported[NV_MAX_GPUS][256];
    /* per device, touched only by calls naming it */
    pfi_gpu_avail avail[NV_MAX_GPUS];
    nvmlReturn_t avail_err[NV_MAX_GPUS]; /* the NVML error that made it unavailable */
    unsigned unknown_run[NV_MAX_GPUS];   /* samples in a row failed with NVML_ERROR_UNKNOWN */
    nvmlReturn_t last_err[NV_MAX_GPUS];  /* the last error map_err saw on the device */
    pfi_gpu_info info[NV_MAX_GPUS];      /* read at open (or rescan) */
} nv;

static const char *msg(const nv *s, nvmlReturn_t r)
{
    const char *m = s->errstr ? s->errstr(r) : NULL;
    return m ? m : "unknown NVML error";
}

static pfi_gpu_avail avail_of(nvmlReturn_t r)
{
    return r == NVML_ERROR_GPU_IS_LOST        ? PFI_GPU_LOST
           : r == NVML_ERROR_NO_PERMISSION    ? PFI_GPU_NO_PERMISSION
           : r == NVML_ERROR_NOT_SUPPORTED    ? PFI_GPU_NOT_SUPPORTED
           : r == NVML_ERROR_RESET_REQUIRED   ? PFI_GPU_RESET_REQUIRED
           : r == NVML_ERROR_TIMEOUT          ? PFI_GPU_TIMEOUT
           : r == NVML_ERROR_OPERATING_SYSTEM ? PFI_GPU_OS_BLOCKED
                                              : PFI_GPU_UNKNOWN;
}

/* an NVML error on device i. Errors that say the device itself cannot be
 * used until something is done mark it unavailable (looked for again at
 * each rescan): GPU_IS_LOST ("fallen off the bus or otherwise
 * inaccessible"), RESET_REQUIRED ("the GPU requires a reset"), TIMEOUT (a
 * hung call: the driver serialises other GPUs' controls behind it) and
 * OPERATING_SYSTEM (the OS blocked the call: a cgroup without the device)
 * (nvml.h, nvmlReturn_t) */
static pfi_status map_err(nv *s, nvmlReturn_t r, pfi_error *err, const char *what, size_t i)
{
    if (i < NV_MAX_GPUS) s->last_err[i] = r;
    if ((r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_RESET_REQUIRED || r == NVML_ERROR_TIMEOUT ||
         r == NVML_ERROR_OPERATING_SYSTEM) &&
        i < NV_MAX_GPUS) {
        s->avail[i] = avail_of(r);
        s->avail_err[i] = r;
    }
    pfi_status code = r == NVML_ERROR_NO_PERMISSION      ? PFI_EPERM
                      : r == NVML_ERROR_NOT_SUPPORTED    ? PFI_EUNSUPP
                      : r == NVML_ERROR_INVALID_ARGUMENT ? PFI_ERANGE
                      : r == NVML_ERROR_NOT_FOUND        ? PFI_ENOTFOUND
                                                         : PFI_EIO;
    return pfi_errorf(err, code, "NVML: GPU %zu: %s: %s (NVML error %d)", i, what, msg(s, r), r);
}

/* note an unsupported read once per device */
static void note(nv *s, size_t i, const char *what)
{
    char *u = s->unsupported[i];
    if (strstr(u, what)) return;
    size_t n = strlen(u);
    snprintf(u + n, sizeof s->unsupported[0] - n, "%s%s", n ? "," : "", what);
}

/* a read's result: 1 ok; 0 left out of the sample: unsupported / no
 * permission / absent (noted), or another error (its status in *st, its
 * message in err: a sample without its power reading fails with it); -1
 * the GPU is unavailable now (map_err: the sample fails) */
static int rd(nv *s, size_t i, nvmlReturn_t r, const char *what, int present, pfi_error *err,
              pfi_status *st)
{
    if (!present) {
        note(s, i, what);
        return 0;
    }
    if (r == NVML_SUCCESS) return 1;
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) {
        note(s, i, what);
        return 0;
    }
    *st = map_err(s, r, err, what, i);
    return s->avail[i] != PFI_GPU_OK ? -1 : 0; /* lost, reset required, timeout, OS-blocked */
}

/* every call on device i starts here: an unavailable GPU fails at once */
#define AVAILABLE(s, i, err)                                                                       \
    do {                                                                                           \
        if ((s)->avail[i] != PFI_GPU_OK)                                                           \
            return pfi_errorf(                                                                     \
                err, PFI_EIO, "NVML: GPU %zu is unavailable: %s (%s, NVML error %d)", (size_t)(i), \
                pfi_gpu_avail_name((s)->avail[i]), msg(s, (s)->avail_err[i]), (s)->avail_err[i]);  \
    } while (0)

static size_t n_count(void *st)
{
    return ((nv *)st)->n;
}

/* reads device i's identity and limits' range into s->info[i] (at open and
 * rescan); the handle must be valid */
/* Where the GPU's power is governed (gpu.h, PFI_POWER_SCOPE_*), from scoped
 * field values: the instant power at GPU and module scope, the limit at
 * module scope. A library without field values, or a call that fails as a
 * whole, is an ordinary GPU (as before). */
static int power_scope(nv *s, size_t i)
{
    if (!s->fields) return PFI_POWER_SCOPE_GPU;
    nvmlFieldValue_t fv[3];
    memset(fv, 0, sizeof fv);
    fv[0].fieldId = fv[1].fieldId = NVML_FI_DEV_POWER_INSTANT;
    fv[0].scopeId = NVML_POWER_SCOPE_GPU;
    fv[1].scopeId = NVML_POWER_SCOPE_MODULE;
    fv[2].fieldId = NVML_FI_DEV_POWER_CURRENT_LIMIT;
    fv[2].scopeId = NVML_POWER_SCOPE_MODULE;
    if (s->fields(s->dev[i], 3, fv) != NVML_SUCCESS) return PFI_POWER_SCOPE_GPU;
    if (fv[2].nvmlReturn == NVML_SUCCESS) return PFI_POWER_SCOPE_MODULE_LIMITS;
    if (fv[0].nvmlReturn != NVML_SUCCESS && fv[1].nvmlReturn == NVML_SUCCESS)
        return PFI_POWER_SCOPE_MODULE;
    return PFI_POWER_SCOPE_GPU;
}

static nvmlReturn_t read_info(nv *s, size_t i)
{
    pfi_gpu_info *info = &s->info[i];
    memset(info, 0, sizeof *info);
    nvmlReturn_t r = s->uuid(s->dev[i], info->uuid, sizeof info->uuid);
    if (r) return r;
    info->uuid[sizeof info->uuid - 1] = '\0';
    if (!info->uuid[0]) return NVML_ERROR_UNKNOWN; /* a UUID is what the agent keys GPUs by */
    if (s->name && s->name(s->dev[i], info->name, sizeof info->name) != NVML_SUCCESS)
        snprintf(info->name, sizeof info->name, "NVIDIA GPU");
    info->name[sizeof info->name - 1] = '\0';
    unsigned lo = 0, hi = 0, def = 0;
    r = s->constraints ? s->constraints(s->dev[i], &lo, &hi) : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (r == NVML_ERROR_GPU_IS_LOST) return r;
    if (r == NVML_SUCCESS && lo <= hi) {
        info->cap_min_w = lo / 1000.0;
        info->cap_max_w = hi / 1000.0;
    } else {
        note(s, i, "power_limit_constraints");
        info->cap_min_w = info->cap_max_w = 0.0 / 0.0;
    }
    r = s->def_limit ? s->def_limit(s->dev[i], &def) : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (r == NVML_ERROR_GPU_IS_LOST) return r;
    if (r == NVML_SUCCESS) info->cap_default_w = def / 1000.0;
    else {
        note(s, i, "power_limit_default");
        info->cap_default_w = 0.0 / 0.0;
    }
    /* identity in other APIs' terms: the device file's minor number (what
       Slurm and cgroups name), the PCI bus id (what NVML's order follows) */
    unsigned mn = 0, cur = 0, pend = 0;
    info->minor = s->minor && s->minor(s->dev[i], &mn) == NVML_SUCCESS && mn < 1024 ? (int)mn : -1;
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    if (s->pci && s->pci(s->dev[i], &pci) == NVML_SUCCESS) {
        pci.busId[sizeof pci.busId - 1] = '\0';
        snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s", pci.busId);
    }
    /* MIG: NOT_SUPPORTED on a GPU without MIG (nvml.h: nvmlDeviceGetMigMode) */
    info->mig = s->mig && s->mig(s->dev[i], &cur, &pend) == NVML_SUCCESS
                    ? cur == NVML_DEVICE_MIG_ENABLE
                    : -1;
    info->power_scope = power_scope(s, i);
    return NVML_SUCCESS;
}

static pfi_status n_info(void *st, size_t i, pfi_gpu_info *info, pfi_error *err)
{
    nv *s = st;
    AVAILABLE(s, i, err);
    *info = s->info[i];
    return PFI_OK;
}

static pfi_gpu_avail n_avail(void *st, size_t i)
{
    return ((nv *)st)->avail[i];
}

/* looks up device i's handle and identity; available when both answer */
static pfi_gpu_avail n_rescan(void *st, size_t i)
{
    nv *s = st;
    if (s->avail[i] == PFI_GPU_OK) return PFI_GPU_OK;
    nvmlReturn_t r = s->handle((unsigned)i, &s->dev[i]);
    if (r == NVML_SUCCESS) r = read_info(s, i);
    if (r) {
        s->avail[i] = avail_of(r);
        s->avail_err[i] = r;
        return s->avail[i];
    }
    s->avail[i] = PFI_GPU_OK;
    s->avail_err[i] = NVML_SUCCESS;
    return PFI_GPU_OK;
}

static pfi_status n_limit(void *st, size_t i, double *cap_w, pfi_error *err)
{
    nv *s = st;
    AVAILABLE(s, i, err);
    unsigned u = 0;
    if (!s->limit)
        return pfi_errorf(err, PFI_EUNSUPP,
                          "NVML: nvmlDeviceGetPowerManagementLimit is missing from the library");
    nvmlReturn_t r = s->limit(s->dev[i], &u);
    if (r) return map_err(s, r, err, "nvmlDeviceGetPowerManagementLimit", i);
    *cap_w = u / 1000.0;
    return PFI_OK;
}

static int n_persistence(void *st, size_t i)
{
    nv *s = st;
    int mode = 0;
    if (s->avail[i] != PFI_GPU_OK || !s->persistence ||
        s->persistence(s->dev[i], &mode) != NVML_SUCCESS)
        return -1;
    return mode == NVML_FEATURE_ENABLED;
}

/* a field value as a double, by its declared type (NaN for a type it cannot be) */
static double field_value(const nvmlFieldValue_t *fv)
{
    switch (fv->valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return fv->value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return (double)fv->value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return (double)fv->value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return (double)fv->value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return (double)fv->value.sllVal;
    case NVML_VALUE_TYPE_SIGNED_INT: return (double)fv->value.siVal;
    default: return 0.0 / 0.0;
    }
}

static pfi_status n_sample(void *st, size_t i, pfi_gpu_sample *o, pfi_error *err)
{
    nv *s = st;
    AVAILABLE(s, i, err);
    nvmlDevice_t d = s->dev[i];
    memset(o, 0, sizeof *o);
    for (int m = 0; m < PFI_M_COUNT; m++) o->prof[m] = 0.0 / 0.0;
    o->t_s = pfi_clock_now();
    pfi_status rc = PFI_OK;
    unsigned u = 0, v = 0;
    unsigned long long ull = 0;
    int k;
    if ((k = rd(s, i, s->power ? s->power(d, &u) : 0, "power_usage", s->power != NULL, err, &rc)) <
        0)
        return rc;
    if (k) o->power_w = u / 1000.0, o->have |= PFI_GS_POWER;
    if ((k = rd(s, i, s->energy ? s->energy(d, &ull) : 0, "total_energy", s->energy != NULL, err,
                &rc)) < 0)
        return rc;
    if (k) o->energy_j = (double)ull / 1000.0, o->have |= PFI_GS_ENERGY;
    if ((k = rd(s, i, s->limit ? s->limit(d, &u) : 0, "power_limit", s->limit != NULL, err, &rc)) <
        0)
        return rc;
    if (k) o->cap_w = u / 1000.0, o->have |= PFI_GS_CAP;
    if ((k = rd(s, i, s->enforced ? s->enforced(d, &u) : 0, "enforced_power_limit",
                s->enforced != NULL, err, &rc)) < 0)
        return rc;
    if (k) o->enforced_w = u / 1000.0, o->have |= PFI_GS_ENFORCED;
    if (s->clock) {
        nvmlReturn_t r1 = s->clock(d, NVML_CLOCK_SM, &u),
                     r2 = r1 ? r1 : s->clock(d, NVML_CLOCK_MEM, &v);
        if ((k = rd(s, i, r2, "clocks", 1, err, &rc)) < 0) return rc;
        if (k) o->sm_clock_mhz = u, o->mem_clock_mhz = v, o->have |= PFI_GS_CLOCKS;
    } else note(s, i, "clocks");
    nvmlUtilization_t ut;
    if ((k = rd(s, i, s->util ? s->util(d, &ut) : 0, "utilization", s->util != NULL, err, &rc)) < 0)
        return rc;
    if (k) o->util_gpu_pct = ut.gpu, o->util_mem_pct = ut.memory, o->have |= PFI_GS_UTIL;
    if ((k = rd(s, i, s->reasons ? s->reasons(d, &ull) : 0, "clocks_event_reasons",
                s->reasons != NULL, err, &rc)) < 0)
        return rc;
    if (k) o->throttle_reasons = ull, o->have |= PFI_GS_THROTTLE;
    nvmlMemory_t mm;
    if ((k = rd(s, i, s->mem ? s->mem(d, &mm) : 0, "memory_info", s->mem != NULL, err, &rc)) < 0)
        return rc;
    if (k) o->fb_used_mib = (double)mm.used / 1048576.0, o->have |= PFI_GS_MEM;
    if ((k = rd(s, i, s->temp ? s->temp(d, NVML_TEMPERATURE_GPU, &u) : 0, "temperature",
                s->temp != NULL, err, &rc)) < 0)
        return rc;
    if (k) o->temp_c = u, o->have |= PFI_GS_TEMP;
    if (s->fields) {
        nvmlFieldValue_t fv;
        memset(&fv, 0, sizeof fv);
        fv.fieldId = NVML_FI_DEV_POWER_INSTANT;
        nvmlReturn_t r = s->fields(d, 1, &fv);
        double mw =
            r == NVML_SUCCESS && fv.nvmlReturn == NVML_SUCCESS ? field_value(&fv) : 0.0 / 0.0;
        /* a value of a type it cannot have, or absurd (over 100 kW), is noted, not used */
        if (r == NVML_SUCCESS && fv.nvmlReturn == NVML_SUCCESS && mw >= 0 && mw < 1e8)
            o->power_instant_w = mw / 1000.0, o->have |= PFI_GS_POWER_INSTANT;
        else if (r == NVML_SUCCESS && fv.nvmlReturn == NVML_SUCCESS)
            note(s, i, "field_power_instant_type");
        else if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED &&
                 r != NVML_ERROR_NO_PERMISSION && r != NVML_ERROR_INVALID_ARGUMENT)
            return map_err(s, r, err, "nvmlDeviceGetFieldValues", i);
        else note(s, i, "field_power_instant");
    } else note(s, i, "field_power_instant");
    if (s->info[i].power_scope != PFI_POWER_SCOPE_GPU && s->fields) {
        /* module power apart (GH200: it includes the Grace CPU), never as
           the GPU's; the energy counter is the module's there: left out */
        nvmlFieldValue_t fv;
        memset(&fv, 0, sizeof fv);
        fv.fieldId = NVML_FI_DEV_POWER_INSTANT;
        fv.scopeId = NVML_POWER_SCOPE_MODULE;
        if (s->fields(d, 1, &fv) == NVML_SUCCESS && fv.nvmlReturn == NVML_SUCCESS) {
            double mw = field_value(&fv);
            if (mw >= 0 && mw < 1e8)
                o->module_power_w = mw / 1000.0, o->have |= PFI_GS_MODULE_POWER;
        }
        if (s->info[i].power_scope == PFI_POWER_SCOPE_MODULE) o->have &= ~(unsigned)PFI_GS_ENERGY;
    }
    /* one field that failed (a temperature read, say) leaves only that
       field out; without its power reading the sample is no sample */
    if (rc && !(o->have & PFI_GS_POWER)) {
        /* three samples in a row that NVML answers UNKNOWN: the GPU is not
           answering sensibly; unavailable until a rescan succeeds (issue 40) */
        if (s->last_err[i] == NVML_ERROR_UNKNOWN && ++s->unknown_run[i] >= 3) {
            s->avail[i] = PFI_GPU_UNKNOWN;
            s->avail_err[i] = NVML_ERROR_UNKNOWN;
            s->unknown_run[i] = 0;
        }
        return rc;
    }
    s->unknown_run[i] = 0;
    return PFI_OK;
}

static pfi_status n_set_cap(void *st, size_t i, double cap_w, pfi_error *err)
{
    nv *s = st;
    AVAILABLE(s, i, err);
    unsigned lo = 0, hi = 0;
    if (s->constraints && s->constraints(s->dev[i], &lo, &hi) == NVML_SUCCESS &&
        !(cap_w * 1000.0 >= lo - 0.5 && cap_w * 1000.0 <= hi + 0.5))
        return pfi_errorf(err, PFI_ERANGE, "GPU %zu: cap %g W outside the device's %g..%g W", i,
                          cap_w, lo / 1000.0, hi / 1000.0);
    if (!s->set_limit)
        return pfi_errorf(err, PFI_EUNSUPP,
                          "NVML: nvmlDeviceSetPowerManagementLimit is missing from the library");
    nvmlReturn_t r = s->set_limit(s->dev[i], (unsigned)(cap_w * 1000.0 + 0.5));
    if (r) return map_err(s, r, err, "nvmlDeviceSetPowerManagementLimit", i);
    return PFI_OK;
}

/* NVML's process list: on INSUFFICIENT_SIZE it writes nothing and reports
 * the count it needs, so ask again with that many (plus room for processes
 * that start between the calls), a bounded number of times. */
static pfi_status n_procs(void *st, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                          pfi_error *err)
{
    nv *s = st;
    AVAILABLE(s, i, err);
    if (!s->procs && !s->procs_v1) {
        note(s, i, "running_processes");
        return PFI_OK;
    }
    int v1 = !s->procs;
    size_t esz = v1 ? sizeof(nvmlProcessInfo_v1_t) : sizeof(nvmlProcessInfo_t);
    unsigned cap = 64, cnt = 0;
    void *buf = NULL;
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
        /* room for 32-byte records whatever esz says, so a driver that
           writes wider records than its header cannot overflow the buffer */
        void *nb = realloc(buf, (size_t)cap * (esz > 32 ? esz : 32));
        if (!nb) {
            free(buf);
            return pfi_errorf(err, PFI_ENOMEM, "GPU %zu: out of memory for %u processes", i, cap);
        }
        buf = nb;
        cnt = cap;
        r = v1 ? s->procs_v1(s->dev[i], &cnt, buf) : s->procs(s->dev[i], &cnt, buf);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
            if (cnt <= cap || cnt > 65536) cnt = cap * 2; /* no usable count: grow */
            cap = cnt + 16;
        }
    }
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) {
        free(buf);
        note(s, i, "running_processes");
        return PFI_OK;
    }
    if (r) {
        free(buf);
        return map_err(s, r, err, "nvmlDeviceGetComputeRunningProcesses", i);
    }
    /* records sanity-checked: pid 0 is no process (a record the driver did
       not fill); memory NVML_VALUE_NOT_AVAILABLE (a process in another
       container, or under MIG) is NaN, not 16 EiB */
    for (unsigned k = 0; k < cnt && k < cap && *n < max; k++) {
        unsigned pid;
        unsigned long long used;
        if (v1) {
            const nvmlProcessInfo_v1_t *b = (const nvmlProcessInfo_v1_t *)buf + k;
            pid = b->pid, used = b->usedGpuMemory;
        } else {
            const nvmlProcessInfo_t *b = (const nvmlProcessInfo_t *)buf + k;
            pid = b->pid, used = b->usedGpuMemory;
        }
        if (pid == 0) continue;
        memset(&p[*n], 0, sizeof p[0]);
        p[*n].pid = pid;
        p[*n].used_mib =
            used == NVML_VALUE_NOT_AVAILABLE_ULL ? 0.0 / 0.0 : (double)used / 1048576.0;
        (*n)++;
    }
    free(buf);
    return PFI_OK;
}

static const char *n_unsupported(void *st, size_t i)
{
    return ((nv *)st)->unsupported[i];
}

static void n_close(void *st)
{
    nv *s = st;
    if (!s) return;
    if (s->shutdown) s->shutdown();
    if (s->dl) dlclose(s->dl);
    free(s);
}

/* per_device: NVML is thread-safe and every call names its device; this
 * backend's own state for GPU i (unsupported[i]) is touched only by calls on
 * i, and the rest is fixed after open. So gpu.c locks per GPU and sets the
 * caps of several GPUs from parallel threads. */
static const pfi_gpu_ops nvml_ops = {.name = "nvml",
                                     .count = n_count,
                                     .info = n_info,
                                     .sample = n_sample,
                                     .set_cap = n_set_cap,
                                     .processes = n_procs,
                                     .unsupported = n_unsupported,
                                     .close = n_close,
                                     .avail = n_avail,
                                     .limit = n_limit,
                                     .rescan = n_rescan,
                                     .persistence = n_persistence,
                                     .per_device = 1};

/* the first of the names the library exports */
static void *sym(void *dl, const char *a, const char *b, const char *c)
{
    void *f = dlsym(dl, a);
    if (!f && b) f = dlsym(dl, b);
    if (!f && c) f = dlsym(dl, c);
    return f;
}

/* the optional entry points of the loaded library (NULL where it lacks one:
 * each use checks); read-only: no setter is even looked up, so none can be
 * called */
static void lookup_optional(nv *s, int read_only)
{
    s->shutdown = (nvmlShutdown_fn)sym(s->dl, "nvmlShutdown", NULL, NULL);
    s->errstr = (nvmlErrorString_fn)sym(s->dl, "nvmlErrorString", NULL, NULL);
    s->uuid = (nvmlDeviceGetUUID_fn)sym(s->dl, "nvmlDeviceGetUUID", NULL, NULL);
    s->name = (nvmlDeviceGetName_fn)sym(s->dl, "nvmlDeviceGetName", NULL, NULL);
    s->power = (nvmlDeviceGetPowerUsage_fn)sym(s->dl, "nvmlDeviceGetPowerUsage", NULL, NULL);
    s->energy = (nvmlDeviceGetTotalEnergyConsumption_fn)sym(
        s->dl, "nvmlDeviceGetTotalEnergyConsumption", NULL, NULL);
    s->constraints = (nvmlDeviceGetPowerManagementLimitConstraints_fn)sym(
        s->dl, "nvmlDeviceGetPowerManagementLimitConstraints", NULL, NULL);
    s->def_limit = (nvmlDeviceGetPowerManagementDefaultLimit_fn)sym(
        s->dl, "nvmlDeviceGetPowerManagementDefaultLimit", NULL, NULL);
    s->limit = (nvmlDeviceGetPowerManagementLimit_fn)sym(s->dl, "nvmlDeviceGetPowerManagementLimit",
                                                         NULL, NULL);
    s->enforced = (nvmlDeviceGetEnforcedPowerLimit_fn)sym(s->dl, "nvmlDeviceGetEnforcedPowerLimit",
                                                          NULL, NULL);
    s->set_limit = read_only ? NULL
                             : (nvmlDeviceSetPowerManagementLimit_fn)sym(
                                   s->dl, "nvmlDeviceSetPowerManagementLimit", NULL, NULL);
    s->clock = (nvmlDeviceGetClockInfo_fn)sym(s->dl, "nvmlDeviceGetClockInfo", NULL, NULL);
    s->util =
        (nvmlDeviceGetUtilizationRates_fn)sym(s->dl, "nvmlDeviceGetUtilizationRates", NULL, NULL);
    s->reasons = (nvmlDeviceGetCurrentClocksEventReasons_fn)sym(
        s->dl, "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons", NULL);
    s->mem = (nvmlDeviceGetMemoryInfo_fn)sym(s->dl, "nvmlDeviceGetMemoryInfo", NULL, NULL);
    s->temp = (nvmlDeviceGetTemperature_fn)sym(s->dl, "nvmlDeviceGetTemperature", NULL, NULL);
    s->fields = (nvmlDeviceGetFieldValues_fn)sym(s->dl, "nvmlDeviceGetFieldValues", NULL, NULL);
    /* _v2 first: some R535 drivers' _v3 writes 32-byte records (with a
       confidential-computing field) where its header says 24, which misreads
       PIDs; _v2 writes the 24-byte nvmlProcessInfo_t everywhere */
    s->procs = (nvmlDeviceGetComputeRunningProcesses_fn)sym(
        s->dl, "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3",
        NULL);
    s->procs_v1 = (nvmlDeviceGetComputeRunningProcesses_v1_fn)sym(
        s->dl, "nvmlDeviceGetComputeRunningProcesses", NULL, NULL);
    s->persistence =
        (nvmlDeviceGetPersistenceMode_fn)sym(s->dl, "nvmlDeviceGetPersistenceMode", NULL, NULL);
}

pfi_status pfi_gpu_nvml_open(const char *opts, int read_only, const pfi_gpu_ops **ops, void **out,
                             pfi_error *err)
{
    if (opts && *opts)
        return pfi_errorf(err, PFI_EINVAL, "the nvml backend takes no options (got '%s')", opts);
    const char *lib = getenv("PFI_NVML_LIBRARY");
    if (!lib || !*lib) lib = "libnvidia-ml.so.1";
    nv *s = calloc(1, sizeof *s);
    if (!s) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    s->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!s->dl) {
        const char *e = dlerror();
        free(s);
        return pfi_errorf(err, PFI_ENOTFOUND,
                          "NVML: cannot load %s: %s (no NVIDIA driver here? try --backend sim)",
                          lib, e ? e : "unknown error");
    }
    nvmlInit_fn init = (nvmlInit_fn)sym(s->dl, "nvmlInit_v2", "nvmlInit", NULL);
    nvmlDeviceGetCount_fn count =
        (nvmlDeviceGetCount_fn)sym(s->dl, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL);
    nvmlDeviceGetHandleByIndex_fn handle = (nvmlDeviceGetHandleByIndex_fn)sym(
        s->dl, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", NULL);
    lookup_optional(s, read_only);
    s->handle = handle;
    s->minor = (nvmlDeviceGetMinorNumber_fn)sym(s->dl, "nvmlDeviceGetMinorNumber", NULL, NULL);
    s->pci = (nvmlDeviceGetPciInfo_fn)sym(s->dl, "nvmlDeviceGetPciInfo_v3", NULL, NULL);
    s->mig = (nvmlDeviceGetMigMode_fn)sym(s->dl, "nvmlDeviceGetMigMode", NULL, NULL);
    if (!init || !count || !handle || !s->uuid) {
        dlclose(s->dl);
        free(s);
        return pfi_errorf(err, PFI_EUNSUPP,
                          "NVML: %s lacks nvmlInit/nvmlDeviceGetCount/GetHandleByIndex/GetUUID",
                          lib);
    }
    nvmlReturn_t r = init();
    if (r) {
        /* after a driver upgrade without a reboot the library and the
           loaded kernel module differ: name the remedy (docs/agent.md) */
        const char *hint = r == NVML_ERROR_LIB_RM_VERSION_MISMATCH
                               ? ": the NVML library and the loaded kernel driver are different "
                                 "versions (a driver upgrade without a reboot): reload the nvidia "
                                 "modules or reboot; stop pfi-agent before a driver upgrade"
                               : "";
        pfi_status st =
            pfi_errorf(err, PFI_EIO, "NVML: nvmlInit: %s (NVML error %d)%s", msg(s, r), r, hint);
        dlclose(s->dl);
        free(s);
        return st;
    }
    unsigned n = 0;
    r = count(&n);
    if (r) {
        pfi_status st =
            pfi_errorf(err, PFI_EIO, "NVML: nvmlDeviceGetCount: %s (NVML error %d)", msg(s, r), r);
        n_close(s);
        return st;
    }
    if (n > NV_MAX_GPUS) n = NV_MAX_GPUS;
    /* every GPU keeps its index; one that cannot be opened is unavailable */
    for (unsigned i = 0; i < n; i++) {
        s->avail[i] = PFI_GPU_UNKNOWN;
        s->avail_err[i] = NVML_ERROR_UNKNOWN;
        n_rescan(s, i);
    }
    s->n = n;
    *ops = &nvml_ops;
    *out = s;
    return PFI_OK;
}
