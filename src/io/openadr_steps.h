/* openadr_steps.h — from an OpenADR event's intervals to its final steps:
 * the event-level `duration` (truncate, loop) and the step ids. Internal to
 * openadr.c and openadr_steps.c; the rules are in openadr.h. */
#ifndef PFI_OPENADR_STEPS_H
#define PFI_OPENADR_STEPS_H

#include "openadr.h"

/* the time one pass of the intervals covers: from the earliest interval
 * start to the latest end (+inf: an interval runs until cancelled), every
 * interval counted (those without a payload pfi acts on and PT0S ones too) */
typedef struct pfi_oadr_span {
    double start_s, end_s;
} pfi_oadr_span;

/* ev->step[0..nsteps) is one pass of the intervals (sub-intervals
 * included), in interval order. Applies the event-level duration (NULL:
 * none) measured from span->start_s: shorter truncates, equal changes
 * nothing, longer loops (a loop to beyond now_s + PFI_OADR_LOOP_AHEAD_S is
 * expanded up to there, ev->expanded_to_s set); then names the steps. 0,
 * or the reason with err set (one line naming the field). */
pfi_oadr_reason pfi_oadr_steps_finish(pfi_oadr_event *ev, const char *duration,
                                      const pfi_oadr_span *span, double now_s, pfi_error *err);

#endif
