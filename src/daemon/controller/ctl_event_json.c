/* ctl_event_json.c — an event as the API shows it (GET /v1/events, the
 * answers of POST /v1/events, /v1/trigger and the webhook, the status page,
 * the report) and the HTTP status of an event's change. Below the HTTP
 * handlers, the OpenADR book and the views, which all show events (issue
 * 43: living in ctl_http.c, it tied them into a circle). */
#include <math.h>
#include <stdlib.h>

#include "ctl.h"

int ctl_event_http_code(pfi_status st, int updated)
{
    switch (st) {
    case PFI_OK: return updated ? 200 : 201;
    case PFI_EINVAL: return 400;
    case PFI_ENOTFOUND: return 404;
    case PFI_ESTATE: return 409;
    case PFI_ERANGE: return 422;
    case PFI_ENOMEM: return 503;
    default: return 500;
    }
}

void ctl_event_who_json(json_t *o, const ctl_event *e)
{
    const char *k[3] = {"created_by", "changed_by", "cancelled_by"};
    const char *v[3] = {e->created_by, e->changed_by, e->cancelled_by};
    for (int i = 0; i < 3; i++)
        json_object_set_new(o, k[i], v[i][0] ? json_string(v[i]) : json_null());
}

json_t *ctl_event_json(const ctl_event *e)
{
    char *t = pfi_grid_event_format(&e->ev);
    json_t *o = t ? json_loads(t, 0, NULL) : NULL;
    free(t);
    if (!o) o = json_pack("{s:s}", "id", e->ev.id); /* never listed without its id */
    json_object_set_new(o, "status", json_string(ctl_event_status_name(e->status)));
    json_object_set_new(o, "source", json_string(e->ev.source));
    json_object_set_new(o, "baseline_w",
                        isfinite(e->baseline_w) ? json_real(e->baseline_w) : json_null());
    json_object_set_new(o, "target_w",
                        isfinite(e->target_w) ? json_real(e->target_w) : json_null());
    json_object_set_new(o, "baseline_source",
                        e->status == CTL_EV_SCHEDULED
                            ? json_null()
                            : json_string(ctl_base_src_name(e->baseline_src)));
    if (e->ended_by[0]) json_object_set_new(o, "ended_by", json_string(e->ended_by));
    ctl_event_who_json(o, e);
    return o;
}
