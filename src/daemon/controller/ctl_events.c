/* ctl_events.c — the controller's event table as the API, the schedule
 * file and OpenADR change it (lock held): schedule or update an event,
 * cancel one, find one, its target. Each change is stored at once (the
 * caller is told it was taken); a period's own changes are stored by the
 * period (ctl_period.c). Answers are pfi_status codes; the HTTP layer maps
 * them (ctl_http.c). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_store.h"
#include "event_kind.h"

ctl_event *ctl_event_find(ctl *c, const char *id)
{
    for (size_t i = 0; i < c->st.nevents; i++)
        if (!strcmp(c->st.event[i].ev.id, id)) return &c->st.event[i];
    return NULL;
}

double ctl_event_target_w(const ctl_cfg *cfg, const ctl_event *e)
{
    return pfi_grid_event_cut(&e->ev, cfg->level_cut_pct, e->baseline_w).target_w;
}

static int finished(const ctl_event *e)
{
    return e->status == CTL_EV_DONE || e->status == CTL_EV_CANCELLED;
}

/* forget the finished events beyond CTL_KEEP_FINISHED, those that ended
   first (they stay in SQLite) */
void ctl_events_forget_finished(ctl_state *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nevents; i++) n += finished(&s->event[i]);
    while (n > CTL_KEEP_FINISHED) {
        size_t old = s->nevents;
        for (size_t i = 0; i < s->nevents; i++)
            if (finished(&s->event[i]) &&
                (old == s->nevents ||
                 pfi_grid_event_end(&s->event[i].ev) < pfi_grid_event_end(&s->event[old].ev)))
                old = i;
        memmove(&s->event[old], &s->event[old + 1],
                (s->nevents - old - 1) * sizeof *s->event); /* the table's order kept */
        s->nevents--, n--;
    }
}

const char *ctl_event_class(const char *source)
{
    return !strcmp(source, "openadr")   ? "grid"
           : !strcmp(source, "trigger") ? "trigger"
                                        : "operator";
}

size_t ctl_events_pending(const ctl_state *s, const char *cls)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nevents; i++)
        n += !finished(&s->event[i]) && !strcmp(ctl_event_class(s->event[i].ev.source), cls);
    return n;
}

/* room for one more scheduled or running event of ev's source: its own
   bound (ctl_state.h); 0, or PFI_ENOMEM with the bound named */
static pfi_status room_for(const ctl_state *s, const pfi_grid_event *ev, pfi_error *err)
{
    const char *cls = ctl_event_class(ev->source);
    size_t max = !strcmp(cls, "grid")      ? CTL_GRID_MAX_STEPS
                 : !strcmp(cls, "trigger") ? CTL_TRIGGER_MAX_EVENTS
                                           : CTL_OPERATOR_MAX_EVENTS;
    if (ctl_events_pending(s, cls) < max) return PFI_OK;
    return pfi_errorf(err, PFI_ENOMEM,
                      "too many pending events from the %s (%zu scheduled or running; cancel one "
                      "first)",
                      cls, max);
}

/* an event that starts now without a ramp: the fast path pushes the planned caps at once */
static void fast_path(ctl *c, const ctl_event *e, double now)
{
    double cut = ctl_event_cut_pct(&c->cfg, &c->st, e);
    pfi_error te;
    if (e->ev.start <= now && !e->ev.dry_run && !c->cfg.dry_run && isfinite(cut) &&
        ctl_trigger(c, e->ev.id, cut, &te))
        ctl_log(c, "event %s: no fast path: %s; the next period acts on it", e->ev.id, te.msg);
}

pfi_status ctl_event_add(ctl *c, const pfi_grid_event *ev, const char *who, int *updated,
                         pfi_error *err)
{
    ctl_event *old = ctl_event_find(c, ev->id);
    double now = pfi_clock_now();
    if (old && old->status != CTL_EV_SCHEDULED)
        return pfi_errorf(err, PFI_ESTATE, "event %s is already %s", ev->id,
                          ctl_event_status_name(old->status));
    pfi_error pe;
    if (pfi_grid_event_check(ev, &pe)) /* events of any origin: the API, OpenADR, a schedule */
        return pfi_errorf(err, PFI_EINVAL, "event %s: %s", ev->id, pe.msg);
    if (pfi_grid_event_end(ev) <= now)
        return pfi_errorf(err, PFI_ERANGE,
                          "event %s ended before it arrived (start + duration_s is in the past)",
                          ev->id);
    if (!old) {
        pfi_status st = room_for(&c->st, ev, err);
        if (st) return st;
        ctl_events_forget_finished(&c->st);
    }
    ctl_event *e = old ? old : ctl_state_event_new(&c->st);
    if (!e) return pfi_errorf(err, PFI_ENOMEM, "event %s: out of memory", ev->id);
    char created_by[sizeof e->created_by];
    snprintf(created_by, sizeof created_by, "%s", old ? old->created_by : who);
    /* the first announcement stays through changes (ctl_baseline.c) */
    double announced = old && isfinite(old->announced_t) ? old->announced_t : now;
    memset(e, 0, sizeof *e);
    e->announced_t = announced;
    snprintf(e->created_by, sizeof e->created_by, "%s", created_by);
    if (old) snprintf(e->changed_by, sizeof e->changed_by, "%s", who);
    e->ev = *ev;
    e->status = CTL_EV_SCHEDULED;
    e->baseline_w = e->target_w = e->reached_t = NAN;
    e->ramp_s = isnan(ev->ramp_s) ? c->cfg.ramp_s : ev->ramp_s;
    e->ramp_down_s = isnan(ev->ramp_down_s) ? c->cfg.ramp_down_s : ev->ramp_down_s;
    ctl_db_put_event(c, e);
    ctl_store(c)->event_put(c, e); /* failover: in etcd too (ctl_store.h) */
    char dur[48];
    if (isfinite(pfi_grid_event_end(ev))) snprintf(dur, sizeof dur, "%.0f s", ev->duration_s);
    else snprintf(dur, sizeof dur, "open-ended (until cancelled)");
    if (!c->adds_quiet)
        ctl_log(c, "event %s (%s) %s %s: start %.0f s from now, %s", ev->id, ev->source,
                old ? "updated by" : "received from", who[0] ? who : "?", ev->start - now, dur);
    if (ev->start <= now + c->cfg.period_s) { /* starts now: do not wait for the next period */
        c->wake = 1;
        ctl_agents_wake(c);
    }
    fast_path(c, e, now);
    if (updated) *updated = old != NULL;
    return PFI_OK;
}

pfi_status ctl_event_cancel(ctl *c, const char *id, const char *who, pfi_error *err)
{
    ctl_event *e = ctl_event_find(c, id);
    if (!e) return pfi_errorf(err, PFI_ENOTFOUND, "no event %s", id);
    double now = pfi_clock_now();
    if (e->status == CTL_EV_SCHEDULED) {
        e->status = CTL_EV_CANCELLED;
    } else if (e->status == CTL_EV_ACTIVE) {
        if (now < pfi_grid_event_end(&e->ev)) /* end now; ramp down */
            e->ev.duration_s = fmax(1, now - e->ev.start);
        e->cancelled = 1;
    } else {
        return pfi_errorf(err, PFI_ESTATE, "event %s is already %s", id,
                          ctl_event_status_name(e->status));
    }
    snprintf(e->cancelled_by, sizeof e->cancelled_by, "%s", who);
    ctl_log(c, "event %s cancelled by %s", id, who[0] ? who : "?");
    ctl_db_put_event(c, e);
    ctl_store(c)->event_put(c, e); /* failover: in etcd too (ctl_store.h) */
    return PFI_OK;
}

/* An id names one event of one source (issue 41: a trigger naming a
   scheduled event's id replaced it, the grid's included, and then let
   control cancel it). A trigger never reuses an id; POST /v1/events
   (scope events) changes only a scheduled event of its own source, api:
   a schedule file's is changed in the file, the grid's by the VTN, a
   trigger's not at all. */
int ctl_event_id_taken(ctl *c, const char *id, int api_change_ok, pfi_error *err)
{
    const ctl_event *old = ctl_event_find(c, id);
    if (!old) return 0;
    if (api_change_ok && !strcmp(old->ev.source, "api") && old->status == CTL_EV_SCHEDULED)
        return 0;
    pfi_errorf(err, PFI_ESTATE,
               "event %s already exists (source %s, %s): only a scheduled api event is "
               "changed by POST /v1/events; give this one a new id",
               id, old->ev.source, ctl_event_status_name(old->status));
    return 1;
}
