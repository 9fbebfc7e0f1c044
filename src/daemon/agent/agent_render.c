/* agent_render.c — GET /metrics (Prometheus text: pfi_* names in base units
 * with labels gpu, uuid, model_name, hostname, hpc_job; dcgm-exporter's own
 * names and labels besides only with --export-dcgm, since a Prometheus that
 * also scrapes dcgm-exporter would count every GPU twice) and GET /v1/node
 * (JSON) and GET /v1/control (the part of it a controller reads, compact). All
 * render from the last samples under the agent's lock; no device is read
 * while serving. Every label value is escaped (pfi_prom_label): job ids are
 * validated where they enter, but device and host names and a controller's
 * name are text from elsewhere. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "buf.h"
#include "clock.h"
#include "daemon_util.h"
#include "httpd.h"
#include "pfi/prom.h"
#include "pfi/version.h"

/* an escaped label value in a buffer of this many bytes (twice the longest field, 128) */
#define LABEL_MAX 260
typedef char label[LABEL_MAX];
#define L(buf, v) pfi_prom_label(buf, sizeof(label), v)

static void head(pfi_buf *b, const char *name, const char *type, const char *help)
{
    pfi_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* one per-GPU reading: its pfi name (base units) and dcgm-exporter's, the
 * sample bit that says it was read (0: a profiling metric, m), the value in
 * the DCGM unit and the factor from it to the pfi unit */
typedef struct gpu_series {
    const char *name, *dcgm, *type, *help, *dcgm_help;
    unsigned bit;
    int m; /* pfi_metric of a profiling metric, -1 */
    double (*get)(const pfi_gpu_sample *);
    double to_pfi;
} gpu_series;

/* the reading's value on GPU i in the DCGM unit, NaN when not read */
static double gpu_value(const agent_gpu *g, const gpu_series *d)
{
    double v = d->m >= 0 ? (!isnan(g->dcgm_prof[d->m]) ? g->dcgm_prof[d->m] : g->last.prof[d->m])
                         : d->get(&g->last);
    if (!g->sampled || (d->bit && !(g->last.have & d->bit))) return NAN;
    return v;
}

/* pfi's series: {gpu, uuid, model_name, hostname, hpc_job}; no hpc_job on a
 * GPU no job holds (an empty label is no label in Prometheus) */
static void gpu_metric(pfi_buf *b, agent *a, const gpu_series *d)
{
    int any = 0;
    label u, mn, h, j;
    L(h, a->hostname);
    for (size_t i = 0; i < a->n; i++) {
        const agent_gpu *g = &a->g[i];
        double v = gpu_value(g, d);
        if (!isfinite(v)) continue;
        if (!any++) head(b, d->name, d->type, d->help);
        pfi_buf_printf(b, "%s{gpu=\"%zu\",uuid=\"%s\",model_name=\"%s\",hostname=\"%s\"", d->name,
                       i, L(u, g->info.uuid), L(mn, g->info.name), h);
        if (g->job_id[0]) pfi_buf_printf(b, ",hpc_job=\"%s\"", L(j, g->job_id));
        pfi_buf_printf(b, "} %.10g\n", v * d->to_pfi);
    }
}

/* --export-dcgm: dcgm-exporter's names, units and labels {gpu, UUID, device,
 * modelName, hostname, hpc_job} */
static void dcgm_metric(pfi_buf *b, agent *a, const gpu_series *d)
{
    int any = 0;
    label u, mn, h, j;
    L(h, a->hostname);
    for (size_t i = 0; i < a->n; i++) {
        const agent_gpu *g = &a->g[i];
        double v = gpu_value(g, d);
        if (!isfinite(v)) continue;
        if (!any++) head(b, d->dcgm, d->type, d->dcgm_help);
        /* current dcgm-exporter's labels (internal/pkg/rendermetrics/
           render_metrics.go, 2026): gpu, UUID, pci_bus_id, device,
           modelName, hostname (older releases wrote Hostname), and hpc_job
           from its job-mapping files */
        label pci;
        pfi_buf_printf(b,
                       "%s{gpu=\"%zu\",UUID=\"%s\",pci_bus_id=\"%s\",device=\"nvidia%zu\","
                       "modelName=\"%s\",hostname=\"%s\"",
                       d->dcgm, i, L(u, g->info.uuid), L(pci, g->info.pci_bus_id), i,
                       L(mn, g->info.name), h);
        if (g->job_id[0]) pfi_buf_printf(b, ",hpc_job=\"%s\"", L(j, g->job_id));
        pfi_buf_printf(b, "} %.10g\n", v);
    }
}

static double g_power(const pfi_gpu_sample *s)
{
    return s->power_w;
}
static double g_power_instant(const pfi_gpu_sample *s)
{
    return s->power_instant_w;
}
static double g_energy(const pfi_gpu_sample *s)
{
    return s->energy_j * 1000.0;
} /* mJ, as DCGM */
static double g_sm(const pfi_gpu_sample *s)
{
    return s->sm_clock_mhz;
}
static double g_mem(const pfi_gpu_sample *s)
{
    return s->mem_clock_mhz;
}
static double g_util(const pfi_gpu_sample *s)
{
    return s->util_gpu_pct;
}
static double g_mutil(const pfi_gpu_sample *s)
{
    return s->util_mem_pct;
}
static double g_fb(const pfi_gpu_sample *s)
{
    return s->fb_used_mib;
}
static double g_temp(const pfi_gpu_sample *s)
{
    return s->temp_c;
}
static double g_enf(const pfi_gpu_sample *s)
{
    return s->enforced_w;
}
static double g_cap(const pfi_gpu_sample *s)
{
    return s->cap_w;
}
static double g_thr(const pfi_gpu_sample *s)
{
    return (double)s->throttle_reasons;
}

static const gpu_series series[] = {
    {"pfi_gpu_power_watts", "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W).",
     "Power draw (in W).", PFI_GS_POWER, -1, g_power, 1},
    /* where the driver has NVML's field 186 (Hopper, driver 535+): a sample, not the 1 s
       average, so a cap's effect shows within one sampling interval (delivery) */
    {"pfi_gpu_power_instant_watts", "DCGM_FI_DEV_POWER_USAGE_INSTANT", "gauge",
     "Instantaneous power draw (W), where the driver has it.",
     "Current instantaneous power usage of the device (in W).", PFI_GS_POWER_INSTANT, -1,
     g_power_instant, 1},
    {"pfi_gpu_energy_joules_total", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Energy consumed since the driver loaded (J).", "Total energy consumption since boot (in mJ).",
     PFI_GS_ENERGY, -1, g_energy, 1e-3},
    {"pfi_gpu_sm_clock_hertz", "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (Hz).",
     "SM clock frequency (in MHz).", PFI_GS_CLOCKS, -1, g_sm, 1e6},
    {"pfi_gpu_memory_clock_hertz", "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (Hz).",
     "Memory clock frequency (in MHz).", PFI_GS_CLOCKS, -1, g_mem, 1e6},
    {"pfi_gpu_utilization_ratio", "DCGM_FI_DEV_GPU_UTIL", "gauge",
     "Fraction of time a kernel ran (0..1).", "GPU utilization (in %).", PFI_GS_UTIL, -1, g_util,
     0.01},
    {"pfi_gpu_memory_copy_utilization_ratio", "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge",
     "Fraction of time device memory was read or written (0..1).", "Memory utilization (in %).",
     PFI_GS_UTIL, -1, g_mutil, 0.01},
    {"pfi_gpu_framebuffer_used_bytes", "DCGM_FI_DEV_FB_USED", "gauge",
     "Framebuffer memory used (bytes).", "Framebuffer memory used (in MiB).", PFI_GS_MEM, -1, g_fb,
     1048576},
    {"pfi_gpu_temperature_celsius", "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C).",
     "GPU temperature (in C).", PFI_GS_TEMP, -1, g_temp, 1},
    /* one name for the enforced limit: pfi_gpu_power_* like the cap's
       series (general to specific, so they sort together); the out-of-band
       check below compares it with pfi_gpu_power_cap_watts */
    {"pfi_gpu_power_limit_enforced_watts", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge",
     "Power limit the GPU enforces: the lowest of the cap and any other limit (W).",
     "Enforced power limit (in W).", PFI_GS_ENFORCED, -1, g_enf, 1},
    {"pfi_gpu_power_cap_watts", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge",
     "Current power cap (management limit, W).", "Power management limit (in W).", PFI_GS_CAP, -1,
     g_cap, 1},
    /* DCGM 3.3 renamed DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (field 112) to
       DCGM_FI_DEV_CLOCKS_EVENT_REASONS, as NVML renamed throttle reasons to
       clocks event reasons; current dcgm-exporter serves the new name */
    {"pfi_gpu_clock_throttle_reasons", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge",
     "Clock event (throttle) reasons, NVML's bitmask.", "Clocks event (throttle) reasons bitmask.",
     PFI_GS_THROTTLE, -1, g_thr, 1},
};

/* profiling metrics (a local dcgm-exporter's through --dcgm-url, else the
 * backend's), under the names of metrics.h */
static gpu_series prof_series(int m)
{
    const pfi_metric_info *mi = pfi_metric_get((pfi_metric)m);
    gpu_series d = {mi->pfi_name,
                    mi->name,
                    "gauge",
                    mi->agg == PFI_AGG_SUM ? "DCGM profiling metric (bytes per second)."
                                           : "DCGM profiling metric (ratio 0..1).",
                    "DCGM profiling metric.",
                    0,
                    m,
                    NULL,
                    1 / mi->pfi_scale};
    return d;
}

/* the readings of every GPU: pfi's series, and dcgm-exporter's with
 * --export-dcgm */
static void render_readings(pfi_buf *b, agent *a)
{
    for (size_t k = 0; k < sizeof series / sizeof *series; k++) gpu_metric(b, a, &series[k]);
    for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_PCIE_RX_BYTES; m++) {
        gpu_series d = prof_series(m);
        gpu_metric(b, a, &d);
    }
    if (!a->cfg.export_dcgm) return;
    for (size_t k = 0; k < sizeof series / sizeof *series; k++) dcgm_metric(b, a, &series[k]);
    for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_PCIE_RX_BYTES; m++) {
        gpu_series d = prof_series(m);
        dcgm_metric(b, a, &d);
    }
}

/* GPU i's line of one of pfi's own gauges, {gpu, uuid, hostname}; h the
 * escaped host name */
static void gpu_gauge(pfi_buf *b, const char *name, agent *a, size_t i, const char *h, double v)
{
    label u;
    pfi_buf_printf(b, "%s{gpu=\"%zu\",uuid=\"%s\",hostname=\"%s\"} %g\n", name, i,
                   L(u, a->g[i].info.uuid), h, v);
}

/* what each GPU enforces and whether it is up */
static void render_gpu_state(pfi_buf *b, agent *a, const char *h)
{
    /* whether the enforced limit (pfi_gpu_power_limit_enforced_watts, with
       the readings) is below the cap: set out of band */
    head(b, "pfi_gpu_out_of_band_limit", "gauge",
         "1 when the enforced limit is more than 1 W below the cap: set by the BMC or another "
         "tool.");
    for (size_t i = 0; i < a->n; i++)
        if (a->g[i].sampled && (a->g[i].last.have & PFI_GS_ENFORCED) &&
            (a->g[i].last.have & PFI_GS_CAP))
            gpu_gauge(b, "pfi_gpu_out_of_band_limit", a, i, h, a->g[i].limit_out_of_band);
    /* each GPU's state: 1 while it is available and its last sample was
       read; its other series are absent otherwise (never a stale sample) */
    head(b, "pfi_gpu_up", "gauge",
         "1 when the GPU is available and was read in the last sampling round; state: ok, lost, "
         "no_permission, not_supported, unknown (a read failed).");
    for (size_t i = 0; i < a->n; i++) {
        const char *st = agent_gpu_state(a, i);
        label u, sl;
        pfi_buf_printf(b, "pfi_gpu_up{gpu=\"%zu\",uuid=\"%s\",hostname=\"%s\",state=\"%s\"} %d\n",
                       i, L(u, a->g[i].info.uuid), h, L(sl, st),
                       !strcmp(st, "ok") && a->g[i].sampled);
    }
}

/* the caps pfi may set on each GPU, and how they have fared */
static void render_gpu_caps(pfi_buf *b, agent *a, const char *h)
{
    head(b, "pfi_gpu_power_cap_ceiling_watts", "gauge",
         "Highest cap pfi may set: the limit the GPU had before pfi touched it (W).");
    for (size_t i = 0; i < a->n; i++) {
        double cw = agent_gpu_ceiling(a, i);
        if (isfinite(cw)) gpu_gauge(b, "pfi_gpu_power_cap_ceiling_watts", a, i, h, cw);
    }
    head(b, "pfi_gpu_mig_enabled", "gauge",
         "1 when MIG mode is enabled: the GPU is left at its baseline, never capped.");
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i) && a->g[i].info.mig >= 0)
            gpu_gauge(b, "pfi_gpu_mig_enabled", a, i, h, a->g[i].info.mig);
    int any_module = 0;
    for (size_t i = 0; i < a->n; i++) {
        const agent_gpu *g = &a->g[i];
        if (!agent_gpu_usable(a, i) || !g->sampled || !(g->last.have & PFI_GS_MODULE_POWER))
            continue;
        if (!any_module++)
            head(b, "pfi_gpu_module_power_watts", "gauge",
                 "The module's power (W) where power is governed at module scope (GH200: GPU and "
                 "CPU; GB200/GB300): not the GPU's, and such a GPU is never capped.");
        gpu_gauge(b, "pfi_gpu_module_power_watts", a, i, h, g->last.module_power_w);
    }
    head(b, "pfi_gpu_job_mismatch", "gauge",
         "1 when the GPU's job file names one job and a process on it is in another job's "
         "cgroup: capped by no job until they agree.");
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i))
            gpu_gauge(b, "pfi_gpu_job_mismatch", a, i, h, a->g[i].mismatch[0] != '\0');
    head(b, "pfi_gpu_cap_contested", "gauge",
         "1 when another tool kept raising the limit over pfi's cap and pfi stopped re-applying.");
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i))
            gpu_gauge(b, "pfi_gpu_cap_contested", a, i, h, a->g[i].contested);
    head(b, "pfi_gpu_cap_drift_total", "counter",
         "Limits found changed behind pfi's back: lowered (an admin; adopted), raised (a reset or "
         "another tool; re-applied), contested (pfi stopped), baseline (changed while no cap was "
         "held).");
    for (int k = 0; k < AGENT_DRIFT_KINDS; k++)
        pfi_buf_printf(b, "pfi_gpu_cap_drift_total{kind=\"%s\",hostname=\"%s\"} %llu\n",
                       agent_drift_kind_name(k), h, a->drift[k]);
    head(b, "pfi_gpu_power_cap_min_watts", "gauge", "Lowest settable cap (W).");
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i))
            gpu_gauge(b, "pfi_gpu_power_cap_min_watts", a, i, h, a->g[i].info.cap_min_w);
    head(b, "pfi_gpu_power_cap_max_watts", "gauge", "Highest settable cap (W).");
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i))
            gpu_gauge(b, "pfi_gpu_power_cap_max_watts", a, i, h, a->g[i].info.cap_max_w);
    head(b, "pfi_gpu_power_cap_baseline_watts", "gauge",
         "Cap found before pfi changed it (only GPUs whose cap pfi has not restored yet).");
    label u;
    for (size_t k = 0; k < a->lease.n; k++)
        if (a->lease.gpu[k].changed)
            pfi_buf_printf(b, "pfi_gpu_power_cap_baseline_watts{uuid=\"%s\",hostname=\"%s\"} %g\n",
                           L(u, a->lease.gpu[k].uuid), h, a->lease.gpu[k].baseline_w);
}

/* job k's line of a pfi_job_* gauge, {hpc_job, hostname} */
static void job_gauge(pfi_buf *b, const char *name, agent *a, size_t k, const char *h, double v)
{
    label j;
    pfi_buf_printf(b, "%s{hpc_job=\"%s\",hostname=\"%s\"} %g\n", name, L(j, a->job[k].id), h, v);
}

/* the jobs on this node */
static void render_jobs(pfi_buf *b, agent *a, const char *h)
{
    head(b, "pfi_job_gpus", "gauge", "GPUs of the job on this node.");
    for (size_t k = 0; k < a->njobs; k++)
        job_gauge(b, "pfi_job_gpus", a, k, h, (double)a->job[k].ngpus);
    head(b, "pfi_job_power_watts", "gauge", "Power of the job's GPUs on this node (W).");
    for (size_t k = 0; k < a->njobs; k++)
        job_gauge(b, "pfi_job_power_watts", a, k, h, a->job[k].power_w);
    head(b, "pfi_job_tokens_per_second", "gauge",
         "Job throughput from its step log (whole job, tokens/s).");
    for (size_t k = 0; k < a->njobs; k++)
        if (isfinite(a->job[k].tokens_per_s))
            job_gauge(b, "pfi_job_tokens_per_second", a, k, h, a->job[k].tokens_per_s);
    head(b, "pfi_job_pfi_predicted", "gauge",
         "Predicted PFI of the job from its telemetry (--model).");
    for (size_t k = 0; k < a->njobs; k++)
        if (isfinite(a->job[k].pfi_pred))
            job_gauge(b, "pfi_job_pfi_predicted", a, k, h, a->job[k].pfi_pred);
}

/* the controller's lease */
static void render_lease(pfi_buf *b, agent *a)
{
    label ctl;
    double mono = pfi_clock_mono();
    int live = pfi_lease_live(&a->lease, mono);
    head(b, "pfi_lease_active", "gauge", "1 while a controller holds a live caps lease.");
    pfi_buf_printf(b, "pfi_lease_active{controller=\"%s\"} %d\n",
                   L(ctl, live ? a->lease.controller : ""), live);
    head(b, "pfi_lease_generation", "gauge", "Generation of the current (or last) lease.");
    pfi_buf_printf(b, "pfi_lease_generation %lld\n", a->lease.generation);
    head(b, "pfi_lease_expires_in_seconds", "gauge",
         "Seconds until the lease ends (0 without one).");
    pfi_buf_printf(b, "pfi_lease_expires_in_seconds %g\n",
                   live ? a->lease.expires_mono - mono : 0.0);
}

/* the agent's own counters (caps, requests, datagrams, sampling) and
 * what it is */
static void render_agent(pfi_buf *b, agent *a, const char *h)
{
    head(b, "pfi_agent_cap_changes_total", "counter",
         "Caps the agent has set (including restores).");
    pfi_buf_printf(b, "pfi_agent_cap_changes_total %llu\n", a->cap_changes);
    head(b, "pfi_agent_requests_total", "counter", "HTTP requests by status class.");
    unsigned long long c2 = 0, c4 = 0, c5 = 0;
    if (a->httpd) pfi_httpd_counts(a->httpd, &c2, &c4, &c5);
    pfi_buf_printf(
        b,
        "pfi_agent_requests_total{code=\"2xx\"} %llu\npfi_agent_requests_total{code=\"4xx\"} "
        "%llu\npfi_agent_requests_total{code=\"5xx\"} %llu\n",
        c2, c4, c5);
    head(b, "pfi_agent_slow_connections_closed_total", "counter",
         "Connections shut down because their request did not arrive within the request timeout "
         "(slow clients).");
    pfi_buf_printf(b, "pfi_agent_slow_connections_closed_total %llu\n",
                   (a->httpd ? pfi_httpd_slow_closed(a->httpd) : 0) +
                       (a->control_httpd ? pfi_httpd_slow_closed(a->control_httpd) : 0));
    head(b, "pfi_agent_rejected_caps_total", "counter", "PUT /v1/caps requests rejected.");
    pfi_buf_printf(b, "pfi_agent_rejected_caps_total %llu\n", a->rejected);
    head(b, "pfi_agent_fast_trigger_datagrams_total", "counter",
         "Fast trigger datagrams by result: taken (caps applied), refused (as PUT would be), "
         "view (GET /v1/control answered), bad (size, format or MAC), stale (seq not fresh).");
    pfi_buf_printf(b,
                   "pfi_agent_fast_trigger_datagrams_total{result=\"taken\"} %llu\n"
                   "pfi_agent_fast_trigger_datagrams_total{result=\"refused\"} %llu\n"
                   "pfi_agent_fast_trigger_datagrams_total{result=\"view\"} %llu\n"
                   "pfi_agent_fast_trigger_datagrams_total{result=\"bad\"} %llu\n"
                   "pfi_agent_fast_trigger_datagrams_total{result=\"stale\"} %llu\n",
                   a->fast_taken, a->fast_refused, a->fast_views,
                   __atomic_load_n(&a->fast_bad, __ATOMIC_RELAXED),
                   __atomic_load_n(&a->fast_stale, __ATOMIC_RELAXED));
    head(b, "pfi_agent_jobs_unmapped", "gauge",
         "Jobs whose GPUs could not be mapped to this node's GPUs (the Slurm plugin's "
         "gpu_error, or no GPU of the job file found): never capped by job.");
    pfi_buf_printf(b, "pfi_agent_jobs_unmapped %u\n", a->jobs_unmapped);
    if (a->write_path >= 0) {
        head(b, "pfi_agent_write_path_ok", "gauge",
             "1 when the start-up probe wrote every GPU's limit back, 0 when one was refused "
             "(caps cannot be set).");
        pfi_buf_printf(b, "pfi_agent_write_path_ok %d\n", a->write_path);
    }
    head(b, "pfi_agent_samples_total", "counter", "Sampling rounds (all GPUs).");
    pfi_buf_printf(b, "pfi_agent_samples_total %llu\n", a->samples);
    head(b, "pfi_agent_steplog_lines_refused_total", "counter",
         "Step-log lines refused: not JSON, a bad key, a throughput that is negative, not "
         "finite or above 1e10 tokens/s (each job's first logged).");
    pfi_buf_printf(b, "pfi_agent_steplog_lines_refused_total %llu\n", a->steplog_refused);
    head(b, "pfi_agent_sampling_cpu_seconds_total", "counter",
         "CPU time spent sampling GPUs and following jobs.");
    pfi_buf_printf(b, "pfi_agent_sampling_cpu_seconds_total %.9f\n", a->sampling_cpu_s);
    label be;
    head(b, "pfi_agent_info", "gauge", "pfi-agent's GPU backend and host.");
    pfi_buf_printf(b, "pfi_agent_info{backend=\"%s\",hostname=\"%s\"} 1\n",
                   L(be, pfi_gpu_backend(a->gpu)), h);
    head(b, "pfi_build_info", "gauge", "The pfi build serving these metrics.");
    pfi_buf_printf(b, "pfi_build_info{version=\"%s\",program=\"pfi-agent\"} 1\n", PFI_VERSION);
}

char *agent_render_metrics(agent *a, size_t *len)
{
    pfi_buf b = {0};
    render_readings(&b, a);
    /* pfi's own */
    label h;
    L(h, a->hostname);
    render_gpu_state(&b, a, h);
    render_gpu_caps(&b, a, h);
    render_jobs(&b, a, h);
    render_lease(&b, a);
    render_agent(&b, a, h);
    size_t n = 0; /* every value a valid exposition float, whatever a job's numbers made */
    char *t = pfi_buf_take(&b, &n), *f = pfi_prom_valid_values(t, n, len);
    free(t);
    return f; /* NULL (500) when out of memory */
}

/* GET /v1/node's jobs: each with its GPUs, power, claimed throughput, the
   telemetry a claim is checked against, and its training means */
static json_t *node_jobs(const agent *a)
{
    json_t *js = json_array();
    for (size_t k = 0; k < a->njobs; k++) {
        const agent_job *j = &a->job[k];
        json_t *ix = json_array();
        for (size_t q = 0; q < j->ngpus; q++)
            json_array_append_new(ix, json_integer((json_int_t)j->gpu[q]));
        json_t *o = json_pack("{s:s,s:o,s:s,s:f}", "job_id", j->id, "gpus", ix, "source", j->source,
                              "power_w", j->power_w);
        json_object_set_new(o, "tokens_per_s",
                            isfinite(j->tokens_per_s) ? json_real(j->tokens_per_s) : json_null());
        json_object_set_new(o, "pfi_predicted",
                            isfinite(j->pfi_pred) ? json_real(j->pfi_pred) : json_null());
        if (isfinite(j->sm_clock_mhz))
            json_object_set_new(o, "sm_clock_mhz", json_real(j->sm_clock_mhz));
        if (isfinite(j->sm_active)) json_object_set_new(o, "sm_active", json_real(j->sm_active));
        if (j->pfi_note[0]) json_object_set_new(o, "pfi_note", json_string(j->pfi_note));
        if (j->tier >= 0) json_object_set_new(o, "tier", json_integer(j->tier));
        if (j->steplog[0]) json_object_set_new(o, "steplog", json_string(j->steplog));
        json_t *f = json_object();
        static const int fm[] = {PFI_M_DRAM_ACTIVE, PFI_M_MEM_COPY_UTIL, PFI_M_PIPE_TENSOR_ACTIVE,
                                 PFI_M_SM_ACTIVE, PFI_M_GPU_UTIL};
        for (size_t q = 0; q < sizeof fm / sizeof *fm; q++)
            if (isfinite(j->feat[fm[q]]))
                json_object_set_new(f, pfi_metric_get((pfi_metric)fm[q])->name,
                                    json_real(j->feat[fm[q]]));
        json_object_set_new(o, "training_means", f);
        json_array_append_new(js, o);
    }
    return js;
}

char *agent_render_node(agent *a)
{
    double now = pfi_clock_now();
    json_t *gs = json_array();
    for (size_t i = 0; i < a->n; i++) {
        const agent_gpu *g = &a->g[i];
        json_t *o =
            json_pack("{s:I,s:s,s:s,s:f,s:f,s:f}", "index", (json_int_t)i, "uuid", g->info.uuid,
                      "name", g->info.name, "cap_min_w", g->info.cap_min_w, "cap_max_w",
                      g->info.cap_max_w, "cap_default_w", g->info.cap_default_w);
        json_object_set_new(o, "state", json_string(agent_gpu_state(a, i)));
        double cw = agent_gpu_ceiling(a, i);
        json_object_set_new(o, "ceiling_w", isfinite(cw) ? json_real(cw) : json_null());
        const char *nc = agent_gpu_uncapped_reason(a, i);
        if (nc) json_object_set_new(o, "not_capped", json_string(nc));
        if (g->contested) json_object_set_new(o, "contested", json_true());
        if (g->write_refused) json_object_set_new(o, "write_refused", json_true());
        if (g->info.power_scope != PFI_POWER_SCOPE_GPU)
            json_object_set_new(o, "power_scope",
                                json_string(g->info.power_scope == PFI_POWER_SCOPE_MODULE
                                                ? "module"
                                                : "module_limits"));
        if (g->sampled && (g->last.have & PFI_GS_MODULE_POWER))
            json_object_set_new(o, "module_power_w", json_real(g->last.module_power_w));
        if (g->mismatch[0]) json_object_set_new(o, "job_mismatch", json_string(g->mismatch));
        if (g->shared) {
            json_object_set_new(o, "shared", json_true());
            json_object_set_new(o, "claimed_by", json_string(g->claimed_by));
        }
        if (g->info.mig == 1) json_object_set_new(o, "mig", json_true());
        if (g->info.minor >= 0) json_object_set_new(o, "minor", json_integer(g->info.minor));
        const pfi_gpu_sample *s = &g->last;
        if (g->sampled) {
            if (s->have & PFI_GS_CAP) json_object_set_new(o, "cap_w", json_real(s->cap_w));
            if (s->have & PFI_GS_ENFORCED)
                json_object_set_new(o, "enforced_w", json_real(s->enforced_w));
            if (s->have & PFI_GS_POWER) json_object_set_new(o, "power_w", json_real(s->power_w));
            if (s->have & PFI_GS_POWER_INSTANT)
                json_object_set_new(o, "power_instant_w", json_real(s->power_instant_w));
            if (s->have & PFI_GS_CLOCKS)
                json_object_set_new(o, "sm_clock_mhz", json_real(s->sm_clock_mhz));
            if (s->have & PFI_GS_UTIL)
                json_object_set_new(o, "util_gpu_pct", json_real(s->util_gpu_pct));
            if (s->have & PFI_GS_MEM)
                json_object_set_new(o, "fb_used_mib", json_real(s->fb_used_mib));
            json_object_set_new(o, "sampled_at", json_real(s->t_s));
        }
        json_object_set_new(o, "job_id", g->job_id[0] ? json_string(g->job_id) : json_null());
        for (size_t k = 0; k < a->lease.n; k++)
            if (!strcmp(a->lease.gpu[k].uuid, g->info.uuid) && a->lease.gpu[k].changed)
                json_object_set_new(o, "baseline_w", json_real(a->lease.gpu[k].baseline_w));
        const char *u = agent_gpu_usable(a, i) ? pfi_gpu_unsupported(a->gpu, i) : "";
        if (u && *u) json_object_set_new(o, "unsupported", json_string(u));
        json_array_append_new(gs, o);
    }
    json_t *js = node_jobs(a);
    double mono = pfi_clock_mono();
    int live = pfi_lease_live(&a->lease, mono);
    json_t *lease = live ? json_pack("{s:s,s:I,s:f,s:f}", "controller", a->lease.controller,
                                     "generation", (json_int_t)a->lease.generation, "expires_at",
                                     a->lease.expires_mono - mono + now, "expires_in_s",
                                     a->lease.expires_mono - mono)
                         : json_null();
    json_t *o = json_pack("{s:s,s:s,s:s,s:f,s:f,s:o,s:I,s:o,s:o}", "hostname", a->hostname,
                          "backend", pfi_gpu_backend(a->gpu), "version", PFI_VERSION, "time", now,
                          "time_scale", pfi_clock_scale(), "lease", lease, "generation_max",
                          (json_int_t)a->lease.generation_max, "gpus", gs, "jobs", js);
    json_object_set_new(o, "write_path",
                        json_string(a->write_path < 0    ? "read-only"
                                    : a->write_path == 0 ? "refused"
                                                         : "ok"));
    if (a->write_path == 0)
        json_object_set_new(o, "write_path_error", json_string(a->write_path_error));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* GET /v1/control: what a controller reads every period and nothing else, GPUs as
 * arrays [cap_min_w, cap_max_w, cap_w] instead of objects (a quarter of /v1/node's
 * bytes, a fifth of its JSON values to parse: at 12,500 agents parsing /v1/node was
 * most of the controller's CPU). Format: docs/agent.md. */
char *agent_render_control(agent *a)
{
    pfi_buf b = {0};
    pfi_buf_printf(&b, "{\"generation_max\":%lld,", (long long)a->lease.generation_max);
    if (a->fast_port > 0) pfi_buf_printf(&b, "\"fast_trigger_port\":%d,", a->fast_port);
    pfi_buf_printf(&b, "\"gpus\":[");
    for (size_t i = 0; i < a->n; i++) {
        const agent_gpu *g = &a->g[i];
        /* [cap_min_w, cap_max_w, cap_w, ceiling_w(, why not capped(,
           enforced_w))]; an
           unavailable GPU [null, null, null, null, state]: its job cannot be
           capped. The reason is one of agent_gpu_uncapped_reason's fixed
           words: no escaping needed */
        const char *nc = agent_gpu_uncapped_reason(a, i);
        if (!agent_gpu_usable(a, i)) {
            pfi_buf_printf(&b, "%s[null,null,null,null,\"%s\"]", i ? "," : "", nc);
            continue;
        }
        pfi_buf_printf(&b, "%s[", i ? "," : "");
        /* a range the device does not report (NaN) is null, never "nan" */
        for (int k = 0; k < 2; k++) {
            double v = k ? g->info.cap_max_w : g->info.cap_min_w;
            if (isfinite(v)) pfi_buf_printf(&b, "%.17g,", v);
            else pfi_buf_printf(&b, "null,");
        }
        if (g->sampled && (g->last.have & PFI_GS_CAP) && isfinite(g->last.cap_w))
            pfi_buf_printf(&b, "%.17g,", g->last.cap_w);
        else pfi_buf_printf(&b, "null,");
        double cw = agent_gpu_ceiling(a, i);
        if (isfinite(cw)) pfi_buf_printf(&b, "%.17g", cw);
        else pfi_buf_printf(&b, "null");
        if (nc) pfi_buf_printf(&b, ",\"%s\"", nc);
        /* the enforced limit, where one set out of band (BMC, power brake)
           holds the GPU below the cap: [.., ceiling_w, null, enforced_w]
           (issue 44: the controller counts the job at it and says so) */
        else if (g->limit_out_of_band && isfinite(g->last.enforced_w))
            pfi_buf_printf(&b, ",null,%.17g", g->last.enforced_w);
        pfi_buf_printf(&b, "]");
    }
    pfi_buf_printf(&b, "],\"jobs\":[");
    for (size_t k = 0; k < a->njobs; k++) {
        const agent_job *j = &a->job[k];
        /* job ids are validated where they enter ([A-Za-z0-9._-]): no escaping needed */
        pfi_buf_printf(&b, "%s{\"job_id\":\"%s\",\"gpus\":[", k ? "," : "", j->id);
        for (size_t q = 0; q < j->ngpus; q++) pfi_buf_printf(&b, "%s%zu", q ? "," : "", j->gpu[q]);
        pfi_buf_printf(&b, "],\"power_w\":%.17g", isfinite(j->power_w) ? j->power_w : 0.0);
        if (isfinite(j->tokens_per_s))
            pfi_buf_printf(&b, ",\"tokens_per_s\":%.17g", j->tokens_per_s);
        if (isfinite(j->pfi_pred)) pfi_buf_printf(&b, ",\"pfi_predicted\":%.17g", j->pfi_pred);
        if (isfinite(j->sm_clock_mhz))
            pfi_buf_printf(&b, ",\"sm_clock_mhz\":%.17g", j->sm_clock_mhz);
        if (isfinite(j->sm_active)) pfi_buf_printf(&b, ",\"sm_active\":%.17g", j->sm_active);
        if (j->tier >= 0) pfi_buf_printf(&b, ",\"tier\":%d", j->tier);
        pfi_buf_printf(&b, ",\"training_means\":{");
        static const int fm[] = {PFI_M_DRAM_ACTIVE, PFI_M_MEM_COPY_UTIL, PFI_M_PIPE_TENSOR_ACTIVE,
                                 PFI_M_SM_ACTIVE};
        int any = 0;
        for (size_t q = 0; q < sizeof fm / sizeof *fm; q++)
            if (isfinite(j->feat[fm[q]]))
                pfi_buf_printf(&b, "%s\"%s\":%.17g", any++ ? "," : "",
                               pfi_metric_get((pfi_metric)fm[q])->name, j->feat[fm[q]]);
        pfi_buf_printf(&b, "}}");
    }
    pfi_buf_printf(&b, "]}");
    return pfi_buf_take(&b, NULL);
}
