/* nvsmi.c — nvidia-smi --query-gpu CSV output (see telemetry.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "num.h"
#include "pfi/csv.h"
#include "telemetry.h"

enum {
    C_TS = 0,
    C_INDEX,
    C_UUID,
    C_POWER,
    C_LIMIT,
    C_MGMT,
    C_SM,
    C_MEM,
    C_UTIL,
    C_MUTIL,
    C_FB,
    C_TEMP,
    C_N
};

/* Field names as `nvidia-smi --help-query-gpu` documents them: the canonical
 * name (what the CSV header prints, e.g. "clocks.current.sm [MHz]") first,
 * then its documented aliases; a column matches with or without its
 * " [unit]" suffix. Where several columns map to one metric, the earlier
 * name in the list wins (power.draw before its .average/.instant forms). */
enum { MAX_ALIASES = 3 };
static const char *const col_names[C_N][MAX_ALIASES] = {
    [C_TS] = {"timestamp"},
    [C_INDEX] = {"index"},
    [C_UUID] = {"uuid"},
    [C_POWER] = {"power.draw", "power.draw.average", "power.draw.instant"},
    [C_LIMIT] = {"enforced.power.limit"},
    [C_MGMT] = {"power.limit"},
    [C_SM] = {"clocks.current.sm", "clocks.sm"},
    [C_MEM] = {"clocks.current.memory", "clocks.mem"},
    [C_UTIL] = {"utilization.gpu"},
    [C_MUTIL] = {"utilization.memory"},
    [C_FB] = {"memory.used"},
    [C_TEMP] = {"temperature.gpu"},
};
static const int col_metric[C_N] = {-1,
                                    -1,
                                    -1,
                                    PFI_M_POWER_USAGE,
                                    PFI_M_ENFORCED_LIMIT,
                                    PFI_M_MGMT_LIMIT,
                                    PFI_M_SM_CLOCK,
                                    PFI_M_MEM_CLOCK,
                                    PFI_M_GPU_UTIL,
                                    PFI_M_MEM_COPY_UTIL,
                                    PFI_M_FB_USED,
                                    PFI_M_GPU_TEMP};

/* which column and alias rank a header field names; -1 if none */
static int match_column(const char *f, size_t n, int *rank)
{
    for (int k = 0; k < C_N; k++)
        for (int a = 0; a < MAX_ALIASES && col_names[k][a]; a++)
            if (strlen(col_names[k][a]) == n && memcmp(col_names[k][a], f, n) == 0) {
                *rank = a;
                return k;
            }
    return -1;
}

int pfi_parse_tz_offset(const char *s, int *minutes)
{
    if (strcmp(s, "UTC") == 0 || strcmp(s, "Z") == 0 || strcmp(s, "utc") == 0) {
        *minutes = 0;
        return 0;
    }
    int sign;
    if (s[0] == '+') sign = 1;
    else if (s[0] == '-') sign = -1;
    else return -1;
    int h, m = 0;
    char tail;
    if (sscanf(s + 1, "%2d:%2d%c", &h, &m, &tail) == 2 ||
        sscanf(s + 1, "%2d%2d%c", &h, &m, &tail) == 2 ||
        (strlen(s) == 3 && sscanf(s + 1, "%2d%c", &h, &tail) == 1)) {
        if (h > 14 || m > 59) return -1;
        *minutes = sign * (h * 60 + m);
        return 0;
    }
    return -1;
}

/* trim spaces; strip a trailing " [unit]" (header) */
static void trim(char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
    while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

static int parse_ts(const char *s, size_t n, int tz_min, int64_t *ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int Y, M, D, h, m;
    double sec;
    char buf[64];
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char tail;
    if (sscanf(buf, "%4d/%2d/%2d %2d:%2d:%lf%c", &Y, &M, &D, &h, &m, &sec, &tail) != 6 &&
        sscanf(buf, "%4d-%2d-%2d %2d:%2d:%lf%c", &Y, &M, &D, &h, &m, &sec, &tail) != 6)
        return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || !(sec >= 0 && sec < 61))
        return -1;
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = 0;
    time_t t = timegm(&tm);
    *ms = (int64_t)t * 1000 + (int64_t)(sec * 1000.0 + 0.5) - (int64_t)tz_min * 60000;
    return 0;
}

static int missing_value(const char *s, size_t n)
{
    return (n && s[0] == '[') || (n == 3 && memcmp(s, "N/A", 3) == 0);
}

pfi_status pfi_nvsmi_read(pfi_reader *r, const char *host, int tz_offset_min, pfi_sample_fn fn,
                          void *ud, pfi_log *log, pfi_error *err)
{
    (void)log;
    pfi_csv c;
    pfi_csv_init(&c, r);
    int rc = pfi_csv_next(&c, err);
    pfi_status st = PFI_OK;
    if (rc <= 0) {
        pfi_csv_dispose(&c);
        if (rc == 0) return pfi_errorf(err, PFI_EINVAL, "%s: empty nvidia-smi file", r->name);
        return err ? err->code : PFI_EPARSE;
    }
    int col[C_N], rank[C_N];
    const char *col_name[C_N]; /* the name matched, for errors */
    for (int k = 0; k < C_N; k++) col[k] = -1;
    size_t nh = c.nfields;
    char hdr0[64];
    snprintf(hdr0, sizeof hdr0, "%s", c.fields[0]);
    for (size_t i = 0; i < nh; i++) {
        char *f = c.fields[i];
        size_t n = c.lens[i];
        trim(&f, &n);
        char *br = memchr(f, '[', n);
        if (br) {
            n = (size_t)(br - f);
            while (n && f[n - 1] == ' ') n--;
        }
        int a, k = match_column(f, n, &a);
        if (k < 0 || (col[k] >= 0 && rank[k] <= a)) continue;
        col[k] = (int)i;
        rank[k] = a;
        col_name[k] = col_names[k][a];
    }
    if (col[C_TS] < 0 || (col[C_INDEX] < 0 && col[C_UUID] < 0)) {
        pfi_csv_dispose(&c);
        return pfi_errorf(
            err, PFI_EINVAL,
            "%s:1: not nvidia-smi --query-gpu CSV (needs timestamp and index or uuid)", r->name);
    }
    size_t hl = host ? strlen(host) : 0;
    while ((rc = pfi_csv_next(&c, err)) == 1) {
        if (strcmp(c.fields[0], hdr0) == 0) continue; /* a repeated header */
        if (c.nfields != nh) {
            st = pfi_errorf(err, PFI_EPARSE, "%s:%llu: expected %zu fields, found %zu", r->name,
                            (unsigned long long)c.line, nh, c.nfields);
            break;
        }
        char *f = c.fields[col[C_TS]];
        size_t n = c.lens[col[C_TS]];
        trim(&f, &n);
        pfi_sample s;
        memset(&s, 0, sizeof s);
        if (parse_ts(f, n, tz_offset_min, &s.t_ms) != 0) {
            st = pfi_errorf(err, PFI_EPARSE,
                            "%s:%llu: column 'timestamp': '%.*s' is not YYYY/MM/DD HH:MM:SS.mmm",
                            r->name, (unsigned long long)c.line, (int)(n > 40 ? 40 : n), f);
            break;
        }
        if (col[C_INDEX] >= 0) {
            s.gpu.p = c.fields[col[C_INDEX]];
            s.gpu.n = c.lens[col[C_INDEX]];
            trim((char **)&s.gpu.p, &s.gpu.n);
        }
        if (col[C_UUID] >= 0) {
            s.uuid.p = c.fields[col[C_UUID]];
            s.uuid.n = c.lens[col[C_UUID]];
            trim((char **)&s.uuid.p, &s.uuid.n);
        }
        s.host.p = host;
        s.host.n = hl;
        s.line = c.line;
        for (int k = C_POWER; k < C_N; k++) {
            if (col[k] < 0) continue;
            char *v = c.fields[col[k]];
            size_t vn = c.lens[col[k]];
            trim(&v, &vn);
            if (missing_value(v, vn)) continue;
            /* values printed with units ("301.2 W") when nounits was not given */
            char *sp = memchr(v, ' ', vn);
            if (sp) vn = (size_t)(sp - v);
            double x;
            int e = pfi_parse_double(v, vn, &x);
            if (e) {
                st = pfi_errorf(err, PFI_EPARSE, "%s:%llu: column '%s': '%.*s' %s", r->name,
                                (unsigned long long)c.line, col_name[k], (int)(vn > 40 ? 40 : vn),
                                v, pfi_num_error_name(e));
                goto out;
            }
            s.metric = (pfi_metric)col_metric[k];
            s.value = x;
            if ((st = fn(ud, &s, err)) != PFI_OK) goto out;
        }
    }
    if (rc < 0 && !st) st = err ? err->code : PFI_EPARSE;
out:
    pfi_csv_dispose(&c);
    return st;
}
