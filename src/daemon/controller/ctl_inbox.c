/* ctl_inbox.c — a follower's writes committed to the store's inbox, and
 * the leader applying them (ctl_inbox.h). */
#include "ctl_inbox.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl_failover.h"
#include "ctl_store.h"
#include "httpd.h"

/* value committed under PREFIX/inbox/KEY if no such key exists (it is
   consumed: 0); 409 for a key not yet taken by the leader, 503 when the
   store does not commit; rs set on failure */
static int commit(ctl *c, const char *key, json_t *value, const char *what,
                  struct pfi_http_resp *rs)
{
    char *body = value ? json_dumps(value, JSON_COMPACT) : NULL;
    json_decref(value);
    if (!body) {
        pfi_http_error(rs, 503, "%s: out of memory", what);
        return -1;
    }
    char full[PFI_EVENT_ID_MAX + 96];
    snprintf(full, sizeof full, "inbox/%s", key);
    pfi_error err = {0};
    int created = 0;
    pfi_status st = pfi_etcd_put_new(c->fo->kv, full, body, strlen(body), &created, &err);
    free(body);
    if (st) {
        pfi_http_error(rs, 503, "%s not committed to the store: %s", what, err.msg);
        return -1;
    }
    if (!created) {
        pfi_http_error(rs, 409, "%s was already submitted and not yet taken by the leader", what);
        return -1;
    }
    return 0;
}

/* the answer after a commit: who took it and what happens next */
static void answered(ctl *c, int code, const char *id, const char *next, const char *who,
                     struct pfi_http_resp *rs)
{
    char leader[64];
    ctl_failover_role(c, leader, sizeof leader);
    json_t *o = json_pack("{ssssssss}", "id", id, "accepted_by", c->cfg.fo.name, "leader", leader,
                          "status", next);
    rs->body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!rs->body) return pfi_http_error(rs, 500, "out of memory");
    rs->len = strlen(rs->body);
    rs->code = code;
    ctl_log(c, "failover: %s from %s committed for the leader (%s)", id, who[0] ? who : "?", next);
}

void ctl_inbox_event(ctl *c, const pfi_grid_event *ev, const char *who, struct pfi_http_resp *rs)
{
    pfi_error pe;
    if (pfi_grid_event_check(ev, &pe))
        return pfi_http_error(rs, 400, "event %s: %s", ev->id, pe.msg);
    if (pfi_grid_event_end(ev) <= pfi_clock_now())
        return pfi_http_error(rs, 400, "event %s ended before it arrived", ev->id);
    int trig = !strcmp(ev->source, "trigger");
    char *canon = pfi_grid_event_format(ev);
    json_t *j =
        canon ? json_pack("{ssssss}", "op", trig ? "trigger" : "add", "event", canon, "who", who)
              : NULL;
    free(canon);
    char what[PFI_EVENT_ID_MAX + 16];
    snprintf(what, sizeof what, "event %s", ev->id);
    if (commit(c, ev->id, j, what, rs)) return;
    answered(c, 202, ev->id,
             trig ? "committed: the leader triggers it at its next period"
                  : "committed: the leader adds it at its next period",
             who, rs);
}

/* the event of that id as the store holds it now (a linearizable read:
   the follower's view may be a period behind the leader): 0, 1 none, -1
   the store did not answer (rs set) */
static int stored_event(ctl *c, const char *id, ctl_event *e, struct pfi_http_resp *rs)
{
    char key[PFI_EVENT_ID_MAX + 16], why[160];
    snprintf(key, sizeof key, "events/%s", id);
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_get(c->fo->kv, key, &a, &err)) {
        pfi_http_error(rs, 503, "event %s: the store did not answer: %s", id, err.msg);
        return -1;
    }
    int rc =
        a.nkvs && !ctl_store_event_parse(a.kvs[0].value, a.kvs[0].value_len, e, why, sizeof why)
            ? 0
            : 1;
    pfi_etcd_answer_free(&a);
    return rc;
}

void ctl_inbox_cancel(ctl *c, const char *id, const char *who, struct pfi_http_resp *rs)
{
    ctl_event stored = {0}, *e = &stored;
    int rc = stored_event(c, id, e, rs);
    if (rc < 0) return;
    if (rc) return pfi_http_error(rs, 404, "no event %s", id);
    if (!ctl_operator_may_cancel(c, who, e))
        return pfi_http_error(rs, 403,
                              "operator %s lacks the scope events (DELETE /v1/events/ID needs it; "
                              "control cancels a trigger's event only)",
                              who);
    if (e->status == CTL_EV_CANCELLED || e->status == CTL_EV_DONE)
        return pfi_http_error(rs, 409, "event %s is already %s", id,
                              ctl_event_status_name(e->status));
    char key[PFI_EVENT_ID_MAX + 16], what[PFI_EVENT_ID_MAX + 16];
    snprintf(key, sizeof key, "%s/cancel", id);
    snprintf(what, sizeof what, "the cancel of %s", id);
    if (commit(c, key, json_pack("{ssssss}", "op", "cancel", "id", id, "who", who), what, rs))
        return;
    answered(c, 202, id, "committed: the leader cancels it at its next period", who, rs);
}

void ctl_inbox_webhook(ctl *c, const char *body, size_t len, const char *who,
                       struct pfi_http_resp *rs)
{
    char id[PFI_OADR_ID_MAX + 1];
    pfi_error e;
    if (ctl_openadr_check(c, body, len, id, sizeof id, &e))
        return pfi_http_error(rs, 400, "%s", e.msg);
    static unsigned long n;
    char key[96];
    snprintf(key, sizeof key, "~webhook/%s-%.0f-%lu", c->cfg.fo.name, pfi_clock_now() * 1e3, ++n);
    json_t *j = json_pack("{s:s, s:s#, s:s}", "op", "webhook", "body", body, (int)len, "who", who);
    if (commit(c, key, j, "the notification", rs)) return;
    answered(c, 200, id[0] ? id : "?", "committed: the leader takes it at its next period", who,
             rs);
}

/* one entry, as if its write had been made here (lock held) */
static void apply_one(ctl *c, const char *key, json_t *j)
{
    const char *op = json_string_value(json_object_get(j, "op"));
    const char *who = json_string_value(json_object_get(j, "who"));
    const char *text = json_string_value(json_object_get(j, "event"));
    who = who ? who : "";
    op = op ? op : "add";
    pfi_error e = {0};
    pfi_status st = PFI_OK;
    if (!strcmp(op, "cancel")) {
        const char *id = json_string_value(json_object_get(j, "id"));
        const ctl_event *ev = id ? ctl_event_find(c, id) : NULL;
        if (!ev) st = pfi_errorf(&e, PFI_ENOTFOUND, "no event %s", id ? id : "?");
        else if (!ctl_operator_may_cancel(c, who, ev))
            st = pfi_errorf(&e, PFI_EINVAL, "operator %s may not cancel %s", who, id);
        else st = ctl_event_cancel(c, id, who, &e);
    } else if (!strcmp(op, "webhook")) {
        const char *body = json_string_value(json_object_get(j, "body"));
        json_t *answer = NULL;
        int code = body ? ctl_openadr_take(c, body, json_string_length(json_object_get(j, "body")),
                                           "webhook", who, &answer, &e)
                        : 400;
        if (!body) pfi_errorf(&e, PFI_EINVAL, "no body");
        json_decref(answer);
        if (code >= 300) st = PFI_EINVAL;
    } else if (!strcmp(op, "add") || !strcmp(op, "trigger")) {
        pfi_grid_event ev;
        int updated = 0;
        if (!text || pfi_grid_event_parse(text, strlen(text), &ev, &e)) st = PFI_EINVAL;
        else {
            if (!strcmp(op, "trigger")) snprintf(ev.source, sizeof ev.source, "trigger");
            if (!ctl_event_id_taken(c, ev.id, !strcmp(op, "add"), &e))
                st = ctl_event_add(c, &ev, who, &updated, &e);
            else st = PFI_ESTATE;
        }
    } else st = pfi_errorf(&e, PFI_EINVAL, "unknown op %s", op);
    if (st) ctl_log(c, "warning: failover: %s from a follower (%s): %s", key, who, e.msg);
}

void ctl_inbox_apply(ctl *c)
{
    if (!c->fo) return;
    pfi_etcd *kv = c->fo->kv;
    pfi_etcd_answer a;
    pfi_error err = {0};
    if (pfi_etcd_range_prefix(kv, "inbox/", 0, &a, &err)) return; /* next turn */
    for (size_t i = 0; i < a.nkvs; i++) {
        json_t *j = json_loadb(a.kvs[i].value, a.kvs[i].value_len, 0, NULL);
        if (!json_is_object(j))
            ctl_log(c, "warning: failover: etcd %s: not an inbox entry; dropped", a.kvs[i].key);
        else {
            pthread_mutex_lock(&c->mu);
            apply_one(c, a.kvs[i].key, j);
            pthread_mutex_unlock(&c->mu);
        }
        json_decref(j);
        pfi_etcd_cmp same = {a.kvs[i].key, PFI_ETCD_MOD, a.kvs[i].mod_revision, NULL};
        pfi_etcd_op del = {PFI_ETCD_OP_DELETE, a.kvs[i].key, NULL, 0, 0, 0};
        pfi_etcd_answer d;
        if (!pfi_etcd_txn(kv, &same, 1, &del, 1, NULL, 0, &d, &err)) pfi_etcd_answer_free(&d);
    }
    pfi_etcd_answer_free(&a);
}
