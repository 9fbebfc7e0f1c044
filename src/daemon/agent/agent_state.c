/* agent_state.c — the agent's state file (--state-file): the lease, its
 * caps and the GPUs' baselines, saved whenever they change (agent.h:
 * agent_save_state). Below the caps, the baselines and the jobs, which all
 * save it (issue 43: in agent_caps.c it tied them into a circle). */
#include <stdio.h>

#include "agent.h"
#include "clock.h"

int agent_save_state(agent *a)
{
    pfi_error e;
    pfi_lease_wall_from_mono(&a->lease, pfi_clock_now(),
                             pfi_clock_mono()); /* the file keeps wall time */
    snprintf(a->lease.boot_id, sizeof a->lease.boot_id, "%s", a->boot_id);
    if (pfi_lease_save(&a->lease, a->cfg.state_file, &e)) {
        /* the file may now say more than the devices do (e.g. a write-ahead
           of caps that were then undone): keep trying (agent_check_lease),
           so a restart cannot apply what was reported as not done */
        if (!a->save_pending)
            agent_log(a, "error: cannot save the state file (retrying): %s", e.msg);
        a->save_pending = 1;
        return -1;
    }
    if (a->save_pending) agent_log(a, "state file saved again");
    a->save_pending = 0;
    return 0;
}
