/* grid_event.h — grid events as pfi-controller receives them.
 *
 * Canonical JSON (POST /v1/events, schedule files):
 *   {"id": "evt-1", "start": "2026-12-02T18:00:00Z", "duration_s": 3600,
 *    "reduction_pct": 30}                           cut of the measured baseline
 *   ... or "target_kw": 120                          a GPU-power target
 *   ... or "level": 2                                a grid level 0..3 -> a cut
 *   ... "duration": "PT1H" (ISO 8601) instead of duration_s (both: an error)
 *   optional: "ramp_s", "ramp_down_s" (override the configuration), "dry_run"
 * Exactly one of reduction_pct, target_kw, level. start is RFC 3339 (Z or
 * +hh:mm offset, optional fraction); id is 1..140 characters of [A-Za-z0-9._-]
 * (generated when absent): OpenADR ids are up to 128, and an event of
 * several intervals is stored as ID.0, ID.1, ... (openadr.h). Optional
 * "priority": an integer >= 0, lower is more important (OpenADR's).
 *
 * Bounds (both formats; what passes can be stored and formatted back):
 * start from 0001-01-01 to 9999-12-31 (RFC 3339's years); duration_s at
 * least 1 s, and the event ends by 9999-12-31T23:59:59Z (issue 29: no
 * shorter bound — an OpenADR event may run for weeks; the operator cancels
 * what it no longer wants), unless "open_ended": true — the event runs
 * until it is cancelled (no duration_s), or, as a cancelled one is stored,
 * ended after duration_s; target_kw finite, in [0, 1e6) kW (0: every job
 * at its floor); reduction_pct (0, 90]; level 0..3; ramps 0..86400 s.
 *
 * OpenADR 3.0.1 and 3.1 events are read by openadr.h into one of these per
 * interval (a step); P9999Y there is "open_ended". Errors name the field. */
#ifndef PFI_GRID_EVENT_H
#define PFI_GRID_EVENT_H

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_EVENT_MAX_END_S 253402300799.0     /* 9999-12-31T23:59:59Z: the latest end */
#define PFI_EVENT_MIN_START_S (-62135596800.0) /* 0001-01-01T00:00:00Z */
#define PFI_EVENT_MAX_TARGET_KW 1e6
#define PFI_EVENT_ID_MAX 140 /* characters; OpenADR's 128 and a step suffix */

/* what the event asks; each kind is a row of event_kind.c (its field, range, cut) */
typedef enum pfi_event_kind { PFI_EV_REDUCTION = 0, PFI_EV_TARGET_KW, PFI_EV_LEVEL } pfi_event_kind;
#define PFI_EV_KINDS_MAX 8 /* rows the parsers make room for */

typedef struct pfi_grid_event {
    char id[PFI_EVENT_ID_MAX + 1];
    double start;      /* Unix seconds */
    double duration_s; /* 0 while an open-ended event runs */
    int open_ended;    /* ends when cancelled (then duration_s is set) */
    pfi_event_kind kind;
    double reduction_pct;       /* PFI_EV_REDUCTION */
    double target_kw;           /* PFI_EV_TARGET_KW */
    int level;                  /* PFI_EV_LEVEL */
    double ramp_s, ramp_down_s; /* NaN: the configuration's */
    int dry_run;
    int has_priority, priority; /* lower priority = more important; none: least */
    char source[16];            /* "api", "schedule", "openadr" */
} pfi_grid_event;

/* RFC 3339 (years 0001..9999) -> Unix seconds; -1 if malformed. */
int pfi_rfc3339_parse(const char *s, double *t);
void pfi_rfc3339_format(double t, char *buf, size_t n);
/* ISO 8601 duration (PnDTnHnMnS, PnW) -> seconds; -1 if malformed. */
int pfi_iso8601_duration(const char *s, double *seconds);

pfi_status pfi_grid_event_parse(const char *json, size_t len, pfi_grid_event *ev, pfi_error *err);
/* The canonical JSON of an event (malloc'd; NULL if it cannot be written). */
char *pfi_grid_event_format(const pfi_grid_event *ev);
/* Every bound above; a one-line error naming the field. The parsers end
 * with it; the controller checks events of any origin with it. */
pfi_status pfi_grid_event_check(const pfi_grid_event *ev, pfi_error *err);
/* Unix seconds of the end: start + duration_s, or +inf while open-ended. */
double pfi_grid_event_end(const pfi_grid_event *ev);

#ifdef __cplusplus
}
#endif
#endif
