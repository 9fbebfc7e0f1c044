/* telemetry.h — the other two telemetry readers, delivering pfi_sample like
 * the Prometheus text reader (prom.h):
 *
 *   pfi_query_range_read  a Prometheus /api/v1/query_range JSON response
 *                         (resultType "matrix"); the whole response is held
 *                         in memory, so its size is capped (max_bytes,
 *                         default 256 MiB: about 5 million samples).
 *   pfi_nvsmi_read        `nvidia-smi --query-gpu=timestamp,index,uuid,
 *                         power.draw,enforced.power.limit,clocks.sm,clocks.mem,
 *                         utilization.gpu,utilization.memory,memory.used
 *                         --format=csv,nounits -l 5` output; header names are
 *                         nvidia-smi's canonical ones (clocks.current.sm) or
 *                         their documented aliases (clocks.sm). Timestamps
 *                         (YYYY/MM/DD HH:MM:SS.mmm) are read as UTC plus a
 *                         fixed offset (tz_offset_min); the host comes from
 *                         the caller (the run manifest). Columns are matched
 *                         by name, with or without a " [unit]" suffix; any
 *                         subset and order works. "[N/A]" and "[Not
 *                         Supported]" are missing values. */
#ifndef PFI_TELEMETRY_H
#define PFI_TELEMETRY_H

#include "pfi/prom.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_QUERY_RANGE_DEFAULT_MAX (256u << 20)

pfi_status pfi_query_range_read(pfi_reader *r, size_t max_bytes, pfi_sample_fn fn, void *ud,
                                pfi_log *log, pfi_error *err);

pfi_status pfi_nvsmi_read(pfi_reader *r, const char *host, int tz_offset_min, pfi_sample_fn fn,
                          void *ud, pfi_log *log, pfi_error *err);

/* "+02:00", "-0530", "UTC", "Z" -> minutes east of UTC. 0 ok, -1 bad. */
int pfi_parse_tz_offset(const char *s, int *minutes);

/* Read a whole input into memory (at most max bytes; more is an error). */
pfi_status pfi_reader_slurp(pfi_reader *r, size_t max, char **data, size_t *len, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
