/* cmd_slurm_map.c — `pfi slurm-map`: the operator's check of what the SPANK
 * plugin will write for a job (issue 40): Slurm's GPU indexes on a node
 * (SLURM_JOB_GPUS, or IDX in `scontrol -d show job`) turned into device
 * minors and PCI bus ids by the plugin's own parser (src/slurm/gpu_map.c,
 * compiled into both), in the order the node's effective AutoDetect gives.
 * One row per GPU the job holds; where the plugin could not be sure, one
 * error line and exit 1, as the plugin would leave the job without GPUs. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpu_map.h"

typedef struct slurm_map_args {
    const char *gres_conf, *node, *driver_dir, *slurm_version, *job_gpus, *autodetect;
    cli_out out;
} slurm_map_args;

#define OPT_T slurm_map_args
static const pfi_opt slurm_map_options[] = {
    OPT_FILENAME(0, "gres-conf", gres_conf, "FILE", "the node's gres.conf (required)"),
    OPT_STRING(0, "node", node, "NAME", "the node's name in gres.conf (default: this host's)"),
    OPT_DIRNAME(0, "driver-dir", driver_dir, "DIR",
                "the NVIDIA driver's GPU list (default /proc/driver/nvidia/gpus)"),
    OPT_STRING(0, "slurm-version", slurm_version, "X.Y[.Z]",
               "the node's Slurm version (required where the effective AutoDetect is nvidia)"),
    OPT_CHOICE(0, "autodetect", autodetect, "off|nvml|nvidia",
               "force the mode, as the plugin's autodetect= option does"),
    OPT_STRING(0, "job-gpus", job_gpus, "LIST",
               "Slurm's GPU indexes of the job (SLURM_JOB_GPUS: \"0,2\", \"0-3\"; required)"),
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_slurm_map_opts = {
    .prog = "pfi slurm-map",
    .see = "see 'pfi help slurm-map'",
    .usage = "pfi slurm-map --gres-conf FILE [--node NAME] [--driver-dir DIR] "
             "[--slurm-version X.Y] [--autodetect MODE] --job-gpus LIST",
    .description = "Print the GPUs a job holds on a node as the SPANK plugin maps them: one row\n"
                   "per index of --job-gpus with columns slurm_index, minor (the /dev/nvidiaN\n"
                   "minor the agent caps) and bus_id (as the driver directory names it; empty\n"
                   "where it cannot be read under AutoDetect=off). Slurm's order follows the\n"
                   "node's effective AutoDetect (a NodeName= line's over the global one): off,\n"
                   "gres.conf's Name= lines then NodeName= lines, File=/Files= in place, one GPU\n"
                   "per MultipleFiles=; nvml, PCI bus-id order; nvidia (Slurm 24.11-25.05), the\n"
                   "string order of /dev/nvidiaN. Where the plugin could not be sure (an unknown\n"
                   "key, an Include, a version it does not know, an index past the node's GPUs)\n"
                   "it prints one error line and exits 1: the plugin gives such a job no GPUs.\n",
    .options = slurm_map_options};

static int print_rows(const char *cmd, const gpu_map *m, const long *idx, size_t n,
                      const cli_out *out)
{
    static const char *const names[] = {"slurm_index", "minor", "bus_id"};
    static const pfi_celltype types[] = {PFI_CELL_INT, PFI_CELL_INT, PFI_CELL_TEXT};
    pfi_rows *r = pfi_rows_new(3, names, types);
    for (size_t i = 0; i < n; i++) {
        size_t row = pfi_rows_add(r);
        const gpu_map_dev *d = &m->dev[idx[i]];
        pfi_rows_int(r, row, 0, idx[i]);
        pfi_rows_int(r, row, 1, d->minor);
        pfi_rows_text(r, row, 2, d->bus_id);
    }
    int rc = cli_save_rows(cmd, r, out);
    pfi_rows_free(r);
    return rc;
}

int cmd_slurm_map(int argc, char **argv)
{
    const char *cmd = "slurm-map";
    slurm_map_args a = {0};
    cli_out_init(&a.out);
    int first, rc = cli_parse(&cmd_slurm_map_opts, &a, argc, argv, &first);
    if (rc >= 0) return rc;
    if (first < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[first]);
    if (!a.gres_conf) return cli_usage_error(cmd, "--gres-conf FILE is required");
    if (!a.job_gpus) return cli_usage_error(cmd, "--job-gpus LIST is required");
    long idx[GPU_MAP_MAX], version = 0;
    size_t n;
    if (gpu_map_index_list(a.job_gpus, idx, GPU_MAP_MAX, &n) || n == 0)
        return cli_usage_error(
            cmd, "--job-gpus '%s': expected Slurm GPU indexes (\"0,2\", \"0-3\")", a.job_gpus);
    if (a.slurm_version && gpu_map_version_parse(a.slurm_version, &version))
        return cli_usage_error(cmd, "--slurm-version '%s': expected X.Y or X.Y.Z (\"24.11\")",
                               a.slurm_version);
    gpu_map_mode force = GPU_MAP_FROM_CONF;
    if (a.autodetect) gpu_map_mode_parse(a.autodetect, &force); /* OPT_CHOICE checked it */
    char host[256] = "";
    if (!a.node && gethostname(host, sizeof host) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    gpu_map_opts o = {a.gres_conf, a.node ? a.node : host, a.driver_dir, force, version};
    static gpu_map m;
    char why[1600];
    if (gpu_map_load(&o, &m, why, sizeof why)) {
        cli_error(cmd, "%s", why);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < n; i++)
        if ((size_t)idx[i] >= m.n) {
            cli_error(cmd, "GPU %ld (--job-gpus): %s gives %zu GPUs for node %s (AutoDetect %s)",
                      idx[i], a.gres_conf, m.n, o.node, gpu_map_mode_name(m.mode));
            return CLI_FAIL;
        }
    return print_rows(cmd, &m, idx, n, &a.out);
}
