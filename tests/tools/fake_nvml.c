/* fake_nvml.c — the NVML test double (in the spirit of DCGM's NVML
 * injection library): a shared library exporting the NVML symbols pfi's
 * NVML backend uses, selected with PFI_NVML_LIBRARY=.../libfake_nvml.so, so
 * the real NVML code path runs without a GPU. Behaviour, from the
 * environment:
 *   FAKE_NVML_GPUS=N            devices (default 2), H100-like: limits 200..700 W
 *   FAKE_NVML_STATE=FILE        the devices' power limits (mW, one per line),
 *                               kept across processes like real hardware
 *   FAKE_NVML_PROCS=i:pid,...   compute processes per device index
 *   FAKE_NVML_UNSUPPORTED=a,b   functions answering NOT_SUPPORTED
 *                               (e.g. nvmlDeviceGetFieldValues)
 *   FAKE_NVML_NO_PERMISSION=1   nvmlDeviceSetPowerManagementLimit answers NO_PERMISSION
 *   FAKE_NVML_MAX_W=W, FAKE_NVML_DEFAULT_W=W  the maximum and default limits
 *                               (700; the maximum): a B200-like SKU's default is below
 *   FAKE_NVML_RESETS=FILE       "INDEX COUNT" lines: a higher COUNT resets that GPU
 *                               (limit to its default, energy counter from 0)
 *   FAKE_NVML_MODULE=i,j        GH200-like: GPU-scope power fields missing, module
 *                               scope present (GPU + 150 W of CPU)
 *   FAKE_NVML_MODULE_LIMITS=i,j GB200-like: a module power limit of its own
 *   FAKE_NVML_STALL=FILE        "INDEX MS" lines: each call on that device takes MS ms
 *                               more (a hung GSP call); FAKE_NVML_STALL_GLOBAL=1: the
 *                               stall holds a driver-wide lock every call takes
 *   FAKE_NVML_CAPS=1            ... answers NO_PERMISSION unless the caller has
 *                               CAP_SYS_ADMIN, as the driver's check does (admin())
 *   FAKE_NVML_SET_FAIL=i,j      ... answers UNKNOWN on devices i, j only
 *   FAKE_NVML_SET_DELAY_MS=N    each nvmlDeviceSetPowerManagementLimit takes N ms
 *                               (a driver's round trip), outside any lock
 *   FAKE_NVML_SETTER_MAX_FILE=FILE  the most nvmlDeviceSetPowerManagementLimit
 *                               calls in flight at once in this process so far,
 *                               rewritten after each call (also
 *                               fake_nvml_setters_max_in_flight(); reset with
 *                               fake_nvml_setters_reset())
 *   FAKE_NVML_INIT_FAIL=1       nvmlInit fails (driver not loaded); =N (N > 1) with
 *                               nvmlReturn_t N, e.g. 18 LIB_RM_VERSION_MISMATCH: what
 *                               nvmlInit answers after a driver upgrade without a reboot
 *   FAKE_NVML_FAULTS=FILE       per-device errors, read at every call (so a test can
 *                               make a GPU fail after start): lines "INDEX CODE WHERE",
 *                               CODE an nvmlReturn_t, WHERE "handle" (only
 *                               nvmlDeviceGetHandleByIndex_v2), "all" (every call
 *                               naming the device, the handle lookup included) or a
 *                               function's name. What NVML documents: GetHandleByIndex
 *                               answers NO_PERMISSION (4) "if the user doesn't have
 *                               permission to talk to this device" (a GPU outside the
 *                               job's cgroup) and GPU_IS_LOST (15) "if the target GPU
 *                               has fallen off the bus or is otherwise inaccessible";
 *                               any device call may answer GPU_IS_LOST or UNKNOWN (999)
 *                               (nvml.h, NVML API Reference, "Device Queries")
 *   FAKE_NVML_PERSISTENCE=0     persistence mode off on every device (default on)
 *   FAKE_NVML_MINORS=m0,m1,...  each index's /dev/nvidiaN minor number (default
 *                               the index): NVML orders devices by PCI bus id, and
 *                               its index "may not correlate with other APIs" (NVML
 *                               API Reference, nvmlDeviceGetHandleByIndex_v2); the
 *                               device file's minor number is what Slurm (gres.conf
 *                               File=) and cgroups use (nvmlDeviceGetMinorNumber)
 *   FAKE_NVML_MIG=i,j           MIG mode enabled on these devices (nvmlDeviceGetMigMode;
 *                               their utilization then answers NOT_SUPPORTED, as NVML
 *                               documents for MIG-enabled GPUs)
 *   FAKE_NVML_ENFORCED=FILE     enforced limits (mW, one line per device; 0 or no
 *                               line: the management limit), read at every call:
 *                               a limit set out of band (a BMC, another tool)
 *   FAKE_NVML_SETTER_LOG=FILE   every call of a function that changes a device
 *                               (nvmlDeviceSet*, Reset*, persistence mode) appends
 *                               its name here; fake_nvml_setter_calls() counts them
 *                               in this process. Read-only tests assert none.
 * Power follows the limit: min(limit, 650 W) x 0.93 plus a few watts of
 * ripple; energy integrates it over wall time (never going back but at a reset).
 *
 * Built a second time with -DFAKE_NVML_OLD (libfake_nvml_old.so): an old
 * driver's library, without nvmlDeviceGetFieldValues, GetEnforcedPowerLimit,
 * GetPowerManagementDefaultLimit, GetTotalEnergyConsumption and the
 * versioned process lists (only the unversioned one): what is missing must
 * read as absent, never fail.
 *
 * Thread-safe as NVML is: the limits and their file are kept under one
 * mutex, which a delayed setter does not hold while it waits. */
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nvml_api.h"

#define API __attribute__((visibility("default")))
#define MAXG 64

struct nvmlDevice_st {
    unsigned idx;
};
static struct nvmlDevice_st devs[MAXG];
static unsigned limit_mw[MAXG];
static unsigned ngpu;
static double t_init;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* limit_mw and the files */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int unsupported(const char *fn)
{
    const char *u = getenv("FAKE_NVML_UNSUPPORTED");
    if (!u) return 0;
    size_t n = strlen(fn);
    for (const char *p = strstr(u, fn); p; p = strstr(p + 1, fn))
        if ((p == u || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

/* FAKE_NVML_MAX_W / FAKE_NVML_DEFAULT_W: the devices' maximum and default
 * limits (W; default 700 and the maximum). A default below the maximum is a
 * B200-like SKU: DGX B200 ships at 700 W of a 1000 W maximum, so a GPU
 * reset lands below a cap pfi set between the two. */
static unsigned env_mw(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    long w = v ? strtol(v, NULL, 10) : 0;
    return w >= 200 && w <= 4000 ? (unsigned)w * 1000u : dflt;
}
static unsigned max_mw(void)
{
    return env_mw("FAKE_NVML_MAX_W", 700000);
}
static unsigned default_mw(void)
{
    return env_mw("FAKE_NVML_DEFAULT_W", max_mw());
}

static void save(void);
/* each device's energy counter (J) and when it was last brought up to date:
   it integrates the power over time, so it never goes back (as NVML's
   counter does not) except at a reset */
static double e_acc_j[MAXG], e_last_t[MAXG];
static unsigned resets_seen[MAXG];

/* FAKE_NVML_RESETS=FILE: lines "INDEX COUNT", read at every limit or energy
 * read; a COUNT above the one this process saw is a GPU reset (nvidia-smi
 * -r, a driver recovery): the device's limit goes back to its default and
 * its energy counter starts again ("total energy consumption ... since the
 * driver was last reloaded", nvml.h nvmlDeviceGetTotalEnergyConsumption).
 * Called under mu. */
static void check_resets(void)
{
    const char *rf = getenv("FAKE_NVML_RESETS");
    FILE *f = rf ? fopen(rf, "r") : NULL;
    if (!f) return;
    unsigned i, c;
    int changed = 0;
    while (fscanf(f, "%u %u", &i, &c) == 2)
        if (i < MAXG && c > resets_seen[i]) {
            resets_seen[i] = c;
            limit_mw[i] = default_mw();
            e_acc_j[i] = 0;
            e_last_t[i] = now();
            changed = 1;
        }
    fclose(f);
    if (changed) save();
}

static void load(void)
{
    for (unsigned i = 0; i < MAXG; i++) limit_mw[i] = default_mw();
    const char *st = getenv("FAKE_NVML_STATE");
    FILE *f = st ? fopen(st, "r") : NULL;
    if (!f) return;
    for (unsigned i = 0; i < MAXG && fscanf(f, "%u", &limit_mw[i]) == 1; i++) {
    }
    fclose(f);
    check_resets();
}

static void save(void)
{
    const char *st = getenv("FAKE_NVML_STATE");
    if (!st) return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", st);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    for (unsigned i = 0; i < ngpu; i++) fprintf(f, "%u\n", limit_mw[i]);
    fclose(f);
    rename(tmp, st);
}

static atomic_uint setter_calls, in_flight, max_in_flight;

/* a call that would change a device: counted, and logged to FAKE_NVML_SETTER_LOG */
static void setter(const char *fn)
{
    atomic_fetch_add(&setter_calls, 1);
    const char *p = getenv("FAKE_NVML_SETTER_LOG");
    pthread_mutex_lock(&mu);
    FILE *f = p ? fopen(p, "a") : NULL;
    if (f) {
        fprintf(f, "%s\n", fn);
        fclose(f);
    }
    pthread_mutex_unlock(&mu);
}

API unsigned fake_nvml_setter_calls(void)
{
    return atomic_load(&setter_calls);
}

API unsigned fake_nvml_setters_max_in_flight(void)
{
    return atomic_load(&max_in_flight);
}

API void fake_nvml_setters_reset(void)
{
    atomic_store(&max_in_flight, 0);
}

/* a limit setter starts: counted in flight, then waits FAKE_NVML_SET_DELAY_MS */
static void set_begin(void)
{
    unsigned n = atomic_fetch_add(&in_flight, 1) + 1;
    unsigned m = atomic_load(&max_in_flight);
    while (n > m && !atomic_compare_exchange_weak(&max_in_flight, &m, n)) {
    }
    const char *d = getenv("FAKE_NVML_SET_DELAY_MS");
    long ms = d ? atol(d) : 0;
    if (ms > 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
}

/* ... and ends: the maximum so far goes to FAKE_NVML_SETTER_MAX_FILE */
static void set_end(void)
{
    atomic_fetch_sub(&in_flight, 1);
    const char *p = getenv("FAKE_NVML_SETTER_MAX_FILE");
    if (!p) return;
    pthread_mutex_lock(&mu);
    FILE *f = fopen(p, "w");
    if (f) {
        fprintf(f, "%u\n", atomic_load(&max_in_flight));
        fclose(f);
    }
    pthread_mutex_unlock(&mu);
}

/* device i listed in the comma-separated env var name */
static int listed(const char *name, unsigned i)
{
    const char *s = getenv(name);
    while (s && *s) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s) return 0;
        if (v == i) return 1;
        s = *end == ',' ? end + 1 : end;
    }
    return 0;
}

/* FAKE_NVML_SET_FAIL lists device i */
static int set_fails(unsigned i)
{
    return listed("FAKE_NVML_SET_FAIL", i);
}

/* the enforced limit FAKE_NVML_ENFORCED sets for device i, or 0 */
__attribute__((unused)) static unsigned enforced_override(unsigned i)
{
    const char *p = getenv("FAKE_NVML_ENFORCED");
    FILE *f = p ? fopen(p, "r") : NULL;
    unsigned v = 0, k = 0, x;
    if (!f) return 0;
    while (fscanf(f, "%u", &x) == 1)
        if (k++ == i) v = x;
    fclose(f);
    return v;
}

/* the error FAKE_NVML_FAULTS gives device i for function fn, or SUCCESS */
static nvmlReturn_t fault(unsigned i, const char *fn)
{
    const char *p = getenv("FAKE_NVML_FAULTS");
    FILE *f = p ? fopen(p, "r") : NULL;
    if (!f) return NVML_SUCCESS;
    unsigned idx;
    int code;
    char where[128];
    nvmlReturn_t r = NVML_SUCCESS;
    while (r == NVML_SUCCESS && fscanf(f, "%u %d %127s", &idx, &code, where) == 3)
        if (idx == i && (!strcmp(where, "all") || !strcmp(where, fn))) r = code;
    fclose(f);
    return r;
}

/* FAKE_NVML_STALL=FILE: lines "INDEX MS", read at every call: each call
 * naming that device takes MS ms more, as a hung GSP call does (about 6 s a
 * call on a sick GPU; issue 40). FAKE_NVML_STALL_GLOBAL=1: the stall holds
 * a driver-wide lock that every device call takes, so the other GPUs' calls
 * wait behind it, as the driver serialises controls behind a hung call.
 * Without it only the sick device's callers wait. */
static pthread_mutex_t drv_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned stall_ms(unsigned i)
{
    const char *p = getenv("FAKE_NVML_STALL");
    FILE *f = p ? fopen(p, "r") : NULL;
    unsigned idx, ms, out = 0;
    if (!f) return 0;
    while (fscanf(f, "%u %u", &idx, &ms) == 2)
        if (idx == i) out = ms;
    fclose(f);
    return out;
}
static void stall(unsigned i)
{
    int global = getenv("FAKE_NVML_STALL_GLOBAL") != NULL;
    unsigned ms = stall_ms(i);
    if (global) pthread_mutex_lock(&drv_mu);
    if (ms) {
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    if (global) pthread_mutex_unlock(&drv_mu);
}
#define DEV_OK(d)                                                                                  \
    if (!(d) || (d)->idx >= ngpu) return NVML_ERROR_INVALID_ARGUMENT;                              \
    do {                                                                                           \
        stall((d)->idx);                                                                           \
        nvmlReturn_t f_ = fault((d)->idx, __func__);                                               \
        if (f_) return f_;                                                                         \
    } while (0)
#define UNSUP(name)                                                                                \
    if (unsupported(name)) return NVML_ERROR_NOT_SUPPORTED

API nvmlReturn_t nvmlInit_v2(void)
{
    const char *fi = getenv("FAKE_NVML_INIT_FAIL");
    if (fi) return atoi(fi) > 1 ? (nvmlReturn_t)atoi(fi) : NVML_ERROR_UNKNOWN;
    const char *g = getenv("FAKE_NVML_GPUS");
    ngpu = g ? (unsigned)atoi(g) : 2;
    if (ngpu > MAXG) ngpu = MAXG;
    for (unsigned i = 0; i < ngpu; i++) devs[i].idx = i;
    pthread_mutex_lock(&mu);
    load();
    pthread_mutex_unlock(&mu);
    t_init = now();
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}
API const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    /* nvmlErrorString's words for these (NVML's own strings, as nvidia-smi prints them) */
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    default: return "Unknown Error";
    }
}
API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = ngpu;
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (i >= ngpu) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t f = fault(i, "handle");
    if (!f) f = fault(i, "all");
    if (f) return f;
    *d = &devs[i];
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n)
{
    DEV_OK(d);
    snprintf(buf, n, "GPU-fa4e0000-0000-4000-8000-%012x", d->idx);
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned n)
{
    DEV_OK(d);
    snprintf(buf, n, "NVIDIA H100 80GB HBM3 (test double)");
    return NVML_SUCCESS;
}
/* device i's limit as last loaded (mW) */
static unsigned cached_mw(unsigned i)
{
    pthread_mutex_lock(&mu);
    unsigned v = limit_mw[i];
    pthread_mutex_unlock(&mu);
    return v;
}

/* device i's limit, read from FAKE_NVML_STATE (another process may have set it) */
static unsigned current_mw(unsigned i)
{
    pthread_mutex_lock(&mu);
    load();
    unsigned v = limit_mw[i];
    pthread_mutex_unlock(&mu);
    return v;
}

static double power_w(unsigned i)
{
    double l = cached_mw(i) / 1000.0, t = now();
    return (l < 650 ? l : 650) * 0.93 + 3.0 * ((long)(t * 10 + i) % 3);
}
API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetPowerUsage");
    *mw = (unsigned)(power_w(d->idx) * 1000);
    return NVML_SUCCESS;
}
#ifndef FAKE_NVML_OLD
API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetTotalEnergyConsumption");
    unsigned i = d->idx;
    double p = power_w(i); /* at the limit as last loaded */
    pthread_mutex_lock(&mu);
    load(); /* a reset since: the counter starts again */
    double t = now();
    if (e_last_t[i] == 0) e_last_t[i] = t_init, e_acc_j[i] = 1000.0; /* an arbitrary start */
    e_acc_j[i] += p * (t - e_last_t[i]);
    e_last_t[i] = t;
    *mj = (unsigned long long)(e_acc_j[i] * 1000.0);
    pthread_mutex_unlock(&mu);
    return NVML_SUCCESS;
}
#endif
API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned *lo,
                                                              unsigned *hi)
{
    DEV_OK(d);
    *lo = 200000;
    *hi = max_mw();
    return NVML_SUCCESS;
}
#ifndef FAKE_NVML_OLD
API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned *mw)
{
    DEV_OK(d);
    *mw = default_mw();
    return NVML_SUCCESS;
}
#endif
API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned *mw)
{
    DEV_OK(d);
    *mw = current_mw(d->idx);
    return NVML_SUCCESS;
}
#ifndef FAKE_NVML_OLD
API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *mw)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetEnforcedPowerLimit");
    unsigned l = current_mw(d->idx);
    unsigned o = enforced_override(d->idx);
    *mw = o ? o : l;
    return NVML_SUCCESS;
}
#endif
/* FAKE_NVML_CAPS=1: the driver's privilege check. The kernel module lets a
 * caller change a device's settings only when it is an administrator
 * (open-gpu-kernel-modules: os_is_administrator() is capable(CAP_SYS_ADMIN),
 * kernel-open/nvidia/os-interface.c); NVML then answers NO_PERMISSION, "the
 * user doesn't have permission to perform this operation" (nvml.h,
 * nvmlDeviceSetPowerManagementLimit; "Requires root/admin permissions").
 * Here: CAP_SYS_ADMIN in the calling thread's effective set (capget), so a
 * test can take it away with setpriv --bounding-set=-sys_admin. Off by
 * default: tests run as root, as the real check would pass. */
static int admin(void)
{
    const char *on = getenv("FAKE_NVML_CAPS");
    if (!on || strcmp(on, "1")) return 1;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct c[2];
    if (syscall(SYS_capget, &h, c) != 0) return 0;
    return (c[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

API nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t d, unsigned mw)
{
    setter("nvmlDeviceSetPowerManagementLimit");
    set_begin();
    nvmlReturn_t r = NVML_SUCCESS;
    if (!d || d->idx >= ngpu) r = NVML_ERROR_INVALID_ARGUMENT;
    else if (stall(d->idx), (r = fault(d->idx, __func__))) {
    } else if (getenv("FAKE_NVML_NO_PERMISSION") || !admin()) r = NVML_ERROR_NO_PERMISSION;
    else if (mw < 200000 || mw > max_mw()) r = NVML_ERROR_INVALID_ARGUMENT;
    else if (set_fails(d->idx)) r = NVML_ERROR_UNKNOWN;
    else {
        pthread_mutex_lock(&mu);
        load();
        limit_mw[d->idx] = mw;
        save();
        pthread_mutex_unlock(&mu);
    }
    set_end();
    return r;
}
API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetClockInfo");
    *mhz = type == NVML_CLOCK_MEM
               ? 2619
               : (unsigned)(1980 * (cached_mw(d->idx) < 650000 ? cached_mw(d->idx) / 650000.0 : 1));
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetUtilizationRates");
    if (listed("FAKE_NVML_MIG", d->idx)) return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = 97;
    u->memory = 41;
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetCurrentClocksEventReasons");
    *r = cached_mw(d->idx) < 650000 ? 0x4ull : 0;
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetMemoryInfo");
    m->total = 81559ull << 20;
    m->used = 60000ull << 20;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetTemperature");
    *c = 61;
    return NVML_SUCCESS;
}
#ifndef FAKE_NVML_OLD
API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetFieldValues");
    /* scoped power fields (nvmlFieldValue_t.scopeId: 0 GPU, 1 module).
       FAKE_NVML_MODULE=i,j: a GH200-like module, whose GPU-scope power
       fields are missing and whose module power includes the Grace CPU
       (here 150 W more); FAKE_NVML_MODULE_LIMITS=i,j: a GB200-like module
       with a module power limit (2700 W) of its own. Elsewhere a module
       scope answers NOT_SUPPORTED, as on a discrete GPU. */
    int gh = listed("FAKE_NVML_MODULE", d->idx), gb = listed("FAKE_NVML_MODULE_LIMITS", d->idx);
    for (int k = 0; k < n; k++) {
        unsigned f = v[k].fieldId, scope = v[k].scopeId;
        /* NVML fills valueType beside the value (nvml.h, nvmlFieldValue_t:
           "Type of the value stored in value"); power fields are unsigned
           int milliwatts */
        v[k].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        v[k].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        if (f == NVML_FI_DEV_POWER_INSTANT && scope == NVML_POWER_SCOPE_GPU && !gh) {
            v[k].nvmlReturn = NVML_SUCCESS;
            v[k].value.uiVal = (unsigned)(power_w(d->idx) * 1000 + 5000);
        } else if (f == NVML_FI_DEV_POWER_INSTANT && scope == NVML_POWER_SCOPE_MODULE &&
                   (gh || gb)) {
            v[k].nvmlReturn = NVML_SUCCESS;
            v[k].value.uiVal = (unsigned)((power_w(d->idx) + 150.0) * 1000);
        } else if (f == NVML_FI_DEV_POWER_CURRENT_LIMIT && scope == NVML_POWER_SCOPE_MODULE && gb) {
            v[k].nvmlReturn = NVML_SUCCESS;
            v[k].value.uiVal = 2700000;
        }
    }
    return NVML_SUCCESS;
}
#endif
API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor)
{
    DEV_OK(d);
    const char *s = getenv("FAKE_NVML_MINORS");
    unsigned k = 0;
    *minor = d->idx;
    while (s && *s) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s) break;
        if (k++ == d->idx) *minor = (unsigned)v;
        s = *end == ',' ? end + 1 : end;
    }
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    DEV_OK(d);
    memset(p, 0, sizeof *p);
    /* NVML's index order is PCI bus order */
    p->bus = 0x18 + 0x10 * d->idx;
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *cur, unsigned *pend)
{
    DEV_OK(d);
    *cur = *pend =
        listed("FAKE_NVML_MIG", d->idx) ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode)
{
    DEV_OK(d);
    const char *p = getenv("FAKE_NVML_PERSISTENCE");
    *mode = p && !strcmp(p, "0") ? 0 : 1;
    return NVML_SUCCESS;
}
/* the compute processes of FAKE_NVML_PROCS on device d, as NVML lists
 * them: count first; when the caller's array is too small, write nothing,
 * report the number needed and return INSUFFICIENT_SIZE. put(p, k, pid)
 * writes record k. */
static nvmlReturn_t procs(nvmlDevice_t d, unsigned *count, void *p,
                          void (*put)(void *p, unsigned k, unsigned pid))
{
    const char *env = getenv("FAKE_NVML_PROCS");
    unsigned need = 0;
    for (int pass = 0; pass < 2; pass++) {
        unsigned n = 0;
        const char *s = env;
        while (s && *s) {
            unsigned gi, pid;
            int used = 0;
            if (sscanf(s, "%u:%u%n", &gi, &pid, &used) != 2) break;
            if (gi == d->idx) {
                if (pass == 1) put(p, n, pid);
                n++;
            }
            s += used;
            if (*s == ',') s++;
        }
        if (pass == 0) {
            need = n;
            if (need > *count || (need && !p)) {
                *count = need;
                return NVML_ERROR_INSUFFICIENT_SIZE;
            }
        }
    }
    *count = need;
    return NVML_SUCCESS;
}
#ifndef FAKE_NVML_OLD
static void put_v3(void *p, unsigned k, unsigned pid)
{
    nvmlProcessInfo_t *r = (nvmlProcessInfo_t *)p + k;
    r->pid = pid;
    r->usedGpuMemory = 60000ull << 20;
    r->gpuInstanceId = r->computeInstanceId = 0xffffffffu;
}
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count,
                                                         nvmlProcessInfo_t *p)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetComputeRunningProcesses_v3");
    return procs(d, count, p, put_v3);
}
/* _v2, what pfi calls first (src/runtime/nvml.c): the same 24-byte
 * nvmlProcessInfo_v2_t records (nvml.h declares nvmlProcessInfo_v2_t and
 * nvmlProcessInfo_t alike; every driver since R470 exports the _v2 symbol).
 * Without it here the double exercised only the _v3 fallback. Counted in
 * FAKE_NVML_PROCS_V2_CALLS (a file) so a test can tell which one was used. */
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned *count,
                                                         nvmlProcessInfo_t *p)
{
    DEV_OK(d);
    UNSUP("nvmlDeviceGetComputeRunningProcesses_v2");
    const char *calls = getenv("FAKE_NVML_PROCS_V2_CALLS");
    FILE *f = calls ? fopen(calls, "a") : NULL;
    if (f) fputs("v2\n", f), fclose(f);
    return procs(d, count, p, put_v3);
}
#else
static void put_v1(void *p, unsigned k, unsigned pid)
{
    nvmlProcessInfo_v1_t *r = (nvmlProcessInfo_v1_t *)p + k;
    r->pid = pid;
    r->usedGpuMemory = 30000ull << 20;
}
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned *count,
                                                      nvmlProcessInfo_v1_t *p)
{
    DEV_OK(d);
    return procs(d, count, p, put_v1);
}
#endif

/* functions that change a device and pfi never calls: here only to be
 * counted if it ever did (FAKE_NVML_SETTER_LOG) */
#define SETTER(name, ...)                                                                          \
    API nvmlReturn_t name(nvmlDevice_t d, __VA_ARGS__)                                             \
    {                                                                                              \
        (void)d;                                                                                   \
        setter(#name);                                                                             \
        return NVML_ERROR_NO_PERMISSION;                                                           \
    }
SETTER(nvmlDeviceSetPersistenceMode, int mode)
SETTER(nvmlDeviceSetComputeMode, int mode)
SETTER(nvmlDeviceSetApplicationsClocks, unsigned mem_mhz, unsigned sm_mhz)
SETTER(nvmlDeviceSetGpuLockedClocks, unsigned min_mhz, unsigned max_mhz)
SETTER(nvmlDeviceSetMemoryLockedClocks, unsigned min_mhz, unsigned max_mhz)
SETTER(nvmlDeviceSetPowerManagementLimit_v2, void *limit)
SETTER(nvmlDeviceSetEccMode, int ecc)
SETTER(nvmlDeviceSetGpuOperationMode, int mode)
#define RESETTER(name)                                                                             \
    API nvmlReturn_t name(nvmlDevice_t d)                                                          \
    {                                                                                              \
        (void)d;                                                                                   \
        setter(#name);                                                                             \
        return NVML_ERROR_NO_PERMISSION;                                                           \
    }
RESETTER(nvmlDeviceResetApplicationsClocks)
RESETTER(nvmlDeviceResetGpuLockedClocks)
RESETTER(nvmlDeviceResetMemoryLockedClocks)
