/* cmd_controller.c — `pfi controller handover`: a planned switchover of a
 * site whose controllers fail over on etcd (issue 45; docs/controller.md,
 * "Failover on etcd"). POST /v1/failover/handover to the controllers in
 * order (--controller URL[,URL...]): a follower answers 503 and the next
 * is tried; the leader gives up its lease once a standby is warm, and the
 * standby takes over within about a third of the TTL. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ctlconn.h"

typedef struct controller_args {
    const char *controller, *token_file;
} controller_args;

#define OPT_T controller_args
static const pfi_opt controller_options[] = {
    OPT_STRING(0, "controller", controller, "URL[,URL...]",
               "the site's controllers, tried in order (default: $PFI_CONTROLLER, else "
               "\"controller\" in the configuration file)"),
    OPT_FILENAME(0, "token-file", token_file, "FILE",
                 "an operator's token with the scope control (default: $PFI_TOKEN_FILE, else "
                 "\"token_file\" in the configuration file)"),
    OPT_HELP(), OPT_END()};
#undef OPT_T

const pfi_opts cmd_controller_opts = CLI_OPTS(
    controller, .usage = "pfi controller handover [--controller URL[,URL...]] [--token-file FILE]",
    .description =
        "handover: the leading controller hands over to a warm standby (a planned switchover,\n"
        "e.g. before maintaining its host). It refuses when no standby is warm. Prints the\n"
        "standby that will take over.\n",
    .footer = "Exit status 0 on success, 1 on failure (one line with the controller's reason),\n"
              "2 on usage errors.\n",
    .options = controller_options);

int cmd_controller(int argc, char **argv)
{
    controller_args a;
    memset(&a, 0, sizeof a);
    int first, rc = cli_parse(&cmd_controller_opts, &a, argc, argv, &first);
    if (rc >= 0) goto out;
    rc = CLI_USAGE;
    if (first >= argc || strcmp(argv[first], "handover")) {
        cli_usage_error("controller", "expected the subcommand handover");
        goto out;
    }
    if (first + 1 < argc) {
        cli_usage_error("controller", "handover takes no operands ('%s')", argv[first + 1]);
        goto out;
    }
    cli_ctl c;
    pfi_http_reply r;
    if ((rc = cli_ctl_open("controller", a.controller, a.token_file, CLI_TOKEN_NEEDED, 0, &c)) !=
        CLI_OK)
        goto out;
    if ((rc = cli_ctl_request("controller", &c, "POST", "/v1/failover/handover", "{}", &r)) !=
        CLI_OK)
        goto out;
    json_t *o = json_loadb(r.body, r.len, 0, NULL);
    const char *standby = json_string_value(json_object_get(o, "standby"));
    printf("handed over: %s takes over\n", standby ? standby : "a standby");
    json_decref(o);
    pfi_http_reply_dispose(&r);
out:
    pfi_opts_dispose(&cmd_controller_opts, &a);
    return rc;
}
