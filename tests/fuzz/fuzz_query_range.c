/* fuzz_query_range.c — libFuzzer target: Prometheus query_range JSON. */
#include <stdint.h>

#include "telemetry.h"

static pfi_status sink(void *ud, const pfi_sample *s, pfi_error *err)
{
    (void)err;
    *(double *)ud += s->value;
    return PFI_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_reader r;
    pfi_reader_init_mem(&r, data, size, "fuzz.json", 0);
    pfi_error err;
    double acc = 0;
    pfi_query_range_read(&r, 1u << 20, sink, &acc, NULL, &err);
    pfi_reader_close(&r);
    return 0;
}
