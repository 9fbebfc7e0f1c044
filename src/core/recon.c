/* recon.c — family priors of the reconstruction (see recon.h and
 * docs/model.md, "priors"). Every number here is a modelling choice stated
 * in the docs; none is fitted per group except phi and sm_w. */
#include "recon.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void pfi_recon_dispose(pfi_recon *r)
{
    free(r->g);
    r->g = NULL;
    r->n = 0;
}

uint64_t pfi_recon_key(const pfi_recon_group *g)
{
    return pfi_hash_str(g->group, pfi_hash_str(g->gpu_model, 0x5eed));
}

pfi_recon_group *pfi_recon_find(pfi_recon *r, const char *group, const char *gpu_model)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->g[i].group, group) == 0 && strcmp(r->g[i].gpu_model, gpu_model) == 0)
            return &r->g[i];
    return NULL;
}

/* deterministic per-group variation in [-1, 1] for a named factor: job
 * properties the tables do not determine (drawn once, documented) */
static double jitter(const pfi_recon_group *g, const char *what)
{
    uint64_t h = pfi_hash_str(what, pfi_recon_key(g));
    return (double)(h >> 11) / 4503599627370496.0 - 1.0;
}

void pfi_recon_apply_priors(pfi_recon_group *g)
{
    pfi_job *j = &g->job;
    int moe = strcmp(g->arch, "moe") == 0, ft = strcmp(g->task, "ft") == 0;
    j->gpus = g->gpus;
    if (!g->hw) g->hw = pfi_hw_get(g->gpu_model);
    /* Split of the clock-independent time 1 - phi: MoE expert dispatch and
     * LoRA fine-tuning are DRAM-bound; dense GEMM-dominated training spends
     * its clock-independent time mostly in communication, host work and
     * latency-bound kernels. */
    double mem_share = moe ? 0.78 + 0.06 * jitter(g, "mem") : 0.12 + 0.06 * jitter(g, "mem");
    if (ft) mem_share += moe ? 0.10 : 0.08;  /* LoRA streams frozen weights */
    if (moe && g->ep > 1) mem_share -= 0.08; /* expert parallelism: all-to-all time */
    double rest = 1.0 - j->phi;
    if (rest < 0) rest = 0;
    j->mu = rest * mem_share;
    j->kappa = rest - j->mu;
    j->beta = 0.8;
    /* FLOPs per token: 6 N_active for pretraining; LoRA fine-tuning skips
     * the frozen weights' gradients: forward 2N + backward-through-
     * activations 2N = 4 N_active (the rank-32 adapters are negligible). */
    j->flops_per_token = (ft ? 4.0 : 6.0) * g->active_params_b * 1e9;
    /* MFU at the uncapped point by family; torch.compile +8%, each GPU
     * doubling beyond 8 -5% (communication) */
    double mfu = moe ? (ft ? 0.11 : 0.17) : (ft ? 0.30 : 0.40);
    if (g->compile == 1) mfu *= 1.08;
    for (int k = g->gpus; k > 8; k /= 2) mfu *= 0.95;
    mfu *= 1 + 0.05 * jitter(g, "mfu");
    g->mfu_uncapped = mfu;
    /* telemetry-only properties */
    j->tensor_eff = (moe ? 0.42 : 0.62) * (1 + 0.12 * jitter(g, "tensor"));
    j->occupancy = (moe ? 0.22 : 0.31) * (1 + 0.15 * jitter(g, "occ"));
    j->copy_gain = 115 * (1 + 0.12 * jitter(g, "copy"));
    j->host_idle = (ft ? 0.04 : 0.02) * (1 + 0.5 * jitter(g, "host"));
    double fb_frac = (ft ? 0.58 : 0.76) + 0.10 * jitter(g, "fb");
    j->fb_mib = g->hw ? fb_frac * g->hw->fb_mib : 60000;
    j->nvlink_bps = (g->ep > 1 ? 120e9 : 70e9) * (1 + 0.15 * jitter(g, "nvl"));
    /* reference throughput: the uncapped point (700 W) has the prior MFU;
     * T_ref is the throughput at the maximum clock */
    if (g->hw && j->phi > 0 && j->sm_w > 0) {
        pfi_op op;
        j->tokens_per_s_ref = 1.0;
        pfi_phys_at_cap(g->hw, j, g->hw->tdp_w, &op);
        double t_unc = mfu * g->gpus * g->hw->bf16_dense_tflops * 1e12 / j->flops_per_token;
        j->tokens_per_s_ref = t_unc / op.tokens_per_s;
    }
}

pfi_status pfi_recon_draw_fleet(const pfi_recon *base, size_t n, uint64_t seed, pfi_recon *out,
                                pfi_error *err)
{
    out->n = 0;
    out->g = calloc(n ? n : 1, sizeof *out->g);
    if (!out->g) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    size_t nh = 0;
    for (size_t i = 0; i < base->n; i++)
        nh += strcmp(base->g[i].split, "headline") == 0 && base->g[i].calibrated;
    if (nh == 0) {
        free(out->g);
        out->g = NULL;
        return pfi_errorf(err, PFI_EINVAL, "no calibrated headline groups to draw a fleet from");
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    if (!rng) {
        free(out->g);
        out->g = NULL;
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    gsl_rng_set(rng, (unsigned long)pfi_mix64(seed ^ 0xf1ee7ULL));
    static const int gpu_choices[] = {8, 8, 8, 16, 16, 32};
    for (size_t k = 0; k < n; k++) {
        /* a template group, uniformly among the calibrated headline groups */
        size_t pick = (size_t)gsl_rng_uniform_int(rng, (unsigned long)nh), seen = 0, t = 0;
        for (size_t i = 0; i < base->n; i++)
            if (strcmp(base->g[i].split, "headline") == 0 && base->g[i].calibrated &&
                seen++ == pick) {
                t = i;
                break;
            }
        pfi_recon_group *g = &out->g[k];
        *g = base->g[t];
        snprintf(g->group, sizeof g->group, "fleet-%05zu-%.60s", k % 100000, base->g[t].group);
        snprintf(g->split, sizeof g->split, "fleet");
        g->gpus = gpu_choices[gsl_rng_uniform_int(rng, 6)];
        double phi = base->g[t].job.phi + gsl_ran_gaussian_ziggurat(rng, 0.06);
        g->job.phi = fmin(0.99, fmax(0.12, phi));
        g->job.sm_w = base->g[t].job.sm_w * (1 + gsl_ran_gaussian_ziggurat(rng, 0.05));
        g->pfi_target = g->pfi4_target = NAN;
        /* the fleet's grid: the 8-GPU grid for every job */
        static const double caps[] = {200, 300, 400, 500, 600, 700};
        memcpy(g->caps_w, caps, sizeof caps);
        g->ncaps = 6;
        pfi_recon_apply_priors(g);
        out->n++;
    }
    gsl_rng_free(rng);
    return PFI_OK;
}
