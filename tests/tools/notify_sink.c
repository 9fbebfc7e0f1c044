/* notify_sink.c — systemd's side of sd_notify(3), for the daemons' tests.
 *
 *   notify_sink SOCKET OUT SECONDS
 *
 * Binds a Unix datagram socket at the path SOCKET (what the test passes
 * the daemon as $NOTIFY_SOCKET) and appends every datagram it receives to
 * the file OUT, one message per line: the message's assignments joined by
 * '|' ("READY=1|STATUS=..."), flushed at once, so that a test can poll OUT
 * for "READY=1". Also checks what systemd checks: the sender's credentials
 * (SO_PASSCRED) are appended as "pid=N" to each line. Stops after SECONDS
 * (bounded) or on SIGTERM, removing SOCKET. Exit 0 unless its arguments
 * are wrong or SOCKET cannot be bound. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;
static void on_term(int s)
{
    g_stop = s;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: notify_sink SOCKET OUT SECONDS\n");
        return 2;
    }
    const char *path = argv[1];
    double seconds = atof(argv[3]);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path || !(seconds > 0)) {
        fprintf(stderr, "notify_sink: socket path too long or SECONDS not positive\n");
        return 2;
    }
    strcpy(sa.sun_path, path);
    FILE *out = fopen(argv[2], "a");
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int one = 1;
    unlink(path);
    if (!out || fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa)) {
        fprintf(stderr, "notify_sink: %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_term;
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    struct timeval tv = {0, 100 * 1000}; /* wake up to check the deadline */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (g_stop ||
            (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > seconds)
            break;
        char buf[4096];
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(struct ucred))];
        } ctl;
        struct iovec iov = {buf, sizeof buf - 1};
        struct msghdr m = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
        ssize_t n = recvmsg(fd, &m, 0);
        if (n < 0) continue; /* the timeout, or a signal */
        buf[n] = '\0';
        for (char *p = buf; *p; p++)
            if (*p == '\n') *p = '|';
        long pid = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                struct ucred u;
                memcpy(&u, CMSG_DATA(c), sizeof u);
                pid = (long)u.pid;
            }
        fprintf(out, "%s|pid=%ld\n", buf, pid);
        fflush(out);
    }
    close(fd);
    unlink(path);
    fclose(out);
    return 0;
}
