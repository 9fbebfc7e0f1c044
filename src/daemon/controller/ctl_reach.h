/* ctl_reach.h — which controller reaches more agents (issue 45: "a lost
 * rack switch"; docs/controller.md, "Failover on etcd"). A leader cut off
 * from its agents but not from etcd keeps its lease, and without this the
 * agents' leases would lapse under it. Each controller publishes what it
 * reaches as PREFIX/reach/NAME = "REACHED TOTAL" under its lease (gone with
 * it):
 *   - the leader: the agents that answered its last period, written when
 *     that changes;
 *   - a follower: while the leader's entry says it reaches fewer than all,
 *     it probes every agent's open GET /healthz at once (curl multi, at most
 *     CTL_REACH_PARALLEL connections, each within agent_timeout_s, all
 *     within one period) and writes what answered, each turn (so each write
 *     is new: its mod_revision moves); a follower polls no agent otherwise.
 * Each turn the leader reads the entries; when a follower's entry, written
 * since the leader's previous read, reaches more agents than the leader
 * did (the same total; more by one in a thousand, at least one) for
 * CTL_REACH_TURNS turns with such an entry, none between them saying
 * otherwise (a turn without a new entry counts neither way), the leader
 * resigns (its lease revoked; it stays out of the election for 3 TTLs) and
 * a standby takes over at its next try. Not in the leader's first two
 * periods after taking over (its agents' state is still the pull's). Two
 * controllers that each reach half never hand over to each other: only
 * strictly more counts. With three or more controllers the first standby
 * to try wins, not necessarily the one that reaches most.
 *
 * The time from the switch's loss to the standby's first push, with the
 * period P, the TTL and agent_timeout_s A: the leader's collect fails (up
 * to P + A), the follower probes at its next turn (P + max(A, P)), the
 * leader resigns after CTL_REACH_TURNS more turns (2 P), the standby's
 * election (TTL/3) and first period: about 5 P + A + TTL/3. The agents
 * hold caps for lease_s/2 to lease_s after the last push, so a site that
 * wants its caps kept through a lost switch sets lease_s >= 2 x that (a
 * P of 1 s, TTL 2 s: measured 5.1 s, lease_s 15; the default P of 5 s
 * needs lease_s of about 55 s). */
#ifndef PFI_CTL_REACH_H
#define PFI_CTL_REACH_H

#include "ctl.h"

#define CTL_REACH_TURNS 2
#define CTL_REACH_PARALLEL 256

/* the loop's turn (failover on; lock not held): leading is what
   ctl_failover_turn said */
void ctl_reach_turn(ctl *c, int leading);

#endif
