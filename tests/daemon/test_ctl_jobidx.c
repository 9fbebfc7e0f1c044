/* test_ctl_jobidx.c — the controller's per-period job index (ctl_jobidx.c):
 * every job found by (id, tier), an id under another tier not, absent ids
 * not, and the index still right after it grows past its first table. */
#include "../testutil.h"
#include <stdio.h>

#include "ctl_jobidx.h"
#include "vec.h"

static ctl_state C; /* large: static */

static void add_job(ctl_state *c, const char *id, int tier)
{
    assert_int_equal(PFI_VEC_RESERVE(c->job, c->job_cap, c->njobs + 1, NULL), PFI_OK);
    memset(&c->job[c->njobs], 0, sizeof c->job[0]);
    snprintf(c->job[c->njobs].id, sizeof c->job[0].id, "%s", id);
    c->job[c->njobs].tier = tier;
    c->njobs++;
}

static void test_find_and_grow(void **st)
{
    (void)st;
    ctl_state *c = &C;
    char id[32];
    for (int k = 0; k < 100; k++) {
        snprintf(id, sizeof id, "job%d", k);
        add_job(c, id, k % 4);
    }
    ctl_jobidx x;
    assert_int_equal(ctl_jobidx_build(&x, c), 0);
    for (int k = 0; k < 100; k++) {
        snprintf(id, sizeof id, "job%d", k);
        assert_int_equal(ctl_jobidx_find(&x, c, id, k % 4), k);
        assert_int_equal(ctl_jobidx_find(&x, c, id, (k + 1) % 4), -1); /* another tier */
    }
    assert_int_equal(ctl_jobidx_find(&x, c, "job100", 0), -1);
    assert_int_equal(ctl_jobidx_find(&x, c, "job", 0), -1);
    /* the same id under a second tier: a second job, both found */
    add_job(c, "job7", 0);
    assert_int_equal(ctl_jobidx_add(&x, c, c->njobs - 1), 0);
    assert_int_equal(ctl_jobidx_find(&x, c, "job7", 3), 7);
    assert_int_equal(ctl_jobidx_find(&x, c, "job7", 0), 100);
    /* grow past the first table (64 slots for 1 job, 256 for 101) several times */
    for (int k = 1000; k < 6000; k++) {
        snprintf(id, sizeof id, "n%d", k);
        add_job(c, id, -1);
        assert_int_equal(ctl_jobidx_add(&x, c, c->njobs - 1), 0);
    }
    assert_true(x.t.cap >= 2 * c->njobs);
    for (size_t k = 0; k < c->njobs; k++)
        assert_int_equal(ctl_jobidx_find(&x, c, c->job[k].id, c->job[k].tier), (long)k);
    ctl_jobidx_free(&x);
    assert_int_equal(ctl_jobidx_find(&x, c, "job7", 0), -1); /* freed: empty */
    free(c->job);
}

int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(test_find_and_grow)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
