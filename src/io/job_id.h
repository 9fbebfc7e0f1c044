/* job_id.h — what a job id may be, and a process's Slurm job id from its
 * cgroup. A job id becomes a file name (job files, dcgm-exporter mapping
 * files), a metric label and text on the controller's page, and a job's user
 * may choose it where the scheduler lets them; so ids are checked where they
 * enter, and a process's job comes from what the scheduler set up (its
 * cgroup), never from what the job says about itself (its environment). */
#ifndef PFI_JOB_ID_H
#define PFI_JOB_ID_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_JOB_ID_MAX 63 /* characters */

/* 1 if id is [A-Za-z0-9._-]{1,63} and not "." or "..", else 0. */
int pfi_job_id_valid(const char *id);

/* The Slurm job id in the text of /proc/PID/cgroup (len bytes), from the
 * layout Slurm's cgroup plugins create:
 *   cgroup v1: HIER:CONTROLLERS:/slurm/uid_U/job_J/...   (or /slurm_NODE/...)
 *   cgroup v2: 0::/system.slice/slurmstepd.scope/job_J/...  (or NODE_slurmstepd.scope;
 *              any chain of systemd slices from the root in place of
 *              system.slice: Slurm 25.11's CgroupSlice=, e.g. /slurm.slice/
 *              or /a.slice/b.slice/)
 * anchored at the hierarchy's root (a cgroup a user creates under a
 * delegated subtree, below a user@UID.service, does not match), J all digits. Returns 0 with J in
 * out (n bytes) and *uid = U (-1 on v2, where the path has no uid); -1 when the process is in no
 * Slurm job's cgroup. */
int pfi_job_id_from_cgroup(const char *text, size_t len, char *out, size_t n, long *uid);

#ifdef __cplusplus
}
#endif
#endif
