/* fuzz_lease_file.c — libFuzzer target: pfi-agent's state file
 * (lease_file.h), as found on disk after a crash. Any input either fails
 * with a message or parses to a state that respects the state's bounds; a
 * parsed state formatted back must parse again to the same state. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lease_file.h"

static pfi_lease_state a, b; /* large: not on the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_error err;
    if (pfi_lease_parse((const char *)data, size, "state.json", &a, &err) != PFI_OK) {
        if (!err.msg[0] || a.n || a.active) abort();
        return 0;
    }
    if (a.n > PFI_LEASE_MAX_GPUS || a.generation > a.generation_max) abort();
    for (size_t i = 0; i < a.n; i++)
        if (!a.gpu[i].changed || !(a.gpu[i].baseline_w > 0) || !isfinite(a.gpu[i].cap_w) ||
            !a.gpu[i].uuid[0])
            abort();
    char *s = pfi_lease_format(&a);
    if (!s) abort();
    if (pfi_lease_parse(s, strlen(s), "again.json", &b, &err) != PFI_OK) abort();
    free(s);
    if (b.n != a.n || b.active != a.active || b.generation_max != a.generation_max) abort();
    if (a.active && (b.generation != a.generation || b.expires_at != a.expires_at ||
                     strcmp(a.controller, b.controller)))
        abort();
    for (size_t i = 0; i < a.n; i++)
        if (strcmp(a.gpu[i].uuid, b.gpu[i].uuid) || a.gpu[i].baseline_w != b.gpu[i].baseline_w ||
            a.gpu[i].cap_w != b.gpu[i].cap_w)
            abort();
    return 0;
}
