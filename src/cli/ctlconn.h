/* ctlconn.h — how `pfi event` and `pfi status` reach pfi-controller: the
 * URL and the token file from --controller/--token-file, else
 * $PFI_CONTROLLER/$PFI_TOKEN_FILE, else the configuration file
 * (/etc/pfi/pfi.conf, $PFI_CONF; src/io/ctl_conf.h), which also gives the
 * CA file for https. The token goes over plain http only to loopback
 * (pfi_url_secret_ok, the daemons' rule) unless --allow-insecure-http or
 * $PFI_ALLOW_INSECURE_HTTP=1 says so. The URL may be a comma-separated list
 * (the controllers of a failover site): each request tries them in order,
 * the next when one does not answer or answers 503 (a follower). Errors are one line: the
 * controller's own reason (its
 * {"error": "..."} body) with the HTTP status. */
#ifndef PFI_CLI_CTLCONN_H
#define PFI_CLI_CTLCONN_H

#include "agent_client.h"
#include "ctl_conf.h"

typedef struct cli_ctl {
    pfi_ctl_conf conf;             /* the resolved URL, token file, CA file */
    char token[PFI_TOKEN_MAX + 1]; /* read when a change needs it */
} cli_ctl;

/* need_token: a change needs it (the token file is read, and a URL the
 * token may not travel to is refused unless allow_insecure_http or
 * $PFI_ALLOW_INSECURE_HTTP=1); a read sends it where one is configured (a
 * controller with require_read_scope answers reads only with a token), and
 * goes without where none is, where the URL may not carry it, or where this
 * user cannot read the file; none sends no token */
enum { CLI_TOKEN_NONE = 0, CLI_TOKEN_NEEDED = 1, CLI_TOKEN_IF_SET = 2 };
/* Resolve the controller (need_token: above). Returns CLI_OK, or CLI_FAIL
 * after printing why (naming where it looked). */
int cli_ctl_open(const char *cmd, const char *controller, const char *token_file, int need_token,
                 int allow_insecure_http, cli_ctl *c);
/* METHOD PATH [BODY] (with the token if read). CLI_OK for a 2xx answer (in
 * *r; dispose it), else CLI_FAIL after printing the one-line reason. */
int cli_ctl_request(const char *cmd, const cli_ctl *c, const char *method, const char *path,
                    const char *body, pfi_http_reply *r);

#endif
