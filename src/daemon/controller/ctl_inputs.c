/* ctl_inputs.c — the end of a period's collection: each agent's last node
 * view (GET /v1/node's JSON or GET /v1/control's compact form) read into
 * the decision's inputs (ctl_state.h), each job's GPUs folded. Its tier: the
 * agent's job file (Slurm), else the configuration's "tiers", else
 * default_tier. Ids that are not [A-Za-z0-9._-]{1,63} are ignored
 * (job_id.h), whatever an agent sends (logged once per agent). The GPUs an
 * agent will not cap (and why) are kept too, and noted in the running
 * event for its report (ctl_event_note_uncapped). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "job_id.h"
#include "pfi/steplog.h"
#include "vec.h"

/* one GPU of a job into its view. GET /v1/control: [cap_min_w, cap_max_w,
   cap_w, ceiling_w(, why not capped(, enforced_w))] (an unavailable GPU:
   nulls; an older agent: no ceiling_w); GET /v1/node: an object (state,
   ceiling_w, enforced_w) */
static void take_gpu(ctl_job_view *v, const json_t *gi)
{
    int compact = json_is_array(gi);
    json_t *jlo = compact ? json_array_get(gi, 0) : json_object_get(gi, "cap_min_w"),
           *jst = compact ? NULL : json_object_get(gi, "state");
    double lo = json_number_value(jlo),
           hi = json_number_value(compact ? json_array_get(gi, 1)
                                          : json_object_get(gi, "cap_max_w"));
    json_t *cw = compact ? json_array_get(gi, 2) : json_object_get(gi, "cap_w"),
           *jce = compact ? json_array_get(gi, 3) : json_object_get(gi, "ceiling_w");
    double ceil_w = json_number_value(jce);
    /* a ceiling given as null: the GPU is not to be capped (MIG, its limit
       unknown): its draw is fixed load */
    if (jce && json_is_null(jce)) v->gpu_unavailable = 1;
    if (!json_is_number(jlo) || (json_is_string(jst) && strcmp(json_string_value(jst), "ok")))
        v->gpu_unavailable = 1;
    if (lo > v->cap_min_w) v->cap_min_w = lo;
    if (hi > 0 && hi < v->hw_max_w) v->hw_max_w = hi;
    if (!(ceil_w > 0)) ceil_w = hi; /* an older agent: its hardware maximum */
    if (ceil_w > 0 && ceil_w < v->ceiling_w) v->ceiling_w = ceil_w;
    if (json_is_number(cw) && json_number_value(cw) < v->cap_w) v->cap_w = json_number_value(cw);
    /* a limit set out of band below the cap (compact: the sixth element;
       /v1/node: enforced_w more than 1 W below cap_w) */
    json_t *je = compact ? json_array_get(gi, 5) : json_object_get(gi, "enforced_w");
    double en = json_number_value(je);
    if (json_is_number(je) && en > 0 && (compact || en < json_number_value(cw) - 1) &&
        en < v->enforced_w)
        v->enforced_w = en;
    v->gpus++;
}

/* one job of a node view; 0 when it is not one (no id, an invalid id) */
static int take_job(const ctl_cfg *cfg, ctl_job_view *v, const json_t *jj, const json_t *gpus,
                    int *bad_id)
{
    const char *id = json_string_value(json_object_get(jj, "job_id"));
    if (!id) return 0;
    if (!pfi_job_id_valid(id)) {
        *bad_id |= 1;
        return 0;
    }
    memset(v, 0, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", id);
    json_t *tier = json_object_get(jj, "tier");
    json_t *ct = cfg->tiers ? json_object_get(cfg->tiers, id) : NULL;
    v->tier = json_is_integer(tier) ? (int)json_integer_value(tier)
              : ct                  ? (int)json_integer_value(ct)
                                    : cfg->default_tier;
    v->hw_max_w = v->ceiling_w = v->cap_w = v->enforced_w = INFINITY;
    size_t q;
    json_t *g;
    json_array_foreach(json_object_get(jj, "gpus"), q, g)
        take_gpu(v, json_array_get(gpus, (size_t)json_integer_value(g)));
    v->power_w = json_number_value(json_object_get(jj, "power_w"));
    json_t *t = json_object_get(jj, "tokens_per_s"), *p = json_object_get(jj, "pfi_predicted");
    v->tokens_per_s = json_is_number(t) ? json_number_value(t) : NAN;
    /* what an agent says a job's step log claims: refused again here when
       it is not a throughput (issue 41: 1e308 made the baseline infinite) */
    if (!(v->tokens_per_s >= 0 && v->tokens_per_s <= PFI_STEPLOG_MAX_TOKENS_PER_S)) {
        if (json_is_number(t)) *bad_id |= 2;
        v->tokens_per_s = NAN;
    }
    if (json_is_number(p) && !isfinite(json_number_value(p))) *bad_id |= 2;
    v->pfi_pred = json_is_number(p) ? json_number_value(p) : NAN;
    json_t *f = json_object_get(jj, "training_means");
    v->feat_dram = json_number_value(json_object_get(f, "DCGM_FI_PROF_DRAM_ACTIVE"));
    v->feat_copy = json_number_value(json_object_get(f, "DCGM_FI_DEV_MEM_COPY_UTIL"));
    v->feat_tensor = json_number_value(json_object_get(f, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"));
    v->feat_sm = json_number_value(json_object_get(f, "DCGM_FI_PROF_SM_ACTIVE"));
    /* the telemetry a claimed throughput is checked against (ctl_claims.c):
       a clock in (0, 1e4) MHz, an activity in (0, 1], else unknown */
    json_t *ck = json_object_get(jj, "sm_clock_mhz"), *ac = json_object_get(jj, "sm_active");
    v->sm_clock_mhz = json_is_number(ck) && json_number_value(ck) > 0 && json_number_value(ck) < 1e4
                          ? json_number_value(ck)
                          : NAN;
    v->sm_active = json_is_number(ac) && json_number_value(ac) > 0 && json_number_value(ac) <= 1
                       ? json_number_value(ac)
                       : NAN;
    return 1;
}

/* the GPUs the agent will not cap, with why: /v1/control's fifth element,
 * /v1/node's not_capped (an older agent: a state other than "ok") */
static int take_uncapped(ctl_agent_view *a, const json_t *gpus)
{
    size_t q;
    json_t *gi;
    a->nnc = 0;
    json_array_foreach(gpus, q, gi)
    {
        const char *why = json_is_array(gi) ? json_string_value(json_array_get(gi, 4))
                                            : json_string_value(json_object_get(gi, "not_capped"));
        const char *st = json_string_value(json_object_get(gi, "state"));
        if (!why && st && strcmp(st, "ok")) why = st;
        if (!why) continue;
        if (PFI_VEC_RESERVE(a->nc, a->nc_cap, a->nnc + 1, NULL)) return -1;
        ctl_gpu_nc *n = &a->nc[a->nnc++];
        n->gpu = (int)q;
        /* the agent's word, kept only if it is one: [a-z_]{1,23} */
        size_t len = strspn(why, "abcdefghijklmnopqrstuvwxyz_");
        snprintf(n->reason, sizeof n->reason, "%s",
                 len && !why[len] && len <= CTL_NC_REASON_MAX ? why : "invalid");
    }
    return 0;
}

int ctl_inputs_read(const ctl_cfg *cfg, ctl_agent_view *a, const json_t *node, int *bad_id)
{
    json_t *gpus = json_object_get(node, "gpus"), *jobs = json_object_get(node, "jobs");
    a->njobs = 0;
    *bad_id = 0;
    if (take_uncapped(a, gpus)) return -1;
    if (PFI_VEC_RESERVE(a->job, a->job_cap, json_array_size(jobs) + 1, NULL)) return -1;
    size_t k;
    json_t *jj;
    json_array_foreach(jobs, k, jj) a->njobs += take_job(cfg, &a->job[a->njobs], jj, gpus, bad_id);
    return 0;
}

static ctl_event *running_event(ctl *c);

void ctl_event_note_uncapped(ctl *c)
{
    ctl_event *e = running_event(c);
    if (!e) return;
    const ctl_inputs *in = &c->io.in;
    for (size_t i = 0; i < in->nagents; i++)
        for (size_t k = 0; k < in->agent[i].nnc; k++) {
            const ctl_gpu_nc *n = &in->agent[i].nc[k];
            size_t q = 0;
            for (; q < e->nnc; q++)
                if (e->nc[q].g.gpu == n->gpu && !strcmp(e->nc[q].g.reason, n->reason) &&
                    !strcmp(e->nc[q].agent, in->agent[i].name))
                    break;
            if (q < e->nnc) continue; /* known */
            if (e->nnc == CTL_EVENT_NC_MAX) {
                e->nc_more++;
                continue;
            }
            snprintf(e->nc[e->nnc].agent, sizeof e->nc[0].agent, "%s", in->agent[i].name);
            e->nc[e->nnc++].g = *n;
            ctl_log(c, "event %s: agent %s GPU %d is not capped (%s): its draw cannot be shed",
                    e->ev.id, in->agent[i].name, n->gpu, n->reason);
        }
}

static ctl_event *running_event(ctl *c)
{
    ctl_event *e = NULL;
    for (size_t i = 0; i < c->st.nevents; i++)
        if (c->st.event[i].status == CTL_EV_ACTIVE) e = &c->st.event[i];
    return e;
}

void ctl_event_note_clamped(ctl *c)
{
    ctl_event *e = running_event(c);
    if (!e) return;
    for (size_t k = 0; k < c->st.njobs; k++) {
        const ctl_job *j = &c->st.job[k];
        if (!j->seen || !j->reachable || !ctl_job_clamped(j)) continue;
        double lim = ctl_job_limit_w(j);
        int enforced = lim < j->cap_max_w;
        size_t q = 0;
        while (q < e->nclamp && strcmp(e->clamp[q].job, j->id)) q++;
        if (q < e->nclamp) { /* known: the lowest limit it obeyed */
            if (lim < e->clamp[q].limit_w)
                e->clamp[q].limit_w = lim, e->clamp[q].enforced = enforced;
            continue;
        }
        if (e->nclamp == CTL_EVENT_CLAMP_MAX) {
            e->clamp_more++;
            continue;
        }
        struct ctl_event_clamp *x = &e->clamp[e->nclamp++];
        snprintf(x->job, sizeof x->job, "%s", j->id);
        x->gpus = j->gpus, x->cap_w = j->alloc_cap_w, x->limit_w = lim, x->enforced = enforced;
        ctl_log(c,
                "event %s: job %s is held at %.0f W per GPU by %s, below the %.0f W the plan gave "
                "it: it sheds less than planned",
                e->ev.id, j->id, lim,
                enforced ? "a limit set out of band (BMC, power brake)" : "an admin's limit",
                j->alloc_cap_w);
    }
}

int ctl_inputs_build(ctl *c)
{
    ctl_inputs *in = &c->io.in;
    if (in->nagents != c->io.nagents) {
        ctl_inputs_free(in);
        if (!(in->agent = calloc(c->io.nagents + 1, sizeof *in->agent))) return -1;
        in->nagents = c->io.nagents;
    }
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *ag = &c->io.agent[i];
        ctl_agent_view *a = &in->agent[i];
        a->up = ag->up;
        a->lease_until = ag->lease_until;
        a->name = ag->name;
        a->generation = ag->generation, a->generation_floor = ag->generation_floor;
        json_t *gm = ag->node ? json_object_get(ag->node, "generation_max") : NULL;
        a->generation_max = json_is_integer(gm) && json_integer_value(gm) >= 0
                                ? (long long)json_integer_value(gm)
                                : -1;
        a->gen_answer = ag->gen_answer;
        ag->gen_answer = CTL_GEN_ANSWER_NONE; /* read: the decision answers it */
        a->njobs = 0;
        a->nnc = 0;
        int bad = 0;
        if (ag->node && ctl_inputs_read(&c->cfg, a, ag->node, &bad)) {
            ctl_log(c, "error: out of memory: agent %s's view not read this period", ag->name);
            continue;
        }
        if ((bad & 1) && !(ag->bad_id_logged & 1))
            ctl_log(c,
                    "warning: agent %s reports a job id that is not [A-Za-z0-9._-]{1,63} (or is "
                    ". or ..); ignored",
                    ag->name);
        if ((bad & 2) && !(ag->bad_id_logged & 2))
            ctl_log(c,
                    "warning: agent %s reports a job's tokens_per_s that is negative, not finite "
                    "or above 1e10 tokens/s; taken as unknown",
                    ag->name);
        ag->bad_id_logged |= bad;
    }
    return 0;
}

void ctl_inputs_free(ctl_inputs *in)
{
    for (size_t i = 0; i < in->nagents; i++) free(in->agent[i].job), free(in->agent[i].nc);
    free(in->agent);
    memset(in, 0, sizeof *in);
}
