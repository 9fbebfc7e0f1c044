/* ctl_poll.c — OpenADR events that arrive as a list (docs/controller.md,
 * "OpenADR 3"): a poll's page booked, and the openadr.poll_url poller.
 *
 * A page's events go one by one through the OpenADR model
 * (ctl_openadr_take) under the lock, which is let go every
 * CTL_INGEST_HOLD_S so that the API and the control loop get in between
 * (issue 41 (B)). The poller runs in a thread of its own: booking a long
 * page (60,000 events: about 4 s) never holds the control loop's thread,
 * which pushes triggers and renews the agents' leases meanwhile (on the
 * control loop's thread a page held the pushes: triggers waited 2.7 s and
 * leases expired). The page is parsed (json_loads) outside the lock; each
 * event is read under it, because what "now" means for it (its stored
 * first receipt) and the book of versions are the controller's state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "agent_client.h"
#include "clock.h"
#include "ctl.h"
#include "ctl_failover.h"

static void poll_openadr(ctl *c)
{
    pfi_http_reply r;
    pfi_error e;
    if (pfi_agent_get(c->cfg.openadr_poll_url, "", 5, &r, &e) || r.code != 200) {
        pthread_mutex_lock(&c->mu);
        ctl_log(c, "warning: OpenADR poll %s: %s", c->cfg.openadr_poll_url,
                r.code ? "HTTP error" : e.msg);
        pthread_mutex_unlock(&c->mu);
        if (r.body) pfi_http_reply_dispose(&r);
        return;
    }
    ctl_openadr_ingest(c, r.body);
    pfi_http_reply_dispose(&r);
}

size_t ctl_openadr_ingest(ctl *c, const char *body)
{
    return ctl_openadr_ingest_page(c, body, 0, NULL);
}

/* while a poll's events are booked the lock is let go for a moment once
   it has been held CTL_INGEST_HOLD_S: with the event being booked then (a
   few ms at most) a hold stays within 50 ms (issue 41: a 60,000-event page
   held it ~5 s, and leases expired) */
#define CTL_INGEST_HOLD_S 0.045
#define CTL_INGEST_LOG_EVENTS 1000 /* a page this long is logged with its figures */

size_t ctl_openadr_ingest_page(ctl *c, const char *body, size_t limit, const char *vtn)
{
    pfi_error e;
    json_error_t je;
    json_t *a = json_loads(body, 0, &je);
    if (!json_is_array(a)) { /* never dropped silently: logged and counted */
        pthread_mutex_lock(&c->mu);
        c->oadr_rejected[PFI_OADR_R_MALFORMED]++;
        ctl_log(c, "OpenADR poll: answer not acted on (malformed): %s",
                a ? "not a JSON list of events" : je.text);
        pthread_mutex_unlock(&c->mu);
        json_decref(a);
        return 0;
    }
    size_t i, n = json_array_size(a);
    if (limit && n > limit) { /* more than asked: refused whole, nothing booked */
        pthread_mutex_lock(&c->mu);
        c->oadr_rejected[PFI_OADR_R_PAGE]++;
        ctl_log(c,
                "OpenADR poll: a page of %zu events (%zu bytes) from the VTN %s, which was asked "
                "for at most %zu: refused whole",
                n, strlen(body), vtn ? vtn : "?", limit);
        pthread_mutex_unlock(&c->mu);
        json_decref(a);
        return 0;
    }
    json_t *x;
    pthread_mutex_lock(&c->mu);
    if (n >= CTL_INGEST_LOG_EVENTS)
        ctl_log(c, "OpenADR poll: booking a page of %zu events (%zu bytes)", n, strlen(body));
    double t0 = pfi_wall_monotonic(), start = t0, page_hold = 0;
    json_array_foreach(a, i, x)
    {
        double held = pfi_wall_monotonic() - t0;
        if (held >= CTL_INGEST_HOLD_S) { /* let the control loop and the API in */
            if (held > page_hold) page_hold = held;
            pthread_mutex_unlock(&c->mu);
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&c->mu);
            t0 = pfi_wall_monotonic();
        }
        char *t = json_dumps(x, JSON_COMPACT);
        json_t *answer = NULL;
        if (t)
            ctl_openadr_take(c, t, strlen(t), "poll", "grid", &answer,
                             &e); /* logs what it refuses */
        json_decref(answer);
        free(t);
    }
    ctl_openadr_prune(c);
    double held = pfi_wall_monotonic() - t0;
    if (held > page_hold) page_hold = held;
    if (page_hold > c->ingest_hold_max_s) c->ingest_hold_max_s = page_hold;
    if (n >= CTL_INGEST_LOG_EVENTS)
        ctl_log(
            c, "OpenADR poll: %zu events booked in %.2f s, the lock held at most %.1f ms at a time",
            n, pfi_wall_monotonic() - start, 1e3 * page_hold);
    pthread_mutex_unlock(&c->mu);
    json_decref(a);
    return n;
}

static void *poll_thread(void *arg)
{
    ctl *c = arg;
    double next = pfi_clock_now();
    while (!c->io.poll_stop) {
        double now = pfi_clock_now();
        if (now >= next && ctl_failover_leads(c)) { /* failover: the leader polls */
            next = now + c->cfg.openadr_poll_s;
            poll_openadr(c);
            continue;
        }
        /* the next poll, in wall seconds (the clock may be sped up), and a stop within 50 ms */
        double wait_s = fmin((next - now) / pfi_clock_scale(), 0.05);
        struct timespec ts = {0, (long)(fmax(wait_s, 1e-4) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int ctl_poll_start(ctl *c)
{
    if (!c->cfg.openadr_poll_url[0]) return 0;
    c->io.poll_stop = 0;
    if (pthread_create(&c->io.poll_thread, NULL, poll_thread, c)) {
        ctl_log(c, "error: cannot start the OpenADR poller's thread");
        return -1;
    }
    c->io.poll_running = 1;
    return 0;
}

void ctl_poll_stop(ctl *c)
{
    if (!c->io.poll_running) return;
    c->io.poll_stop = 1;
    pthread_join(c->io.poll_thread, NULL);
    c->io.poll_running = 0;
}
