/* ctl_main.c — pfi-controller: options, start-up, the control loop
 * (ctl.h; docs/controller.md).
 *
 * Start-up: the configuration, the agents' tokens, SQLite (events, each
 * agent's lease generation — one above the last run's, so that agent
 * accepts us at once — and, for an event that was running, each job's
 * baseline), the
 * schedule file, the HTTP API. Each control period: collect every agent's
 * node view, run the cycle, push caps (or, after an event, hand the GPUs
 * back); openadr.poll_url is polled by a thread of its own (ctl_poll.c). SIGTERM / SIGINT / SIGQUIT
 * stop the controller without lifting caps: the agents' leases hold them for lease_s, and a
 * controller started again in that time resumes the event from SQLite; if none comes back, the
 * agents restore the baselines. SIGHUP reopens the `log` file (after logrotate renamed it); nothing
 * else. Under systemd (notify.h): READY=1 after the first control period, WATCHDOG=1 from the
 * control loop, STOPPING=1 at a stop signal. Exit status (pfi-controller(8)): 2 for a bad command
 * line or configuration file, 1 when it cannot start (the files the configuration names, the
 * database, the address), 0 after a signal. */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "atomic.h"
#include "caps_request.h"
#include "clock.h"
#include "ctl.h"
#include "ctl_failover.h"
#include "ctl_inbox.h"
#include "ctl_offer.h"
#include "ctl_reach.h"
#include "ctl_record.h"
#include "ctl_store.h"
#include "daemon_util.h"
#include "notify.h"
#include "options.h"
#include "pfi/version.h"
#include "vec.h"

typedef struct ctl_args {
    const char *config, *db, *listen, *port_file;
    double scale, epoch;
    int dry, use_syslog;
    const char *log_level, *record;
} ctl_args;

#define OPT_T ctl_args
static const pfi_opt ctl_options[] = {
    OPT_FILENAME(0, "config", config, "FILE",
                 "the configuration (JSON; docs/controller.md; required)"),
    OPT_FILENAME(0, "db", db, "FILE", "override the configuration's SQLite file"),
    OPT_STRING(0, "listen", listen, "ADDR:PORT",
               "override the configuration's address (port 0 picks one)"),
    OPT_FILENAME(0, "port-file", port_file, "FILE", "write the bound port here once listening"),
    OPT_BOOLEAN(0, "dry-run", dry, "compute and report, push no caps"),
    OPT_FILENAME(0, "record", record, "FILE",
                 "append each control period's inputs and decision to FILE as JSON lines, for "
                 "replay (docs/controller.md)"),
    OPT_STRING(0, "log-level", log_level, "LEVEL", "error, warning, info (default) or debug"),
    OPT_BOOLEAN(0, "syslog", use_syslog,
                "log to syslog (facility daemon) instead of stderr; not with the configuration's "
                "log"),
    OPT_DOUBLE(0, "time-scale", scale, "X", -INFINITY, INFINITY,
               "the pfi clock's speed-up (shared with the agents)"),
    OPT_DOUBLE(0, "epoch", epoch, "T", -INFINITY, INFINITY,
               "the pfi clock's epoch (shared with the agents)"),
    OPT_STOP(0, "version", "print the version and exit"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

static const pfi_opts ctl_opts = {
    .prog = "pfi-controller",
    .see = "see pfi-controller --help",
    .usage = "pfi-controller --config FILE [options]",
    .description = "The pfi cluster controller: receives grid events (POST /v1/events, OpenADR 3,\n"
                   "a schedule file), splits each cut across the managed jobs with the allocator,\n"
                   "enforces it through the node agents (leased caps), verifies it and reports it\n"
                   "(GET /v1/events/ID/report, a status page at /). See pfi-controller(8).\n",
    .options = ctl_options,
};

static volatile sig_atomic_t g_stop, g_hup;
/* the loop's wake eventfd (ctl_agents_wake_fd) once the pool has it: a
   signal wakes the loop at once, whichever thread it lands on (write(2) is
   async-signal-safe); -1 before and after */
static volatile sig_atomic_t g_wake_fd = -1;
static void wake_loop(void)
{
    uint64_t one = 1;
    int fd = g_wake_fd;
    if (fd >= 0 && write(fd, &one, sizeof one) < 0) { /* already signalled */
    }
}
static void on_signal(int s)
{
    g_stop = s;
    wake_loop();
}
static void on_hup(int s)
{
    g_hup = s;
    wake_loop();
}

/* the log (daemon_util.h): one controller per process */
static pfi_daemon_log g_log;

static void load_schedule(ctl *c)
{
    if (!c->cfg.schedule[0]) return;
    FILE *f = fopen(c->cfg.schedule, "r");
    if (!f) {
        ctl_log(c, "warning: schedule %s: cannot open: %s", c->cfg.schedule, strerror(errno));
        return;
    }
    json_error_t je;
    json_t *a = json_loadf(f, 0, &je);
    fclose(f);
    if (!a) {
        ctl_log(c, "warning: schedule %s:%d: %s", c->cfg.schedule, je.line, je.text);
        return;
    }
    size_t i;
    json_t *x;
    json_array_foreach(json_is_array(a) ? a : json_object_get(a, "events"), i, x)
    {
        char *t = json_dumps(x, JSON_COMPACT);
        pfi_grid_event ev;
        pfi_error e;
        if (!t) ctl_log(c, "warning: schedule %s: events[%zu]: out of memory", c->cfg.schedule, i);
        else if (pfi_grid_event_parse(t, strlen(t), &ev, &e))
            ctl_log(c, "warning: schedule %s: events[%zu]: %s", c->cfg.schedule, i, e.msg);
        else if (!ctl_event_find(c, ev.id)) {
            snprintf(ev.source, sizeof ev.source, "schedule");
            if (ctl_event_add(c, &ev, "schedule", NULL, &e))
                ctl_log(c, "warning: schedule: %s", e.msg);
        }
        free(t);
    }
    json_decref(a);
}

/* a restarted controller: each job's baseline for the event that is running */
static void resume_baselines(ctl *c)
{
    for (size_t i = 0; i < c->st.nevents; i++) {
        ctl_event *e = &c->st.event[i];
        if (e->status != CTL_EV_ACTIVE) continue;
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(c->io.db,
                               "SELECT job_id, base_w, base_tokens, tier FROM job_samples WHERE "
                               "event_id=? AND t=(SELECT MAX(t) FROM job_samples"
                               " WHERE event_id=?)",
                               -1, &s, NULL) != SQLITE_OK)
            continue;
        sqlite3_bind_text(s, 1, e->ev.id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 2, e->ev.id, -1, SQLITE_TRANSIENT);
        size_t n = 0;
        while (sqlite3_step(s) == SQLITE_ROW &&
               !PFI_VEC_RESERVE(c->st.job, c->st.job_cap, c->st.njobs + 1, NULL)) {
            ctl_job *j = &c->st.job[c->st.njobs++];
            ctl_job_init(j, (const char *)sqlite3_column_text(s, 0), sqlite3_column_int(s, 3));
            j->base_src = e->baseline_src;
            j->base_w =
                sqlite3_column_type(s, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 1);
            j->base_tokens =
                sqlite3_column_type(s, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 2);
            j->seen = 1;
            n++;
        }
        sqlite3_finalize(s);
        ctl_log(c,
                "resuming event %s (target %.0f W) with the baselines of %zu jobs; caps stay as "
                "the agents hold them",
                e->ev.id, e->target_w, n);
    }
}

/* the agents of the configuration with their tokens, and the curve model:
 * 0, or -1 (logged) */
static int load_agents(ctl *c)
{
    pfi_error e;
    c->io.nagents = c->cfg.nagents;
    c->io.agent = calloc(c->io.nagents, sizeof *c->io.agent);
    if (!c->io.agent) {
        ctl_log(c, "error: out of memory");
        return -1;
    }
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *a = &c->io.agent[i];
        snprintf(a->name, sizeof a->name, "%s", c->cfg.agents[i].name);
        snprintf(a->url, sizeof a->url, "%s", c->cfg.agents[i].url);
        if (pfi_token_read(c->cfg.agents[i].token_file, a->token, sizeof a->token, &e)) {
            ctl_log(c, "error: agents[%zu]: %s", i, e.msg);
            return -1;
        }
        if (c->cfg.agents[i].read_token_file[0] &&
            pfi_token_read(c->cfg.agents[i].read_token_file, a->read_token, sizeof a->read_token,
                           &e)) {
            ctl_log(c, "error: agents[%zu].read_token_file: %s", i, e.msg);
            return -1;
        }
        /* copies: the configuration's entries (5.7 kB each, mostly empty paths) are freed below */
        const struct ctl_cfg_agent *ca = &c->cfg.agents[i];
        a->https = !strncmp(ca->url, "https://", 8);
        if ((ca->ca_file[0] && !(a->ca_file = strdup(ca->ca_file))) ||
            (ca->client_cert[0] && !(a->client_cert = strdup(ca->client_cert))) ||
            (ca->client_key[0] && !(a->client_key = strdup(ca->client_key)))) {
            ctl_log(c, "error: out of memory");
            return -1;
        }
    }
    free(c->cfg.agents); /* 71 MB at 12,500 agents; nothing reads it after this */
    c->cfg.agents = NULL;
    if (c->cfg.curve_model[0]) {
        if (pfi_modelfile_load(c->cfg.curve_model, &c->curve_model, &e) ||
            c->curve_model.kind != PFI_MODELFILE_CURVE) {
            ctl_log(c, "error: curve_model: %s",
                    c->curve_model.kind != PFI_MODELFILE_CURVE
                        ? "not a curve model (pfi fit --curve)"
                        : e.msg);
            return -1;
        }
        c->have_curve_model = 1;
    }
    return 0;
}

/* systemd's STATUS= line after a period: agents up, the active event */
static void status_line(ctl *c, char *b, size_t n)
{
    pthread_mutex_lock(&c->mu);
    size_t up = 0;
    for (size_t i = 0; i < c->io.nagents; i++) up += c->io.agent[i].up != 0;
    const ctl_event *active = NULL;
    for (size_t i = 0; i < c->st.nevents && !active; i++)
        if (c->st.event[i].status == CTL_EV_ACTIVE) active = &c->st.event[i];
    if (active)
        snprintf(b, n, "%zu of %zu agents up; event %.64s: target %.0f W, measured %.0f W", up,
                 c->io.nagents, active->ev.id, c->st.budget_w, c->st.measured_w);
    else snprintf(b, n, "%zu of %zu agents up; no event active", up, c->io.nagents);
    pthread_mutex_unlock(&c->mu);
}

/* how long the loop may sleep between periods, wall seconds: until the next
 * period or the next scheduled event's start (pfi clock, scaled), and no
 * longer than a quarter of systemd's watchdog interval (WATCHDOG=1 is sent
 * from the loop's turns). Whatever else is due wakes it through the
 * eventfd: a trigger, an event that starts now, an OpenADR event
 * (ctl_agents_wake), a signal (wake_loop). Nothing else is pending between
 * periods: a period's and a trigger's transfers and datagram
 * acknowledgements end within their own calls (ctl_pool_run_until); the
 * VTN's and poll_url's clocks are their threads' own. */
static double idle_wait(ctl *c, const pfi_watchdog *wd, double next, double now)
{
    double until = next;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->st.nevents; i++)
        if (c->st.event[i].status == CTL_EV_SCHEDULED && c->st.event[i].ev.start < until)
            until = c->st.event[i].ev.start;
    pthread_mutex_unlock(&c->mu);
    double scale = pfi_clock_scale() > 0 ? pfi_clock_scale() : 1;
    double wait_s = (until - now) / scale;
    if (wd->interval_s > 0) wait_s = fmin(wait_s, wd->interval_s / 4);
    return fmax(0, wait_s);
}

/* each control period (at once when an event starts; ctl_period.c:
 * collect, decide, persist, push), then poll OpenADR; SIGHUP reopens the log.
 * systemd: READY=1 after the first period, then its STATUS= line after
 * each; WATCHDOG=1 from every turn of the loop. */
static void control_loop(ctl *c)
{
    double next = pfi_clock_now(), next_prune = next;
    int ready = 0;
    pfi_watchdog wd;
    pfi_watchdog_init(&wd);
    while (!g_stop) {
        pfi_watchdog_tick(&wd);
        if (g_wake_fd < 0) g_wake_fd = ctl_agents_wake_fd(c);
        if (g_hup) {
            g_hup = 0;
            pfi_daemon_log_hup(&g_log, "log");
        }
        double now = pfi_clock_now();
        pthread_mutex_lock(&c->mu);
        int wake = c->wake;
        c->wake = 0;
        /* an event starts (or its ramp ends) now: act at once, not at the next period */
        for (size_t i = 0; i < c->st.nevents; i++)
            if (c->st.event[i].status == CTL_EV_SCHEDULED && c->st.event[i].ev.start <= now)
                wake = 1;
        pthread_mutex_unlock(&c->mu);
        if (next > now + c->cfg.period_s) next = now; /* the clock stepped back */
        if (now < next && !wake) {                    /* sleep until the next period or a wake-up */
            ctl_agents_idle(c, idle_wait(c, &wd, next, now));
            continue;
        }
        next += c->cfg.period_s;
        if (next < now || wake) next = now + c->cfg.period_s;
        int lead = ctl_failover_turn(c);
        if (lead) {             /* a follower runs no period */
            ctl_inbox_apply(c); /* what followers took for the leader */
            ctl_period(c);
        }
        ctl_reach_turn(c, lead); /* a standby that reaches more agents takes over */
        pthread_mutex_lock(&c->mu);
        ctl_openadr_log_due(c); /* a minute's suppressed OpenADR lines, in one */
        if (now >= next_prune) {
            next_prune = now + 60;
            ctl_openadr_prune(c);
        }
        pthread_mutex_unlock(&c->mu);
        char st[200];
        status_line(c, st, sizeof st);
        if (!ready) {
            ready = 1;
            pfi_notify_ready("%s", st);
            pfi_daemon_log_started(&g_log);
        } else {
            pfi_notify_status("%s", st);
        }
    }
}

/* the command line's overrides, the clock and the log: 0, or the exit
 * status (2: a bad command line or configuration, 1: the log cannot open) */
static int configure(ctl *c, const ctl_args *A)
{
    pfi_error e;
    /* the configuration file: missing, unreadable or wrong, exit 2 (pfi-controller(8)) */
    if (ctl_config_load(A->config, &c->cfg, &e)) {
        ctl_log(c, "error: %s", e.msg);
        return 2;
    }
    if (A->db) snprintf(c->cfg.db, sizeof c->cfg.db, "%s", A->db);
    if (A->listen) snprintf(c->cfg.listen, sizeof c->cfg.listen, "%s", A->listen);
    if (A->dry) c->cfg.dry_run = 1;
    if (c->cfg.log[0] && A->use_syslog) {
        ctl_log(c, "error: --syslog: %s sets a log file (\"log\"); use one of them", A->config);
        return 2;
    }
    /* the signals are installed later, once the state is open */
    pfi_daemon_setup ds = {.time_scale = A->scale,
                           .epoch = A->epoch,
                           .log_level = A->log_level,
                           .log_path = c->cfg.log[0] ? c->cfg.log : NULL,
                           .use_syslog = A->use_syslog,
                           .log_what = "log",
                           .raise_nofile = 1};
    int rc = pfi_daemon_start(c->io.log, &ds);
    if (rc) return rc;
    if (isnan(c->cfg.agent_timeout_s))
        c->cfg.agent_timeout_s = fmin(2.0, fmax(0.2, 0.8 * c->cfg.period_s / pfi_clock_scale()));
    return 0;
}

/* each agent's lease generation: one above the last run's, so that it
 * accepts us at once */
static void next_generations(ctl *c)
{
    for (size_t i = 0; i < c->io.nagents; i++) {
        ctl_agent *a = &c->io.agent[i];
        long long g = 0;
        if (ctl_db_generation_get(c, a->name, &g) && !(g >= 0 && g < PFI_CAPS_GENERATION_MAX)) {
            ctl_log(c,
                    "warning: %s: agent %s's stored generation %lld is not one an agent accepts; "
                    "starting again from 1",
                    c->cfg.db, a->name, g);
            g = 0;
        }
        a->generation = a->generation_floor = g + 1;
        ctl_db_generation_set(c, a->name, a->generation);
    }
}

/* the operators' tokens, the agents, SQLite and what it holds (events,
 * generations, the feedback term, a running event's baselines), the
 * schedule, --record: 0, or -1 (logged) */
static int open_state(ctl *c, const ctl_args *A)
{
    c->st.plan_t = c->trigger_push_s = NAN;
    if (ctl_operators_open(c)) return -1;
    if (load_agents(c) || ctl_agents_open(c)) return -1;
    /* before the database is opened (its schema, migrations) or written */
    if (ctl_lock_take(c) || ctl_db_open(c) || ctl_db_load_events(c) || ctl_db_load_mem(c) ||
        ctl_persist_open(c))
        return -1;
    ctl_events_forget_finished(&c->st); /* the table keeps what still matters */
    next_generations(c);
    c->st.integral_w = ctl_db_meta_get(c, "integral_w", 0);
    c->st.feasible = 1;
    pthread_mutex_lock(&c->mu);
    load_schedule(c);
    resume_baselines(c);
    int rec_failed = A->record && ctl_record_open(c, A->record, A->config);
    pthread_mutex_unlock(&c->mu);
    return rec_failed ? -1 : 0;
}

/* after a stop signal: caps stay under the agents' leases */
static void shut_down(ctl *c)
{
    pfi_notify_stopping("signal %d: stopping; caps stay under the agents' leases", (int)g_stop);
    ctl_failover_stop(c); /* a leader's lease revoked: a standby takes over at once */
    ctl_vtn_stop(c);
    ctl_poll_stop(c);
    ctl_log(c, "signal %d: stopping; caps stay under the agents' leases (%g s)", (int)g_stop,
            c->cfg.lease_s);
    ctl_http_stop(c);
    ctl_offer_stop(c); /* after the API: a handler may be reading the offer */
    ctl_record_close();
    ctl_state_free(&c->st);
    ctl_inputs_free(&c->io.in);
    ctl_decision_free(&c->io.dec);
    pfi_oadr_book_free(&c->oadr_book);
    free(c->io.program_descriptors);
    free(c->io.op_token);
    ctl_config_free(&c->cfg);
    ctl_persist_close(c);
    ctl_db_close(c);
    pfi_daemon_log_close(&g_log);
}

int main(int argc, char **argv)
{
    ctl_args A = {NULL, NULL, NULL, NULL, NAN, NAN, 0, 0, NULL, NULL};
    int optind0;
    switch (pfi_opts_parse(&ctl_opts, &A, argc, argv, stderr, &optind0)) {
    case PFI_OPTS_OK: break;
    case PFI_OPTS_HELP: pfi_opts_help(&ctl_opts, stdout); return 0;
    case PFI_OPTS_STOP: printf("pfi-controller %s\n", PFI_VERSION); return 0;
    case PFI_OPTS_NOMEM: return 1;
    default: return 2;
    }
    if (optind0 < argc) {
        fprintf(stderr, "pfi-controller: unexpected argument '%s' (see pfi-controller --help)\n",
                argv[optind0]);
        return 2;
    }
    if (!A.config) {
        fprintf(stderr, "pfi-controller: --config FILE is required (see pfi-controller --help)\n");
        return 2;
    }
    static ctl C;
    ctl *c = &C;
    pfi_daemon_log_init(&g_log, "pfi-controller");
    c->io.log = &g_log;
    int rc = configure(c, &A);
    if (rc) return rc;
    c->store = c->cfg.fo.netcd ? &ctl_store_etcd : &ctl_store_sqlite;
    pthread_mutex_init(&c->mu, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* no fastbins: a period frees 12,500 parsed views' small blocks, and each
       large allocation after them made glibc consolidate every fastbin (a
       seventh of the controller's CPU at 12,500 agents); tcache still takes
       the small blocks */
    mallopt(M_MXFAST, 0);
    if (open_state(c, &A)) return 1;
    ctl_log(c, "pfi-controller %s: %zu agents, strategy %s, period %g s, lease %g s%s", PFI_VERSION,
            c->io.nagents, pfi_strategy_name(c->cfg.strategy), c->cfg.period_s, c->cfg.lease_s,
            c->cfg.dry_run ? ", DRY RUN" : "");
    pfi_daemon_signals(on_signal, on_hup);
    /* the callback token first: the webhook accepts it from the start */
    if (ctl_failover_start(c) || ctl_vtn_start(c) || ctl_poll_start(c) || ctl_offer_start(c) ||
        ctl_http_start(c))
        return 1;
    char where[160];
    const char *colon = strrchr(c->cfg.listen, ':');
    snprintf(where, sizeof where, "%.*s:%d", colon ? (int)(colon - c->cfg.listen) : 0,
             c->cfg.listen, c->io.port);
    ctl_lock_name(c, where);
    if (A.port_file) {
        char b[32];
        int k = snprintf(b, sizeof b, "%d\n", c->io.port);
        pfi_error e;
        if (pfi_write_file_private(A.port_file, b, (size_t)k, &e)) ctl_log(c, "error: %s", e.msg);
    }
    control_loop(c);
    g_wake_fd = -1; /* the pool goes with the shut-down */
    shut_down(c);
    return 0;
}
