/* spank_pfi.c — the Slurm SPANK plugin of pfi (pfi-spank(8)).
 *
 *   --power-flex=0..3   the job's power-flexibility tier (Flex 0: no
 *                       reduction, 1: <= 10%, 2: <= 25%, 3: <= 50% throughput
 *                       loss during a grid event)
 *
 * In srun/sbatch/salloc the tier goes to the job's control environment
 * (spank_job_control_setenv: SPANK_PFI_FLEX in the prolog and epilog). In
 * the job's tasks it sets PFI_FLEX and PFI_STEPLOG (RUNDIR/steplogs/JOBID.jsonl,
 * the step log the node agent follows). In the job prolog (slurmd, root) it
 * writes RUNDIR/jobs/JOBID.json atomically — {"job_id", "gpus" (from
 * SLURM_JOB_GPUS), "tier", "steplog"} — which pfi-agent --jobs-dir reads: the
 * agent learns the job's GPUs and tier; in the epilog it removes the file,
 * and the agent puts those GPUs back at their baseline caps. The agent stays
 * the only writer of caps: the plugin never touches a GPU.
 *
 * plugstack.conf:  optional /usr/lib/pfi/spank_pfi.so rundir=/run/pfi
 * Built without libslurm (the SPANK symbols come from the Slurm process). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pfi, 1);

static int flex = -1;
static char rundir[1024] = "/run/pfi";

static int flex_cb(int val, const char *arg, int remote)
{
    (void)val, (void)remote;
    char *end;
    long v = arg ? strtol(arg, &end, 10) : -1;
    if (!arg || *end || v < 0 || v > 3) {
        slurm_error("pfi: --power-flex=%s: expected a tier 0..3 (0: no reduction, 1: <=10%%, 2: <=25%%, 3: <=50%% throughput loss)",
                    arg ? arg : "");
        return -1;
    }
    flex = (int)v;
    return 0;
}

static struct spank_option flex_opt = {
    "power-flex", "0-3",
    "pfi power-flexibility tier for grid events: 0 no reduction, 1 <=10%, 2 <=25%, 3 <=50% throughput loss", 1, 0, flex_cb};

/* Plugin arguments reach every callback; in the job-script context
 * (job_prolog/job_epilog) slurm_spank_init is not called, so each
 * callback that uses rundir parses them itself. */
static void parse_args(int ac, char **av)
{
    for (int i = 0; i < ac; i++) {
        if (!strncmp(av[i], "rundir=", 7)) snprintf(rundir, sizeof rundir, "%s", av[i] + 7);
        else slurm_error("pfi: unknown plugin argument '%s' (expected rundir=DIR)", av[i]);
    }
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE)
        if (spank_option_register(sp, &flex_opt) != ESPANK_SUCCESS) return -1;
    return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)ac, (void)av;
    spank_context_t ctx = spank_context();
    if ((ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) && flex >= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", flex);
        spank_job_control_setenv(sp, "PFI_FLEX", v, 1);
    }
    return 0;
}

static uint32_t job_id(spank_t sp)
{
    uint32_t id = 0;
    if (spank_get_item(sp, S_JOB_ID, &id) != ESPANK_SUCCESS) id = 0;
    return id;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    char v[1200];
    if (flex >= 0) {
        snprintf(v, sizeof v, "%d", flex);
        spank_setenv(sp, "PFI_FLEX", v, 1);
    }
    uint32_t id = job_id(sp);
    if (id) {
        snprintf(v, sizeof v, "%s/steplogs/%u.jsonl", rundir, id);
        spank_setenv(sp, "PFI_STEPLOG", v, 0); /* a job that sets its own keeps it */
    }
    return 0;
}

static void mkdirs(void)
{
    char d[1100];
    mkdir(rundir, 0755);
    snprintf(d, sizeof d, "%s/jobs", rundir);
    mkdir(d, 0755);
    snprintf(d, sizeof d, "%s/steplogs", rundir);
    if (mkdir(d, 01777) == 0) chmod(d, 01777); /* tasks run as the user */
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    uint32_t id = job_id(sp);
    if (!id) return 0;
    mkdirs();
    const char *gpus = getenv("SLURM_JOB_GPUS"), *fl = getenv("SPANK_PFI_FLEX");
    if (!gpus) gpus = getenv("CUDA_VISIBLE_DEVICES");
    char path[1200], tmp[1300], list[512] = "";
    size_t n = 0;
    /* "0,1,3" -> [0,1,3]; ranges like "0-3" too */
    for (const char *p = gpus ? gpus : ""; *p && n + 16 < sizeof list;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p) break;
        if (*end == '-') b = strtol(end + 1, &end, 10);
        for (long g = a; g <= b && n + 16 < sizeof list; g++) n += (size_t)snprintf(list + n, sizeof list - n, "%s%ld", n ? ", " : "", g);
        p = *end == ',' ? end + 1 : end;
        if (*p && *p != ',' && (*p < '0' || *p > '9')) break;
    }
    snprintf(path, sizeof path, "%s/jobs/%u.json", rundir, id);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        slurm_error("pfi: %s: %s", tmp, strerror(errno));
        return 0; /* never fail a job for this */
    }
    int tier = fl ? atoi(fl) : -1;
    fprintf(f, "{\"job_id\": \"%u\", \"gpus\": [%s], \"tier\": %d, \"steplog\": \"%s/steplogs/%u.jsonl\"}\n", id, list, tier, rundir, id);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        slurm_error("pfi: %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    uint32_t id = job_id(sp);
    if (!id) return 0;
    char path[1200];
    snprintf(path, sizeof path, "%s/jobs/%u.json", rundir, id);
    if (unlink(path) != 0 && errno != ENOENT) slurm_error("pfi: %s: %s", path, strerror(errno));
    return 0;
}
