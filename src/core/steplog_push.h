/* steplog_push.h — appending one step to a step log (pfi_steplog, a core
 * data type: run_input.h), for the step-log reader (io) and the synthetic
 * runs (core) alike. Internal. */
#ifndef PFI_STEPLOG_PUSH_H
#define PFI_STEPLOG_PUSH_H

#include "pfi/run_input.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Append (t_s, tokens_per_s, mfu, tflops, tokens, step; NaN: absent);
 * PFI_ENOMEM ("out of memory") leaves s as it was. */
pfi_status pfi_steplog_push(pfi_steplog *s, double t_s, double tokens_per_s, double mfu,
                            double tflops, double tokens, double step, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
