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
#include "openadr_steps.h"

static const char *const reason_names[PFI_OADR_NREASONS] = {
    "ok",      "malformed", "operation", "unit",    "duration",  "loop", "intervals", "payload",
    "targets", "stale",     "ended",     "refused", "collision", "page", "steps"};

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

/* a start: RFC 3339, or the specification's "now": any 0001-01-01, whatever
 * its time or offset ("0001-01-01", "0001-01-01T00:00:00Z",
 * "0001-01-01T00:00:00+00:00": VTNs that store timestamps write it so).
 * 0 (*now_ = 1 for "now"), or -1 */
static int start_read(const char *s, double *t, int *now_)
{
    *now_ = 0;
    if (!strncmp(s, "0001-01-01", 10)) {
        double ignored;
        char z[48];
        snprintf(z, sizeof z, "%.40sZ", s); /* a time without an offset: as UTC */
        if (s[10] && pfi_rfc3339_parse(s, &ignored) && pfi_rfc3339_parse(z, &ignored)) return -1;
        *now_ = 1;
        return 0;
    }
    return pfi_rfc3339_parse(s, t);
}

/* days from 1970-01-01 of a proleptic Gregorian date (any year) */
static long long days_from_civil(long long y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int month_days(long long y, int m)
{
    static const int md[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return md[m - 1] + (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
}

/* start + years and months in UTC, the day of month clamped to the
 * month's last (XML Schema 1.1 Part 2, appendix E: 2026-01-31 + P1M is
 * 2026-02-28); the time of day kept */
static double add_calendar(double start, double years, double months)
{
    double day_s = floor(start / 86400);
    double tod = start - day_s * 86400;
    /* civil from days (H. Hinnant's algorithm) */
    long long z = (long long)day_s + 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1), m = (int)(mp < 10 ? mp + 3 : mp - 9);
    y += m <= 2;
    long long mi = (long long)m - 1 + (long long)months;
    y += (long long)years + (mi >= 0 ? mi / 12 : (mi - 11) / 12);
    m = (int)(((mi % 12) + 12) % 12) + 1;
    if (d > month_days(y, m)) d = month_days(y, m);
    return (double)days_from_civil(y, m, d) * 86400 + tod;
}

/* digits, then an optional fraction (*frac = 1); the number of characters
 * read, 0 when none */
static size_t number_read(const char *s, double *v, int *frac)
{
    const char *p = s;
    *v = 0, *frac = 0;
    while (isdigit((unsigned char)*p)) *v = *v * 10 + (*p++ - '0');
    if (p == s) return 0;
    if (*p == '.' || *p == ',') {
        const char *f = ++p;
        for (double scale = 0.1; isdigit((unsigned char)*p); scale /= 10)
            *v += (*p++ - '0') * scale;
        if (p == f) return 0;
        *frac = 1;
    }
    return (size_t)(p - s);
}

/* The OpenADR duration from start: the specification's pattern
 * (-?)P[nY][nM][nW|nD][T[nH][nM][n[.n]S]], e.g. PT1H, P1D, openleadr-rs's
 * full form P0Y0M0DT1H0M0S and P9999Y0M0DT0H0M0S; also a week part beside
 * days and a fraction of hours or minutes (ISO 8601 allows them; the
 * canonical API reads them). Years and months are calendar steps in UTC
 * from the start; weeks, days and the time part are fixed lengths. An end
 * after 9999-12-31T23:59:59Z (any P9999Y, any huge count) is "until
 * cancelled" (*open = 1). A negative duration (leading '-') and anything
 * else is -1; *d is the length in seconds otherwise. */
int pfi_oadr_duration(const char *s, double start, double *d, int *open)
{
    *open = 0;
    if (*s != 'P') return -1; /* a '-' sign: negative, refused */
    const char *p = s + 1;
    static const char units[] = "YMWDHMS";
    double part[7] = {0};
    int at = 0, in_time = 0, any = 0, any_time = 0;
    while (*p) {
        if (*p == 'T') {
            if (in_time || p[1] == '\0') return -1;
            in_time = 1, at = 4, p++;
            continue;
        }
        double v;
        int frac;
        size_t n = number_read(p, &v, &frac);
        if (!n) return -1;
        char u = p[n];
        int k = at;
        while (k < 7 && !(units[k] == u && (k >= 4) == in_time)) k++;
        if (k == 7 || (frac && k < 2)) return -1; /* no fraction of a year or month */
        part[k] = v, at = k + 1, any = 1, any_time += in_time;
        p += n + 1;
    }
    if (!any || (in_time && !any_time)) return -1;
    if (part[0] > 1e5 || part[1] > 1e6) { /* beyond any year this parser can hold */
        *open = 1, *d = 0;
        return 0;
    }
    double end = add_calendar(start, part[0], part[1]) + part[2] * 604800 + part[3] * 86400 +
                 part[4] * 3600 + part[5] * 60 + part[6];
    if (!(end <= PFI_EVENT_MAX_END_S)) { /* after 9999-12-31T23:59:59Z (or not finite) */
        *open = 1, *d = 0;
        return 0;
    }
    *d = end - start;
    return 0;
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

/* kW per unit of a payload type's values in one list of descriptors: 1,
 * 1e-3, 1e3; 0 for an unknown unit; -1 when the list gives none for it */
static double unit_kw_in(json_t *descriptors, const char *type, char *unit, size_t n)
{
    size_t i;
    json_t *d;
    snprintf(unit, n, "(not a string)");
    json_array_foreach(descriptors, i, d)
    {
        const char *pt = json_string_value(json_object_get(d, "payloadType"));
        if (!pt || strcmp(pt, type)) continue;
        json_t *u = json_object_get(d, "units");
        if (!u || json_is_null(u)) continue; /* a descriptor without a unit: look further */
        const char *s = json_string_value(u);
        if (!s) return 0;
        snprintf(unit, n, "%s", s); /* a copy: the program's descriptors are freed below */
        if (!strcmp(s, "KW")) return 1;
        if (!strcmp(s, "W")) return 1e-3;
        if (!strcmp(s, "MW")) return 1e3;
        return 0;
    }
    return -1;
}

/* kW per unit: the event's descriptors, else the program's, else KW */
static double unit_kw(json_t *descriptors, const pfi_oadr_opts *o, const char *type, char *unit,
                      size_t n)
{
    double f = unit_kw_in(descriptors, type, unit, n);
    if (f >= 0 || !o->program_descriptors) return f >= 0 ? f : 1;
    json_t *pd = json_loads(o->program_descriptors, 0, NULL);
    f = unit_kw_in(pd, type, unit, n);
    json_decref(pd);
    return f >= 0 ? f : 1;
}

/* a target value as text: a string, or a number's decimal text (a resource
 * named 42 matches "42"); NULL otherwise */
static const char *target_text(json_t *v, char *buf, size_t n)
{
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v) && isfinite(json_real_value(v))) {
        double x = json_real_value(v);
        if (x == floor(x) && fabs(x) < 1e15) snprintf(buf, n, "%.0f", x);
        else snprintf(buf, n, "%.17g", x);
        return buf;
    }
    return NULL;
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
            char num[40];
            const char *s = target_text(x, num, sizeof num);
            if (!s)
                return reject(ev, PFI_OADR_R_MALFORMED, err,
                              "targets[%zu]: expected a string (OpenADR 3.1)", i);
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
            char num[40];
            const char *s = target_text(v, num, sizeof num);
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

/* the payload pfi acts on in one interval: IMPORT_CAPACITY_LIMIT first,
 * then SIMPLE (values NULL: neither) */
typedef struct acted {
    json_t *values; /* its values: one per sub-interval (User Guide 7.3) */
    size_t k;       /* its place in payloads */
    int capacity;   /* IMPORT_CAPACITY_LIMIT (else SIMPLE) */
    double kw;      /* kW per unit of a capacity limit */
} acted;

static pfi_status payload_pick(json_t *payloads, size_t i, json_t *desc, const pfi_oadr_opts *o,
                               acted *a, pfi_oadr_event *ev, pfi_error *err)
{
    size_t k;
    json_t *pl;
    memset(a, 0, sizeof *a);
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
    for (int pass = 0; pass < 2 && !a->values; pass++) json_array_foreach(payloads, k, pl)
        {
            const char *type = json_string_value(json_object_get(pl, "type"));
            if (!type)
                return reject(ev, PFI_OADR_R_MALFORMED, err,
                              "intervals[%zu].payloads[%zu].type: expected a string", i, k);
            if (strcmp(type, pass == 0 ? "IMPORT_CAPACITY_LIMIT" : "SIMPLE")) continue;
            a->values = json_object_get(pl, "values"), a->k = k, a->capacity = pass == 0;
            if (!json_is_array(a->values))
                return reject(ev, PFI_OADR_R_PAYLOAD, err,
                              "intervals[%zu].payloads[%zu].values: expected an array", i, k);
            break;
        }
    if (!a->capacity) return PFI_OK;
    char unit[24];
    a->kw = unit_kw(desc, o, "IMPORT_CAPACITY_LIMIT", unit, sizeof unit);
    if (a->kw == 0)
        return reject(ev, PFI_OADR_R_UNIT, err,
                      "payloadDescriptors: IMPORT_CAPACITY_LIMIT in unit %.20s: expected KW (or "
                      "W, MW)",
                      unit);
    return PFI_OK;
}

/* value j of the acted-on payload as step s's target or level */
static pfi_status value_read(const acted *a, size_t i, size_t j, const pfi_oadr_opts *o,
                             pfi_grid_event *s, pfi_oadr_event *ev, pfi_error *err)
{
    json_t *val = json_array_get(a->values, j);
    double v = json_number_value(val);
    if (!a->capacity) {
        if (!json_is_number(val) || !(v >= 0 && v <= 3) || v != floor(v))
            return reject(ev, PFI_OADR_R_PAYLOAD, err,
                          "intervals[%zu].payloads[%zu].values[%zu]: SIMPLE level must be 0..3", i,
                          a->k, j);
        s->kind = PFI_EV_LEVEL;
        s->level = (int)v;
        return PFI_OK;
    }
    if (!json_is_number(val) || !isfinite(v) || !(v >= 0))
        return reject(ev, PFI_OADR_R_PAYLOAD, err,
                      "intervals[%zu].payloads[%zu].values[%zu]: IMPORT_CAPACITY_LIMIT must be a "
                      "number >= 0",
                      i, a->k, j);
    double kw = v * a->kw;
    s->kind = PFI_EV_TARGET_KW;
    s->target_kw = kw - o->non_gpu_offset_kw;
    if (!(s->target_kw > 0)) { /* nothing left for the GPUs: every job at its floor */
        if (!strstr(ev->note, "non-GPU offset"))
            note_add(ev,
                     "IMPORT_CAPACITY_LIMIT %g kW at or below the non-GPU offset %g kW: GPU "
                     "target 0 kW (every job at its floor)",
                     kw, o->non_gpu_offset_kw);
        s->target_kw = 0;
    }
    if (!(s->target_kw < PFI_EVENT_MAX_TARGET_KW))
        return reject(ev, PFI_OADR_R_PAYLOAD, err,
                      "intervals[%zu].payloads[%zu].values[%zu]: IMPORT_CAPACITY_LIMIT %g kW: a "
                      "GPU target of 1e6 kW or more",
                      i, a->k, j, kw);
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

/* interval i's steps, when it carries a payload pfi acts on: one, or one
 * per value of a multi-value payload — consecutive sub-intervals of
 * duration / n, value k in the k-th (User Guide 7.3, "multi-valued
 * payloads": "the duration of an intervalPeriod must be divided by the
 * number of entries in the payload values field"; hupe1980/openadr
 * src/core/interval.rs IntervalExpander::split, its bounds computed from
 * the interval's start so that rounding does not add up). n counts only
 * the payload pfi acts on: the values of others split nothing. Each keeps
 * the interval's id. *nint: intervals with a payload so far */
static pfi_status step_add(json_t *x, size_t i, double st, double d, int open, json_t *desc,
                           const pfi_oadr_opts *o, size_t *nint, pfi_oadr_event *ev, pfi_error *err)
{
    acted a;
    if (payload_pick(json_object_get(x, "payloads"), i, desc, o, &a, ev, err)) return PFI_EINVAL;
    if (!a.values) {
        note_add(ev, "intervals[%zu]: no IMPORT_CAPACITY_LIMIT or SIMPLE payload", i);
        return PFI_OK;
    }
    size_t n = json_array_size(a.values) ? json_array_size(a.values) : 1; /* none: values[0] */
    if (n > 1 && open) /* no end: nothing to divide (hupe1980 keeps it whole; we refuse) */
        return reject(ev, PFI_OADR_R_DURATION, err,
                      "intervals[%zu].payloads[%zu].values: %zu values on an interval until "
                      "cancelled: no duration to divide",
                      i, a.k, n);
    if (n > 1 && !(d / (double)n >= 1))
        return reject(ev, PFI_OADR_R_DURATION, err,
                      "intervals[%zu].payloads[%zu].values: %zu values over %g s: sub-intervals "
                      "under 1 s",
                      i, a.k, n, d);
    if (ev->nsteps + n > PFI_OADR_MAX_STEPS) {
        if (n == 1 && ev->nsteps == *nint)
            return reject(ev, PFI_OADR_R_INTERVALS, err,
                          "intervals: more than %d with a payload: the whole event is refused",
                          PFI_OADR_MAX_STEPS);
        return reject(ev, PFI_OADR_R_STEPS, err,
                      "intervals[%zu].payloads[%zu].values: the sub-intervals of multi-value "
                      "payloads make more than %d steps: the whole event is refused",
                      i, a.k, PFI_OADR_MAX_STEPS);
    }
    json_t *idv = json_object_get(x, "id");
    long long iid = json_is_integer(idv) ? (long long)json_integer_value(idv) : (long long)i;
    (*nint)++;
    for (size_t j = 0; j < n; j++) {
        pfi_grid_event s;
        memset(&s, 0, sizeof s);
        s.ramp_s = s.ramp_down_s = NAN;
        snprintf(s.source, sizeof s.source, "openadr");
        s.start = st + d * (double)j / (double)n;
        s.open_ended = open;
        s.duration_s = open ? 0 : d * (double)(j + 1) / (double)n - d * (double)j / (double)n;
        s.has_priority = ev->has_priority;
        s.priority = ev->priority;
        if (value_read(&a, i, j, o, &s, ev, err)) return PFI_EINVAL;
        ev->interval_id[ev->nsteps] = iid;
        ev->step[ev->nsteps++] = s;
    }
    return PFI_OK;
}

/* the start an interval's period gives: its own (RFC 3339; "now" on the
 * first interval is the event's start, on a later one the end of the one
 * before: User Guide 7.3), else the end of the one before (the event's start
 * for the first). event_start is the event's own (NaN: none; "now" there is
 * the receipt). 0, or -1 with the message in err */
static int interval_start(const period *p, size_t i, double event_start, double prev_end,
                          const pfi_oadr_opts *o, double *st, pfi_oadr_event *ev, pfi_error *err)
{
    int now_ = 0;
    *st = i == 0 ? event_start : prev_end;
    if (p->start && start_read(json_string_value(p->start), st, &now_)) {
        reject(ev, PFI_OADR_R_MALFORMED, err,
               "intervals[%zu].intervalPeriod.start: expected RFC 3339 or 0001-01-01 (now)", i);
        return -1;
    }
    if (now_) *st = i == 0 ? (isnan(event_start) ? o->now : event_start) : prev_end;
    if (isnan(*st)) {
        reject(ev, PFI_OADR_R_MALFORMED, err, "intervals[%zu].intervalPeriod.start: missing", i);
        return -1;
    }
    return 0;
}

/* the explicit start of interval i + 1's period (NaN: none, "now" or bad) */
static double next_start(json_t *iv, size_t i)
{
    json_t *ip = json_object_get(json_array_get(iv, i + 1), "intervalPeriod");
    const char *s = json_string_value(json_object_get(ip, "start"));
    double t = NAN;
    int now_;
    if (!s || start_read(s, &t, &now_) || now_) return NAN;
    return t;
}

/* an interval's length: its own duration, else the event's, else (neither:
 * openleadr-rs's reading of an interval without one) until the next
 * interval's explicit start, or until cancelled for the last one */
static int interval_length(const period *p, const period *ep, json_t *iv, size_t i, double st,
                           double *d, int *open, pfi_oadr_event *ev, pfi_error *err)
{
    const char *ds = json_string_value(p->duration ? p->duration : ep->duration);
    *open = 0;
    if (ds) {
        if (!pfi_oadr_duration(ds, st, d, open)) return 0;
        reject(ev, PFI_OADR_R_DURATION, err,
               "intervals[%zu]: duration %.40s is not an OpenADR duration (ISO 8601, not "
               "negative)",
               i, ds);
        return -1;
    }
    if (i + 1 == json_array_size(iv)) { /* the last: until cancelled */
        *open = 1, *d = 0;
        return 0;
    }
    double nx = next_start(iv, i);
    if (!(nx > st)) {
        reject(ev, PFI_OADR_R_DURATION, err,
               "intervals[%zu]: no duration, and the next interval gives no later start", i);
        return -1;
    }
    *d = nx - st;
    return 0;
}

/* every interval into ev's steps (with a payload pfi acts on); *sp: the
 * time they cover, every interval counted */
static pfi_status intervals_read(json_t *iv, const period *ep, json_t *desc, const pfi_oadr_opts *o,
                                 pfi_oadr_event *ev, size_t *zero, pfi_oadr_span *sp,
                                 pfi_error *err)
{
    double event_start = NAN, t = NAN;
    size_t nint = 0; /* intervals with a payload */
    sp->start_s = INFINITY, sp->end_s = -INFINITY;
    int now_ = 0;
    if (ep->start && start_read(json_string_value(ep->start), &event_start, &now_))
        return reject(ev, PFI_OADR_R_MALFORMED, err,
                      "intervalPeriod.start: expected RFC 3339 or 0001-01-01 (now)");
    if (now_) event_start = o->now;
    size_t i;
    json_t *x;
    int after_open = 0;
    json_array_foreach(iv, i, x)
    {
        char name[48];
        snprintf(name, sizeof name, "intervals[%zu].intervalPeriod", i);
        if (!json_is_object(x))
            return reject(ev, PFI_OADR_R_MALFORMED, err, "intervals[%zu]: expected an object", i);
        period p;
        if (period_read(json_object_get(x, "intervalPeriod"), name, &p, err))
            return keep(ev, PFI_OADR_R_MALFORMED, err);
        double st, d;
        int open;
        if (interval_start(&p, i, event_start, t, o, &st, ev, err)) return PFI_EINVAL;
        if (after_open && !(isfinite(st)))
            return reject(ev, PFI_OADR_R_DURATION, err,
                          "intervals[%zu]: follows an interval until cancelled", i);
        if (interval_length(&p, ep, iv, i, st, &d, &open, ev, err)) return PFI_EINVAL;
        sp->start_s = fmin(sp->start_s, st);
        sp->end_s = fmax(sp->end_s, open ? INFINITY : st + d);
        if (!open && d == 0) { /* PT0S: a window of no duration (the User Guide's cancel) */
            (*zero)++;
            t = st;
            continue;
        }
        if (!open && !(d >= 1))
            return reject(ev, PFI_OADR_R_DURATION, err,
                          "intervals[%zu]: a duration under 1 s (PT0S aside)", i);
        t = open ? INFINITY : st + d;
        after_open |= open;
        if (step_add(x, i, st, d, open, desc, o, &nint, ev, err)) return PFI_EINVAL;
    }
    return PFI_OK;
}

/* a metadata time: RFC 3339, or a date and time without an offset, read
 * as UTC (*local = 1): the OpenADR Alliance's reference VTN
 * (oadr3-org/openadr3-vtn-reference-implementation) stamps createdDateTime
 * and modificationDateTime as "2026-03-20 14:58:51". 0, or -1 */
static int meta_time_read(const char *s, double *t, int *local)
{
    char z[48];
    *local = 0;
    if (!pfi_rfc3339_parse(s, t)) return 0;
    if (strlen(s) > 40) return -1;
    snprintf(z, sizeof z, "%sZ", s);
    if (pfi_rfc3339_parse(z, t)) return -1;
    *local = 1;
    return 0;
}

/* modificationDateTime (the version; absent: 0) and createdDateTime (not
 * used: only its offset-less form is noted; the User Guide's own examples
 * write it as a bare time, "14:13:26") */
static pfi_status metadata_times(json_t *mod, json_t *created, pfi_oadr_event *ev, pfi_error *err)
{
    double t;
    int local = 0;
    if (mod && !json_is_null(mod) &&
        (!json_is_string(mod) || meta_time_read(json_string_value(mod), &ev->modified, &local)))
        return reject(ev, PFI_OADR_R_MALFORMED, err,
                      "modificationDateTime: expected RFC 3339 (or a date and time without an "
                      "offset, read as UTC)");
    ev->local_timestamp = local;
    if (json_is_string(created) && !meta_time_read(json_string_value(created), &t, &local))
        ev->local_timestamp |= local;
    return PFI_OK;
}

static pfi_status event_read(json_t *e, const pfi_oadr_opts *o, pfi_oadr_event *ev, pfi_error *err)
{
    json_t *id = NULL, *mod = NULL, *ot = NULL, *ip = NULL, *iv = NULL, *desc = NULL, *tg = NULL,
           *dur = NULL, *prio = NULL, *rd = NULL, *created = NULL;
    const pfi_jkey keys[] = {
        {"id", PFI_J_ANY, 0, &id, .fn = grab},
        {"modificationDateTime", PFI_J_ANY, 0, &mod, .fn = grab},
        {"createdDateTime", PFI_J_ANY, 0, &created, .fn = grab},
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
    if (metadata_times(mod, created, ev, err)) return PFI_EINVAL;
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
    pfi_oadr_opts oo = *o;
    double now_s = o->now; /* the caller's clock (a loop's passes), not the first receipt */
    if (o->first_receipt) oo.now = o->first_receipt(o->ud, ev->id, o->now);
    ev->first_s = oo.now;
    o = &oo;
    report_descriptors(rd, ev);
    if (dur && !json_is_null(dur) && !json_is_string(dur))
        return reject(ev, PFI_OADR_R_MALFORMED, err, "duration: expected a string");
    period ep;
    if (period_read(ip, "intervalPeriod", &ep, err)) return keep(ev, PFI_OADR_R_MALFORMED, err);
    if (!json_is_array(iv) || json_array_size(iv) == 0)
        return reject(ev, PFI_OADR_R_INTERVALS, err, "intervals: expected a non-empty array");
    size_t zero = 0; /* intervals of duration PT0S */
    pfi_oadr_span sp;
    if (intervals_read(iv, &ep, desc, o, ev, &zero, &sp, err)) return PFI_EINVAL;
    if (!ev->nsteps && zero == json_array_size(iv)) {
        ev->op = PFI_OADR_OP_DELETE; /* every interval PT0S: the event is cancelled */
        return PFI_OK;
    }
    if (zero) note_add(ev, "%zu intervals of duration PT0S skipped", zero);
    if (!ev->nsteps)
        return reject(ev, PFI_OADR_R_PAYLOAD, err,
                      "intervals: no IMPORT_CAPACITY_LIMIT or SIMPLE payload");
    pfi_oadr_reason r = pfi_oadr_steps_finish(ev, json_string_value(dur), &sp, now_s, err);
    if (r) return keep(ev, r, err);
    for (size_t k = 0; k < ev->nsteps; k++) {
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
