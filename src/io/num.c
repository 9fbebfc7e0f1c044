/* num.c — strict decimal parsing (see num.h). */
#include "num.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

int pfi_parse_double(const char *s, size_t n, double *out)
{
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (n == 0) return PFI_NUM_EMPTY;
    size_t i = 0;
    int neg = 0;
    if (s[i] == '+' || s[i] == '-') neg = s[i++] == '-';
    uint64_t mant = 0;
    int sig = 0, dexp = 0, ndig = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        if (sig < 19) {
            if (mant || s[i] != '0') {
                mant = mant * 10 + (uint64_t)(s[i] - '0');
                sig++;
            }
        } else {
            dexp++;
            sig++;
        }
        ndig++;
        i++;
    }
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (sig < 19) {
                if (mant || s[i] != '0') {
                    mant = mant * 10 + (uint64_t)(s[i] - '0');
                    sig++;
                }
                dexp--;
            } else {
                sig++;
            }
            ndig++;
            i++;
        }
    }
    if (ndig == 0) return PFI_NUM_SYNTAX;
    int e = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        int edig = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (e < 100000) e = e * 10 + (s[i] - '0');
            edig++;
            i++;
        }
        if (!edig) return PFI_NUM_SYNTAX;
        if (eneg) e = -e;
    }
    if (i != n) return PFI_NUM_SYNTAX;
    int p = dexp + e;
    double v;
    if (sig <= 15 && p >= -22 && p <= 22) {
        v = (double)mant; /* exact: mant < 10^15 < 2^53 */
        if (p >= 0) v *= pow10_exact[p];
        else v /= pow10_exact[-p];
    } else {
        char buf[128];
        if (n >= sizeof buf) {
            char *tmp = malloc(n + 1);
            if (!tmp) return PFI_NUM_RANGE;
            memcpy(tmp, s, n);
            tmp[n] = '\0';
            v = strtod(tmp, NULL);
            free(tmp);
        } else {
            memcpy(buf, s, n);
            buf[n] = '\0';
            v = strtod(buf, NULL);
        }
        v = fabs(v); /* the sign is applied below */
    }
    if (!isfinite(v)) return PFI_NUM_RANGE;
    *out = neg ? -v : v;
    return PFI_NUM_OK;
}

int pfi_parse_long(const char *s, size_t n, long lo, long hi, long *out)
{
    double v;
    int rc = pfi_parse_double(s, n, &v);
    if (rc) return rc;
    if (v != floor(v) || v < (double)lo || v > (double)hi) return PFI_NUM_RANGE;
    *out = (long)v;
    return PFI_NUM_OK;
}

const char *pfi_num_error_name(int code)
{
    switch (code) {
    case PFI_NUM_OK: return "ok";
    case PFI_NUM_EMPTY: return "empty";
    case PFI_NUM_SYNTAX: return "not a number";
    case PFI_NUM_RANGE: return "not a finite number in range";
    }
    return "?";
}

int pfi_parse_positive_list(const char *s, double *out, int max)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        double v;
        if (n >= max || pfi_parse_double(p, len, &v) != PFI_NUM_OK || !(v > 0)) return -1;
        out[n++] = v;
        if (!q) break;
        p = q + 1;
        if (!*p) return -1;
    }
    return n;
}
