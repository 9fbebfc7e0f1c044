/* agent_baseline.c — the limit each GPU had before pfi touched it (its
 * baseline) and what follows from it (docs/agent.md, "Baselines, ceilings
 * and drift"):
 *
 *  - the baselines file, STATE.baselines: each GPU's limit as first seen
 *    while pfi held no cap on it, one entry per UUID, written atomically
 *    (never in place), only when an entry is new or an admin changed the
 *    limit, never from a limit pfi set. A corrupt or lost state file can
 *    then still restore an admin's own limit instead of the default.
 *  - the ceiling: no cap above a GPU's baseline (the saved baseline while
 *    pfi holds a cap, else the limit in force), reported to the controller
 *    and enforced on every PUT.
 *  - drift: each sample's management limit against the cap pfi set. Below
 *    it: an admin lowered it, adopted as the baseline (never raised back).
 *    Above it while a lease holds: a reset or another tool, re-applied; 3
 *    re-applies within 60 s make the GPU "contested" and pfi stops. No cap
 *    held and the limit moved: an admin's new baseline. Each logged once.
 *    The enforced limit (BMC, firmware) is agent_check_enforced's, never
 *    fought. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "clock.h"
#include "state_file.h"

#define DRIFT_TOL_W 1.0
#define REAPPLY_WINDOW_S 60.0

const char *agent_drift_kind_name(int k)
{
    static const char *n[AGENT_DRIFT_KINDS] = {"lowered", "raised", "contested", "baseline",
                                               "reset"};
    return k >= 0 && k < AGENT_DRIFT_KINDS ? n[k] : "unknown";
}

static void baselines_path(const agent *a, char *p, size_t n)
{
    snprintf(p, n, "%s.baselines", a->cfg.state_file);
}

void agent_baselines_load(agent *a)
{
    char path[4200], *text = NULL;
    size_t len = 0;
    int found = 0;
    pfi_error e;
    a->nbase = 0;
    baselines_path(a, path, sizeof path);
    if (pfi_state_file_read(path, 1 << 20, &text, &len, &found, &e)) {
        agent_log(a, "warning: %s: %s; the admins' limits are taken anew", path, e.msg);
        return;
    }
    if (!found) return;
    json_t *o = NULL;
    if (pfi_state_json_open(text, len, path, &o, &e)) {
        agent_log(a, "warning: %s; the admins' limits are taken anew", e.msg);
        json_decref(o);
        free(text);
        return;
    }
    free(text);
    const char *uuid;
    json_t *v;
    json_object_foreach(json_object_get(o, "gpus"), uuid, v)
    {
        double w = json_number_value(json_object_get(v, "limit_w"));
        if (a->nbase == AGENT_MAX_GPUS * 2 || !isfinite(w) || w <= 0 || strlen(uuid) >= 96)
            continue;
        snprintf(a->base[a->nbase].uuid, sizeof a->base[0].uuid, "%s", uuid);
        a->base[a->nbase++].limit_w = w;
    }
    json_decref(o);
}

static int baselines_store(agent *a)
{
    char path[4200];
    pfi_error e;
    baselines_path(a, path, sizeof path);
    json_t *g = json_object();
    for (size_t k = 0; k < a->nbase; k++)
        json_object_set_new(g, a->base[k].uuid, json_pack("{s:f}", "limit_w", a->base[k].limit_w));
    json_t *o = json_pack("{s:i,s:o}", "format_version", 1, "gpus", g);
    char *t = json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
    json_decref(o);
    int rc = 0;
    if (!t || pfi_state_file_write(path, t, &e)) {
        agent_log(a, "error: cannot write %s: %s", path, t ? e.msg : "out of memory");
        rc = -1;
    }
    free(t);
    return rc;
}

double agent_baseline_known(const agent *a, const char *uuid)
{
    for (size_t k = 0; k < a->nbase; k++)
        if (!strcmp(a->base[k].uuid, uuid)) return a->base[k].limit_w;
    return NAN;
}

/* the admin's limit of uuid is w (first sight, or changed while pfi held no cap) */
static void baseline_note(agent *a, const char *uuid, double w)
{
    if (!uuid[0] || !isfinite(w)) return;
    size_t k = 0;
    while (k < a->nbase && strcmp(a->base[k].uuid, uuid)) k++;
    if (k < a->nbase && fabs(a->base[k].limit_w - w) < 0.5) return;
    if (k == a->nbase) {
        if (a->nbase == AGENT_MAX_GPUS * 2) return;
        /* uuid is a GPU's own (a->g[i].info.uuid): copied, never overlapping */
        char *dst = a->base[a->nbase++].uuid;
        size_t len = strnlen(uuid, sizeof a->base[0].uuid - 1);
        memmove(dst, uuid, len);
        dst[len] = '\0';
    }
    a->base[k].limit_w = w;
    baselines_store(a);
}

/* the saved entry of GPU i while pfi holds a cap on it, else NULL */
static pfi_lease_gpu *held(agent *a, size_t i)
{
    for (size_t k = 0; k < a->lease.n; k++)
        if (a->lease.gpu[k].changed && !strcmp(a->lease.gpu[k].uuid, a->g[i].info.uuid))
            return &a->lease.gpu[k];
    return NULL;
}

void agent_baselines_first_sight(agent *a)
{
    if (a->cfg.read_only) return;
    for (size_t i = 0; i < a->n; i++) {
        double w;
        if (!agent_gpu_usable(a, i) || held(a, i)) continue;
        if (pfi_gpu_limit_get(a->gpu, i, &w, NULL) == PFI_OK)
            baseline_note(a, a->g[i].info.uuid, w);
    }
}

const char *agent_gpu_not_capped(const agent *a, size_t i)
{
    const agent_gpu *g = &a->g[i];
    if (g->info.mig == 1) return "mig"; /* one cap would hit every instance's tenant */
    if (g->shared) return "shared";     /* one job's cap would throttle the other */
    if (g->info.power_scope != PFI_POWER_SCOPE_GPU) return "module_scope"; /* GH200, GB200 */
    return NULL;
}

const char *agent_gpu_uncapped_reason(const agent *a, size_t i)
{
    return !agent_gpu_usable(a, i) ? agent_gpu_state(a, i) : agent_gpu_not_capped(a, i);
}

double agent_gpu_ceiling(agent *a, size_t i)
{
    /* a GPU pfi never caps (MIG, shared, module scope: agent_gpu_not_capped)
       has no ceiling: the controller takes its draw as load it cannot shed */
    if (!agent_gpu_usable(a, i) || agent_gpu_not_capped(a, i)) return NAN;
    const pfi_lease_gpu *lg = held(a, i);
    if (lg) return lg->baseline_w;
    /* no cap held: the admin's limit as last seen (a sample may still show
       a cap pfi has just lifted) */
    double known = agent_baseline_known(a, a->g[i].info.uuid);
    if (isfinite(known)) return known;
    const agent_gpu *g = &a->g[i];
    if (g->sampled && (g->last.have & PFI_GS_CAP)) return g->last.cap_w;
    return NAN;
}

int agent_gpu_usable(const agent *a, size_t i)
{
    return i < a->n && a->g[i].avail == PFI_GPU_OK && a->g[i].info.uuid[0];
}

/* A limit that fell to the GPU's default (+-1 W) is a GPU reset, not an
 * administrator's lowering, only where something corroborates it: the
 * GPU's energy counter went back, or the GPU was unavailable since the last
 * sample (a reboot is the boot id's: agent_startup_state). On SKUs whose
 * default is below their maximum (DGX B200: 700 of 1000 W) a reset lands
 * below pfi's cap, and adopting it would lose the admin's limit for good.
 * Then: with a live lease pfi's cap is re-applied, without one the saved
 * baseline is set. 1 when it was handled so. */
static int after_reset(agent *a, size_t i, double limit, pfi_lease_gpu *lg)
{
    agent_gpu *g = &a->g[i];
    double def = g->info.cap_default_w;
    if (!g->reset_hint || !isfinite(def) || fabs(limit - def) >= DRIFT_TOL_W) return 0;
    double w = a->lease.active ? lg->cap_w : lg->baseline_w;
    pfi_error e;
    a->drift[AGENT_DRIFT_RESET]++;
    if (pfi_gpu_set_cap(a->gpu, i, w, &e)) {
        agent_log(a, "error: GPU %zu %s: reset to its default %.0f W; setting %.0f W failed: %s", i,
                  g->info.uuid, limit, w, e.msg);
        return 1;
    }
    g->cap_gen++;
    agent_log(a,
              "warning: GPU %zu %s: its limit fell to its default %.0f W after a GPU reset (%s): "
              "%s %.0f W set again",
              i, g->info.uuid, limit,
              g->reset_hint == 2 ? "its energy counter went back" : "it was unavailable",
              a->lease.active ? "pfi's cap" : "its baseline", w);
    if (!a->lease.active) {
        lg->changed = 0;
        lg->cap_w = lg->baseline_w;
        agent_save_state(a);
    }
    return 1;
}

void agent_check_drift(agent *a, size_t i, unsigned gen_at_sample)
{
    agent_gpu *g = &a->g[i];
    if (a->cfg.read_only || !agent_gpu_usable(a, i) || !g->sampled ||
        !(g->last.have & PFI_GS_CAP) || gen_at_sample != g->cap_gen)
        return; /* a cap was set since the sample was taken: it shows the old one */
    double limit = g->last.cap_w;
    pfi_lease_gpu *lg = held(a, i);
    if (!lg) {
        /* no cap of pfi's: the limit in force is the admin's */
        double known = agent_baseline_known(a, g->info.uuid);
        if (isfinite(known) && fabs(known - limit) >= DRIFT_TOL_W) {
            agent_log(a, "GPU %zu %s: limit changed out of band, %.0f -> %.0f W: its new baseline",
                      i, g->info.uuid, known, limit);
            a->drift[AGENT_DRIFT_BASELINE]++;
        }
        baseline_note(a, g->info.uuid, limit);
        g->contested = 0;
        return;
    }
    if (!isfinite(lg->cap_w)) return;
    if (limit < lg->cap_w - DRIFT_TOL_W && after_reset(a, i, limit, lg)) return;
    if (limit < lg->cap_w - DRIFT_TOL_W) {
        /* an admin lowered it below our cap: their limit is the new baseline and ceiling */
        agent_log(a,
                  "warning: GPU %zu %s: limit lowered out of band to %.0f W, below pfi's cap "
                  "%.0f W: adopted as its baseline and ceiling (baseline was %.0f W)",
                  i, g->info.uuid, limit, lg->cap_w, lg->baseline_w);
        a->drift[AGENT_DRIFT_LOWERED]++;
        lg->baseline_w = limit;
        lg->cap_w = limit;
        lg->changed = 0; /* at its baseline: nothing of pfi's to restore */
        baseline_note(a, g->info.uuid, limit);
        agent_save_state(a);
        return;
    }
    if (limit <= lg->cap_w + DRIFT_TOL_W || !a->lease.active || g->contested) return;
    /* above our cap while a lease holds: a GPU reset, nvidia-smi -pl, DCGM's
       enforcement or a driver reload. Re-applied, up to 3 times a minute. */
    double now = pfi_wall_monotonic();
    int recent = 0;
    for (int k = 0; k < 3; k++)
        recent += g->reapply_t[k] > 0 && now - g->reapply_t[k] < REAPPLY_WINDOW_S;
    if (recent >= 3) {
        g->contested = 1;
        a->drift[AGENT_DRIFT_CONTESTED]++;
        agent_log(a,
                  "error: GPU %zu %s: contested: its limit went back to %.0f W three times within "
                  "%.0f s after pfi set %.0f W; pfi stops re-applying it (another tool sets it)",
                  i, g->info.uuid, limit, REAPPLY_WINDOW_S, lg->cap_w);
        return;
    }
    memmove(&g->reapply_t[1], &g->reapply_t[0], 2 * sizeof g->reapply_t[0]);
    g->reapply_t[0] = now;
    a->drift[AGENT_DRIFT_RAISED]++;
    pfi_error e;
    int reset =
        isfinite(g->info.cap_default_w) && fabs(limit - g->info.cap_default_w) < DRIFT_TOL_W;
    if (pfi_gpu_set_cap(a->gpu, i, lg->cap_w, &e))
        agent_log(
            a,
            "error: GPU %zu %s: limit raised out of band to %.0f W; re-applying %.0f W failed: %s",
            i, g->info.uuid, limit, lg->cap_w, e.msg);
    else {
        g->cap_gen++;
        if (recent == 0) /* once per episode */
            agent_log(a,
                      "warning: GPU %zu %s: limit raised out of band to %.0f W%s while pfi's cap "
                      "%.0f W is held: re-applied",
                      i, g->info.uuid, limit, reset ? " (its default: a reset?)" : "", lg->cap_w);
    }
}

void agent_check_modes(agent *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i) && a->g[i].info.mig == 1)
            agent_log(a,
                      "GPU %zu %s: MIG mode is enabled: left at its baseline (one cap would cover "
                      "every instance's tenant); the controller counts its draw as fixed",
                      i, a->g[i].info.uuid);
    for (size_t i = 0; i < a->n; i++)
        if (agent_gpu_usable(a, i) && a->g[i].info.power_scope != PFI_POWER_SCOPE_GPU)
            agent_log(a,
                      "GPU %zu %s: its power is governed at module scope (%s): pfi does not cap "
                      "it (its GPU-scope limit would not hold the module; a module-scope setter "
                      "is later work); module power is exported apart "
                      "(pfi_gpu_module_power_watts), the controller counts its draw as fixed",
                      i, a->g[i].info.uuid,
                      a->g[i].info.power_scope == PFI_POWER_SCOPE_MODULE
                          ? "GPU-scope power fields missing: a GH200-like module, whose power "
                            "and energy include the CPU"
                          : "module power limits exist: a GB200/GB300-like module");
    for (size_t i = 0; i < a->n; i++) {
        agent_gpu *g = &a->g[i];
        if (!agent_gpu_usable(a, i) || g->persistence_warned) continue;
        if (pfi_gpu_persistence(a->gpu, i) == 0) {
            agent_log(a,
                      "warning: GPU %zu %s: persistence mode is off: a cap does not survive the "
                      "driver unloading when no process holds the GPU (nvidia-smi -pm 1, or "
                      "nvidia-persistenced)",
                      i, g->info.uuid);
            g->persistence_warned = 1;
        }
    }
}

const char *agent_gpu_state(const agent *a, size_t i)
{
    if (a->g[i].avail != PFI_GPU_OK) return pfi_gpu_avail_name(a->g[i].avail);
    if (!a->g[i].info.uuid[0] || a->g[i].read_failed) return "unknown";
    return "ok";
}
