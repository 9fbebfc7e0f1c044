/* fuzz_tar.c — libFuzzer target: tar streams of run directories through the
 * whole ingest path (headers, pax/GNU names, buffering, run assembly). */
#include <stdint.h>

#include "pfi/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_ingest_opts o;
    pfi_ingest_opts_default(&o);
    o.max_buffered_bytes = 1u << 20;
    o.proto.max_bins = 100000;
    o.proto.max_gpus = 64;
    pfi_ingest *ing = pfi_ingest_new(&o, NULL);
    pfi_reader r;
    pfi_reader_init_mem(&r, data, size, "fuzz.tar", 4096);
    pfi_error err;
    pfi_ingest_tar(ing, &r, &err);
    pfi_reader_close(&r);
    pfi_ingest_free(ing);
    return 0;
}
