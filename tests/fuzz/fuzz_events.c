/* fuzz_events.c — libFuzzer target: grid events (canonical JSON, and OpenADR
 * 3.0.1 / 3.1 EVENTs and notifications through openadr.h, every step). Any
 * input fails with a message (and, for OpenADR, a reason) or parses; whatever
 * either parser accepts is within the bounds (grid_event.h, written out
 * here again rather than calling pfi_grid_event_check: issue 14 item 9
 * found an infinite duration and an 8.9e12 kW target; issue 29 set the
 * bounds to years 0001..9999 and 0 kW and more), and
 * formats back to JSON that parses to the same event. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grid_event.h"
#include "openadr.h"

static void within_bounds(const pfi_grid_event *ev)
{
    size_t n = strlen(ev->id);
    if (n == 0 || n > PFI_EVENT_ID_MAX) abort();
    if (ev->has_priority && (ev->priority < 0 || ev->priority > 1000000000)) abort();
    /* issue 29: years 0001..9999 (a day either side for offsets), any
       duration ending by 9999-12-31T23:59:59Z (no 7-day bound), 0 kW allowed */
    if (!isfinite(ev->start) || ev->start < -62135596800.0 - 86400 ||
        ev->start > 253402300799.0 + 86400)
        abort();
    int bounded = !ev->open_ended || ev->duration_s != 0;
    if (bounded && !(ev->duration_s >= 1 && ev->start + ev->duration_s <= 253402300799.0)) abort();
    if (ev->kind == PFI_EV_TARGET_KW &&
        !(isfinite(ev->target_kw) && ev->target_kw >= 0 && ev->target_kw < 1e6))
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
        ev->open_ended != ev2.open_ended || ev->has_priority != ev2.has_priority ||
        (ev->has_priority && ev->priority != ev2.priority) ||
        fabs(ev->duration_s - ev2.duration_s) > 1e-6 * fmax(1, ev->duration_s))
        abort();
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_grid_event ev;
    pfi_error err;
    if (pfi_grid_event_parse((const char *)data, size, &ev, &err) == PFI_OK) {
        within_bounds(&ev);
        round_trip(&ev);
    } else if (!err.msg[0] || strchr(err.msg, '\n')) {
        abort();
    }
    static pfi_oadr_event oev;
    static const char *const res[] = {"site-7"};
    for (int v = 0; v < 2; v++) {
        pfi_oadr_opts o = {.version = v ? PFI_OADR_V3_0_1 : PFI_OADR_V3_1,
                           .now = 1.7e9,
                           .non_gpu_offset_kw = 10,
                           .ven_name = "ven-a",
                           .resources = res,
                           .nresources = 1};
        if (pfi_oadr_parse((const char *)data, size, &o, &oev, &err) == PFI_OK) {
            if (oev.reason != PFI_OADR_OK || oev.nsteps > PFI_OADR_MAX_STEPS) abort();
            if (oev.op == PFI_OADR_OP_UPSERT && oev.nsteps == 0) abort();
            for (size_t k = 0; k < oev.nsteps; k++) {
                within_bounds(&oev.step[k]);
                round_trip(&oev.step[k]);
            }
        } else if (!err.msg[0] || strchr(err.msg, '\n') || oev.reason == PFI_OADR_OK ||
                   oev.reason >= PFI_OADR_NREASONS) {
            abort();
        }
    }
    return 0;
}
