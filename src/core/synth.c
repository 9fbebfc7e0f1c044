/* synth.c — generating the reconstruction's raw runs (see synth.h). */
#include "synth.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steplog_push.h"
#include "util.h"

const pfi_metric pfi_synth_metrics[] = {
    PFI_M_GPU_UTIL,        PFI_M_MEM_COPY_UTIL,      PFI_M_FB_USED,
    PFI_M_POWER_USAGE,     PFI_M_SM_CLOCK,           PFI_M_MEM_CLOCK,
    PFI_M_GPU_TEMP,        PFI_M_GR_ENGINE_ACTIVE,   PFI_M_SM_ACTIVE,
    PFI_M_SM_OCCUPANCY,    PFI_M_PIPE_TENSOR_ACTIVE, PFI_M_DRAM_ACTIVE,
    PFI_M_NVLINK_TX_BYTES, PFI_M_NVLINK_RX_BYTES,    PFI_M_ENFORCED_LIMIT};
const int pfi_synth_nmetrics = (int)(sizeof pfi_synth_metrics / sizeof *pfi_synth_metrics);

/* timeline, in scrapes */
enum { WARMUP = 12, STARTUP = 6, TAIL = 6 };

void pfi_synth_opts_default(pfi_synth_opts *o)
{
    o->seed = 1;
    o->interval_s = 5;
    o->train_s = 1800;
    o->metric_mask = PFI_SYNTH_ALL;
}

int pfi_synth_gpus_per_host(const pfi_recon_group *g)
{
    return g->gpus < 8 ? g->gpus : 8;
}
int pfi_synth_hosts(const pfi_recon_group *g)
{
    return (g->gpus + 7) / 8;
}

void pfi_synth_host_name(const pfi_recon_group *g, int host, char *buf, size_t n)
{
    snprintf(buf, n, "%s-%05llx-%02d", strcmp(g->gpu_model, "H100") == 0 ? "a3-high" : "a3-ultra",
             (unsigned long long)(pfi_recon_key(g) & 0xfffff), host);
}

void pfi_synth_gpu_uuid(const pfi_recon_group *g, int host, int gpu, char *buf, size_t n)
{
    uint64_t a = pfi_mix64(pfi_recon_key(g) ^ ((uint64_t)host << 8) ^ (uint64_t)gpu);
    uint64_t b = pfi_mix64(a);
    snprintf(buf, n, "GPU-%08llx-%04llx-%04llx-%04llx-%012llx", (unsigned long long)(a >> 32),
             (unsigned long long)((a >> 16) & 0xffff), (unsigned long long)(a & 0xffff),
             (unsigned long long)(b >> 48), (unsigned long long)(b & 0xffffffffffffULL));
}

int64_t pfi_synth_run_start_ms(const pfi_recon_group *g, int run)
{
    /* 2026-06-01T00:00:00Z, a day slot per group, runs 40 minutes apart */
    int64_t base = 1780272000000LL;
    int64_t day = (int64_t)(pfi_recon_key(g) % 90);
    return base + day * 86400000LL + (int64_t)run * 2400000LL +
           (int64_t)(pfi_recon_key(g) % 600) * 1000;
}

/* a noise stream for (seed, group, run, stream id) */
static void seed_stream(gsl_rng *r, const pfi_synth_opts *o, const pfi_recon_group *g, int run,
                        uint64_t stream)
{
    uint64_t k = pfi_mix64(o->seed * 0x9e3779b97f4a7c15ULL ^ pfi_recon_key(g));
    k = pfi_mix64(k ^ ((uint64_t)run << 40) ^ stream);
    gsl_rng_set(r, (unsigned long)k);
}

/* v rounded to `decimals` decimal places, as the nearest double to that
 * decimal (integer / 10^d), so printing and parsing it back is exact */
static double q(double v, int decimals)
{
    static const double p10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    return (double)llround(v * p10[decimals]) / p10[decimals];
}

int pfi_synth_decimals(pfi_metric m)
{
    switch (m) {
    case PFI_M_GPU_UTIL:
    case PFI_M_MEM_COPY_UTIL:
    case PFI_M_FB_USED:
    case PFI_M_SM_CLOCK:
    case PFI_M_MEM_CLOCK:
    case PFI_M_GPU_TEMP:
    case PFI_M_NVLINK_TX_BYTES:
    case PFI_M_NVLINK_RX_BYTES: return 0;
    case PFI_M_POWER_USAGE:
    case PFI_M_ENFORCED_LIMIT: return 3;
    default: return 6;
    }
}

/* dcgm-exporter's printed resolution per metric */
static double quantize(pfi_metric m, double v)
{
    return q(v, pfi_synth_decimals(m));
}

static double rel_sd(pfi_metric m)
{
    switch (m) {
    case PFI_M_GPU_UTIL: return 0.004;
    case PFI_M_FB_USED: return 0.0005;
    case PFI_M_SM_CLOCK: return 0.003;
    case PFI_M_MEM_CLOCK:
    case PFI_M_ENFORCED_LIMIT: return 0;
    case PFI_M_GPU_TEMP: return 0.01;
    case PFI_M_POWER_USAGE: return 0.005;
    default: return 0.015;
    }
}

/* one run being generated: the group at one cap, its timeline in scrapes
 * and its noise */
typedef struct synth_run {
    const pfi_recon_group *g;
    const pfi_hw *hw;
    const pfi_synth_opts *o;
    int run;
    double cap;
    pfi_op op; /* the job at the cap (physmodel.c) */
    int hosts, gph;
    /* timeline: warm-up, start-up, training with an evaluation [ev0, ev1)
     * and a checkpoint [ck0, ck1) in it, tail; t0 the first scrape's
     * interval, iv the interval, ms */
    int ntrain, nscr, ev0, ev1, ck0, ck1;
    int64_t t0, iv;
    /* noise: the run's biases, the job's common noise per scrape and one
     * stream per GPU and metric (NULL: a metric not written) */
    double b_power, b_tokens, b_tel;
    double *com;
    gsl_rng **streams;
    size_t ngpu;
} synth_run;

/* the run's operating point at its cap and its timeline */
static pfi_status synth_plan(synth_run *sr, const pfi_recon_group *g, int run,
                             const pfi_synth_opts *o, pfi_error *err)
{
    memset(sr, 0, sizeof *sr);
    sr->g = g, sr->o = o, sr->run = run;
    sr->hw = g->hw ? g->hw : pfi_hw_get(g->gpu_model);
    if (!sr->hw)
        return pfi_errorf(err, PFI_EINVAL, "group %s: no hardware profile for %s", g->group,
                          g->gpu_model);
    if (run < 0 || run >= g->ncaps)
        return pfi_errorf(err, PFI_EINVAL, "group %s: no run %d", g->group, run);
    sr->cap = g->caps_w[run];
    pfi_phys_at_cap(sr->hw, &g->job, sr->cap, &sr->op);
    sr->hosts = pfi_synth_hosts(g), sr->gph = pfi_synth_gpus_per_host(g);
    sr->ngpu = (size_t)sr->hosts * (size_t)sr->gph;
    sr->iv = (int64_t)llround(o->interval_s * 1000);
    int ntrain = (int)llround(o->train_s / o->interval_s);
    if (ntrain < 12) ntrain = 12;
    sr->ntrain = ntrain;
    sr->nscr = WARMUP + STARTUP + ntrain + TAIL;
    sr->ev0 = WARMUP + STARTUP + ntrain / 3;
    sr->ev1 = sr->ev0 + (ntrain * 12 + 359) / 360; /* ~1 min at 30 min */
    sr->ck0 = WARMUP + STARTUP + (2 * ntrain) / 3;
    sr->ck1 = sr->ck0 + (ntrain * 6 + 359) / 360; /* ~30 s */
    sr->t0 = pfi_synth_run_start_ms(g, run);
    sr->t0 -= sr->t0 % sr->iv; /* hosts scrape out of phase, but within the same interval */
    return PFI_OK;
}

static void synth_noise_dispose(synth_run *sr)
{
    if (sr->streams)
        for (size_t i = 0; i < sr->ngpu * PFI_M_COUNT; i++)
            if (sr->streams[i]) gsl_rng_free(sr->streams[i]);
    free(sr->streams);
    free(sr->com);
}

/* the run's noise, each part from its own stream of (seed, group, run) */
static pfi_status synth_noise(synth_run *sr, pfi_error *err)
{
    const pfi_synth_opts *o = sr->o;
    gsl_rng *r_run = gsl_rng_alloc(gsl_rng_taus2), *r_com = gsl_rng_alloc(gsl_rng_taus2);
    sr->com = malloc((size_t)sr->nscr * sizeof *sr->com);
    /* per-GPU per-metric noise: each stream drawn in scrape order */
    sr->streams = calloc(sr->ngpu * PFI_M_COUNT, sizeof *sr->streams);
    pfi_status st = PFI_OK;
    if (!r_run || !r_com || !sr->com || !sr->streams) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    seed_stream(r_run, o, sr->g, sr->run, 1);
    sr->b_power = gsl_ran_gaussian_ziggurat(r_run, 0.004);
    sr->b_tokens = gsl_ran_gaussian_ziggurat(r_run, 0.005);
    sr->b_tel = gsl_ran_gaussian_ziggurat(r_run, 0.005);
    seed_stream(r_com, o, sr->g, sr->run, 2);
    for (int k = 0; k < sr->nscr; k++) sr->com[k] = gsl_ran_gaussian_ziggurat(r_com, 0.005);
    for (size_t gi = 0; gi < sr->ngpu && !st; gi++)
        for (int m = 0; m < PFI_M_COUNT; m++) {
            if (!(o->metric_mask & (1UL << m))) continue;
            gsl_rng *s = gsl_rng_alloc(gsl_rng_taus2);
            if (!s) {
                st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
                break;
            }
            seed_stream(s, o, sr->g, sr->run, 1000 + gi * 64 + (uint64_t)m);
            sr->streams[gi * PFI_M_COUNT + (size_t)m] = s;
        }
out:
    if (r_run) gsl_rng_free(r_run);
    if (r_com) gsl_rng_free(r_com);
    return st;
}

/* each metric's value at scrape k before noise, by the phase the run is
 * in; returns whether the power takes training's noise (0: idle phases) */
static int phase_base(const synth_run *sr, int k, double *base)
{
    const pfi_hw *hw = sr->hw;
    double idle = hw->idle_w;
    memcpy(base, sr->op.dcgm, PFI_M_COUNT * sizeof *base);
    if (k < WARMUP || k >= WARMUP + STARTUP + sr->ntrain || k < WARMUP + STARTUP) {
        for (int m = 0; m < PFI_M_COUNT; m++) base[m] = 0;
        base[PFI_M_MEM_CLOCK] = hw->mem_clock_mhz;
        base[PFI_M_ENFORCED_LIMIT] = sr->cap;
        base[PFI_M_SM_CLOCK] = 345;
        base[PFI_M_GPU_TEMP] = 33;
        if (k < WARMUP) {
            base[PFI_M_FB_USED] = 600 + 700.0 * k;
            base[PFI_M_POWER_USAGE] = idle + 8;
        } else {
            base[PFI_M_FB_USED] = sr->g->job.fb_mib;
            base[PFI_M_POWER_USAGE] = idle + (k < WARMUP + STARTUP ? 25 : 20);
        }
        return 0;
    }
    if (k >= sr->ev0 && k < sr->ev1) { /* evaluation: forward passes only */
        base[PFI_M_GPU_UTIL] = 72;
        base[PFI_M_POWER_USAGE] = 0.62 * sr->op.power_w;
        for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_NVLINK_RX_BYTES; m++) base[m] *= 0.6;
        base[PFI_M_MEM_COPY_UTIL] *= 0.6;
    } else if (k >= sr->ck0 && k < sr->ck1) { /* checkpoint: GPUs wait on storage */
        base[PFI_M_GPU_UTIL] = 4;
        base[PFI_M_POWER_USAGE] = idle + 35;
        for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_NVLINK_RX_BYTES; m++) base[m] *= 0.04;
        base[PFI_M_MEM_COPY_UTIL] *= 0.04;
    }
    return 1;
}

/* metric m's value val at scrape k with its noise e (this scrape's draw of
 * its stream), at dcgm-exporter's resolution */
static double noisy(const synth_run *sr, pfi_metric m, double val, double e, int k,
                    int phase_power_noise)
{
    if (m == PFI_M_POWER_USAGE) {
        if (phase_power_noise) val *= (1 + sr->b_power) * (1 + sr->com[k] + 0.005 * e);
        else val *= 1 + 0.01 * e;
    } else if (m == PFI_M_GPU_UTIL) {
        val = val * (1 + rel_sd(m) * e);
        if (val > 100) val = 100;
    } else {
        val *= (1 + rel_sd(m) * e) * ((m >= PFI_M_GR_ENGINE_ACTIVE && m <= PFI_M_NVLINK_RX_BYTES) ||
                                              m == PFI_M_MEM_COPY_UTIL
                                          ? 1 + sr->b_tel
                                          : 1);
    }
    if (val < 0) val = 0;
    return quantize(m, val);
}

/* every host's scrapes, in time order */
static pfi_status write_scrapes(const synth_run *sr, const pfi_synth_sink *sink, pfi_error *err)
{
    int gph = sr->gph;
    double *v = malloc((size_t)gph * PFI_M_COUNT * sizeof *v);
    if (!v) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    pfi_status st = PFI_OK;
    for (int k = 0; k < sr->nscr && !st; k++) {
        for (int h = 0; h < sr->hosts && !st; h++) {
            int64_t t = sr->t0 + (int64_t)k * sr->iv + 300 + 600 * h; /* hosts out of phase */
            for (int gl = 0; gl < gph; gl++) {
                size_t gi = (size_t)h * (size_t)gph + (size_t)gl;
                double *x = v + (size_t)gl * PFI_M_COUNT;
                for (int m = 0; m < PFI_M_COUNT; m++) x[m] = NAN;
                double base[PFI_M_COUNT];
                int phase_power_noise = phase_base(sr, k, base);
                for (int m = 0; m < PFI_M_COUNT; m++) {
                    gsl_rng *s = sr->streams[gi * PFI_M_COUNT + (size_t)m];
                    if (!s) continue;
                    /* drawn every scrape: streams stay aligned */
                    double e = gsl_ran_gaussian_ziggurat(s, 1.0);
                    x[m] = noisy(sr, (pfi_metric)m, base[m], e, k, phase_power_noise);
                }
            }
            st = sink->scrape(sink->ud, h, t, v, gph, err);
        }
    }
    free(v);
    return st;
}

/* the step log: tokens per step fixed (global batch); the step time varies */
static pfi_status write_steps(const synth_run *sr, const pfi_synth_sink *sink, pfi_error *err)
{
    const pfi_recon_group *g = sr->g;
    const pfi_hw *hw = sr->hw;
    int64_t t0 = sr->t0, iv = sr->iv;
    gsl_rng *r_step = gsl_rng_alloc(gsl_rng_taus2);
    if (!r_step) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    double t_unc = sr->op.tokens_per_s; /* at this cap */
    double tps_ref = g->job.tokens_per_s_ref > 0 ? g->job.tokens_per_s_ref : t_unc;
    double tokens_per_step = pow(2, round(log2(tps_ref * 0.85 * 4.0))); /* ~4 s per step uncapped */
    double ts = (double)(t0 + (int64_t)(WARMUP + STARTUP) * iv + 2000) / 1000.0;
    double t_end = (double)(t0 + (int64_t)(WARMUP + STARTUP + sr->ntrain) * iv) / 1000.0;
    double ev_a = (double)(t0 + (int64_t)sr->ev0 * iv) / 1000.0,
           ev_b = (double)(t0 + (int64_t)sr->ev1 * iv) / 1000.0;
    double ck_a = (double)(t0 + (int64_t)sr->ck0 * iv) / 1000.0,
           ck_b = (double)(t0 + (int64_t)sr->ck1 * iv) / 1000.0;
    seed_stream(r_step, sr->o, g, sr->run, 3);
    long step = 0;
    pfi_status st = PFI_OK;
    while (ts < t_end && !st) {
        double e = gsl_ran_gaussian_ziggurat(r_step, 0.01);
        double dt = tokens_per_step / (sr->op.tokens_per_s * (1 + sr->b_tokens)) * (1 + e);
        double tend = ts + dt;
        if (ts >= ev_a && ts < ev_b) { /* evaluation: no training steps are logged */
            ts = ev_b;
            continue;
        }
        if (tend > ck_a && ts < ck_b)
            tend += ck_b - ck_a; /* the step that includes the checkpoint */
        double tps = q(tokens_per_step / (tend - ts), 2);
        double mfu = q(tps * g->job.flops_per_token / (hw->bf16_dense_tflops * 1e12 * g->gpus), 4);
        double tflops = q(mfu * hw->bf16_dense_tflops, 1);
        double t_log = q(tend, 3);
        if (t_log >= t_end) break;
        st = sink->step(sink->ud, t_log, tps, mfu, tflops, step++, err);
        ts = tend;
    }
    gsl_rng_free(r_step);
    return st;
}

pfi_status pfi_synth_run(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                         const pfi_synth_sink *sink, pfi_error *err)
{
    synth_run sr;
    pfi_status st = synth_plan(&sr, g, run, o, err);
    if (st) return st;
    if (!(st = synth_noise(&sr, err)) && !(st = write_scrapes(&sr, sink, err)) && sink->step)
        st = write_steps(&sr, sink, err);
    synth_noise_dispose(&sr);
    return st;
}

/* ---- the summary path ---- */

typedef struct summ_ctx {
    pfi_bins *bins;
    int *gpu_index; /* [host * gph + gpu] */
    int gph;
    pfi_steplog steps;
} summ_ctx;

static pfi_status summ_scrape(void *ud, int host, int64_t t_ms, const double *v, int ngpus,
                              pfi_error *err)
{
    summ_ctx *c = ud;
    /* the same metric-major order as a text file: GPU indices are assigned the same way */
    for (int mi = 0; mi < pfi_synth_nmetrics; mi++) {
        pfi_metric m = pfi_synth_metrics[mi];
        for (int gl = 0; gl < ngpus; gl++) {
            double x = v[(size_t)gl * PFI_M_COUNT + m];
            if (isnan(x)) continue;
            int gi = c->gpu_index[host * c->gph + gl];
            pfi_status st = pfi_bins_add(c->bins, gi, m, t_ms, x, err);
            if (st) return st;
        }
    }
    return PFI_OK;
}

static pfi_status summ_step(void *ud, double t_s, double tps, double mfu, double tflops, long step,
                            pfi_error *err)
{
    summ_ctx *c = ud;
    return pfi_steplog_push(&c->steps, t_s, tps, mfu, tflops, NAN, (double)step, err);
}

static char *dupstr(const char *s)
{
    return s && s[0] ? strdup(s) : NULL;
}
/* a copy dupstr should have made, lost to out of memory */
static int lost(const char *s, const char *copy)
{
    return s && s[0] && !copy;
}

pfi_status pfi_synth_manifest(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                              pfi_manifest *m, pfi_error *err)
{
    memset(m, 0, sizeof *m);
    m->group = dupstr(g->group);
    m->gpu_model = dupstr(g->gpu_model);
    m->arch = dupstr(g->arch);
    m->task = dupstr(g->task);
    m->model = dupstr(g->model);
    m->split = dupstr(g->split);
    m->gpus = g->gpus;
    m->cap_w = g->caps_w[run];
    m->interval_s = o->interval_s;
    int hosts = pfi_synth_hosts(g);
    m->hosts = calloc((size_t)hosts, sizeof *m->hosts);
    m->tel = calloc((size_t)hosts, sizeof *m->tel);
    m->meta = calloc(6, sizeof *m->meta);
    if (!m->group || !m->gpu_model || !m->hosts || !m->tel || !m->meta) {
        pfi_manifest_dispose(m);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    for (int h = 0; h < hosts; h++) {
        char name[64], path[96];
        pfi_synth_host_name(g, h, name, sizeof name);
        snprintf(path, sizeof path, "dcgm-%s.prom", name);
        m->hosts[m->nhosts++] = strdup(name);
        m->tel[m->ntel].path = strdup(path);
        m->tel[m->ntel].host = strdup(name);
        m->tel[m->ntel].format = PFI_TEL_PROMETHEUS;
        m->ntel++;
    }
    m->steplog = strdup("steps.jsonl");
    char buf[64];
    const char *keys[] = {"provenance", "seq_len", "batch", "ep", "compile"};
    for (int k = 0; k < 5; k++) {
        const char *val = buf;
        if (k == 0) val = "reconstruction calibrated to published tables";
        else if (k == 1) snprintf(buf, sizeof buf, "%d", g->seq_len);
        else if (k == 2) snprintf(buf, sizeof buf, "%d", g->batch);
        else if (k == 3) snprintf(buf, sizeof buf, "%d", g->ep);
        else {
            if (g->compile < 0) continue;
            snprintf(buf, sizeof buf, "%s", g->compile ? "true" : "false");
        }
        m->meta[m->nmeta].key = strdup(keys[k]);
        m->meta[m->nmeta].value = strdup(val);
        m->nmeta++;
    }
    int bad = !m->steplog || lost(g->arch, m->arch) || lost(g->task, m->task) ||
              lost(g->model, m->model) || lost(g->split, m->split);
    for (size_t i = 0; i < m->nhosts; i++)
        bad |= !m->hosts[i] || !m->tel[i].path || !m->tel[i].host;
    for (size_t i = 0; i < m->nmeta; i++) bad |= !m->meta[i].key || !m->meta[i].value;
    if (bad) {
        pfi_manifest_dispose(m);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    return PFI_OK;
}

pfi_status pfi_synth_summary(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                             pfi_run_summary *out, pfi_error *err)
{
    memset(out, 0, sizeof *out);
    pfi_protocol_opts po;
    pfi_protocol_opts_default(&po);
    po.interval_s = o->interval_s;
    summ_ctx c;
    memset(&c, 0, sizeof c);
    c.gph = pfi_synth_gpus_per_host(g);
    int hosts = pfi_synth_hosts(g);
    c.bins = pfi_bins_new(&po);
    c.gpu_index = malloc((size_t)(hosts * c.gph) * sizeof *c.gpu_index);
    pfi_status st = PFI_OK;
    if (!c.bins || !c.gpu_index) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (int h = 0; h < hosts; h++)
        for (int gl = 0; gl < c.gph; gl++) {
            char uuid[64];
            pfi_synth_gpu_uuid(g, h, gl, uuid, sizeof uuid);
            c.gpu_index[h * c.gph + gl] = pfi_bins_gpu(c.bins, uuid, strlen(uuid));
        }
    pfi_synth_sink sink = {summ_scrape, summ_step, &c};
    if ((st = pfi_synth_run(g, run, o, &sink, err))) goto out;
    if ((st = pfi_synth_manifest(g, run, o, &out->m, err))) goto out;
    char name[160];
    snprintf(name, sizeof name, "%s/%s/%gW", g->gpu_model, g->group, g->caps_w[run]);
    out->name = strdup(name);
    st = out->name ? pfi_summarize_run(c.bins, &c.steps, &po, out, NULL, err)
                   : pfi_errorf(err, PFI_ENOMEM, "out of memory");
out:
    if (st) pfi_run_summary_dispose(out);
    pfi_bins_free(c.bins);
    free(c.gpu_index);
    pfi_steplog_dispose(&c.steps);
    return st;
}
