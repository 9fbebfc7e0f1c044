/* ctl_failover.h — controllers that fail over on etcd (issue 45;
 * docs/controller.md, "Failover on etcd"). With "failover" configured,
 * every controller holds an etcd lease (TTL ttl_s, kept alive every TTL/3
 * by its failover thread) and tries to create PREFIX/leader under it; the
 * one that does raises PREFIX/term by one in the same transaction and
 * leads. The leader:
 *   - fences itself: its deadline is the send time of its last successful
 *     keepalive + the granted TTL − a margin (monotonic clock); it starts
 *     no push within agent_timeout_s of the deadline, and past it gives up
 *     the lease (revoked: the leader key goes with it) and follows;
 *   - commits each period's authoritative rows guarded by
 *     create_revision(PREFIX/leader) (ctl_store_etcd.c): a deposed
 *     leader's commit is refused and its push not sent.
 * A follower runs no period (no collection, no push) and commits the
 * writes made to it to the store's inbox for the leader (ctl_inbox.h). On winning, the loop pulls
 * the store's state (ctl_store_etcd.c) and runs a period at once. */
#ifndef PFI_CTL_FAILOVER_H
#define PFI_CTL_FAILOVER_H

#include <pthread.h>
#include <stdatomic.h>

#include "ctl.h"
#include "etcd.h"

typedef struct ctl_failover {
    pfi_etcd *kv; /* the loop's store calls (commit, pull) and the API's event_put */
    pfi_etcd *ka; /* the failover thread's: lease, keepalive, election */
    pthread_t th;
    int running;
    atomic_int stop;
    pthread_mutex_t mu; /* the fields below */
    long long lease, granted_s;
    double ka_sent;       /* monotonic send time of the last keepalive that renewed the lease */
    int won;              /* this controller created the leader key, and has not let it go */
    int taken;            /* the loop pulled the store's state since it won */
    long long term;       /* the term it won */
    long long leader_rev; /* the revision that created its leader key (the guard) */
    char leader[64];      /* the leader's name as last read ("": none known) */
    unsigned long long elections_won, fences;
    atomic_ullong nospace; /* commits refused by etcd's space quota (NOSPACE) */
    int ka_failing;        /* the last lease call failed (logged once) */
    int drop;              /* fenced: the thread revokes the lease before anything else */
    int config_differs;    /* the leader's configuration hash is not ours (an alarm) */
    double refreshed;      /* a follower: when its views last read the store (monotonic; 0 never) */
    int schema_newer;      /* the store's schema is newer than ours: we do not lead (an alarm) */
    double no_campaign_until; /* after a handover: the standby's turn (monotonic) */
    long long member_lease;   /* the lease PREFIX/members/NAME was put under */
    /* the endpoint each client last used: ka's (the failover thread's) and
       kv's (the loop's), each read and written by its own thread only */
    char ep_ka[256], ep_kv[256];
    char last_baselines_event[PFI_EVENT_ID_MAX + 1]; /* what was last committed of baselines */
    char *last_baselines;
    /* the caps: what this leader last committed (the loop's thread), and
       what a new leader pulled, pushed before its first period */
    char *last_caps;
    json_t *takeover_caps;
    int points_put;       /* points/ keys committed in the running event (the loop's thread) */
    long long events_rev; /* a follower: the revision its watch of events/ reached (the loop's) */
    /* ctl_store_agg.c's (mu): each OpenADR event's report intervals, the
       sum and count of the measured power the leader sampled in them */
    struct ctl_agg {
        char event[PFI_EVENT_ID_MAX + 1];
        size_t k;
        double sum_w, count;
    } * agg;
    size_t nagg, agg_cap;
    /* ctl_reach.c's (the loop's thread only): what this controller last
       published (SIZE_MAX: nothing), the revision of the leader's previous
       read, the turns in a row a follower out-reached the leader, the turns
       led since taking over */
    /* ctl_store_oadr.c's (mu): the report keys pulled as intents the
       dead leader may have sent, asked of the VTN before they are sent */
    char **unresolved;
    size_t nunresolved;
    size_t reach_published;
    long long reach_rev;
    int reach_outreached, reach_turns_led;
} ctl_failover;

/* start the failover thread (cfg.fo.netcd > 0): 0, or -1 (logged) */
int ctl_failover_start(ctl *c);
void ctl_failover_stop(ctl *c);
/* the loop's turn: 1 lead (a new leader pulled the store first), 0 follow
   (no period); 1 always without failover */
int ctl_failover_turn(ctl *c);
/* this controller leads (won and took over; 1 without failover): the VTN
   and the poller talk to the grid only then */
int ctl_failover_leads(ctl *c);
/* a push may start now: a leader before its cutoff (1 without failover) */
int ctl_failover_may_push(ctl *c);
/* the store refused a leader's guarded commit: it is deposed */
void ctl_failover_deposed(ctl *c, const char *why);
/* the leader gives up its lease and stays out of the election for 3 TTLs,
   so a standby takes over (a handover; a standby that reaches more agents:
   ctl_reach.c) */
void ctl_failover_resign(ctl *c, const char *why);
/* a write (POST, DELETE) other than the inbox's may be taken here: 1; 0 a
   follower, rs set to 503 naming the leader (the client tries the next
   controller) */
struct pfi_http_resp;
int ctl_failover_may_write(ctl *c, struct pfi_http_resp *rs);
/* POST /v1/failover/handover (a planned switchover): the leader gives up
   its lease once another controller is warm (PREFIX/members/NAME, each
   controller's under its lease) and does not campaign for 3 TTLs: 0 (why:
   a standby's name), or -1 (why says) */
int ctl_failover_handover(ctl *c, char *why, size_t n);
/* what /metrics says of failover (all 0 without it) */
typedef struct ctl_fo_counts {
    int on, config_differs;
    double lag_s; /* a follower: since its views last read the store (NaN: never); 0 leading */
    unsigned long long elections_won, fences, nospace;
} ctl_fo_counts;
void ctl_failover_counts(ctl *c, ctl_fo_counts *out);
/* "leader", "follower" or "single"; the leader's name (or "") into buf */
const char *ctl_failover_role(ctl *c, char *leader, size_t n);

#endif
