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
#include "pfi/pfi.h"
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

/* Append one synthetic sweep group (gpu_model H200, 8 GPUs): caps 300, 500,
 * 700 W; power 0.95 x 8 x cap; T(c) = tmax (1 - k (700 - c) / 400); numeric
 * columns dram_copy_product = 2 PFI + 1 (an exact linear feature of its
 * Eq. 1 PFI) and slope = k (an exact feature of its normalized curve). */
static inline void tu_linear_group(pfi_table *t, const char *name, int moe, int ft, double k,
                                   double tmax)
{
    static const char *const num_names[] = {
        "gpus", "cap_w", "power_w", "tokens_per_s", "dram_copy_product", "slope"};
    double caps[3] = {300, 500, 700}, p[3], tk[3];
    for (int i = 0; i < 3; i++) {
        p[i] = 0.95 * 8 * caps[i];
        tk[i] = tmax * (1 - k * (700 - caps[i]) / 400);
    }
    pfi_curve c = tu_curve(3, caps, p, tk);
    pfi_eq1_result r;
    pfi_eq1(&c, &r);
    pfi_curve_dispose(&c);
    const char *text[] = {"gpu_model",           "H200", "group",          name, "arch",
                          moe ? "moe" : "dense", "task", ft ? "ft" : "pt", NULL};
    for (int i = 0; i < 3; i++) {
        double v[] = {8, caps[i], p[i], tk[i], 2 * r.pfi + 1, k};
        tu_row(t, text, num_names, v, 6);
    }
}

#endif
