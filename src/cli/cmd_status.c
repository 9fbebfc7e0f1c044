/* cmd_status.c — `pfi status`: the cluster as pfi-controller sees it (GET
 * /v1/status): target vs measured power, agents, active events, jobs. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctlconn.h"

typedef struct status_args {
    cli_out out;
    const char *controller, *token_file;
} status_args;

#define OPT_T status_args
static const pfi_opt status_options[] = {
    OPT_STRING(0, "controller", controller, "URL",
               "the controller (default: $PFI_CONTROLLER, else \"controller\" in the "
               "configuration file)"),
    OPT_FILENAME(0, "token-file", token_file, "FILE",
                 "not needed (reads are open); accepted for symmetry with pfi event"),
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC), OPT_HELP(), OPT_END()};
#undef OPT_T

const pfi_opts cmd_status_opts = CLI_OPTS(
    status, .usage = "pfi status [--controller URL] [--format csv|json|table] [-o FILE]",
    .description =
        "The cluster as pfi-controller sees it: its power target (the budget this period)\n"
        "against the measured GPU power, the agents up, the events not yet done, and one\n"
        "line per job. --format json prints the controller's /v1/status as it is; csv\n"
        "(or -o FILE) the jobs only. The controller comes from --controller,\n"
        "$PFI_CONTROLLER or /etc/pfi/pfi.conf ($PFI_CONF), as for pfi event.\n",
    .footer = "Exit status 0 on success, 1 on failure (one line with the controller's reason),\n"
              "2 on usage errors.\n",
    .options = status_options);

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *text(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static pfi_rows *job_rows(json_t *st)
{
    const char *names[] = {"job_id", "tier",    "gpus",         "power_w",
                           "cap_w",  "alloc_w", "tokens_per_s", "pfi_predicted"};
    pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_INT, PFI_CELL_NUM,
                            PFI_CELL_NUM,  PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM};
    pfi_rows *r = pfi_rows_new(8, names, types);
    if (!r) return NULL;
    for (size_t k = 3; k < 8; k++) pfi_rows_table_fmt(r, k, k == 7 ? "%.3f" : "%.0f");
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(st, "jobs"), i, j)
    {
        size_t row = pfi_rows_add(r);
        pfi_rows_text(r, row, 0, text(j, "job_id"));
        pfi_rows_int(r, row, 1, (long long)num(j, "tier"));
        pfi_rows_int(r, row, 2, (long long)num(j, "gpus"));
        pfi_rows_num(r, row, 3, num(j, "power_w"));
        pfi_rows_num(r, row, 4, num(j, "cap_w"));
        pfi_rows_num(r, row, 5, num(j, "alloc_w"));
        pfi_rows_num(r, row, 6, num(j, "tokens_per_s"));
        pfi_rows_num(r, row, 7, num(j, "pfi_predicted"));
    }
    return r;
}

static void watts(FILE *f, const char *label, double w)
{
    if (isfinite(w)) fprintf(f, "%-12s %.0f W\n", label, w);
    else fprintf(f, "%-12s -\n", label);
}

static int summary(const cli_ctl *c, json_t *st, const status_args *a)
{
    pfi_rows *r = job_rows(st);
    if (!r) {
        cli_error("status", "out of memory");
        return CLI_FAIL;
    }
    printf("controller   %s\n", c->conf.controller);
    printf("event        %s%s\n", json_is_true(json_object_get(st, "active")) ? "active" : "none",
           json_is_true(json_object_get(st, "dry_run")) ? " (dry run)" : "");
    int active = json_is_true(json_object_get(st, "active"));
    double target = num(st, "budget_w"), meas = num(st, "measured_w");
    if (isfinite(target) || active) watts(stdout, "target", target);
    else printf("%-12s none (no event)\n", "target");
    if (isfinite(meas) || active) watts(stdout, "measured", meas);
    else {
        /* outside events the controller keeps no cluster total: the jobs'
           power, as pfi_ctl_measured_watts on its /metrics */
        double sum = 0;
        size_t i, n = 0;
        json_t *j;
        json_array_foreach(json_object_get(st, "jobs"), i, j)
        {
            double w = num(j, "power_w");
            if (isfinite(w)) sum += w, n++;
        }
        if (n) printf("%-12s %.0f W (the jobs' GPUs; no event)\n", "measured", sum);
        else printf("%-12s - (no jobs; no event)\n", "measured");
    }
    printf("agents       %.0f/%.0f up\n", num(st, "agents_up"), num(st, "agents_total"));
    size_t i, shown = 0;
    json_t *e;
    json_array_foreach(json_object_get(st, "events"), i, e)
    {
        const char *s = text(e, "status");
        if (!strcmp(s, "done") || !strcmp(s, "cancelled")) continue;
        printf("%s %s %s start %s\n", shown++ ? "            " : "events      ", text(e, "id"), s,
               text(e, "start"));
    }
    if (!shown) printf("events       none scheduled or running\n");
    /* an event that could be neither met nor missed: said, not hidden */
    json_array_foreach(json_object_get(st, "events"), i, e)
    {
        const char *v = text(e, "verdict");
        if (!strcmp(v, "nothing to shed") || !strcmp(v, "not applicable"))
            printf("warning: event %s (%s): %s\n", text(e, "id"), text(e, "status"), v);
    }
    printf("\n");
    fflush(stdout);
    cli_out o = a->out;
    o.fmt = PFI_FMT_TABLE, o.fmt_set = 1;
    int rc = cli_save_rows("status", r, &o);
    pfi_rows_free(r);
    return rc;
}

int cmd_status(int argc, char **argv)
{
    status_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    int first, rc = cli_parse(&cmd_status_opts, &a, argc, argv, &first);
    if (rc >= 0) goto out;
    rc = CLI_USAGE;
    if (first < argc) {
        cli_usage_error("status", "takes no operands ('%s')", argv[first]);
        goto out;
    }
    cli_ctl c;
    pfi_http_reply r;
    if ((rc = cli_ctl_open("status", a.controller, NULL, CLI_TOKEN_IF_SET, 0, &c)) != CLI_OK)
        goto out;
    if ((rc = cli_ctl_request("status", &c, "GET", "/v1/status", NULL, &r)) != CLI_OK) goto out;
    json_t *st = json_loadb(r.body, r.len, 0, NULL);
    if (!json_is_object(st)) {
        cli_error("status", "the controller's /v1/status is not a JSON object");
        rc = CLI_FAIL;
    } else if (a.out.fmt_set && a.out.fmt == PFI_FMT_JSON) {
        rc = cli_save_body("status", r.body, r.len, &a.out);
    } else if ((a.out.fmt_set && a.out.fmt == PFI_FMT_CSV) ||
               (a.out.path && strcmp(a.out.path, "-"))) { /* a file: the jobs as rows */
        pfi_rows *rows = job_rows(st);
        rc = rows ? cli_save_rows("status", rows, &a.out) : CLI_FAIL;
        pfi_rows_free(rows);
    } else {
        rc = summary(&c, st, &a);
    }
    json_decref(st);
    pfi_http_reply_dispose(&r);
out:
    pfi_opts_dispose(&cmd_status_opts, &a);
    return rc;
}
