/* fuzz_caps.c — libFuzzer target: pfi-agent's PUT /v1/caps body. Any input
 * either fails with a message or parses; a parsed request formatted back to
 * JSON must parse again to the same request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caps_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_caps_request r, r2;
    pfi_error err;
    if (pfi_caps_request_parse((const char *)data, size, &r, &err) != PFI_OK) {
        if (!err.msg[0]) abort();
        return 0;
    }
    char *s = pfi_caps_request_format(&r);
    if (!s) abort();
    if (pfi_caps_request_parse(s, strlen(s), &r2, &err) != PFI_OK) abort();
    if (r2.ngpus != r.ngpus || r2.njobs != r.njobs || r2.generation != r.generation) abort();
    for (size_t i = 0; i < r.ngpus; i++)
        if (r2.gpus[i].index != r.gpus[i].index || strcmp(r2.gpus[i].uuid, r.gpus[i].uuid)) abort();
    free(s);
    return 0;
}
