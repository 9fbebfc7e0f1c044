/* testutil.h — what every cmocka unit test includes: cmocka itself (with
 * the headers it needs first) and small helpers for building curves and
 * sweep tables. */
#ifndef PFI_TESTUTIL_H
#define PFI_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/curve.h"
#include "pfi/table.h"

#define assert_near(a, b, tol)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol)))                                                             \
            fail_msg("%s = %.12g, expected %.12g (+-%g)", #a, a_, b_, (double)(tol));              \
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

/* Append one sweep-table row: text[] holds name, value pairs ending with
 * NULL; num_names[k] = num[k] for k < nnum. Columns are added on first use. */
static inline void tu_row(pfi_table *t, const char *const *text, const char *const *num_names,
                          const double *num, size_t nnum)
{
    size_t r;
    if (pfi_table_add_row(t, 0, pfi_table_nrows(t) + 2, &r, NULL) != PFI_OK)
        fail_msg("add row failed");
    for (size_t k = 0; text[k]; k += 2) {
        long c = pfi_table_add_col(t, text[k], PFI_COL_TEXT, NULL);
        if (c < 0 || pfi_table_set_text(t, (size_t)c, r, text[k + 1], NULL) != PFI_OK)
            fail_msg("text column %s", text[k]);
    }
    for (size_t k = 0; k < nnum; k++) {
        long c = pfi_table_add_col(t, num_names[k], PFI_COL_NUM, NULL);
        if (c < 0) fail_msg("numeric column %s", num_names[k]);
        pfi_table_set_num(t, (size_t)c, r, num[k]);
    }
}

#endif
