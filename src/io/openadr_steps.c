/* openadr_steps.c — an OpenADR event's final steps once its intervals are
 * read (openadr_steps.h): the event-level `duration` that truncates or
 * loops the intervals, and the step ids. */
#include "openadr_steps.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* step numbers have at most 10 digits: "ID.9999999999" fits an event id */
#define STEP_NO_END 1e10
_Static_assert(PFI_EVENT_ID_MAX >= PFI_OADR_ID_MAX + 1 + 10,
               "a step id is the OpenADR id, '.' and a step number of up to 10 digits");

/* passes j0..j1 of the intervals, pass j shifted by j * period_s; a step
 * from end_s on is dropped, one across it shortened; a pass after the
 * first expanded stops at ahead_s (a step across it is kept whole) */
typedef struct plan {
    double period_s, end_s, ahead_s, j0, j1;
    int looped;
} plan;

static void note_add(pfi_oadr_event *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note_add(pfi_oadr_event *ev, const char *fmt, ...)
{
    size_t n = strlen(ev->note);
    if (n + 8 >= sizeof ev->note) return;
    if (n) n += (size_t)snprintf(ev->note + n, sizeof ev->note - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->note + n, sizeof ev->note - n, fmt, ap);
    va_end(ap);
}

/* the passes a looping duration asks for. User Guide 7.3 ("event.duration"):
 * longer than the intervals repeats them ("24 hourly price intervals with
 * duration = P7D repeats the prices for a week"; P9999Y: indefinitely), as
 * hupe1980/openadr src/core/interval.rs (IntervalExpander::sequence,
 * expand_window) repeats the whole sequence with period = its span. Passes
 * that ended before now_s are skipped (the User Guide's 'do it now' client
 * "skips ahead"), so the step numbers stay those of the whole loop; one to
 * beyond now_s + PFI_OADR_LOOP_AHEAD_S is expanded up to there only */
static pfi_oadr_reason plan_loop(plan *p, const pfi_oadr_span *sp, double now_s, size_t nbase,
                                 const char *dur, pfi_error *err)
{
    p->looped = 1;
    p->period_s = sp->end_s - sp->start_s;
    double stop = p->end_s;
    if (!(stop <= now_s + PFI_OADR_LOOP_AHEAD_S)) stop = p->ahead_s = now_s + PFI_OADR_LOOP_AHEAD_S;
    p->j1 = fmax(0, ceil((stop - sp->start_s) / p->period_s) - 1); /* the last pass begun */
    p->j0 = now_s > sp->start_s ? floor((now_s - sp->start_s) / p->period_s) : 0;
    if (p->j0 > p->j1) p->j0 = p->j1;
    if ((p->j1 - p->j0) * (double)nbase > PFI_OADR_MAX_STEPS) {
        pfi_errorf(err, PFI_EINVAL,
                   "duration: %.40s loops the intervals into more than %d steps (up to 7 days "
                   "ahead): the whole event is refused",
                   dur, PFI_OADR_MAX_STEPS);
        return PFI_OADR_R_STEPS;
    }
    if ((p->j1 + 1) * (double)nbase > STEP_NO_END) {
        pfi_errorf(err, PFI_EINVAL,
                   "duration: %.40s loops the intervals past step number 9999999999: the whole "
                   "event is refused",
                   dur);
        return PFI_OADR_R_STEPS;
    }
    return PFI_OADR_OK;
}

/* what the event-level duration asks for, measured from the start of the
 * intervals (User Guide 7.3: an event's lifespan is "the start time of the
 * first interval plus the sum of all interval durations"; hupe1980's
 * lifespan_end adds event.duration to the sequence's start) */
static pfi_oadr_reason plan_make(plan *p, const char *dur, const pfi_oadr_span *sp, double now_s,
                                 size_t nbase, pfi_error *err)
{
    double d;
    int open;
    if (pfi_oadr_duration(dur, sp->start_s, &d, &open)) {
        pfi_errorf(err, PFI_ERANGE,
                   "duration: %.40s is not an OpenADR duration (ISO 8601, not negative)", dur);
        return PFI_OADR_R_DURATION;
    }
    if (!open && !(d >= 1)) {
        pfi_errorf(err, PFI_ERANGE,
                   "duration: %.40s: an event-level duration under 1 s leaves no interval", dur);
        return PFI_OADR_R_DURATION;
    }
    p->end_s = open ? INFINITY : sp->start_s + d;
    if (fabs(p->end_s - sp->end_s) <= 1e-6) { /* equal: nothing changes */
        p->end_s = INFINITY;
        return PFI_OADR_OK;
    }
    /* shorter truncates (User Guide 7.3: "24 hourly price intervals but
       duration = P12H effectively omits the last 12 intervals"); so does any
       finite duration when an interval runs until cancelled (hupe1980: nothing
       repeats after an open-ended interval) */
    if (!isfinite(sp->end_s) || p->end_s < sp->end_s) return PFI_OADR_OK;
    return plan_loop(p, sp, now_s, nbase, dur, err);
}

/* step s of pass j in the plan: shifted, cut at the event's end. 1 to
 * keep it, 0 when it is outside (or under 1 s once cut) */
static int step_place(pfi_grid_event *s, double j, int first_pass, const plan *p)
{
    s->start += j * p->period_s;
    if (s->start >= p->end_s || (!first_pass && s->start >= p->ahead_s)) return 0;
    if (pfi_grid_event_end(s) > p->end_s) { /* the step across the event's end: shortened */
        s->open_ended = 0;
        s->duration_s = p->end_s - s->start;
        if (!(s->duration_s >= 1)) return 0;
    }
    return 1;
}

/* the event's id when it is one step that does not loop; else ID.N, N the
 * step's place in the whole expansion (pass * steps per pass + its place
 * in the pass), so an interval keeps its id whatever a duration cuts and
 * whatever pass a poll starts from. 0, or -1 when it does not fit */
static int step_name(pfi_grid_event *s, const char *id, int single, double no)
{
    int n = single ? snprintf(s->id, sizeof s->id, "%s", id)
                   : snprintf(s->id, sizeof s->id, "%s.%llu", id, (unsigned long long)no);
    return n < 0 || (size_t)n >= sizeof s->id ? -1 : 0;
}

/* the plan's steps into ev (base: one pass of nbase steps, ids their
 * interval ids; ev's own arrays when nothing loops: written in place) */
static pfi_oadr_reason plan_apply(pfi_oadr_event *ev, const plan *p, const pfi_grid_event *base,
                                  const long long *ids, size_t nbase, pfi_error *err)
{
    size_t out = 0;
    for (double j = p->j0; j <= p->j1; j++)
        for (size_t k = 0; k < nbase; k++) {
            pfi_grid_event s = base[k];
            long long iid = ids[k];
            if (!step_place(&s, j, j == p->j0, p)) continue;
            if (out == PFI_OADR_MAX_STEPS) {
                pfi_errorf(err, PFI_EINVAL,
                           "duration: the intervals looped make more than %d steps: the whole "
                           "event is refused",
                           PFI_OADR_MAX_STEPS);
                return PFI_OADR_R_STEPS;
            }
            if (step_name(&s, ev->id, nbase == 1 && !p->looped, j * (double)nbase + (double)k)) {
                pfi_errorf(err, PFI_EINVAL, "id: no room for the step number of step %.0f",
                           j * (double)nbase + (double)k);
                return PFI_OADR_R_STEPS;
            }
            ev->interval_id[out] = iid;
            ev->step[out++] = s;
        }
    ev->nsteps = out;
    return PFI_OADR_OK;
}

pfi_oadr_reason pfi_oadr_steps_finish(pfi_oadr_event *ev, const char *dur, const pfi_oadr_span *sp,
                                      double now_s, pfi_error *err)
{
    size_t nbase = ev->nsteps;
    plan p = {.end_s = INFINITY, .ahead_s = INFINITY};
    ev->expanded_to_s = 0;
    pfi_oadr_reason r = dur ? plan_make(&p, dur, sp, now_s, nbase, err) : PFI_OADR_OK;
    if (r) return r;
    pfi_grid_event *base = ev->step;
    long long *ids = ev->interval_id;
    if (p.looped) { /* passes after the first are written over the first pass */
        base = malloc(nbase * sizeof *base);
        ids = malloc(nbase * sizeof *ids);
        if (!base || !ids) {
            free(base), free(ids);
            pfi_errorf(err, PFI_ENOMEM, "duration: out of memory looping the intervals");
            return PFI_OADR_R_STEPS;
        }
        memcpy(base, ev->step, nbase * sizeof *base);
        memcpy(ids, ev->interval_id, nbase * sizeof *ids);
    }
    r = plan_apply(ev, &p, base, ids, nbase, err);
    if (p.looped) free(base), free(ids);
    if (r) return r;
    if (isfinite(p.ahead_s)) ev->expanded_to_s = p.ahead_s;
    if (!ev->nsteps) {
        pfi_errorf(err, PFI_EINVAL,
                   "duration: %.40s ends before every interval with IMPORT_CAPACITY_LIMIT or "
                   "SIMPLE",
                   dur ? dur : "");
        return PFI_OADR_R_PAYLOAD;
    }
    if (!p.looped && ev->nsteps < nbase)
        note_add(ev, "duration %.40s: %zu steps after its end dropped", dur ? dur : "",
                 nbase - ev->nsteps);
    return PFI_OADR_OK;
}
