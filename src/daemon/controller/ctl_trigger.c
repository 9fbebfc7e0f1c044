/* ctl_trigger.c — a grid trigger (docs/controller.md, "Triggers"):
 * POST /v1/trigger, or an API or OpenADR event that starts now without a
 * ramp. Its caps come from the response plan (ctl_plan.c); the control
 * loop's thread pushes them to every agent at once (ctl_agents.c), in the
 * middle of a period if need be; the event it belongs to then starts at
 * the next period (run at once) and the normal allocation with feedback
 * refines them. */
#include <math.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"

int ctl_trigger(ctl *c, const char *id, double cut_pct, pfi_error *err)
{
    if (!(cut_pct > 0 && cut_pct <= 90))
        return pfi_errorf(err, PFI_EINVAL, "a trigger's cut must be in (0, 90] %%"), -1;
    const char *how;
    size_t capped = ctl_plan_trigger(&c->cfg, &c->st, cut_pct, &how);
    if (!capped)
        return pfi_errorf(err, PFI_ESTATE, "no job to cap yet (no agent has answered)"), -1;
    snprintf(c->trigger_id, sizeof c->trigger_id, "%s", id);
    c->trigger_t0 = pfi_wall_monotonic();
    c->triggers++;
    ctl_log(c, "trigger %s: %.1f%% cut, caps for %zu jobs from the %s (plan of %.0f s ago)", id,
            cut_pct, capped, how, isfinite(c->st.plan_t) ? pfi_clock_now() - c->st.plan_t : NAN);
    atomic_store(&c->trigger_req, 1);
    ctl_agents_wake(c);
    return 0;
}
