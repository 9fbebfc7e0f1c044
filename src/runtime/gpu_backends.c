/* gpu_backends.c — the GPU backends, one row each (gpu.h: pfi_gpu_backend):
 * what selection (pfi_gpu_open), the help texts, the simulator's option
 * checks and the agent's privilege rule read, instead of spelling the
 * backends' names at each site (issue 43: a backend was chosen by strcmp
 * and named at nine sites; adding one, e.g. AMD SMI by dlopen, touched 14
 * files). A new backend is its file of ops and one row here. */
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"

static pfi_status open_nvml(const char *opts, const struct pfi_recon *recon, int read_only,
                            const pfi_gpu_ops **ops, void **st, pfi_error *err)
{
    (void)recon;
    return pfi_gpu_nvml_open(opts, read_only, ops, st, err);
}

static pfi_status open_sim(const char *opts, const struct pfi_recon *recon, int read_only,
                           const pfi_gpu_ops **ops, void **st, pfi_error *err)
{
    (void)read_only; /* the simulator's caps are its own: nothing to protect */
    return pfi_gpu_sim_open(opts, recon, ops, st, err);
}

static const pfi_gpu_backend_info backends[] = {
    {.name = "nvml",
     .open = open_nvml,
     .needs_admin = 1,
     .simulated = 0,
     .help = "NVIDIA GPUs through NVML (libnvidia-ml.so.1, or $PFI_NVML_LIBRARY, loaded with "
             "dlopen)",
     .options = ""},
    {.name = "sim",
     .open = open_sim,
     .needs_admin = 0,
     .simulated = 1,
     .help = "simulated H200/H100 GPUs running jobs of the reconstruction",
     .options = "gpus, model, job=ID:GROUP@A-B, tau, delay, load, noise, seed, state, "
                "steplogs, idle, name"},
};

const char *pfi_gpu_backend_help(void)
{
    static char text[1024]; /* constant once written: the rows are */
    if (text[0]) return text;
    size_t used = 0, n = sizeof backends / sizeof *backends;
    for (size_t i = 0; i < n && used < sizeof text; i++) {
        const pfi_gpu_backend_info *b = &backends[i];
        int w = snprintf(text + used, sizeof text - used, "%s%s%s%s: %s%s%s%s", i ? "; " : "",
                         b->name, b->options[0] ? "[:OPTIONS]" : "", i ? "" : " (default)", b->help,
                         b->options[0] ? " (OPTIONS, comma-separated: " : "", b->options,
                         b->options[0] ? ")" : "");
        if (w < 0) break;
        used += (size_t)w;
    }
    return text;
}

size_t pfi_gpu_backends(const pfi_gpu_backend_info **table)
{
    *table = backends;
    return sizeof backends / sizeof *backends;
}

const pfi_gpu_backend_info *pfi_gpu_backend_of(const char *spec, const char **opts)
{
    if (!spec) spec = backends[0].name; /* the default: real GPUs */
    size_t n = strcspn(spec, ":");
    for (size_t i = 0; i < sizeof backends / sizeof *backends; i++)
        if (strlen(backends[i].name) == n && !strncmp(spec, backends[i].name, n)) {
            if (opts) *opts = spec[n] ? spec + n + 1 : "";
            return &backends[i];
        }
    return NULL;
}

int pfi_gpu_backend_option(const char *spec, const char *opt)
{
    const char *opts;
    const pfi_gpu_backend_info *b = pfi_gpu_backend_of(spec, &opts);
    size_t n = strlen(opt);
    for (const char *p = b ? opts : ""; *p;) {
        size_t k = strcspn(p, ",");
        if (k >= n && !strncmp(p, opt, n) && (k == n || p[n] == '=')) return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}
