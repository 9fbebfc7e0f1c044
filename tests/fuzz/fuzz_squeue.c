/* fuzz_squeue.c — libFuzzer target: squeue's output as the controller reads
 * it for the forecast (squeue.h). Parsed or refused, never a crash; a job
 * read has a digits-only id, a non-negative GPU count, an end that is NaN
 * or finite, a limit that is NaN, infinite or non-negative. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "squeue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_squeue_job *j = NULL;
    size_t n = 0;
    pfi_error err;
    if (pfi_squeue_parse((const char *)data, size, "fuzz", &j, &n, &err) == PFI_OK) {
        for (size_t k = 0; k < n; k++) {
            if (!j[k].id[0] || strspn(j[k].id, "0123456789") != strlen(j[k].id)) abort();
            if (j[k].gpus < 0 || isinf(j[k].end_t) || j[k].limit_s < 0) abort();
        }
    } else if (j || n) abort();
    free(j);
    return 0;
}
