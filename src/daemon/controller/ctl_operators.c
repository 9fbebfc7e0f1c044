/* ctl_operators.c — who may do what on the controller's API
 * (docs/controller.md, "Operators"): the operators' tokens, read at start
 * from their files (pfi_token_read: mode 0600, no symlink), and the check
 * of each request before its body is read (httpd.h, authorize): the scope
 * its endpoint needs, the operator its bearer token names (compared in
 * constant time with every operator's token, then the VTN's callback
 * token), 401 for a token no one has, 403 naming the scope an operator
 * lacks. The VTN's callback token is not an operator: it reaches only the
 * webhook, as "grid". The operators and their tokens do not change after
 * the start: no lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "httpd.h"

/* the key an operator comes from, for errors: "operators[i]" or "token_file" */
static void op_key(const ctl *c, size_t i, char *buf, size_t n)
{
    const struct ctl_cfg_operator *o = &c->cfg.operators[i];
    if (c->cfg.token_file[0] && i + 1 == c->cfg.noperators && !strcmp(o->name, CTL_LEGACY_OPERATOR))
        snprintf(buf, n, "token_file");
    else snprintf(buf, n, "operators[%zu].token_file", i);
}

int ctl_operators_open(ctl *c)
{
    size_t n = c->cfg.noperators;
    if (!n) {
        ctl_log(c, "warning: no operators and no token_file: control endpoints (POST, DELETE) "
                   "are refused");
        return 0;
    }
    c->io.op_token = calloc(n, sizeof *c->io.op_token);
    if (!c->io.op_token) {
        ctl_log(c, "error: out of memory reading the operators' tokens");
        return -1;
    }
    char key[48], other[48];
    for (size_t i = 0; i < n; i++) {
        pfi_error e;
        op_key(c, i, key, sizeof key);
        if (pfi_token_read(c->cfg.operators[i].token_file, c->io.op_token[i],
                           sizeof c->io.op_token[i], &e)) {
            ctl_log(c, "error: %s: %s", key, e.msg);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->io.op_token[i], c->io.op_token[j])) {
                op_key(c, j, other, sizeof other);
                ctl_log(c,
                        "error: %s: the same token as %s (operator %s): each operator needs a "
                        "token of its own",
                        key, other, c->cfg.operators[j].name);
                return -1;
            }
    }
    return 0;
}

const struct ctl_cfg_operator *ctl_operator_find(const ctl *c, const char *name)
{
    for (size_t i = 0; name && i < c->cfg.noperators; i++)
        if (!strcmp(c->cfg.operators[i].name, name)) return &c->cfg.operators[i];
    return NULL;
}

/* reads the status page's own files, /healthz and the webhook's echo
   challenge (the VTN holds no operator token: ctl_http.c echo_challenge):
   open whatever the configuration */
static int always_open(const char *url)
{
    return !strcmp(url, "/") || !strcmp(url, "/index.html") || !strcmp(url, "/page.js") ||
           !strcmp(url, "/page.css") || !strcmp(url, "/healthz") ||
           !strcmp(url, "/openadr3/events") || !strcmp(url, "/openadr3/events/echo");
}

/* the scopes of which one lets the request through (0: open). DELETE
 * /v1/events/ID takes events, or control for a trigger's event (the
 * handler checks which, ctl_http.c) */
static unsigned scope_needed(const ctl *c, const char *method, const char *url)
{
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (strcmp(method, "POST") && strcmp(method, "DELETE") && strcmp(method, "PUT"))
        return get && c->cfg.require_read_scope && !always_open(url) ? CTL_SCOPE_READ : 0;
    if (!strcmp(method, "POST") && (!strcmp(url, "/v1/events") || !strcmp(url, "/openadr3/events")))
        return CTL_SCOPE_EVENTS;
    if (!strcmp(method, "DELETE") && !strncmp(url, "/v1/events/", 11))
        return CTL_SCOPE_EVENTS | CTL_SCOPE_CONTROL;
    return CTL_SCOPE_CONTROL; /* /v1/trigger, and every other change */
}

static const char *scope_name(unsigned s)
{
    return s & CTL_SCOPE_EVENTS ? "events" : s & CTL_SCOPE_CONTROL ? "control" : "read";
}

/* httpd.h's authorize: 0 with who set, or 401 / 403 with msg */
int ctl_authorize(void *ud, const char *method, const char *url, const char *auth, char *who,
                  size_t who_n, char *msg, size_t msg_n)
{
    const ctl *c = ud;
    unsigned need = scope_needed(c, method, url);
    if (!need) return 0;
    /* every operator's token is compared, the match or not (constant time
       over the table: which one matched is not timed out of it) */
    size_t match = c->cfg.noperators;
    for (size_t i = 0; c->io.op_token && i < c->cfg.noperators; i++)
        if (pfi_bearer_ok(auth, c->io.op_token[i])) match = i;
    int grid = !strcmp(method, "POST") && !strcmp(url, "/openadr3/events") &&
               c->io.callback_token[0] && pfi_bearer_ok(auth, c->io.callback_token);
    if (match == c->cfg.noperators && grid) {
        snprintf(who, who_n, "grid");
        return 0;
    }
    if (match == c->cfg.noperators) {
        snprintf(msg, msg_n, "%s",
                 c->cfg.noperators || c->io.callback_token[0]
                     ? "missing or wrong bearer token"
                     : "no token is configured: this endpoint is disabled");
        return 401;
    }
    const struct ctl_cfg_operator *o = &c->cfg.operators[match];
    /* who may change events or caps may read them: every scope includes read */
    if (!((o->scopes | CTL_SCOPE_READ) & need)) {
        snprintf(msg, msg_n, "operator %s lacks the scope %s (%s %s needs it)", o->name,
                 scope_name(need), method,
                 !strncmp(url, "/v1/events/", 11) ? "/v1/events/ID" : url);
        return 403;
    }
    snprintf(who, who_n, "%s", o->name);
    return 0;
}

int ctl_operators_grid_check(ctl *c)
{
    for (size_t i = 0; c->io.callback_token[0] && c->io.op_token && i < c->cfg.noperators; i++)
        if (!strcmp(c->io.callback_token, c->io.op_token[i])) {
            char key[48];
            op_key(c, i, key, sizeof key);
            ctl_log(c,
                    "error: openadr.callback_token_file: the same token as %s (operator %s): the "
                    "VTN's token is not an operator's",
                    key, c->cfg.operators[i].name);
            return -1;
        }
    return 0;
}

/* DELETE /v1/events/ID, by the event's source (issue 41): api and schedule
   events need the scope events; a trigger's, control or events; the
   grid's (openadr) are the VTN's to change, and an events operator's
   cancel of one is an override, logged as such (ctl_authorize let events
   and control through). The same rule at a follower and at the leader
   that applies the cancel from the store's inbox (ctl_inbox.c). */
int ctl_operator_may_cancel(ctl *c, const char *who, const ctl_event *e)
{
    const struct ctl_cfg_operator *o = ctl_operator_find(c, who);
    unsigned s = o ? o->scopes : 0;
    if (!strcmp(e->ev.source, "trigger")) return (s & (CTL_SCOPE_EVENTS | CTL_SCOPE_CONTROL)) != 0;
    if (!(s & CTL_SCOPE_EVENTS)) return 0;
    if (!strcmp(e->ev.source, "openadr"))
        ctl_log(c, "warning: operator %s overrides the grid: cancels OpenADR event %s", who,
                e->ev.id);
    return 1;
}
