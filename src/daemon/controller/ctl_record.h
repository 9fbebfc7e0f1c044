/* ctl_record.h — pfi-controller --record FILE (ctl_record.c): each period's
 * inputs and decision as a JSON line, for replay against the decision. */
#ifndef PFI_CTL_RECORD_H
#define PFI_CTL_RECORD_H

#include <jansson.h>

struct ctl;
struct ctl_event;
struct ctl_agent_view;
struct ctl_decision;

/* 0, or -1 (logged): path opened for appending, the header written */
int ctl_record_open(struct ctl *c, const char *path, const char *config_path);
/* before the period's decision (lock held): what it will see */
void ctl_record_inputs(struct ctl *c);
/* after it and the plan (lock held): what it decided (t: the period's clock);
 * the line is written */
void ctl_record_decision(struct ctl *c);
void ctl_record_close(void);
/* an event as the record holds it, every field exact */
json_t *ctl_record_event(const struct ctl_event *e);
/* the lease generation's inputs of an agent, into its record o; the
   decision's changed generations as [[agent, from, to, why], ...] */
void ctl_record_generation_inputs(json_t *o, const struct ctl_agent_view *a);
json_t *ctl_record_generations(const struct ctl_decision *d);
/* numbers: NaN as null, infinities as "inf" / "-inf" */
json_t *ctl_record_num(double v);
double ctl_record_get_num(const json_t *v);

#endif
