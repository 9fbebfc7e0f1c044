/* ingest.h — raw telemetry and step logs -> sweep table, following the
 * paper's protocol (protocol.h). Input: run directories (run.json + files),
 * a tree of them, or a tar stream of them read sequentially.
 *
 * Tar streams: a run is the directory holding a run.json; members of that
 * directory that come after its run.json are parsed as they stream by, and
 * members that come before it are buffered in memory until it arrives (so
 * memory is bounded by one run; writers such as `pfi synth` put run.json
 * first and nothing is buffered). A member outside the current run's
 * directory ends that run. Buffered files whose run.json never comes are
 * reported and ignored. */
#ifndef PFI_INGEST_H
#define PFI_INGEST_H

#include "pfi/api.h"
#include "pfi/reader.h"
#include "pfi/run.h"
#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_ingest_opts {
    pfi_protocol_opts proto;
    int tz_offset_min;            /* nvidia-smi timestamps: minutes east of UTC */
    size_t max_query_range_bytes; /* 0 = default */
    size_t max_line;              /* 0 = PFI_READER_DEFAULT_MAX */
    size_t max_buffered_bytes;    /* tar members held before their run.json: 1 GiB */
} pfi_ingest_opts;

PFI_API void pfi_ingest_opts_default(pfi_ingest_opts *o);

typedef struct pfi_ingest pfi_ingest;

PFI_API pfi_ingest *pfi_ingest_new(const pfi_ingest_opts *o, pfi_log *log);
PFI_API void pfi_ingest_free(pfi_ingest *ing);
PFI_API pfi_status pfi_ingest_dir(pfi_ingest *ing, const char *dir, pfi_error *err);
/* every directory below root that holds a run.json, in sorted order */
PFI_API pfi_status pfi_ingest_root(pfi_ingest *ing, const char *root, pfi_error *err);
PFI_API pfi_status pfi_ingest_tar(pfi_ingest *ing, pfi_reader *r, pfi_error *err);

PFI_API size_t pfi_ingest_nruns(const pfi_ingest *ing);
PFI_API const pfi_run_summary *pfi_ingest_run(const pfi_ingest *ing, size_t i);
/* The sweep table of all runs ingested (docs/formats.md, "ingest output"). */
PFI_API pfi_status pfi_ingest_table(const pfi_ingest *ing, pfi_table **out, pfi_error *err);
#ifdef __cplusplus
}
#endif
#endif
