/* ctl_store_oadr.c — the OpenADR bookkeeping on etcd (issue 45, "the VTN
 * side"; ctl_store.h): the first receipts of events and the REPORTs.
 *
 * First receipts: what "now" (0001-01-01) meant for an event id is its
 * first receipt (ctl_openadr.c), kept in each controller's SQLite; the
 * leader also puts it as PREFIX/oadr_first/ID when it applies the id's
 * first version, and a new leader pulls them into its SQLite, so the VTN's
 * "now" event, served again, keeps the start the dead leader gave it (not
 * the takeover's time: its end would move). A DELETE of the event at the
 * VTN deletes the key; otherwise they stay (about 60 bytes an id).
 *
 * REPORTs: every report the leader keeps for an interval
 * (ctl_vtn_report.c) is committed as an intent, PREFIX/reports/EVENTID#k =
 * {"body": the REPORT}, when it is kept and again (a no-op when there)
 * before it is POSTed; what the VTN answers replaces it: {"rid": its report
 * id} or {"refused": true}. A new leader pulls them into its SQLite: an
 * answered one is done there (never rebuilt, never sent), an intent is
 * pending with the dead leader's body, and, since the dead leader may have
 * POSTed it before it died, is asked of the VTN by its deterministic
 * reportName (GET /reports?eventID=&clientName=) before it is sent: found,
 * it is done with the VTN's id. So each (eventID, reportName) is one report
 * object at the VTN, and the intervals the dead leader kept are sent.
 *
 * An interval that ended while no controller kept it (the dead leader
 * died before keeping it, or the takeover spans it) is built by the new
 * leader from the store's per-interval aggregates (ctl_store_agg.c).
 * The entries stay in etcd (about 100 bytes once answered). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_failover.h"
#include "ctl_store.h"

static pfi_status key_of(const char *key, char *out, size_t n)
{
    int k = snprintf(out, n, "reports/%s", key);
    return k > 0 && (size_t)k < n ? PFI_OK : PFI_ERANGE;
}

int ctl_store_etcd_report_intent(ctl *c, const char *key, const char *body)
{
    char k[PFI_EVENT_ID_MAX + 48];
    if (!c->fo || key_of(key, k, sizeof k)) return -1;
    json_t *j = json_pack("{ss}", "body", body);
    char *v = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!v) return -1;
    pfi_error err = {0};
    int created;
    pfi_status st = pfi_etcd_put_new(c->fo->kv, k, v, strlen(v), &created, &err);
    free(v);
    if (st) {
        ctl_log(c, "warning: failover: the intent of report %s not committed: %s", key, err.msg);
        return -1;
    }
    return 0;
}

void ctl_store_etcd_report_done(ctl *c, const char *key, const char *rid)
{
    char k[PFI_EVENT_ID_MAX + 48];
    if (!c->fo || key_of(key, k, sizeof k)) return;
    json_t *j = rid ? json_pack("{ss}", "rid", rid) : json_pack("{sb}", "refused", 1);
    char *v = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (!v || pfi_etcd_put(c->fo->kv, k, v, strlen(v), 0, &a, &err))
        ctl_log(c, "warning: failover: report %s answered, not stored: %s", key,
                v ? err.msg : "out of memory");
    else pfi_etcd_answer_free(&a);
    free(v);
}

void ctl_store_etcd_oadr_first(ctl *c, const char *id, double first_s)
{
    char k[PFI_OADR_ID_MAX + 16], v[32];
    if (!c->fo || snprintf(k, sizeof k, "oadr_first/%s", id) >= (int)sizeof k) return;
    pfi_etcd_answer a;
    pfi_error err = {0};
    pfi_status st;
    if (isnan(first_s)) {
        pfi_etcd_op del = {PFI_ETCD_OP_DELETE, k, NULL, 0, 0, 0};
        st = pfi_etcd_txn(c->fo->kv, NULL, 0, &del, 1, NULL, 0, &a, &err);
    } else {
        snprintf(v, sizeof v, "%.17g", first_s);
        st = pfi_etcd_put(c->fo->kv, k, v, strlen(v), 0, &a, &err);
    }
    if (st)
        ctl_log(c, "warning: failover: the first receipt of OpenADR event %s not stored: %s", id,
                err.msg);
    else pfi_etcd_answer_free(&a);
}

static void pull_first(ctl *c)
{
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(c->fo->kv, "oadr_first/", 0, &a, &err)) {
        ctl_log(c, "warning: failover: the OpenADR first receipts not read: %s", err.msg);
        return;
    }
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < a.nkvs; i++) {
        double t = strtod(a.kvs[i].value, NULL);
        if (isfinite(t)) ctl_db_oadr_first_put(c, a.kvs[i].key + strlen("oadr_first/"), t);
    }
    pthread_mutex_unlock(&c->mu);
    pfi_etcd_answer_free(&a);
}

/* one pulled entry into SQLite (lock held); 1 an intent to resolve */
static int pull_one(ctl *c, const char *key, json_t *j)
{
    const char *body = json_string_value(json_object_get(j, "body"));
    const char *rid = json_string_value(json_object_get(j, "rid"));
    int refused = json_is_true(json_object_get(j, "refused"));
    if (rid || refused) { /* answered: done here too, never rebuilt */
        ctl_db_report_put(c, key, "");
        if (rid) ctl_db_report_done(c, key, rid);
        else ctl_db_report_refused(c, key);
        return 0;
    }
    if (!body || !body[0] || ctl_db_report_has(c, key) != 0) return 0;
    return ctl_db_report_put(c, key, body) == 0;
}

void ctl_store_oadr_pull(ctl *c)
{
    ctl_failover *f = c->fo;
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (f) pull_first(c);
    if (!f || pfi_etcd_range_prefix(f->kv, "reports/", 0, &a, &err)) {
        if (f) ctl_log(c, "warning: failover: the reports' intents not read: %s", err.msg);
        return;
    }
    size_t pending = 0;
    for (size_t i = 0; i < a.nkvs; i++) {
        const char *key = a.kvs[i].key + strlen("reports/");
        json_t *j = json_loadb(a.kvs[i].value, a.kvs[i].value_len, 0, NULL);
        pthread_mutex_lock(&c->mu);
        int unresolved = json_is_object(j) && pull_one(c, key, j);
        pthread_mutex_unlock(&c->mu);
        json_decref(j);
        char *dup = unresolved ? strdup(key) : NULL;
        if (!dup) continue;
        pthread_mutex_lock(&f->mu);
        char **grown = realloc(f->unresolved, (f->nunresolved + 1) * sizeof *grown);
        if (grown) f->unresolved = grown, f->unresolved[f->nunresolved++] = dup, pending++;
        else free(dup);
        pthread_mutex_unlock(&f->mu);
    }
    if (pending)
        ctl_log(c,
                "failover: %zu report%s kept by the previous leader and not known answered: each "
                "asked of the VTN by name before it is sent",
                pending, pending == 1 ? "" : "s");
    pfi_etcd_answer_free(&a);
}

int ctl_store_report_unresolved(ctl *c, const char *key)
{
    ctl_failover *f = c->fo;
    int found = 0;
    if (!f) return 0;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nunresolved && !found; i++) found = !strcmp(f->unresolved[i], key);
    pthread_mutex_unlock(&f->mu);
    return found;
}

void ctl_store_report_resolved(ctl *c, const char *key)
{
    ctl_failover *f = c->fo;
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nunresolved; i++)
        if (!strcmp(f->unresolved[i], key)) {
            free(f->unresolved[i]);
            f->unresolved[i] = f->unresolved[--f->nunresolved];
            break;
        }
    pthread_mutex_unlock(&f->mu);
}
