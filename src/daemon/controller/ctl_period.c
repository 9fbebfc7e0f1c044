/* ctl_period.c — one control period (docs/controller.md, "One period"):
 *
 *   collect  every agent's node view, over the network, without the lock
 *            (ctl_agents.c), read into the decision's inputs (ctl_inputs.c);
 *   decide   ctl_decide (ctl_decide.c), a pure function of the inputs and
 *            the state, under the lock the HTTP handlers share: the caps,
 *            the events' new states, the rows to store, the lines to log;
 *   persist  the rows as one checked transaction on the period's own
 *            SQLite connection, outside the lock (ctl_persist.c): a failure
 *            is logged and counted and the caps still go out;
 *   push     the caps under leases, each agent's lease generation as the
 *            decision set it (ctl_generation.c) and the transaction stored
 *            it (an unstored one is never sent), or, after an event, the
 *            GPUs handed back (ctl_agents.c).
 *
 * --record FILE writes each period's inputs and decision (ctl_record.c). */
#include <malloc.h>
#include <math.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_offer.h"
#include "ctl_record.h"

#define CTL_TRIM_PERIODS 16

/* the status page's history of measured power against the budget */
static void keep_history(ctl *c)
{
    if (c->hist_n == CTL_STATUS_HIST) {
        memmove(c->hist_t, c->hist_t + 1, (CTL_STATUS_HIST - 1) * sizeof *c->hist_t);
        memmove(c->hist_meas, c->hist_meas + 1, (CTL_STATUS_HIST - 1) * sizeof *c->hist_meas);
        memmove(c->hist_target, c->hist_target + 1, (CTL_STATUS_HIST - 1) * sizeof *c->hist_target);
        c->hist_n--;
    }
    double m = 0;
    for (size_t k = 0; k < c->st.njobs; k++) m += c->st.job[k].measured_w;
    c->hist_t[c->hist_n] = c->st.now;
    c->hist_meas[c->hist_n] = isfinite(c->st.measured_w) ? c->st.measured_w : m;
    c->hist_target[c->hist_n++] = c->st.budget_w;
}

/* what the push does after this decision: 1 caps, -1 hand back, 0 nothing */
static int push_kind(const ctl *c)
{
    int dry_now = c->cfg.dry_run, any_pushed = 0;
    for (size_t i = 0; i < c->st.nevents; i++)
        if (c->st.event[i].status == CTL_EV_ACTIVE && c->st.event[i].ev.dry_run) dry_now = 1;
    for (size_t i = 0; i < c->io.nagents; i++) any_pushed |= c->io.agent[i].pushed;
    if (c->io.dec.active) return dry_now ? 0 : 1;
    if (c->io.dec.profiling) return 1; /* a profile's caps (ctl_profile.c; never in a dry run) */
    return any_pushed ? -1 : 0;
}

/* decide, under the lock: 1 caps to push, -1 caps to hand back, 0 none */
static int decide(ctl *c, double collect_s)
{
    pthread_mutex_lock(&c->mu);
    c->phase_s[CTL_PH_COLLECT] = collect_s;
    double w0 = pfi_wall_monotonic();
    if (ctl_inputs_build(c)) ctl_log(c, "error: out of memory: this period's inputs not read");
    ctl_record_inputs(c);
    ctl_decide(&c->cfg, c->have_curve_model ? &c->curve_model : NULL, &c->st, &c->io.in,
               pfi_clock_now(), &c->io.dec);
    ctl_event_note_uncapped(c);
    ctl_event_note_clamped(c);
    c->cycle_s = c->phase_s[CTL_PH_DECIDE] = pfi_wall_monotonic() - w0;
    ctl_record_decision(c);
    c->cycles++;
    keep_history(c);
    ctl_offer_period(c); /* a snapshot for the offer's thread, when due */
    int kind = push_kind(c);
    pthread_mutex_unlock(&c->mu);
    return kind;
}

void ctl_period(ctl *c)
{
    double w0 = pfi_wall_monotonic();
    ctl_agents_collect(c);
    int kind = decide(c, pfi_wall_monotonic() - w0);
    for (size_t i = 0; i < c->io.dec.notes.n; i++) ctl_log(c, "%s", c->io.dec.notes.line[i]);
    double w1 = pfi_wall_monotonic();
    ctl_persist(c, &c->io.dec);
    double w2 = pfi_wall_monotonic();
    if (kind > 0) ctl_agents_push(c, 0);
    else if (kind < 0) {
        ctl_agents_push(c, 1);
        ctl_log(c, "caps handed back to the agents (baselines restored)");
    }
    pthread_mutex_lock(&c->mu);
    c->phase_s[CTL_PH_PERSIST] = w2 - w1;
    c->phase_s[CTL_PH_PUSH] = pfi_wall_monotonic() - w2;
    c->loop_s = pfi_wall_monotonic() - w0;
    pthread_mutex_unlock(&c->mu);
    /* every period parses each agent's node view and frees the last: give
       the freed pages back (glibc keeps them otherwise; RSS at 12,500 agents),
       every CTL_TRIM_PERIODS periods — each trim consolidates the whole heap,
       a tenth of the controller's CPU at 12,500 agents when it ran every period */
    if (c->cycles % CTL_TRIM_PERIODS == 0) malloc_trim(0);
}
