/* prom.h — Prometheus text exposition (as dcgm-exporter serves it).
 *
 * Accepts per-sample timestamps (`metric{labels} value 1767225600000`) and
 * concatenated untimestamped scrapes, each preceded by a comment line
 * `# pfi-scrape-time <unix_ms>` (what `pfi record` writes). Only the DCGM
 * metrics of metrics.h are passed on, read under their DCGM names
 * (dcgm-exporter) or pfi-agent's pfi_gpu_* names (converted to the DCGM
 * unit); other metrics, labels, HELP/TYPE lines and comments are skipped.
 * One input is read under one naming, the first metric's: an agent run with
 * --export-dcgm serves the same readings under both, which must not count
 * twice. The labels used: `UUID` or `uuid`, `gpu`, `Hostname` or `hostname`.
 * NaN, infinities and DCGM blank sentinels are missing values (skipped).
 * A malformed line is an error naming file and line, except a truncated
 * final line (no newline at the end of the input), which is skipped with a
 * warning: an interrupted copy is usable up to its last whole line. */
#ifndef PFI_PROM_H
#define PFI_PROM_H

#include <stdint.h>

#include "pfi/api.h"
#include "pfi/metrics.h"
#include "pfi/reader.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_str {
    const char *p;
    size_t n;
} pfi_str;

/* One telemetry sample as every telemetry reader delivers it. */
typedef struct pfi_sample {
    pfi_metric metric;
    pfi_str uuid, gpu, host; /* n == 0 when absent */
    int64_t t_ms;
    double value;
    uint64_t line; /* source line, for messages */
    int pfi_named; /* 1: read under pfi-agent's pfi_gpu_* name (value in the DCGM unit) */
} pfi_sample;

typedef pfi_status (*pfi_sample_fn)(void *ud, const pfi_sample *s, pfi_error *err);

typedef struct pfi_prom_stats {
    uint64_t lines, samples, skipped_unknown, skipped_missing;
} pfi_prom_stats;

PFI_API pfi_status pfi_prom_read(pfi_reader *r, pfi_sample_fn fn, void *ud, pfi_prom_stats *stats,
                                 pfi_log *log, pfi_error *err);

/* Parse one sample line (no newline). Returns 1 for a sample of a known
 * metric (s filled, t_ms = INT64_MIN when the line has no timestamp), 0 for a
 * line to skip (unknown metric, comment, blank), -1 on a syntax error (what
 * is set). */
PFI_API int pfi_prom_parse_line(const char *line, size_t n, pfi_sample *s, const char **what);

/* v as a label value to write between double quotes, in buf (n bytes):
 * backslash, double quote and newline escaped (\\ \" \n) as the text
 * format requires; other control characters and bytes that are not UTF-8
 * become '?'; cut at a whole character to fit. NULL is "". Returns buf.
 * Every label value the daemons write goes through it (prom_label.c). */
PFI_API const char *pfi_prom_label(char *buf, size_t n, const char *v);

/* Exposition text (n bytes) with every sample's value spelled as the
 * format allows: printf's nan, -nan, inf and -inf (any case) become NaN,
 * +Inf and -Inf; everything else is copied unchanged. A new malloc'd,
 * NUL-terminated text (*out_n its length), NULL when out of memory (or
 * text is NULL: a render that ran out of memory passes straight on). What
 * both daemons pass their /metrics through (issue 41: a job's 1e308
 * throughput printed "-nan", and promtool refused the whole scrape). */
PFI_API char *pfi_prom_valid_values(const char *text, size_t n, size_t *out_n);

#ifdef __cplusplus
}
#endif
#endif
