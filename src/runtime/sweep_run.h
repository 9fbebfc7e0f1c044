/* sweep_run.h — `pfi sweep` as a call: characterize a job as the paper
 * did. The command runs once per cap on the selected GPUs, the cap set
 * before it starts; telemetry is sampled every interval; the job's step
 * log is kept ($PFI_STEPLOG); one run directory per cap is written
 * (OUT/<cap>W/: run.json, telemetry.prom, steps.jsonl; docs/formats.md).
 * Caps go through the node's pfi-agent when one answers (PUT /v1/caps
 * under a lease renewed every sample, so the agent restores them if the
 * sweep dies); otherwise the sweep sets them itself, the caps before it
 * saved and written ahead by the GPU layer (gpu.h: pfi_gpu_save) to a
 * state file, restored at the end, on SIGINT/SIGTERM (caught from the
 * first run on), and at the next start if a sweep died. The sweep table
 * and the PFI of the run directories are the caller's (pfi ingest, pfi
 * index). */
#ifndef PFI_SWEEP_RUN_H
#define PFI_SWEEP_RUN_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pfi_recon;

#define PFI_SWEEP_MAX_GPUS 64
#define PFI_SWEEP_MAX_CAPS 32

/* What a sweep says while it runs: one line each (no trailing newline). */
typedef struct pfi_sweep_log {
    /* progress and warnings ("run 1/3: cap 700 W ...", "warning: ...") */
    void (*note)(void *ud, const char *msg);
    /* what stops the sweep; usage: the request cannot be run as given
       (a GPU that does not exist, a cap outside the device's range) */
    void (*error)(void *ud, int usage, const char *msg);
    /* during a run: the fraction done and the selected GPUs' power; frac < 0:
       the run ended (optional) */
    void (*progress)(void *ud, double frac, double power_w, size_t ngpus);
    void *ud;
} pfi_sweep_log;

typedef struct pfi_sweep_opts {
    const char *out;               /* DIR: DIR/<cap>W/ (created) */
    const char *backend;           /* "nvml" or "sim[:OPTIONS]" (gpu.h) */
    const struct pfi_recon *recon; /* the reconstruction a sim job= needs, else NULL */
    size_t sim_job;                /* sim: which simulated job */
    const char *gpus;              /* GPU indices "0,1,..."; NULL: all (sim: the job's) */
    const char *caps;              /* per-GPU caps in W "700,500,..."; NULL: the default
                                      limit down to the minimum in 100 W steps */
    double duration_s, interval_s, pause_s;
    const char *group;               /* NULL: the sim job's group, else "sweep" */
    const char *arch, *task, *model; /* metadata for run.json (NULL: none) */
    char **command;                  /* argv, NULL-terminated; NULL: the simulated job */
    const char *agent_url;           /* the node agent; NULL: http://127.0.0.1:9477 if it answers */
    int no_agent;                    /* set caps directly even if an agent answers */
    const char *token_file;          /* the agent's bearer token */
    int allow_insecure_http;         /* the token over plain http to a host other than
                                        loopback (pfi_url_secret_ok); 0: refused */
    const char *state_file;          /* direct mode: the caps before the sweep */
    pfi_sweep_log log;
} pfi_sweep_opts;

typedef struct pfi_sweep_result {
    int usage;   /* the error reported was a usage error */
    int signal;  /* the sweep was stopped by this signal (caps restored) */
    size_t runs; /* run directories written */
} pfi_sweep_result;

/* Every run, then the caps restored. PFI_OK when every run is written;
 * PFI_ESTATE when a signal stopped it (res->signal); another status after
 * an error reported through log.error. */
pfi_status pfi_sweep_run(const pfi_sweep_opts *o, pfi_sweep_result *res);

#ifdef __cplusplus
}
#endif
#endif
