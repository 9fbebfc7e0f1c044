/* test_strategy.c — the table of allocation strategies (strategy.h): one
 * row per pfi_strategy in order, its names as the CLI's choices spell them,
 * the needs and traits the pool, the controller and the allocator read,
 * the controller's fallback and one-shot strategy, and pfi_allocate
 * reaching every strategy through its entry point. */
#include "../testutil.h"

#include "strategy.h"

static void rows_in_order(void **s)
{
    (void)s;
    char joined[512] = "";
    for (int i = 0; i < PFI_STRAT_COUNT; i++) {
        const pfi_strategy_ops *t = pfi_strategy_get((pfi_strategy)i);
        assert_non_null(t);
        assert_int_equal(t->id, i);
        assert_non_null(t->name);
        assert_non_null(t->summary);
        assert_non_null(t->allocate);
        assert_string_equal(pfi_strategy_name((pfi_strategy)i), t->name);
        pfi_strategy back;
        assert_int_equal(pfi_strategy_parse(t->name, &back), 0);
        assert_int_equal(back, i);
        /* a weight has a name for messages; a column is named */
        assert_true(!t->weight == !t->weight_of);
        assert_true(!(t->needs & PFI_NEEDS_COLUMN) == !t->column);
        /* a closed-loop strategy says how the controller learns (ctl_learn.c) */
        assert_int_equal(t->learns != PFI_LEARNS_NOTHING,
                         pfi_strategy_has(t->id, PFI_TRAIT_CLOSED_LOOP));
        /* the fallback and the one-shot strategy are strategies that need
         * no predicted curve beyond what runs them */
        assert_non_null(pfi_strategy_get(t->fallback));
        assert_non_null(pfi_strategy_get(t->runs_as));
        assert_int_equal(pfi_strategy_runs_as(t->runs_as), t->runs_as);
        strcat(joined, i ? "|" : "");
        strcat(joined, t->name);
    }
    /* the CLI's choices (a constant for the option tables) are the table's names */
    assert_string_equal(PFI_STRATEGY_NAMES("|"), joined);
    assert_null(pfi_strategy_get(PFI_STRAT_COUNT));
    assert_null(pfi_strategy_get((pfi_strategy)-1));
    assert_string_equal(pfi_strategy_name(PFI_STRAT_COUNT), "?");
    pfi_strategy x;
    assert_int_equal(pfi_strategy_parse("best", &x), -1);
    assert_int_equal(PFI_STRAT_ALL, (1u << PFI_STRAT_COUNT) - 1);
}

/* what the controller reads: today's fallback (curve-aware and closed-loop
 * to pfi-aware when a job has no predicted curve) and closed-loop run as
 * curve-aware on its estimates, safe-online's one-shot as its reference */
static void controller_choices(void **s)
{
    (void)s;
    for (int i = 0; i < PFI_STRAT_COUNT; i++) {
        pfi_strategy st = (pfi_strategy)i;
        int curve = st == PFI_STRAT_CURVE_AWARE || st == PFI_STRAT_CLOSED_LOOP;
        assert_int_equal(pfi_strategy_needs(st, PFI_NEEDS_PRED_CURVE), curve);
        assert_int_equal(pfi_strategy_fallback(st, 0), st);
        assert_int_equal(pfi_strategy_fallback(st, 1), curve ? PFI_STRAT_PFI_AWARE : st);
    }
    assert_int_equal(pfi_strategy_runs_as(PFI_STRAT_CLOSED_LOOP), PFI_STRAT_CURVE_AWARE);
    assert_int_equal(pfi_strategy_runs_as(PFI_STRAT_SAFE_ONLINE), PFI_STRAT_EQUAL);
    assert_int_equal(pfi_strategy_runs_as(PFI_STRAT_CURVE_AWARE), PFI_STRAT_CURVE_AWARE);
    assert_int_equal(pfi_strategy_runs_as(pfi_strategy_fallback(PFI_STRAT_CLOSED_LOOP, 1)),
                     PFI_STRAT_PFI_AWARE);
    assert_true(pfi_strategy_has(PFI_STRAT_CLOSED_LOOP, PFI_TRAIT_CLOSED_LOOP));
    assert_true(pfi_strategy_has(PFI_STRAT_SAFE_ONLINE, PFI_TRAIT_CLOSED_LOOP));
    assert_false(pfi_strategy_has(PFI_STRAT_CURVE_AWARE, PFI_TRAIT_CLOSED_LOOP));
    assert_int_equal(pfi_strategy_get(PFI_STRAT_CLOSED_LOOP)->learns, PFI_LEARNS_FIT);
    assert_int_equal(pfi_strategy_get(PFI_STRAT_SAFE_ONLINE)->learns, PFI_LEARNS_ROUNDS);
    /* the configuration's list: the default first, then table order */
    char list[256];
    size_t len = pfi_strategy_list(PFI_TRAIT_CONTROLLER, PFI_STRAT_SAFE_ONLINE, ", ", " or ", list,
                                   sizeof list);
    assert_string_equal(list, "safe-online, equal, pfi-aware, curve-aware or closed-loop");
    assert_int_equal(len, strlen(list));
    char small[8];
    assert_int_equal(pfi_strategy_list(PFI_TRAIT_CONTROLLER, -1, ", ", " or ", small, sizeof small),
                     strlen("equal, pfi-aware, curve-aware, closed-loop or safe-online"));
    assert_string_equal(small, "equal, ");
    pfi_strategy_list(PFI_TRAIT_CURVES | PFI_TRAIT_CLOSED_LOOP, -1, ", ", " or ", list,
                      sizeof list);
    assert_string_equal(list, "closed-loop");
}

/* pfi_allocate reaches every strategy through the table: two jobs with
 * every input, each strategy within the budget */
static void allocate_each(void **s)
{
    (void)s;
    double caps[] = {200, 300, 400}, pa[] = {1200, 1700, 2200}, ta[] = {600, 900, 1000},
           pb[] = {1200, 1700, 2200}, tb[] = {400, 700, 1000};
    pfi_curve a = tu_curve(3, caps, pa, ta), b = tu_curve(3, caps, pb, tb);
    pfi_alloc_job jobs[2];
    const pfi_curve *c[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i] = (pfi_alloc_job){8, 1000, 2200, 1200, c[i], c[i], 1.5 + i, 10 + i,
                                  i, -1,   150,  400,  NULL, NULL, 0,       NULL};
    }
    for (int i = 0; i < PFI_STRAT_COUNT; i++) {
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.strategy = (pfi_strategy)i;
        pfi_alloc_out out[2];
        pfi_alloc_result r;
        pfi_error e;
        pfi_status st = pfi_allocate(jobs, 2, 3600, &o, out, &r, &e);
        if (st) fail_msg("%s: %s", pfi_strategy_name(o.strategy), e.msg);
        assert_true(r.total_power_w <= 3600 + 1e-6);
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = PFI_STRAT_COUNT;
    pfi_alloc_out out[2];
    pfi_alloc_result r;
    assert_int_equal(pfi_allocate(jobs, 2, 3600, &o, out, &r, NULL), PFI_EINVAL);
    /* curve-aware without a predicted curve names itself */
    jobs[1].pred_curve = NULL;
    o.strategy = PFI_STRAT_CURVE_AWARE;
    pfi_error e;
    assert_int_equal(pfi_allocate(jobs, 2, 3600, &o, out, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "curve-aware needs a predicted curve"));
    pfi_curve_dispose(&a);
    pfi_curve_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_in_order),
        cmocka_unit_test(controller_choices),
        cmocka_unit_test(allocate_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
