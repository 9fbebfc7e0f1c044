/* fuzz_events.c — libFuzzer target: grid events (canonical JSON and OpenADR
 * 3 notifications). Any input fails with a message or parses; whatever
 * either parser accepts is within the bounds (grid_event.h, written out
 * here again rather than calling pfi_grid_event_check: issue 14 item 9
 * found an infinite duration, a 32-day event and an 8.9e12 kW target), and
 * formats back to JSON that parses to the same event. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grid_event.h"

static void within_bounds(const pfi_grid_event *ev)
{
    size_t n = strlen(ev->id);
    if (n == 0 || n > 63) abort();
    if (!isfinite(ev->start) || ev->start < -86400 || ev->start > 253402387200.0) abort();
    if (ev->open_ended) {
        if (!(ev->duration_s == 0 || (ev->duration_s >= 1 && ev->duration_s <= 3650 * 86400.0)))
            abort();
    } else if (!(ev->duration_s >= 1 && ev->duration_s <= 7 * 86400.0)) {
        abort();
    }
    if (ev->kind == PFI_EV_TARGET_KW &&
        !(isfinite(ev->target_kw) && ev->target_kw > 0 && ev->target_kw < 1e6))
        abort();
    if (ev->kind == PFI_EV_REDUCTION &&
        !(isfinite(ev->reduction_pct) && ev->reduction_pct > 0 && ev->reduction_pct <= 90))
        abort();
    if (ev->kind == PFI_EV_LEVEL && (ev->level < 0 || ev->level > 3)) abort();
    if (!isnan(ev->ramp_s) && !(ev->ramp_s >= 0 && ev->ramp_s <= 86400)) abort();
    if (!isnan(ev->ramp_down_s) && !(ev->ramp_down_s >= 0 && ev->ramp_down_s <= 86400)) abort();
    double end = pfi_grid_event_end(ev);
    if (ev->open_ended && ev->duration_s == 0 ? !isinf(end) : !isfinite(end)) abort();
}

static void round_trip(const pfi_grid_event *ev)
{
    pfi_grid_event ev2;
    pfi_error err;
    char *s = pfi_grid_event_format(ev);
    if (!s || pfi_grid_event_parse(s, strlen(s), &ev2, &err) != PFI_OK) abort();
    if (strcmp(ev->id, ev2.id) || ev->kind != ev2.kind || fabs(ev->start - ev2.start) > 1e-3 ||
        ev->open_ended != ev2.open_ended ||
        fabs(ev->duration_s - ev2.duration_s) > 1e-6 * fmax(1, ev->duration_s))
        abort();
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_grid_event ev;
    pfi_error err;
    int del;
    if (pfi_grid_event_parse((const char *)data, size, &ev, &err) == PFI_OK) {
        within_bounds(&ev);
        round_trip(&ev);
    } else if (!err.msg[0] || strchr(err.msg, '\n')) {
        abort();
    }
    if (pfi_openadr_event_parse((const char *)data, size, 10, &ev, &del, &err) == PFI_OK) {
        if (!del) {
            within_bounds(&ev);
            round_trip(&ev);
        }
    } else if (!err.msg[0] || strchr(err.msg, '\n')) {
        abort();
    }
    return 0;
}
