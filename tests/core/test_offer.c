/* test_offer.c — the offer (issue 44, src/core/offer.c): a job's
 * throughput read from its measured points, its predicted curve or the
 * proportional bound; the loss on the grid of cuts through the caller's
 * allocation; the floors point where the allocation turns infeasible; the
 * monotone envelope at each cost. */
#include "../testutil.h"

#include <math.h>

#include "offer.h"

static void tokens(void **s)
{
    (void)s;
    const pfi_online_point pts[] = {{750, NAN, 90, NAN}, {500, NAN, 70, NAN}};
    pfi_offer_job j = {.gpus = 4, .base_w = 1000, .base_tokens = 100, .known = pts, .nknown = 2};
    int m;
    assert_true(fabs(pfi_offer_tokens(&j, 600, &m) - 78) < 1e-9); /* between measured points */
    assert_int_equal(m, 1);
    assert_true(fabs(pfi_offer_tokens(&j, 900, &m) - 96) < 1e-9); /* the last and the baseline */
    assert_int_equal(m, 1);
    assert_true(fabs(pfi_offer_tokens(&j, 400, &m) - 56) < 1e-9); /* below: proportional */
    assert_int_equal(m, 0);
    assert_true(pfi_offer_tokens(&j, 1200, &m) == 100 && m == 1); /* at or above the baseline */
    /* nothing measured, nothing predicted: in proportion to power */
    pfi_offer_job bare = {.gpus = 4, .base_w = 1000, .base_tokens = 100};
    assert_true(fabs(pfi_offer_tokens(&bare, 800, &m) - 80) < 1e-9 && m == 0);
    /* a predicted curve where nothing is measured (flat down to 400 W) */
    pfi_point cp[] = {{100, 400, 95, NAN, NAN, 1}, {250, 1000, 100, NAN, NAN, 1}};
    pfi_curve c;
    assert_int_equal(pfi_curve_init(&c, cp, 2, NULL), PFI_OK);
    bare.pred = &c;
    assert_true(fabs(pfi_offer_tokens(&bare, 700, &m) - 97.5) < 1e-9 && m == 0);
    /* a point claiming more than the baseline's throughput buys nothing more */
    const pfi_online_point high[] = {{800, NAN, 150, NAN}};
    pfi_offer_job h = {.gpus = 1, .base_w = 1000, .base_tokens = 100, .known = high, .nknown = 1};
    assert_true(pfi_offer_tokens(&h, 800, NULL) <= 100);
    pfi_curve_dispose(&c);
}

static void envelope(void **s)
{
    (void)s;
    const double loss[] = {0, 0.01, 0.03, 0.02, 0.04};
    assert_int_equal(pfi_offer_envelope(loss, 4, 0.03), 3);
    assert_int_equal(pfi_offer_envelope(loss, 4, 0.025), 1); /* not 3: L is above it at 2 */
    assert_int_equal(pfi_offer_envelope(loss, 4, 0.005), 0);
    assert_int_equal(pfi_offer_envelope(loss, 2, 1), 2); /* never past kmax */
}

/* equal cuts, feasible down to floor_pct */
typedef struct {
    const pfi_offer_job *jobs;
    size_t n;
    int floor_pct, calls;
} eq_ud;

static int equal_cut(void *ud, double cut_pct, double *target_w)
{
    eq_ud *u = ud;
    u->calls++;
    if (cut_pct > u->floor_pct) return 1;
    for (size_t q = 0; q < u->n; q++) target_w[q] = u->jobs[q].base_w * (1 - cut_pct / 100);
    return 0;
}

static void compute(void **s)
{
    (void)s;
    /* a: flat down to half its power (measured); b: nothing known (proportional) */
    const pfi_online_point flat[] = {{500, NAN, 100, NAN}};
    pfi_offer_job jobs[] = {
        {.gpus = 4, .base_w = 1000, .base_tokens = 100, .known = flat, .nknown = 1},
        {.gpus = 4, .base_w = 1000, .base_tokens = 100},
    };
    eq_ud u = {jobs, 2, 40, 0};
    double t[2];
    pfi_offer o;
    assert_int_equal(pfi_offer_compute(jobs, 2, equal_cut, &u, t, &o, NULL), PFI_OK);
    assert_int_equal(o.floors_pct, 40);
    assert_int_equal(o.floors_why, PFI_OFFER_FLOOR_TIER);
    assert_int_equal(u.calls, 41); /* stops at the first infeasible cut */
    assert_true(fabs(o.base_w - 2000) < 1e-9);
    assert_false(o.normalized);
    /* L(k) = k/2 %: a loses nothing, b loses k % */
    assert_true(fabs(o.loss[10] - 0.05) < 1e-9);
    assert_true(fabs(o.measured[10] - 0.5) < 1e-9);
    assert_int_equal(o.cut_pct[0], 1);  /* 0.5% */
    assert_int_equal(o.cut_pct[1], 2);  /* 1% */
    assert_int_equal(o.cut_pct[3], 10); /* 5% */
    assert_int_equal(o.cut_pct[4], 20); /* 10% */
    /* no cut takes a measured job below its lowest measured point (a's 500 W):
       with the tiers allowing 80%, the grid stops at 50% */
    u.floor_pct = 80, u.calls = 0;
    assert_int_equal(pfi_offer_compute(jobs, 2, equal_cut, &u, t, &o, NULL), PFI_OK);
    assert_int_equal(o.floors_pct, 50);
    assert_int_equal(o.floors_why, PFI_OFFER_FLOOR_MEASURED);
    u.floor_pct = 40;
    /* a job without throughput: the normalized objective (shares of T_max by GPUs) */
    jobs[1].base_tokens = NAN;
    u.calls = 0;
    assert_int_equal(pfi_offer_compute(jobs, 2, equal_cut, &u, t, &o, NULL), PFI_OK);
    assert_true(o.normalized);
    assert_true(fabs(o.loss[10] - 0.05) < 1e-9);
    /* nothing to shed: no baselines */
    pfi_offer_job none = {.gpus = 1};
    assert_int_equal(pfi_offer_compute(&none, 1, equal_cut, &u, t, &o, NULL), PFI_OK);
    assert_int_equal(o.floors_pct, 0);
    assert_int_equal(o.cut_pct[4], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(tokens), cmocka_unit_test(envelope),
                                       cmocka_unit_test(compute)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
