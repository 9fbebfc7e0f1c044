/* squeue.h — Slurm's queue as `squeue` prints it, read for the offer's
 * forecast (issue 44; docs/controller.md, "The forecast"). The controller
 * runs
 *
 *   SLURM_TIME_FORMAT=%s squeue -h -a -t RUNNING,PENDING -o '%A|%T|%S|%e|%l|%D|%b'
 *
 * (squeue(1) of Slurm 22.05: %A the job id, unique per array element, the
 * SLURM_JOB_ID the SPANK plugin names pfi's jobs by; %T the state; %S the
 * actual or expected start time — for a pending job the one `squeue --start`
 * prints, set by the backfill scheduler, else "N/A"; %e the actual or
 * expected end time; %l the time limit, "[days-]hours:minutes:seconds",
 * "minutes:seconds", "UNLIMITED" or "NOT_SET"/"INVALID"; %D the node count;
 * %b the generic resources per node, "gres:gpu:2", "gres/gpu:a100:2" or
 * "N/A"; SLURM_TIME_FORMAT takes a strftime format, so times are Unix
 * seconds). A time Slurm does not know ("N/A", "Unknown", "NONE" — Slurm 22.05's end
 * of a job without a time limit —, 0) is NaN. */
#ifndef PFI_SQUEUE_H
#define PFI_SQUEUE_H

#include <stddef.h>

#include "pfi/status.h"

#define PFI_SQUEUE_FORMAT "%A|%T|%S|%e|%l|%D|%b"
#define PFI_SQUEUE_MAX_JOBS 1000000

typedef struct pfi_squeue_job {
    char id[64];    /* digits */
    int running;    /* 1 RUNNING, 0 PENDING (other states are skipped) */
    double start_t; /* Unix seconds; NaN: unknown */
    double end_t;   /* its end, or its start + time limit; NaN: unknown or unlimited */
    double limit_s; /* its time limit; INFINITY: unlimited; NaN: not set */
    int gpus;       /* GPUs per node x nodes; 0: none asked */
} pfi_squeue_job;

/* The lines of squeue's output (name: for messages). *jobs (malloc'd, the
 * caller frees) the RUNNING and PENDING jobs. A line that is not seven
 * fields of the forms above is an error naming the line and the field. */
pfi_status pfi_squeue_parse(const char *text, size_t len, const char *name, pfi_squeue_job **jobs,
                            size_t *n, pfi_error *err);

/* "[days-]hours:minutes:seconds", "minutes:seconds", "minutes" into
 * seconds; "UNLIMITED": INFINITY; "NOT_SET", "INVALID", "N/A": NaN; -1 if
 * none of these */
int pfi_squeue_limit(const char *s, double *limit_s);

#endif
