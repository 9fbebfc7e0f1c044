/* ctl.h — pfi-controller, the cluster daemon (docs/controller.md): it
 * receives grid events, splits the cut across the managed jobs with the
 * allocator (alloc.h) under the online control law (power_control.h),
 * enforces it through the node agents (PUT /v1/caps under leases), verifies
 * the result and reports it.
 *
 * A period (ctl_period.c) is collect (ctl_agents.c, ctl_inputs.c) -> decide
 * (ctl_decide.c: pure, on the types of ctl_state.h; ctl_alloc_in.c,
 * ctl_plan.c, ctl_online.c) -> persist (ctl_persist.c) -> push
 * (ctl_agents.c). Around it: ctl_main.c (options, start-up, the loop),
 * ctl_config.c (the JSON configuration), ctl_lock.c (one controller per
 * database), ctl_db.c (SQLite for the API), ctl_events.c (the event table
 * as the API changes it), ctl_trigger.c (the trigger fast path), ctl_http.c
 * (the API and the status page), ctl_view.c (/v1/status and /metrics),
 * ctl_operators.c (who may call the API: named operators and scopes),
 * ctl_openadr.c (OpenADR events from the webhook and the poller),
 * ctl_report.c (an event's measurement and verification, JSON and PNG),
 * ctl_record.c (--record), ctl_log.c. One mutex guards the controller's
 * state; HTTP handlers and the loop share it. The open (unauthenticated)
 * reads hold it only to copy what they answer from, and build the answer
 * (JSON, Prometheus text, a chart) after: a client reading them in a loop
 * cannot hold up a period or a trigger. */
#ifndef PFI_CTL_H
#define PFI_CTL_H

#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "agent_client.h"
#include "ctl_state.h"
#include "daemon_util.h"
#include "grid_event.h"
#include "openadr.h"
#include "pfi/alloc.h"
#include "pfi/model_file.h"

/* no limit on agents or jobs: both are growable arrays (docs/controller.md, "Scale") */
enum { CTL_PH_COLLECT, CTL_PH_DECIDE, CTL_PH_PERSIST, CTL_PH_PUSH }; /* a period's steps */
#define CTL_STATUS_HIST 600
#define CTL_OADR_MAX_RESOURCES 16

/* an operator's scopes (docs/controller.md, "Operators"): read (GET, only
 * with require_read_scope), events (create, change, cancel events: POST,
 * DELETE /v1/events, POST /openadr3/events), control (POST /v1/trigger,
 * every other change; cancelling a trigger's event) */
enum { CTL_SCOPE_READ = 1, CTL_SCOPE_EVENTS = 2, CTL_SCOPE_CONTROL = 4, CTL_SCOPE_ALL = 7 };
/* the name token_file's operator has (every scope) */
#define CTL_LEGACY_OPERATOR "operator"

typedef struct ctl_cfg {
    char listen[128], token_file[1024], tls_cert[1024], tls_key[1024], db[1024], model[1024],
        curve_model[1024];
    char schedule[1024], openadr_poll_url[1024], log[1024];
    pfi_strategy strategy;
    double period_s, tolerance_pct, non_gpu_offset_kw, ramp_s, ramp_down_s, baseline_window_s,
        baseline_settle_s, lease_s;
    double level_cut_pct[4];  /* grid level -> cut (default 0, 10, 20, 30 %) */
    double agent_timeout_s;   /* one request's deadline (NaN: from the period, 0.2..2 s) */
    double agent_concurrency; /* requests in flight at once (default 1024) */
    double offer_s;           /* the offer's interval (30 s; 0: none); "offer": {"interval_s"} */
    double offer_facility;    /* kW offered per kW of GPU board power (1.0) */
    /* the forecast (ctl_forecast.c): "offer": {"squeue": command ("": none,
       the present fleet persists), "squeue_interval_s" (300),
       "squeue_timeout_s" (10), "horizon_h" (6)} */
    char offer_squeue[1024];
    double offer_squeue_s, offer_squeue_timeout_s;
    int offer_horizon_h;
    int fast_trigger;          /* a trigger's caps by datagram where an agent offers it (1) */
    int fast_collect;          /* the period's views by datagram, the same way (1) */
    int fast_path_cleartext;   /* datagrams to an https agent without client certificates (0) */
    double fast_trigger_ack_s; /* a datagram's deadline for its answer, then HTTP (0.2 s) */
    double openadr_poll_s;
    int openadr_version; /* pfi_oadr_version: 3.1 (default) or 3.0.1 */
    char openadr_ven_name[PFI_OADR_ID_MAX + 1];
    char openadr_resources[CTL_OADR_MAX_RESOURCES][PFI_OADR_ID_MAX + 1];
    size_t openadr_nresources;
    struct { /* the VTN conversation (ctl_vtn.c); vtn_url "": none;
                the VEN name and version are the openadr_ ones */
        char vtn_url[1024], token_url[1024], client_id_file[1024], client_secret_file[1024];
        char program_id[129], callback_url[1024], callback_token_file[1024];
        char ca_file[1024];
        char targets[16][129];
        size_t ntargets;
        int allow_insecure_http;
        double report_s; /* a report's interval (default 900 s) */
    } vtn;
    /* failover on etcd (issue 45; ctl_failover.c): "failover": {"etcd":
       [URL, ...] (none: one controller, SQLite alone), "prefix" ("/pfi/"),
       "name" (this controller's, unique; default its host name), "ttl_s"
       (2), "timeout_s" (1), "ca_file", "cert_file", "key_file", "user",
       "password_file"} */
    struct {
        char etcd[16][256];
        size_t netcd;
        char prefix[128], name[64];
        double ttl_s, timeout_s;
        char ca_file[1024], cert_file[1024], key_file[1024], user[128], password_file[1024];
        /* the configuration's hash without the keys each controller has its
           own (listen, db, log, tls_cert, tls_key; failover's name, etcd,
           ca_file, cert_file, key_file, user, password_file): FNV-1a 64 of
           the rest, keys sorted; compared with the leader's */
        char config_hash[17];
    } fo;
    int default_tier, dry_run;
    /* operators (token_file's "operator" last, when there is one), malloc'd */
    size_t noperators;
    struct ctl_cfg_operator {
        char name[CTL_WHO_MAX + 1], token_file[1024];
        unsigned scopes; /* CTL_SCOPE_* */
    } * operators;
    int require_read_scope; /* reads (GET) need an operator with scope read */
    json_t *tiers;          /* {"job id": tier} */
    /* profiles at job start (ctl_profile.c; docs/controller.md, "Profiles"):
       on (1) by default; the cost bound (a fraction of a job's first
       hour, 0.01), the points below the ceiling (4), control periods
       measured at each (6) after settle periods not measured (1); the
       job ids never profiled (a JSON array of strings; NULL: none) */
    int profile;
    double profile_cost_frac, profile_points, profile_samples, profile_settle_periods;
    double profile_deep_points; /* points below profile's 0.5 P_max to the lowest cap (0) */
    json_t *profile_opt_out;
    size_t nagents;
    struct ctl_cfg_agent {
        char name[64], url[512], token_file[1024], read_token_file[1024];
        char ca_file[1024], client_cert[1024], client_key[1024]; /* https: CA, mTLS */
        int allow_insecure_http; /* send the token over plain http to a non-loopback host */
    } * agents;                  /* nagents of them (malloc'd; ctl_config_free) */
} ctl_cfg;

#define CTL_FAST_PROBE_S 30.0
typedef struct ctl_agent {
    char name[64], url[512], token[PFI_TOKEN_MAX + 1], read_token[PFI_TOKEN_MAX + 1];
    const char *ca_file, *client_cert, *client_key; /* NULL: curl's defaults (malloc'd) */
    int up, ever_up;
    double last_ok_t, lease_until; /* pfi clock */
    double last_jobs_w;            /* its managed jobs' power at the last success */
    double uncapped_w;             /* its managed jobs' GPUs at their maximum cap */
    json_t *node;                  /* last /v1/node */
    int pushed;                    /* caps of ours are on it */
    int bad_id_logged; /* it sent an invalid job id (1), an absurd throughput (2): each logged once
                        */
    long long generation;       /* our lease generation on this agent (persisted) */
    long long generation_floor; /* this run's first (one above the last run's) */
    int gen_answer;       /* the last push's answer about the generation (CTL_GEN_ANSWER_*), until a
                             period's decision reads it */
    uint32_t fast_ip;     /* its IPv4 address (network order) as the last GET reached it;
                             0: unknown */
    int fast_port;        /* its fast trigger port (GET /v1/control); 0: none */
    int fast_misses;      /* datagrams in a row it did not answer in time */
    double fast_probe_at; /* 3 misses: HTTP only; a datagram tried again then
                             (wall monotonic s), every CTL_FAST_PROBE_S */
    int fast_mtls_logged; /* client certificates, or https without fast_path_cleartext: no
                             datagrams (logged once) */
    int https;            /* its url is https:// (datagrams are cleartext: fast_path_cleartext) */
    char err[256];
} ctl_agent;

/* The controller's I/O: the agents and the transfers to them, SQLite,
 * the HTTP API, the VTN thread, the log, the period's buffers */
typedef struct ctl_io {
    pfi_daemon_log *log; /* NULL: standard error (tests) */
    ctl_agent *agent;
    size_t nagents;
    struct ctl_pool *pool; /* the transfers to the agents (ctl_agents.c) */
    /* the period (ctl_period.c): its inputs and its last decision; the
       loop's thread only, under the lock */
    ctl_inputs in;
    ctl_decision dec;
    /* SQLite: the HTTP handlers' connection (under the lock), the
       period's own (ctl_persist.c, the loop's thread) and the readers'
       (rdb, read-only, under rmu: the open reads outside the lock) */
    sqlite3 *db, *pdb, *rdb;
    pthread_mutex_t rmu;
    sqlite3_stmt *job_sample_stmt; /* on pdb, prepared once */
    /* the operators' tokens, cfg.operators' order (malloc'd; read at start) */
    char (*op_token)[PFI_TOKEN_MAX + 1];
    struct pfi_httpd *httpd;
    int port;
    /* the VTN (ctl_vtn.c): the bearer token our subscription gives it, which
       the webhook accepts besides token ("": none); its thread */
    char callback_token[PFI_TOKEN_MAX + 1];
    /* the program's payloadDescriptors as JSON text (malloc'd; NULL: none
       known), fetched and followed by the VTN thread, read under the lock */
    char *program_descriptors;
    pthread_t vtn_thread;
    int vtn_running;
    atomic_int vtn_stop;
    pthread_t poll_thread; /* openadr.poll_url's poller (ctl_poll.c) */
    int poll_running;
    atomic_int poll_stop;
} ctl_io;

/* what the VTN thread tells of its conversation (ctl_vtn.c; under the
 * lock): /v1/status "vtn" and /metrics pfi_ctl_vtn_* */
enum { CTL_VTN_TRYING = 0, CTL_VTN_DONE, CTL_VTN_OFF, CTL_VTN_UNWANTED };
enum { /* the VTN's forms pfi accepts though the specification does not allow them */
       CTL_VTN_NC_LOCAL_TIME = 0, /* a metadata timestamp without an offset */
       CTL_VTN_NC_EXPIRES_STRING, /* expires_in as a string of digits */
       CTL_VTN_NC_NO_WEBHOOKS,    /* subscriptions refused with 404, 405 or 501 */
       CTL_VTN_NC_VEN_LISTED,     /* POST /vens refused: the VEN found by listing */
       CTL_VTN_NC_N
};
extern const char *const ctl_vtn_nc_name[CTL_VTN_NC_N];
typedef struct ctl_vtn_seen {
    int on;               /* a VTN is configured (openadr.vtn_url) */
    int registered;       /* CTL_VTN_TRYING, _DONE, _OFF (no VEN id: polls go on) */
    int subscribed;       /* CTL_VTN_TRYING, _DONE, _OFF (no webhooks), _UNWANTED (no callback) */
    int polling;          /* polls have begun */
    double last_poll_ok;  /* Unix seconds of the last whole successful poll (0: none) */
    double retry_after_s; /* the last Retry-After the thread honoured (0: none) */
    char ven_id[129], ven_name_listed[129];
    unsigned long long nonconf[CTL_VTN_NC_N];
    unsigned long long echoes; /* webhook echo challenges answered (ctl_http.c) */
} ctl_vtn_seen;

/* The controller in three parts: its configuration (cfg and the models it
 * names, read at start), the decision's state (st, ctl_state.h: what
 * ctl_decide reads and writes), its I/O (io); and what the API reports of
 * the loop (timings, counters, the status history). The mutex guards st,
 * the agents' views and what is reported; the HTTP handlers and the loop
 * share it. */
typedef struct ctl {
    ctl_cfg cfg;
    pfi_modelfile model, curve_model;
    int have_model, have_curve_model;
    ctl_state st;
    ctl_io io;
    pthread_mutex_t mu;
    int wake;          /* run a period now (an event that starts now arrived) */
    int adds_quiet;    /* ctl_event_add logs nothing (OpenADR logs one line per event) */
    double loop_s;     /* wall time of the last whole period */
    double phase_s[4]; /* its steps (CTL_PH_*) */
    double cycle_s;    /* the decision's share */
    double hist_t[CTL_STATUS_HIST], hist_meas[CTL_STATUS_HIST], hist_target[CTL_STATUS_HIST];
    size_t hist_n;
    atomic_ullong db_errors; /* periods whose rows were not stored */
    /* triggers: one waiting for the network (ctl_agents.c), the last one's timing */
    atomic_int trigger_req;
    double trigger_t0, trigger_push_s; /* wall (monotonic) time it came; to its last answer */
    double trigger_build_s;            /* its requests' bodies built */
    size_t trigger_agents, trigger_failed;
    char trigger_id[PFI_EVENT_ID_MAX + 1];
    unsigned long long triggers;
    /* fast trigger datagrams, [0] caps (a trigger's), [1] views (a period's) */
    unsigned long long fast_sent[2], fast_answered[2], fast_fallbacks[2];
    size_t trigger_fast; /* the last trigger's agents reached by datagram */
    unsigned long long cycles, pushes, push_errors, generation_rejects;
    unsigned long long generation_changes[CTL_GEN_WHY_N]; /* by why (ctl_generation.c) */
    pfi_oadr_book oadr_book;                              /* OpenADR versions seen */
    pfi_oadr_loglimit oadr_loglimit; /* their rejection lines: the first 20 a minute */
    unsigned long long oadr_rejected[PFI_OADR_NREASONS]; /* event versions not acted on */
    unsigned long long reports_refused; /* REPORTs the VTN refused (4xx): not sent again */
    ctl_vtn_seen vtn;
    /* the targets the VTN's business logic granted our VEN object (3.1, GET
       /vens/{id}: User Guide 8.13), read by the VTN thread */
    char ven_targets[16][129];
    size_t nven_targets;
    double ingest_hold_max_s; /* the longest hold of the lock booking a poll's events */
    /* HTTP answers 401, 403, 405, 409 by reason (ctl_http.c: on_refused; atomic) */
    unsigned long long http_refused[4];
    double refused_log_t; /* the current 10 s window of refusal log lines (wall) */
    unsigned refused_logged, refused_quiet;
    struct ctl_offer *offer; /* the offer's thread and its last result (ctl_offer.c) */
    struct ctl_failover *fo; /* failover on etcd (ctl_failover.c); NULL: one controller */
    /* where the authoritative state goes (ctl_store.h; NULL: SQLite alone) */
    const struct ctl_store_ops *store;
} ctl;

/* one log line (daemon_util.h: its priority is its first word, "error:",
 * "warning:" or other) */
void ctl_log(ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ctl_config.c */
pfi_status ctl_config_load(const char *path, ctl_cfg *cfg, pfi_error *err);
/* the same from memory; name stands for the file in errors */
pfi_status ctl_config_parse(const char *text, size_t len, const char *name, ctl_cfg *cfg,
                            pfi_error *err);
/* what a loaded configuration holds (the agents, the tiers) */
void ctl_config_free(ctl_cfg *cfg);

/* ctl_lock.c: one controller per database. take: an exclusive flock on
 * cfg.db + ".lock", held until the process exits, naming this process in
 * it (listen: the configured address); 0, or -1 (logged, naming the holder
 * when another controller has it). name: the holder's line again, with the
 * address the server got (its port once known); 0 */
int ctl_lock_take(ctl *c);
int ctl_lock_name(ctl *c, const char *listen);

/* ctl_db.c */
int ctl_db_open(ctl *c);
/* the readers' connection (read-only; the open reads, outside the
 * controller's lock: report, report.png, an ended event's verdict), one
 * user at a time: reader returns it held, reader_done lets it go */
sqlite3 *ctl_db_reader(ctl *c);
void ctl_db_reader_done(ctl *c);
void ctl_db_close(ctl *c);
int ctl_db_put_event(ctl *c, const ctl_event *e);
/* an event's row on connection db: every column (the API's changes), or
 * only those a period's decision changes (status, baseline, target, time to
 * target; a new event whole either way); 0, or -1 */
int ctl_db_event_row(sqlite3 *db, const ctl_event *e, int all_columns);
int ctl_db_load_events(ctl *c);
/* the source of the stored event id (also one the table forgot): 1 (source
 * into source[n]), 0 none stored, -1 on error */
int ctl_db_event_source(ctl *c, const char *id, char *source, size_t n);
/* NaN as NULL, both ways */
void ctl_db_bind_num(sqlite3_stmt *s, int i, double v);
double ctl_db_col_num(sqlite3_stmt *s, int i);
int ctl_db_meta_set(ctl *c, const char *key, double v);
double ctl_db_meta_get(ctl *c, const char *key, double dflt);
/* an agent's lease generation (INTEGER): 1 if stored (*g set), 0 if not */
int ctl_db_generation_get(ctl *c, const char *agent, long long *g);
int ctl_db_generation_set(ctl *c, const char *agent, long long g);
/* OpenADR 3 reports (vtn_reports): 1 if event_id has one, 0 if not, -1 on
 * error; put (kept if there); the oldest not accepted (malloc'd body, its
 * event into event_id) or NULL; done: accepted as report_id, or (NULL) one
 * more failed try */
int ctl_db_report_has(ctl *c, const char *event_id);
int ctl_db_report_put(ctl *c, const char *event_id, const char *body);
char *ctl_db_report_next(ctl *c, char *event_id, size_t n);
int ctl_db_report_done(ctl *c, const char *event_id, const char *report_id);
int ctl_db_report_refused(ctl *c, const char *event_id);
/* an event's samples (pfi clock time, measured W; NaN: none), at most max */
/* OpenADR 3: a step's VTN event id and interval id (0; -1 unknown), the
 * first receipt of an event id (stored at the first call: what its "now"
 * means ever after), forgotten when the VTN deletes the event */
int ctl_db_oadr_step_put(ctl *c, const char *step_id, const char *event_id, long long interval_id);
int ctl_db_oadr_step_get(ctl *c, const char *step_id, char *event_id, size_t n,
                         long long *interval_id);
double ctl_db_oadr_first(ctl *c, const char *event_id, double now);
void ctl_db_oadr_first_put(ctl *c, const char *event_id, double first_s);
size_t ctl_db_oadr_first_prune(ctl *c, double keep_after_s, size_t keep_max,
                               int (*pending)(void *, const char *), void *ud);
void ctl_db_oadr_forget(ctl *c, const char *event_id);
size_t ctl_db_samples(ctl *c, const char *event_id, double *t, double *measured_w, size_t max);

/* ctl_agents.c (without the lock: network I/O; the control loop's thread
 * only). open: the transfers' pool (c->pool), before the HTTP API starts;
 * 0, or -1 when out of memory */
int ctl_agents_open(ctl *c);
void ctl_agents_collect(ctl *c);
/* push per-agent caps for the jobs (alloc_cap_w; release: hand them all back) */
void ctl_agents_push(ctl *c, int release);
/* push a waiting trigger's caps (c->trigger_req) now and wait for its answers */
void ctl_agents_service(ctl *c);
/* wake the transfers in progress, or the loop between periods (any
   thread): a trigger is waiting, an event starts now (c->wake) */
void ctl_agents_wake(ctl *c);
/* its eventfd (-1 before the pool is open): a signal handler writes it */
int ctl_agents_wake_fd(const ctl *c);
/* between periods: sleep up to wait_s wall seconds, less when woken, then
   push a waiting trigger's caps */
void ctl_agents_idle(ctl *c, double wait_s);

/* ctl_period.c: one control period, collect -> decide -> persist -> push
 * (the loop's thread; takes the lock for the decision) */
void ctl_period(ctl *c);
/* ctl_inputs.c (lock held): every agent's last view into c->in; 0, or -1
 * when out of memory. ctl_inputs_read: one node view into a (0, or -1 when
 * out of memory; *bad_id set when it named an invalid job id) */
int ctl_inputs_build(ctl *c);
int ctl_inputs_read(const ctl_cfg *cfg, ctl_agent_view *a, const json_t *node, int *bad_id);
void ctl_inputs_free(ctl_inputs *in);
/* ctl_inputs.c (lock held): the GPUs the agents will not cap this period
 * noted in the running event (logged the first time each is seen) */
void ctl_event_note_uncapped(ctl *c);
/* the jobs an admin's or an out-of-band limit holds below the plan's cap,
   noted in the running event (its report's clamped_jobs) and logged once */
void ctl_event_note_clamped(ctl *c);
/* ctl_persist.c (the loop's thread, lock not held): a decision's rows as
 * one transaction on c->pdb; 0, or -1 (logged and counted in db_errors) */
int ctl_persist_open(ctl *c);
int ctl_persist(ctl *c, const ctl_decision *d);
void ctl_persist_close(ctl *c);

/* ctl_decide.c: whether e runs at now (active, before the end of its ramp
 * down) */
int ctl_event_running(const ctl_event *e, double now);
/* a job as first seen (or resumed): no baseline, no samples */
void ctl_job_init(ctl_job *j, const char *id, int tier);
/* baselines (ctl_baseline.c): each period, a job's sample for its baseline
 * (none while an event runs); a job's baseline now (*w, *tok) and where it
 * comes from; the source's name ("steady", "short window", "estimate",
 * "late", "none") */
void ctl_baseline_observe(const ctl_cfg *cfg, ctl_job *j, double now, int event_running);
ctl_base_src ctl_baseline_now(const ctl_cfg *cfg, const ctl_job *j, double *w, double *tok);
/* an event's baseline of j (ctl_baseline.c): the lowest of its last 3
   steady windows that ended by announced_t, at most its knee x 1.02; how
   it was chosen in *how */
ctl_base_src ctl_baseline_event(const ctl_cfg *cfg, const ctl_job *j, double announced_t, double *w,
                                double *tok, ctl_base_how *how);
/* the same, from j's snapshot for that announcement where one was taken
   (ctl_baseline_snapshots: each period, for the scheduled events already
   announced, while the windows before the announcement are still kept) */
ctl_base_src ctl_baseline_for(const ctl_cfg *cfg, const ctl_job *j, double announced_t, double *w,
                              double *tok, ctl_base_how *how);
void ctl_baseline_snapshots(const ctl_cfg *cfg, ctl_state *s, double now);
/* the least power at which j's measured points (known) reach the plateau
   (top_w, top_tokens); NaN when they cannot say */
double ctl_job_knee_w(const ctl_job *j, double top_w, double top_tokens);
/* ctl_claims.c: j's telemetry now: SM clock x SM activity where known,
   the clock alone where not (NaN: no clock); a capped sample's claimed
   throughput at least ref_tokens x power / ref_w (elasticity <= 1); each
   period, the claims of capped settled jobs checked against their
   telemetry (a job not believed: untrusted, noted) */
double ctl_job_tel_x(const ctl_job *j);
double ctl_claim_clamp(double tokens_per_s, double power_w, double ref_tokens, double ref_w);
void ctl_claims_period(ctl_state *s, int active, ctl_decision *d);
const char *ctl_base_src_name(ctl_base_src s);
int ctl_base_src_parse(const char *name, ctl_base_src *s); /* 0; -1 (NONE) when unknown */

/* ctl_plan.c (pure): the response plan, computed at the end of each
 * decision; a trigger's caps (trig_cap_w) for cut_pct % off the plan's
 * baseline, the count of jobs capped, *how "plan", "interpolated" or
 * "equal weight"; a job's baseline for the plan; the cut in % an event
 * asks for now against the plan's baseline (NaN: none, e.g. a ramp) */
void ctl_plan_update(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s, ctl_notes *notes);
size_t ctl_plan_trigger(const ctl_cfg *cfg, ctl_state *s, double cut_pct, const char **how);
double ctl_plan_base_w(const ctl_cfg *cfg, const ctl_state *s, const ctl_job *j);
double ctl_event_cut_pct(const ctl_cfg *cfg, const ctl_state *s, const ctl_event *e);
/* ctl_trigger.c (lock held): a trigger of cut_pct from the plan, pushed at
 * once by the control loop's thread; id names it in the log. 0, or -1 with
 * err (a cut out of range, nothing to cap yet). */
int ctl_trigger(ctl *c, const char *id, double cut_pct, pfi_error *err);

/* ctl_events.c (lock held): schedule ev, or update the scheduled event with
 * its id (*updated: 1 then, 0 for a new one); refused: PFI_ESTATE (it
 * already started or ended), PFI_EINVAL (out of bounds), PFI_ERANGE (it
 * already ended), PFI_ENOMEM (its source's bound of pending events,
 * ctl_state.h, or out of memory), with the reason in err. Cancel:
 * PFI_ENOTFOUND, PFI_ESTATE (already over). Each change is stored at once.
 * Adding may move the event table: pointers into it are stale after. */
/* who: the operator, "grid" or "schedule" (ctl_state.h, CTL_WHO_MAX),
 * recorded as the event's created_by (a new one), changed_by (an update),
 * cancelled_by, and named in the log line. */
pfi_status ctl_event_add(ctl *c, const pfi_grid_event *ev, const char *who, int *updated,
                         pfi_error *err);
pfi_status ctl_event_cancel(ctl *c, const char *id, const char *who, pfi_error *err);
ctl_event *ctl_event_find(ctl *c, const char *id);
/* id is another event's (1, err says whose: the API answers 409), or free
 * (0); api_change_ok: a scheduled api event's id may be POSTed again */
int ctl_event_id_taken(ctl *c, const char *id, int api_change_ok, pfi_error *err);
/* the class of a source's bound: "grid" (openadr), "trigger", "operator"
 * (api, schedule); the events of a class scheduled or running */
const char *ctl_event_class(const char *source);
size_t ctl_events_pending(const ctl_state *s, const char *cls);
/* forget the finished events beyond CTL_KEEP_FINISHED (oldest end first) */
void ctl_events_forget_finished(ctl_state *s);
/* the target in W of an event that is active (its baseline resolved) */
double ctl_event_target_w(const ctl_cfg *cfg, const ctl_event *e);

/* ctl_online.c (pure): safe-online's targets for this period as the managed
 * jobs' fixed targets (pj[q] is the ctl_job idx[q]); budget_w the event's
 * budget now, fixed_w the unreachable jobs' assumed power. end: the event
 * is over (state freed). json: its state for /v1/status (null: none). */
struct pfi_pc_job;
void ctl_online_period(const ctl_cfg *cfg, const pfi_modelfile *cm, ctl_state *s, ctl_notes *notes,
                       double budget_w, double fixed_w, struct pfi_pc_job *pj, const size_t *idx,
                       size_t np);
void ctl_online_end(ctl_state *s);
json_t *ctl_online_json(const ctl_state *s);
unsigned long long ctl_online_rounds(const ctl_state *s);
double ctl_online_target_w(const ctl_state *s, const char *id, int tier); /* NaN: none */

/* ctl_profile.c (pure, part of the decision): profiles at job start and
 * what is remembered of each job's curve. period: the profiles' step this
 * period (after the baselines; dt the pfi clock seconds since the last
 * period), setting the profiled jobs' alloc_cap_w and d->profiling.
 * keep: job j's known points into the memory (s->mem) and d->mem_rows.
 * known_set: j's known points (the newest CTL_KNOWN_MAX of pt). mem_put:
 * an entry into s->mem, replacing the one with its key (0; -1 out of
 * memory). mean_se: the mean of k samples and its standard error (the
 * sample deviation with k >= 3, at least a quarter of cv x the mean;
 * else cv x the mean). json: /v1/status's "profile" of a job. */
void ctl_profile_period(const ctl_cfg *cfg, ctl_state *s, double now, double dt, int active,
                        ctl_decision *d);
void ctl_profile_keep(ctl_state *s, const ctl_job *j, ctl_decision *d);
void ctl_known_set(ctl_job *j, const pfi_online_point *pt, size_t n);
/* j's remembered points forgotten at its end (in the table; a row of the
   decision deletes it from SQLite) */
void ctl_mem_forget(ctl_state *s, const ctl_job *j, ctl_decision *d);
int ctl_mem_put(ctl_state *s, const ctl_mem *m);
void ctl_mean_se(const double *v, size_t k, double cv, double *mean, double *se);
json_t *ctl_profile_json(const ctl_job *j);
const char *ctl_profile_state_name(const ctl_job *j);
/* ctl_online.c: at an event's end, what it measured of each job becomes
 * its known points (kept, stored); the SLA shortfall now (W; NaN: none) */
void ctl_online_remember(ctl_state *s, ctl_decision *d);
/* what safe-online measured of job j in the running event, its known
   points included (failover: a new leader starts from them): the number
   of points in pt (at most max; 0: none, or not in the event's state) */
size_t ctl_online_points(const ctl_state *s, const ctl_job *j, pfi_online_point *pt, size_t max);
double ctl_online_shortfall_w(const ctl_state *s);
/* ctl_db.c: the remembered points into s->mem (at start); 0, or -1 */
int ctl_db_load_mem(ctl *c);

/* ctl_openadr.c (lock held): one OpenADR EVENT or notification from the
 * webhook or the poller (via: "webhook", "poll"), sent by who ("grid": the
 * VTN; an operator's name). Returns the HTTP status
 * that answers it and sets *answer (a JSON object: the event's id, what was
 * done, its steps as listed by /v1/events) or err. */
int ctl_openadr_take(ctl *c, const char *json, size_t len, const char *via, const char *who,
                     json_t **answer, pfi_error *err);
/* the checks of ctl_openadr_take without its effects (a follower, before
 * it commits a webhook's notification for the leader: ctl_inbox.c): 0 with
 * the event's id (or ""), or an error */
int ctl_openadr_check(ctl *c, const char *json, size_t len, char *id, size_t id_n, pfi_error *err);
/* the summary of rejection lines not logged in a minute that has ended
 * (pfi_oadr_log_due), if any (lock held; the control loop, each period) */
void ctl_openadr_log_due(ctl *c);
/* the stored first receipts of events bounded (lock held; at start, after a
   poll's page, and each minute) */
void ctl_openadr_prune(ctl *c);
/* ctl_event_json.c: an event as the API shows it */
json_t *ctl_event_json(const ctl_event *e);
/* who created, changed, cancelled e into o: created_by, changed_by,
 * cancelled_by (null: nobody, or not known) */
void ctl_event_who_json(json_t *o, const ctl_event *e);
/* the HTTP status answering an event's change: 201 new, 200 updated or
 * cancelled; 400, 404, 409, 422, 503 as ctl_event_add and _cancel refuse */
int ctl_event_http_code(pfi_status st, int updated);

/* The one rule for "at target": measured power at or below the target plus
 * tolerance_pct. The cycle's time to target, the report's steady-window
 * verdict and the status page's met / not met all use it. */
static inline int ctl_within_target(const ctl_cfg *cfg, double measured_w, double target_w)
{
    return measured_w <= target_w * (1 + cfg->tolerance_pct / 100);
}

/* ctl_report.c (lock not held: e is the caller's copy; the samples are
 * read through ctl_db_reader) */
/* the verdict on an ended event e from its samples: nothing to shed (no
 * managed load at its start), not applicable (cancelled before any period
 * below its baseline by more than the tolerance), no steady samples, else
 * met (every steady-window period within target) or not; *mean_w the mean
 * measured power over the steady window (NaN without one); returns the
 * steady samples, -1 when out of memory */
int ctl_report_verdict(ctl *c, const ctl_event *e, ctl_verdict *v, double *mean_w);
/* "pending", "met", "not met", "nothing to shed", "not applicable", "no steady samples" */
const char *ctl_verdict_name(ctl_verdict v);
/* cancelled before it started (no baseline was ever taken): its verdict
   is "cancelled" everywhere (issue 41: it read "pending" in `pfi event
   ls` and "nothing to shed" in its report) */
int ctl_event_never_started(const ctl_event *e);
/* the verdict an active event has now: nothing to shed, or met / not met
   at measured_w (pending in its ramps: phase "ramp" or "ramp down") */
ctl_verdict ctl_verdict_now(const ctl_cfg *cfg, const ctl_event *e, double measured_w,
                            const char *phase);
char *ctl_report_json(ctl *c, const ctl_event *e);
/* the chart of event e as PNG bytes (*png malloc'd, *len bytes); drawn
 * once per content (the last few kept); PFI_ESTATE with fewer than two
 * samples */
pfi_status ctl_report_png(ctl *c, const ctl_event *e, char **png, size_t *len, pfi_error *err);

/* ctl_view.c (lock not held: each copies what it needs under it): GET
 * /v1/status as JSON, GET /metrics as Prometheus text (malloc'd, *len
 * bytes); NULL when out of memory */
json_t *ctl_view_status(ctl *c);
char *ctl_view_metrics(ctl *c, size_t *len);

/* ctl_poll.c: the events of a VTN's answer (a JSON array of EVENTs), each
 * through the OpenADR parser as the poller hands them; the count listed
 * (lock not held) */
size_t ctl_openadr_ingest(ctl *c, const char *body);
/* the same for a page the VTN was asked for with limit (0: none): a longer
 * one is refused whole (reason page, logged naming vtn and its size); the
 * lock is taken in holds of at most 50 ms (ingest_hold_max_s) */
size_t ctl_openadr_ingest_page(ctl *c, const char *body, size_t limit, const char *vtn);
/* the openadr.poll_url poller's thread (none when it is not set); 0, or -1 (logged) */
int ctl_poll_start(ctl *c);
void ctl_poll_stop(ctl *c);

/* ctl_vtn.c: the callback token (read or made), then a thread that
 * registers, subscribes and polls the VTN (cfg.vtn); 0, or -1 (logged) */
int ctl_vtn_start(ctl *c);
void ctl_vtn_stop(ctl *c);

/* ctl_operators.c: the operators' tokens from their files (lock not held, at start): 0, or
 * -1 (logged, naming the key: a file that cannot be read, two operators
 * with one token) */
int ctl_operators_open(ctl *c);
/* the operator named name (NULL: none) */
const struct ctl_cfg_operator *ctl_operator_find(const ctl *c, const char *name);
/* who may cancel e (DELETE /v1/events/ID): 1, or 0 (403) */
int ctl_operator_may_cancel(ctl *c, const char *who, const ctl_event *e);
/* the VTN's callback token is no operator's: 0, or -1 (logged) */
int ctl_operators_grid_check(ctl *c);
/* httpd.h's authorize for the API (ud: the ctl) */
int ctl_authorize(void *ud, const char *method, const char *url, const char *authorization,
                  char *who, size_t who_n, char *msg, size_t msg_n);

/* ctl_http.c */
int ctl_http_start(ctl *c);
/* pfi_ctl_http_refused_total's reasons, by index: 401, 403, 405, 409 */
extern const char *const ctl_refused_reason[4];
void ctl_http_stop(ctl *c);
extern const char ctl_status_page[], ctl_page_css[], ctl_page_js[], ctl_page_csp[];

#endif
