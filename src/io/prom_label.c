/* prom_label.c — a label value for Prometheus text exposition (see prom.h).
 * Everything the daemons put in a label (job ids, host and device names, a
 * controller's name) goes through here: the format escapes backslash,
 * double quote and newline, and a label value must be UTF-8, so other
 * control characters and bytes that are not UTF-8 become '?'. Without this
 * a value such as `1"} 1\nforged{...} 9999` adds series of its own. */
#include "pfi/prom.h"

#include <stdlib.h>
#include <string.h>

/* length of the UTF-8 sequence at s (at most m bytes), 0 if not UTF-8 */
static size_t utf8_len(const unsigned char *s, size_t m)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* bounds of the second byte */
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    if (m < n || s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < n; k++)
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    return n;
}

const char *pfi_prom_label(char *buf, size_t n, const char *v)
{
    if (!n) return buf;
    const unsigned char *s = (const unsigned char *)(v ? v : "");
    size_t len = strlen((const char *)s), o = 0;
    for (size_t i = 0; i < len;) {
        char esc[4];
        size_t k = 1, w;
        const unsigned char *from = (const unsigned char *)esc;
        if (s[i] == '\\' || s[i] == '"') esc[0] = '\\', esc[1] = (char)s[i], w = 2;
        else if (s[i] == '\n') esc[0] = '\\', esc[1] = 'n', w = 2;
        else if (s[i] < 0x20 || s[i] == 0x7F) esc[0] = '?', w = 1;
        else if (s[i] < 0x80) from = s + i, w = 1;
        else if ((k = utf8_len(s + i, len - i)) > 0) from = s + i, w = k;
        else esc[0] = '?', k = w = 1;
        if (o + w >= n) break; /* truncated at a whole character */
        memcpy(buf + o, from, w);
        o += w;
        i += k;
    }
    buf[o] = '\0';
    return buf;
}

/* the end of a sample line's labels: past the '}' that closes them (quoted
   values may hold '}', spaces and escaped quotes), or p when none */
static const char *after_labels(const char *p, const char *e)
{
    if (p >= e || *p != '{') return p;
    int q = 0;
    for (p++; p < e; p++) {
        if (q && *p == '\\') p++;
        else if (*p == '"') q = !q;
        else if (!q && *p == '}') return p + 1;
    }
    return e;
}

static int ieq(const char *a, size_t n, const char *b)
{
    if (strlen(b) != n) return 0;
    for (size_t k = 0; k < n; k++)
        if ((a[k] | 0x20) != b[k]) return 0;
    return 1;
}

char *pfi_prom_valid_values(const char *text, size_t n, size_t *out_n)
{
    if (!text) return NULL;
    char *out = malloc(n + n / 2 + 2), *o = out; /* "inf" -> "+Inf": at most 4 for 3 */
    if (!out) return NULL;
    for (const char *p = text, *e = text + n; p < e;) {
        const char *nl = memchr(p, '\n', (size_t)(e - p)), *le = nl ? nl : e;
        const char *v = NULL, *ve = NULL;
        if (p < le && *p != '#') {
            const char *q = p;
            while (q < le && *q != '{' && *q != ' ') q++;
            q = after_labels(q, le);
            while (q < le && *q == ' ') q++;
            v = q;
            for (ve = v; ve < le && *ve != ' '; ve++) {
            }
        }
        const char *rep = NULL;
        if (v && ve > v) {
            size_t vn = (size_t)(ve - v);
            if (ieq(v, vn, "nan") || ieq(v, vn, "-nan") || ieq(v, vn, "+nan")) rep = "NaN";
            else if (ieq(v, vn, "inf") || ieq(v, vn, "+inf") || ieq(v, vn, "infinity"))
                rep = "+Inf";
            else if (ieq(v, vn, "-inf") || ieq(v, vn, "-infinity")) rep = "-Inf";
        }
        if (rep) {
            memcpy(o, p, (size_t)(v - p)), o += v - p;
            memcpy(o, rep, strlen(rep)), o += strlen(rep);
            memcpy(o, ve, (size_t)(le - ve)), o += le - ve;
        } else {
            memcpy(o, p, (size_t)(le - p)), o += le - p;
        }
        if (nl) *o++ = '\n';
        p = nl ? nl + 1 : e;
    }
    *o = '\0';
    if (out_n) *out_n = (size_t)(o - out);
    return out;
}
