/* ctl_config.c — pfi-controller's configuration file (JSON; every key in
 * docs/controller.md), read through one key table (json_obj.h). Unknown
 * keys and wrong types are errors naming the key (one line); paths are used
 * as given. ctl_config_parse reads the same from memory (the fuzz target
 * tests/fuzz/fuzz_ctl_config.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "job_id.h"
#include "json_obj.h"
#include "strategy.h"
#include "vec.h"

/* the checks between an agent's keys; its default name */
static pfi_status agent_check(ctl_cfg *c, size_t i, pfi_error *err)
{
    const char *url = c->agents[i].url;
    pfi_status st = PFI_OK;
    if (!url[0]) st = pfi_errorf(err, PFI_EINVAL, "agents[%zu].url: missing", i);
    else if (!c->agents[i].token_file[0])
        st = pfi_errorf(err, PFI_EINVAL, "agents[%zu].token_file: missing", i);
    else if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        st = pfi_errorf(err, PFI_EINVAL, "agents[%zu].url: expected http:// or https://", i);
    else if (!strncmp(url, "http://", 7) &&
             (c->agents[i].ca_file[0] || c->agents[i].client_cert[0] || c->agents[i].client_key[0]))
        st = pfi_errorf(err, PFI_EINVAL,
                        "agents[%zu]: ca_file, client_cert and client_key need an https:// url", i);
    else if (!c->agents[i].client_cert[0] != !c->agents[i].client_key[0])
        st = pfi_errorf(err, PFI_EINVAL, "agents[%zu]: client_cert and client_key go together", i);
    else if (!pfi_url_secret_ok(url, c->agents[i].allow_insecure_http))
        st = pfi_errorf(err, PFI_EINVAL,
                        "agents[%zu].url: plain http to a non-loopback host would send the token "
                        "in cleartext; use https:// (with "
                        "ca_file) or set allow_insecure_http: true",
                        i);
    if (!st && !c->agents[i].name[0])
        snprintf(c->agents[i].name, sizeof c->agents[i].name, "agent%zu", i);
    return st;
}

#define CFG_STR(key, dst)                                                                          \
    {                                                                                              \
        key, PFI_J_STRING, 0, dst, .size = sizeof(dst)                                             \
    }

/* one entry of "agents": url, token_file, name; read_token_file; ca_file,
 * client_cert, client_key (https); allow_insecure_http. The control token
 * never goes over plain http to another host unless allowed. */
static pfi_status agent_entry(json_t *a, size_t i, ctl_cfg *c, pfi_error *err)
{
    char where[32];
    snprintf(where, sizeof where, "agents[%zu]", i);
    const pfi_jkey keys[] = {
        CFG_STR("url", c->agents[i].url),
        CFG_STR("token_file", c->agents[i].token_file),
        CFG_STR("name", c->agents[i].name),
        CFG_STR("read_token_file", c->agents[i].read_token_file),
        CFG_STR("ca_file", c->agents[i].ca_file),
        CFG_STR("client_cert", c->agents[i].client_cert),
        CFG_STR("client_key", c->agents[i].client_key),
        {"allow_insecure_http", PFI_J_BOOL, .dst = &c->agents[i].allow_insecure_http},
    };
    pfi_jopts o = {.prefix = where,
                   .key_max = 20,
                   .unknown_text = "unknown key (url, token_file, name, read_token_file, ca_file, "
                                   "client_cert, client_key, "
                                   "allow_insecure_http)"};
    pfi_status st = PFI_JSON_OBJ_READ(a, keys, &o, err);
    return st ? st : agent_check(c, i, err);
}

static pfi_status agents_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                               pfi_error *err)
{
    (void)name, (void)ud;
    ctl_cfg *c = k->dst;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return pfi_errorf(err, PFI_EINVAL, "agents: expected a list of 1 or more agents");
    free(c->agents);
    if (!(c->agents = pfi_calloc(json_array_size(v), sizeof *c->agents, err))) return PFI_ENOMEM;
    size_t i;
    json_t *a;
    json_array_foreach(v, i, a)
    {
        pfi_status st = agent_entry(a, i, c, err);
        if (st) return st;
        c->nagents++;
    }
    return PFI_OK;
}

/* "scopes": ["read" | "events" | "control", ...], 1 or more */
static pfi_status scopes_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                               pfi_error *err)
{
    (void)ud;
    static const char *const names[] = {"read", "events", "control"};
    unsigned *scopes = k->dst;
    size_t i;
    json_t *x;
    *scopes = 0;
    if (json_array_size(v) == 0)
        return pfi_errorf(err, PFI_EINVAL,
                          "%s: expected a list of 1 or more of read, events, "
                          "control",
                          name);
    json_array_foreach(v, i, x)
    {
        const char *s = json_string_value(x);
        unsigned bit = 0;
        for (unsigned b = 0; s && b < 3; b++)
            if (!strcmp(s, names[b])) bit = 1u << b;
        if (!bit)
            return pfi_errorf(err, PFI_EINVAL,
                              "%s[%zu]: unknown scope (expected read, events or control)", name, i);
        if (*scopes & bit)
            return pfi_errorf(err, PFI_EINVAL, "%s[%zu]: %s is listed twice", name, i, s);
        *scopes |= bit;
    }
    return PFI_OK;
}

/* an operator's name: 1..CTL_WHO_MAX of [A-Za-z0-9._-], not one the
   controller records for others ("grid", "schedule") */
static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > CTL_WHO_MAX || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* the checks of operators[i] against the ones before it */
static pfi_status operator_check(const ctl_cfg *c, size_t i, pfi_error *err)
{
    const struct ctl_cfg_operator *o = &c->operators[i];
    if (!name_ok(o->name))
        return pfi_errorf(err, PFI_EINVAL,
                          "operators[%zu].name: expected 1..%d characters of A-Z a-z 0-9 . _ -", i,
                          CTL_WHO_MAX);
    if (!strcmp(o->name, "grid") || !strcmp(o->name, "schedule"))
        return pfi_errorf(err, PFI_EINVAL,
                          "operators[%zu].name: %s is reserved (the controller records events of "
                          "the VTN as grid, of the schedule file as schedule)",
                          i, o->name);
    for (size_t j = 0; j < i; j++) {
        if (!strcmp(o->name, c->operators[j].name))
            return pfi_errorf(err, PFI_EINVAL, "operators[%zu].name: %s is also operators[%zu]'s",
                              i, o->name, j);
        if (!strcmp(o->token_file, c->operators[j].token_file))
            return pfi_errorf(err, PFI_EINVAL,
                              "operators[%zu].token_file: the same file as operators[%zu] (%s): "
                              "each operator needs a token of its own",
                              i, j, c->operators[j].name);
    }
    return PFI_OK;
}

/* one entry of "operators": name, token_file, scopes (all required) */
static pfi_status operator_entry(json_t *a, size_t i, ctl_cfg *c, pfi_error *err)
{
    char where[32];
    snprintf(where, sizeof where, "operators[%zu]", i);
    struct ctl_cfg_operator *op = &c->operators[i];
    const pfi_jkey keys[] = {
        {"name", PFI_J_STRING, PFI_J_REQUIRED, op->name, .size = sizeof op->name,
         .expect = "expected 1..32 characters of A-Z a-z 0-9 . _ -"},
        {"token_file", PFI_J_STRING, PFI_J_REQUIRED | PFI_J_NONEMPTY, op->token_file,
         .size = sizeof op->token_file},
        {"scopes", PFI_J_ARRAY, PFI_J_REQUIRED, &op->scopes, .fn = scopes_field},
    };
    pfi_jopts o = {
        .prefix = where, .key_max = 20, .unknown_text = "unknown key (name, token_file, scopes)"};
    if (!json_is_object(a))
        return pfi_errorf(err, PFI_EINVAL, "%s: expected {\"name\", \"token_file\", \"scopes\"}",
                          where);
    pfi_status st = PFI_JSON_OBJ_READ(a, keys, &o, err);
    return st ? st : operator_check(c, i, err);
}

static pfi_status operators_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                  pfi_error *err)
{
    (void)name, (void)ud;
    ctl_cfg *c = k->dst;
    free(c->operators);
    c->noperators = 0;
    /* one more: token_file's operator */
    if (!(c->operators = pfi_calloc(json_array_size(v) + 1, sizeof *c->operators, err)))
        return PFI_ENOMEM;
    size_t i;
    json_t *a;
    json_array_foreach(v, i, a)
    {
        pfi_status st = operator_entry(a, i, c, err);
        if (st) return st;
        c->noperators++;
    }
    return PFI_OK;
}

/* token_file: one more operator, "operator", with every scope */
static pfi_status legacy_operator(ctl_cfg *c, pfi_error *err)
{
    if (!c->token_file[0]) return PFI_OK;
    if (!c->operators && !(c->operators = pfi_calloc(1, sizeof *c->operators, err)))
        return PFI_ENOMEM;
    for (size_t j = 0; j < c->noperators; j++) {
        if (!strcmp(c->operators[j].name, CTL_LEGACY_OPERATOR))
            return pfi_errorf(err, PFI_EINVAL,
                              "operators[%zu].name: %s is token_file's operator (every scope); "
                              "name it otherwise, or drop token_file",
                              j, CTL_LEGACY_OPERATOR);
        if (!strcmp(c->operators[j].token_file, c->token_file))
            return pfi_errorf(err, PFI_EINVAL,
                              "token_file: the same file as operators[%zu] (%s): each operator "
                              "needs a token of its own",
                              j, c->operators[j].name);
    }
    struct ctl_cfg_operator *o = &c->operators[c->noperators++];
    snprintf(o->name, sizeof o->name, "%s", CTL_LEGACY_OPERATOR);
    snprintf(o->token_file, sizeof o->token_file, "%s", c->token_file);
    o->scopes = CTL_SCOPE_ALL;
    return PFI_OK;
}

static pfi_status strategy_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                 pfi_error *err)
{
    (void)name, (void)ud;
    pfi_strategy s;
    /* the strategies the table marks for the controller, the default first */
    if (!json_is_string(v) || pfi_strategy_parse(json_string_value(v), &s) ||
        !pfi_strategy_has(s, PFI_TRAIT_CONTROLLER)) {
        char list[256];
        pfi_strategy_list(PFI_TRAIT_CONTROLLER, PFI_STRAT_SAFE_ONLINE, ", ", " or ", list,
                          sizeof list);
        return pfi_errorf(err, PFI_EINVAL, "strategy: expected %s", list);
    }
    *(pfi_strategy *)k->dst = s;
    return PFI_OK;
}

static pfi_status levels_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                               pfi_error *err)
{
    (void)name;
    double *cut = k->dst;
    if (!json_is_array(v) || json_array_size(v) != 4)
        return pfi_errorf(err, PFI_EINVAL, "levels_pct: expected 4 cuts in %% for levels 0..3");
    for (size_t i = 0; i < 4; i++) {
        pfi_jkey one = {NULL, PFI_J_NUMBER, 0, &cut[i], .lo = 0, .hi = 90};
        pfi_status st = pfi_json_value_read(json_array_get(v, i), &one, "levels_pct[]", ud, err);
        if (st) return st;
    }
    return PFI_OK;
}

static pfi_status tiers_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                              pfi_error *err)
{
    (void)name, (void)ud;
    const char *jk;
    json_t *jv;
    json_object_foreach(v, jk, jv) if (!json_is_integer(jv) || json_integer_value(jv) < 0 ||
                                       json_integer_value(jv) >
                                           3) return pfi_errorf(err, PFI_EINVAL,
                                                                "tiers.%s: expected a tier 0..3",
                                                                jk);
    *(json_t **)k->dst = json_incref(v);
    return PFI_OK;
}

/* "profile_opt_out": ["job id", ...] (ids as the agents validate them) */
static pfi_status opt_out_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                pfi_error *err)
{
    (void)ud;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
    {
        const char *id = json_string_value(x);
        if (!id || !pfi_job_id_valid(id))
            return pfi_errorf(err, PFI_EINVAL, "%s[%zu]: expected a job id ([A-Za-z0-9._-]{1,63})",
                              name, i);
    }
    *(json_t **)k->dst = json_incref(v);
    return PFI_OK;
}

/* "version": "3.1" (or "3.1.1") | "3.0.1" */
static pfi_status oadr_version_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                     pfi_error *err)
{
    (void)ud;
    const char *s = json_string_value(v);
    if (s && (!strcmp(s, "3.1") || !strcmp(s, "3.1.1"))) *(int *)k->dst = PFI_OADR_V3_1;
    else if (s && !strcmp(s, "3.0.1")) *(int *)k->dst = PFI_OADR_V3_0_1;
    else return pfi_errorf(err, PFI_EINVAL, "%s: expected \"3.1\" or \"3.0.1\"", name);
    return PFI_OK;
}

/* "resources": ["name", ...]: at most CTL_OADR_MAX_RESOURCES of 1..128 characters */
static pfi_status oadr_resources_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                       pfi_error *err)
{
    (void)ud;
    ctl_cfg *c = k->dst;
    size_t i;
    json_t *x;
    if (json_array_size(v) > CTL_OADR_MAX_RESOURCES)
        return pfi_errorf(err, PFI_EINVAL, "%s: at most %d resources", name,
                          CTL_OADR_MAX_RESOURCES);
    json_array_foreach(v, i, x)
    {
        const char *s = json_string_value(x);
        if (!s || !s[0] || strlen(s) > PFI_OADR_ID_MAX)
            return pfi_errorf(err, PFI_EINVAL, "%s[%zu]: expected a name of 1..128 characters",
                              name, i);
        snprintf(c->openadr_resources[i], sizeof c->openadr_resources[i], "%s", s);
    }
    c->openadr_nresources = json_array_size(v);
    return PFI_OK;
}

static pfi_status targets_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                pfi_error *err)
{
    (void)name, (void)ud;
    ctl_cfg *c = k->dst;
    size_t n = sizeof c->vtn.targets / sizeof *c->vtn.targets, i;
    json_t *x;
    if (json_array_size(v) > n)
        return pfi_errorf(err, PFI_EINVAL, "openadr.targets: at most %zu targets", n);
    json_array_foreach(v, i, x)
    {
        const char *t = json_string_value(x);
        if (!t || !t[0] || strlen(t) > 128)
            return pfi_errorf(err, PFI_EINVAL,
                              "openadr.targets[%zu]: expected a string of 1..128 characters", i);
        snprintf(c->vtn.targets[i], sizeof c->vtn.targets[i], "%s", t);
    }
    c->vtn.ntargets = json_array_size(v);
    return PFI_OK;
}

/* the checks between the VTN's keys */
static pfi_status vtn_check(const ctl_cfg *c, pfi_error *err)
{
    const char *urls[] = {c->vtn.vtn_url, c->vtn.token_url, c->vtn.callback_url};
    const char *keys[] = {"vtn_url", "token_url", "callback_url"};
    if (!c->vtn.vtn_url[0]) {
        if (c->vtn.token_url[0] || c->vtn.client_id_file[0] || c->vtn.client_secret_file[0] ||
            c->vtn.callback_url[0] || c->vtn.program_id[0])
            return pfi_errorf(err, PFI_EINVAL, "openadr: the VTN's keys need vtn_url");
        return PFI_OK;
    }
    for (size_t i = 0; i < 3; i++) {
        const char *u = urls[i];
        if (!u[0]) continue;
        if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
            return pfi_errorf(err, PFI_EINVAL, "openadr.%s: expected http:// or https://", keys[i]);
        /* the credentials, the access token and (to callback_url, from the
           VTN) the callback token: never in cleartext across a network */
        if (!pfi_url_secret_ok(u, c->vtn.allow_insecure_http))
            return pfi_errorf(err, PFI_EINVAL,
                              "openadr.%s: plain http to a non-loopback host would send %s in "
                              "cleartext; use https:// or set allow_insecure_http: true",
                              keys[i], i < 2 ? "the credentials" : "the callback token");
    }
    if (!c->vtn.client_id_file[0] || !c->vtn.client_secret_file[0])
        return pfi_errorf(err, PFI_EINVAL,
                          "openadr: vtn_url needs client_id_file and client_secret_file");
    if (!c->openadr_ven_name[0]) return pfi_errorf(err, PFI_EINVAL, "openadr.ven_name: missing");
    if (c->vtn.callback_url[0] && !c->vtn.callback_token_file[0])
        return pfi_errorf(err, PFI_EINVAL,
                          "openadr.callback_url: needs callback_token_file (the token the VTN "
                          "sends with its callbacks)");
    if (c->vtn.callback_url[0] && c->openadr_version == PFI_OADR_V3_0_1 && !c->vtn.program_id[0])
        return pfi_errorf(err, PFI_EINVAL,
                          "openadr.callback_url: a 3.0.1 subscription needs program_id");
    return PFI_OK;
}

/* "openadr": the plain poller {"poll_url", "poll_s"}, what the VEN is ("version",
 * "ven_name", "resources") and the VTN (vtn_url, token_url, client_id_file,
 * client_secret_file, program_id, targets, callback_url, callback_token_file, ca_file,
 * allow_insecure_http, report_interval_s); other keys are ignored */
static pfi_status openadr_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                pfi_error *err)
{
    (void)name;
    ctl_cfg *c = k->dst;
    const pfi_jkey keys[] = {
        CFG_STR("poll_url", c->openadr_poll_url),
        {"poll_s", PFI_J_NUMBER, 0, &c->openadr_poll_s, .lo = 1, .hi = 86400},
        {"version", PFI_J_STRING, 0, &c->openadr_version, .fn = oadr_version_field},
        CFG_STR("ven_name", c->openadr_ven_name),
        {"resources", PFI_J_ARRAY, 0, c, .fn = oadr_resources_field},
        CFG_STR("vtn_url", c->vtn.vtn_url),
        CFG_STR("token_url", c->vtn.token_url),
        CFG_STR("client_id_file", c->vtn.client_id_file),
        CFG_STR("client_secret_file", c->vtn.client_secret_file),
        CFG_STR("program_id", c->vtn.program_id),
        {"targets", PFI_J_ARRAY, 0, c, .fn = targets_field},
        CFG_STR("callback_url", c->vtn.callback_url),
        CFG_STR("callback_token_file", c->vtn.callback_token_file),
        CFG_STR("ca_file", c->vtn.ca_file),
        {"allow_insecure_http", PFI_J_BOOL, .dst = &c->vtn.allow_insecure_http},
        {"report_interval_s", PFI_J_NUMBER, 0, &c->vtn.report_s, .lo = 1, .hi = 86400},
    };
    pfi_jopts o = {
        .prefix = "openadr", .table_order = 1, .unknown = PFI_J_UNKNOWN_IGNORE, .ud = ud};
    pfi_status st = PFI_JSON_OBJ_READ(v, keys, &o, err);
    return st ? st : vtn_check(c, err);
}

/* "offer" (issue 44): {"interval_s": 30 (0: no offer), "facility_factor": 1.0 (kW at the
   meter per kW of GPU board power: PSU losses and cooling are the site's to add)} */
static pfi_status offer_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                              pfi_error *err)
{
    (void)name;
    ctl_cfg *c = k->dst;
    const pfi_jkey keys[] = {
        {"interval_s", PFI_J_NUMBER, 0, &c->offer_s, .lo = 0, .hi = 86400,
         .expect = "expected 0 (no offer) to 86400 seconds"},
        {"facility_factor", PFI_J_NUMBER, 0, &c->offer_facility, .lo = 0.5, .hi = 3,
         .expect = "expected a factor in 0.5..3"},
        {"squeue", PFI_J_STRING, 0, c->offer_squeue, .size = sizeof c->offer_squeue},
        {"squeue_interval_s", PFI_J_NUMBER, 0, &c->offer_squeue_s, .lo = 10, .hi = 86400,
         .expect = "expected 10 to 86400 seconds"},
        {"squeue_timeout_s", PFI_J_NUMBER, 0, &c->offer_squeue_timeout_s, .lo = 1, .hi = 300,
         .expect = "expected 1 to 300 seconds"},
        {"horizon_h", PFI_J_INTEGER, 0, &c->offer_horizon_h, .size = sizeof(int), .lo = 0, .hi = 48,
         .expect = "expected 0 (no forecast) to 48 hours"},
    };
    pfi_jopts o = {.prefix = "offer", .ud = ud};
    return PFI_JSON_OBJ_READ(v, keys, &o, err);
}

/* "failover": {"etcd": ["http(s)://host:port", ...]} (ctl.h) */
static pfi_status etcd_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                             pfi_error *err)
{
    (void)name, (void)ud;
    ctl_cfg *c = k->dst;
    if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > 16)
        return pfi_errorf(err, PFI_EINVAL, "failover.etcd: expected 1 to 16 URLs");
    size_t i;
    json_t *u;
    json_array_foreach(v, i, u)
    {
        const char *s = json_string_value(u);
        if (!s || strlen(s) >= sizeof c->fo.etcd[0] ||
            (strncmp(s, "http://", 7) && strncmp(s, "https://", 8)))
            return pfi_errorf(err, PFI_EINVAL,
                              "failover.etcd[%zu]: expected an http:// or https:// URL", i);
        snprintf(c->fo.etcd[i], sizeof c->fo.etcd[i], "%s", s);
    }
    c->fo.netcd = json_array_size(v);
    return PFI_OK;
}

static pfi_status failover_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                 pfi_error *err)
{
    (void)name;
    ctl_cfg *c = k->dst;
    const pfi_jkey keys[] = {
        {"etcd", PFI_J_ARRAY, PFI_J_REQUIRED, c, .fn = etcd_field},
        {"prefix", PFI_J_STRING, 0, c->fo.prefix, .size = sizeof c->fo.prefix},
        {"name", PFI_J_STRING, 0, c->fo.name, .size = sizeof c->fo.name},
        {"ttl_s", PFI_J_NUMBER, 0, &c->fo.ttl_s, .lo = 1, .hi = 60,
         .expect = "expected 1 to 60 seconds (etcd's lease)"},
        {"timeout_s", PFI_J_NUMBER, 0, &c->fo.timeout_s, .lo = 0.05, .hi = 30,
         .expect = "expected 0.05 to 30 seconds"},
        {"ca_file", PFI_J_STRING, 0, c->fo.ca_file, .size = sizeof c->fo.ca_file},
        {"cert_file", PFI_J_STRING, 0, c->fo.cert_file, .size = sizeof c->fo.cert_file},
        {"key_file", PFI_J_STRING, 0, c->fo.key_file, .size = sizeof c->fo.key_file},
        {"user", PFI_J_STRING, 0, c->fo.user, .size = sizeof c->fo.user},
        {"password_file", PFI_J_STRING, 0, c->fo.password_file, .size = sizeof c->fo.password_file},
    };
    pfi_jopts o = {.prefix = "failover", .ud = ud};
    (void)ud;
    pfi_status st = PFI_JSON_OBJ_READ(v, keys, &o, err);
    if (!st &&
        strspn(c->fo.name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            strlen(c->fo.name))
        st = pfi_errorf(err, PFI_EINVAL, "failover.name: expected [A-Za-z0-9._-]");
    if (!st && (!c->fo.prefix[0] || c->fo.prefix[strlen(c->fo.prefix) - 1] != '/'))
        st = pfi_errorf(err, PFI_EINVAL, "failover.prefix: expected a prefix ending in '/'");
    if (!st && !c->fo.user[0] != !c->fo.password_file[0])
        st = pfi_errorf(err, PFI_EINVAL, "failover.user: goes with password_file");
    if (!st && !c->fo.cert_file[0] != !c->fo.key_file[0])
        st = pfi_errorf(err, PFI_EINVAL, "failover.cert_file: goes with key_file");
    return st;
}

static void defaults(ctl_cfg *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:9480");
    snprintf(c->db, sizeof c->db, "/var/lib/pfi/controller/controller.db");
    c->strategy = PFI_STRAT_SAFE_ONLINE;
    c->period_s = 5;
    c->tolerance_pct = 2;
    c->baseline_window_s = 60;
    c->baseline_settle_s = 10;
    c->lease_s = NAN;
    c->default_tier = -1;
    c->openadr_poll_s = 60;
    c->agent_timeout_s = NAN;
    c->agent_concurrency = 1024;
    c->fast_trigger = 1;
    c->offer_s = 30;
    c->offer_facility = 1;
    c->offer_squeue_s = 300;
    c->offer_squeue_timeout_s = 10;
    c->offer_horizon_h = 6;
    snprintf(c->fo.prefix, sizeof c->fo.prefix, "/pfi/");
    c->fo.ttl_s = 2;
    c->fo.timeout_s = 1;
    c->fast_collect = 1;
    c->fast_trigger_ack_s = 0.2;
    c->vtn.report_s = 900;
    c->profile = 1;
    c->profile_cost_frac = 0.01;
    c->profile_points = 4;
    c->profile_deep_points = 0; /* opt-in: bench_adversary (docs/controller.md, "Profiles") */
    c->profile_samples = 6;
    c->profile_settle_periods = 1;
    static const double levels[4] = {0, 10, 20, 30};
    memcpy(c->level_cut_pct, levels, sizeof levels);
}

/* every key of the file, into c */
static pfi_status read_keys(json_t *o, ctl_cfg *c, pfi_error *err)
{
    double tier = c->default_tier;
#define CFG_NUM(key, dst, lo_, hi_)                                                                \
    {                                                                                              \
        key, PFI_J_NUMBER, 0, dst, .lo = lo_, .hi = hi_                                            \
    }
    const pfi_jkey keys[] = {
        CFG_STR("listen", c->listen),
        CFG_STR("token_file", c->token_file),
        CFG_STR("tls_cert", c->tls_cert),
        CFG_STR("tls_key", c->tls_key),
        CFG_STR("db", c->db),
        CFG_STR("model", c->model),
        CFG_STR("curve_model", c->curve_model),
        CFG_STR("schedule", c->schedule),
        CFG_STR("log", c->log),
        {"strategy", PFI_J_ANY, 0, &c->strategy, .fn = strategy_field},
        CFG_NUM("control_period_s", &c->period_s, 0.05, 3600),
        CFG_NUM("tolerance_pct", &c->tolerance_pct, 0, 50),
        CFG_NUM("non_gpu_offset_kw", &c->non_gpu_offset_kw, 0, 1e7),
        CFG_NUM("ramp_s", &c->ramp_s, 0, 86400),
        CFG_NUM("ramp_down_s", &c->ramp_down_s, 0, 86400),
        CFG_NUM("baseline_window_s", &c->baseline_window_s, 0.1, 86400),
        CFG_NUM("baseline_settle_s", &c->baseline_settle_s, 0, 3600),
        CFG_NUM("lease_s", &c->lease_s, 1, 86400),
        CFG_NUM("default_tier", &tier, -1, 3),
        CFG_NUM("agent_timeout_s", &c->agent_timeout_s, 0.01, 60),
        CFG_NUM("agent_concurrency", &c->agent_concurrency, 1, 1e6),
        {"fast_trigger", PFI_J_BOOL, .dst = &c->fast_trigger},
        {"fast_collect", PFI_J_BOOL, .dst = &c->fast_collect},
        {"fast_path_cleartext", PFI_J_BOOL, .dst = &c->fast_path_cleartext},
        CFG_NUM("fast_trigger_ack_s", &c->fast_trigger_ack_s, 0.005, 5),
        {"dry_run", PFI_J_BOOL, .dst = &c->dry_run},
        {"levels_pct", PFI_J_ANY, 0, c->level_cut_pct, .fn = levels_field},
        {"tiers", PFI_J_OBJECT, 0, &c->tiers, .fn = tiers_field,
         .expect = "expected {\"job id\": tier 0..3}"},
        {"offer", PFI_J_OBJECT, 0, c, .fn = offer_field,
         .expect = "expected {\"interval_s\", \"facility_factor\"}"},
        {"failover", PFI_J_OBJECT, 0, c, .fn = failover_field,
         .expect = "expected {\"etcd\": [URL, ...], \"prefix\", \"name\", \"ttl_s\", ...}"},
        {"openadr", PFI_J_OBJECT, 0, c, .fn = openadr_field,
         .expect = "expected {\"poll_url\", \"poll_s\", \"vtn_url\", ...}"},
        {"agents", PFI_J_ANY, PFI_J_REQUIRED, c, .fn = agents_field},
        {"operators", PFI_J_ARRAY, 0, c, .fn = operators_field,
         .expect = "expected [{\"name\", \"token_file\", \"scopes\"}, ...]"},
        {"require_read_scope", PFI_J_BOOL, .dst = &c->require_read_scope},
        {"profile", PFI_J_BOOL, .dst = &c->profile},
        CFG_NUM("profile_cost_frac", &c->profile_cost_frac, 0, 0.2),
        CFG_NUM("profile_points", &c->profile_points, 1, CTL_PROFILE_MAX),
        CFG_NUM("profile_deep_points", &c->profile_deep_points, 0, 8),
        CFG_NUM("profile_samples", &c->profile_samples, 2, CTL_PROF_SAMPLES_MAX),
        CFG_NUM("profile_settle_periods", &c->profile_settle_periods, 0, 100),
        {"profile_opt_out", PFI_J_ARRAY, 0, &c->profile_opt_out, .fn = opt_out_field,
         .expect = "expected [\"job id\", ...]"},
    };
#undef CFG_NUM
    pfi_status st = PFI_JSON_OBJ_READ(o, keys, NULL, err);
    c->default_tier = (int)tier;
    if (!st) st = legacy_operator(c, err);
    if (!st && c->require_read_scope && !c->noperators)
        st = pfi_errorf(err, PFI_EINVAL,
                        "require_read_scope: needs operators (or token_file): no one could read");
    return st;
}

/* cfg.fo.config_hash (ctl.h): what must be the same on every controller of a site */
static void config_hash(json_t *o, ctl_cfg *c)
{
    json_t *j = json_deep_copy(o);
    static const char *const own[] = {"listen", "db", "log", "tls_cert", "tls_key"};
    for (size_t i = 0; j && i < sizeof own / sizeof *own; i++) json_object_del(j, own[i]);
    /* each controller's own way to etcd: its name, the members it lists
       (its local one first, a relay), its certificate and credentials */
    static const char *const own_fo[] = {"name",     "etcd", "ca_file",      "cert_file",
                                         "key_file", "user", "password_file"};
    for (size_t i = 0; j && i < sizeof own_fo / sizeof *own_fo; i++)
        json_object_del(json_object_get(j, "failover"), own_fo[i]);
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    unsigned long long h = 1469598103934665603ULL;
    for (const char *p = s; p && *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    snprintf(c->fo.config_hash, sizeof c->fo.config_hash, "%016llx", h);
    free(s);
    json_decref(j);
}

/* errors quote keys and JSON from the input: keep them one line */
static void one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

/* the configuration in o (NULL: je says why it did not parse) */
static pfi_status config_from_json(json_t *o, const json_error_t *je, const char *path, ctl_cfg *c,
                                   pfi_error *err)
{
    defaults(c);
    pfi_error e;
    pfi_status st;
    if (!o) {
        /* no line before the text was read (a read error) */
        if (je->line < 1) st = pfi_errorf(err, PFI_EPARSE, "%s: %s", path, je->text);
        else st = pfi_errorf(err, PFI_EPARSE, "%s:%d: %s", path, je->line, je->text);
        if (err) one_line(err->msg);
        return st;
    }
    if (!json_is_object(o)) st = pfi_errorf(&e, PFI_EINVAL, "expected a JSON object");
    else st = read_keys(o, c, &e);
    if (isnan(c->lease_s)) c->lease_s = fmax(3 * c->period_s, 3);
    if (!st && c->lease_s < 2 * c->period_s)
        st = pfi_errorf(&e, PFI_EINVAL, "lease_s: must be at least two control periods");
    if (!st) config_hash(o, c);
    json_decref(o);
    if (st) {
        ctl_config_free(c); /* not kept when the configuration is refused */
        pfi_errorf(err, st, "%s: %s", path, e.msg);
        if (err) one_line(err->msg);
    }
    return st;
}

void ctl_config_free(ctl_cfg *c)
{
    json_decref(c->tiers);
    c->tiers = NULL;
    json_decref(c->profile_opt_out);
    c->profile_opt_out = NULL;
    free(c->agents);
    c->agents = NULL;
    c->nagents = 0;
    free(c->operators);
    c->operators = NULL;
    c->noperators = 0;
}

pfi_status ctl_config_load(const char *path, ctl_cfg *c, pfi_error *err)
{
    /* opened here, not by json_load_file: its "-1: unable to open PATH"
       would name the file twice and a line that does not exist */
    FILE *f = fopen(path, "r");
    struct stat sb;
    int e = !f ? errno : fstat(fileno(f), &sb) ? errno : S_ISDIR(sb.st_mode) ? EISDIR : 0;
    if (e) {
        if (f) fclose(f);
        defaults(c);
        return pfi_errorf(err, PFI_EIO, "%s: cannot open: %s", path, strerror(e));
    }
    json_error_t je;
    json_t *o = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    return config_from_json(o, &je, path, c, err);
}

pfi_status ctl_config_parse(const char *text, size_t len, const char *name, ctl_cfg *c,
                            pfi_error *err)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    return config_from_json(o, &je, name, c, err);
}
