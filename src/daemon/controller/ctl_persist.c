/* ctl_persist.c — a period's rows into SQLite (docs/controller.md, "One
 * period"): the events the decision changed, the governing event's sample,
 * every job's sample and the feedback term, as one checked transaction on a
 * connection of its own, outside the lock the HTTP handlers share (SQLite:
 * one connection per thread; WAL lets the handlers' connection read
 * meanwhile, and a writer there waits up to its busy timeout).
 *
 * An event row is written with the columns the decision changes (status,
 * baseline, target, time to target): the API's own writes (a cancel's new
 * duration, an update of a scheduled event) happen under the lock at once
 * and are not overwritten by a period that decided before them. Every
 * result is checked; a failure rolls the period's rows back, is logged and
 * counted (pfi_ctl_db_errors_total), and never stops the period's caps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "caps_request.h"
#include "ctl.h"
#include "ctl_failover.h"
#include "ctl_store.h"

int ctl_persist_open(ctl *c)
{
    if (sqlite3_open(c->cfg.db, &c->io.pdb) != SQLITE_OK) {
        ctl_log(c, "error: %s: %s", c->cfg.db, sqlite3_errmsg(c->io.pdb));
        return -1;
    }
    sqlite3_busy_timeout(c->io.pdb, 5000);
    return 0;
}

void ctl_persist_close(ctl *c)
{
    sqlite3_finalize(c->io.job_sample_stmt);
    c->io.job_sample_stmt = NULL;
    sqlite3_close(c->io.pdb);
    c->io.pdb = NULL;
}

static int step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(s);
    return rc;
}

static int put_sample(sqlite3 *db, const ctl_decision *d)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO samples VALUES(?,?,?,?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, d->sample_event, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 2, d->t);
    ctl_db_bind_num(s, 3, d->budget_w);
    ctl_db_bind_num(s, 4, d->target_w);
    ctl_db_bind_num(s, 5, d->measured_w);
    return step_done(s);
}

static int put_job_row(ctl *c, const ctl_decision *d, const ctl_job_row *r)
{
    /* prepared once (12,500 jobs a period: preparing each row's statement was
       5% of the controller's CPU), finalized when the connection closes */
    sqlite3_stmt *s = c->io.job_sample_stmt;
    if (!s && sqlite3_prepare_v3(c->io.pdb,
                                 "INSERT OR REPLACE INTO job_samples VALUES(?,?,?,?,?,?,?,?,?,?)",
                                 -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK)
        return -1;
    c->io.job_sample_stmt = s;
    sqlite3_bind_text(s, 1, d->sample_event, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 2, d->t);
    sqlite3_bind_text(s, 3, r->id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, r->tier);
    ctl_db_bind_num(s, 5, r->power_w);
    ctl_db_bind_num(s, 6, r->tokens_per_s);
    ctl_db_bind_num(s, 7, r->cap_w);
    ctl_db_bind_num(s, 8, r->alloc_w);
    ctl_db_bind_num(s, 9, r->base_w);
    ctl_db_bind_num(s, 10, r->base_tokens);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

static int put_meta(sqlite3 *db, const char *key, double v)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta VALUES(?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    ctl_db_bind_num(s, 2, v);
    return step_done(s);
}

/* a job's remembered points (ctl_profile.c), replacing its key's row;
   a forgotten key's row deleted */
static int put_mem(sqlite3 *db, const ctl_mem *m)
{
    if (m->forget) {
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(db,
                               "DELETE FROM job_points WHERE job_id=? AND tier=? AND gpus=? AND "
                               "hw_max_w=?",
                               -1, &s, NULL) != SQLITE_OK)
            return -1;
        sqlite3_bind_text(s, 1, m->id, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 2, m->tier);
        sqlite3_bind_int(s, 3, m->gpus);
        sqlite3_bind_double(s, 4, m->hw_max_w);
        return step_done(s);
    }
    json_t *a = json_array();
    for (size_t i = 0; i < m->npt; i++)
        json_array_append_new(a, json_pack("[f,f,f,f]", m->pt[i].power_w, m->pt[i].power_se_w,
                                           m->pt[i].tokens_per_s, m->pt[i].tokens_se));
    char *pts = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    sqlite3_stmt *s;
    if (!pts || sqlite3_prepare_v2(db,
                                   "INSERT OR REPLACE INTO job_points "
                                   "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                                   -1, &s, NULL) != SQLITE_OK) {
        free(pts);
        return -1;
    }
    sqlite3_bind_text(s, 1, m->id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, m->tier);
    sqlite3_bind_int(s, 3, m->gpus);
    sqlite3_bind_double(s, 4, m->hw_max_w);
    for (int i = 0; i < 4; i++) ctl_db_bind_num(s, 5 + i, m->feat[i]);
    sqlite3_bind_int(s, 9, m->profiled);
    ctl_db_bind_num(s, 10, m->cost_ratio);
    sqlite3_bind_text(s, 11, pts, -1, SQLITE_TRANSIENT);
    ctl_db_bind_num(s, 12, m->t);
    free(pts);
    return step_done(s);
}

/* how a job's baseline was chosen, as JSON (ctl_report.c reads it) */
static int put_base(sqlite3 *db, const ctl_base_row *r)
{
    const ctl_base_how *h = &r->how;
    json_t *w = json_array();
    for (size_t i = 0; i < h->nwin; i++)
        json_array_append_new(
            w, json_pack("{s:f,s:f}", "end_t", h->win_end[i], "power_w", h->win_w[i]));
    json_t *o = json_pack("{s:s,s:f,s:o}", "source", ctl_base_src_name(r->src), "baseline_w",
                          r->base_w, "windows", w);
    json_object_set_new(o, "announced_t",
                        isfinite(h->announced_t) ? json_real(h->announced_t) : json_null());
    json_object_set_new(o, "plateau_w",
                        isfinite(h->plateau_w) ? json_real(h->plateau_w) : json_null());
    json_object_set_new(o, "knee_w", isfinite(h->knee_w) ? json_real(h->knee_w) : json_null());
    json_object_set_new(o, "knee_capped", json_boolean(h->knee_capped));
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    sqlite3_stmt *s;
    if (!t || sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO event_baselines VALUES(?,?,?,?)", -1,
                                 &s, NULL) != SQLITE_OK) {
        free(t);
        return -1;
    }
    sqlite3_bind_text(s, 1, r->event_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, r->job_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, r->tier);
    sqlite3_bind_text(s, 4, t, -1, SQLITE_TRANSIENT);
    free(t);
    return step_done(s);
}

/* every row of the period; the first failure's step */
/* an agent's new lease generation (the agent_generations table) */
static int put_generation(sqlite3 *db, const char *agent, long long g)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO agent_generations VALUES(?,?)", -1, &s,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, agent, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, g);
    return step_done(s);
}

/* the decision's generations once stored (stored: the transaction
 * committed): each agent's push carries its new one; else each keeps its
 * last stored one, never an unstored one (issue 43). The alarms of a
 * generation no agent accepts are counted either way. */
static void generations_taken(ctl *c, const ctl_decision *d, int stored)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < d->ngen_rows; i++) {
        const ctl_gen_row *r = &d->gen_rows[i];
        ctl_agent *a = &c->io.agent[r->agent];
        if (r->why == CTL_GEN_WHY_BEYOND) {
            c->generation_rejects++;
            ctl_log(c,
                    "ALARM: agent %s needs generation %lld, above %lld, which no agent accepts: "
                    "reset its generation (\"Resetting an agent's generation\" in "
                    "docs/controller.md)",
                    a->name, r->want, PFI_CAPS_GENERATION_MAX);
        } else if (!stored) {
            ctl_log(c, "warning: agent %s: generation %lld not stored: the push carries %lld",
                    a->name, r->to, a->generation);
        } else {
            ctl_log(c, "agent %s: generation %lld -> %lld (%s)", a->name, r->from, r->to,
                    ctl_gen_why_name[r->why]);
            a->generation = r->to;
            if (r->to < a->generation_floor) a->generation_floor = r->to; /* a reset agent */
            c->generation_changes[r->why]++;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

static const char *put_rows(ctl *c, const ctl_decision *d)
{
    for (size_t i = 0; i < d->nevent_rows; i++)
        if (ctl_db_event_row(c->io.pdb, &d->event_rows[i], 0)) return "an event";
    if (d->sample && put_sample(c->io.pdb, d)) return "the period's sample";
    for (size_t i = 0; d->sample && i < d->nrows; i++)
        if (put_job_row(c, d, &d->rows[i])) return "a job's sample";
    for (size_t i = 0; i < d->nmem_rows; i++)
        if (put_mem(c->io.pdb, &d->mem_rows[i])) return "a job's remembered points";
    for (size_t i = 0; i < d->nbase_rows; i++)
        if (put_base(c->io.pdb, &d->base_rows[i])) return "a job's baseline";
    if (put_meta(c->io.pdb, "integral_w", d->integral_w)) return "the feedback term";
    for (size_t i = 0; i < d->ngen_rows; i++)
        if (d->gen_rows[i].to != d->gen_rows[i].from &&
            put_generation(c->io.pdb, c->io.agent[d->gen_rows[i].agent].name, d->gen_rows[i].to))
            return "an agent's lease generation";
    return NULL;
}

int ctl_persist(ctl *c, const ctl_decision *d)
{
    const char *what = "the transaction's start";
    if (sqlite3_exec(c->io.pdb, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
        what = put_rows(c, d);
        if (!what && sqlite3_exec(c->io.pdb, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
            /* failover: the authoritative rows in the store too, guarded by
               our leadership (ctl_store.h); refused, nothing is pushed */
            char why[300];
            int refused = ctl_store(c)->commit(c, d, why, sizeof why);
            if (refused == 1) ctl_failover_deposed(c, why);
            if (refused) {
                atomic_fetch_add(&c->db_errors, 1);
                ctl_log(c, "error: %s store: this period's rows not committed (%s)",
                        ctl_store(c)->name, why);
                generations_taken(c, d, 0);
                return -1;
            }
            generations_taken(c, d, 1);
            return 0;
        }
        if (!what) what = "the commit";
    }
    char msg[256];
    snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(c->io.pdb));
    if (!sqlite3_get_autocommit(c->io.pdb)) sqlite3_exec(c->io.pdb, "ROLLBACK", NULL, NULL, NULL);
    atomic_fetch_add(&c->db_errors, 1);
    ctl_log(c, "error: %s: this period's rows not stored (%s: %s); the caps go out all the same",
            c->cfg.db, what, msg);
    generations_taken(c, d, 0);
    return -1;
}
