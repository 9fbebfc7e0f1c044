/* event_kind.h — the kinds of grid event as one table (issue 43): each
 * kind's field (its JSON key, its name in a report and a record), its type
 * and range, and the cut it asks of a baseline. Parsing, formatting,
 * checking, the report, the record and both cut computations (the
 * controller's event target and the response plan's cut) read the table;
 * nothing else switches on the kind.
 *
 * A new kind is its enum value and field in grid_event.h and one row in
 * event_kind.c; `pfi event create` learns it with an option in cmd_event.c.
 * Where a kind comes from (the API, a trigger, an OpenADR payload) is the
 * source's business: openadr.c maps its payload types onto kinds. */
#ifndef PFI_EVENT_KIND_H
#define PFI_EVENT_KIND_H

#include <stddef.h>

#include "grid_event.h"
#include "json_obj.h" /* PFI_J_LO_OPEN, PFI_J_HI_OPEN */

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_EVENT_LEVELS 4 /* grid levels 0..3 (the controller's levels_pct) */

typedef struct pfi_event_kind_row {
    pfi_event_kind kind;
    const char *name;   /* the JSON field, as in the canonical form: "reduction_pct" */
    int integer;        /* 1: an int field, a JSON integer; 0: a double */
    size_t offset;      /* of its field in pfi_grid_event */
    double lo, hi;      /* its range */
    unsigned open;      /* PFI_J_LO_OPEN | PFI_J_HI_OPEN (json_obj.h): an end excluded */
    const char *expect; /* the range error's text: "expected a number in (0, 90]" */
    const char *show;   /* printf format of the value for people: "%g%%", "%g kW" */
    /* the cut it asks, exactly one of the two: a share of the baseline
       base_w in % (level_cut_pct: the configured cut of each grid level), or
       a GPU power target in W whatever the baseline */
    double (*cut_pct)(const pfi_grid_event *ev, const double *level_cut_pct, double base_w);
    double (*target_w)(const pfi_grid_event *ev);
} pfi_event_kind_row;

extern const pfi_event_kind_row pfi_event_kinds[];
extern const size_t pfi_event_nkinds;

/* the row of a kind; NULL for a value that names none */
const pfi_event_kind_row *pfi_event_kind_of(pfi_event_kind kind);
/* the event's value in its kind's field (NaN if the kind is unknown) */
double pfi_grid_event_value(const pfi_grid_event *ev);
/* sets the kind and its field (an integer kind takes v as an int) */
void pfi_grid_event_set(pfi_grid_event *ev, pfi_event_kind kind, double v);
/* "reduction_pct, target_kw and level" (sep ", ", last " and "), or with
   other separators: "reduction_pct | target_kw | level" */
void pfi_event_kind_list(char *buf, size_t n, const char *sep, const char *last);

/* The cut an event asks of base_w, the one computation for the event's
 * target and the plan's cut. A share: target_w = base_w (1 - cut_pct/100).
 * A target: cut_pct = 100 (1 - target_w/base_w), NaN when base_w <= 0.
 * level_cut_pct has PFI_EVENT_LEVELS entries. */
typedef struct pfi_event_cut {
    double cut_pct, target_w;
} pfi_event_cut;
pfi_event_cut pfi_grid_event_cut(const pfi_grid_event *ev, const double *level_cut_pct,
                                 double base_w);

#ifdef __cplusplus
}
#endif
#endif
