/* agent_boot.c — which boot the agent's state belongs to (issue 40 c; agent.h):
 * this boot's id from /proc/sys/kernel/random/boot_id (--boot-id-file), and
 * the rule that a state file written in another boot holds no cap of this
 * one (the node rebooted: the limits the boot set are the baselines). Split
 * from agent_caps.c, which had grown past 800 lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"

/* this boot's id (issue 40 c): "" when it cannot be read (then no reboot is told apart) */
void agent_read_boot_id(agent *a)
{
    char buf[128] = "";
    FILE *f = fopen(a->cfg.boot_id_file, "r");
    a->boot_id[0] = '\0';
    if (!f || !fgets(buf, sizeof buf, f)) {
        agent_log(a, "warning: %s: %s: a reboot cannot be told from a restart", a->cfg.boot_id_file,
                  f ? "empty" : strerror(errno));
        if (f) fclose(f);
        return;
    }
    fclose(f);
    buf[strcspn(buf, " \t\r\n")] = '\0';
    size_t n = strlen(buf);
    if (n == 0 || n >= sizeof a->boot_id || strspn(buf, "0123456789abcdefABCDEF-") != n) {
        agent_log(a, "warning: %s: not a boot id: a reboot cannot be told from a restart",
                  a->cfg.boot_id_file);
        return;
    }
    memcpy(a->boot_id, buf, n + 1);
}

/* The state file's caps were set in another boot: the node rebooted, the
 * GPUs' limits are what the boot set, and pfi holds none of them. The saved
 * caps and the lease are dropped (restoring a baseline from before the
 * reboot would override the boot-time configuration); the limits in force
 * are the baselines. 1 when that was so. */
int agent_dropped_after_reboot(agent *a)
{
    if (!a->boot_id[0] || !a->lease.boot_id[0] || !strcmp(a->boot_id, a->lease.boot_id)) return 0;
    size_t n = 0;
    for (size_t k = 0; k < a->lease.n; k++) n += a->lease.gpu[k].changed != 0;
    agent_log(
        a,
        "state file: written in another boot (%.40s, now %.40s): the node rebooted; %zu saved "
        "cap%s and %s dropped, the limits in force are the baselines",
        a->lease.boot_id, a->boot_id, n, n == 1 ? "" : "s",
        a->lease.active ? "the lease" : "no lease");
    for (size_t k = 0; k < a->lease.n; k++) a->lease.gpu[k].changed = 0;
    a->lease.n = 0;
    a->lease.active = 0;
    return 1;
}
