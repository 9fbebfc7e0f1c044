/* ctl_openadr.c — OpenADR 3 events into controller events (docs/controller.md,
 * "OpenADR 3"). The webhook and the poller hand each EVENT or notification
 * here; the model (openadr.h) reads it, the book of versions decides
 * whether it is new, and each step of a new version becomes a controller
 * event: the event's id for one step, ID.0, ID.1, ... for several.
 *
 * A newer version replaces the steps of the old one: steps that are gone
 * are cancelled, scheduled ones are replaced, an active one keeps running
 * with the new target and end at once (its start and baseline stay).
 * Every version that is not acted on is logged once, with its reason, and
 * counted in pfi_ctl_openadr_rejected_total{reason}; the lines are limited
 * to the first PFI_OADR_LOG_BURST a minute, then one summary line (a flood
 * of new ids is counted in full, not logged in full). The book of versions
 * is bounded (openadr.h): it never forgets an id with a step scheduled or
 * running.
 *
 * The grid (webhook, poller: source "openadr") creates, changes and
 * cancels only its own events: a version whose id or step ids name an
 * event of another source — the operator's (API, schedule file) or a
 * trigger's, in the table or stored — is refused whole (reason collision,
 * HTTP 409), and a DELETE of such an id cancels nothing; the operator's
 * token does the rest. The lock is held. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_store.h"

static void log_summary(ctl *c, unsigned long long n)
{
    ctl_log(c,
            "OpenADR: %llu more event version%s not acted on %s not logged (at most %d such lines "
            "a minute; every one is counted in pfi_ctl_openadr_rejected_total)",
            n, n == 1 ? "" : "s", n == 1 ? "was" : "were", PFI_OADR_LOG_BURST);
}

/* may a line about a version not acted on be logged now? (the first
   PFI_OADR_LOG_BURST a minute; the summary of a minute that has ended first) */
static int log_allowed(ctl *c)
{
    unsigned long long n;
    int ok = pfi_oadr_log_allow(&c->oadr_loglimit, pfi_wall_monotonic(), &n);
    if (n) log_summary(c, n);
    return ok;
}

void ctl_openadr_log_due(ctl *c)
{
    unsigned long long n = pfi_oadr_log_due(&c->oadr_loglimit, pfi_wall_monotonic());
    if (n) log_summary(c, n);
}

static void rejected(ctl *c, pfi_oadr_reason r, const char *id, const char *via, const char *msg)
{
    c->oadr_rejected[r]++; /* every one, logged or not */
    if (!log_allowed(c)) return;
    ctl_log(c, "OpenADR event %s (%s): not acted on (%s): %s", id[0] ? id : "(no id)", via,
            pfi_oadr_reason_name(r), msg);
}

/* is eid id itself or a step id of it (id.k)? */
static int names_step(const char *eid, const char *id)
{
    size_t n = strlen(id);
    if (strncmp(eid, id, n)) return 0;
    const char *p = eid + n;
    if (!*p) return 1;
    if (*p++ != '.' || !*p) return 0;
    for (; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

/* is the controller event e a step of the OpenADR event id? */
static int step_of(const ctl_event *e, const char *id)
{
    return !strcmp(e->ev.source, "openadr") && names_step(e->ev.id, id);
}

/* the source of the event id that is not the grid's (the operator's, a
   trigger's), in the table, else stored (a finished one the table forgot);
   NULL when id names none */
static const char *foreign_source(ctl *c, const char *id, char *src, size_t n)
{
    const ctl_event *e = ctl_event_find(c, id);
    if (e) {
        if (!strcmp(e->ev.source, "openadr")) return NULL;
        snprintf(src, n, "%s", e->ev.source);
        return src;
    }
    return ctl_db_event_source(c, id, src, n) == 1 && strcmp(src, "openadr") ? src : NULL;
}

/* a version whose steps would take the id of another source's event:
   refused whole, that event untouched; 0, or 409 with err set */
static int collision(ctl *c, const pfi_oadr_event *ev, const char *via, pfi_error *err)
{
    char src[sizeof ev->step[0].source];
    for (size_t k = 0; k < ev->nsteps; k++) {
        if (!foreign_source(c, ev->step[k].id, src, sizeof src)) continue;
        pfi_errorf(err, PFI_ESTATE,
                   "%s %s is the id of an event of source %s: the whole event is refused (the "
                   "grid creates, changes and cancels only its own events)",
                   ev->nsteps > 1 ? "its step" : "its id", ev->step[k].id, src);
        rejected(c, PFI_OADR_R_COLLISION, ev->id, via, err->msg);
        return 409;
    }
    return 0;
}

static int ended(const ctl_event *e)
{
    return (e->status == CTL_EV_DONE) || (e->status == CTL_EV_CANCELLED);
}

static json_t *answer(const char *id, const char *result, const char *reason)
{
    json_t *o = json_pack("{s:s,s:s}", "id", id, "result", result);
    if (o && reason) json_object_set_new(o, "reason", json_string(reason));
    return o;
}

/* the steps of an event that is deleted or replaced: cancelled (keep: a
   new version's steps that stay) */
static void cancel_steps(ctl *c, const char *id, const pfi_oadr_event *keep, const char *who)
{
    for (size_t i = 0; i < c->st.nevents; i++) {
        ctl_event *e = &c->st.event[i];
        if (!step_of(e, id) || ended(e)) continue;
        int kept = 0;
        for (size_t k = 0; keep && k < keep->nsteps; k++)
            kept |= !strcmp(keep->step[k].id, e->ev.id) &&
                    pfi_grid_event_end(&keep->step[k]) > pfi_clock_now();
        if (!kept) ctl_event_cancel(c, e->ev.id, who, NULL);
    }
}

/* an active step takes the new version's target and end now */
static void retarget(ctl *c, ctl_event *e, const pfi_grid_event *s, const char *who)
{
    double start = e->ev.start, end = pfi_grid_event_end(s);
    e->ev = *s;
    e->ev.start = start;
    if (!s->open_ended) e->ev.duration_s = fmax(1, end - start);
    e->target_w = ctl_event_target_w(&c->cfg, e);
    e->reached_t = NAN;
    snprintf(e->changed_by, sizeof e->changed_by, "%s", who);
    ctl_log(c, "event %s (openadr) updated while active by %s: target %.0f W, %s", e->ev.id, who,
            e->target_w, e->ev.open_ended ? "until cancelled" : "new end");
    ctl_db_put_event(c, e);
    ctl_store(c)->event_put(c, e); /* failover: in etcd too (ctl_store.h) */
    c->wake = 1;
    ctl_agents_wake(c);
}

/* the OpenADR id a grid step belongs to: its id up to a ".k" suffix */
static size_t base_len(const char *step_id)
{
    const char *dot = strrchr(step_id, '.');
    return dot ? (size_t)(dot - step_id) : strlen(step_id);
}

static int cmp_base(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t nx = base_len(x), ny = base_len(y);
    int r = strncmp(x, y, nx < ny ? nx : ny);
    return r ? r : (nx > ny) - (nx < ny);
}

/* does ev fit the grid's bounds (ctl_state.h) once its own pending steps
   are replaced? The whole event or nothing: 0, or -1 with err set */
static int grid_room(ctl *c, const pfi_oadr_event *ev, double now, pfi_error *err)
{
    const ctl_state *s = &c->st;
    size_t other = 0, adds = 0, nb = 0;
    const char **base = malloc((s->nevents + 1) * sizeof *base);
    if (!base) return pfi_errorf(err, PFI_ENOMEM, "out of memory"), -1;
    for (size_t i = 0; i < s->nevents; i++) {
        const ctl_event *e = &s->event[i];
        if (ended(e) || strcmp(ctl_event_class(e->ev.source), "grid") || step_of(e, ev->id))
            continue;
        other++;
        base[nb++] = e->ev.id;
    }
    for (size_t k = 0; k < ev->nsteps; k++) adds += pfi_grid_event_end(&ev->step[k]) > now;
    qsort(base, nb, sizeof *base, cmp_base);
    size_t events = 0;
    for (size_t i = 0; i < nb; i++) events += i == 0 || cmp_base(&base[i - 1], &base[i]);
    free(base);
    if (other + adds > CTL_GRID_MAX_STEPS)
        return pfi_errorf(err, PFI_ENOMEM,
                          "%zu intervals with the %zu the grid has pending would pass the bound "
                          "of %d: the whole event is refused",
                          adds, other, CTL_GRID_MAX_STEPS),
               -1;
    if (adds && events + 1 > CTL_GRID_MAX_EVENTS)
        return pfi_errorf(err, PFI_ENOMEM,
                          "the grid has %zu events pending, the bound is %d: the whole event is "
                          "refused",
                          events, CTL_GRID_MAX_EVENTS),
               -1;
    return 0;
}

static int add_steps(ctl *c, const pfi_oadr_event *ev, const char *via, const char *who,
                     json_t **out, pfi_error *err, double now, int new_only);
static int book_pending(void *ud, const char *id);

static int apply(ctl *c, const pfi_oadr_event *ev, const char *via, const char *who, json_t **out,
                 pfi_error *err)
{
    double now = pfi_clock_now();
    int code = collision(c, ev, via, err);
    if (code) return code;
    if (grid_room(c, ev, now, err)) {
        rejected(c, PFI_OADR_R_REFUSED, ev->id, via, err->msg);
        return 413; /* too large for what is left: a 4xx, not a retry later */
    }
    /* one transaction and one log line for all of the event's intervals */
    int txn = sqlite3_exec(c->io.db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    c->adds_quiet = 1;
    cancel_steps(c, ev->id, ev, who);
    code = add_steps(c, ev, via, who, out, err, now, 0);
    c->adds_quiet = 0;
    if (book_pending(c, ev->id)) { /* what its "now" meant, kept while it matters */
        ctl_db_oadr_first_put(c, ev->id, ev->first_s);
        ctl_store(c)->oadr_first(c, ev->id, ev->first_s); /* failover: the new leader's "now" */
    }
    if (txn && sqlite3_exec(c->io.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        ctl_log(c, "error: saving OpenADR event %s: %s", ev->id, sqlite3_errmsg(c->io.db));
        sqlite3_exec(c->io.db, "ROLLBACK", NULL, NULL, NULL);
    }
    return code;
}

/* A loop to the end of time (User Guide 7.3) is expanded only
 * PFI_OADR_LOOP_AHEAD_S (7 days) ahead (pfi_oadr_event.expanded_to_s): the
 * same version, read again at a poll once the last of its steps known ends
 * within 6 days, adds the steps beyond (once a day, one log line), the
 * steps known left as they are (an operator's cancellation included) */
static int loop_due(ctl *c, const pfi_oadr_event *ev, double now)
{
    if (!(ev->expanded_to_s > 0)) return 0;
    double end = -INFINITY;
    for (size_t i = 0; i < c->st.nevents; i++)
        if (step_of(&c->st.event[i], ev->id))
            end = fmax(end, pfi_grid_event_end(&c->st.event[i].ev));
    return end < now + PFI_OADR_LOOP_AHEAD_S - 86400;
}

static int extend_loop(ctl *c, const pfi_oadr_event *ev, const char *via, const char *who,
                       json_t **out, pfi_error *err)
{
    int txn = sqlite3_exec(c->io.db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    c->adds_quiet = 1;
    int code = add_steps(c, ev, via, who, out, err, pfi_clock_now(), 1);
    c->adds_quiet = 0;
    if (txn && sqlite3_exec(c->io.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        ctl_log(c, "error: saving OpenADR event %s: %s", ev->id, sqlite3_errmsg(c->io.db));
        sqlite3_exec(c->io.db, "ROLLBACK", NULL, NULL, NULL);
    }
    return code;
}

/* one line for the event's steps taken: how many, when the first starts
   and the last ends */
static void steps_logged(ctl *c, const pfi_oadr_event *ev, const char *via, const char *who,
                         size_t taken, double now)
{
    double first = INFINITY, last = -INFINITY;
    for (size_t k = 0; k < ev->nsteps; k++) {
        double end = pfi_grid_event_end(&ev->step[k]);
        if (end <= now) continue;
        first = fmin(first, ev->step[k].start);
        last = fmax(last, end);
    }
    char lastbuf[48];
    if (isfinite(last))
        snprintf(lastbuf, sizeof lastbuf, "the last ends %.0f s from now", last - now);
    else snprintf(lastbuf, sizeof lastbuf, "until cancelled");
    ctl_log(c,
            "OpenADR event %s (%s): %zu interval%s scheduled or updated by %s, the first starts "
            "%.0f s from now, %s",
            ev->id, via, taken, taken == 1 ? "" : "s", who, first - now, lastbuf);
}

/* each step of ev that has not ended: added, or retargeted while active */
static int add_steps(ctl *c, const pfi_oadr_event *ev, const char *via, const char *who,
                     json_t **out, pfi_error *err, double now, int new_only)
{
    json_t *steps = json_array();
    size_t taken = 0, past = 0, refused = 0;
    int code = 200;
    pfi_error last;
    last.msg[0] = '\0';
    for (size_t k = 0; k < ev->nsteps; k++) {
        const pfi_grid_event *s = &ev->step[k];
        if (pfi_grid_event_end(s) <= now) {
            past++;
            continue;
        }
        ctl_event *e = ctl_event_find(c, s->id);
        if (e && new_only) continue; /* a loop extended: the steps known stay as they are */
        if (e && (e->status == CTL_EV_ACTIVE) && !e->cancelled) {
            retarget(c, e, s, who);
        } else {
            if (e && (e->status != CTL_EV_SCHEDULED)) /* an ended step of an earlier version */
                *e = c->st.event[--c->st.nevents];
            pfi_error pe;
            pfi_status st = ctl_event_add(c, s, who, NULL, &pe);
            if (st) {
                refused++;
                code = ctl_event_http_code(st, 0);
                last = pe;
                continue;
            }
        }
        taken++;
        ctl_db_oadr_step_put(c, s->id, ev->id, ev->interval_id[k]);
        ctl_event *added = ctl_event_find(c, s->id);
        if (added) added->report_mask = ev->report_mask;
        /* announced at the OpenADR event's first receipt, whatever the step */
        if (added && ev->first_s < added->announced_t) added->announced_t = ev->first_s;
        json_array_append_new(steps, ctl_event_json(added));
    }
    if (refused) {
        char m[sizeof last.msg + 64];
        snprintf(m, sizeof m, "%zu of %zu steps refused: %s", refused, ev->nsteps, last.msg);
        rejected(c, PFI_OADR_R_REFUSED, ev->id, via, m);
    }
    if (!taken) {
        json_decref(steps);
        if (!refused) {
            rejected(c, PFI_OADR_R_ENDED, ev->id, via, "every interval ended before it arrived");
            *out = answer(ev->id, "ignored", pfi_oadr_reason_name(PFI_OADR_R_ENDED));
            return 200;
        }
        *err = last;
        return code;
    }
    if (past) ctl_log(c, "OpenADR event %s: %zu intervals already over, skipped", ev->id, past);
    steps_logged(c, ev, via, who, taken, now);
    if (ev->report_unmeasured[0])
        ctl_log(c,
                "OpenADR event %s: reportDescriptors ask for %s: pfi cannot measure %s, not "
                "reported",
                ev->id, ev->report_unmeasured, strchr(ev->report_unmeasured, ',') ? "them" : "it");
    *out = answer(ev->id, "applied", NULL);
    json_object_set_new(*out, "events", steps);
    return 200;
}

/* a DELETE: the grid's own steps of the id cancelled; an id that names
   only another source's event (or its steps) cancels nothing: a collision,
   409 with err set */
static int delete_event(ctl *c, const pfi_oadr_event *ev, const char *via, const char *who,
                        json_t **out, pfi_error *err)
{
    char src[sizeof ev->step[0].source];
    const char *foreign = foreign_source(c, ev->id, src, sizeof src);
    int own = 0;
    for (size_t i = 0; i < c->st.nevents; i++) {
        const ctl_event *e = &c->st.event[i];
        own |= step_of(e, ev->id);
        if (!foreign && strcmp(e->ev.source, "openadr") && names_step(e->ev.id, ev->id)) {
            snprintf(src, sizeof src, "%s", e->ev.source);
            foreign = src;
        }
    }
    if (foreign && !own) {
        pfi_errorf(err, PFI_ESTATE,
                   "%s is the id of an event of source %s: not cancelled (the grid creates, "
                   "changes and cancels only its own events)",
                   ev->id, foreign);
        rejected(c, PFI_OADR_R_COLLISION, ev->id, via, err->msg);
        return 409;
    }
    cancel_steps(c, ev->id, NULL, who);
    ctl_db_oadr_forget(c, ev->id);
    ctl_store(c)->oadr_first(c, ev->id, NAN);
    if (own || log_allowed(c)) /* a DELETE of an id never seen: a flood's, limited */
        ctl_log(c, "OpenADR event %s (%s) deleted by %s", ev->id, via, who);
    *out = answer(ev->id, "deleted", NULL);
    json_object_set_new(*out, "status", json_string("cancelled"));
    return 200;
}

/* "now" of an event id: its first receipt, stored (lock held) */
static double first_receipt(void *ud, const char *id, double now)
{
    return ctl_db_oadr_first(ud, id, now);
}

/* the book never forgets an id with a step scheduled or running (lock held) */
static int book_pending(void *ud, const char *id)
{
    const ctl *c = ud;
    for (size_t i = 0; i < c->st.nevents; i++)
        if (step_of(&c->st.event[i], id) && !ended(&c->st.event[i])) return 1;
    return 0;
}

/* the stored first receipts (oadr_first) bounded (issue 41: a page of
   60,000 refused events left 60,000 rows): a row is written only when a
   version is applied, and goes once its id has nothing scheduled or running
   and was first received more than CTL_OADR_FIRST_KEEP_S ago, or beyond
   PFI_OADR_BOOK_MAX rows, the oldest first. Within the week a restarted
   controller still reads a re-served "now" event as the one it ran. */
#define CTL_OADR_FIRST_KEEP_S (7 * 86400.0)
void ctl_openadr_prune(ctl *c)
{
    size_t n = ctl_db_oadr_first_prune(c, pfi_clock_now() - CTL_OADR_FIRST_KEEP_S,
                                       PFI_OADR_BOOK_MAX, book_pending, c);
    if (n)
        ctl_log(c,
                "OpenADR: %zu stored first receipt%s of events with nothing scheduled or "
                "running forgotten",
                n, n == 1 ? "" : "s");
}

/* the book's verdict on ev's version; a batch it forgot to make room, logged */
static pfi_oadr_verdict book_note(ctl *c, const pfi_oadr_event *ev, int deleted, int *report)
{
    pfi_oadr_book *b = &c->oadr_book;
    b->pending = book_pending;
    b->ud = c;
    unsigned long long before = b->forgotten;
    pfi_oadr_verdict v = pfi_oadr_book_note(b, ev->id, ev->modified, deleted, report);
    if (b->forgotten != before)
        ctl_log(c,
                "OpenADR: %d event ids known, the bound: %llu forgotten to make room (deleted "
                "first, then the least recently seen with nothing scheduled or running)",
                PFI_OADR_BOOK_MAX, b->forgotten - before);
    return v;
}

/* what names us: ven_name, the resources, and in 3.1 the targets we ask
   the VTN for and the VEN object's own (the business logic's opaque
   grants, User Guide 8.13: the VTN serves the events of the targets we
   asked for, so they are ours; issue 42). res: room for
   CTL_OADR_MAX_RESOURCES + 32 names. */
static pfi_oadr_opts take_opts(ctl *c, const char **res)
{
    size_t nres = 0;
    for (size_t i = 0; i < c->cfg.openadr_nresources; i++)
        res[nres++] = c->cfg.openadr_resources[i];
    for (size_t i = 0; c->cfg.openadr_version == PFI_OADR_V3_1 && i < c->cfg.vtn.ntargets; i++)
        res[nres++] = c->cfg.vtn.targets[i];
    for (size_t i = 0; c->cfg.openadr_version == PFI_OADR_V3_1 && i < c->nven_targets; i++)
        res[nres++] = c->ven_targets[i];
    return (pfi_oadr_opts){.version = (pfi_oadr_version)c->cfg.openadr_version,
                           .now = pfi_clock_now(),
                           .non_gpu_offset_kw = c->cfg.non_gpu_offset_kw,
                           .ven_name = c->cfg.openadr_ven_name,
                           .resources = res,
                           .nresources = nres,
                           .program_descriptors = c->io.program_descriptors,
                           .first_receipt = first_receipt,
                           .ud = c};
}

int ctl_openadr_check(ctl *c, const char *json, size_t len, char *id, size_t id_n, pfi_error *err)
{
    const char *res[CTL_OADR_MAX_RESOURCES + 32];
    pfi_oadr_opts o = take_opts(c, res);
    o.first_receipt = NULL; /* nothing stored: "now" is now */
    pfi_oadr_event *ev = calloc(1, sizeof *ev);
    if (!ev) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    pfi_status st = pfi_oadr_parse(json, len, &o, ev, err);
    snprintf(id, id_n, "%s", ev->id);
    free(ev);
    return st;
}

int ctl_openadr_take(ctl *c, const char *json, size_t len, const char *via, const char *who,
                     json_t **out, pfi_error *err)
{
    *out = NULL;
    const char *res[CTL_OADR_MAX_RESOURCES + 32];
    pfi_oadr_opts o = take_opts(c, res);
    pfi_oadr_event *ev = malloc(sizeof *ev);
    if (!ev) {
        pfi_errorf(err, PFI_ENOMEM, "out of memory");
        return 503;
    }
    pfi_error pe;
    pfi_status st = pfi_oadr_parse(json, len, &o, ev, &pe);
    int report = 1, code = 200;
    pfi_oadr_verdict v = PFI_OADR_NEW;
    if (ev->id[0] && !(!st && ev->op == PFI_OADR_OP_READ)) /* a READ is no version */
        v = book_note(c, ev, !st && ev->op == PFI_OADR_OP_DELETE, &report);
    /* a version stamped without an offset (the reference VTN's), once */
    if (!st && ev->local_timestamp && v != PFI_OADR_SAME) c->vtn.nonconf[CTL_VTN_NC_LOCAL_TIME]++;
    if (st) {
        if (report) rejected(c, ev->reason, ev->id, via, pe.msg);
        *err = pe;
        code = 400;
    } else if (v == PFI_OADR_SAME && loop_due(c, ev, pfi_clock_now())) {
        code = extend_loop(c, ev, via, who, out, err);
    } else if (v == PFI_OADR_SAME) {
        *out = answer(ev->id, "unchanged", NULL); /* a repeated poll or delivery */
    } else if (v == PFI_OADR_OLDER) {
        if (report)
            rejected(c, PFI_OADR_R_STALE, ev->id, via,
                     "an older modificationDateTime than the version we have");
        *out = answer(ev->id, "ignored", pfi_oadr_reason_name(PFI_OADR_R_STALE));
    } else if (ev->op == PFI_OADR_OP_READ) {
        rejected(c, PFI_OADR_R_OPERATION, ev->id, via, "a READ notification asks nothing of us");
        *out = answer(ev->id, "ignored", pfi_oadr_reason_name(PFI_OADR_R_OPERATION));
    } else if (ev->op == PFI_OADR_OP_DELETE) {
        code = delete_event(c, ev, via, who, out, err);
    } else if (!ev->targeted) { /* an earlier version may have been for us */
        cancel_steps(c, ev->id, NULL, who);
        rejected(c, PFI_OADR_R_TARGETS, ev->id, via,
                 "its targets name neither this VEN (ven_name) nor its resources");
        *out = answer(ev->id, "ignored", pfi_oadr_reason_name(PFI_OADR_R_TARGETS));
    } else {
        if (ev->note[0]) ctl_log(c, "OpenADR event %s (%s): %s", ev->id, via, ev->note);
        code = apply(c, ev, via, who, out, err);
    }
    free(ev);
    return code;
}
