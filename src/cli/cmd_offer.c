/* cmd_offer.c — `pfi offer`: what the site can shed now and at what cost to
 * its work (GET /v1/offer, issue 44): one row per cost, the kW offered
 * (what remains during an event), the whole offer, and the share backed by
 * measured curves; with --jobs, each job's part of the 5% offer. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctlconn.h"

typedef struct offer_args {
    cli_out out;
    const char *controller, *token_file;
    int jobs;
} offer_args;

#define OPT_T offer_args
static const pfi_opt offer_options[] = {
    OPT_STRING(0, "controller", controller, "URL",
               "the controller (default: $PFI_CONTROLLER, else \"controller\" in the "
               "configuration file)"),
    OPT_FILENAME(0, "token-file", token_file, "FILE",
                 "not needed (reads are open); accepted for symmetry with pfi event"),
    OPT_BOOLEAN(0, "jobs", jobs, "one row per job: its baseline and its part of the 5% offer"),
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_offer_opts = CLI_OPTS(
    offer, .usage = "pfi offer [--controller URL] [--jobs] [--format csv|json|table] [-o FILE]",
    .description =
        "What the site can shed now, at an expected loss of throughput of at most 0.5, 1, 2,\n"
        "5 and 10%: the controller's offer (GET /v1/offer), computed every offer.interval_s\n"
        "from each job's measured curve where it has one and a conservative bound elsewhere\n"
        "(docs/controller.md, \"The offer\"). kw is what remains to offer (during an event,\n"
        "less what is already shed), total_kw the whole offer, measured_share the part of it\n"
        "backed by measured curves. --format json prints /v1/offer as it is.\n",
    .footer = "Exit status 0 on success, 1 on failure (one line with the controller's reason;\n"
              "none yet: the controller has not computed an offer), 2 on usage errors.\n",
    .options = offer_options);

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static pfi_rows *offer_rows(json_t *of)
{
    const char *names[] = {"max_loss_pct", "kw", "total_kw", "measured_share"};
    pfi_celltype types[] = {PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM};
    pfi_rows *r = pfi_rows_new(4, names, types);
    if (!r) return NULL;
    pfi_rows_table_fmt(r, 0, "%.1f");
    pfi_rows_table_fmt(r, 1, "%.2f");
    pfi_rows_table_fmt(r, 2, "%.2f");
    pfi_rows_table_fmt(r, 3, "%.2f");
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(of, "offers"), i, o)
    {
        size_t row = pfi_rows_add(r);
        for (size_t k = 0; k < 4; k++) pfi_rows_num(r, row, k, num(o, names[k]));
    }
    return r;
}

static pfi_rows *job_rows(json_t *of)
{
    const char *names[] = {"job_id", "tier", "base_kw", "shed_kw", "measured"};
    pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_INT};
    pfi_rows *r = pfi_rows_new(5, names, types);
    if (!r) return NULL;
    pfi_rows_table_fmt(r, 2, "%.2f");
    pfi_rows_table_fmt(r, 3, "%.2f");
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(of, "jobs"), i, j)
    {
        size_t row = pfi_rows_add(r);
        const char *id = json_string_value(json_object_get(j, "id"));
        pfi_rows_text(r, row, 0, id ? id : "");
        pfi_rows_int(r, row, 1, (long long)num(j, "tier"));
        pfi_rows_num(r, row, 2, num(j, "base_kw"));
        pfi_rows_num(r, row, 3, num(j, "shed_kw"));
        pfi_rows_int(r, row, 4, json_is_true(json_object_get(j, "measured")));
    }
    return r;
}

/* how long the offer lasts and the next hours' 5% offer (the table's head) */
static void forecast_lines(json_t *of)
{
    json_t *ss = json_object_get(of, "sustain_s"), *f = json_object_get(of, "forecast");
    if (json_is_number(ss))
        printf("sustained    %.0f min (until jobs with 5%% of the shed reach their time limits)\n",
               json_number_value(ss) / 60);
    else if (f) printf("sustained    no known time limit ends it\n");
    if (!json_is_object(f)) return;
    const char *src = json_string_value(json_object_get(f, "source"));
    printf("forecast     5%% offer each hour from now (%s):", src ? src : "?");
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(f, "points"), i, p)
        printf(" %.2f", json_number_value(json_array_get(json_object_get(p, "total_kw"), 3)));
    printf(" kW\n");
}

static int show(json_t *of, const offer_args *a, const char *body, size_t len)
{
    if (a->out.fmt_set && a->out.fmt == PFI_FMT_JSON)
        return cli_save_body("offer", body, len, &a->out);
    int table = !(a->out.fmt_set || (a->out.path && strcmp(a->out.path, "-")));
    if (table) {
        printf("baseline     %.2f kW (steerable GPUs x facility factor %g)\n",
               num(of, "baseline_kw"), num(of, "facility_factor"));
        printf("floors       %.2f kW (a %.0f%% cut: every job at its floor)\n",
               num(of, "floors_kw"), num(of, "floors_cut_pct"));
        if (json_is_true(json_object_get(of, "event_active")))
            printf("shed now     %.2f kW (an event runs: kw is what remains)\n",
                   num(of, "shed_now_kw"));
        forecast_lines(of);
        printf("computed     %s\n\n", json_string_value(json_object_get(of, "computed_at")));
        fflush(stdout);
    }
    pfi_rows *r = a->jobs ? job_rows(of) : offer_rows(of);
    int rc = r ? cli_save_rows("offer", r, &a->out) : CLI_FAIL;
    pfi_rows_free(r);
    return rc;
}

int cmd_offer(int argc, char **argv)
{
    offer_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    int first, rc = cli_parse(&cmd_offer_opts, &a, argc, argv, &first);
    if (rc >= 0) goto out;
    rc = CLI_USAGE;
    if (first < argc) {
        cli_usage_error("offer", "takes no operands ('%s')", argv[first]);
        goto out;
    }
    cli_ctl c;
    pfi_http_reply r;
    if ((rc = cli_ctl_open("offer", a.controller, NULL, CLI_TOKEN_IF_SET, 0, &c)) != CLI_OK)
        goto out;
    if ((rc = cli_ctl_request("offer", &c, "GET", "/v1/offer", NULL, &r)) != CLI_OK) goto out;
    json_t *of = json_loadb(r.body, r.len, JSON_DECODE_ANY, NULL);
    if (json_is_null(of)) {
        cli_error("offer",
                  "the controller has no offer yet (offer.interval_s 0, or no period yet)");
        rc = CLI_FAIL;
    } else if (!json_is_object(of)) {
        cli_error("offer", "the controller's /v1/offer is not a JSON object");
        rc = CLI_FAIL;
    } else {
        rc = show(of, &a, r.body, r.len);
    }
    json_decref(of);
    pfi_http_reply_dispose(&r);
out:
    pfi_opts_dispose(&cmd_offer_opts, &a);
    return rc;
}
