/* num.h — strict, fast number parsing for text formats.
 *
 * Accepts only decimal syntax ([+-]digits[.digits][(e|E)[+-]digits]),
 * optionally surrounded by spaces; rejects NaN, infinities, hex floats and
 * trailing garbage, which strtod would accept. A fast exact path (Clinger:
 * at most 15 significant digits, |power of ten| <= 22) covers typical
 * telemetry; anything else goes to strtod, so results are correctly rounded. */
#ifndef PFI_NUM_H
#define PFI_NUM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { PFI_NUM_OK = 0, PFI_NUM_EMPTY = 1, PFI_NUM_SYNTAX = 2, PFI_NUM_RANGE = 3 };

/* s need not be NUL-terminated. */
int pfi_parse_double(const char *s, size_t n, double *out);
/* "a,b,c": up to max positive finite numbers into out; the count, or -1
 * (an empty item, a bad or non-positive number, more than max). */
int pfi_parse_positive_list(const char *s, double *out, int max);
/* Integer in [lo, hi]; a decimal like "8.0" is accepted if integral. */
int pfi_parse_long(const char *s, size_t n, long lo, long hi, long *out);
const char *pfi_num_error_name(int code);

#ifdef __cplusplus
}
#endif
#endif
