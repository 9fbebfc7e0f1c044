/* gpu.h — one interface to a node's GPUs, with two backends:
 *
 *   "nvml"      NVIDIA's NVML, loaded at run time with dlopen (no build
 *               dependency; $PFI_NVML_LIBRARY overrides the library path,
 *               which is how the NVML test double is selected)
 *   "sim[:OPTS]" simulated GPUs driven by the reconstruction's physical
 *               model (physmodel.h), each optionally running a simulated
 *               training job whose power and throughput follow its cap with
 *               a first-order response delay and noise, on the pfi clock
 *               (clock.h). OPTS, comma-separated:
 *                 gpus=N (8), model=H200|H100 (H200),
 *                 job=ID:GROUP@A-B  a job of the reconstruction on GPUs A..B
 *                                   (repeatable; GROUP of data/reconstruction),
 *                 tau=S (0.1, response time constant, clock seconds),
 *                 delay=S (0.05, actuation delay before the response starts),
 *                 load=S (15, seconds a started job spends loading before it trains),
 *                 noise=F (0.01, relative sd of power and throughput),
 *                 seed=N (1), state=FILE (the simulated hardware's caps,
 *                 kept across processes as a real GPU keeps its limit),
 *                 steplogs=DIR (each job writes DIR/ID.jsonl while training),
 *                 idle (jobs start stopped; pfi_gpu_sim_job_start starts them),
 *                 name=NAME (default the host name: in every GPU's UUID,
 *                 GPU-5151a000-HHHH-4000-8000-<index>, HHHH its 16-bit
 *                 FNV-1a hash, so simulated nodes' GPUs differ)
 *
 * Reading never fails for lack of support: each sample says which fields it
 * has (have bits); NVML's NOT_SUPPORTED / NO_PERMISSION on a read are noted
 * per device (pfi_gpu_unsupported) and are not errors. Setting a cap outside
 * the device's constraints is PFI_ERANGE; without permission PFI_EPERM.
 * Calls on one GPU are serialized (thread-safe); with NVML, calls on
 * different GPUs run at once, each GPU's in its own worker thread, each
 * with a deadline (pfi_gpu_set_call_timeout). */
#ifndef PFI_GPU_H
#define PFI_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/metrics.h"
#include "pfi/status.h"
#include "saved_cap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_gpu pfi_gpu;
struct pfi_recon;

/* Whether a GPU can be used, NVML's errors kept apart: a GPU whose handle
 * or UUID cannot be had at open, or that answers NVML_ERROR_GPU_IS_LOST
 * later, is unavailable; every call on it fails at once (PFI_EIO naming
 * the state) and never blocks the other GPUs. pfi_gpu_rescan looks for it
 * again. */
typedef enum pfi_gpu_avail {
    PFI_GPU_OK = 0,
    PFI_GPU_LOST,           /* NVML_ERROR_GPU_IS_LOST (15) */
    PFI_GPU_NO_PERMISSION,  /* NVML_ERROR_NO_PERMISSION (4): e.g. not in this cgroup */
    PFI_GPU_NOT_SUPPORTED,  /* NVML_ERROR_NOT_SUPPORTED (3) */
    PFI_GPU_UNKNOWN,        /* any other error at open */
    PFI_GPU_RESET_REQUIRED, /* NVML_ERROR_RESET_REQUIRED (16): the GPU needs a reset */
    PFI_GPU_TIMEOUT,        /* NVML_ERROR_TIMEOUT (10): the driver did not answer in time */
    PFI_GPU_OS_BLOCKED      /* NVML_ERROR_OPERATING_SYSTEM (17): the OS blocked the call
                               (e.g. the device outside this process's cgroup) */
} pfi_gpu_avail;

typedef struct pfi_gpu_info {
    char uuid[96], name[96];
    double cap_min_w, cap_max_w, cap_default_w;
    /* how other APIs name it: /dev/nvidiaMINOR (the number Slurm's gres.conf
     * File= and cgroups use; NVML's index follows PCI bus order and "may not
     * correlate with other APIs"), -1 unknown; the PCI bus id ("" unknown) */
    int minor;
    char pci_bus_id[32];
    /* MIG mode: 1 enabled, 0 disabled, -1 unknown / not a MIG-capable GPU */
    int mig;
    /* power scope (NVML's scoped field values, issue 40): PFI_POWER_SCOPE_* */
    int power_scope;
} pfi_gpu_info;

/* Where a GPU's power is governed (nvmlFieldValue_t.scopeId: 0 GPU, 1 module):
 * GPU (any ordinary part); MODULE: the GPU-scope power fields are missing and
 * module ones present (GH200: the module's power and energy include the Grace
 * CPU); MODULE_LIMITS: the module has power limits of its own (GB200/GB300),
 * which the GPU-scope setter does not touch. pfi caps only GPU scope. */
enum { PFI_POWER_SCOPE_GPU = 0, PFI_POWER_SCOPE_MODULE = 1, PFI_POWER_SCOPE_MODULE_LIMITS = 2 };

enum {
    PFI_GS_POWER = 1u << 0,          /* power_w */
    PFI_GS_ENERGY = 1u << 1,         /* energy_j (since an arbitrary start) */
    PFI_GS_CAP = 1u << 2,            /* cap_w: the management limit */
    PFI_GS_ENFORCED = 1u << 3,       /* enforced_w */
    PFI_GS_CLOCKS = 1u << 4,         /* sm_clock_mhz, mem_clock_mhz */
    PFI_GS_UTIL = 1u << 5,           /* util_gpu_pct, util_mem_pct */
    PFI_GS_THROTTLE = 1u << 6,       /* throttle_reasons (NVML clocks-event bits) */
    PFI_GS_MEM = 1u << 7,            /* fb_used_mib */
    PFI_GS_TEMP = 1u << 8,           /* temp_c */
    PFI_GS_PROF = 1u << 9,           /* prof[]: DCGM_FI_PROF_* (sim only; NVML has none) */
    PFI_GS_POWER_INSTANT = 1u << 10, /* power_instant_w (NVML field value 186) */
    PFI_GS_MODULE_POWER = 1u << 11   /* module_power_w (field 186 at module scope) */
};

typedef struct pfi_gpu_sample {
    double t_s; /* pfi clock */
    unsigned have;
    double power_w, power_instant_w, energy_j, cap_w, enforced_w, module_power_w;
    double sm_clock_mhz, mem_clock_mhz, util_gpu_pct, util_mem_pct, fb_used_mib, temp_c;
    uint64_t throttle_reasons;
    double prof[PFI_M_COUNT]; /* by pfi_metric; NaN where absent */
} pfi_gpu_sample;

typedef struct pfi_gpu_proc {
    unsigned pid;
    double used_mib;
    char job_id[64];    /* known to the backend (sim), else empty */
    char steplog[1024]; /* the job's $PFI_STEPLOG when the backend knows it */
} pfi_gpu_proc;

/* The GPU backends (gpu_backends.c), one row each: selection, help texts,
 * the simulator's option checks and the agent's privilege rule read it. */
struct pfi_gpu_ops;
struct pfi_recon;
typedef struct pfi_gpu_backend_info {
    const char *name; /* "nvml", "sim": the spec's part before ':' */
    pfi_status (*open)(const char *opts, const struct pfi_recon *recon, int read_only,
                       const struct pfi_gpu_ops **ops, void **st, pfi_error *err);
    int needs_admin;            /* setting caps needs CAP_SYS_ADMIN (agent_privs.c) */
    int simulated;              /* a model, not hardware: runs without a workload, takes jobs */
    const char *help, *options; /* one line each for --help */
} pfi_gpu_backend_info;
/* the table (*table; its rows) */
size_t pfi_gpu_backends(const pfi_gpu_backend_info **table);
/* the --backend option's help, written from the rows (name, help, options) */
const char *pfi_gpu_backend_help(void);
/* the backend a spec names ("sim:gpus=4" -> sim, *opts "gpus=4"; NULL spec:
   the default, nvml); NULL when it names none */
const pfi_gpu_backend_info *pfi_gpu_backend_of(const char *spec, const char **opts);
/* whether spec's options hold opt (as "opt" or "opt=...") */
int pfi_gpu_backend_option(const char *spec, const char *opt);

pfi_status pfi_gpu_open(const char *spec, const struct pfi_recon *recon, pfi_gpu **out,
                        pfi_error *err);
/* The same, read-only: every write (pfi_gpu_set_cap, so also a restore)
 * is refused with PFI_EPERM before it reaches the backend, and the NVML
 * backend does not even look up a setter (nvmlDeviceSet*), so nothing can
 * change a device: what `pfi gpu info` uses. */
pfi_status pfi_gpu_open_read_only(const char *spec, const struct pfi_recon *recon, pfi_gpu **out,
                                  pfi_error *err);
int pfi_gpu_is_read_only(const pfi_gpu *g);
void pfi_gpu_close(pfi_gpu *g);
const char *pfi_gpu_backend(const pfi_gpu *g); /* "nvml" or "sim" */
size_t pfi_gpu_count(const pfi_gpu *g);
pfi_status pfi_gpu_info_get(pfi_gpu *g, size_t i, pfi_gpu_info *info, pfi_error *err);
pfi_status pfi_gpu_sample_get(pfi_gpu *g, size_t i, pfi_gpu_sample *s, pfi_error *err);
pfi_status pfi_gpu_set_cap(pfi_gpu *g, size_t i, double cap_w, pfi_error *err);
/* Sets n GPUs' caps at once: GPU idx[k] to cap_w[k]; rc[k] and errs[k]
 * (each optional) are that GPU's result, as pfi_gpu_set_cap's. With NVML
 * each GPU's worker thread sets its own (gpu_worker.c; a GPU whose worker
 * could not be started is set in the caller's thread), so a sample or
 * another set of the same GPU waits for it; the sim sets them one after
 * another. Opened read-only, every one is refused as pfi_gpu_set_cap
 * refuses. Returns after every set has finished, failed or been abandoned
 * at its deadline: PFI_OK if all were set, else the status of the first
 * (in idx order) that failed. */
#define PFI_GPU_SET_CAPS_MAX 64
pfi_status pfi_gpu_set_caps(pfi_gpu *g, const size_t *idx, const double *cap_w, size_t n,
                            pfi_status *rc, pfi_error *errs);
/* Samples GPUs idx[0..n) at once (NVML: each in its worker; else one
 * after another): s[k], rc[k], errs[k] (rc and errs optional) as
 * pfi_gpu_sample_get's for idx[k]. */
pfi_status pfi_gpu_sample_all(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_sample *s,
                              pfi_status *rc, pfi_error *errs);

/* Call deadlines (issue 40 (e); NVML only, gpu_worker.c): a call on a GPU
 * that has not answered within timeout_s (0, the default: no deadline) is
 * abandoned and fails with PFI_EIO; the GPU is unavailable (timeout) and
 * takes no call until the blocked one returns; then it stays unavailable
 * until pfi_gpu_rescan answers within the deadline. When several GPUs'
 * calls overran together (a driver that serialises GPUs behind a hung
 * one), each is unavailable until its own rescan answers; rescans go one
 * GPU at a time and none while a call is blocked (gpu_worker.c). The sim
 * backend ignores it. */
void pfi_gpu_set_call_timeout(pfi_gpu *g, double timeout_s);
/* 1 while an abandoned call is still blocked in the driver (then
 * pfi_gpu_rescan probes nothing: gpu_worker.c) */
int pfi_gpu_calls_blocked(pfi_gpu *g);
/* How GPU i's last abandoned call ended (once, after it returned): 1 with
 * a sentence in buf (what it was, after how long, a cap that landed late,
 * whether this GPU is the sick one); 0 when there is nothing to tell. */
int pfi_gpu_late_take(pfi_gpu *g, size_t i, char *buf, size_t len);

pfi_status pfi_gpu_processes(pfi_gpu *g, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                             pfi_error *err);
/* Reads this device does not support, e.g. "clocks_event_reasons,field_values"; "" if none. */
const char *pfi_gpu_unsupported(pfi_gpu *g, size_t i);
/* Index of the GPU with this UUID, or -1 (an unavailable GPU has none). */
long pfi_gpu_find_uuid(pfi_gpu *g, const char *uuid);
/* GPU i's availability, and its name ("ok", "lost", "no_permission",
 * "not_supported", "unknown"); 1 when every GPU is available */
pfi_gpu_avail pfi_gpu_avail_get(pfi_gpu *g, size_t i);
const char *pfi_gpu_avail_name(pfi_gpu_avail a);
int pfi_gpu_all_available(pfi_gpu *g);
/* Looks again for GPU i when it is unavailable (NVML: its handle by index
 * and its UUID); its availability after the try. */
pfi_gpu_avail pfi_gpu_rescan(pfi_gpu *g, size_t i);
/* The same for GPUs idx[0..n) at once (NVML: each in its worker, with its
 * deadline): av[k] their availability after the try. */
void pfi_gpu_rescan_all(pfi_gpu *g, const size_t *idx, size_t n, pfi_gpu_avail *av);
/* GPU i's management power limit alone (NVML:
 * nvmlDeviceGetPowerManagementLimit; no other read can make it fail) */
pfi_status pfi_gpu_limit_get(pfi_gpu *g, size_t i, double *cap_w, pfi_error *err);
/* persistence mode: 1 on, 0 off, -1 unknown (not NVML, or unreadable) */
int pfi_gpu_persistence(pfi_gpu *g, size_t i);

/* ---- simulator only (PFI_EUNSUPP on NVML) ---- */
/* Start (or restart) job k: loading, then training; its step log goes to
 * steplog (NULL: the steplogs= directory or none). Stop: the GPUs idle. */
pfi_status pfi_gpu_sim_job_start(pfi_gpu *g, size_t k, const char *steplog, pfi_error *err);
pfi_status pfi_gpu_sim_job_stop(pfi_gpu *g, size_t k, pfi_error *err);
size_t pfi_gpu_sim_jobs(const pfi_gpu *g);
/* GPUs first..last of job k, its id and its reconstruction group name. */
pfi_status pfi_gpu_sim_job_info(pfi_gpu *g, size_t k, size_t *first, size_t *last, const char **id,
                                const char **group, pfi_error *err);
/* Throughput of job k now (noise-free), tokens/s; NaN when not training. */
double pfi_gpu_sim_tokens_per_s(pfi_gpu *g, size_t k);

/* ---- saving and restoring device controls ----
 * Modelled on GEOPM's IOGroup::save_control / restore_control, and the one
 * place that does it for both writers of caps: pfi-agent (whose state file
 * also keeps the lease: lease.h) and pfi sweep without an agent (its own
 * state file: sweep_state.h).
 *
 * Before a writer first changes a GPU's cap, the cap it finds is saved
 * (pfi_saved_cap: changed, baseline_w) and the saved caps are written ahead
 * to the writer's state file (atomic, file and directory fsynced, never
 * through a link: state_file.h) before any device is touched: if that
 * write fails nothing is changed. Restoring puts every saved cap back
 * (checked against the device: one it cannot take is replaced by its
 * default limit) and forgets those that are back; a GPU the device refused
 * stays saved, so the file still names it for the next try. A state file
 * that cannot be read or parsed means the saved caps are lost: every GPU
 * goes back to its default limit. Events are reported through
 * pfi_gpu_restore_report (each writer words its own log lines). */

/* The cap a GPU goes back to when its saved cap is unknown or unusable:
 * its default limit (its maximum when it has none). */
double pfi_gpu_default_cap_w(const pfi_gpu_info *in);

/* The GPU's management limit now (pfi_gpu_limit_get). When the device
 * cannot say: its default limit if fallback_default, else an error naming
 * the GPU. */
pfi_status pfi_gpu_cap_now(pfi_gpu *g, size_t i, int fallback_default, double *cap_w,
                           pfi_error *err);

/* Saved caps, in memory: saved[0..*n) of at most max (the writer's). */
typedef struct pfi_gpu_saved_set {
    pfi_saved_cap *gpu;
    size_t *n, max;
} pfi_gpu_saved_set;

/* The entry of a UUID, added (unchanged) when absent; NULL when full. */
pfi_saved_cap *pfi_gpu_saved_get(const pfi_gpu_saved_set *s, const char *uuid);
/* How many are saved and not yet restored. */
size_t pfi_gpu_saved_pending(const pfi_gpu_saved_set *s);

/* Events of a restore, each optional (NULL: not reported). k: the entry's
 * position in the saved set; i: the GPU's index, -1 when it is not on this
 * node. */
typedef struct pfi_gpu_restore_report {
    /* the state file cannot be read or parsed (why): its saved caps are lost */
    void (*lost)(void *ud, const char *path, const pfi_error *why);
    /* the state file names saved caps to restore (a writer that did not finish) */
    void (*found)(void *ud, const char *path);
    /* which ("baseline_w" or "cap_w") is outside the device's range: replaced by repl_w */
    void (*out_of_range)(void *ud, size_t k, const pfi_saved_cap *s, long i, const pfi_gpu_info *in,
                         const char *which, double value_w, double repl_w);
    /* back at its saved cap (from_w: the cap set before, s->cap_w) */
    void (*restored)(void *ud, size_t k, const pfi_saved_cap *s, long i, double from_w);
    /* not restored: the device refused (e), or its GPU is not on this node (i = -1) */
    void (*failed)(void *ud, size_t k, const pfi_saved_cap *s, long i, const pfi_error *e);
    void *ud;
} pfi_gpu_restore_report;

/* save_control in memory: each GPU idx[0..nidx) not saved yet gets its cap
 * now as its saved cap (changed; baseline_w = cap_w = the cap now, index);
 * one already saved keeps its baseline. On failure (a cap that cannot be
 * read, a full set) nothing is saved. */
pfi_status pfi_gpu_save_caps(pfi_gpu *g, const size_t *idx, size_t nidx, int fallback_default,
                             const pfi_gpu_saved_set *s, pfi_error *err);
/* Saved caps (and caps set) a GPU on this node cannot take — a hand edit,
 * another GPU model — replaced: a baseline by the default limit, a cap set
 * by the baseline. */
void pfi_gpu_check_saved(pfi_gpu *g, const pfi_gpu_saved_set *s, const pfi_gpu_restore_report *r);
/* Saved caps when the state file is lost: each GPU's default limit as its
 * baseline (cap_w: the cap now), for every GPU, or only_not_default: for
 * those not at their default now. The set is emptied first. */
void pfi_gpu_saved_defaults(pfi_gpu *g, int only_not_default, const pfi_gpu_saved_set *s);
/* restore_control in memory: every saved cap back (check_range: one the
 * device cannot take is replaced by its default first); those back are
 * unchanged, cap_w = baseline_w. A saved GPU not on this node is reported
 * failed and, if forget_missing, forgotten when every GPU is available
 * (none of them has its UUID), else kept for the next try. Returns how
 * many stay saved. */
size_t pfi_gpu_restore_caps(pfi_gpu *g, const pfi_gpu_saved_set *s, int check_range,
                            int forget_missing, const pfi_gpu_restore_report *r);

/* A writer's state file: its path, its saved set, and how the file keeps
 * them. pfi_gpu_state_file_init gives the plain format (pfi sweep's:
 * format_version 1, pid, gpus [{index, uuid, cap_w = the saved cap}]); the
 * agent keeps its lease beside them (load/store of its own). */
typedef struct pfi_gpu_state_file {
    const char *path;
    pfi_gpu_saved_set saved;
    /* read path into saved (*found = 0, and the set empty, when there is none) */
    pfi_status (*load)(const struct pfi_gpu_state_file *f, int *found, pfi_error *err);
    /* write path with saved as it is (atomically, durably, never through a link) */
    pfi_status (*store)(const struct pfi_gpu_state_file *f, pfi_error *err);
    void *ud;
    int keep;             /* 1: the file holds more (the agent's lease): stored, never removed */
    int fallback_default; /* a cap the device cannot read is saved as its default limit */
} pfi_gpu_state_file;

void pfi_gpu_state_file_init(pfi_gpu_state_file *f, const char *path, pfi_saved_cap *gpu, size_t *n,
                             size_t max);

/* pfi_gpu_save: save the caps of the GPUs idx[0..nidx) about to change
 * (pfi_gpu_save_caps) and write the file ahead of any change; if it cannot
 * be written, the caps saved by this call are forgotten again and the
 * error names the file: no cap may be changed. */
pfi_status pfi_gpu_save(pfi_gpu *g, const size_t *idx, size_t nidx, const pfi_gpu_state_file *f,
                        pfi_error *err);

/* pfi_gpu_restore: restore what the file names — after a crash, or at the
 * writer's end (from_file = 0: the saved set in memory). A missing file is
 * nothing to do; a lost one (unreadable, corrupt) puts every GPU back to
 * its default limit (lost, then restored events) and is renamed FILE.corrupt
 * once they are; otherwise the file is removed once every GPU is back
 * (kept and stored, if f->keep). *pending: how many GPUs stay saved (the
 * file is kept for them); the status is an error only for the file itself
 * (a rename or removal that failed). */
pfi_status pfi_gpu_restore(pfi_gpu *g, const pfi_gpu_state_file *f, int from_file,
                           const pfi_gpu_restore_report *r, size_t *pending, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
