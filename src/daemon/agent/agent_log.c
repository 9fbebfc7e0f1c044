/* agent_log.c — the agent's log (daemon_util.h: stderr or --log, the
 * priority from its first word): one agent per process. The bottom of the
 * agent: every part logs, none is called back from here (issue 43: in
 * agent_main.c it tied eight files into a circle). */
#include <stdarg.h>

#include "agent.h"
#include "daemon_util.h"

static pfi_daemon_log g_log;

struct pfi_daemon_log *agent_log_handle(void)
{
    return &g_log;
}

void agent_log(agent *a, const char *fmt, ...)
{
    (void)a;
    va_list ap;
    va_start(ap, fmt);
    pfi_daemon_vlog(&g_log, fmt, ap);
    va_end(ap);
}
