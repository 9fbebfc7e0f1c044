/* openadr.c — OpenADR 3.0.1 / 3.1 events for a VEN (openadr.h). */
#include "openadr.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_obj.h"

static const char *const reason_names[PFI_OADR_NREASONS] = {
    "ok",        "malformed", "operation", "unit",  "duration", "loop",
    "intervals", "payload",   "targets",   "stale", "ended",    "refused"};

const char *pfi_oadr_reason_name(pfi_oadr_reason r)
{
    return (unsigned)r < PFI_OADR_NREASONS ? reason_names[r] : "malformed";
}

/* a rejection: the reason, and the message (kept to one line) */
static pfi_status reject(pfi_oadr_event *ev, pfi_oadr_reason r, pfi_error *err, const char *fmt,
                         ...) __attribute__((format(printf, 4, 5)));
static pfi_status reject(pfi_oadr_event *ev, pfi_oadr_reason r, pfi_error *err, const char *fmt,
                         ...)
{
    ev->reason = r;
    va_list ap;
    va_start(ap, fmt);
    pfi_verrorf(err, r == PFI_OADR_R_DURATION ? PFI_ERANGE : PFI_EINVAL, fmt, ap);
    va_end(ap);
    if (err)
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return PFI_EINVAL;
}

/* a rejection whose message err already holds (from the key reader) */
static pfi_status keep(pfi_oadr_event *ev, pfi_oadr_reason r, pfi_error *err)
{
    ev->reason = r;
    if (err)
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return PFI_EINVAL;
}

static pfi_status grab(const pfi_jkey *k, json_t *v, const char *name, void *ud, pfi_error *err)
{
    (void)name, (void)ud, (void)err;
    *(json_t **)k->dst = v;
    return PFI_OK;
}

/* the specification's objectID: 1..128 of [A-Za-z0-9_-] */
static int oadr_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > PFI_OADR_ID_MAX) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-') return 0;
    return 1;
}

/* a start: RFC 3339, or the specification's "now" */
static int start_read(const char *s, double now, double *t)
{
    if (!strcmp(s, "0001-01-01") || !strcmp(s, "0001-01-01T00:00:00")) {
        *t = now;
        return 0;
    }
    return pfi_rfc3339_parse(s, t);
}

/* a duration: 1 s .. 7 days, or P9999Y (*open = 1); 0 or -1 */
static int duration_read(const char *s, double *d, int *open)
{
    *open = 0;
    if (!strcmp(s, "P9999Y")) {
        *open = 1;
        *d = 0;
        return 0;
    }
    return pfi_iso8601_duration(s, d);
}

typedef struct period {
    json_t *start, *duration, *randomize;
} period;

static pfi_status period_read(json_t *o, const char *name, period *p, pfi_error *err)
{
    memset(p, 0, sizeof *p);
    if (!o || json_is_null(o)) return PFI_OK;
    const pfi_jkey keys[] = {
        {"start", PFI_J_STRING, PFI_J_NULL_ABSENT, &p->start, .fn = grab},
        {"duration", PFI_J_STRING, PFI_J_NULL_ABSENT, &p->duration, .fn = grab},
        {"randomizeStart", PFI_J_ANY, 0, &p->randomize, .fn = grab},
    };
    pfi_jopts o2 = {.prefix = name, .unknown = PFI_J_UNKNOWN_IGNORE};
    if (!json_is_object(o)) return pfi_errorf(err, PFI_EINVAL, "%s: expected an object", name);
    return PFI_JSON_OBJ_READ(o, keys, &o2, err);
}

/* kW per unit of a payload type's values: 1, 1e-3, 1e3; 0 for an unknown unit */
static double unit_kw(json_t *descriptors, const char *type, const char **unit)
{
    size_t i;
    json_t *d;
    *unit = NULL;
    json_array_foreach(descriptors, i, d)
    {
        const char *pt = json_string_value(json_object_get(d, "payloadType"));
        if (!pt || strcmp(pt, type)) continue;
        json_t *u = json_object_get(d, "units");
        if (!u || json_is_null(u)) return 1;
        *unit = json_string_value(u);
        if (!*unit) return 0;
        if (!strcmp(*unit, "KW")) return 1;
        if (!strcmp(*unit, "W")) return 1e-3;
        if (!strcmp(*unit, "MW")) return 1e3;
        return 0;
    }
    return 1;
}

/* is the event for us? 3.0.1: [{type, values}], 3.1: ["name", ...] */
static pfi_status targets_read(json_t *t, const pfi_oadr_opts *o, pfi_oadr_event *ev,
                               pfi_error *err)
{
    ev->targeted = 1;
    if (!t || json_is_null(t) || (json_is_array(t) && json_array_size(t) == 0)) return PFI_OK;
    if (!json_is_array(t))
        return reject(ev, PFI_OADR_R_MALFORMED, err, "targets: expected an array");
    if (!o->ven_name || !o->ven_name[0]) return PFI_OK; /* no name: not checked */
    ev->targeted = 0;
    size_t i, k;
    json_t *x, *v;
    int named = 0; /* 3.0.1: entries of a type that names a VEN or resource */
    json_array_foreach(t, i, x)
    {
        if (o->version == PFI_OADR_V3_1) {
            if (!json_is_string(x))
                return reject(ev, PFI_OADR_R_MALFORMED, err,
                              "targets[%zu]: expected a string (OpenADR 3.1)", i);
            const char *s = json_string_value(x);
            if (!strcmp(s, o->ven_name)) ev->targeted = 1;
            for (size_t r = 0; r < o->nresources; r++)
                if (!strcmp(s, o->resources[r])) ev->targeted = 1;
            continue;
        }
        const char *type = json_string_value(json_object_get(x, "type"));
        json_t *vals = json_object_get(x, "values");
        if (!type || !json_is_array(vals))
            return reject(ev, PFI_OADR_R_MALFORMED, err,
                          "targets[%zu]: expected {\"type\", \"values\"} (OpenADR 3.0.1)", i);
        int ven = !strcmp(type, "VEN_NAME"), res = !strcmp(type, "RESOURCE_NAME");
        if (!ven && !res) continue;
        named = 1;
        json_array_foreach(vals, k, v)
        {
            const char *s = json_string_value(v);
            if (!s) continue;
            if (ven && !strcmp(s, o->ven_name)) ev->targeted = 1;
            for (size_t r = 0; res && r < o->nresources; r++)
                if (!strcmp(s, o->resources[r])) ev->targeted = 1;
        }
    }
    if (o->version == PFI_OADR_V3_0_1 && !named) ev->targeted = 1; /* only groups, places: all */
    return PFI_OK;
}

static void note_add(pfi_oadr_event *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note_add(pfi_oadr_event *ev, const char *fmt, ...)
{
    size_t n = strlen(ev->note);
    if (n + 8 >= sizeof ev->note) return;
    if (n) n += (size_t)snprintf(ev->note + n, sizeof ev->note - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->note + n, sizeof ev->note - n, fmt, ap);
    va_end(ap);
}

/* one interval's step: its payload (IMPORT_CAPACITY_LIMIT first, then SIMPLE) */
static pfi_status payload_read(json_t *payloads, size_t i, json_t *desc, const pfi_oadr_opts *o,
                               pfi_grid_event *s, int *found, pfi_oadr_event *ev, pfi_error *err)
{
    size_t k;
    json_t *pl;
    *found = 0;
    if (!json_is_array(payloads))
        return reject(ev, PFI_OADR_R_MALFORMED, err, "intervals[%zu].payloads: expected an array",
                      i);
    json_array_foreach(payloads, k, pl)
    {
        const char *type = json_string_value(json_object_get(pl, "type"));
        if (type && strcmp(type, "SIMPLE") && strcmp(type, "IMPORT_CAPACITY_LIMIT") &&
            !strstr(ev->note, type))
            note_add(ev, "%.40s payloads ignored (not a power limit or level)", type);
    }
    for (int pass = 0; pass < 2 && !*found; pass++) json_array_foreach(payloads, k, pl)
        {
            const char *type = json_string_value(json_object_get(pl, "type"));
            json_t *val = json_array_get(json_object_get(pl, "values"), 0);
            if (!type)
                return reject(ev, PFI_OADR_R_MALFORMED, err,
                              "intervals[%zu].payloads[%zu].type: expected a string", i, k);
            if (pass == 0 && !strcmp(type, "IMPORT_CAPACITY_LIMIT")) {
                const char *unit;
                double f = unit_kw(desc, type, &unit);
                if (f == 0)
                    return reject(ev, PFI_OADR_R_UNIT, err,
                                  "payloadDescriptors: IMPORT_CAPACITY_LIMIT in unit %.20s: "
                                  "expected KW (or W, MW)",
                                  unit ? unit : "(not a string)");
                if (!json_is_number(val) || !isfinite(json_number_value(val)) ||
                    !(json_number_value(val) > 0))
                    return reject(ev, PFI_OADR_R_PAYLOAD, err,
                                  "intervals[%zu].payloads[%zu].values[0]: IMPORT_CAPACITY_LIMIT "
                                  "must be a positive number",
                                  i, k);
                double kw = json_number_value(val) * f;
                s->kind = PFI_EV_TARGET_KW;
                s->target_kw = kw - o->non_gpu_offset_kw;
                if (!(s->target_kw > 0))
                    return reject(ev, PFI_OADR_R_PAYLOAD, err,
                                  "intervals[%zu].payloads[%zu].values[0]: IMPORT_CAPACITY_LIMIT "
                                  "%g kW is below the non-GPU offset %g kW",
                                  i, k, kw, o->non_gpu_offset_kw);
                if (!(s->target_kw < PFI_EVENT_MAX_TARGET_KW))
                    return reject(ev, PFI_OADR_R_PAYLOAD, err,
                                  "intervals[%zu].payloads[%zu].values[0]: IMPORT_CAPACITY_LIMIT "
                                  "%g kW: a GPU target of 1e6 kW or more",
                                  i, k, kw);
                *found = 1;
                break;
            }
            if (pass == 1 && !strcmp(type, "SIMPLE")) {
                if (!json_is_integer(val) || json_integer_value(val) < 0 ||
                    json_integer_value(val) > 3)
                    return reject(ev, PFI_OADR_R_PAYLOAD, err,
                                  "intervals[%zu].payloads[%zu].values[0]: SIMPLE level must be "
                                  "0..3",
                                  i, k);
                s->kind = PFI_EV_LEVEL;
                s->level = (int)json_integer_value(val);
                *found = 1;
                break;
            }
        }
    return PFI_OK;
}

/* reportDescriptors: [{"payloadType", "units", ...}]: the payloads pfi
 * measures that are asked for (DEMAND, BASELINE, DELTA_USAGE; READING in a
 * power unit, KW/W/MW or none; USAGE in an energy unit, KWH or none), and
 * what it cannot measure, named for a log line ("READING in VOLTS"); a
 * value that is not such an array asks for nothing special */
static void report_descriptors(json_t *rd, pfi_oadr_event *ev)
{
    static const char *const ours[] = {"DEMAND", "BASELINE", "DELTA_USAGE", "READING", "USAGE"};
    size_t i, len = 0;
    json_t *d;
    ev->report_mask = 0;
    ev->report_unmeasured[0] = '\0';
    if (!json_is_array(rd)) return;
    json_array_foreach(rd, i, d)
    {
        const char *t = json_string_value(json_object_get(d, "payloadType"));
        const char *u = json_string_value(json_object_get(d, "units"));
        if (!t) continue;
        int k = 0;
        while (k < 5 && strcmp(t, ours[k])) k++;
        int power = !u || !strcmp(u, "KW") || !strcmp(u, "W") || !strcmp(u, "MW");
        int energy = !u || !strcmp(u, "KWH") || !strcmp(u, "WH") || !strcmp(u, "MWH");
        if (k < 3 || (k == 3 && power) || (k == 4 && energy)) {
            ev->report_mask |= 1u << k;
        } else if (len + strlen(t) + 50 < sizeof ev->report_unmeasured) {
            len +=
                (size_t)snprintf(ev->report_unmeasured + len, sizeof ev->report_unmeasured - len,
                                 "%s%.24s%s%.16s", len ? ", " : "", t, u ? " in " : "", u ? u : "");
        }
    }
    if (!ev->report_mask && len) ev->report_mask = PFI_OADR_REPORT_NONE;
}

static pfi_status event_read(json_t *e, const pfi_oadr_opts *o, pfi_oadr_event *ev, pfi_error *err)
{
    json_t *id = NULL, *mod = NULL, *ot = NULL, *ip = NULL, *iv = NULL, *desc = NULL, *tg = NULL,
           *dur = NULL, *prio = NULL, *rd = NULL;
    const pfi_jkey keys[] = {
        {"id", PFI_J_ANY, 0, &id, .fn = grab},
        {"modificationDateTime", PFI_J_ANY, 0, &mod, .fn = grab},
        {"objectType", PFI_J_ANY, 0, &ot, .fn = grab},
        {"priority", PFI_J_ANY, 0, &prio, .fn = grab},
        {"targets", PFI_J_ANY, 0, &tg, .fn = grab},
        {"payloadDescriptors", PFI_J_ANY, 0, &desc, .fn = grab},
        {"intervalPeriod", PFI_J_ANY, 0, &ip, .fn = grab},
        {"intervals", PFI_J_ANY, 0, &iv, .fn = grab},
        {"duration", PFI_J_ANY, 0, &dur, .fn = grab},
        {"reportDescriptors", PFI_J_ANY, 0, &rd, .fn = grab},
    };
    pfi_jopts jo = {.unknown = PFI_J_UNKNOWN_IGNORE};
    if (!json_is_object(e))
        return reject(ev, PFI_OADR_R_MALFORMED, err, "object: expected an EVENT object");
    if (PFI_JSON_OBJ_READ(e, keys, &jo, err)) return keep(ev, PFI_OADR_R_MALFORMED, err);
    if (!json_is_string(id) || !oadr_id_ok(json_string_value(id)))
        return reject(ev, PFI_OADR_R_MALFORMED, err,
                      "id: expected 1..128 letters, digits, '_', '-' (an OpenADR objectID)");
    snprintf(ev->id, sizeof ev->id, "%s", json_string_value(id));
    if (mod && !json_is_null(mod) &&
        (!json_is_string(mod) || pfi_rfc3339_parse(json_string_value(mod), &ev->modified)))
        return reject(ev, PFI_OADR_R_MALFORMED, err, "modificationDateTime: expected RFC 3339");
    if (ot && !json_is_null(ot) && (!json_is_string(ot) || strcmp(json_string_value(ot), "EVENT")))
        return reject(ev, PFI_OADR_R_MALFORMED, err, "objectType: expected EVENT");
    if (prio && !json_is_null(prio)) {
        if (!json_is_integer(prio) || json_integer_value(prio) < 0 ||
            json_integer_value(prio) > 1000000000)
            return reject(ev, PFI_OADR_R_MALFORMED, err, "priority: expected an integer >= 0");
        ev->has_priority = 1;
        ev->priority = (int)json_integer_value(prio);
    }
    if (desc && !json_is_null(desc) && !json_is_array(desc))
        return reject(ev, PFI_OADR_R_MALFORMED, err, "payloadDescriptors: expected an array");
    if (targets_read(tg, o, ev, err)) return PFI_EINVAL;
    if (ev->op != PFI_OADR_OP_UPSERT) return PFI_OK; /* the rest is not needed */
    report_descriptors(rd, ev);
    if (dur && !json_is_null(dur))
        return reject(ev, PFI_OADR_R_LOOP, err,
                      "duration: an event-level duration (repeating the intervals) is not "
                      "supported");
    period ep;
    if (period_read(ip, "intervalPeriod", &ep, err)) return keep(ev, PFI_OADR_R_MALFORMED, err);
    if (!json_is_array(iv) || json_array_size(iv) == 0)
        return reject(ev, PFI_OADR_R_INTERVALS, err, "intervals: expected a non-empty array");
    double t = NAN, d0 = NAN;
    int open0 = 0;
    if (ep.start && start_read(json_string_value(ep.start), o->now, &t))
        return reject(ev, PFI_OADR_R_MALFORMED, err,
                      "intervalPeriod.start: expected RFC 3339 or 0001-01-01 (now)");
    if (ep.duration && duration_read(json_string_value(ep.duration), &d0, &open0))
        return reject(ev, PFI_OADR_R_DURATION, err,
                      "intervalPeriod.duration: %.40s is not an ISO 8601 duration of days, hours, "
                      "minutes, seconds (or P9999Y)",
                      json_string_value(ep.duration));
    size_t i;
    json_t *x;
    int after_open = 0;
    size_t zero = 0; /* intervals of duration PT0S */
    json_array_foreach(iv, i, x)
    {
        char name[48];
        snprintf(name, sizeof name, "intervals[%zu].intervalPeriod", i);
        if (!json_is_object(x))
            return reject(ev, PFI_OADR_R_MALFORMED, err, "intervals[%zu]: expected an object", i);
        period p;
        if (period_read(json_object_get(x, "intervalPeriod"), name, &p, err))
            return keep(ev, PFI_OADR_R_MALFORMED, err);
        double st = t, d = d0;
        int open = open0;
        if (p.start && start_read(json_string_value(p.start), o->now, &st))
            return reject(ev, PFI_OADR_R_MALFORMED, err,
                          "%s.start: expected RFC 3339 or 0001-01-01 (now)", name);
        if (p.duration && duration_read(json_string_value(p.duration), &d, &open))
            return reject(ev, PFI_OADR_R_DURATION, err,
                          "%s.duration: %.40s is not an ISO 8601 duration of days, hours, "
                          "minutes, seconds (or P9999Y)",
                          name, json_string_value(p.duration));
        if (isnan(st))
            return reject(ev, PFI_OADR_R_MALFORMED, err, "intervalPeriod.start: missing");
        if (after_open && !p.start)
            return reject(ev, PFI_OADR_R_DURATION, err,
                          "intervals[%zu]: follows an interval of P9999Y (until cancelled)", i);
        if (!open && isnan(d))
            return reject(ev, PFI_OADR_R_DURATION, err, "intervalPeriod.duration: missing");
        if (!open && d == 0) { /* PT0S: a window of no duration (the User Guide's cancel) */
            zero++;
            t = st;
            continue;
        }
        if (!open && !(d >= 1 && d <= PFI_EVENT_MAX_DURATION_S))
            return reject(ev, PFI_OADR_R_DURATION, err,
                          "intervalPeriod.duration: %.40s is outside 1 s .. 7 days (PT1S .. P7D; "
                          "P9999Y: until cancelled)",
                          json_string_value(p.duration ? p.duration : ep.duration));
        t = open ? INFINITY : st + d;
        after_open |= open;
        pfi_grid_event s;
        memset(&s, 0, sizeof s);
        s.ramp_s = s.ramp_down_s = NAN;
        snprintf(s.source, sizeof s.source, "openadr");
        s.start = st;
        s.open_ended = open;
        s.duration_s = open ? 0 : d;
        s.has_priority = ev->has_priority;
        s.priority = ev->priority;
        int found;
        if (payload_read(json_object_get(x, "payloads"), i, desc, o, &s, &found, ev, err))
            return PFI_EINVAL;
        if (!found) {
            note_add(ev, "intervals[%zu]: no IMPORT_CAPACITY_LIMIT or SIMPLE payload", i);
            continue;
        }
        if (ev->nsteps == PFI_OADR_MAX_STEPS)
            return reject(ev, PFI_OADR_R_INTERVALS, err, "intervals: more than %d with a payload",
                          PFI_OADR_MAX_STEPS);
        ev->step[ev->nsteps++] = s;
    }
    if (!ev->nsteps && zero == json_array_size(iv)) {
        ev->op = PFI_OADR_OP_DELETE; /* every interval PT0S: the event is cancelled */
        return PFI_OK;
    }
    if (zero) note_add(ev, "%zu intervals of duration PT0S skipped", zero);
    if (!ev->nsteps)
        return reject(ev, PFI_OADR_R_PAYLOAD, err,
                      "intervals: no IMPORT_CAPACITY_LIMIT or SIMPLE payload");
    for (size_t k = 0; k < ev->nsteps; k++) {
        if (ev->nsteps == 1) snprintf(ev->step[k].id, sizeof ev->step[k].id, "%s", ev->id);
        else snprintf(ev->step[k].id, sizeof ev->step[k].id, "%s.%u", ev->id, (unsigned)(k % 1000));
        pfi_error pe;
        if (pfi_grid_event_check(&ev->step[k], &pe))
            return reject(ev, PFI_OADR_R_MALFORMED, err, "intervals: step %zu: %s", k, pe.msg);
    }
    return PFI_OK;
}

pfi_status pfi_oadr_parse(const char *text, size_t len, const pfi_oadr_opts *o, pfi_oadr_event *ev,
                          pfi_error *err)
{
    memset(ev, 0, sizeof *ev);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return reject(ev, PFI_OADR_R_MALFORMED, err, "OpenADR: line %d column %d: %s", je.line,
                      je.column, je.text);
    pfi_status st = PFI_OK;
    json_t *e = root;
    if (!json_is_object(root))
        st = reject(ev, PFI_OADR_R_MALFORMED, err, "OpenADR: expected a JSON object");
    else if (json_object_get(root, "operation")) { /* a notification */
        const char *ot = json_string_value(json_object_get(root, "objectType"));
        const char *op = json_string_value(json_object_get(root, "operation"));
        e = json_object_get(root, "object");
        if (!ot || strcmp(ot, "EVENT"))
            st = reject(ev, PFI_OADR_R_MALFORMED, err,
                        "objectType: only EVENT notifications are handled");
        else if (!op) st = reject(ev, PFI_OADR_R_MALFORMED, err, "operation: expected a string");
        else if (!strcmp(op, "POST") || !strcmp(op, "PUT") || !strcmp(op, "CREATE") ||
                 !strcmp(op, "UPDATE"))
            ev->op = PFI_OADR_OP_UPSERT;
        else if (!strcmp(op, "DELETE")) ev->op = PFI_OADR_OP_DELETE;
        else if (!strcmp(op, "READ")) ev->op = PFI_OADR_OP_READ;
        else
            st = reject(ev, PFI_OADR_R_MALFORMED, err,
                        "operation: expected CREATE, READ, UPDATE, DELETE (3.1) or POST, PUT, "
                        "DELETE (3.0.1)");
    }
    if (!st) st = event_read(e, o, ev, err);
    json_decref(root);
    return st;
}

pfi_oadr_verdict pfi_oadr_book_note(pfi_oadr_book *b, const char *id, double modified, int deleted,
                                    int *report)
{
    *report = 1;
    for (size_t i = 0; i < b->n; i++) {
        pfi_oadr_seen *s = &b->v[i];
        if (strcmp(s->id, id)) continue;
        if (modified > s->modified || (deleted && !s->deleted && modified == s->modified)) {
            s->modified = modified;
            s->deleted = deleted;
            s->reported = NAN;
            return PFI_OADR_NEWER;
        }
        if (modified == s->modified) {
            *report = 0;
            return PFI_OADR_SAME;
        }
        *report = !(s->reported == modified);
        s->reported = modified;
        return PFI_OADR_OLDER;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        pfi_oadr_seen *v = realloc(b->v, cap * sizeof *v);
        if (!v) return PFI_OADR_NEW;
        b->v = v;
        b->cap = cap;
    }
    pfi_oadr_seen *s = &b->v[b->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    s->modified = modified;
    s->reported = NAN;
    s->deleted = deleted;
    return PFI_OADR_NEW;
}

void pfi_oadr_book_free(pfi_oadr_book *b)
{
    free(b->v);
    memset(b, 0, sizeof *b);
}
