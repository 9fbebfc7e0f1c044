/* prom.c — a fast Prometheus text-format reader for DCGM telemetry (see
 * prom.h). Tuned for dcgm-exporter's output: a line is split with memchr,
 * the metric name is matched against the short DCGM list (with a one-entry
 * cache, since a scrape lists each metric's GPUs together), unknown metrics
 * are skipped without touching their labels, and label values are found
 * with memchr on the closing quote. */
#include "pfi/prom.h"

#include <math.h>
#include <string.h>

#include "num.h"

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == ':';
}

/* parse an integer in [p, e); returns 0 ok */
static int parse_i64(const char *p, const char *e, int64_t *out)
{
    int neg = 0;
    if (p < e && (*p == '-' || *p == '+')) neg = *p++ == '-';
    if (p == e) return -1;
    int64_t v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*p - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

/* the label set after "{" (p), up to and with its "}": the labels pfi keeps
 * (UUID, gpu, Hostname) into s; where it ends, or NULL (*what says why) */
static const char *parse_labels(const char *p, const char *e, pfi_sample *s, const char **what)
{
    for (;;) {
        while (p < e && is_space(*p)) p++;
        if (p < e && *p == '}') return p + 1;
        const char *ln = p;
        while (p < e && name_char(*p)) p++;
        size_t ll = (size_t)(p - ln);
        if (ll == 0 || p >= e || *p != '=') {
            *what = "malformed label (expected name=\"value\")";
            return NULL;
        }
        p++;
        if (p >= e || *p != '"') {
            *what = "label value must be quoted";
            return NULL;
        }
        p++;
        const char *vs = p;
        const char *q;
        for (;;) {
            q = memchr(p, '"', (size_t)(e - p));
            if (!q) {
                *what = "unterminated label value";
                return NULL;
            }
            /* an escaped quote has an odd number of backslashes before it */
            size_t bs = 0;
            while (q - bs > vs && q[-1 - (ptrdiff_t)bs] == '\\') bs++;
            if (bs % 2 == 0) break;
            p = q + 1;
        }
        pfi_str val = {vs, (size_t)(q - vs)};
        if (ll == 4 && (memcmp(ln, "UUID", 4) == 0 || memcmp(ln, "uuid", 4) == 0)) s->uuid = val;
        else if (ll == 3 && memcmp(ln, "gpu", 3) == 0) s->gpu = val;
        else if (ll == 8 && (memcmp(ln, "Hostname", 8) == 0 || memcmp(ln, "hostname", 8) == 0))
            s->host = val;
        p = q + 1;
        while (p < e && is_space(*p)) p++;
        if (p < e && *p == ',') {
            p++;
            continue;
        }
        if (p < e && *p == '}') return p + 1;
        *what = "expected ',' or '}' in label set";
        return NULL;
    }
}

int pfi_prom_parse_line(const char *line, size_t n, pfi_sample *s, const char **what)
{
    const char *p = line, *e = line + n;
    while (p < e && is_space(*p)) p++;
    if (p == e || *p == '#') return 0;
    const char *name = p;
    while (p < e && name_char(*p)) p++;
    size_t nlen = (size_t)(p - name);
    if (nlen == 0) {
        *what = "expected a metric name";
        return -1;
    }
    int m = pfi_metric_lookup(name, nlen), named = 0;
    if (m < 0 && (m = pfi_metric_lookup_pfi(name, nlen)) >= 0) named = 1;
    if (m < 0) return 0; /* unknown metric: ignored, not validated */
    s->metric = (pfi_metric)m;
    s->pfi_named = named;
    s->uuid.n = s->gpu.n = s->host.n = 0;
    if (p < e && *p == '{' && !(p = parse_labels(p + 1, e, s, what))) return -1;
    if (p >= e || !is_space(*p)) {
        *what = "expected a space before the value";
        return -1;
    }
    while (p < e && is_space(*p)) p++;
    const char *vs = p;
    while (p < e && !is_space(*p)) p++;
    size_t vl = (size_t)(p - vs);
    if (vl == 0) {
        *what = "missing value";
        return -1;
    }
    double v;
    int rc = pfi_parse_double(vs, vl, &v);
    if (rc == PFI_NUM_OK) {
        s->value = named ? v * pfi_metric_get(s->metric)->pfi_scale : v;
    } else if ((vl == 3 && memcmp(vs, "NaN", 3) == 0) || (vl == 4 && memcmp(vs, "+Inf", 4) == 0) ||
               (vl == 4 && memcmp(vs, "-Inf", 4) == 0) || rc == PFI_NUM_RANGE) {
        s->value = NAN;
    } else {
        *what = "value is not a number";
        return -1;
    }
    while (p < e && is_space(*p)) p++;
    s->t_ms = INT64_MIN;
    if (p < e) {
        const char *ts = p;
        while (p < e && !is_space(*p)) p++;
        if (parse_i64(ts, p, &s->t_ms) != 0) {
            *what = "timestamp is not an integer (milliseconds)";
            return -1;
        }
        while (p < e && is_space(*p)) p++;
        if (p != e) {
            *what = "unexpected text after the timestamp";
            return -1;
        }
    }
    return 1;
}

static const char scrape_tag[] = "# pfi-scrape-time ";

pfi_status pfi_prom_read(pfi_reader *r, pfi_sample_fn fn, void *ud, pfi_prom_stats *stats,
                         pfi_log *log, pfi_error *err)
{
    pfi_prom_stats local = {0};
    if (!stats) stats = &local;
    int64_t scrape_ms = INT64_MIN;
    int family = -1; /* the first metric's: 0 DCGM names, 1 pfi_gpu_* names */
    char *line;
    size_t n;
    int rc;
    pfi_sample s;
    while ((rc = pfi_reader_line(r, &line, &n, err)) == 1) {
        uint64_t lineno = pfi_reader_lineno(r);
        stats->lines++;
        if (n >= sizeof scrape_tag - 1 && memcmp(line, scrape_tag, sizeof scrape_tag - 1) == 0) {
            const char *p = line + sizeof scrape_tag - 1, *e = line + n;
            while (e > p && is_space(e[-1])) e--;
            if (parse_i64(p, e, &scrape_ms) != 0)
                return pfi_errorf(err, PFI_EPARSE,
                                  "%s:%llu: pfi-scrape-time is not an integer (ms)", r->name,
                                  (unsigned long long)lineno);
            continue;
        }
        const char *what = "";
        int k = pfi_prom_parse_line(line, n, &s, &what);
        if (k == 0) {
            if (n && line[0] != '#') stats->skipped_unknown++;
            continue;
        }
        if (k < 0) {
            /* the input's last line, without a newline: an interrupted copy */
            if (pfi_reader_truncated_last(r)) {
                pfi_warnf(log, "%s:%llu: truncated last line ignored (%s)", r->name,
                          (unsigned long long)lineno, what);
                break;
            }
            return pfi_errorf(err, PFI_EPARSE, "%s:%llu: %s", r->name, (unsigned long long)lineno,
                              what);
        }
        if (family < 0) family = s.pfi_named;
        if (s.pfi_named != family) { /* an agent's --export-dcgm copy of the same readings */
            stats->skipped_unknown++;
            continue;
        }
        if (s.t_ms == INT64_MIN) {
            if (scrape_ms == INT64_MIN)
                return pfi_errorf(err, PFI_EPARSE,
                                  "%s:%llu: sample without a timestamp and no '# pfi-scrape-time' "
                                  "line before it",
                                  r->name, (unsigned long long)lineno);
            s.t_ms = scrape_ms;
        }
        if (!isfinite(s.value) || pfi_dcgm_is_blank(s.value)) {
            stats->skipped_missing++;
            continue;
        }
        s.line = lineno;
        stats->samples++;
        pfi_status st = fn(ud, &s, err);
        if (st) return st;
    }
    return rc < 0 ? (err ? err->code : PFI_EPARSE) : PFI_OK;
}
