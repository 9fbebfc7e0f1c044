/* fuzz_events.c — libFuzzer target: grid events (canonical JSON and OpenADR
 * 3 notifications). Any input fails with a message or parses; a parsed
 * canonical event formatted back must parse to the same event. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/grid_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_grid_event ev, ev2;
    pfi_error err;
    int del;
    if (pfi_grid_event_parse((const char *)data, size, &ev, &err) == PFI_OK) {
        char *s = pfi_grid_event_format(&ev);
        if (!s || pfi_grid_event_parse(s, strlen(s), &ev2, &err) != PFI_OK) abort();
        if (strcmp(ev.id, ev2.id) || ev.kind != ev2.kind || fabs(ev.start - ev2.start) > 1e-3) abort();
        free(s);
    } else if (!err.msg[0]) {
        abort();
    }
    if (pfi_openadr_event_parse((const char *)data, size, 10, &ev, &del, &err) != PFI_OK && !err.msg[0]) abort();
    return 0;
}
