/* ctl_config.c — pfi-controller's configuration file (JSON; every key in
 * docs/controller.md). Unknown keys and wrong types are errors naming the
 * key (one line); paths are used as given. ctl_config_parse reads the same
 * from memory (the fuzz target tests/fuzz/fuzz_ctl_config.c). */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static int str(json_t *v, const char *key, char *dst, size_t n, char *err, size_t en)
{
    if (!json_is_string(v) || strlen(json_string_value(v)) >= n) {
        snprintf(err, en, "%s: expected a string (at most %zu characters)", key, n - 1);
        return -1;
    }
    snprintf(dst, n, "%s", json_string_value(v));
    return 0;
}

/* 1 if the URL's host is loopback: 127.0.0.0/8, [::1] or localhost. The
 * authority runs from "://" to the first '/', '?' or '#'; a URL with
 * user information ('@') is never loopback (http://127.0.0.1@host/). */
static int loopback_url(const char *url)
{
    const char *h = strstr(url, "://");
    if (!h) return 0;
    h += 3;
    size_t n = strcspn(h, "/?#");
    if (memchr(h, '@', n)) return 0;
    char host[256];
    if (n >= sizeof host) return 0;
    memcpy(host, h, n);
    host[n] = '\0';
    if (host[0] == '[') {
        char *close = strchr(host, ']');
        if (!close || (close[1] && close[1] != ':')) return 0;
        *close = '\0';
        struct in6_addr a6;
        return inet_pton(AF_INET6, host + 1, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    char *colon = strchr(host, ':');
    if (colon) *colon = '\0';
    if (!strcmp(host, "localhost")) return 1;
    struct in_addr a4;
    return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/* one entry of "agents": url, token_file, name; read_token_file; ca_file,
 * client_cert, client_key (https); allow_insecure_http. The control token
 * never goes over plain http to another host unless allowed. */
static int agent_entry(json_t *a, size_t i, ctl_cfg *c, char *e2, size_t en)
{
    char key[64];
    int rc = 0;
    if (!json_is_object(a)) {
        snprintf(e2, en, "agents[%zu]: expected an object", i);
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v) {
        char *dst = NULL;
        size_t n = 0;
        snprintf(key, sizeof key, "agents[%zu].%.20s", i, k);
        if (!strcmp(k, "url")) dst = c->agents[i].url, n = sizeof c->agents[i].url;
        else if (!strcmp(k, "token_file")) dst = c->agents[i].token_file, n = sizeof c->agents[i].token_file;
        else if (!strcmp(k, "name")) dst = c->agents[i].name, n = sizeof c->agents[i].name;
        else if (!strcmp(k, "read_token_file")) dst = c->agents[i].read_token_file, n = sizeof c->agents[i].read_token_file;
        else if (!strcmp(k, "ca_file")) dst = c->agents[i].ca_file, n = sizeof c->agents[i].ca_file;
        else if (!strcmp(k, "client_cert")) dst = c->agents[i].client_cert, n = sizeof c->agents[i].client_cert;
        else if (!strcmp(k, "client_key")) dst = c->agents[i].client_key, n = sizeof c->agents[i].client_key;
        else if (!strcmp(k, "allow_insecure_http")) {
            if (!json_is_boolean(v)) {
                snprintf(e2, en, "%s: expected true or false", key);
                return -1;
            }
            c->agents[i].allow_insecure_http = json_is_true(v);
            continue;
        } else {
            snprintf(e2, en, "%s: unknown key (url, token_file, name, read_token_file, ca_file, client_cert, client_key, allow_insecure_http)", key);
            return -1;
        }
        if ((rc = str(v, key, dst, n, e2, en))) return rc;
    }
    const char *url = c->agents[i].url;
    if (!url[0]) snprintf(e2, en, "agents[%zu].url: missing", i), rc = -1;
    else if (!c->agents[i].token_file[0]) snprintf(e2, en, "agents[%zu].token_file: missing", i), rc = -1;
    else if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        snprintf(e2, en, "agents[%zu].url: expected http:// or https://", i), rc = -1;
    else if (!strncmp(url, "http://", 7) && (c->agents[i].ca_file[0] || c->agents[i].client_cert[0] || c->agents[i].client_key[0]))
        snprintf(e2, en, "agents[%zu]: ca_file, client_cert and client_key need an https:// url", i), rc = -1;
    else if (!c->agents[i].client_cert[0] != !c->agents[i].client_key[0])
        snprintf(e2, en, "agents[%zu]: client_cert and client_key go together", i), rc = -1;
    else if (!strncmp(url, "http://", 7) && !loopback_url(url) && !c->agents[i].allow_insecure_http)
        snprintf(e2, en, "agents[%zu].url: plain http to a non-loopback host would send the token in cleartext; use https:// (with ca_file) or set allow_insecure_http: true", i), rc = -1;
    if (!rc && !c->agents[i].name[0]) snprintf(c->agents[i].name, sizeof c->agents[i].name, "agent%zu", i);
    return rc;
}

static int num(json_t *v, const char *key, double lo, double hi, double *dst, char *err, size_t en)
{
    if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi)) {
        snprintf(err, en, "%s: expected a number in %g..%g", key, lo, hi);
        return -1;
    }
    *dst = json_number_value(v);
    return 0;
}

/* errors quote keys and JSON from the input: keep them one line */
static void one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

/* the configuration in o (NULL: je says why it did not parse) */
static int config_from_json(json_t *o, const json_error_t *je, const char *path, ctl_cfg *c, char *err, size_t en)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:9480");
    snprintf(c->db, sizeof c->db, "/var/lib/pfi/controller.db");
    c->strategy = PFI_STRAT_PFI_AWARE;
    c->period_s = 5;
    c->tolerance_pct = 2;
    c->baseline_window_s = 60;
    c->lease_s = NAN;
    c->default_tier = -1;
    c->openadr_poll_s = 60;
    static const double levels[4] = {0, 10, 20, 30};
    memcpy(c->level_cut_pct, levels, sizeof levels);
    if (!o) {
        snprintf(err, en, "%s:%d: %s", path, je->line, je->text);
        one_line(err);
        return -1;
    }
    int rc = 0;
    char e2[512] = "";
    if (!json_is_object(o)) {
        snprintf(e2, sizeof e2, "expected a JSON object");
        rc = -1;
    }
    const char *k;
    json_t *v;
    if (!rc) json_object_foreach(o, k, v) {
        double d;
        if (!strcmp(k, "listen")) rc = str(v, k, c->listen, sizeof c->listen, e2, sizeof e2);
        else if (!strcmp(k, "token_file")) rc = str(v, k, c->token_file, sizeof c->token_file, e2, sizeof e2);
        else if (!strcmp(k, "tls_cert")) rc = str(v, k, c->tls_cert, sizeof c->tls_cert, e2, sizeof e2);
        else if (!strcmp(k, "tls_key")) rc = str(v, k, c->tls_key, sizeof c->tls_key, e2, sizeof e2);
        else if (!strcmp(k, "db")) rc = str(v, k, c->db, sizeof c->db, e2, sizeof e2);
        else if (!strcmp(k, "model")) rc = str(v, k, c->model, sizeof c->model, e2, sizeof e2);
        else if (!strcmp(k, "curve_model")) rc = str(v, k, c->curve_model, sizeof c->curve_model, e2, sizeof e2);
        else if (!strcmp(k, "schedule")) rc = str(v, k, c->schedule, sizeof c->schedule, e2, sizeof e2);
        else if (!strcmp(k, "log")) rc = str(v, k, c->log, sizeof c->log, e2, sizeof e2);
        else if (!strcmp(k, "strategy")) {
            pfi_strategy s;
            if (!json_is_string(v) || pfi_strategy_parse(json_string_value(v), &s) ||
                (s != PFI_STRAT_PFI_AWARE && s != PFI_STRAT_EQUAL && s != PFI_STRAT_CURVE_AWARE && s != PFI_STRAT_CLOSED_LOOP)) {
                snprintf(e2, sizeof e2, "strategy: expected pfi-aware, equal, curve-aware or closed-loop");
                rc = -1;
            } else c->strategy = s;
        } else if (!strcmp(k, "control_period_s")) rc = num(v, k, 0.05, 3600, &c->period_s, e2, sizeof e2);
        else if (!strcmp(k, "tolerance_pct")) rc = num(v, k, 0, 50, &c->tolerance_pct, e2, sizeof e2);
        else if (!strcmp(k, "non_gpu_offset_kw")) rc = num(v, k, 0, 1e7, &c->non_gpu_offset_kw, e2, sizeof e2);
        else if (!strcmp(k, "ramp_s")) rc = num(v, k, 0, 86400, &c->ramp_s, e2, sizeof e2);
        else if (!strcmp(k, "ramp_down_s")) rc = num(v, k, 0, 86400, &c->ramp_down_s, e2, sizeof e2);
        else if (!strcmp(k, "baseline_window_s")) rc = num(v, k, 0.1, 86400, &c->baseline_window_s, e2, sizeof e2);
        else if (!strcmp(k, "lease_s")) rc = num(v, k, 1, 86400, &c->lease_s, e2, sizeof e2);
        else if (!strcmp(k, "default_tier")) {
            rc = num(v, k, -1, 3, &d, e2, sizeof e2);
            if (rc == 0) c->default_tier = (int)d;
        } else if (!strcmp(k, "dry_run")) {
            if (!json_is_boolean(v)) snprintf(e2, sizeof e2, "dry_run: expected true or false"), rc = -1;
            else c->dry_run = json_is_true(v);
        } else if (!strcmp(k, "levels_pct")) {
            if (!json_is_array(v) || json_array_size(v) != 4) snprintf(e2, sizeof e2, "levels_pct: expected 4 cuts in %% for levels 0..3"), rc = -1;
            for (size_t i = 0; !rc && i < 4; i++) rc = num(json_array_get(v, i), "levels_pct[]", 0, 90, &c->level_cut_pct[i], e2, sizeof e2);
        } else if (!strcmp(k, "tiers")) {
            const char *jk;
            json_t *jv;
            if (!json_is_object(v)) snprintf(e2, sizeof e2, "tiers: expected {\"job id\": tier 0..3}"), rc = -1;
            else json_object_foreach(v, jk, jv) if (!json_is_integer(jv) || json_integer_value(jv) < 0 || json_integer_value(jv) > 3) {
                snprintf(e2, sizeof e2, "tiers.%s: expected a tier 0..3", jk);
                rc = -1;
                break;
            }
            if (!rc) c->tiers = json_incref(v);
        } else if (!strcmp(k, "openadr")) {
            json_t *pu = json_object_get(v, "poll_url"), *ps = json_object_get(v, "poll_s");
            if (!json_is_object(v)) snprintf(e2, sizeof e2, "openadr: expected {\"poll_url\", \"poll_s\"}"), rc = -1;
            if (!rc && pu) rc = str(pu, "openadr.poll_url", c->openadr_poll_url, sizeof c->openadr_poll_url, e2, sizeof e2);
            if (!rc && ps) rc = num(ps, "openadr.poll_s", 1, 86400, &c->openadr_poll_s, e2, sizeof e2);
        } else if (!strcmp(k, "agents")) {
            if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > CTL_MAX_AGENTS) {
                snprintf(e2, sizeof e2, "agents: expected 1..%d agents", CTL_MAX_AGENTS);
                rc = -1;
            }
            size_t i;
            json_t *a;
            if (!rc) json_array_foreach(v, i, a) {
                if ((rc = agent_entry(a, i, c, e2, sizeof e2))) break;
                c->nagents++;
            }
        } else {
            snprintf(e2, sizeof e2, "%s: unknown key", k);
            rc = -1;
        }
        if (rc) break;
    }
    if (!rc && c->nagents == 0) snprintf(e2, sizeof e2, "agents: missing"), rc = -1;
    if (isnan(c->lease_s)) c->lease_s = fmax(3 * c->period_s, 3);
    if (!rc && c->lease_s < 2 * c->period_s) snprintf(e2, sizeof e2, "lease_s: must be at least two control periods"), rc = -1;
    json_decref(o);
    if (rc) {
        json_decref(c->tiers); /* not kept when the configuration is refused */
        c->tiers = NULL;
        snprintf(err, en, "%s: %s", path, e2);
        one_line(err);
    }
    return rc;
}

int ctl_config_load(const char *path, ctl_cfg *c, char *err, size_t en)
{
    json_error_t je;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    return config_from_json(o, &je, path, c, err, en);
}

int ctl_config_parse(const char *text, size_t len, const char *name, ctl_cfg *c, char *err, size_t en)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    return config_from_json(o, &je, name, c, err, en);
}
