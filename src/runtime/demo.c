/* demo.c — `pfi demo` as a call (demo.h): the daemons started on
 * loopback, the grid event posted, the timeline, the report, the daemons
 * stopped and the caps checked. */
#include "demo.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_client.h"
#include "atomic.h"
#include "clock.h"
#include "demo_internal.h"
#include "grid_event.h"

static const char *const groups[NAG] = {"moe-ft-qwen30ba3b-x8", "dense-pt-llama70b-x8-compile",
                                        "moe-pt-gptoss20b-x8-ep1-nocompile",
                                        "dense-ft-llama70b-x8-compile"};
static const int tiers[NAG] = {3, 3, 3, 1};

static void find_tool(const char *name, char *buf, size_t n)
{
    char self[2048];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
        self[k] = '\0';
        char *sl = strrchr(self, '/');
        if (sl) *sl = '\0';
        snprintf(buf, n, "%s/%s", self, name);
        if (access(buf, X_OK) == 0) return;
        snprintf(buf, n, "%s/../sbin/%s", self, name);
        if (access(buf, X_OK) == 0) return;
    }
    snprintf(buf, n, "%s", name); /* from PATH */
}

static int write_token(const char *path)
{
    unsigned char b[24];
    FILE *u = fopen("/dev/urandom", "rb");
    if (!u || fread(b, 1, sizeof b, u) != sizeof b) {
        if (u) fclose(u);
        return -1;
    }
    fclose(u);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (size_t i = 0; i < sizeof b; i++) fprintf(f, "%02x", b[i]);
    fputc('\n', f);
    fclose(f);
    return chmod(path, 0600);
}

/* the working directory, the clock, the predictor, the tokens */
static int prepare(demo *d)
{
    const pfi_demo_opts *o = d->o;
    if (o->dir) {
        snprintf(d->dir, sizeof d->dir, "%s", o->dir);
        if (mkdir(d->dir, 0755) && errno != EEXIST)
            return demo_fail(d, "%s: %s", d->dir, strerror(errno));
    } else {
        snprintf(d->dir, sizeof d->dir, "/tmp/pfi-demo-XXXXXX");
        if (!mkdtemp(d->dir))
            return demo_fail(d, "cannot make a temporary directory: %s", strerror(errno));
    }
    char epoch_s[64], scale_s[32];
    find_tool("pfi-agent", d->agent_bin, sizeof d->agent_bin);
    find_tool("pfi-controller", d->ctl_bin, sizeof d->ctl_bin);
    double epoch = floor((double)time(NULL));
    snprintf(epoch_s, sizeof epoch_s, "%.0f", epoch);
    snprintf(scale_s, sizeof scale_s, "%g", o->time_scale);
    setenv("PFI_TIME_SCALE", scale_s, 1);
    setenv("PFI_EPOCH", epoch_s, 1);
    pfi_clock_set(o->time_scale, epoch, NULL);
    /* a predictor for the agents: fitted on the reconstruction's headline groups */
    snprintf(d->model, sizeof d->model, "%s/model.json", d->dir);
    if (o->note)
        o->note(o->ud, "reconstruction calibrated to published tables (not measured data); fitting "
                       "the predictor ...");
    return 0;
}

static int start_agents(demo *d)
{
    if (d->o->fit_model(d->o->ud, d->dir, d->model))
        return demo_fail(d, "could not fit the predictor");
    snprintf(d->tok, sizeof d->tok, "%s/agent.token", d->dir);
    snprintf(d->ctok, sizeof d->ctok, "%s/controller.token", d->dir);
    if (write_token(d->tok) || write_token(d->ctok))
        return demo_fail(d, "cannot write token files in %s", d->dir);
    for (int i = 0; i < NAG; i++) {
        char backend[10000], portf[4300], state[4300], log[4300], hw[4300];
        snprintf(hw, sizeof hw, "%s/hw%d.json", d->dir, i);
        snprintf(backend, sizeof backend,
                 "sim:name=node%d,gpus=8,job=job%d:%s@0-7,load=5,seed=%d,steplogs=%s,state=%s",
                 i + 1, i + 1, groups[i], i + 1, d->dir, hw);
        snprintf(portf, sizeof portf, "%s/agent%d.port", d->dir, i);
        snprintf(state, sizeof state, "%s/agent%d.state.json", d->dir, i);
        snprintf(log, sizeof log, "%s/agent%d.log", d->dir, i);
        unlink(portf);
        char *av[] = {d->agent_bin,  "--backend",    backend,  "--listen",
                      "127.0.0.1:0", "--port-file",  portf,    "--token-file",
                      d->tok,        "--state-file", state,    "--interval",
                      "2",           "--model",      d->model, NULL};
        d->pids[i] = demo_spawn(av, log);
        if (demo_wait_port(portf, d->pids[i], &d->ports[i]))
            return demo_fail(d, "pfi-agent %d did not start; see %s", i, log);
    }
    return 0;
}

/* --failover: the second controller, ctl-b: its configuration (ctl-a's
 * with its own database and name), then, once ctl-a runs, the process (it
 * follows) */
static int write_ctl_b(demo *d, json_t *cfg)
{
    char path[4300], db[4300];
    snprintf(path, sizeof path, "%s/controller-b.json", d->dir);
    snprintf(db, sizeof db, "%s/controller-b.db", d->dir);
    unlink(db);
    json_t *b = json_deep_copy(cfg);
    json_object_set_new(b, "db", json_string(db));
    json_object_set_new(b, "failover", demo_fo_config(d, "ctl-b"));
    int wr = json_dump_file(b, path, JSON_INDENT(1));
    json_decref(b);
    return wr;
}

static int start_ctl_b(demo *d)
{
    char path[4300], portf[4300];
    snprintf(path, sizeof path, "%s/controller-b.json", d->dir);
    snprintf(portf, sizeof portf, "%s/controller-b.port", d->dir);
    snprintf(d->clog_b, sizeof d->clog_b, "%s/controller-b.log", d->dir);
    unlink(portf);
    char *cv[] = {d->ctl_bin, "--config", path, "--port-file", portf, NULL};
    int port = 0;
    d->pid_b = demo_spawn(cv, d->clog_b);
    if (demo_wait_port(portf, d->pid_b, &port))
        return demo_fail(d, "the second pfi-controller did not start; see %s", d->clog_b);
    snprintf(d->url_b, sizeof d->url_b, "http://127.0.0.1:%d", port);
    return demo_fo_wait_roles(d);
}

static int start_controller(demo *d)
{
    char path[4300], db[4300], cportf[4300];
    snprintf(path, sizeof path, "%s/controller.json", d->dir);
    json_t *ag = json_array();
    for (int i = 0; i < NAG; i++) {
        char url[64], name[16];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", d->ports[i]);
        snprintf(name, sizeof name, "node%d", i + 1);
        json_array_append_new(
            ag, json_pack("{s:s,s:s,s:s}", "name", name, "url", url, "token_file", d->tok));
    }
    json_t *tj = json_object();
    for (int i = 0; i < NAG; i++) {
        char id[16];
        snprintf(id, sizeof id, "job%d", i + 1);
        json_object_set_new(tj, id, json_integer(tiers[i]));
    }
    snprintf(db, sizeof db, "%s/controller.db", d->dir);
    unlink(db);
    /* --failover: the agents' lease covers a takeover (12 wall seconds: etcd's
       lease 2 s, twice, the agents' timeout, a period, a margin) */
    double lease_s = d->o->failover ? 12 * d->o->time_scale : 30;
    json_t *cfg = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:o,s:o}", "listen", "127.0.0.1:0",
                            "token_file", d->ctok, "db", db, "control_period_s", 5.0,
                            "baseline_window_s", 40.0, "ramp_s", 30.0, "ramp_down_s", 30.0,
                            "lease_s", lease_s, "agents", ag, "tiers", tj);
    /* OpenADR's SIMPLE level 3 is this cut: the controller maps it on the
       baseline it measures, as it does the API's reduction_pct */
    if (d->o->openadr)
        json_object_set_new(cfg, "levels_pct",
                            json_pack("[f,f,f,f]", 0.0, 10.0, 20.0, d->o->cut_pct));
    if (d->o->failover) {
        if (demo_fo_etcd(d)) {
            json_decref(cfg);
            return -1;
        }
        json_object_set_new(cfg, "failover", demo_fo_config(d, "ctl-a"));
    }
    int wr = json_dump_file(cfg, path, JSON_INDENT(1));
    if (d->o->failover && !wr) wr = write_ctl_b(d, cfg);
    json_decref(cfg);
    if (wr) return demo_fail(d, "%s: cannot write", path);
    snprintf(cportf, sizeof cportf, "%s/controller.port", d->dir);
    snprintf(d->clog, sizeof d->clog, "%s/controller.log", d->dir);
    unlink(cportf);
    char *cv[] = {d->ctl_bin, "--config", path, "--port-file", cportf, NULL};
    int cport = 0;
    d->pids[NAG] = demo_spawn(cv, d->clog);
    if (demo_wait_port(cportf, d->pids[NAG], &cport))
        return demo_fail(d, "pfi-controller did not start; see %s", d->clog);
    snprintf(d->url, sizeof d->url, "http://127.0.0.1:%d", cport);
    if (d->o->failover && start_ctl_b(d)) return -1;
    FILE *out = d->o->out;
    fprintf(out,
            "pfi demo: controller %s (status page: open it in a browser), 4 agents x 8 simulated "
            "H200, clock x%g\n",
            d->url, d->o->time_scale);
    fprintf(out, "  jobs: ");
    for (int i = 0; i < NAG; i++)
        fprintf(out, "job%d %s (Flex %d)%s", i + 1, groups[i], tiers[i], i + 1 < NAG ? ", " : "\n");
    fflush(out);
    return 0;
}

/* the event as a VTN serves it (OpenADR 3.1): one SIMPLE interval at
 * level 3, which the demo's levels_pct maps to the cut; the ids and dates
 * a VTN adds */
static char *openadr_event(const pfi_grid_event *ev)
{
    char now[40], t0[40];
    pfi_rfc3339_format(pfi_clock_now(), now, sizeof now);
    pfi_rfc3339_format(ev->start, t0, sizeof t0);
    char dur[32];
    snprintf(dur, sizeof dur, "PT%.0fS", ev->duration_s);
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:[{s:s,s:s}],s:{s:s,s:s},s:[{s:i,s:[{s:s,s:[i]}]}]}", "id",
        ev->id, "objectType", "EVENT", "programID", "pfi-demo", "eventName", "pfi demo",
        "createdDateTime", now, "modificationDateTime", now, "payloadDescriptors", "objectType",
        "EVENT_PAYLOAD_DESCRIPTOR", "payloadType", "SIMPLE", "intervalPeriod", "start", t0,
        "duration", dur, "intervals", "id", 0, "payloads", "type", "SIMPLE", "values", 3);
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return t;
}

/* once the jobs have loaded and the controller has measured baselines:
 * POST /v1/events (201), or the OpenADR webhook (200, "applied") */
static int post_event(demo *d)
{
    double t_ready = pfi_clock_now() + 50;
    while (pfi_clock_now() < t_ready) pfi_clock_sleep(2);
    char token[PFI_TOKEN_MAX + 1];
    pfi_error e;
    if (pfi_token_read(d->ctok, token, sizeof token, &e)) return demo_fail(d, "%s", e.msg);
    pfi_grid_event *ev = &d->ev;
    double start = pfi_clock_now() + 10;
    memset(ev, 0, sizeof *ev);
    snprintf(ev->id, sizeof ev->id, "demo-%.0f", start);
    ev->start = start;
    ev->duration_s = 600;
    ev->kind = PFI_EV_REDUCTION;
    ev->reduction_pct = d->o->cut_pct;
    ev->ramp_s = ev->ramp_down_s = NAN;
    int oadr = d->o->openadr;
    char *body = oadr ? openadr_event(ev) : pfi_grid_event_format(ev), url[128];
    snprintf(url, sizeof url, "%s%s", d->url, oadr ? "/openadr3/events" : "/v1/events");
    pfi_http_reply r;
    memset(&r, 0, sizeof r);
    int rc = 0;
    if (!body || pfi_http_request("POST", url, token, body, 5, &r, &e) ||
        r.code != (oadr ? 200 : 201) || (oadr && !strstr(r.body, "\"applied\""))) {
        rc = demo_fail(d, "posting the event failed (%s %.200s); see %s", r.code ? "HTTP" : e.msg,
                       r.body ? r.body : "", d->clog);
    }
    if (r.body) pfi_http_reply_dispose(&r);
    free(body);
    return rc;
}

/* cluster power vs target and per-job throughput every 30 clock s, from
 * before the event to after its ramp back */
static void timeline(demo *d)
{
    FILE *out = d->o->out;
    double start = d->ev.start, dur = d->ev.duration_s, base_tok[NAG];
    if (d->o->openadr)
        fprintf(out,
                "\n  grid event %s: %g%% cut, sent as an OpenADR 3.1 EVENT (SIMPLE level 3) to "
                "POST /openadr3/events\n",
                d->ev.id, d->o->cut_pct);
    else
        fprintf(out, "\n  grid event %s: %g%% cut, sent to POST /v1/events\n", d->ev.id,
                d->o->cut_pct);
    fprintf(out, "\n  %-8s %-11s %-11s  %s\n", "t (min)", "target kW", "measured kW",
            "tokens/s per job (change vs before the event)");
    for (int i = 0; i < NAG; i++) base_tok[i] = NAN;
    for (double t = start - 5; t <= start + dur + 45; t += 30) {
        while (pfi_clock_now() < t) pfi_clock_sleep(1);
        if (d->o->failover && !d->killed && t >= start + dur / 3) demo_fo_kill(d);
        json_t *s = demo_get_json(d->url, "/v1/status");
        if (!s) continue;
        double b = json_number_value(json_object_get(s, "budget_w")),
               m = json_number_value(json_object_get(s, "measured_w"));
        size_t k;
        json_t *j;
        if (!json_is_number(json_object_get(s, "measured_w"))) {
            m = 0;
            json_array_foreach(json_object_get(s, "jobs"), k, j) m +=
                json_number_value(json_object_get(j, "power_w"));
        }
        char tgt[32] = "-";
        if (json_is_number(json_object_get(s, "budget_w")))
            snprintf(tgt, sizeof tgt, "%.2f", b / 1000);
        fprintf(out, "  %+7.1f  %-11s %-11.2f ", (t - start) / 60, tgt, m / 1000);
        json_array_foreach(json_object_get(s, "jobs"), k, j)
        {
            const char *id = json_string_value(json_object_get(j, "job_id"));
            int q = id ? atoi(id + 3) - 1 : -1;
            double tp = json_number_value(json_object_get(j, "tokens_per_s"));
            if (q < 0 || q >= NAG) continue;
            if (t < start) base_tok[q] = tp;
            if (isfinite(base_tok[q]) && base_tok[q] > 0 &&
                json_is_number(json_object_get(j, "tokens_per_s")))
                fprintf(out, " %s %.0f (%+.0f%%)", id, tp, 100 * (tp / base_tok[q] - 1));
        }
        fprintf(out, "\n");
        fflush(out);
        json_t *on = json_object_get(s, "online"), *nt = json_object_get(on, "tokens_per_s"),
               *rt = json_object_get(on, "reference_tokens_per_s");
        if (json_is_number(nt) && json_is_number(rt)) {
            d->on_tok = json_number_value(nt);
            d->on_ref = json_number_value(rt);
            d->on_round = json_integer_value(json_object_get(on, "round"));
        }
        json_decref(s);
    }
}

/* the event's report, once it has ended (its ramp back to baseline
 * included), so that it is the final one: summary lines, JSON and chart here */
static int report(demo *d)
{
    FILE *out = d->o->out;
    char ep[300];
    snprintf(ep, sizeof ep, "/v1/events/%s", d->ev.id);
    for (double t_end = d->ev.start + d->ev.duration_s + 300; pfi_clock_now() < t_end;
         pfi_clock_sleep(5)) {
        json_t *s = demo_get_json(d->url, ep);
        const char *st = s ? json_string_value(json_object_get(s, "status")) : NULL;
        int done = st && strcmp(st, "active") && strcmp(st, "scheduled");
        json_decref(s);
        if (done) break;
    }
    snprintf(ep, sizeof ep, "/v1/events/%s/report", d->ev.id);
    json_t *r = demo_get_json(d->url, ep);
    if (!r) return demo_fail(d, "no report from the controller; see %s", d->clog);
    pfi_error e;
    char *rtxt = json_dumps(r, JSON_INDENT(1));
    int wfail =
        !rtxt || pfi_write_file_atomic("pfi-demo-report.json", rtxt, strlen(rtxt), &e) != PFI_OK;
    free(rtxt);
    if (wfail) {
        json_decref(r);
        return demo_fail(d, "pfi-demo-report.json: cannot write here");
    }
    char ttt[32] = "never";
    if (json_is_number(json_object_get(r, "time_to_target_s")))
        snprintf(ttt, sizeof ttt, "after %.0f s",
                 json_number_value(json_object_get(r, "time_to_target_s")));
    fprintf(out,
            "\n  event %s: requested %.0f%% of %.2f kW -> target %.2f kW; achieved %.1f%%; %s "
            "(tolerance %g%%); at target %s; "
            "%.2f kWh shed\n",
            d->ev.id, d->o->cut_pct, json_number_value(json_object_get(r, "baseline_kw")),
            json_number_value(json_object_get(r, "target_kw")),
            json_number_value(json_object_get(r, "achieved_reduction_pct")),
            json_is_true(json_object_get(r, "met")) ? "MET" : "NOT MET",
            json_number_value(json_object_get(r, "tolerance_pct")), ttt,
            json_number_value(json_object_get(r, "energy_shed_kwh")));
    size_t k;
    json_t *j;
    json_array_foreach(json_object_get(r, "jobs"), k, j)
    {
        json_t *ok = json_object_get(j, "sla_ok");
        fprintf(out, "    %s Flex %lld: throughput %+.1f%% (allowed -%.0f%%) %s\n",
                json_string_value(json_object_get(j, "job_id")),
                (long long)json_integer_value(json_object_get(j, "tier")),
                -json_number_value(json_object_get(j, "throughput_loss_pct")),
                json_number_value(json_object_get(j, "allowed_loss_pct")),
                json_is_true(ok)    ? "ok"
                : json_is_false(ok) ? "VIOLATED"
                                    : "");
    }
    json_decref(r);
    /* safe-online against its counterfactual: the reference (equal weight
       with the tier floors) is where it starts, so the controller measured
       it in this event, for the same jobs at the same budget */
    if (isfinite(d->on_tok) && isfinite(d->on_ref) && d->on_ref > 0)
        fprintf(out,
                "  throughput under the cut: %.0f tok/s; reference (equal weight) counterfactual: "
                "%.0f tok/s (%+.1f%%)\n"
                "    both measured by the controller: safe-online after %lld rounds, and its "
                "first round at the reference allocation\n",
                d->on_tok, d->on_ref, 100 * (d->on_tok / d->on_ref - 1), d->on_round);
    else
        fprintf(out, "  throughput under the cut: no measured safe-online round (not safe-online, "
                     "or the event too short)\n");
    char url[400];
    snprintf(url, sizeof url, "%s/v1/events/%s/report.png", d->url, d->ev.id);
    pfi_http_reply pr;
    if (pfi_http_request("GET", url, NULL, NULL, 30, &pr, &e) || pr.code != 200 ||
        pfi_write_file_atomic("pfi-demo-report.png", pr.body, pr.len, &e))
        demo_fail(d, "could not fetch the chart: %s", pr.code && pr.code != 200 ? pr.body : e.msg);
    if (pr.body) pfi_http_reply_dispose(&pr);
    fprintf(out, "  report: pfi-demo-report.json, pfi-demo-report.png\n");
    return 0;
}

/* every daemon stopped; after a good run, every simulated GPU checked back at its baseline */
static int stop_all(demo *d, int ok)
{
    demo_fo_stop(d); /* --failover: ctl-b and the etcd members */
    for (int i = NAG; i >= 0; i--)
        if (d->pids[i] > 0) {
            kill(d->pids[i], SIGTERM);
            waitpid(d->pids[i], NULL, 0);
        }
    int bad = 0;
    if (ok) {
        for (int i = 0; i < NAG; i++) {
            char path[4300];
            snprintf(path, sizeof path, "%s/hw%d.json", d->dir, i);
            json_t *h = json_load_file(path, 0, NULL);
            size_t k;
            json_t *x;
            json_array_foreach(json_object_get(h, "caps_w"), k, x) bad +=
                json_number_value(x) != 700;
            json_decref(h);
        }
        fprintf(d->o->out, "  daemons stopped; %s\n",
                bad ? "SOME CAPS WERE NOT RESTORED" : "every GPU is back at its 700 W baseline");
    }
    if (!d->o->keep && !d->o->dir) {
        char rm[4200];
        snprintf(rm, sizeof rm, "rm -rf '%s'", d->dir);
        if (system(rm) != 0) {
        }
    } else {
        fprintf(d->o->out, "  logs and state: %s\n", d->dir);
    }
    return ok && !bad ? 0 : -1;
}

pfi_status pfi_demo_run(const pfi_demo_opts *o)
{
    demo *d = calloc(1, sizeof *d);
    if (!d) return PFI_ENOMEM;
    d->o = o;
    d->on_tok = d->on_ref = NAN;
    pfi_status st = PFI_EIO;
    if (prepare(d)) goto out;
    int ok = !start_agents(d) && !start_controller(d) && !post_event(d);
    if (ok) timeline(d);
    ok = ok && !report(d);
    if (!stop_all(d, ok)) st = PFI_OK;
out:
    free(d);
    return st;
}
