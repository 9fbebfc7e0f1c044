/* ctl_state.c — the small things of ctl_state.h: notes, a decision's
 * buffers, event status names. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_state.h"
#include "vec.h"

void ctl_note(ctl_notes *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int k = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (k < 0) return; /* out of memory: the line is lost, not the period */
    if (PFI_VEC_RESERVE(n->line, n->cap, n->n + 1, NULL)) {
        free(line);
        return;
    }
    n->line[n->n++] = line;
}

void ctl_notes_clear(ctl_notes *n)
{
    for (size_t i = 0; i < n->n; i++) free(n->line[i]);
    n->n = 0;
}

void ctl_decision_clear(ctl_decision *d)
{
    d->active = 0;
    d->nevent_rows = 0;
    d->sample = 0;
    d->sample_event[0] = 0;
    d->nrows = 0;
    d->profiling = 0;
    d->nmem_rows = 0;
    d->nbase_rows = 0;
    d->ngen_rows = 0;
    ctl_notes_clear(&d->notes);
}

void ctl_decision_free(ctl_decision *d)
{
    ctl_notes_clear(&d->notes);
    free(d->notes.line);
    free(d->event_rows);
    free(d->rows);
    free(d->mem_rows);
    free(d->base_rows);
    free(d->gen_rows);
    memset(d, 0, sizeof *d);
}

static const char *const status_name[] = {"scheduled", "active", "done", "cancelled"};

const char *ctl_event_status_name(ctl_event_status s)
{
    return (unsigned)s < 4 ? status_name[s] : "unknown";
}

int ctl_event_status_parse(const char *name, ctl_event_status *s)
{
    for (int i = 0; i < 4; i++)
        if (name && !strcmp(name, status_name[i])) {
            *s = (ctl_event_status)i;
            return 0;
        }
    return -1;
}

ctl_event *ctl_state_event_new(ctl_state *s)
{
    if (pfi_vec_reserve(&s->event, &s->event_cap, s->nevents + 1, sizeof *s->event, NULL))
        return NULL;
    ctl_event *e = &s->event[s->nevents++];
    memset(e, 0, sizeof *e);
    return e;
}

double ctl_job_limit_w(const ctl_job *j)
{
    return j->enforced_w > 0 && j->enforced_w < j->cap_max_w ? j->enforced_w : j->cap_max_w;
}

double ctl_job_cap_sent(const ctl_job *j)
{
    return isfinite(j->cap_max_w) && j->alloc_cap_w > j->cap_max_w ? j->cap_max_w : j->alloc_cap_w;
}

int ctl_job_clamped(const ctl_job *j)
{
    return j->alloc_cap_w > 0 && ctl_job_limit_w(j) < j->alloc_cap_w - 1;
}
