/* testutil.h — what every cmocka unit test includes: cmocka itself (with
 * the headers it needs first) and small helpers for building curves. */
#ifndef PFI_TESTUTIL_H
#define PFI_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/curve.h"

#define assert_near(a, b, tol)                                                               \
    do {                                                                                     \
        double a_ = (a), b_ = (b);                                                           \
        if (!(fabs(a_ - b_) <= (tol))) fail_msg("%s = %.12g, expected %.12g (+-%g)", #a, a_, b_, (double)(tol)); \
    } while (0)

/* Build a curve from parallel arrays (sems NaN). */
static inline pfi_curve tu_curve(size_t n, const double *cap, const double *p, const double *t)
{
    pfi_point pts[64];
    for (size_t i = 0; i < n; i++) {
        pts[i].cap_w = cap[i];
        pts[i].power_w = p[i];
        pts[i].tokens_per_s = t[i];
        pts[i].power_w_sem = NAN;
        pts[i].tokens_per_s_sem = NAN;
        pts[i].repeats = 1;
    }
    pfi_curve c;
    if (pfi_curve_init(&c, pts, n, NULL) != PFI_OK) fail_msg("curve init failed");
    return c;
}

#endif
