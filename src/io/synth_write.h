/* synth_write.h — writing the reconstruction's runs as run directories
 * (the ingest issue's contract) or as a tar stream of them, with
 * dcgm-exporter's text format and label set. run.json comes first in each
 * run's tar members, so `pfi ingest -` buffers nothing. */
#ifndef PFI_SYNTH_WRITE_H
#define PFI_SYNTH_WRITE_H

#include <stdio.h>

#include "synth.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Relative directory of a run: <gpu_model>/<group>/<cap>W */
void pfi_synth_run_dir(const pfi_recon_group *g, int run, char *buf, size_t n);

/* Write one run under outdir (files written atomically), or as tar members
 * to tar (when non-NULL). *bytes gets the telemetry + step-log bytes. */
pfi_status pfi_synth_write_run(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                               const char *outdir, FILE *tar, size_t *bytes, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
