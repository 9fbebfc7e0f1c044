/* steplog.h — the training loop's per-step log: JSON lines from rank 0,
 * written to the path in $PFI_STEPLOG when it is set. Each line an object:
 *   t_s            Unix seconds (required)
 *   tokens_per_s   whole-job throughput, or
 *   tokens + step_time_s   (tokens_per_s = tokens / step_time_s)
 *   optional: mfu (0..1), tflops, loss, lr, step
 * Blank lines are skipped; unknown keys are ignored. Errors name file, line
 * and key: invalid JSON, a missing t_s or throughput, negative or
 * non-finite numbers, mfu outside 0..1, t_s going backwards. A truncated
 * final line (no newline) is skipped with a warning. */
#ifndef PFI_STEPLOG_H
#define PFI_STEPLOG_H

#include "pfi/api.h"
#include "pfi/reader.h"
#include "pfi/run_input.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

PFI_API pfi_status pfi_steplog_read(pfi_reader *r, pfi_steplog *out, pfi_log *log, pfi_error *err);

/* The most throughput a step log may claim, tokens/s: about 100 times the
 * largest training runs' (16,000 GPUs at ~4,000 tokens/s each); a value
 * above it is a lie or a unit bug, refused as a bad key (issue 41: a step
 * log's 1e308 made the controller's baseline infinite). The controller
 * refuses the same from an agent (ctl_inputs.c). */
#define PFI_STEPLOG_MAX_TOKENS_PER_S 1e10
/* the most TFLOP/s a step log may claim (10 EFLOP/s) */
#define PFI_STEPLOG_MAX_TFLOPS 1e7

/* Parse one line: 1 a record, 0 blank, -1 a record with a bad key, -2 not
 * a JSON object (a caller may skip a truncated last line); *bad says what
 * is wrong. t_s ordering is the caller's. */
PFI_API int pfi_steplog_parse_line(const char *line, size_t n, double *t_s, double *tokens_per_s,
                                   double *mfu, double *tflops, const char **bad);

/* Format one step record as a JSON line (what a training loop writes). */
PFI_API int pfi_steplog_format(char *buf, size_t n, double t_s, double tokens_per_s, double mfu,
                               double tflops, long step);

#ifdef __cplusplus
}
#endif
#endif
