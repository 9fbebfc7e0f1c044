/* ctlconn.c — the CLI's connection to pfi-controller (ctlconn.h). */
#include "ctlconn.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

static const char *conf_path(void)
{
    const char *p = getenv("PFI_CONF");
    return p && *p ? p : PFI_CTL_CONF_DEFAULT;
}

static void set(char *dst, size_t n, const char *v)
{
    if (v && *v) snprintf(dst, n, "%s", v);
}

/* the token may travel to the controller's URL: https, loopback, or
   allowed (the option or $PFI_ALLOW_INSECURE_HTTP=1) */
static int token_url_ok1(const char *cmd, const char *url, int allow_insecure_http, int quiet)
{
    const char *env = getenv("PFI_ALLOW_INSECURE_HTTP");
    int allow = allow_insecure_http || (env && !strcmp(env, "1"));
    if (pfi_url_secret_ok(url, allow)) return 1;
    if (quiet) return 0;
    if (strncasecmp(url, "http://", 7))
        cli_error(cmd, "controller %.200s: expected http:// or https://", url);
    else
        cli_error(cmd,
                  "controller %.200s: plain http to a non-loopback host would send the token in "
                  "cleartext; use https:// or --allow-insecure-http (a trusted network only)",
                  url);
    return 0;
}

/* every URL of a comma-separated list (the controllers of a failover site) */
static int token_url_ok(const char *cmd, const char *urls, int allow_insecure_http, int quiet)
{
    char buf[sizeof((pfi_ctl_conf *)0)->controller];
    snprintf(buf, sizeof buf, "%s", urls);
    for (char *save, *u = strtok_r(buf, ",", &save); u; u = strtok_r(NULL, ",", &save))
        if (!token_url_ok1(cmd, u, allow_insecure_http, quiet)) return 0;
    return 1;
}

int cli_ctl_open(const char *cmd, const char *controller, const char *token_file, int need_token,
                 int allow_insecure_http, cli_ctl *c)
{
    memset(c, 0, sizeof *c);
    const char *url = controller ? controller : getenv("PFI_CONTROLLER");
    const char *tok = token_file ? token_file : getenv("PFI_TOKEN_FILE");
    const char *path = conf_path();
    int have_conf = 0;
    /* the file when it is needed: something not given, or https (its CA file) */
    if (!url || !*url || (need_token && (!tok || !*tok)) || !strncasecmp(url, "https:", 6)) {
        pfi_error e;
        pfi_status st = pfi_ctl_conf_read(path, &c->conf, &e);
        if (st && st != PFI_ENOTFOUND) {
            cli_error(cmd, "%s", e.msg);
            return CLI_FAIL;
        }
        have_conf = !st;
    }
    set(c->conf.controller, sizeof c->conf.controller, url);
    set(c->conf.token_file, sizeof c->conf.token_file, tok);
    if (!c->conf.controller[0]) {
        cli_error(cmd,
                  "no controller: give --controller URL, set PFI_CONTROLLER, or \"controller\" "
                  "in %s (%s)",
                  path, have_conf ? "it has none" : "absent");
        return CLI_FAIL;
    }
    if (need_token == CLI_TOKEN_NONE) return CLI_OK;
    if (need_token == CLI_TOKEN_IF_SET) { /* a read: with the token where one is configured */
        pfi_error e;
        if (c->conf.token_file[0] && token_url_ok(cmd, c->conf.controller, allow_insecure_http, 1))
            if (pfi_token_read(c->conf.token_file, c->token, sizeof c->token, &e))
                c->token[0] = '\0'; /* not readable by this user: the read goes without */
        return CLI_OK;
    }
    if (!token_url_ok(cmd, c->conf.controller, allow_insecure_http, 0)) return CLI_FAIL;
    if (!c->conf.token_file[0]) {
        cli_error(cmd,
                  "no token: give --token-file FILE, set PFI_TOKEN_FILE, or \"token_file\" in "
                  "%s (%s)",
                  path, have_conf ? "it has none" : "absent");
        return CLI_FAIL;
    }
    pfi_error e;
    if (pfi_token_read(c->conf.token_file, c->token, sizeof c->token, &e)) {
        cli_error(cmd, "%s", e.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* one controller of the list: 0 answered (any status), -1 no answer (e) */
static int request_one(const cli_ctl *c, const char *base, const char *method, const char *path,
                       const char *body, char *url, size_t n, pfi_http_reply *r, pfi_error *e)
{
    size_t k = strlen(base);
    while (k && base[k - 1] == '/') k--;
    snprintf(url, n, "%.*s%s", (int)k, base, path);
    return pfi_http_request_ca(method, url, c->token[0] ? c->token : NULL, body,
                               c->conf.ca_file[0] ? c->conf.ca_file : NULL, 30, r, e)
               ? -1
               : 0;
}

/* The controllers in order (a comma-separated list: a failover site's,
   docs/controller.md): the next is tried when one does not answer, or
   answers 503 (a follower, or one that cannot take the request now) */
int cli_ctl_request(const char *cmd, const cli_ctl *c, const char *method, const char *path,
                    const char *body, pfi_http_reply *r)
{
    char url[2048], list[sizeof c->conf.controller];
    snprintf(list, sizeof list, "%s", c->conf.controller);
    pfi_error e = {0};
    int answered = 0;
    memset(r, 0, sizeof *r);
    for (char *save, *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
        if (answered) pfi_http_reply_dispose(r); /* a 503: the next one */
        answered = !request_one(c, u, method, path, body, url, sizeof url, r, &e);
        if (answered && r->code != 503) break;
    }
    if (!answered) {
        cli_error(cmd, "%s", e.msg);
        return CLI_FAIL;
    }
    if (r->code >= 200 && r->code < 300) return CLI_OK;
    /* the controller's reason: {"error": "..."}, one line */
    char why[512] = "";
    json_t *o = json_loadb(r->body, r->len, 0, NULL);
    const char *s = json_string_value(json_object_get(o, "error"));
    snprintf(why, sizeof why, "%s", s ? s : "no reason given");
    json_decref(o);
    for (char *p = why; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    cli_error(cmd, "%s %s: HTTP %ld: %s", method, url, r->code, why);
    pfi_http_reply_dispose(r);
    return CLI_FAIL;
}
