/* openadr.h — OpenADR 3.0.1 and 3.1 events as a VEN reads them
 * (docs/controller.md, "OpenADR 3"; the specification's examples are in
 * tests/openadr3/).
 *
 * Input: a bare EVENT object (as GET /events serves it), a 3.0.1
 * notification {"objectType": "EVENT", "operation": "POST"|"PUT"|"DELETE",
 * "object": EVENT} or a 3.1 notification (operation "CREATE"|"READ"|
 * "UPDATE"|"DELETE"). Both sets of operations are read whatever the
 * configured version (they share only DELETE, which means the same);
 * the version decides the form of `targets`.
 *
 * Output: the event's id, version (modificationDateTime), priority and its
 * steps — one pfi_grid_event per interval carrying IMPORT_CAPACITY_LIMIT
 * (target_kw = limit in kW - non_gpu_offset_kw) or SIMPLE (level 0..3).
 * Metadata times (createdDateTime, modificationDateTime) are RFC 3339, or
 * a date and time without an offset ("2026-03-20 14:58:51", as the
 * OpenADR Alliance's reference VTN writes them): read as UTC, and
 * local_timestamp set so that the caller can count the form; any other
 * createdDateTime is not read (pfi does not use it). Interval and event
 * starts keep the strict rule: an offset, or "now".
 * Step k starts at the interval's own intervalPeriod.start, else where
 * the interval before it ended (the first at the event's start); "now" (any
 * 0001-01-01, whatever its time or offset) is the event's start on the
 * first interval and the end of the one before on a later one (User Guide
 * 7.3); on the event itself it is opts->now (the controller passes the
 * first receipt of the event's id, so a restart or a new version does not
 * restart the event). A step lasts the interval's own duration, else the
 * event's intervalPeriod.duration (the intervals' default), else until the
 * next interval's explicit start (the last one: until cancelled), as
 * openleadr-rs reads an interval without one.
 * Durations: pfi_oadr_duration. PT0S is a window of no duration: such an
 * interval is skipped, and an event whose every interval is PT0S (the User
 * Guide's way to cancel an event) reads as a DELETE.
 * Multi-value payloads (User Guide 7.3): the payload pfi acts on with n
 * values makes its interval n consecutive sub-intervals of duration / n,
 * value k in sub-interval k, each a step with the interval's own id; the
 * values of other payloads split nothing. n > 1 on an interval until
 * cancelled, or sub-intervals under 1 s, refuse the event (reason
 * "duration").
 * The event-level `duration` (the top-level key; the event's
 * intervalPeriod.duration is the intervals' default, above), measured from
 * the earliest interval start (User Guide 7.3): shorter than the intervals
 * truncates them (the step across its end shortened, later ones dropped),
 * equal changes nothing, longer loops the whole interval sequence (step
 * starts continuing, one pass per span of the intervals) until it ends;
 * with an interval until cancelled a finite one truncates and P9999Y
 * changes nothing. A loop whose end is beyond opts->now +
 * PFI_OADR_LOOP_AHEAD_S (P9999Y, or any long one) is expanded only up to
 * there, passes that ended before opts->now are skipped, and
 * expanded_to_s says so: the caller reads the event again (the same
 * version too) at each poll so that the steps move ahead with time. An
 * expansion of more than PFI_OADR_MAX_STEPS steps refuses the event
 * (reason "steps"; more than that many intervals with a payload: reason
 * "intervals"). opts->now is the caller's clock here, not the first
 * receipt.
 * Step ids: the event's id for one step that does not loop, else ID.N with
 * N the step's place in the whole expansion (pass * steps per pass + place
 * in the pass, so ids stay the same from poll to poll and past 1000; up to
 * 10 digits); OpenADR ids cannot contain '.'. Each step keeps its
 * interval's own id (interval_id) for the REPORT. Units of a payload type: the event's
 * payloadDescriptors, else its program's (opts->program_descriptors), else
 * KW; KW, W and MW are read, any other unit rejects the event. An
 * IMPORT_CAPACITY_LIMIT of 0, or one at or below the non-GPU offset, is a
 * GPU target of 0 kW (every job at its floor). A SIMPLE level is 0..3,
 * written as an integer or an integral number (2.0). A target (3.1: a
 * string; 3.0.1: a value of VEN_NAME or RESOURCE_NAME) written as a number
 * is compared as its decimal text.
 *
 * Every rejection has one reason from a small fixed set (the label of
 * pfi_ctl_openadr_rejected_total) and a one-line message. */
#ifndef PFI_OPENADR_H
#define PFI_OPENADR_H

#include <stddef.h>

#include "grid_event.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_OADR_ID_MAX 128 /* the specification's objectID */
/* steps per event: a week of 15-minute steps (672) and some room; an
 * event with more intervals with a payload is refused whole (reason
 * "intervals"), one whose sub-intervals or loop make more (reason
 * "steps") too */
#define PFI_OADR_MAX_STEPS 1000
/* how far past opts->now a loop to beyond it is expanded (7 days) */
#define PFI_OADR_LOOP_AHEAD_S 604800.0

typedef enum pfi_oadr_version { PFI_OADR_V3_1 = 0, PFI_OADR_V3_0_1 } pfi_oadr_version;

typedef enum pfi_oadr_op {
    PFI_OADR_OP_UPSERT = 0, /* a bare EVENT, POST, PUT, CREATE, UPDATE */
    PFI_OADR_OP_DELETE,
    PFI_OADR_OP_READ /* 3.1: a read was made; nothing to do */
} pfi_oadr_op;

typedef enum pfi_oadr_reason {
    PFI_OADR_OK = 0,
    PFI_OADR_R_MALFORMED, /* not an EVENT, bad JSON, id, time or value */
    PFI_OADR_R_OPERATION, /* an operation that asks nothing of us (READ) */
    PFI_OADR_R_UNIT,      /* a unit other than KW, W, MW */
    PFI_OADR_R_DURATION,  /* malformed, negative, under 1 s (PT0S aside), missing; several
                             values on an interval until cancelled */
    PFI_OADR_R_LOOP,      /* unused since event-level durations are read (kept: its label) */
    PFI_OADR_R_INTERVALS, /* no intervals */
    PFI_OADR_R_PAYLOAD,   /* no IMPORT_CAPACITY_LIMIT or SIMPLE, or a value out of range */
    PFI_OADR_R_TARGETS,   /* not for this VEN or its resources */
    PFI_OADR_R_STALE,     /* an older version than the one we have */
    PFI_OADR_R_ENDED,     /* every step ended before it arrived */
    PFI_OADR_R_REFUSED,   /* the controller refused a step (e.g. too many events) */
    PFI_OADR_R_COLLISION, /* its id (or a step's) names an event of another source: the
                             operator's (API, schedule file) or a trigger's */
    PFI_OADR_R_PAGE,      /* a VTN page longer than the limit asked: refused whole */
    PFI_OADR_R_STEPS,     /* sub-intervals or a loop make more than PFI_OADR_MAX_STEPS */
    PFI_OADR_NREASONS
} pfi_oadr_reason;

/* the label value of a reason ("unit", "duration", ...) */
const char *pfi_oadr_reason_name(pfi_oadr_reason r);

/* the REPORT payloads pfi measures: DEMAND (KW), BASELINE (KW), DELTA_USAGE
 * (KWH) are sent when an event has no reportDescriptors; READING in a power
 * unit (KW) and USAGE (KWH) only when asked for */
enum {
    PFI_OADR_REPORT_DEMAND = 1,
    PFI_OADR_REPORT_BASELINE = 2,
    PFI_OADR_REPORT_DELTA_USAGE = 4,
    PFI_OADR_REPORT_READING = 8,
    PFI_OADR_REPORT_USAGE = 16,
    PFI_OADR_REPORT_DEFAULT = 7,
    PFI_OADR_REPORT_NONE = 32 /* reportDescriptors ask only for what pfi cannot measure */
};

typedef struct pfi_oadr_opts {
    pfi_oadr_version version;
    double now;               /* Unix seconds: what 0001-01-01 means */
    double non_gpu_offset_kw; /* subtracted from IMPORT_CAPACITY_LIMIT */
    const char *ven_name;     /* NULL or "": targets are not checked */
    const char *const *resources;
    size_t nresources;
    /* the program's payloadDescriptors as JSON text (NULL: none known):
       the units of payload types the event's own descriptors do not give */
    const char *program_descriptors;
    /* what "now" means for the event id: called once its id is read (NULL:
       opts->now); the controller answers the id's first receipt, stored */
    double (*first_receipt)(void *ud, const char *id, double now);
    void *ud;
} pfi_oadr_opts;

typedef struct pfi_oadr_event {
    char id[PFI_OADR_ID_MAX + 1]; /* "" when it could not be read */
    pfi_oadr_op op;
    double modified; /* modificationDateTime, 0 when absent */
    double first_s;  /* what "now" meant for it (opts->first_receipt's answer) */
    /* 1 when createdDateTime or modificationDateTime had no offset (read as
       UTC): a non-conformant form accepted, for the caller to count */
    int local_timestamp;
    /* a loop expanded only up to this time (opts->now + PFI_OADR_LOOP_AHEAD_S):
       read the event again at each poll; 0 when every step is here */
    double expanded_to_s;
    int has_priority, priority;
    int targeted; /* for us (or no targets) */
    size_t nsteps;
    pfi_grid_event step[PFI_OADR_MAX_STEPS];
    long long interval_id[PFI_OADR_MAX_STEPS]; /* each step's interval's own id */
    /* reportDescriptors: which of the payloads pfi reports it asks for
       (PFI_OADR_REPORT_*; 0 when it has none: all three), and the payload
       types it asks for that pfi cannot measure (e.g. "VOLTS, KVAR") */
    unsigned report_mask;
    char report_unmeasured[96];
    pfi_oadr_reason reason; /* why it is rejected (PFI_OADR_OK: it is not) */
    char note[160];         /* payloads or intervals that were skipped, and why */
} pfi_oadr_event;

/* An OpenADR duration from start (Unix seconds): the specification's
 * pattern P[nY][nM][nW|nD][T[nH][nM][n[.n]S]] (openleadr-rs's full form
 * P0Y0M0DT1H0M0S included; also weeks beside days and fractions of days,
 * hours and minutes); years and months are calendar steps in UTC from
 * start (the day clamped to the month's last); an end after
 * 9999-12-31T23:59:59Z is until cancelled (*open = 1, *d = 0). 0, or -1
 * when malformed or negative. */
int pfi_oadr_duration(const char *s, double start, double *d, int *open);

/* Parse one EVENT or notification. PFI_OK: ev describes it (ev->targeted
 * says whether it is for us; a DELETE or READ has id and version only).
 * Otherwise ev->reason and err say why, with ev->id and ev->modified set
 * when they could be read. */
pfi_status pfi_oadr_parse(const char *json, size_t len, const pfi_oadr_opts *opts,
                          pfi_oadr_event *ev, pfi_error *err);

/* What the configured version's schema requires of a REPORT a VEN POSTs
 * (openadr_report.c): PFI_OK, or PFI_EINVAL naming the first field that
 * fails. */
pfi_status pfi_oadr_report_check(const char *json, size_t len, pfi_oadr_version v, pfi_error *err);

/* The versions seen, per event id: a newer modificationDateTime replaces,
 * the same or an older one is ignored, each ignored or rejected version is
 * reported once.
 *
 * Bounded: at most PFI_OADR_BOOK_MAX ids (16 times the grid's 256 pending
 * events: a VTN's whole listing and its history fit). A new id that finds
 * the book full makes room for itself and the next ones by forgetting
 * PFI_OADR_BOOK_MAX / 8 ids at once: deleted ids first, then ids with
 * nothing scheduled or active (ended, ignored, refused), each group least
 * recently seen first (every note of an id, a repeated poll included,
 * makes it the most recently seen); an id for which pending() answers 1 —
 * it has a step scheduled or active — is never forgotten. A forgotten id
 * seen again is NEW: an event that ended is then skipped as ended, one that
 * was refused is refused (and counted) again; its "now" stays its first
 * receipt, which the controller keeps apart (SQLite). When nothing can be
 * forgotten the new id is not recorded (NEW each time it is seen). */
#define PFI_OADR_BOOK_MAX 4096

typedef struct pfi_oadr_seen {
    char id[PFI_OADR_ID_MAX + 1];
    double modified; /* the newest version seen */
    double reported; /* the last version reported as ignored (NaN: none) */
    int deleted;
    unsigned long long seen; /* the book's tick at its last note (least recently seen first) */
} pfi_oadr_seen;

typedef struct pfi_oadr_book {
    pfi_oadr_seen *v;
    size_t n, cap;
    unsigned long long tick;      /* notes so far */
    unsigned long long forgotten; /* ids forgotten to make room, in all */
    /* 1 if the event id has a step scheduled or active: never forgotten
       (NULL: none has); the caller sets it (pfi_oadr_book_free clears it) */
    int (*pending)(void *ud, const char *id);
    void *ud;
} pfi_oadr_book;

typedef enum pfi_oadr_verdict {
    PFI_OADR_NEW = 0, /* first version of the id */
    PFI_OADR_NEWER,   /* replaces the version we have */
    PFI_OADR_SAME,    /* the version we have (a repeated poll or delivery) */
    PFI_OADR_OLDER    /* older than the version we have */
} pfi_oadr_verdict;

/* Record (id, modified) and say what it is to the version we have. *report
 * is 1 the first time a SAME or OLDER version is seen as such after an
 * OLDER one (OLDER: once per version), and for NEW and NEWER. A DELETE
 * passes deleted = 1: the id stays known so that the same version served
 * again does not come back (until the book forgets it, above). Returns
 * PFI_OADR_NEW without recording when out of memory or when the book is
 * full of ids pending() keeps. */
pfi_oadr_verdict pfi_oadr_book_note(pfi_oadr_book *b, const char *id, double modified, int deleted,
                                    int *report);
void pfi_oadr_book_free(pfi_oadr_book *b);

/* Log lines of OpenADR versions not acted on, limited: the first
 * PFI_OADR_LOG_BURST of a window of PFI_OADR_LOG_WINDOW_S seconds (it opens
 * with its first line) are logged, the rest only counted, and once the
 * window has ended their number is said in one summary line. Whoever
 * counts rejections counts every one regardless. */
#define PFI_OADR_LOG_BURST 20
#define PFI_OADR_LOG_WINDOW_S 60.0

typedef struct pfi_oadr_loglimit {
    double start;                  /* the open window's start (seconds) */
    unsigned logged;               /* lines logged in it */
    unsigned long long suppressed; /* lines not logged in it */
} pfi_oadr_loglimit;               /* all zero: no window open */

/* One line at now_s (seconds of a monotonic clock): 1 to log it, 0 when
 * the window's PFI_OADR_LOG_BURST are spent (counted as suppressed).
 * *summary: the lines suppressed in a window that ended before now_s (0:
 * none), to be said first. */
int pfi_oadr_log_allow(pfi_oadr_loglimit *l, double now_s, unsigned long long *summary);
/* The lines suppressed in a window that has ended by now_s (0: none, or
 * the window still open), to be said in one line; the next line opens a
 * new window. Called now and then, so that a summary does not wait for
 * the next rejection. */
unsigned long long pfi_oadr_log_due(pfi_oadr_loglimit *l, double now_s);

#ifdef __cplusplus
}
#endif
#endif
