/* cmd_event.c — `pfi event ACTION`: grid events on pfi-controller without
 * hand-written JSON (issue 16 item 3). The actions share one option table
 * (help, man page and completions are generated from it); an option given
 * to an action it does not apply to is a usage error naming both.
 *   create   POST /v1/events (the canonical JSON; --dry-run prints it)
 *   ls       GET  /v1/events as rows (id, source, status, start, end, target, by)
 *   show     GET  /v1/events/ID
 *   cancel   DELETE /v1/events/ID
 *   report   GET  /v1/events/ID/report, or report.png into --png FILE */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "cli.h"
#include "clock.h"
#include "ctlconn.h"
#include "event_kind.h"
#include "grid_event.h"

typedef struct event_args {
    cli_out out;
    const char *controller, *token_file;
    double reduction, target_kw;
    int level, dry_run, allow_insecure_http;
    const char *start, *duration, *ramp, *ramp_down, *id, *png;
} event_args;

#define OPT_T event_args
static const pfi_opt event_options[] = {
    OPT_DOUBLE(0, "reduction", reduction, "PCT", 0, 90,
               "create: cut the measured baseline by PCT percent (0, 90]"),
    OPT_DOUBLE(0, "target-kw", target_kw, "KW", 0, 1e6, "create: a GPU-power target in kW"),
    OPT_INTEGER(0, "level", level, "N", 0, 3, "create: a grid level 0..3 (a configured cut)"),
    OPT_STRING(0, "start", start, "now|TIME", "create: when it starts: now, or RFC 3339"),
    OPT_STRING(0, "duration", duration, "D",
               "create: how long: ISO 8601 (PT1H, P1D) or 90s, 5m, 1h, 1h30m"),
    OPT_STRING(0, "ramp", ramp, "D",
               "create: ramp down to the target over D (default: the "
               "controller's configuration)"),
    OPT_STRING(0, "ramp-down", ramp_down, "D",
               "create: ramp back up over D after the end (default: the configuration)"),
    OPT_STRING(0, "id", id, "ID",
               "create: the event's id (1..63 of [A-Za-z0-9._-]; default: the controller's)"),
    OPT_BOOLEAN(0, "dry-run", dry_run,
                "create: print the JSON it would POST and exit, contacting no one"),
    OPT_FILENAME(0, "png", png, "FILE", "report: write the chart to FILE, atomically"),
    OPT_STRING(0, "controller", controller, "URL",
               "the controller (default: $PFI_CONTROLLER, else \"controller\" in the "
               "configuration file)"),
    OPT_FILENAME(0, "token-file", token_file, "FILE",
                 "its bearer token, for create and cancel (default: $PFI_TOKEN_FILE, else "
                 "\"token_file\" in the configuration file)"),
    OPT_BOOLEAN(0, "allow-insecure-http", allow_insecure_http,
                "create, cancel: send the token over plain http to a host other than loopback "
                "(a trusted network only; also $PFI_ALLOW_INSECURE_HTTP=1)"),
    OPT_INCLUDE(cli_out_options, out, "ls: " CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_event_opts = CLI_OPTS(
    event,
    .usage = "pfi event create (--reduction PCT | --target-kw KW | --level N) --start now|TIME\n"
             "                 --duration D [--ramp D] [--ramp-down D] [--id ID] [--dry-run]\n"
             "pfi event ls [--format csv|json|table] [-o FILE]\n"
             "pfi event show ID\n"
             "pfi event cancel ID\n"
             "pfi event report ID [--png FILE]",
    .description =
        "Grid events on pfi-controller (docs/controller.md):\n"
        "  create   schedule one (exactly one of --reduction, --target-kw, --level); prints\n"
        "           its id\n"
        "  ls       every event: id, source, status, start, end, target, by (who made it)\n"
        "  show     one event as the controller's JSON\n"
        "  cancel   cancel one (scheduled or running)\n"
        "  report   its measurement and verification report (JSON), or the chart (--png)\n"
        "The controller and its token: --controller and --token-file, else $PFI_CONTROLLER\n"
        "and $PFI_TOKEN_FILE, else the JSON file /etc/pfi/pfi.conf ($PFI_CONF) with keys\n"
        "controller, token_file and ca_file (the CA of an https controller). Reads need\n"
        "no token; create and cancel do (a file of mode 0600), and send it over plain http\n"
        "only to loopback unless --allow-insecure-http (or $PFI_ALLOW_INSECURE_HTTP=1).\n",
    .footer = "Exit status 0 on success, 1 on failure (one line with the controller's reason),\n"
              "2 on usage errors.\n",
    .options = event_options, .operands = PFI_OPERANDS_ACTION,
    .actions = "create|ls|show|cancel|report");

/* the options an action accepts (beyond --controller, --token-file, --help) */
static int check_applies(const char *act, const event_args *a)
{
    int create = !strcmp(act, "create"), ls = !strcmp(act, "ls"), report = !strcmp(act, "report"),
        cancel = !strcmp(act, "cancel");
    struct {
        const char *name;
        int given, ok;
    } o[] = {{"--reduction", !isnan(a->reduction), create},
             {"--target-kw", !isnan(a->target_kw), create},
             {"--level", a->level >= 0, create},
             {"--start", a->start != NULL, create},
             {"--duration", a->duration != NULL, create},
             {"--ramp", a->ramp != NULL, create},
             {"--ramp-down", a->ramp_down != NULL, create},
             {"--id", a->id != NULL, create},
             {"--dry-run", a->dry_run, create},
             {"--png", a->png != NULL, report},
             {"--allow-insecure-http", a->allow_insecure_http, create || cancel},
             {"--format", a->out.fmt_set, ls},
             {"--output", a->out.path != NULL, ls}};
    for (size_t i = 0; i < sizeof o / sizeof *o; i++)
        if (o[i].given && !o[i].ok)
            return cli_usage_error("event", "%s does not apply to 'event %s'", o[i].name, act);
    return 0;
}

static int duration_opt(const char *name, const char *arg, double *s)
{
    if (pfi_duration_arg(arg, s) == 0) return 0;
    return cli_usage_error("event",
                           "%s: '%s' is not a duration (ISO 8601 such as PT1H, or 90s, 5m, 1h30m)",
                           name, arg);
}

static int event_create(const event_args *a)
{
    /* the kinds create makes (event_kind.c): a new kind adds its option and a row here */
    const struct {
        pfi_event_kind kind;
        double v; /* NaN: not given */
    } kind[] = {{PFI_EV_REDUCTION, a->reduction},
                {PFI_EV_TARGET_KW, a->target_kw},
                {PFI_EV_LEVEL, a->level >= 0 ? a->level : NAN}};
    int kinds = 0, which = 0;
    for (int k = 0; k < (int)(sizeof kind / sizeof *kind); k++)
        if (!isnan(kind[k].v)) kinds++, which = k;
    if (kinds != 1)
        return cli_usage_error("event", "give exactly one of --reduction, --target-kw, --level");
    if (!a->start) return cli_usage_error("event", "create needs --start now|TIME");
    if (!a->duration) return cli_usage_error("event", "create needs --duration D");
    pfi_grid_event ev;
    memset(&ev, 0, sizeof ev);
    snprintf(ev.id, sizeof ev.id, "%s", a->id ? a->id : "x"); /* no --id: the controller's */
    if (a->id && strlen(a->id) >= sizeof ev.id)
        return cli_usage_error("event", "--id: at most 63 characters");
    pfi_error e;
    if (!strcmp(a->start, "now")) {
        if (pfi_clock_from_env(&e)) {
            cli_error("event", "%s", e.msg);
            return CLI_FAIL;
        }
        ev.start = floor(pfi_clock_now());
    } else if (pfi_rfc3339_parse(a->start, &ev.start)) {
        return cli_usage_error("event",
                               "--start: '%s' is not now or an RFC 3339 time such as "
                               "2026-12-02T18:00:00Z",
                               a->start);
    }
    if (duration_opt("--duration", a->duration, &ev.duration_s)) return CLI_USAGE;
    ev.ramp_s = ev.ramp_down_s = NAN;
    if (a->ramp && duration_opt("--ramp", a->ramp, &ev.ramp_s)) return CLI_USAGE;
    if (a->ramp_down && duration_opt("--ramp-down", a->ramp_down, &ev.ramp_down_s))
        return CLI_USAGE;
    pfi_grid_event_set(&ev, kind[which].kind, kind[which].v);
    if (pfi_grid_event_check(&ev, &e))
        return cli_usage_error("event", "%s", e.msg); /* names the canonical field */
    char *text = pfi_grid_event_format(&ev);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (o && !a->id) json_object_del(o, "id");
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!body) {
        cli_error("event", "out of memory");
        return CLI_FAIL;
    }
    if (a->dry_run) {
        printf("%s\n", body);
        free(body);
        return CLI_OK;
    }
    cli_ctl c;
    pfi_http_reply r;
    int rc = cli_ctl_open("event", a->controller, a->token_file, CLI_TOKEN_NEEDED,
                          a->allow_insecure_http, &c);
    if (rc == CLI_OK) rc = cli_ctl_request("event", &c, "POST", "/v1/events", body, &r);
    free(body);
    if (rc != CLI_OK) return rc;
    json_t *got = json_loadb(r.body, r.len, 0, NULL);
    const char *id = json_string_value(json_object_get(got, "id"));
    printf("%s\n", id ? id : "");
    json_decref(got);
    pfi_http_reply_dispose(&r);
    return CLI_OK;
}

/* "30%", "120 kW", "level 2" */
static void target_text(json_t *ev, char *buf, size_t n)
{
    snprintf(buf, n, "-");
    for (size_t k = 0; k < pfi_event_nkinds; k++) {
        json_t *v = json_object_get(ev, pfi_event_kinds[k].name);
        if (json_is_number(v)) {
            snprintf(buf, n, pfi_event_kinds[k].show, json_number_value(v));
            return;
        }
    }
}

static int event_ls(const event_args *a, const cli_ctl *c)
{
    pfi_http_reply r;
    /* /v1/status: the events as /v1/events has them, with their verdicts */
    int rc = cli_ctl_request("event", c, "GET", "/v1/status", NULL, &r);
    if (rc != CLI_OK) return rc;
    json_t *o = json_loadb(r.body, r.len, 0, NULL);
    pfi_http_reply_dispose(&r);
    json_t *evs = json_object_get(o, "events");
    if (!json_is_array(evs)) {
        json_decref(o);
        cli_error("event", "the controller's /v1/status has no \"events\": [...]");
        return CLI_FAIL;
    }
    const char *names[] = {"id",     "source", "status",       "start",  "end",
                           "target", "by",     "cancelled_by", "verdict"};
    pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT,
                            PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT,
                            PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT};
    pfi_rows *rows = pfi_rows_new(9, names, types);
    if (!rows) {
        json_decref(o);
        cli_error("event", "out of memory");
        return CLI_FAIL;
    }
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev)
    {
        const char *start = json_string_value(json_object_get(ev, "start"));
        double t0, dur = json_number_value(json_object_get(ev, "duration_s"));
        char end[40] = "until cancelled", target[64];
        if (start && !pfi_rfc3339_parse(start, &t0) && json_object_get(ev, "duration_s"))
            pfi_rfc3339_format(t0 + dur, end, sizeof end);
        target_text(ev, target, sizeof target);
        size_t row = pfi_rows_add(rows);
        pfi_rows_text(rows, row, 0, json_string_value(json_object_get(ev, "id")));
        pfi_rows_text(rows, row, 1, json_string_value(json_object_get(ev, "source")));
        pfi_rows_text(rows, row, 2, json_string_value(json_object_get(ev, "status")));
        pfi_rows_text(rows, row, 3, start);
        pfi_rows_text(rows, row, 4, end);
        pfi_rows_text(rows, row, 5, target);
        /* who made it (the controller's operator, "grid", "schedule"; "-": not known) */
        const char *by = json_string_value(json_object_get(ev, "created_by"));
        pfi_rows_text(rows, row, 6, by ? by : "-");
        const char *cby = json_string_value(json_object_get(ev, "cancelled_by"));
        pfi_rows_text(rows, row, 7, cby ? cby : "-");
        const char *v = json_string_value(json_object_get(ev, "verdict"));
        pfi_rows_text(rows, row, 8, v ? v : "-");
        if (v && (!strcmp(v, "nothing to shed") || !strcmp(v, "not applicable")))
            fprintf(stderr, "pfi event: warning: event %s: %s\n",
                    json_string_value(json_object_get(ev, "id")), v);
    }
    json_decref(o);
    rc = cli_save_rows("event", rows, &a->out);
    pfi_rows_free(rows);
    return rc;
}

static int event_one(const char *act, const event_args *a, const cli_ctl *c, const char *id)
{
    char path[256];
    const char *method = "GET", *tail = "";
    if (!strcmp(act, "cancel")) method = "DELETE";
    else if (!strcmp(act, "report")) tail = a->png ? "/report.png" : "/report";
    /* ids are [A-Za-z0-9._-]: nothing to escape, and nothing else is sent */
    for (const char *p = id; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p))
            return cli_usage_error("event", "'%s' is not an event id ([A-Za-z0-9._-])", id);
    if (strlen(id) > 63) return cli_usage_error("event", "'%s' is not an event id (too long)", id);
    snprintf(path, sizeof path, "/v1/events/%s%s", id, tail);
    pfi_http_reply r;
    int rc = cli_ctl_request("event", c, method, path, NULL, &r);
    if (rc != CLI_OK) return rc;
    if (a->png) {
        pfi_error e;
        if (pfi_write_file_atomic(a->png, r.body, r.len, &e)) {
            cli_error("event", "%s", e.msg);
            rc = CLI_FAIL;
        }
    } else if (!strcmp(act, "cancel")) {
        /* the controller answers with the event after the cancel: a
           scheduled one is "cancelled", a running one still "active" while
           its caps ramp back (it becomes "cancelled" when that ends); say
           what happened, not the bare status */
        json_t *o = json_loadb(r.body, r.len, 0, NULL);
        const char *st = json_string_value(json_object_get(o, "status"));
        const char *by = json_string_value(json_object_get(o, "accepted_by"));
        const char *leader = json_string_value(json_object_get(o, "leader"));
        if (by) /* a follower committed it for the leader (202; ctl_inbox.h) */
            printf("%s: the cancel committed by %s for the leader %s, who cancels it at its next "
                   "period\n",
                   id, by, leader ? leader : "?");
        else if (st && !strcmp(st, "active")) printf("%s cancelled: ending (ramp down)\n", id);
        else if (!st || !strcmp(st, "cancelled")) printf("%s cancelled\n", id);
        else printf("%s cancelled (status %s)\n", id, st);
        json_decref(o);
    } else {
        /* the controller's JSON, indented */
        json_t *o = json_loadb(r.body, r.len, 0, NULL);
        char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
        if (s) printf("%s\n", s);
        else fwrite(r.body, 1, r.len, stdout);
        free(s);
        json_decref(o);
    }
    pfi_http_reply_dispose(&r);
    return rc;
}

static int event_run(event_args *a, char **ops, int nops)
{
    static const char *const acts[] = {"create", "ls", "show", "cancel", "report"};
    if (nops < 1) return cli_usage_error("event", "no action (create, ls, show, cancel, report)");
    const char *act = ops[0];
    size_t k = 0;
    while (k < 5 && strcmp(act, acts[k])) k++;
    if (k == 5) {
        const char *s = pfi_opts_suggest(act, acts, 5);
        if (s) return cli_usage_error("event", "unknown action '%s'; did you mean '%s'?", act, s);
        return cli_usage_error("event", "unknown action '%s' (create, ls, show, cancel, report)",
                               act);
    }
    if (check_applies(act, a)) return CLI_USAGE;
    int want = k >= 2 ? 2 : 1;
    if (nops != want)
        return want == 2 ? cli_usage_error("event", "'event %s' needs one event ID", act)
                         : cli_usage_error("event", "'event %s' takes no operands", act);
    if (k == 0) return event_create(a);
    cli_ctl c;
    int rc = cli_ctl_open("event", a->controller, a->token_file,
                          k == 3 ? CLI_TOKEN_NEEDED : CLI_TOKEN_IF_SET, a->allow_insecure_http, &c);
    if (rc != CLI_OK) return rc;
    return k == 1 ? event_ls(a, &c) : event_one(act, a, &c, ops[1]);
}

int cmd_event(int argc, char **argv)
{
    event_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    a.reduction = a.target_kw = NAN;
    a.level = -1;
    int first, rc = cli_parse(&cmd_event_opts, &a, argc, argv, &first);
    if (rc < 0) rc = event_run(&a, argv + first, argc - first);
    pfi_opts_dispose(&cmd_event_opts, &a);
    return rc;
}
