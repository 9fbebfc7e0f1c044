/* demo.h — `pfi demo` as a call: the runtime end to end on loopback. A
 * controller and 4 agents (8 simulated GPUs each, one job of the
 * reconstruction per node, with a predictor model the caller fits), all on
 * one sped-up clock; a grid event; a timeline of cluster power vs target
 * and per-job throughput; the event report (JSON + PNG) in the current
 * directory; every daemon stopped and every cap checked restored. */
#ifndef PFI_DEMO_H
#define PFI_DEMO_H

#include <stdio.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_demo_opts {
    double time_scale; /* clock speed-up */
    double cut_pct;    /* the grid event's reduction */
    const char *dir;   /* working directory (created); NULL: a temporary one, removed unless keep */
    int keep;
    /* post the event as an OpenADR 3.1 EVENT to the controller's webhook
       (POST /openadr3/events: a SIMPLE level the controller's levels_pct
       maps to cut_pct) instead of POST /v1/events */
    int openadr;
    /* two controllers failing over on three etcd members (etcd on PATH);
       the leader SIGKILLed a third into the event: one line with the
       takeover time and the caps that lapsed (docs/controller.md) */
    int failover;
    /* the agents' predictor: written to model_path, fitted on data the
       callback may keep in dir; 0 on success */
    int (*fit_model)(void *ud, const char *dir, const char *model_path);
    FILE *out;                                /* the timeline and the report */
    void (*note)(void *ud, const char *msg);  /* progress, one line */
    void (*error)(void *ud, const char *msg); /* what stops the demo, when it happens */
    void *ud;
} pfi_demo_opts;

/* PFI_OK when the report was written and every cap is back at its
 * baseline; otherwise a failure already reported through error (or, for
 * caps not restored, in out). pfi-agent and pfi-controller are found next
 * to this program, in ../sbin, or on PATH. */
pfi_status pfi_demo_run(const pfi_demo_opts *o);

#ifdef __cplusplus
}
#endif
#endif
