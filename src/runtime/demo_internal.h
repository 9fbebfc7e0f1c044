/* demo_internal.h — what demo.c and demo_failover.c share: the demo's
 * state and its helpers (start a daemon with its log, wait for its port
 * file, GET JSON). Not an API. */
#ifndef PFI_DEMO_INTERNAL_H
#define PFI_DEMO_INTERNAL_H

#include <jansson.h>
#include <sys/types.h>

#include "demo.h"
#include "grid_event.h"

#define NAG 4
#define DEMO_ETCD 3 /* etcd members of --failover */

typedef struct demo {
    const pfi_demo_opts *o;
    char dir[4096], agent_bin[4096], ctl_bin[4096];
    char tok[4300], ctok[4300], model[4300], clog[4300], url[64];
    pid_t pids[NAG + 1];
    int ports[NAG];
    pfi_grid_event ev;
    /* the controller's safe-online totals (tokens/s) last seen during the
       event: at its last round, at the reference allocation (NaN: none) */
    double on_tok, on_ref;
    long long on_round;
    /* --failover (demo_failover.c): the etcd members, the second
       controller (ctl-b) and its URL, the etcd endpoints; killed: the
       leader was killed (d->url is then ctl-b's) */
    pid_t etcd_pids[DEMO_ETCD], pid_b;
    char url_b[64], clog_b[4300], etcd_eps[512];
    int killed;
} demo;

int demo_fail(const demo *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
pid_t demo_spawn(char **argv, const char *log);
int demo_wait_port(const char *path, pid_t p, int *port);
json_t *demo_get_json(const char *url, const char *path);

/* demo_failover.c: three etcd members on loopback (ports the kernel picked),
   healthy: 0, or -1 (reported) */
int demo_fo_etcd(demo *d);
/* the "failover" key for controller NAME (ctl-a, ctl-b) */
json_t *demo_fo_config(const demo *d, const char *name);
/* once ctl-a leads and ctl-b follows: 0, or -1 (reported) */
int demo_fo_wait_roles(demo *d);
/* kill the leader (SIGKILL) during the event, wait until every agent
   holds ctl-b's lease, and print one line: the takeover time and the
   GPUs whose cap lapsed back to baseline meanwhile */
void demo_fo_kill(demo *d);
/* the members and ctl-b stopped */
void demo_fo_stop(demo *d);

#endif
