/* ctl_inbox.h — writes taken by a follower, for the leader (issue 45;
 * docs/controller.md, "Failover on etcd"). A follower runs no period, yet
 * an operator, a script or the VTN may reach it first (a controller list,
 * a virtual address, a webhook URL). Each write is checked as the leader
 * would check it, committed to the store's inbox (created once: compare
 * create_revision == 0) and answered after the commit: 202 for the API's,
 * 200 for the VTN's notification (OpenADR 3: the VEN answers 200). The
 * leader applies the inbox at each of its turns (ctl_main.c, before its
 * period), in key order, as if the write had been made to it, then deletes
 * each entry unless it was written again meanwhile. No HTTP is proxied.
 *
 * Keys under PREFIX/inbox/ (event ids are [A-Za-z0-9._-], so none collide):
 *   ID          {"op": "add" | "trigger", "event": canonical event, "who"}
 *   ID/cancel   {"op": "cancel", "id", "who"}   (applied after an add of ID)
 *   ~webhook/N  {"op": "webhook", "body": the notification, "who"}
 *
 * A write the leader then refuses (the id taken meanwhile, the event over)
 * is logged there: 202 means committed for the leader, not acted on. A
 * trigger so taken starts up to one period late (the leader's fast path
 * runs when it applies it); `pfi event` and scripts that want the fast
 * path at once list the controllers and reach the leader (ctlconn.c: the
 * next one on 503). A "now" OpenADR event from a follower's webhook starts
 * when the leader applies it. */
#ifndef PFI_CTL_INBOX_H
#define PFI_CTL_INBOX_H

#include "ctl.h"

struct pfi_http_resp;
/* at a follower (lock held): POST /v1/events, POST /v1/trigger (ev built
   as the leader builds it: source trigger), DELETE /v1/events/ID, POST
   /openadr3/events; rs answered */
void ctl_inbox_event(ctl *c, const pfi_grid_event *ev, const char *who, struct pfi_http_resp *rs);
void ctl_inbox_cancel(ctl *c, const char *id, const char *who, struct pfi_http_resp *rs);
void ctl_inbox_webhook(ctl *c, const char *body, size_t len, const char *who,
                       struct pfi_http_resp *rs);
/* at the leader (lock not held): the inbox applied and emptied; a store
   that does not answer leaves it for the next turn */
void ctl_inbox_apply(ctl *c);

#endif
