/* cmd_gpu.c — `pfi gpu info`: the node's GPUs as the agent's backend reads
 * them, changing nothing (issue 17 item 7). The backend is opened
 * read-only (pfi_gpu_open_read_only: every write refused, and NVML's
 * setters never even looked up), then per GPU: UUID, name, power (NVML's
 * power usage, a 1 s average on Ampere except GA100 and newer, and the instant field
 * NVML_FI_DEV_POWER_INSTANT where the driver has it), power limits
 * (current, default, min, max, enforced), SM and memory clocks, and the
 * compute processes; how other APIs name it (the /dev/nvidiaN minor
 * number Slurm and cgroups use, the PCI bus id NVML's order follows),
 * persistence and MIG mode. A value the driver or library lacks is "n/a"
 * (null in --json), never an error; a GPU that cannot be opened or read is
 * listed with its state (lost, no_permission, ...) and the others still
 * are (exit 1). scripts/nvml-smoke.sh and scripts/gpu-check.sh run it on a
 * real GPU. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu.h"

#define GPU_PROCS_MAX 256
#define ENFORCED_TOL_W 1.0 /* enforced below the current limit by more: set out of band */

typedef struct gpu_args {
    const char *backend;
    int json;
} gpu_args;

#define OPT_T gpu_args
static const pfi_opt gpu_options[] = {
    OPT_STRING_HELP_OF(0, "backend", backend, "SPEC", pfi_gpu_backend_help),
    OPT_BOOLEAN(0, "json", json, "print one JSON object (missing values null)"), OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_gpu_opts = CLI_OPTS(
    gpu, .usage = "pfi gpu info [--backend SPEC] [--json]",
    .description =
        "The node's GPUs, read-only: index, UUID, name; power (NVML's power usage, a 1 s\n"
        "average on Ampere (not GA100) and newer, and the instant value\n"
        "NVML_FI_DEV_POWER_INSTANT where the driver has it); power limits (current,\n"
        "default, min, max and enforced: an enforced limit below the current one was set\n"
        "out of band, by the BMC or another tool); SM and memory clocks; the compute\n"
        "processes (pid, memory). A value the driver lacks prints as n/a. Nothing is\n"
        "changed: the backend is opened read-only and no NVML setter is even looked up.\n"
        "scripts/nvml-smoke.sh runs it on a real GPU (docs/agent.md).\n",
    .footer = "Exit status 0 on success, 1 when the GPUs cannot be read (no driver), 2 on usage\n"
              "errors.\n",
    .options = gpu_options);

typedef struct gpu_row {
    const char *state; /* "ok", or why the GPU cannot be read */
    const char *why;
    int persistence;
    pfi_gpu_info in;
    pfi_gpu_sample s;
    pfi_gpu_proc *proc;
    size_t nproc;
    const char *unsupported;
} gpu_row;

static double have(const pfi_gpu_sample *s, unsigned bit, double v)
{
    return (s->have & bit) && isfinite(v) ? v : NAN;
}

static int out_of_band(const gpu_row *r)
{
    double cur = have(&r->s, PFI_GS_CAP, r->s.cap_w),
           enf = have(&r->s, PFI_GS_ENFORCED, r->s.enforced_w);
    return isfinite(cur) && isfinite(enf) && enf < cur - ENFORCED_TOL_W;
}

/* "%.1f UNIT" or "n/a" */
static const char *val(char *buf, size_t n, double v, const char *fmt)
{
    if (isfinite(v)) snprintf(buf, n, fmt, v);
    else snprintf(buf, n, "n/a");
    return buf;
}

/* the power scope's name (gpu.h: PFI_POWER_SCOPE_*) */
static const char *scope_name(int scope)
{
    return scope == PFI_POWER_SCOPE_MODULE          ? "module"
           : scope == PFI_POWER_SCOPE_MODULE_LIMITS ? "module_limits"
                                                    : "gpu";
}

static void print_text(const gpu_row *r, size_t i)
{
    char a[32], b[32], c[32], d[32], e[32];
    const pfi_gpu_sample *s = &r->s;
    if (strcmp(r->state, "ok")) {
        printf("GPU %zu  unavailable: %s (%s)\n", i, r->state, r->why);
        return;
    }
    printf("GPU %zu  %s  %s\n", i, r->in.uuid, r->in.name);
    printf("  identity       minor %s  PCI %s  persistence %s  MIG %s\n",
           val(a, sizeof a, r->in.minor >= 0 ? r->in.minor : NAN, "%.0f"),
           r->in.pci_bus_id[0] ? r->in.pci_bus_id : "n/a",
           r->persistence < 0 ? "n/a"
           : r->persistence   ? "on"
                              : "off",
           r->in.mig < 0 ? "n/a"
           : r->in.mig   ? "enabled"
                         : "disabled");
    printf("  power          %s (average)  %s (instant)\n",
           val(a, sizeof a, have(s, PFI_GS_POWER, s->power_w), "%.1f W"),
           val(b, sizeof b, have(s, PFI_GS_POWER_INSTANT, s->power_instant_w), "%.1f W"));
    if (r->in.power_scope != PFI_POWER_SCOPE_GPU)
        printf("  module         %s (module power)  scope %s: pfi does not cap this GPU\n",
               val(a, sizeof a, have(s, PFI_GS_MODULE_POWER, s->module_power_w), "%.1f W"),
               scope_name(r->in.power_scope));
    printf("  power limits   current %s  default %s  min %s  max %s  enforced %s\n",
           val(a, sizeof a, have(s, PFI_GS_CAP, s->cap_w), "%.0f W"),
           val(b, sizeof b, r->in.cap_default_w, "%.0f W"),
           val(c, sizeof c, r->in.cap_min_w, "%.0f W"), val(d, sizeof d, r->in.cap_max_w, "%.0f W"),
           val(e, sizeof e, have(s, PFI_GS_ENFORCED, s->enforced_w), "%.0f W"));
    if (out_of_band(r))
        printf("  out of band    the enforced limit %.0f W is below the current %.0f W: set by the "
               "BMC or another tool\n",
               s->enforced_w, s->cap_w);
    printf("  clocks         SM %s  memory %s\n",
           val(a, sizeof a, have(s, PFI_GS_CLOCKS, s->sm_clock_mhz), "%.0f MHz"),
           val(b, sizeof b, have(s, PFI_GS_CLOCKS, s->mem_clock_mhz), "%.0f MHz"));
    int listed = !strstr(r->unsupported, "running_processes");
    printf("  processes      %s", listed ? "" : "n/a");
    if (listed && !r->nproc) printf("none");
    for (size_t k = 0; k < r->nproc; k++)
        printf("%spid %u (%.0f MiB)", k ? ", " : "", r->proc[k].pid, r->proc[k].used_mib);
    printf("\n");
    if (r->unsupported[0]) printf("  not available  %s\n", r->unsupported);
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *gpu_json(const gpu_row *r, size_t i)
{
    const pfi_gpu_sample *s = &r->s;
    if (strcmp(r->state, "ok"))
        return json_pack("{s:I,s:s,s:s}", "index", (json_int_t)i, "state", r->state, "error",
                         r->why);
    json_t *procs = json_array();
    for (size_t k = 0; k < r->nproc; k++)
        json_array_append_new(procs, json_pack("{s:I,s:o}", "pid", (json_int_t)r->proc[k].pid,
                                               "used_mib", jnum(r->proc[k].used_mib)));
    json_t *o = json_pack(
        "{s:I,s:s,s:s,s:o,s:o,s:{s:o,s:o,s:o,s:o,s:o},s:b,s:o,s:o,s:o,s:s}", "index", (json_int_t)i,
        "uuid", r->in.uuid, "name", r->in.name, "power_w", jnum(have(s, PFI_GS_POWER, s->power_w)),
        "power_instant_w", jnum(have(s, PFI_GS_POWER_INSTANT, s->power_instant_w)), "limits_w",
        "current", jnum(have(s, PFI_GS_CAP, s->cap_w)), "default", jnum(r->in.cap_default_w), "min",
        jnum(r->in.cap_min_w), "max", jnum(r->in.cap_max_w), "enforced",
        jnum(have(s, PFI_GS_ENFORCED, s->enforced_w)), "out_of_band_limit", out_of_band(r),
        "sm_clock_mhz", jnum(have(s, PFI_GS_CLOCKS, s->sm_clock_mhz)), "mem_clock_mhz",
        jnum(have(s, PFI_GS_CLOCKS, s->mem_clock_mhz)), "processes",
        strstr(r->unsupported, "running_processes") ? (json_decref(procs), json_null()) : procs,
        "not_available", r->unsupported);
    json_object_set_new(o, "state", json_string("ok"));
    json_object_set_new(o, "minor", r->in.minor >= 0 ? json_integer(r->in.minor) : json_null());
    json_object_set_new(o, "pci_bus_id",
                        r->in.pci_bus_id[0] ? json_string(r->in.pci_bus_id) : json_null());
    json_object_set_new(o, "persistence",
                        r->persistence < 0 ? json_null() : json_boolean(r->persistence));
    json_object_set_new(o, "mig", r->in.mig < 0 ? json_null() : json_boolean(r->in.mig));
    json_object_set_new(o, "power_scope", json_string(scope_name(r->in.power_scope)));
    json_object_set_new(o, "module_power_w", jnum(have(s, PFI_GS_MODULE_POWER, s->module_power_w)));
    return o;
}

static int gpu_info(const gpu_args *a)
{
    pfi_gpu *g;
    pfi_error e;
    const char *spec = a->backend ? a->backend : "nvml";
    if (pfi_gpu_open_read_only(spec, NULL, &g, &e)) {
        cli_error("gpu", "%s", e.msg);
        return CLI_FAIL;
    }
    size_t n = pfi_gpu_count(g);
    int rc = CLI_OK;
    json_t *arr = json_array();
    gpu_row r;
    r.proc = malloc(GPU_PROCS_MAX * sizeof *r.proc);
    if (!r.proc || !arr) {
        cli_error("gpu", "out of memory");
        rc = CLI_FAIL;
        n = 0;
    }
    if (!a->json)
        printf("backend %s, %zu GPU%s, opened read-only\n", pfi_gpu_backend(g), n,
               n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        r.state = "ok";
        r.why = "";
        r.nproc = 0;
        if (pfi_gpu_info_get(g, i, &r.in, &e) || pfi_gpu_sample_get(g, i, &r.s, &e) ||
            pfi_gpu_processes(g, i, r.proc, GPU_PROCS_MAX, &r.nproc, &e)) {
            /* this GPU only: the others are still listed */
            pfi_gpu_avail av = pfi_gpu_avail_get(g, i);
            r.state = av == PFI_GPU_OK ? "unknown" : pfi_gpu_avail_name(av);
            r.why = e.msg;
            cli_error("gpu", "%s", e.msg);
            rc = CLI_FAIL;
        }
        r.persistence = pfi_gpu_persistence(g, i);
        r.unsupported = pfi_gpu_unsupported(g, i);
        if (a->json) json_array_append_new(arr, gpu_json(&r, i));
        else print_text(&r, i);
    }
    if (arr && a->json) {
        json_t *doc = json_pack("{s:s,s:b,s:o}", "backend", pfi_gpu_backend(g), "read_only",
                                pfi_gpu_is_read_only(g), "gpus", arr);
        arr = NULL;
        char *txt = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
        if (txt) puts(txt);
        else cli_error("gpu", "out of memory"), rc = CLI_FAIL;
        free(txt);
        json_decref(doc);
    }
    json_decref(arr);
    free(r.proc);
    pfi_gpu_close(g);
    return rc;
}

int cmd_gpu(int argc, char **argv)
{
    gpu_args a;
    memset(&a, 0, sizeof a);
    int first, rc = cli_parse(&cmd_gpu_opts, &a, argc, argv, &first);
    if (rc >= 0) goto out;
    rc = CLI_USAGE;
    if (first >= argc) cli_usage_error("gpu", "expected an action: info");
    else if (strcmp(argv[first], "info"))
        cli_usage_error("gpu", "unknown action '%s' (expected info)", argv[first]);
    else if (first + 1 < argc)
        cli_usage_error("gpu", "info takes no operands ('%s')", argv[first + 1]);
    else rc = gpu_info(&a);
out:
    pfi_opts_dispose(&cmd_gpu_opts, &a);
    return rc;
}
