/* cmd_demo.c — `pfi demo`: the runtime end to end on loopback, in about a
 * minute. A controller and 4 agents (8 simulated GPUs each, one job of the
 * reconstruction per node, with a predictor model fitted on the spot), all
 * on one sped-up clock; a 30% grid event; a timeline of cluster power vs
 * target and per-job throughput; the event report (JSON + PNG) in the
 * current directory; every daemon stopped and every cap checked restored. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "agent_client.h"
#include "atomic.h"
#include "clock.h"
#include "grid_event.h"

typedef struct demo_args {
    double scale, cut;
    const char *dir;
    int keep;
} demo_args;

#define OPT_T demo_args
static const pfi_opt demo_options[] = {
    OPT_DOUBLE(0, "time-scale", scale, "X", 1, 1000, "clock speed-up (default 20: 10 minutes in 30 s)"),
    OPT_DOUBLE(0, "cut", cut, "PCT", 1, 60, "the event's reduction (default 30)"),
    OPT_DIRNAME(0, "dir", dir, "DIR", "working directory for the daemons (default: a temporary one)"),
    OPT_BOOLEAN(0, "keep", keep, "keep that directory (logs, SQLite, state files)"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_demo_opts = CLI_OPTS(
    demo, .usage = "pfi demo [--time-scale X] [--cut PCT] [--dir DIR] [--keep]",
    .description = "Start pfi-controller and 4 pfi-agents (8 simulated GPUs each, running jobs of\n"
                   "the reconstruction) on loopback with one shared sped-up clock, send a grid\n"
                   "event, print a timeline (cluster GPU power vs target, per-job tokens/s), write\n"
                   "pfi-demo-report.json and pfi-demo-report.png here, stop everything and check\n"
                   "that every cap is back at its baseline. Takes about a minute.\n",
    .options = demo_options);

#define NAG 4
static const char *const groups[NAG] = {"moe-ft-qwen30ba3b-x8", "dense-pt-llama70b-x8-compile", "moe-pt-gptoss20b-x8-ep1-nocompile",
                                        "dense-ft-llama70b-x8-compile"};
static const int tiers[NAG] = {3, 3, 3, 1};

static int find_tool(const char *name, char *buf, size_t n)
{
    char self[2048];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
        self[k] = '\0';
        char *sl = strrchr(self, '/');
        if (sl) *sl = '\0';
        snprintf(buf, n, "%s/%s", self, name);
        if (access(buf, X_OK) == 0) return 0;
        snprintf(buf, n, "%s/../sbin/%s", self, name);
        if (access(buf, X_OK) == 0) return 0;
    }
    snprintf(buf, n, "%s", name); /* from PATH */
    return 0;
}

static pid_t spawn(char **argv, const char *log)
{
    pid_t p = fork();
    if (p != 0) return p;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) dup2(fd, 2), dup2(fd, 1);
    execvp(argv[0], argv);
    fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static int wait_port(const char *path, pid_t p, int *port)
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

static json_t *get_json(const char *url, const char *path)
{
    pfi_http_reply r;
    if (pfi_agent_get(url, path, 5, &r, NULL) != PFI_OK) return NULL;
    json_t *o = r.code == 200 ? json_loads(r.body, 0, NULL) : NULL;
    pfi_http_reply_free(&r);
    return o;
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

int cmd_demo(int argc, char **argv)
{
    const char *cmd = "demo";
    demo_args A = {20, 30, NULL, 0};
    int operand0, parsed = cli_parse(&cmd_demo_opts, &A, argc, argv, &operand0);
    if (parsed >= 0) return parsed;
    double scale = A.scale, cut = A.cut;
    const char *dir_opt = A.dir;
    int keep = A.keep;
    optind = operand0;
    if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    char dir[4096];
    if (dir_opt) {
        snprintf(dir, sizeof dir, "%s", dir_opt);
        if (mkdir(dir, 0755) && errno != EEXIST) {
            cli_error(cmd, "%s: %s", dir, strerror(errno));
            return CLI_FAIL;
        }
    } else {
        snprintf(dir, sizeof dir, "/tmp/pfi-demo-XXXXXX");
        if (!mkdtemp(dir)) {
            cli_error(cmd, "cannot make a temporary directory: %s", strerror(errno));
            return CLI_FAIL;
        }
    }
    char agent_bin[4096], ctl_bin[4096], epoch_s[64], scale_s[32];
    find_tool("pfi-agent", agent_bin, sizeof agent_bin);
    find_tool("pfi-controller", ctl_bin, sizeof ctl_bin);
    double epoch = floor((double)time(NULL));
    snprintf(epoch_s, sizeof epoch_s, "%.0f", epoch);
    snprintf(scale_s, sizeof scale_s, "%g", scale);
    setenv("PFI_TIME_SCALE", scale_s, 1);
    setenv("PFI_EPOCH", epoch_s, 1);
    pfi_clock_set(scale, epoch, NULL);
    pid_t pids[NAG + 1] = {0};
    int ports[NAG], cport = 0, rc = CLI_FAIL;
    char path[4300], path2[4300], model[4300], sweep[4300];
    /* a predictor for the agents: fitted on the reconstruction's headline groups */
    snprintf(sweep, sizeof sweep, "%s/recon.csv", dir);
    snprintf(model, sizeof model, "%s/model.json", dir);
    char fitcsv[4300];
    snprintf(fitcsv, sizeof fitcsv, "%s/fit.csv", dir);
    fprintf(stderr, "pfi demo: reconstruction calibrated to published tables (not measured data); fitting the predictor ...\n");
    char *sargs[] = {"synth", "--summary", "--minutes", "3", "-o", sweep, NULL};
    char *fargs[] = {"fit", "--train-where", "split=headline", "--model", model, "-o", fitcsv, sweep, NULL};
    char fitlog[4300];
    snprintf(fitlog, sizeof fitlog, "%s/fit.log", dir);
    int lfd = open(fitlog, O_WRONLY | O_CREAT | O_TRUNC, 0644), saved = dup(2);
    if (lfd >= 0) dup2(lfd, 2);
    optind = 1;
    int srr = cli_find("synth")->run(6, sargs);
    optind = 1;
    int frr = srr == CLI_OK ? cli_find("fit")->run(8, fargs) : srr;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (lfd >= 0) close(lfd);
    if (frr != CLI_OK) {
        cli_error(cmd, "could not fit the predictor");
        goto out;
    }
    char tok[4300], ctok[4300];
    snprintf(tok, sizeof tok, "%s/agent.token", dir);
    snprintf(ctok, sizeof ctok, "%s/controller.token", dir);
    if (write_token(tok) || write_token(ctok)) {
        cli_error(cmd, "cannot write token files in %s", dir);
        goto out;
    }
    for (int i = 0; i < NAG; i++) {
        char backend[10000], portf[4300], state[4300], log[4300], hw[4300];
        snprintf(hw, sizeof hw, "%s/hw%d.json", dir, i);
        snprintf(backend, sizeof backend, "sim:gpus=8,job=job%d:%s@0-7,load=5,seed=%d,steplogs=%s,state=%s", i + 1, groups[i], i + 1, dir, hw);
        snprintf(portf, sizeof portf, "%s/agent%d.port", dir, i);
        snprintf(state, sizeof state, "%s/agent%d.state.json", dir, i);
        snprintf(log, sizeof log, "%s/agent%d.log", dir, i);
        unlink(portf);
        char *av[] = {agent_bin, "--backend", backend, "--listen", "127.0.0.1:0", "--port-file", portf, "--token-file", tok, "--state-file",
                      state, "--interval", "2", "--model", model, NULL};
        pids[i] = spawn(av, log);
        if (wait_port(portf, pids[i], &ports[i])) {
            cli_error(cmd, "pfi-agent %d did not start; see %s", i, log);
            goto out;
        }
    }
    /* the controller */
    snprintf(path, sizeof path, "%s/controller.json", dir);
    json_t *ag = json_array();
    for (int i = 0; i < NAG; i++) {
        char url[64], name[16];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", ports[i]);
        snprintf(name, sizeof name, "node%d", i + 1);
        json_array_append_new(ag, json_pack("{s:s,s:s,s:s}", "name", name, "url", url, "token_file", tok));
    }
    json_t *tj = json_object();
    for (int i = 0; i < NAG; i++) {
        char id[16];
        snprintf(id, sizeof id, "job%d", i + 1);
        json_object_set_new(tj, id, json_integer(tiers[i]));
    }
    snprintf(path2, sizeof path2, "%s/controller.db", dir);
    unlink(path2);
    json_t *cfg = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:o,s:o}", "listen", "127.0.0.1:0", "token_file", ctok, "db", path2,
                            "control_period_s", 5.0, "baseline_window_s", 40.0, "ramp_s", 30.0, "ramp_down_s", 30.0, "lease_s", 30.0,
                            "agents", ag, "tiers", tj);
    if (json_dump_file(cfg, path, JSON_INDENT(1))) {
        json_decref(cfg);
        cli_error(cmd, "%s: cannot write", path);
        goto out;
    }
    json_decref(cfg);
    char cportf[4300], clog[4300];
    snprintf(cportf, sizeof cportf, "%s/controller.port", dir);
    snprintf(clog, sizeof clog, "%s/controller.log", dir);
    unlink(cportf);
    char *cv[] = {ctl_bin, "--config", path, "--port-file", cportf, NULL};
    pids[NAG] = spawn(cv, clog);
    if (wait_port(cportf, pids[NAG], &cport)) {
        cli_error(cmd, "pfi-controller did not start; see %s", clog);
        goto out;
    }
    char curl_[64];
    snprintf(curl_, sizeof curl_, "http://127.0.0.1:%d", cport);
    printf("pfi demo: controller %s (status page: open it in a browser), 4 agents x 8 simulated H200, clock x%g\n", curl_, scale);
    printf("  jobs: ");
    for (int i = 0; i < NAG; i++) printf("job%d %s (Flex %d)%s", i + 1, groups[i], tiers[i], i + 1 < NAG ? ", " : "\n");
    fflush(stdout);
    /* let the jobs load and the controller measure baselines */
    double t_ready = pfi_clock_now() + 50;
    while (pfi_clock_now() < t_ready) pfi_clock_sleep(2);
    char token[PFI_TOKEN_MAX + 1];
    pfi_error e;
    if (pfi_token_read(ctok, token, sizeof token, &e)) {
        cli_error(cmd, "%s", e.msg);
        goto out;
    }
    double start = pfi_clock_now() + 10, dur = 600;
    pfi_grid_event ev;
    memset(&ev, 0, sizeof ev);
    snprintf(ev.id, sizeof ev.id, "demo-%.0f", start);
    ev.start = start;
    ev.duration_s = dur;
    ev.kind = PFI_EV_REDUCTION;
    ev.reduction_pct = cut;
    ev.ramp_s = ev.ramp_down_s = NAN;
    char *body = pfi_grid_event_format(&ev);
    {
        char url[128];
        snprintf(url, sizeof url, "%s/v1/events", curl_);
        pfi_http_reply r;
        if (!body || pfi_http_request("POST", url, token, body, 5, &r, &e) || r.code != 201) {
            cli_error(cmd, "posting the event failed (%s %.200s); see %s", r.code ? "HTTP" : e.msg, r.body ? r.body : "", clog);
            if (r.body) pfi_http_reply_free(&r);
            free(body);
            goto out;
        }
        pfi_http_reply_free(&r);
    }
    free(body);
    printf("\n  %-8s %-11s %-11s  %s\n", "t (min)", "target kW", "measured kW", "tokens/s per job (change vs before the event)");
    double base_tok[NAG];
    for (int i = 0; i < NAG; i++) base_tok[i] = NAN;
    for (double t = start - 5; t <= start + dur + 45; t += 30) {
        while (pfi_clock_now() < t) pfi_clock_sleep(1);
        json_t *s = get_json(curl_, "/v1/status");
        if (!s) continue;
        double b = json_number_value(json_object_get(s, "budget_w")), m = json_number_value(json_object_get(s, "measured_w"));
        if (!json_is_number(json_object_get(s, "measured_w"))) {
            m = 0;
            size_t k;
            json_t *j;
            json_array_foreach(json_object_get(s, "jobs"), k, j) m += json_number_value(json_object_get(j, "power_w"));
        }
        char tgt[32] = "-";
        if (json_is_number(json_object_get(s, "budget_w"))) snprintf(tgt, sizeof tgt, "%.2f", b / 1000);
        printf("  %+7.1f  %-11s %-11.2f ", (t - start) / 60, tgt, m / 1000);
        size_t k;
        json_t *j;
        json_array_foreach(json_object_get(s, "jobs"), k, j) {
            const char *id = json_string_value(json_object_get(j, "job_id"));
            int q = id ? atoi(id + 3) - 1 : -1;
            double tp = json_number_value(json_object_get(j, "tokens_per_s"));
            if (q < 0 || q >= NAG) continue;
            if (t < start) base_tok[q] = tp;
            if (isfinite(base_tok[q]) && base_tok[q] > 0 && json_is_number(json_object_get(j, "tokens_per_s")))
                printf(" %s %.0f (%+.0f%%)", id, tp, 100 * (tp / base_tok[q] - 1));
        }
        printf("\n");
        fflush(stdout);
        json_decref(s);
    }
    /* the report, once the event has ended (its ramp back to baseline
     * included), so that it is the final one */
    {
        char ep[300];
        snprintf(ep, sizeof ep, "/v1/events/%s", ev.id);
        for (double t_end = start + dur + 300; pfi_clock_now() < t_end; pfi_clock_sleep(5)) {
            json_t *s = get_json(curl_, ep);
            const char *st = s ? json_string_value(json_object_get(s, "status")) : NULL;
            int done = st && strcmp(st, "active") && strcmp(st, "scheduled");
            json_decref(s);
            if (done) break;
        }
    }
    {
        char rp[300];
        snprintf(rp, sizeof rp, "/v1/events/%s/report", ev.id);
        json_t *r = get_json(curl_, rp);
        if (!r) {
            cli_error(cmd, "no report from the controller; see %s", clog);
            goto out;
        }
        char *rtxt = json_dumps(r, JSON_INDENT(1));
        int wfail = !rtxt || pfi_write_file_atomic("pfi-demo-report.json", rtxt, strlen(rtxt), &e) != PFI_OK;
        free(rtxt);
        if (wfail) {
            json_decref(r);
            cli_error(cmd, "pfi-demo-report.json: cannot write here");
            goto out;
        }
        char ttt[32] = "never";
        if (json_is_number(json_object_get(r, "time_to_target_s")))
            snprintf(ttt, sizeof ttt, "after %.0f s", json_number_value(json_object_get(r, "time_to_target_s")));
        printf("\n  event %s: requested %.0f%% of %.2f kW -> target %.2f kW; achieved %.1f%%; %s (tolerance %g%%); at target %s; "
               "%.2f kWh shed\n",
               ev.id, cut, json_number_value(json_object_get(r, "baseline_kw")), json_number_value(json_object_get(r, "target_kw")),
               json_number_value(json_object_get(r, "achieved_reduction_pct")), json_is_true(json_object_get(r, "met")) ? "MET" : "NOT MET",
               json_number_value(json_object_get(r, "tolerance_pct")), ttt, json_number_value(json_object_get(r, "energy_shed_kwh")));
        size_t k;
        json_t *j;
        json_array_foreach(json_object_get(r, "jobs"), k, j) {
            json_t *ok = json_object_get(j, "sla_ok");
            printf("    %s Flex %lld: throughput %+.1f%% (allowed -%.0f%%) %s\n", json_string_value(json_object_get(j, "job_id")),
                   (long long)json_integer_value(json_object_get(j, "tier")), -json_number_value(json_object_get(j, "throughput_loss_pct")),
                   json_number_value(json_object_get(j, "allowed_loss_pct")), json_is_true(ok) ? "ok" : json_is_false(ok) ? "VIOLATED" : "");
        }
        json_decref(r);
        char url[400];
        snprintf(url, sizeof url, "%s/v1/events/%s/report.png", curl_, ev.id);
        pfi_http_reply pr;
        if (pfi_http_request("GET", url, NULL, NULL, 30, &pr, &e) || pr.code != 200 ||
            pfi_write_file_atomic("pfi-demo-report.png", pr.body, pr.len, &e))
            cli_error(cmd, "could not fetch the chart: %s", pr.code && pr.code != 200 ? pr.body : e.msg);
        if (pr.body) pfi_http_reply_free(&pr);
        printf("  report: pfi-demo-report.json, pfi-demo-report.png\n");
    }
    rc = CLI_OK;
out:
    for (int i = NAG; i >= 0; i--)
        if (pids[i] > 0) {
            kill(pids[i], SIGTERM);
            waitpid(pids[i], NULL, 0);
        }
    /* every simulated GPU back at its baseline? */
    if (rc == CLI_OK) {
        int bad = 0;
        for (int i = 0; i < NAG; i++) {
            snprintf(path, sizeof path, "%s/hw%d.json", dir, i);
            json_t *h = json_load_file(path, 0, NULL);
            size_t k;
            json_t *x;
            json_array_foreach(json_object_get(h, "caps_w"), k, x) bad += json_number_value(x) != 700;
            json_decref(h);
        }
        printf("  daemons stopped; %s\n", bad ? "SOME CAPS WERE NOT RESTORED" : "every GPU is back at its 700 W baseline");
        if (bad) rc = CLI_FAIL;
    }
    if (!keep && !dir_opt) {
        char rm[4200];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        if (system(rm) != 0) {}
    } else {
        printf("  logs and state: %s\n", dir);
    }
    return rc;
}
