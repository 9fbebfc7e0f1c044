/* demo_proc.c — the demo's processes (demo_internal.h): a daemon started
 * with its log, its port file waited for, JSON read from it, a failure
 * reported. Shared by demo.c and demo_failover.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_client.h"
#include "demo_internal.h"

int demo_fail(const demo *d, const char *fmt, ...)
{
    char m[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (d->o->error) d->o->error(d->o->ud, m);
    return -1;
}

pid_t demo_spawn(char **argv, const char *log)
{
    pid_t p = fork();
    if (p != 0) return p;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) dup2(fd, 2), dup2(fd, 1);
    execvp(argv[0], argv);
    fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

int demo_wait_port(const char *path, pid_t p, int *port)
{
    for (int i = 0; i < 400; i++) {
        FILE *f = fopen(path, "r");
        if (f && fscanf(f, "%d", port) == 1 && *port > 0) {
            fclose(f);
            return 0;
        }
        if (f) fclose(f);
        if (waitpid(p, NULL, WNOHANG) == p) return -1;
        usleep(25000);
    }
    return -1;
}

json_t *demo_get_json(const char *url, const char *path)
{
    pfi_http_reply r;
    if (pfi_agent_get(url, path, 5, &r, NULL) != PFI_OK) return NULL;
    json_t *o = r.code == 200 ? json_loads(r.body, 0, NULL) : NULL;
    pfi_http_reply_dispose(&r);
    return o;
}
