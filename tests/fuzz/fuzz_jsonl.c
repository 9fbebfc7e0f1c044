/* fuzz_jsonl.c — libFuzzer target: step logs (JSON lines) and run.json
 * manifests. */
#include <stdint.h>

#include "pfi/manifest.h"
#include "pfi/steplog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_reader r;
    pfi_reader_init_mem(&r, data, size, "fuzz.jsonl", 4096);
    pfi_steplog s;
    pfi_error err;
    if (pfi_steplog_read(&r, &s, NULL, &err) == PFI_OK) pfi_steplog_dispose(&s);
    pfi_reader_close(&r);
    pfi_manifest m;
    if (pfi_manifest_parse((const char *)data, size, "run.json", &m, NULL, &err) == PFI_OK)
        pfi_manifest_dispose(&m);
    return 0;
}
