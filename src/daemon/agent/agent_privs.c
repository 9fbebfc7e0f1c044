/* agent_privs.c — the capabilities pfi-agent keeps: those its options
 * need, and no others (docs/agent.md, "Privileges"; agent.h).
 *
 *   CAP_SYS_ADMIN         set power limits through NVML (the driver's
 *                         administrator check): --backend nvml, not --read-only
 *   CAP_DAC_READ_SEARCH   read the step logs job users own (mode 0600), named
 *                         by --jobs-dir, --jobs-file or --job-env
 *   CAP_SYS_PTRACE        read /proc/PID/environ of other users' processes:
 *                         --job-env only
 *   CAP_NET_BIND_SERVICE  a --listen or --control-listen port below 1024
 *
 * --restore-and-exit needs CAP_SYS_ADMIN alone (with NVML). The unit's
 * CapabilityBoundingSet= is the union of the four. Called once, after the
 * token and model files are read and before the GPUs are opened and any
 * thread starts (capabilities are per thread: every thread started later
 * inherits the reduced sets). It empties the ambient and inheritable sets,
 * reduces the permitted and effective sets to what is kept, and, where the
 * process may (CAP_SETPCAP: root outside the unit), the bounding set too,
 * so that not even an exec could regain the others. Raw capget/capset
 * system calls (<linux/capability.h>): no libcap. A process without
 * capabilities (not root) has nothing to drop. */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

static const struct {
    int cap;
    const char *name;
} cap_names[] = {{CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
                 {CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH"},
                 {CAP_SYS_PTRACE, "CAP_SYS_PTRACE"},
                 {CAP_NET_BIND_SERVICE, "CAP_NET_BIND_SERVICE"}};

#define BIT(c) ((uint64_t)1 << (c))

/* 1 when ADDR:PORT names a port 1..1023 */
static int low_port(const char *listen)
{
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    if (!colon) return 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return *end == '\0' && port > 0 && port < 1024;
}

void agent_check_hidepid(agent *a, const char *mountinfo)
{
    FILE *f = fopen(mountinfo, "r");
    char line[4096];
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS" */
        char mp[1024] = "", fs[64] = "", super[1024] = "";
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %1023s", mp) != 1 ||
            sscanf(dash + 3, "%63s %*s %1023s", fs, super) != 2)
            continue;
        if (strcmp(mp, "/proc") || strcmp(fs, "proc")) continue;
        const char *h = strstr(super, "hidepid=");
        if (h && strncmp(h + 8, "0", 1) && strncmp(h + 8, "off", 3)) {
            char v[32];
            snprintf(v, sizeof v, "%.*s", (int)strcspn(h + 8, ","), h + 8);
            /* other users' /proc/PID needs CAP_SYS_PTRACE then (ptrace_may_access) */
            int ptrace = (agent_caps_needed(&a->cfg) >> CAP_SYS_PTRACE) & 1;
            if (!ptrace)
                agent_log(a,
                          "warning: /proc is mounted with hidepid=%s: other users' processes are "
                          "hidden from the agent (it keeps no CAP_SYS_PTRACE), so GPU processes "
                          "are not mapped to jobs through their cgroups; job files (--jobs-dir) "
                          "still are",
                          v);
        }
    }
    fclose(f);
}

uint64_t agent_caps_needed(const agent_cfg *c)
{
    uint64_t keep = 0;
    /* an unknown backend is refused at open; until then, as hardware */
    const pfi_gpu_backend_info *b = pfi_gpu_backend_of(c->backend, NULL);
    if ((!b || b->needs_admin) && !c->read_only) keep |= BIT(CAP_SYS_ADMIN);
    if (c->restore_and_exit) return keep; /* no job, no listener */
    if (c->jobs_dir || c->jobs_file || c->job_env) keep |= BIT(CAP_DAC_READ_SEARCH);
    if (c->job_env) keep |= BIT(CAP_SYS_PTRACE);
    if (low_port(c->listen) || low_port(c->control_listen)) keep |= BIT(CAP_NET_BIND_SERVICE);
    return keep;
}

/* the names of the capabilities in mask (those cap_names knows) */
static void cap_list(uint64_t mask, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++)
        if (mask & BIT(cap_names[i].cap) && k < n)
            k += (size_t)snprintf(out + k, n - k, "%s%s", k ? " " : "", cap_names[i].name);
    if (!k) snprintf(out, n, "none");
}

/* every capability not in keep out of the bounding set, if CAP_SETPCAP
 * allows (under the unit it does not: its CapabilityBoundingSet= already
 * bounds the process) */
static void drop_bounding(uint64_t keep)
{
    for (int c = 0; c < 64; c++) {
        if (keep & BIT(c)) continue;
        int r = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
        if (r < 0) break; /* past the kernel's last capability */
        if (r == 1 && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) break; /* EPERM: no CAP_SETPCAP */
    }
}

int agent_drop_capabilities(agent *a)
{
    uint64_t keep = agent_caps_needed(&a->cfg);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) != 0) {
        /* unknown capabilities are not dropped ones (issue 41: a failed
           capget kept every capability and went on) */
        snprintf(a->privs, sizeof a->privs, "capabilities unknown (capget: %s)", strerror(errno));
        agent_log(a,
                  "error: cannot read the capabilities to drop those the options do not need "
                  "(capget: %s)",
                  strerror(errno));
        return 1;
    }
    uint64_t perm = (uint64_t)d[0].permitted | (uint64_t)d[1].permitted << 32;
    (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); /* EINVAL before Linux 4.3 */
    if (perm == 0 && d[0].inheritable == 0 && d[1].inheritable == 0) {
        snprintf(a->privs, sizeof a->privs, "no capabilities (not root)");
        return 0;
    }
    drop_bounding(keep);
    uint64_t now = perm & keep;
    for (int i = 0; i < 2; i++) {
        d[i].permitted = d[i].effective = (uint32_t)(now >> (32 * i));
        d[i].inheritable = 0;
    }
    if (syscall(SYS_capset, &h, d) != 0) {
        agent_log(a, "error: cannot drop the capabilities the options do not need (capset: %s)",
                  strerror(errno));
        return 1;
    }
    char kept[160];
    cap_list(now, kept, sizeof kept);
    snprintf(a->privs, sizeof a->privs, "capabilities kept: %s (all others dropped)", kept);
    return 0;
}
