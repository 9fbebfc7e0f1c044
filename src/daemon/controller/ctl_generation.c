/* ctl_generation.c — which lease generation an agent gets next (issue 43;
 * docs/controller.md, "Lease generations"). Pure: part of the decision
 * (ctl_decide.c calls it for every agent each period); what changes is
 * stored in the period's one transaction (ctl_persist.c) before a push
 * carries it, and a push whose transaction failed carries each agent's last
 * stored generation, never an unstored one.
 *
 * The agent fences (src/runtime/lease.c): a lower generation than its
 * generation_max is stale (409), a higher one takes the lease, and none may
 * be more than 2^20 above generation_max (400). The controller's rule, per
 * agent (what one agent answers never changes what is sent to another):
 *   - an agent whose generation_max is above ours (a restart, another
 *     writer) is continued one above it;
 *   - a 409 to our last push moves us one above the larger of its
 *     generation_max and ours;
 *   - a 400 about the generation (ours too far ahead: the agent's state was
 *     reset) is an alarm; we continue one above its generation_max when
 *     that is below ours;
 *   - a generation above PFI_CAPS_GENERATION_MAX (2^53: an agent raised
 *     before the bound existed) is never taken: an alarm, ours kept.
 * Every raise needs may_raise: always set for a single controller; with
 * failover (issue 45) only once the store has committed the raise under the
 * leader's guard, so a deposed controller can never outbid a new one.
 * Never below floor (the run's first generation, one above the last run's),
 * but for an agent whose state was reset (the 400): the floor follows ours
 * down (ctl_persist.c). */
#include "caps_request.h"
#include "ctl_state.h"

const char *const ctl_gen_why_name[CTL_GEN_WHY_N] = {"none", "generation_max_above", "stale",
                                                     "out_of_reach", "beyond_bound"};

long long ctl_generation_next(long long floor, long long stored, long long generation_max,
                              int answer, int may_raise, int *why)
{
    long long next = stored < floor ? floor : stored;
    *why = CTL_GEN_WHY_NONE;
    if (answer == CTL_GEN_ANSWER_STALE) {
        next = (generation_max > next ? generation_max : next) + 1;
        *why = CTL_GEN_WHY_STALE;
    } else if (answer == CTL_GEN_ANSWER_OUT_OF_REACH) {
        /* the agent forgot every generation (its state was reset): the
           floor does not hold for it (the period lowers it with ours) */
        *why = CTL_GEN_WHY_OUT_OF_REACH;
        if (generation_max >= 0 && generation_max + 1 < next) next = generation_max + 1;
        return may_raise ? next : stored;
    } else if (generation_max > next) {
        next = generation_max + 1;
        *why = CTL_GEN_WHY_ABOVE;
    }
    if (next < floor) next = floor;
    if (next > PFI_CAPS_GENERATION_MAX) {
        *why = CTL_GEN_WHY_BEYOND;
        return stored;
    }
    if (!may_raise && next != stored) return stored; /* only the store may raise (failover) */
    return next;
}
