/* ctl_db.c — the controller's records in SQLite (WAL): events (so they
 * survive restarts), per-period samples of every event (cluster and per job,
 * for the report), each agent's lease generation (INTEGER, one row per
 * agent name), the OpenADR 3 reports not yet accepted by the VTN, and a few state values (the
 * feedback term) so a restarted controller resumes an event without lifting caps, and what is
 * known of each job's curve (job_points: profiles, events). The database's
 * format version is SQLite's user_version (PRAGMA): 0 (a database from before versions were kept)
 * is read as 1; 1 gets format 2's columns; a newer one is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS events(id TEXT PRIMARY KEY, json TEXT NOT NULL, source TEXT, "
    "status TEXT NOT NULL,"
    " baseline_w REAL, target_w REAL, ramp_s REAL, ramp_down_s REAL, reached_t REAL,"
    " baseline_source TEXT, created_by TEXT, changed_by TEXT, cancelled_by TEXT);"
    "CREATE TABLE IF NOT EXISTS samples(event_id TEXT, t REAL, budget_w REAL, target_w REAL, "
    "measured_w REAL,"
    " PRIMARY KEY(event_id, t));"
    "CREATE TABLE IF NOT EXISTS job_samples(event_id TEXT, t REAL, job_id TEXT, tier INTEGER, "
    "power_w REAL,"
    " tokens_per_s REAL, cap_w REAL, alloc_w REAL, base_w REAL, base_tokens REAL, PRIMARY "
    "KEY(event_id, t, job_id, tier));"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value REAL);"
    "CREATE TABLE IF NOT EXISTS agent_generations(agent TEXT PRIMARY KEY, generation INTEGER NOT "
    "NULL);"
    /* OpenADR 3 reports to the VTN, kept until it accepted them (ctl_vtn.c) */
    "CREATE TABLE IF NOT EXISTS vtn_reports(event_id TEXT PRIMARY KEY, body TEXT NOT NULL,"
    " tries INTEGER NOT NULL DEFAULT 0, accepted INTEGER NOT NULL DEFAULT 0, report_id TEXT);"
    /* event_id: "EVENTID#k", report interval k; accepted: 0 to send, 1 accepted
       (report_id), 2 refused by the VTN (4xx), 3 nothing to report */
    /* OpenADR 3 (issue 29): each step's VTN event id and interval id (for its
       REPORT), and the first receipt of each event id (what its "now" means) */
    "CREATE TABLE IF NOT EXISTS oadr_steps(step_id TEXT PRIMARY KEY, event_id TEXT NOT NULL,"
    " interval_id INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS oadr_first(event_id TEXT PRIMARY KEY, first_s REAL NOT NULL);"
    /* how each job's baseline for an event was chosen (issue 41; the report) */
    "CREATE TABLE IF NOT EXISTS event_baselines(event_id TEXT NOT NULL, job_id TEXT NOT NULL,"
    " tier INTEGER NOT NULL, how TEXT NOT NULL, PRIMARY KEY(event_id, job_id, tier));"
    /* what is known of each job's curve (format 3, issue 31; ctl_profile.c):
       its key, whether its profile finished and what it cost, its points as
       JSON [[power_w, power_se_w, tokens_per_s, tokens_se], ...] */
    "CREATE TABLE IF NOT EXISTS job_points(job_id TEXT NOT NULL, tier INTEGER NOT NULL,"
    " gpus INTEGER NOT NULL, hw_max_w REAL NOT NULL, feat_dram REAL, feat_copy REAL,"
    " feat_tensor REAL, feat_sm REAL, profiled INTEGER NOT NULL, cost_ratio REAL,"
    " points TEXT NOT NULL, t REAL, PRIMARY KEY(job_id, tier, gpus, hw_max_w));"
    /* the one cluster-wide generation of earlier versions: one agent's answer could lock out all */
    "DELETE FROM meta WHERE key='generation';";

/* Format 2 (issue 30): events carry their baseline's source and the
 * operators who created, changed and cancelled them; a format-1 table
 * gets the columns (NULL in its rows: not known). Format 3 (issue 31):
 * the job_points table (made by the schema; an older database gets it
 * empty). Format 4 (issue 41): events carry when they were announced (an
 * older database's rows: NULL, their start stands for it) */
#define CTL_DB_FORMAT_VERSION 4
static const char *const v2_columns[] = {"baseline_source TEXT", "created_by TEXT",
                                         "changed_by TEXT", "cancelled_by TEXT",
                                         "announced_t REAL"};

static int has_column(sqlite3 *db, const char *table, const char *col, size_t n)
{
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) return -1;
    int found = 0;
    while (!found && sqlite3_step(s) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 1);
        found = name && strlen(name) == n && !strncmp(name, col, n);
    }
    sqlite3_finalize(s);
    return found;
}

/* the columns of later formats, then the version: 0, or -1 (logged) */
static int migrate(ctl *c)
{
    for (size_t i = 0; i < sizeof v2_columns / sizeof *v2_columns; i++) {
        size_t n = strcspn(v2_columns[i], " ");
        int h = has_column(c->io.db, "events", v2_columns[i], n);
        char sql[128];
        snprintf(sql, sizeof sql, "ALTER TABLE events ADD COLUMN %s", v2_columns[i]);
        if (h < 0 || (!h && sqlite3_exec(c->io.db, sql, NULL, NULL, NULL) != SQLITE_OK)) {
            ctl_log(c, "error: %s: %s", c->cfg.db, sqlite3_errmsg(c->io.db));
            return -1;
        }
    }
    char sql[48];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", CTL_DB_FORMAT_VERSION);
    if (sqlite3_exec(c->io.db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        ctl_log(c, "error: %s: %s", c->cfg.db, sqlite3_errmsg(c->io.db));
        return -1;
    }
    return 0;
}

static int db_version(ctl *c)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK) return -1;
    int v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

int ctl_db_open(ctl *c)
{
    if (sqlite3_open(c->cfg.db, &c->io.db) != SQLITE_OK) {
        ctl_log(c, "error: %s: %s", c->cfg.db, sqlite3_errmsg(c->io.db));
        return -1;
    }
    sqlite3_busy_timeout(c->io.db, 2000);
    int v = db_version(c);
    if (v < 0 || v > CTL_DB_FORMAT_VERSION) {
        if (v < 0) ctl_log(c, "error: %s: %s", c->cfg.db, sqlite3_errmsg(c->io.db));
        else
            ctl_log(c, "error: %s: format_version %d is newer than this controller's (%d)",
                    c->cfg.db, v, CTL_DB_FORMAT_VERSION);
        return -1;
    }
    char *msg = NULL;
    if (sqlite3_exec(c->io.db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        ctl_log(c, "error: %s: %s", c->cfg.db, msg ? msg : "schema");
        sqlite3_free(msg);
        return -1;
    }
    if (migrate(c)) return -1;
    /* the readers': after the schema (a read-only connection cannot make it) */
    pthread_mutex_init(&c->io.rmu, NULL);
    if (sqlite3_open_v2(c->cfg.db, &c->io.rdb, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        ctl_log(c, "error: %s: %s", c->cfg.db, sqlite3_errmsg(c->io.rdb));
        return -1;
    }
    sqlite3_busy_timeout(c->io.rdb, 2000);
    return 0;
}

sqlite3 *ctl_db_reader(ctl *c)
{
    pthread_mutex_lock(&c->io.rmu);
    return c->io.rdb;
}

void ctl_db_reader_done(ctl *c)
{
    pthread_mutex_unlock(&c->io.rmu);
}

void ctl_db_close(ctl *c)
{
    sqlite3_close(c->io.rdb);
    c->io.rdb = NULL;
    sqlite3_close(c->io.db);
    c->io.db = NULL;
}

double ctl_db_col_num(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}
void ctl_db_bind_num(sqlite3_stmt *s, int i, double v)
{
    if (isnan(v)) sqlite3_bind_null(s, i);
    else sqlite3_bind_double(s, i, v);
}

/* the API's write sets every column on conflict; the period's the columns
 * its decision changes (ctl_persist.c): never who created, changed or
 * cancelled it (its copy of the event may be older than the API's change) */
static const char put_event_sql[] =
    "INSERT INTO events(id,json,source,status,baseline_w,target_w,ramp_s,ramp_down_s,reached_t,"
    "baseline_source,created_by,changed_by,cancelled_by,announced_t)"
    " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT(id) DO UPDATE SET"
    " status=excluded.status, baseline_w=excluded.baseline_w, target_w=excluded.target_w,"
    " reached_t=excluded.reached_t, baseline_source=excluded.baseline_source";
static const char put_event_all_sql[] =
    ", json=excluded.json, ramp_s=excluded.ramp_s, ramp_down_s=excluded.ramp_down_s,"
    " created_by=excluded.created_by, changed_by=excluded.changed_by,"
    " cancelled_by=excluded.cancelled_by, announced_t=excluded.announced_t";

/* "" as NULL, both ways */
static void bind_who(sqlite3_stmt *s, int i, const char *who)
{
    if (who[0]) sqlite3_bind_text(s, i, who, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(s, i);
}
static void col_who(sqlite3_stmt *s, int i, char *who, size_t n)
{
    const char *t = (const char *)sqlite3_column_text(s, i);
    snprintf(who, n, "%s", t ? t : "");
}

int ctl_db_event_row(sqlite3 *db, const ctl_event *e, int all_columns)
{
    char sql[sizeof put_event_sql + sizeof put_event_all_sql];
    snprintf(sql, sizeof sql, "%s%s", put_event_sql, all_columns ? put_event_all_sql : "");
    char *j = pfi_grid_event_format(&e->ev);
    sqlite3_stmt *s;
    if (!j) return -1; /* out of bounds (ctl_event_add refuses those): never stored */
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        free(j);
        return -1;
    }
    sqlite3_bind_text(s, 1, e->ev.id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, j, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, e->ev.source, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, ctl_event_status_name(e->status), -1, SQLITE_STATIC);
    ctl_db_bind_num(s, 5, e->baseline_w);
    ctl_db_bind_num(s, 6, e->target_w);
    ctl_db_bind_num(s, 7, e->ramp_s);
    ctl_db_bind_num(s, 8, e->ramp_down_s);
    ctl_db_bind_num(s, 9, e->reached_t);
    if (e->status == CTL_EV_SCHEDULED) sqlite3_bind_null(s, 10);
    else sqlite3_bind_text(s, 10, ctl_base_src_name(e->baseline_src), -1, SQLITE_STATIC);
    bind_who(s, 11, e->created_by);
    bind_who(s, 12, e->changed_by);
    bind_who(s, 13, e->cancelled_by);
    ctl_db_bind_num(s, 14, e->announced_t);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(s);
    free(j);
    return rc;
}

int ctl_db_put_event(ctl *c, const ctl_event *e)
{
    int rc = ctl_db_event_row(c->io.db, e, 1);
    if (rc)
        ctl_log(c, "error: saving event %s: %s", e->ev.id,
                pfi_grid_event_check(&e->ev, NULL) ? "out of bounds" : sqlite3_errmsg(c->io.db));
    return rc;
}

int ctl_db_load_events(ctl *c)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(
            c->io.db,
            "SELECT json,source,status,baseline_w,target_w,ramp_s,ramp_down_s,reached_t,"
            "baseline_source,created_by,changed_by,cancelled_by,announced_t FROM events ORDER BY "
            "rowid",
            -1, &s, NULL) != SQLITE_OK)
        return -1;
    c->st.nevents = 0;
    ctl_event tmp;
    while (sqlite3_step(s) == SQLITE_ROW) {
        ctl_event *e = &tmp;
        memset(e, 0, sizeof *e);
        const char *j = (const char *)sqlite3_column_text(s, 0);
        pfi_error err;
        if (!j || pfi_grid_event_parse(j, strlen(j), &e->ev, &err)) {
            ctl_log(c, "warning: %s: a stored event does not parse (%s); skipped", c->cfg.db,
                    j ? err.msg : "empty");
            continue;
        }
        snprintf(e->ev.source, sizeof e->ev.source, "%s", (const char *)sqlite3_column_text(s, 1));
        if (ctl_event_status_parse((const char *)sqlite3_column_text(s, 2), &e->status)) {
            ctl_log(c, "warning: %s: stored event %s has an unknown status; skipped", c->cfg.db,
                    e->ev.id);
            continue;
        }
        e->baseline_w = ctl_db_col_num(s, 3);
        e->target_w = ctl_db_col_num(s, 4);
        e->ramp_s = ctl_db_col_num(s, 5);
        e->ramp_down_s = ctl_db_col_num(s, 6);
        e->reached_t = ctl_db_col_num(s, 7);
        ctl_base_src_parse((const char *)sqlite3_column_text(s, 8), &e->baseline_src);
        col_who(s, 9, e->created_by, sizeof e->created_by);
        col_who(s, 10, e->changed_by, sizeof e->changed_by);
        col_who(s, 11, e->cancelled_by, sizeof e->cancelled_by);
        e->announced_t = ctl_db_col_num(s, 12);
        ctl_event *slot = ctl_state_event_new(&c->st);
        if (!slot) {
            ctl_log(c, "error: %s: out of memory loading events", c->cfg.db);
            break;
        }
        *slot = tmp;
    }
    sqlite3_finalize(s);
    return 0;
}

int ctl_db_meta_set(ctl *c, const char *key, double v)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "INSERT OR REPLACE INTO meta VALUES(?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 2, v);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(s);
    return rc;
}

double ctl_db_meta_get(ctl *c, const char *key, double dflt)
{
    sqlite3_stmt *s;
    double v = dflt;
    if (sqlite3_prepare_v2(c->io.db, "SELECT value FROM meta WHERE key=?", -1, &s, NULL) !=
        SQLITE_OK)
        return dflt;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    return v;
}

int ctl_db_generation_get(ctl *c, const char *agent, long long *g)
{
    sqlite3_stmt *s;
    int found = 0;
    if (sqlite3_prepare_v2(c->io.db, "SELECT generation FROM agent_generations WHERE agent=?", -1,
                           &s, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(s, 1, agent, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER) {
        *g = (long long)sqlite3_column_int64(s, 0);
        found = 1;
    }
    sqlite3_finalize(s);
    return found;
}

int ctl_db_generation_set(ctl *c, const char *agent, long long g)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "INSERT OR REPLACE INTO agent_generations VALUES(?,?)", -1, &s,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, agent, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)g);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    if (rc) ctl_log(c, "error: saving agent %s's generation: %s", agent, sqlite3_errmsg(c->io.db));
    sqlite3_finalize(s);
    return rc;
}

int ctl_db_report_has(ctl *c, const char *event_id)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "SELECT 1 FROM vtn_reports WHERE event_id=?", -1, &s, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return r;
}

int ctl_db_report_put(ctl *c, const char *event_id, const char *body)
{
    sqlite3_stmt *s;
    /* an empty body: an interval with nothing to report, kept so that it is
       not looked at again, never sent (accepted = 3) */
    if (sqlite3_prepare_v2(c->io.db,
                           "INSERT OR IGNORE INTO vtn_reports(event_id, body, accepted) "
                           "VALUES(?,?,?)",
                           -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, body, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 3, body[0] ? 0 : 3);
    int r = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(s);
    return r;
}

/* the least tried first: a report the VTN keeps refusing holds up no other */
char *ctl_db_report_next(ctl *c, char *event_id, size_t n)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(
            c->io.db,
            "SELECT event_id, body FROM vtn_reports WHERE accepted=0 ORDER BY tries, rowid"
            " LIMIT 1",
            -1, &s, NULL) != SQLITE_OK)
        return NULL;
    char *body = NULL;
    if (sqlite3_step(s) == SQLITE_ROW) {
        snprintf(event_id, n, "%s", (const char *)sqlite3_column_text(s, 0));
        body = strdup((const char *)sqlite3_column_text(s, 1));
    }
    sqlite3_finalize(s);
    return body;
}

/* the VTN refused the report (a 4xx answer): kept, never sent again
 * (accepted = 2) */
int ctl_db_report_refused(ctl *c, const char *event_id)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "UPDATE vtn_reports SET accepted=2 WHERE event_id=?", -1, &s,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(s);
    return rc;
}

int ctl_db_report_done(ctl *c, const char *event_id, const char *report_id)
{
    sqlite3_stmt *s;
    const char *q = report_id ? "UPDATE vtn_reports SET accepted=1, report_id=? WHERE event_id=?"
                              : "UPDATE vtn_reports SET tries=tries+1 WHERE event_id=?";
    if (sqlite3_prepare_v2(c->io.db, q, -1, &s, NULL) != SQLITE_OK) return -1;
    int k = 1;
    if (report_id) sqlite3_bind_text(s, k++, report_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, k, event_id, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(s);
    return r;
}

size_t ctl_db_samples(ctl *c, const char *event_id, double *t, double *measured_w, size_t max)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db,
                           "SELECT t, measured_w FROM samples WHERE event_id=? ORDER BY t LIMIT ?",
                           -1, &s, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
    size_t n = 0;
    while (n < max && sqlite3_step(s) == SQLITE_ROW) {
        t[n] = ctl_db_col_num(s, 0);
        measured_w[n++] = ctl_db_col_num(s, 1);
    }
    sqlite3_finalize(s);
    return n;
}

int ctl_db_oadr_step_put(ctl *c, const char *step_id, const char *event_id, long long interval_id)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "INSERT OR REPLACE INTO oadr_steps VALUES(?,?,?)", -1, &s,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, step_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, event_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, interval_id);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(s);
    return rc;
}

int ctl_db_oadr_step_get(ctl *c, const char *step_id, char *event_id, size_t n,
                         long long *interval_id)
{
    sqlite3_stmt *s;
    int rc = -1;
    if (sqlite3_prepare_v2(c->io.db, "SELECT event_id, interval_id FROM oadr_steps WHERE step_id=?",
                           -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, step_id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
        snprintf(event_id, n, "%s", (const char *)sqlite3_column_text(s, 0));
        *interval_id = sqlite3_column_int64(s, 1);
        rc = 0;
    }
    sqlite3_finalize(s);
    return rc;
}

/* the first receipt of an event id stored, else now; read only: a row is
   written only for a version that was applied (ctl_db_oadr_first_put), so
   refused and never-booked ids leave none (issue 41) */
double ctl_db_oadr_first(ctl *c, const char *event_id, double now)
{
    sqlite3_stmt *s;
    double t = now;
    if (sqlite3_prepare_v2(c->io.db, "SELECT first_s FROM oadr_first WHERE event_id=?", -1, &s,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(s) == SQLITE_ROW) t = sqlite3_column_double(s, 0);
        sqlite3_finalize(s);
    }
    return t;
}

void ctl_db_oadr_first_put(ctl *c, const char *event_id, double first_s)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "INSERT OR IGNORE INTO oadr_first VALUES(?,?)", -1, &s,
                           NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 2, first_s);
    if (sqlite3_step(s) != SQLITE_DONE)
        ctl_log(c, "error: storing the first receipt of OpenADR event %s: %s", event_id,
                sqlite3_errmsg(c->io.db));
    sqlite3_finalize(s);
}

/* rows of ids with nothing scheduled or running (pending() false) go once
   first received before keep_after_s, and beyond keep_max rows the oldest
   of them go too; the number deleted */
size_t ctl_db_oadr_first_prune(ctl *c, double keep_after_s, size_t keep_max,
                               int (*pending)(void *, const char *), void *ud)
{
    sqlite3_stmt *s, *d;
    size_t kept = 0, gone = 0;
    if (sqlite3_prepare_v2(c->io.db,
                           "SELECT event_id, first_s FROM oadr_first ORDER BY first_s DESC", -1, &s,
                           NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_prepare_v2(c->io.db, "DELETE FROM oadr_first WHERE event_id=?", -1, &d, NULL) !=
        SQLITE_OK) {
        sqlite3_finalize(s);
        return 0;
    }
    sqlite3_exec(c->io.db, "SAVEPOINT prune", NULL, NULL, NULL);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        if (!id) continue;
        if (pending(ud, id) || (sqlite3_column_double(s, 1) >= keep_after_s && kept < keep_max)) {
            kept++;
            continue;
        }
        sqlite3_bind_text(d, 1, id, -1, SQLITE_TRANSIENT);
        gone += sqlite3_step(d) == SQLITE_DONE;
        sqlite3_reset(d);
    }
    sqlite3_exec(c->io.db, "RELEASE prune", NULL, NULL, NULL);
    sqlite3_finalize(d);
    sqlite3_finalize(s);
    return gone;
}

int ctl_db_event_source(ctl *c, const char *id, char *source, size_t n)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->io.db, "SELECT source FROM events WHERE id=?", -1, &s, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s);
    const char *src = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    if (src) snprintf(source, n, "%s", src);
    sqlite3_finalize(s);
    return src ? 1 : rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

void ctl_db_oadr_forget(ctl *c, const char *event_id)
{
    static const char *const q[] = {"DELETE FROM oadr_first WHERE event_id=?",
                                    "DELETE FROM oadr_steps WHERE event_id=?"};
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(c->io.db, q[i], -1, &s, NULL) != SQLITE_OK) continue;
        sqlite3_bind_text(s, 1, event_id, -1, SQLITE_TRANSIENT);
        sqlite3_step(s);
        sqlite3_finalize(s);
    }
}

/* one stored row of job_points into m: 0, or -1 when it is not one (bad
 * JSON, a point not finite: skipped, logged by the caller) */
static int mem_row(sqlite3_stmt *s, ctl_mem *m)
{
    memset(m, 0, sizeof *m);
    const char *id = (const char *)sqlite3_column_text(s, 0);
    const char *pts = (const char *)sqlite3_column_text(s, 10);
    if (!id || !pts || strlen(id) > CTL_JOB_ID_MAX) return -1;
    snprintf(m->id, sizeof m->id, "%s", id);
    m->tier = sqlite3_column_int(s, 1);
    m->gpus = sqlite3_column_int(s, 2);
    m->hw_max_w = sqlite3_column_double(s, 3);
    for (int i = 0; i < 4; i++) m->feat[i] = sqlite3_column_double(s, 4 + i);
    m->profiled = sqlite3_column_int(s, 8);
    m->cost_ratio = sqlite3_column_double(s, 9);
    m->t = sqlite3_column_double(s, 11);
    json_t *a = json_loads(pts, 0, NULL);
    size_t i;
    json_t *x;
    int bad = !json_is_array(a) || json_array_size(a) > CTL_KNOWN_MAX;
    json_array_foreach(a, i, x)
    {
        if (bad) break;
        double v[4];
        for (int q = 0; q < 4; q++) {
            json_t *e = json_array_get(x, q);
            v[q] = json_is_number(e) ? json_number_value(e) : NAN;
            bad |= !isfinite(v[q]);
        }
        m->pt[m->npt++] = (pfi_online_point){v[0], v[1], v[2], v[3]};
    }
    json_decref(a);
    return bad ? -1 : 0;
}

int ctl_db_load_mem(ctl *c)
{
    sqlite3_stmt *s;
    /* rows older than 30 days are never used: gone (the table holds the
       jobs that still run, forgotten at their end, issue 41) */
    char del[96];
    snprintf(del, sizeof del, "DELETE FROM job_points WHERE t < %.3f",
             pfi_clock_now() - 30 * 86400.0);
    sqlite3_exec(c->io.db, del, NULL, NULL, NULL);
    if (sqlite3_prepare_v2(c->io.db, "SELECT * FROM job_points", -1, &s, NULL) != SQLITE_OK) {
        ctl_log(c, "error: %s: %s", c->cfg.db, sqlite3_errmsg(c->io.db));
        return -1;
    }
    size_t bad = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        ctl_mem m;
        if (mem_row(s, &m)) bad++;
        else if (ctl_mem_put(&c->st, &m)) {
            sqlite3_finalize(s);
            ctl_log(c, "error: out of memory: the remembered job points not read");
            return -1;
        }
    }
    sqlite3_finalize(s);
    if (bad) ctl_log(c, "warning: %s: %zu rows of job_points unreadable: skipped", c->cfg.db, bad);
    if (c->st.nmem) ctl_log(c, "remembered points of %zu jobs read", c->st.nmem);
    return 0;
}
