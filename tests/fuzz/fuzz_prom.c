/* fuzz_prom.c — libFuzzer target: Prometheus text exposition into bins and
 * the job series, as ingest uses it. */
#include <stdint.h>
#include <stdio.h>

#include "pfi/prom.h"
#include "pfi/protocol.h"

static pfi_status sink(void *ud, const pfi_sample *s, pfi_error *err)
{
    pfi_bins *b = ud;
    char key[64];
    int n = snprintf(key, sizeof key, "%.*s:%.*s", (int)(s->host.n > 20 ? 20 : s->host.n),
                     s->host.p ? s->host.p : "", (int)(s->gpu.n > 20 ? 20 : s->gpu.n),
                     s->gpu.p ? s->gpu.p : "");
    int g = pfi_bins_gpu(b, key, (size_t)n);
    if (g < 0) return PFI_ENOMEM;
    return pfi_bins_add(b, g, s->metric, s->t_ms, s->value, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_protocol_opts o;
    pfi_protocol_opts_default(&o);
    o.max_bins = 100000;
    o.max_gpus = 64;
    pfi_bins *b = pfi_bins_new(&o);
    pfi_reader r;
    pfi_reader_init_mem(&r, data, size, "fuzz.prom", 4096);
    pfi_error err;
    if (pfi_prom_read(&r, sink, b, NULL, NULL, &err) == PFI_OK) {
        pfi_series s;
        if (pfi_bins_series(b, &s, &err) == PFI_OK) pfi_series_dispose(&s);
    }
    pfi_reader_close(&r);
    pfi_bins_free(b);
    return 0;
}
