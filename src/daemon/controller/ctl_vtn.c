/* ctl_vtn.c — pfi-controller as an OpenADR 3 VEN talking to its VTN
 * (docs/controller.md "OpenADR 3: the VTN"; the client is vtn_client.h).
 *
 * At start-up the callback token — the bearer token the subscription gives
 * the VTN, which the webhook POST /openadr3/events then accepts besides the
 * controller's own token — is read from callback_token_file, or made (32
 * random bytes as hex) and written there with mode 0600 when the file does
 * not exist. A thread then, until the controller stops: fetches a token,
 * registers the VEN, subscribes to EVENT operations (when callback_url is
 * set) and polls GET /events every poll_s wall seconds as a fallback,
 * handing each event to the OpenADR parser like the plain poller
 * (ctl_openadr_ingest). A step that fails is retried after 1 s, doubling
 * up to poll_s. Each step is logged once done ("VTN: ..."). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "vtn_client.h"

/* a secret file: the token file's rules (regular, not a symlink, mode 0600
 * or stricter, one line without spaces); the callback token 16..256
 * characters like every token, a client id or secret 1..4096 (the spec) */
static int read_secret(ctl *c, const char *key, const char *path, size_t min, size_t max, char *out,
                       size_t n)
{
    pfi_error e;
    if (pfi_secret_read(path, min, max, out, n, &e) == PFI_OK) return 0;
    ctl_log(c, "error: openadr.%s: %s", key, e.msg);
    return -1;
}

/* the callback token: read, or made and written when the file is absent */
static int callback_token(ctl *c)
{
    const char *path = c->cfg.vtn.callback_token_file;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        unsigned char r[32];
        char hex[65];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            ctl_log(c, "error: openadr.callback_token_file: no random bytes: %s", strerror(errno));
            return -1;
        }
        for (size_t i = 0; i < sizeof r; i++) snprintf(hex + 2 * i, 3, "%02x", r[i]);
        hex[64] = '\n';
        /* created here, 0600 from the start; never through a symlink */
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int bad = fd < 0 || write(fd, hex, 65) != 65 || fsync(fd) != 0;
        int why = errno;
        if (fd >= 0) close(fd);
        if (bad) {
            if (fd >= 0) unlink(path);
            ctl_log(c, "error: openadr.callback_token_file: %s: %s", path, strerror(why));
            return -1;
        }
        ctl_log(c, "VTN: callback token made in %s (mode 0600)", path);
    }
    return read_secret(c, "callback_token_file", path, 16, PFI_TOKEN_MAX, c->callback_token,
                       sizeof c->callback_token);
}

typedef struct vtn_run {
    ctl *c;
    char id[PFI_VTN_SECRET_MAX + 1], secret[PFI_VTN_SECRET_MAX + 1];
    const char *targets[16];
} vtn_run;

/* sleep up to s wall seconds, less when the controller stops */
static void nap(ctl *c, double s)
{
    double end = pfi_wall_monotonic() + s;
    while (!c->vtn_stop && pfi_wall_monotonic() < end) usleep(50 * 1000);
}

static void *vtn_thread(void *arg)
{
    vtn_run *run = arg;
    ctl *c = run->c;
    const ctl_cfg *g = &c->cfg;
    pfi_vtn_cfg vc = {.vtn_url = g->vtn.vtn_url,
                      .v301 = !strcmp(g->openadr_version, "3.0.1"),
                      .token_url = g->vtn.token_url,
                      .client_id = run->id,
                      .client_secret = run->secret,
                      .ven_name = g->vtn.ven_name,
                      .program_id = g->vtn.program_id,
                      .callback_url = g->vtn.callback_url,
                      .callback_token = c->callback_token,
                      .targets = run->targets,
                      .ntargets = g->vtn.ntargets,
                      .ca_file = g->vtn.ca_file[0] ? g->vtn.ca_file : NULL,
                      .timeout_s = 10};
    pfi_vtn v;
    pfi_vtn_init(&v, &vc);
    int registered = 0, subscribed = !g->vtn.callback_url[0];
    double backoff = 1, next_poll = 0;
    unsigned long fetches = 0, retries = 0;
    while (!c->vtn_stop) {
        pfi_error e;
        pfi_status st = PFI_OK;
        const char *step = "";
        if (!registered) {
            step = "registration";
            if (!(st = pfi_vtn_register(&v, &e))) {
                registered = 1;
                pthread_mutex_lock(&c->mu);
                ctl_log(c, "VTN: registered as VEN %s (id %s)", g->vtn.ven_name, v.ven_id);
                pthread_mutex_unlock(&c->mu);
            }
        } else if (!subscribed) {
            step = "subscription";
            int created;
            if (!(st = pfi_vtn_subscribe(&v, &created, &e))) {
                subscribed = 1;
                pthread_mutex_lock(&c->mu);
                ctl_log(c, "VTN: subscribed to EVENT (subscription %s, %s), callback %s",
                        v.subscription_id, created ? "created" : "already there",
                        g->vtn.callback_url);
                pthread_mutex_unlock(&c->mu);
            }
        } else if (pfi_wall_monotonic() >= next_poll) {
            step = "GET /events";
            char *body;
            if (!(st = pfi_vtn_events(&v, &body, &e))) {
                next_poll = pfi_wall_monotonic() + g->openadr_poll_s;
                size_t n = ctl_openadr_ingest(c, body);
                free(body);
                pthread_mutex_lock(&c->mu);
                ctl_log(c, "VTN: polled events: %zu listed", n);
                pthread_mutex_unlock(&c->mu);
            }
        }
        if (v.token_fetches != fetches || v.retries_401 != retries) {
            pthread_mutex_lock(&c->mu);
            if (v.retries_401 != retries)
                ctl_log(c, "VTN: a request was refused (401): new token, request retried once");
            if (v.token_fetches != fetches)
                ctl_log(c, "VTN: access token fetched from %s (%lu so far)", v.token_url,
                        v.token_fetches);
            pthread_mutex_unlock(&c->mu);
            fetches = v.token_fetches, retries = v.retries_401;
        }
        if (st) {
            pthread_mutex_lock(&c->mu);
            ctl_log(c, "warning: VTN %s: %s; again in %g s", step, e.msg, backoff);
            pthread_mutex_unlock(&c->mu);
            nap(c, backoff);
            backoff = fmin(2 * backoff, g->openadr_poll_s);
            continue;
        }
        backoff = 1;
        if (registered && subscribed) nap(c, fmax(0, fmin(next_poll - pfi_wall_monotonic(), 0.2)));
    }
    pfi_vtn_dispose(&v);
    memset(run->secret, 0, sizeof run->secret);
    free(run);
    return NULL;
}

int ctl_vtn_start(ctl *c)
{
    const ctl_cfg *g = &c->cfg;
    if (!g->vtn.vtn_url[0]) return 0;
    if (g->vtn.callback_url[0] && callback_token(c)) return -1;
    vtn_run *run = calloc(1, sizeof *run);
    if (!run) {
        ctl_log(c, "error: out of memory");
        return -1;
    }
    run->c = c;
    if (read_secret(c, "client_id_file", g->vtn.client_id_file, 1, PFI_VTN_SECRET_MAX, run->id,
                    sizeof run->id) ||
        read_secret(c, "client_secret_file", g->vtn.client_secret_file, 1, PFI_VTN_SECRET_MAX,
                    run->secret, sizeof run->secret)) {
        free(run);
        return -1;
    }
    for (size_t i = 0; i < g->vtn.ntargets; i++) run->targets[i] = g->vtn.targets[i];
    c->vtn_stop = 0;
    if (pthread_create(&c->vtn_thread, NULL, vtn_thread, run)) {
        ctl_log(c, "error: cannot start the VTN thread");
        free(run);
        return -1;
    }
    c->vtn_running = 1;
    ctl_log(c, "VTN: %s (OpenADR %s), VEN %s", g->vtn.vtn_url, g->openadr_version, g->vtn.ven_name);
    return 0;
}

void ctl_vtn_stop(ctl *c)
{
    if (!c->vtn_running) return;
    c->vtn_stop = 1;
    pthread_join(c->vtn_thread, NULL);
    c->vtn_running = 0;
}
