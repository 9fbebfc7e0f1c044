/* agent.h — pfi-agent, the node daemon (docs/agent.md): the only writer of
 * GPU caps on its node. It samples the GPUs (gpu.h), maps GPUs to jobs,
 * follows each job's step log and predicted PFI, serves Prometheus metrics
 * and a JSON node view, and sets caps on PUT /v1/caps under a lease
 * (lease.h), restoring baselines when the lease ends.
 *
 * Files: agent_main.c (options, start-up, main loop, signals),
 * agent_http.c (the HTTP server and its endpoints), agent_caps.c (applying
 * and restoring caps, the state file), agent_jobs.c (job mapping, step logs,
 * predictions, dcgm-exporter mapping files, a local dcgm-exporter),
 * agent_render.c (/metrics and /v1/node), agent_fast.c (fast trigger
 * datagrams: PUT /v1/caps over UDP), agent_baseline.c (each GPU's
 * baseline, its ceiling, drift of its limit), agent_privs.c (the
 * capabilities its options need; the others dropped at start). One mutex guards the agent's
 * state; the GPU backend serializes its own calls. */
#ifndef PFI_AGENT_H
#define PFI_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "gpu.h"
#include "lease.h"
#include "pfi/model_file.h"

#define AGENT_MAX_GPUS 64
#define AGENT_MAX_JOBS 64
/* a job's owner (agent_job.uid) when not a uid */
#define AGENT_UID_UNKNOWN (-1LL) /* its step log must be the agent's own user's */
#define AGENT_UID_ANY (-2LL)     /* a simulated job: the simulator writes its log */
/* most step-log bytes read per job per sampling round (the newest ones) */
#define AGENT_STEPLOG_MAX_BYTES (256 * 1024)

typedef struct agent_cfg {
    const char *backend, *listen, *port_file, *token_file, *state_file, *model_path, *jobs_dir,
        *jobs_file, *job_env;
    const char *mapping_dir, *tls_cert, *tls_key, *log_path, *dcgm_url, *data_dir;
    const char *control_listen, *control_port_file; /* PUT /v1/caps on its own listener */
    const char *read_token_file, *tls_client_ca;    /* read scope; mTLS */
    const char *log_level;                          /* error, warning, info (default), debug */
    const char *boot_id_file; /* default /proc/sys/kernel/random/boot_id (tests override) */
    double interval_s, max_lease_s, time_scale, epoch;
    double gpu_call_timeout_s; /* --gpu-call-timeout (gpu.h: pfi_gpu_set_call_timeout) */
    size_t max_body;
    int keep_caps, restore_and_exit, use_syslog;
    int read_only;       /* --read-only: the GPU layer opened read-only, no cap ever set */
    int export_dcgm;     /* also serve dcgm-exporter's names on /metrics */
    int no_fast_trigger; /* no fast trigger datagrams (agent_fast.c) */
} agent_cfg;

typedef struct agent_gpu {
    pfi_gpu_info info;
    pfi_gpu_sample last;
    int sampled;
    double dcgm_prof[PFI_M_COUNT]; /* from a local dcgm-exporter (NaN if none) */
    char job_id[64];
    int limit_out_of_band; /* enforced < the cap (agent_check_enforced): logged at each change */
    /* availability (gpu.h: pfi_gpu_avail): an unavailable GPU is skipped
     * everywhere and looked for again every AGENT_RESCAN_S */
    pfi_gpu_avail avail;
    int read_failed;        /* the last sample failed (state "unknown" in /metrics) */
    double rescan_at_s;     /* monotonic s */
    int rescan_misses;      /* timeouts in a row: the next rescan backs off (agent_main.c) */
    unsigned cap_gen;       /* +1 at each cap pfi sets: a sample older than it shows no drift */
    double reapply_t[3];    /* monotonic s of the last re-applies (agent_check_drift) */
    int contested;          /* re-applied 3 times within 60 s: pfi stopped */
    int write_refused;      /* the start-up probe's write was refused (agent_probe_write_path) */
    int shared;             /* claimed by two or more jobs (gres/shard, gres/mps, overlapping
                               job files): never capped, as MIG (agent_jobs.c) */
    char claimed_by[132];   /* the claimants while shared: "A,B" */
    char mismatch[160];     /* job file vs the processes' cgroups disagree (agent_jobs.c) */
    int end_restore_failed; /* its job ended and the restore failed: retried each refresh */
    /* evidence of a GPU reset since the last sample: its energy counter went
       back, or it was unavailable (agent_main.c); read by agent_check_drift */
    int reset_hint;
    double energy_last_j; /* the last sample's energy counter (have_energy_last) */
    int have_energy_last;
    int persistence_warned;
} agent_gpu;

#define AGENT_RESCAN_S 30.0
#define AGENT_RESCAN_TIMEOUT_S 5.0 /* a GPU whose call overran: first try (agent_main.c) */
enum {
    AGENT_DRIFT_LOWERED,
    AGENT_DRIFT_RAISED,
    AGENT_DRIFT_CONTESTED,
    AGENT_DRIFT_BASELINE,
    AGENT_DRIFT_RESET, /* a lowering to the default after a corroborated GPU reset */
    AGENT_DRIFT_KINDS
};

typedef struct agent_job {
    char id[64], steplog[1024], source[16];
    int tier; /* SLA flex tier from the job file (Slurm --power-flex), -1 */
    size_t gpu[AGENT_MAX_GPUS], ngpus;
    long long uid; /* the job's user: its step log must be theirs (AGENT_UID_*) */
    long steplog_off;
    unsigned long long steplog_dev,
        steplog_ino;                 /* the file read last: another one is read from its start */
    char steplog_why[200];           /* why the step log was last refused (logged once) */
    unsigned steplog_refused_logged; /* its refused lines: logged once (agent_steplog.c) */
    double tokens_per_s, tokens_t;   /* latest step-log throughput (NaN) and its time */
    double power_w;                  /* sum over the job's GPUs, latest sample */
    double feat[PFI_M_COUNT];        /* training-phase means of GPU-averaged metrics */
    double feat_n;
    double pfi_pred; /* NaN when no model or a feature is missing */
    /* its GPUs' mean SM clock (MHz) and SM activity (0..1) at the latest
       sample (NaN: not reported): what the controller checks a claimed
       throughput against (docs/controller.md, "Claims") */
    double sm_clock_mhz, sm_active;
    char pfi_note[128];
    int seen;
} agent_job;

typedef struct agent {
    agent_cfg cfg;
    pthread_mutex_t mu;
    pfi_gpu *gpu;
    size_t n;
    agent_gpu g[AGENT_MAX_GPUS];
    agent_job job[AGENT_MAX_JOBS];
    size_t njobs;
    pfi_lease_state lease;
    pfi_gpu_state_file
        sf; /* the GPU layer's view of the state file: lease.gpu are the saved caps */
    pfi_modelfile model;
    int have_model;
    char token[300], read_token[300];
    int have_token, have_read_token;
    char hostname[128];
    int write_path;             /* start-up probe: 1 every write taken, 0 one refused,
                                   -1 not probed (--read-only) */
    char write_path_error[600]; /* the first refusal, for /v1/node */
    char boot_id[64];           /* this boot's id ("" when it cannot be read): the state file's
                                   caps belong to one boot (agent_startup_state) */
    /* the admins' limits as first seen (agent_baseline.c) */
    struct {
        char uuid[96];
        double limit_w;
    } base[AGENT_MAX_GPUS * 2];
    size_t nbase;
    int dcgm_missing_logged;   /* the features a scrape cannot give, said once */
    int jobs_dir_missing_said; /* --jobs-dir does not exist: said once (info) */
    unsigned jobs_unmapped;    /* job entries whose GPUs could not be mapped (last refresh) */
    int dcgm_down;             /* --dcgm-url did not answer at the last scrape (logged once) */
    char restore_logged[PFI_LEASE_MAX_GPUS]; /* a saved GPU's failed restore, logged */
    /* the info line of cap requests, coalesced (agent_caps.c): since caps_log_t */
    unsigned caps_log_req, caps_log_gpus;
    double caps_log_lo_w, caps_log_hi_w, caps_log_t;
    /* counters */
    unsigned long long cap_changes, rejected, samples, drift[AGENT_DRIFT_KINDS];
    unsigned long long steplog_refused; /* step-log lines refused (agent_steplog.c) */
    double sampling_cpu_s, started_at;
    int save_pending;       /* the last state save failed: retried by the lease thread */
    double save_retry_at_s; /* monotonic s */
    double restore_retry_at_s,
        restore_delay_s; /* a failed restore: next try (monotonic s), back-off */
    int port, control_port;
    struct pfi_httpd *httpd, *control_httpd;
    int sim_started[16]; /* simulated jobs the agent started for a job file */
    /* fast trigger datagrams (agent_fast.c): the socket (-1: off), its port (0: off) */
    int fast_fd, fast_port;
    uint64_t fast_last_seq; /* the last seq taken (fast_trigger.h) */
    unsigned long long fast_taken, fast_refused, fast_views, fast_bad, fast_stale,
        fast_dropped_unlogged;
    double fast_drop_logged_t;
    pthread_t fast_tid;
    atomic_int fast_stop;
    char privs[224]; /* the capabilities kept, for the start-up log (agent_privs.c) */
} agent;

/* one log line (daemon_util.h: its priority is its first word, "error:",
 * "warning:" or other) */
void agent_log(agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the log itself (agent_log.c), which agent_main.c opens, reopens on SIGHUP
 * and closes */
struct pfi_daemon_log *agent_log_handle(void);

/* agent_caps.c (callers hold a->mu) */
/* status: HTTP code; *resp: JSON text (malloc'd) */
int agent_put_caps(agent *a, const char *body, size_t len, char **resp);
void agent_restore(agent *a, const char *why);
/* 1 while some GPU is not back at its baseline (a device refused) */
int agent_restore_pending(const agent *a);
void agent_check_lease(agent *a);
/* a limit set out of band (the BMC, another tool): each GPU whose enforced
 * limit is more than 1 W below its cap, logged once per change */
void agent_check_enforced(agent *a);
int agent_startup_state(agent *a);
/* agent_boot.c: this boot's id into a->boot_id ("" when it cannot be read,
 * a warning); 1 when the loaded state file was written in another boot, its
 * saved caps and lease then dropped (logged) */
void agent_read_boot_id(agent *a);
int agent_dropped_after_reboot(agent *a);
/* Unless --read-only: each usable GPU's limit written back unchanged once, so
 * that a write path the agent lacks is found at start, not at the first
 * grid event (issue 40 c). */
void agent_probe_write_path(agent *a);
/* why pfi never caps usable GPU i ("mig", "shared", "module_scope"), or NULL */
const char *agent_gpu_not_capped(const agent *a, size_t i);
/* why GPU i is not capped now, whatever the reason: its state when it is
 * unavailable ("timeout", "lost", ...), else agent_gpu_not_capped's; NULL
 * when it can be capped. In /v1/node ("not_capped") and /v1/control (the
 * fifth element), so the controller names it in the event report. */
const char *agent_gpu_uncapped_reason(const agent *a, size_t i);
/* --restore-and-exit: every changed GPU back to its baseline (device defaults
 * if the state file is corrupt); the exit status */
int agent_restore_and_exit(agent *a);
int agent_save_state(agent *a);

/* agent_baseline.c (callers hold a->mu) */
void agent_baselines_load(agent *a);
/* each usable GPU on which pfi holds no cap: its limit now is the admin's */
void agent_baselines_first_sight(agent *a);
/* the admin's limit as the baselines file knows it, NaN */
double agent_baseline_known(const agent *a, const char *uuid);
/* the highest cap pfi may set on GPU i (NaN: unknown, not cappable) */
double agent_gpu_ceiling(agent *a, size_t i);
/* 1 when GPU i is available and known by its UUID */
int agent_gpu_usable(const agent *a, size_t i);
/* the latest sample of GPU i against the cap pfi set (gen_at_sample: its
 * cap_gen when the sample was taken) */
void agent_check_drift(agent *a, size_t i, unsigned gen_at_sample);
/* once at start: MIG mode (never capped) and persistence mode off, each said once */
void agent_check_modes(agent *a);
const char *agent_drift_kind_name(int k);
/* GPU i's state for /metrics and /v1/node: "ok", "lost", "no_permission",
 * "not_supported", "unknown" */
const char *agent_gpu_state(const agent *a, size_t i);

/* agent_jobs.c (callers hold a->mu, except agent_dcgm_scrape and
 * agent_jobs_read_steplogs, which lock it themselves and read the step logs
 * — the users' files — outside it) */
void agent_jobs_refresh(agent *a);
void agent_jobs_read_steplogs(agent *a);
void agent_jobs_update(agent *a);
void agent_dcgm_scrape(agent *a);
int agent_job_gpus(agent *a, const char *job_id, size_t *idx, size_t max);

/* agent_render.c (callers hold a->mu); malloc'd text */
char *agent_render_metrics(agent *a, size_t *len);
char *agent_render_node(agent *a);
/* GET /v1/control: the controller's compact view (docs/agent.md) */
char *agent_render_control(agent *a);

/* agent_privs.c: the capabilities the options need (a mask of 1 << CAP_*),
 * and the drop of all others from every set, once at start before any
 * thread: 0, or 1 (logged) when the kernel refused */
uint64_t agent_caps_needed(const agent_cfg *c);
int agent_drop_capabilities(agent *a);
/* /proc mounted with hidepid= (mountinfo: /proc/self/mountinfo) hides other
 * users' processes from an agent without CAP_SYS_PTRACE: said once at start */
void agent_check_hidepid(agent *a, const char *mountinfo);

/* agent_fast.c: fast trigger datagrams on the control listener's port
 * (UDP), after agent_http_start; 0, or -1 when the thread cannot start */
int agent_fast_start(agent *a);
void agent_fast_stop(agent *a);

/* agent_http.c */
int agent_http_start(agent *a);
void agent_http_stop(agent *a);

#endif
