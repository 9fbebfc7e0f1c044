/* ctl_state.h — the controller's decision as data (docs/controller.md, "One
 * period"): what a period collects from the agents (ctl_inputs), the state
 * the decision keeps across periods (ctl_state: jobs, events, the feedback
 * term, safe-online, the response plan) and what it returns to be stored and
 * logged (ctl_decision). ctl_decide (ctl_decide.c) is a pure function of
 * these, the configuration and the curve model: no I/O, no lock, no clock
 * of its own. */
#ifndef PFI_CTL_STATE_H
#define PFI_CTL_STATE_H

#include <stddef.h>

#include "ctl_slots.h"
#include "grid_event.h"
#include "pfi/alloc.h"
#include "pfi/model_file.h"

#define CTL_HIST 256   /* samples kept per job for the pre-event baseline */
#define CTL_WIN_MAX 8  /* steady windows kept per job (ctl_baseline.c) */
#define CTL_SNAP_MAX 4 /* pending announcements whose baselines a job keeps */
/* The event table (issue 29): growable, with a bound per source so that no
 * source can take another's room. The grid (OpenADR: poll, webhook) keeps
 * at most CTL_GRID_MAX_EVENTS events and CTL_GRID_MAX_STEPS steps
 * (intervals) scheduled or running — an event that does not fit is refused
 * whole; the operator (API, schedule file) CTL_OPERATOR_MAX_EVENTS; the
 * trigger CTL_TRIGGER_MAX_EVENTS of its own, so the emergency path always
 * has room. Finished events stay in memory (the report, /v1/events) up to
 * CTL_KEEP_FINISHED, the oldest forgotten first (SQLite keeps them all). */
#define CTL_GRID_MAX_EVENTS 256
#define CTL_GRID_MAX_STEPS 16384
#define CTL_OPERATOR_MAX_EVENTS 256
#define CTL_TRIGGER_MAX_EVENTS 64
#define CTL_KEEP_FINISHED 256
#define CTL_LIST_EVENTS 64 /* events on /metrics at most */
#define CTL_PLAN_MAX 8     /* cuts in the response plan: levels 1..3, scheduled events */
#define CTL_JOB_ID_MAX 63
/* who created, changed or cancelled an event: an operator's name
 * (ctl_config.c: 1..32 of [A-Za-z0-9._-]), "grid" (the VTN: its webhook
 * with the callback token, the poller), "schedule" (the schedule file);
 * "" unknown (a row from before database format 2) */
#define CTL_WHO_MAX 32

struct ctl_cfg;
typedef struct ctl_online ctl_online_t; /* ctl_online.c */

/* log lines a step produces, logged by its caller ("error:", "warning:" or
 * info, as daemon_util.h reads the first word) */
typedef struct ctl_notes {
    char **line;
    size_t n, cap;
} ctl_notes;
void ctl_note(ctl_notes *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ctl_notes_clear(ctl_notes *n);

/* one job as one agent reports it: its GPUs folded (ctl_inputs.c) */
typedef struct ctl_job_view {
    char id[CTL_JOB_ID_MAX + 1];
    int tier, gpus;
    int gpu_unavailable;        /* a GPU of it unavailable, or not to be capped */
    double cap_min_w;           /* the largest GPU minimum (0: none) */
    double hw_max_w, ceiling_w; /* the smallest GPU maximum, ceiling (inf: none) */
    double cap_w;               /* the smallest cap in force (inf: none) */
    double enforced_w;          /* the smallest limit set out of band below its cap (inf: none) */
    double power_w;             /* its GPUs' power on this agent */
    double tokens_per_s, pfi_pred;                     /* NaN: none */
    double feat_dram, feat_copy, feat_tensor, feat_sm; /* training means (0: none) */
    double sm_clock_mhz, sm_active; /* its GPUs' mean SM clock and activity now (NaN: none) */
} ctl_job_view;

/* a GPU the agent will not cap, and why (its fifth /v1/control element,
 * /v1/node's not_capped; docs/agent.md) */
#define CTL_NC_REASON_MAX 23
typedef struct ctl_gpu_nc {
    int gpu;
    char reason[CTL_NC_REASON_MAX + 1];
} ctl_gpu_nc;

/* lease generations (ctl_generation.c): the last push's answer about an
   agent's generation, and why a generation changed */
enum {
    CTL_GEN_ANSWER_NONE = 0,
    CTL_GEN_ANSWER_STALE /* 409 */,
    CTL_GEN_ANSWER_OUT_OF_REACH /* 400 about the generation */
};
enum {
    CTL_GEN_WHY_NONE = 0,
    CTL_GEN_WHY_ABOVE,
    CTL_GEN_WHY_STALE,
    CTL_GEN_WHY_OUT_OF_REACH,
    CTL_GEN_WHY_BEYOND,
    CTL_GEN_WHY_N
};
extern const char *const ctl_gen_why_name[CTL_GEN_WHY_N];
/* the generation agent A gets next: never below floor, changed only with
   may_raise; *why: CTL_GEN_WHY_* (BEYOND: an alarm, stored kept) */
long long ctl_generation_next(long long floor, long long stored, long long generation_max,
                              int answer, int may_raise, int *why);

typedef struct ctl_agent_view {
    int up;             /* answered this period */
    double lease_until; /* pfi clock: our lease on it would expire */
    const char *name;
    /* lease generations: ours stored (what a push carries), the run's
       first (floor), the agent's generation_max from its view (-1: unknown),
       the last push's answer (CTL_GEN_ANSWER_*) */
    long long generation, generation_floor, generation_max;
    int gen_answer;
    ctl_job_view *job; /* its jobs (none: no view yet) */
    size_t njobs, job_cap;
    ctl_gpu_nc *nc; /* its GPUs it will not cap (growable, vec.h) */
    size_t nnc, nc_cap;
} ctl_agent_view;

typedef struct ctl_inputs {
    ctl_agent_view *agent; /* the configuration's agents, in its order */
    size_t nagents;
} ctl_inputs;

/* how an event's baseline of a job was chosen (ctl_baseline.c): the
   windows it looked at (the last CTL_BASE_WINDOWS before the announcement),
   the knee of its measured curve where one capped it */
#define CTL_BASE_WINDOWS 3
typedef struct ctl_base_how {
    double announced_t;
    size_t nwin;
    double win_w[CTL_BASE_WINDOWS], win_end[CTL_BASE_WINDOWS];
    double plateau_w; /* the lowest of them (NaN: none: the estimate) */
    double knee_w;    /* the knee of its measured points (NaN: none) */
    int knee_capped;  /* the baseline is the knee's, not the plateau */
    double base_x;    /* its telemetry at that plateau (SM clock x activity; NaN) */
} ctl_base_how;

/* where a job's baseline comes from (ctl_baseline.c) */
typedef enum ctl_base_src {
    CTL_BASE_NONE = 0,
    CTL_BASE_STEADY,   /* its last steady uncapped window */
    CTL_BASE_SHORT,    /* no steady window yet: the uncapped samples it has */
    CTL_BASE_ESTIMATE, /* none: its GPUs at 0.97 of their ceiling */
    CTL_BASE_LATE      /* it started during the event: what it draws uncapped */
} ctl_base_src;

/* A job's profile at job start and what is known of its curve
 * (ctl_profile.c; docs/controller.md, "Profiles"). */
#define CTL_KNOWN_MAX 32   /* measured points kept per job (profile, events) */
#define CTL_PROFILE_MAX 16 /* profile points at most (profile_points <= this) */
#define CTL_PROF_SAMPLES_MAX 64
typedef enum ctl_prof_state {
    CTL_PROF_WAIT = 0, /* not started: no steady baseline yet, or an event */
    CTL_PROF_RUN,      /* stepping its caps */
    CTL_PROF_DONE,     /* measured (or remembered) */
    CTL_PROF_OFF       /* not profiled: opted out, Flex 0, profiles off, no throughput */
} ctl_prof_state;
typedef struct ctl_profile {
    ctl_prof_state state;
    const char *why;        /* why it stopped or is off (static text); "" */
    double t_max, p_max;    /* tokens/s and W it started from (its steady baseline) */
    double spent_token_s;   /* throughput given up so far (tokens) */
    double cost_ratio;      /* spent_token_s / its first hour's tokens */
    double target_w, cap_w; /* the point being measured (0: none) */
    int settle_left, paused;
    int off_cap; /* periods in a row its GPUs did not show the point's cap */
    double sp[CTL_PROF_SAMPLES_MAX], st[CTL_PROF_SAMPLES_MAX];
    size_t ns;
    pfi_online_point pt[CTL_PROFILE_MAX]; /* the points measured, in the schedule's order */
    size_t npt;
    double started_t, ended_t; /* pfi clock (NaN: not yet) */
} ctl_profile;

/* what is remembered of a job across restarts and events (SQLite
 * job_points; ctl_profile.c): keyed by id, tier, GPU count and hardware
 * limit, its telemetry features checked within 15% */
typedef struct ctl_mem {
    char id[CTL_JOB_ID_MAX + 1];
    int tier, gpus;
    double hw_max_w;
    double feat[4]; /* dram, copy, tensor, sm (0: unknown) */
    int profiled;   /* its profile finished */
    double cost_ratio;
    pfi_online_point pt[CTL_KNOWN_MAX];
    size_t npt;
    double t;   /* pfi clock time last stored */
    int forget; /* a decision's row: delete the key's row (its job ended) */
} ctl_mem;

typedef struct ctl_job {
    char id[CTL_JOB_ID_MAX + 1];
    int tier, gpus, seen;
    /* cap_max_w: the job's ceiling, the lowest over its GPUs of the limit
     * each had before pfi touched it (the agents' ceiling_w; the hardware
     * maximum from an agent that does not report one): no cap above it is
     * ever planned or sent. hw_max_w: the hardware maximum, the range curve
     * models were fitted on. gpu_unavailable: an agent reports one of its
     * GPUs unavailable (lost, no permission): the job is unreachable. */
    double cap_min_w, cap_max_w, cap_w, hw_max_w;
    /* enforced_w: the lowest limit set out of band (BMC, power brake) that
     * holds one of its GPUs below the cap pfi gave (inf: none; the agents'
     * sixth /v1/control element): the plan gives it no more (ctl_alloc_in.c),
     * the offer counts it there and the event report names it (issue 44) */
    double enforced_w;
    int gpu_unavailable, unavailable_logged;
    int *agent_idx; /* the agents holding the job (malloc'd; every one of them) */
    size_t nagent, agent_cap;
    double measured_w, tokens_per_s, pfi_pred;
    double hist_w[CTL_HIST], hist_tok[CTL_HIST], hist_t[CTL_HIST];
    size_t hist_n, hist_head;
    double ratio; /* power-control state */
    /* the baseline's samples (hist_*: uncapped, settled, training; ring)
       and the last steady estimate (steady_t: when; NaN: none yet) */
    double uncapped_since, steady_w, steady_tokens, steady_t, steady_eval_t;
    int has_tokens; /* it has reported throughput */
    /* its last steady windows (ctl_baseline.c): the plateau of each
       baseline_window_s of uncapped samples, one a window, newest last (ring) */
    double win_w[CTL_WIN_MAX], win_tok[CTL_WIN_MAX], win_x[CTL_WIN_MAX], win_end[CTL_WIN_MAX];
    size_t win_n, win_head;
    double base_w, base_tokens; /* pre-event baseline (event start) */
    ctl_base_src base_src;
    ctl_base_how base_how; /* how it was chosen (the event's report) */
    /* the baselines pending events will take, taken at the first period
       after their announcement, while the windows before it are still
       kept (an event announced hours ahead: the ring has moved on by its
       start); one per distinct announcement, CTL_SNAP_MAX at most */
    struct ctl_base_snap {
        double announced_t, w, tok;
        ctl_base_src src;
        ctl_base_how how;
    } snap[CTL_SNAP_MAX];
    size_t nsnap;
    /* the SM clock (x its SM activity where known) now, and at its
       baseline: a claimed throughput is checked against them (ctl_claims.c) */
    double sm_clock_mhz, sm_active, base_x;
    double hist_x[CTL_HIST];
    double prev_cap_w; /* the cap in force last period (a settled point) */
    int claim_misses;  /* settled capped periods in a row its claim was not corroborated */
    int untrusted;     /* its claims were not corroborated: cut in proportion (ctl_claims.c) */
    int late;          /* started during the event: baseline follows its
                          measured power until the controller first caps it */
    double alloc_w, alloc_cap_w;
    double plan_cap_w[CTL_PLAN_MAX];                   /* the response plan's caps (ctl_plan.c) */
    double trig_cap_w;                                 /* the last trigger's cap (0: none) */
    double feat_dram, feat_copy, feat_tensor, feat_sm; /* training means from the agent */
    double obs_p[64], obs_t[64];
    size_t nobs;
    int reachable;
    /* its profile and what is known of its curve (ctl_profile.c): the
       known points start safe-online (pfi_alloc_job.known) */
    ctl_profile prof;
    pfi_online_point known[CTL_KNOWN_MAX];
    size_t nknown;
    int mem_checked; /* its remembered points looked up */
    /* failover (ctl_store_etcd.c): the points of the running event last
       committed (their number, and when: pfi clock) */
    size_t fo_npt;
    double fo_t;
} ctl_job;

/* A job's GPUs obey the lowest of pfi's cap, its ceiling (an admin's limit
 * as the agents report it) and a limit set out of band (enforced_w):
 * ctl_job_limit_w the lower of the last two; ctl_job_cap_sent the cap the
 * push sends for the plan's alloc_cap_w (no cap above the ceiling leaves:
 * ctl_agents_push.c); ctl_job_clamped 1 when an admin's or an out-of-band
 * limit holds it more than 1 W below the cap the plan gave (issue 44: the
 * offer counts it there, the event report names it). */
double ctl_job_limit_w(const ctl_job *j);
double ctl_job_cap_sent(const ctl_job *j);
int ctl_job_clamped(const ctl_job *j);

typedef enum ctl_event_status {
    CTL_EV_SCHEDULED,
    CTL_EV_ACTIVE,
    CTL_EV_DONE,
    CTL_EV_CANCELLED
} ctl_event_status;
/* "scheduled", "active", "done", "cancelled" (the API's and the database's) */
const char *ctl_event_status_name(ctl_event_status s);
int ctl_event_status_parse(const char *name, ctl_event_status *s); /* 0, or -1 */

/* an event's verdict (ctl_report.c; docs/controller.md, "Verdicts") */
typedef enum ctl_verdict {
    CTL_VERDICT_PENDING = 0, /* scheduled, or running in a ramp */
    CTL_VERDICT_MET,
    CTL_VERDICT_NOT_MET,
    CTL_VERDICT_NOTHING,   /* no managed load when it started: nothing to shed */
    CTL_VERDICT_NA,        /* cancelled before it shed anything: not applicable */
    CTL_VERDICT_NO_STEADY, /* ended without a steady-window period */
    CTL_VERDICT_CANCELLED  /* cancelled before it started */
} ctl_verdict;

#define CTL_EVENT_NC_MAX 32
#define CTL_EVENT_CLAMP_MAX 16
typedef struct ctl_event {
    pfi_grid_event ev;
    ctl_event_status status;
    double baseline_w, target_w; /* resolved at start */
    ctl_base_src baseline_src;   /* the weakest of its jobs' (NONE: no jobs) */
    double ramp_s, ramp_down_s;
    double reached_t; /* first time at or below target (NaN) */
    /* when it was first announced (received; a trigger: its start; an
       OpenADR step: its event's first receipt): the jobs' baselines come
       from before it (ctl_baseline.c). NaN (a database of format < 4): its start */
    double announced_t;
    int cancelled;
    int shed_any; /* a period of it measured below its baseline by more than the tolerance */
    /* the whole offer at each cost (ctl_offer.c; W; NaN: unknown) when it
       was notified and when it started, for its report; not kept across a
       restart (then unknown) */
    double offer_notified_w[5], offer_start_w[5];
    int offer_notified, offer_started;
    /* the report's verdict once it ended (ctl_report_verdict), kept: a
       finished event's samples do not change; the status page asks every second */
    int verdict_known, verdict_steady;
    ctl_verdict verdict;
    double verdict_mean_w;
    /* OpenADR: the payloads its reportDescriptors ask for (PFI_OADR_REPORT_*;
       0: all three). Not kept across a restart (then all three). */
    unsigned report_mask;
    size_t reports_kept; /* report intervals 0..reports_kept-1 are in the table (ctl_vtn.c) */
    /* why it ended before its end ("": it did not, or the operator's
       DELETE): "deleted at the VTN" when the grid discarded it (not kept
       across a restart) */
    char ended_by[32];
    /* who made it, last changed it ("": nobody since), cancelled it
       (""): stored (database format 2) */
    char created_by[CTL_WHO_MAX + 1], changed_by[CTL_WHO_MAX + 1], cancelled_by[CTL_WHO_MAX + 1];
    /* the GPUs an agent would not cap while it ran (ctl_event_note_uncapped;
       the report's gpus_not_capped): the first CTL_EVENT_NC_MAX, the rest
       counted. Not kept across a restart. */
    struct ctl_event_nc {
        char agent[64];
        ctl_gpu_nc g;
    } nc[CTL_EVENT_NC_MAX];
    size_t nnc, nc_more;
    /* the jobs an admin's or an out-of-band limit held below the cap the
       plan gave while it ran (ctl_event_note_clamped; the report's
       clamped_jobs): the first CTL_EVENT_CLAMP_MAX, the rest counted; each
       at the lowest limit seen. Not kept across a restart. */
    struct ctl_event_clamp {
        char job[CTL_JOB_ID_MAX + 1];
        int gpus;
        double cap_w, limit_w; /* per GPU: the plan's cap, the limit it obeyed */
        int enforced;          /* 1: out of band (BMC, power brake); 0: its ceiling */
    } clamp[CTL_EVENT_CLAMP_MAX];
    size_t nclamp, clamp_more;
} ctl_event;

/* what the decision keeps across periods */
typedef struct ctl_state {
    ctl_job *job; /* growable (vec.h) */
    size_t njobs, job_cap;
    ctl_event *event; /* growable (vec.h; ctl_state_event_new) */
    size_t nevents, event_cap;
    double integral_w;
    int stable_periods; /* periods with unchanged caps and budget */
    int feasible;
    ctl_online_t *online; /* safe-online during an event (ctl_online.c; NULL: none) */
    /* the response plan (ctl_plan.c): caps per job for each of these cuts */
    double plan_cut_pct[CTL_PLAN_MAX], plan_base_w;
    size_t nplan;
    double plan_t; /* pfi clock time it was computed (NaN: none yet) */
    /* the last period */
    double now, budget_w, measured_w, fixed_w;
    int active;
    char gov_id[PFI_EVENT_ID_MAX + 1]; /* the running event whose budget is the period's
                                          (the lowest); "" */
    /* what is remembered of jobs (loaded at start from SQLite, kept by the
       decision; growable) */
    ctl_mem *mem;
    size_t nmem, mem_cap;
    ctl_slots mem_idx; /* its index by key (ctl_profile.c) */
    int profiling;     /* a profile holds caps this period */
    /* the SLA shortfall at the governing event's start: the power its
       jobs' floors need beyond the budget, W (0: they fit; NaN: none) */
    double sla_shortfall_w;
} ctl_state;

/* a job's row of an event's samples (the report's per-job table) */
typedef struct ctl_job_row {
    char id[CTL_JOB_ID_MAX + 1];
    int tier;
    double power_w, tokens_per_s, cap_w, alloc_w, base_w, base_tokens;
} ctl_job_row;

/* what one period decided, besides the caps it left in the jobs
 * (alloc_cap_w; the plan's in plan_cap_w): what to store, what to log */
/* how one job's baseline for an event was chosen, for its report
   (SQLite event_baselines) */
typedef struct ctl_base_row {
    char event_id[PFI_EVENT_ID_MAX + 1], job_id[CTL_JOB_ID_MAX + 1];
    int tier;
    double base_w;
    ctl_base_src src;
    ctl_base_how how;
} ctl_base_row;

/* an agent's lease generation changed by the decision */
typedef struct ctl_gen_row {
    size_t agent; /* index in the inputs (the configuration's order) */
    long long from, to;
    int why;        /* CTL_GEN_WHY_*; BEYOND: from == to, an alarm */
    long long want; /* BEYOND: the generation it would need */
} ctl_gen_row;

typedef struct ctl_decision {
    int active;            /* an event runs: push the caps (else hand back what we hold) */
    ctl_event *event_rows; /* copies of the events this period changed */
    size_t nevent_rows, event_rows_cap;
    int sample;                               /* a sample of the governing event: */
    char sample_event[PFI_EVENT_ID_MAX + 1];  /* its id */
    double t, budget_w, target_w, measured_w; /* the cluster's row */
    ctl_job_row *rows;                        /* every job's row */
    size_t nrows, rows_cap;
    double integral_w; /* the feedback term, stored every period */
    int profiling;     /* a profile holds caps: push them (no event) */
    ctl_mem *mem_rows; /* remembered points changed this period (copies) */
    size_t nmem_rows, mem_rows_cap;
    ctl_base_row *base_rows; /* the baselines of the events that started */
    size_t nbase_rows, base_rows_cap;
    ctl_gen_row *gen_rows; /* lease generations changed (stored before the push) */
    size_t ngen_rows, gen_rows_cap;
    ctl_notes notes;
} ctl_decision;
void ctl_decision_clear(ctl_decision *d); /* empty, keeping its buffers */
void ctl_decision_free(ctl_decision *d);

/* One control period's decision (ctl_decide.c), then the response plan
 * (ctl_plan.c), from the inputs at pfi clock time now. curve_model: NULL
 * when none. 0, or -1 when out of memory (the state is left as it was
 * where that matters: no caps are changed; noted). */
int ctl_decide(const struct ctl_cfg *cfg, const pfi_modelfile *curve_model, ctl_state *s,
               const ctl_inputs *in, double now, ctl_decision *d);
void ctl_state_free(ctl_state *s);
/* a new event at the end of s's table, zeroed; NULL when out of memory.
 * It may move the table: pointers into it are stale after a call. */
ctl_event *ctl_state_event_new(ctl_state *s);

#endif
