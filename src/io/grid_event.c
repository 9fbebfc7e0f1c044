/* grid_event.c — canonical and OpenADR 3 grid events (grid_event.h). */
#include "grid_event.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event_kind.h"
#include "json_obj.h"

static int digits(const char *s, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 0;
}

int pfi_rfc3339_parse(const char *s, double *t)
{
    int Y, M, D, h, m, sec;
    if (strlen(s) < 20 || digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) || s[7] != '-' ||
        digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &m) || s[16] != ':' ||
        digits(s + 17, 2, &sec))
        return -1;
    if (Y < 1 || Y > 9999 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -1;
    const char *p = s + 19;
    double frac = 0;
    if (*p == '.') {
        p++;
        double scale = 0.1;
        if (!isdigit((unsigned char)*p)) return -1;
        while (isdigit((unsigned char)*p)) frac += (*p++ - '0') * scale, scale /= 10;
    }
    int off = 0;
    if (*p == 'Z' || *p == 'z') p++;
    else if (*p == '+' || *p == '-') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return -1;
        off = (oh * 60 + om) * 60 * (*p == '+' ? 1 : -1);
        p += 6;
    } else return -1;
    if (*p) return -1;
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (D > mdays[M - 1]) return -1;
    if (M == 2 && D == 29 && !((Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0)) return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    *t = (double)timegm(&tm) - off + frac;
    return 0;
}

void pfi_rfc3339_format(double t, char *buf, size_t n)
{
    /* to the millisecond, rounded (with carry): a time stored and read back
       prints the same (truncation printed .835 for .836 after a restart) */
    double ms_total = round(t * 1000);
    time_t s = (time_t)floor(ms_total / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    /* "YYYY-MM-DDTHH:MM:SS", the year zero-padded (strftime's %Y writes
       year 447 as "447", which RFC 3339 refuses: found by fuzz_events); the
       events' bounds keep years to 4 digits */
    char b[48];
    snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    unsigned ms = (unsigned)(ms_total - (double)s * 1000) % 1000u;
    if (ms) snprintf(buf, n, "%s.%03uZ", b, ms);
    else snprintf(buf, n, "%sZ", b);
}

int pfi_iso8601_duration(const char *s, double *seconds)
{
    if (*s != 'P') return -1;
    s++;
    double total = 0;
    int in_time = 0, any = 0, any_time = 0;
    while (*s) {
        if (*s == 'T') {
            if (in_time) return -1;
            in_time = 1;
            s++;
            continue;
        }
        /* digits, an optional fraction: no sign, exponent, hex, inf or nan
         * (strtod took "1e303", which made an event run forever) */
        const char *end = s;
        double v = 0;
        while (isdigit((unsigned char)*end) && end - s < 12) v = v * 10 + (*end++ - '0');
        if (end == s || isdigit((unsigned char)*end)) return -1; /* none, or more than 12 digits */
        if (*end == '.' || *end == ',') {
            const char *f = ++end;
            for (double scale = 0.1; isdigit((unsigned char)*end) && end - f < 9; scale /= 10)
                v += (*end++ - '0') * scale;
            if (end == f || isdigit((unsigned char)*end)) return -1;
        }
        char u = *end;
        double mult = 0;
        if (!in_time && u == 'W') mult = 7 * 86400;
        else if (!in_time && u == 'D') mult = 86400;
        else if (in_time && u == 'H') mult = 3600;
        else if (in_time && u == 'M') mult = 60;
        else if (in_time && u == 'S') mult = 1;
        else return -1; /* years and months have no fixed length */
        total += v * mult;
        any = 1;
        any_time += in_time;
        s = end + 1;
    }
    if (!any || (in_time && !any_time) || !isfinite(total)) return -1;
    *seconds = total;
    return 0;
}

static int id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > PFI_EVENT_ID_MAX) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-') return 0;
    return 1;
}

/* errors quote field names from the input: keep them one line */
static pfi_status one_line(pfi_status st, pfi_error *err)
{
    if (st && err)
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return st;
}

static void gen_id(pfi_grid_event *ev)
{
    static unsigned long counter;
    snprintf(ev->id, sizeof ev->id, "evt-%.0f-%lu", ev->start, ++counter);
}

static pfi_status id_field(const pfi_jkey *k, json_t *v, const char *name, void *ud, pfi_error *err)
{
    (void)ud;
    if (!json_is_string(v) || !id_ok(json_string_value(v)))
        return pfi_errorf(err, PFI_EINVAL,
                          "%s: expected 1..140 characters of letters, digits, '.', '_', '-'", name);
    snprintf(k->dst, k->size, "%s", json_string_value(v));
    return PFI_OK;
}

static pfi_status start_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                              pfi_error *err)
{
    (void)ud;
    if (!json_is_string(v) || pfi_rfc3339_parse(json_string_value(v), k->dst))
        return pfi_errorf(err, PFI_EINVAL,
                          "%s: expected an RFC 3339 time such as 2026-12-02T18:00:00Z", name);
    return PFI_OK;
}

/* "duration": ISO 8601 (PT1H) beside duration_s, in the same bounds */
static pfi_status iso_duration_field(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                                     pfi_error *err)
{
    (void)ud;
    double *d = k->dst;
    if (!json_is_string(v) || pfi_iso8601_duration(json_string_value(v), d))
        return pfi_errorf(err, PFI_EINVAL, "%s: expected an ISO 8601 duration such as PT1H", name);
    if (!(*d >= 1 && *d <= PFI_EVENT_MAX_END_S))
        return pfi_errorf(err, PFI_ERANGE, "%s: expected at least PT1S", name);
    return PFI_OK;
}

pfi_status pfi_grid_event_parse(const char *text, size_t len, pfi_grid_event *ev, pfi_error *err)
{
    memset(ev, 0, sizeof *ev);
    ev->ramp_s = ev->ramp_down_s = NAN;
    snprintf(ev->source, sizeof ev->source, "api");
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return one_line(pfi_errorf(err, PFI_EPARSE, "event: line %d column %d: %s", je.line,
                                   je.column, je.text),
                        err);
    int have_dur = 0, have_iso = 0, have_open = 0, seen[PFI_EV_KINDS_MAX] = {0};
    double iso_s = 0;
    pfi_jkey keys[8 + PFI_EV_KINDS_MAX] = {
        {"id", PFI_J_ANY, 0, ev->id, sizeof ev->id, .fn = id_field},
        {"start", PFI_J_ANY, PFI_J_REQUIRED, &ev->start, .fn = start_field},
        {"duration_s", PFI_J_NUMBER, 0, &ev->duration_s, .lo = 1, .hi = PFI_EVENT_MAX_END_S,
         .expect = "expected at least 1 second, ending by 9999-12-31T23:59:59Z", .code = PFI_ERANGE,
         .seen = &have_dur},
        {"duration", PFI_J_ANY, 0, &iso_s, .fn = iso_duration_field, .seen = &have_iso},
        {"open_ended", PFI_J_BOOL, .dst = &have_open},
        {"ramp_s", PFI_J_NUMBER, 0, &ev->ramp_s, .lo = 0, .hi = 86400,
         .expect = "expected 0..86400 seconds", .code = PFI_ERANGE},
        {"ramp_down_s", PFI_J_NUMBER, 0, &ev->ramp_down_s, .lo = 0, .hi = 86400,
         .expect = "expected 0..86400 seconds", .code = PFI_ERANGE},
        {"dry_run", PFI_J_BOOL, .dst = &ev->dry_run},
    };
    size_t nkeys = 8;
    for (size_t k = 0; k < pfi_event_nkinds && k < PFI_EV_KINDS_MAX; k++) { /* event_kind.c */
        const pfi_event_kind_row *r = &pfi_event_kinds[k];
        keys[nkeys++] = (pfi_jkey){r->name,
                                   r->integer ? PFI_J_INTEGER : PFI_J_NUMBER,
                                   r->open,
                                   (char *)ev + r->offset,
                                   r->integer ? sizeof(int) : 0,
                                   r->lo,
                                   r->hi,
                                   r->expect,
                                   PFI_ERANGE,
                                   .seen = &seen[k]};
    }
    pfi_jkey priority = {"priority",
                         PFI_J_INTEGER,
                         0,
                         &ev->priority,
                         sizeof ev->priority,
                         .lo = 0,
                         .hi = 1e9,
                         .expect = "expected an integer 0..1000000000",
                         .code = PFI_ERANGE,
                         .seen = &ev->has_priority};
    keys[nkeys++] = priority;
    char kinds_or[160], kinds_and[160], unknown[320];
    pfi_event_kind_list(kinds_or, sizeof kinds_or, " | ", " | ");
    pfi_event_kind_list(kinds_and, sizeof kinds_and, ", ", " and ");
    snprintf(unknown, sizeof unknown,
             "unknown field (expected id, start, duration_s | duration | open_ended, %s, ramp_s, "
             "ramp_down_s, dry_run, priority)",
             kinds_or);
    pfi_jopts opts = {.unknown_text = unknown};
    pfi_status st = json_is_object(o)
                        ? pfi_json_obj_read(o, keys, nkeys, &opts, err)
                        : pfi_errorf(err, PFI_EINVAL, "event: expected a JSON object");
    ev->open_ended = have_open;
    int nkind = 0;
    for (size_t k = 0; k < pfi_event_nkinds && k < PFI_EV_KINDS_MAX; k++)
        if (seen[k]) nkind++, ev->kind = pfi_event_kinds[k].kind;
    if (!st && have_dur && have_iso)
        st = pfi_errorf(err, PFI_EINVAL, "duration, duration_s: give one of them, not both");
    if (!st && have_iso) ev->duration_s = iso_s, have_dur = 1;
    if (!st && !have_dur && !have_open)
        st = pfi_errorf(err, PFI_EINVAL,
                        "duration_s: missing (or \"open_ended\": true: until cancelled)");
    if (!st && nkind != 1) st = pfi_errorf(err, PFI_EINVAL, "give exactly one of %s", kinds_and);
    if (!st && !ev->id[0]) gen_id(ev);
    if (!st) st = pfi_grid_event_check(ev, err);
    json_decref(o);
    return one_line(st, err);
}

char *pfi_grid_event_format(const pfi_grid_event *ev)
{
    if (pfi_grid_event_check(ev, NULL)) return NULL; /* never a partial event */
    char start[40];
    pfi_rfc3339_format(ev->start, start, sizeof start);
    json_t *o = json_pack("{s:s,s:s}", "id", ev->id, "start", start);
    if (!o) return NULL;
    if (ev->open_ended) json_object_set_new(o, "open_ended", json_true());
    if (!ev->open_ended || ev->duration_s > 0)
        json_object_set_new(o, "duration_s", json_real(ev->duration_s));
    const pfi_event_kind_row *kind = pfi_event_kind_of(ev->kind); /* checked: there is one */
    double value = pfi_grid_event_value(ev);
    json_object_set_new(o, kind->name,
                        kind->integer ? json_integer((json_int_t)value) : json_real(value));
    if (!isnan(ev->ramp_s)) json_object_set_new(o, "ramp_s", json_real(ev->ramp_s));
    if (!isnan(ev->ramp_down_s)) json_object_set_new(o, "ramp_down_s", json_real(ev->ramp_down_s));
    if (ev->dry_run) json_object_set_new(o, "dry_run", json_true());
    if (ev->has_priority) json_object_set_new(o, "priority", json_integer(ev->priority));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

pfi_status pfi_grid_event_check(const pfi_grid_event *ev, pfi_error *err)
{
    if (!id_ok(ev->id))
        return pfi_errorf(err, PFI_EINVAL,
                          "id: expected 1..140 characters of letters, digits, '.', '_', '-'");
    /* RFC 3339 as parsed: years 0001..9999 (and a day of offset either side) */
    if (!isfinite(ev->start) || ev->start < PFI_EVENT_MIN_START_S - 86400 ||
        ev->start > PFI_EVENT_MAX_END_S + 86400)
        return pfi_errorf(err, PFI_ERANGE, "start: not a time from 0001 to 9999");
    int bounded = !ev->open_ended || ev->duration_s != 0;
    if (bounded && !(ev->duration_s >= 1 && ev->start + ev->duration_s <= PFI_EVENT_MAX_END_S))
        return pfi_errorf(err, PFI_ERANGE,
                          ev->open_ended
                              ? "duration_s: an open-ended event has none, or ended after at "
                                "least 1 s"
                              : "duration_s: expected at least 1 second, ending by "
                                "9999-12-31T23:59:59Z, or \"open_ended\": true");
    const pfi_event_kind_row *kind = pfi_event_kind_of(ev->kind);
    if (!kind) {
        char kinds[160];
        pfi_event_kind_list(kinds, sizeof kinds, ", ", " and ");
        return pfi_errorf(err, PFI_EINVAL, "give exactly one of %s", kinds);
    }
    double v = pfi_grid_event_value(ev);
    if (!((kind->open & PFI_J_LO_OPEN ? v > kind->lo : v >= kind->lo) &&
          (kind->open & PFI_J_HI_OPEN ? v < kind->hi : v <= kind->hi)))
        return pfi_errorf(err, PFI_ERANGE, "%s: %s", kind->name, kind->expect);
    if (ev->has_priority && !(ev->priority >= 0 && ev->priority <= 1000000000))
        return pfi_errorf(err, PFI_ERANGE, "priority: expected an integer 0..1000000000");
    if (!isnan(ev->ramp_s) && !(ev->ramp_s >= 0 && ev->ramp_s <= 86400))
        return pfi_errorf(err, PFI_ERANGE, "ramp_s: expected 0..86400 seconds");
    if (!isnan(ev->ramp_down_s) && !(ev->ramp_down_s >= 0 && ev->ramp_down_s <= 86400))
        return pfi_errorf(err, PFI_ERANGE, "ramp_down_s: expected 0..86400 seconds");
    return PFI_OK;
}

double pfi_grid_event_end(const pfi_grid_event *ev)
{
    return ev->open_ended && ev->duration_s == 0 ? INFINITY : ev->start + ev->duration_s;
}
