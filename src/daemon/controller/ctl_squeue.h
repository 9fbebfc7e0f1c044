/* ctl_squeue.h — Slurm's queue read for the offer's forecast (issue 44;
 * docs/controller.md, "The forecast"): `offer.squeue` run with squeue.h's
 * arguments, within offer.squeue_timeout_s of wall time. */
#ifndef PFI_CTL_SQUEUE_H
#define PFI_CTL_SQUEUE_H

#include <stddef.h>

#include "squeue.h"

/* cmd: a path or a name looked up in PATH. 0 with *jobs (malloc'd) and *n;
   -1 with why (a line: not found, timed out, exited non-zero with its first
   stderr line, a parse error naming the line and field) */
int ctl_squeue_read(const char *cmd, double timeout_s, pfi_squeue_job **jobs, size_t *n, char *why,
                    size_t whyn);

#endif
