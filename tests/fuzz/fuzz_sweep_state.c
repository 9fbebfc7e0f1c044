/* fuzz_sweep_state.c — libFuzzer target: pfi sweep's state file
 * (sweep_state.h), as found on disk after a crash. Any input either fails
 * with a message or parses; a parsed state formatted back must parse again
 * to the same state. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_state.h"

static pfi_sweep_state a, b;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_error err;
    if (pfi_sweep_state_parse((const char *)data, size, "sweep-state", &a, &err) != PFI_OK) {
        if (!err.msg[0] || a.n) abort();
        return 0;
    }
    if (a.n > PFI_SWEEP_STATE_MAX_GPUS) abort();
    char *s = pfi_sweep_state_format(&a);
    if (!s) abort();
    if (pfi_sweep_state_parse(s, strlen(s), "again", &b, &err) != PFI_OK) abort();
    free(s);
    if (b.n != a.n || b.pid != a.pid) abort();
    for (size_t i = 0; i < a.n; i++)
        if (strcmp(a.gpu[i].uuid, b.gpu[i].uuid) || a.gpu[i].index != b.gpu[i].index ||
            a.gpu[i].cap_w != b.gpu[i].cap_w || !(a.gpu[i].cap_w > 0) || !isfinite(a.gpu[i].cap_w))
            abort();
    return 0;
}
