/* ctl_store.h — where the controller's authoritative state lives (issue
 * 45; docs/controller.md, "What lives where"): one interface, two backends.
 *
 *   sqlite  one controller (the default, unchanged): the state is the
 *           SQLite database it always was; its calls do nothing more,
 *           since ctl_persist's transaction and ctl_db_put_event already
 *           stored everything;
 *   etcd    failover: the authoritative rows (events, each agent's base
 *           generation, the feedback term, each event's baselines) also go
 *           to etcd, the period's in one transaction guarded by this
 *           controller's leadership, so that a deposed leader's rows are
 *           refused; a new leader reads them back (pull) into its own
 *           SQLite and state before its first push. Local history (samples,
 *           per-job samples) stays in each controller's SQLite.
 *
 * The calls run on the loop's thread (commit, pull) or under the lock
 * (event_put, from the API). */
#ifndef PFI_CTL_STORE_H
#define PFI_CTL_STORE_H

#include <stddef.h>

#include "ctl.h"

typedef struct ctl_store_ops {
    const char *name;
    /* a period's authoritative rows, after the local transaction committed
       them: 0; 1 refused (another controller leads: the caller deposes this
       one); -1 not stored (why says) */
    int (*commit)(ctl *c, const ctl_decision *d, char *why, size_t n);
    /* an event written through the API or a grid event booked: 0, or -1 */
    int (*event_put)(ctl *c, const ctl_event *e);
    /* a new leader: the store's state into the local SQLite and c->st, each
       agent's generation at the new term: 0, or -1 (logged; no push) */
    int (*pull)(ctl *c);
    /* a new leader once it pulled, before its first period: the caps the
       last leader committed, pushed at once (NULL: nothing to do) */
    void (*takeover)(ctl *c);
    /* a follower, each period: the store's events into its SQLite and
       state, for its read-only views: 0, or -1 (it shows what it had) */
    int (*refresh)(ctl *c);
    /* a REPORT's intent (key "EVENTID#k", the body to POST), committed
       before it is sent and when it is kept, so a new leader sends what the
       old one kept and resolves what it may have sent (ctl_store_oadr.c):
       0 committed (or there already), -1 not (it is not sent yet) */
    int (*report_intent)(ctl *c, const char *key, const char *body);
    /* what the VTN answered: its report id, or refused (rid NULL) */
    void (*report_done)(ctl *c, const char *key, const char *rid);
    /* the report intervals' measured power of event_id, for its REPORTs
       (ctl_vtn_report.c; lock held): sum_w[k] and count[k] of its
       intervals k < nb set from the store's aggregates (ctl_store_agg.c);
       NULL: the backend has none, the REPORT is built from the samples */
    int (*buckets)(ctl *c, const char *event_id, double *sum_w, double *count, size_t nb);
    /* what "now" meant for an OpenADR event id, at its first applied
       version (NaN: forgotten, the VTN deleted it; lock held) */
    void (*oadr_first)(ctl *c, const char *id, double first_s);
} ctl_store_ops;

extern const ctl_store_ops ctl_store_sqlite, ctl_store_etcd;

/* the backend in use: c->store (set at start: etcd with cfg.fo.netcd), or
   sqlite (a ctl built without main, as the tests build one). Called through
   the pointer, not by name, so that no file circle runs through the store
   (scripts/check-cycles.py): the etcd backend calls ctl_db.c and
   ctl_events.c, which call the store. */
static inline const ctl_store_ops *ctl_store(const ctl *c)
{
    return c->store ? c->store : &ctl_store_sqlite;
}

/* an event as the store holds it (JSON text, malloc'd) and back: the same
   columns as SQLite's events table; parse: 0, or -1 (why set) */
char *ctl_store_event_format(const ctl_event *e);
int ctl_store_event_parse(const char *text, size_t len, ctl_event *e, char *why, size_t n);

/* a job's remembered points (ctl_mem) as the store holds them (JSON text,
   malloc'd) and back: 0, or -1 (why set) */
char *ctl_store_mem_format(const ctl_mem *m);
int ctl_store_mem_parse(const char *text, size_t len, ctl_mem *m, char *why, size_t n);

/* ctl_store_oadr.c (etcd): the first receipts and the reports' intents
   into the local SQLite at a takeover (lock not held), and whether a report key came from an intent
   the dead leader may have sent (its VTN id not known): then the VTN is
   asked for it by name before it is sent again (ctl_vtn_report.c);
   resolved takes it off that list */
void ctl_store_oadr_pull(ctl *c);
int ctl_store_report_unresolved(ctl *c, const char *key);
void ctl_store_report_resolved(ctl *c, const char *key);
int ctl_store_etcd_report_intent(ctl *c, const char *key, const char *body);
void ctl_store_etcd_report_done(ctl *c, const char *key, const char *rid);
void ctl_store_etcd_oadr_first(ctl *c, const char *id, double first_s);

/* ctl_store_agg.c (etcd): the period's sample added to its OpenADR event's
   report interval, the interval's key ("EVENTID#k") and value ("SUM COUNT",
   malloc'd; NULL: nothing to commit) for the period's commit: 0, or -1 out
   of memory; the aggregates pulled at a takeover; the buckets op */
int ctl_store_agg_sample(ctl *c, const ctl_decision *d, char *key, size_t kn, char **value);
void ctl_store_agg_pull(ctl *c);
int ctl_store_etcd_buckets(ctl *c, const char *event_id, double *sum_w, double *count, size_t nb);

#endif
