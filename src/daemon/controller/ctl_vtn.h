/* ctl_vtn.h — the parts of pfi-controller's VTN thread (ctl_vtn.c: the
 * conversation; ctl_vtn_report.c: the REPORTs), which share the client
 * (vtn_client.h) the thread owns. */
#ifndef PFI_CTL_VTN_H
#define PFI_CTL_VTN_H

#include "ctl.h"
#include "vtn_client.h"

/* the reports due, kept and sent (one per call); the next try after a
 * failure backs off from 1 s doubling to 5 min (*next_report, *backoff:
 * wall seconds, monotonic) */
void ctl_vtn_report_due(ctl *c, pfi_vtn *v, int v301, double *next_report, double *backoff);

#endif
