/* test_alloc_online.c — safe-online and the study's definitions on
 * adversarial curves (concave, a convex piece, a flat top, noisy points, a
 * job whose throughput does not respond to power, a line): the budget holds
 * in every round; the mean total never falls between rounds by more than
 * 0.02 of the gap; no workload-round falls below the reference less 0.2 of
 * its gap; with SLA tiers no violation at round 5 where the oracle is
 * feasible at cuts to 25%, and at 30% (where the learned floors may not yet
 * fit) a tenth of the reference's by round 10 (docs/allocation.md); a measured violation forces the
 * job up; a new budget restarts from the reference; jobs just above a knee at the reference are
 * not moved below it on the secant above (issue 31); pfi-op sheds more from a flat top than from a
 * line. */
#include "../testutil.h"

#include "allocsim.h"
#include "pfi/alloc.h"

enum { NC = 6, NCURVE = 6 };
static const double caps[NC] = {200, 300, 400, 500, 600, 700};
static const double pw[NC] = {1600, 2400, 3200, 4000, 4800, 5600};
/* T / T_max; slopes at most 1.26 in P/P_max units (the Lipschitz assumption) */
static const double shapes[NCURVE][NC] = {
    {0.55, 0.72, 0.85, 0.93, 0.98, 1.00}, /* concave */
    {0.45, 0.47, 0.52, 0.66, 0.83, 1.00}, /* convex piece */
    {0.60, 0.80, 0.97, 1.00, 1.00, 1.00}, /* flat top */
    {0.50, 0.66, 0.64, 0.84, 0.82, 1.00}, /* noisy, not monotone */
    {1.00, 1.00, 1.00, 1.00, 1.00, 1.00}, /* does not respond to power */
    {0.29, 0.43, 0.57, 0.71, 0.86, 1.00}, /* a line (PFI 1) */
};

typedef struct pool {
    pfi_curve c[NCURVE];
    pfi_alloc_job j[NCURVE];
} pool;

static void pool_init(pool *P, double tmax_scale)
{
    for (int k = 0; k < NCURVE; k++) {
        double t[NC];
        for (int i = 0; i < NC; i++) t[i] = shapes[k][i] * 1000 * (1 + tmax_scale * k);
        P->c[k] = tu_curve(NC, caps, pw, t);
        pfi_alloc_job *j = &P->j[k];
        memset(j, 0, sizeof *j);
        j->gpus = 8;
        j->tokens_per_s_max = t[NC - 1];
        j->power_max_w = pw[NC - 1];
        j->power_min_w = pw[0];
        j->curve = &P->c[k];
        j->pred_curve = &P->c[(k + 1) % NCURVE]; /* a wrong prior */
        j->pfi_pred = 1.5;
        j->sla_tier = -1;
        j->cap_min_w = 200;
        j->cap_max_w = 700;
    }
}

static void pool_dispose(pool *P)
{
    for (int k = 0; k < NCURVE; k++) pfi_curve_dispose(&P->c[k]);
}

static const pfi_allocsim_round *rnd(const pfi_allocsim_result *r, int s, size_t k, int q)
{
    return &r->rnd[((size_t)s * r->ncuts + k) * (size_t)(r->max_rounds + 1) + (size_t)q];
}

/* the study on the adversarial pool: safety and monotonicity per cut;
 * profile: every job profiled at job start (round 0 is then the plan on
 * the profiles, not the reference); returns the gap closed at round 1
 * summed over the cuts */
static double run_study(double sla_flex0, int normalized, int profile)
{
    pool P;
    pool_init(&P, 0.3);
    pfi_allocsim_opts so;
    pfi_allocsim_opts_default(&so);
    so.workloads = 40;
    so.jobs = 12;
    so.cut_max = 0.30;
    so.cut_step = 0.05;
    so.scenario = PFI_SCEN_RANDOM;
    so.normalized = normalized;
    so.online.rounds = 10;
    so.profile = profile;
    so.strategies = (1u << PFI_STRAT_ORACLE) | (1u << PFI_STRAT_EQUAL) |
                    (1u << PFI_STRAT_SAFE_ONLINE) | (1u << PFI_STRAT_PFI_OP);
    if (sla_flex0 >= 0) {
        so.sla_mix[0] = sla_flex0;
        so.sla_mix[1] = so.sla_mix[2] = so.sla_mix[3] = (1 - sla_flex0) / 3;
    }
    pfi_allocsim_result r;
    pfi_error e;
    assert_int_equal(pfi_allocsim_run(P.j, NULL, NCURVE, &so, &r, &e), PFI_OK);
    double gained = 0, closed1 = 0;
    for (size_t k = 1; k < r.ncuts; k++) {
        double O = rnd(&r, PFI_STRAT_ORACLE, k, 0)->mean_total,
               E = rnd(&r, PFI_STRAT_EQUAL, k, 0)->mean_total, gap = O - E;
        assert_true(gap >= -1e-9 * O);
        for (int s = 0; s < PFI_STRAT_COUNT; s++) {
            if (!(so.strategies & (1u << s))) continue;
            for (int q = 0; q <= r.srounds[s]; q++) /* the budget is hard */
                assert_int_equal((int)rnd(&r, s, k, q)->over_budget, 0);
        }
        for (int q = 0; q <= r.srounds[PFI_STRAT_SAFE_ONLINE]; q++) {
            const pfi_allocsim_round *c = rnd(&r, PFI_STRAT_SAFE_ONLINE, k, q);
            if (q == 0 && !profile) /* starts at the reference */
                assert_near(c->mean_total, E, 1e-9 * E);
            if (q == 1 && gap > 0) closed1 += (c->mean_total - E) / gap;
            if (q > 0) /* monotone across rounds, to 0.02 of the gap */
                assert_true(c->mean_total >= rnd(&r, PFI_STRAT_SAFE_ONLINE, k, q - 1)->mean_total -
                                                 0.02 * gap - 1e-9 * E);
            /* never below ref - 0.2 gap (with tiers, a move forced by a measured
             * violation may cost throughput against a reference that violates) */
            if (sla_flex0 < 0) assert_int_equal((int)c->below_20, 0);
            /* SLA learned online: violations (where the oracle is feasible) fall
             * to at most a tenth of the reference's (which enforces only the
             * conservative floors, pushed below them by the hard budget) */
            /* none at round 5 where the learned floors can fit (cuts to 25%) */
            if (sla_flex0 >= 0 && q == 5 && r.cuts[k] < 0.25 + 1e-9)
                assert_int_equal((int)c->sla_viol_ofeas, 0);
            if (sla_flex0 >= 0 && q == r.srounds[PFI_STRAT_SAFE_ONLINE] && !profile)
                assert_true(c->sla_viol_ofeas <=
                            0.1 * rnd(&r, PFI_STRAT_SAFE_ONLINE, k, 0)->sla_viol_ofeas);
        }
        gained +=
            rnd(&r, PFI_STRAT_SAFE_ONLINE, k, r.srounds[PFI_STRAT_SAFE_ONLINE])->mean_total - E;
    }
    assert_true(gained > 0); /* it learns something */
    if (profile) { /* the profiles: within the cost, every job (none is Flex 0 or tiered here) */
        assert_true(r.profile_cost_max <= so.prof.cost_max * (1 + 1e-9));
        if (sla_flex0 < 0) assert_true(r.profiled_jobs == r.profile_jobs_all);
        assert_true(r.profile_points >= 2 * r.profiled_jobs);
    }
    pfi_allocsim_result_dispose(&r);
    pool_dispose(&P);
    return closed1;
}

static void adversarial_safety(void **s)
{
    (void)s;
    run_study(-1, 0, 0);
    run_study(-1, 1, 0);
    /* with profiles: the same safety, and more of the gap closed at round 1 */
    double without = run_study(-1, 1, 0), with = run_study(-1, 1, 1);
    assert_true(with > without);
    run_study(-1, 0, 1);
}

static void adversarial_sla(void **s)
{
    (void)s;
    run_study(0.1, 1, 0);
    run_study(0.1, 1, 1);
}

/* the online API: a measured violation forces a job up; a new budget
 * restarts from the reference; targets never exceed the budget */
static void online_api(void **s)
{
    (void)s;
    pool P;
    pool_init(&P, 0);
    P.j[0].sla_tier = 1; /* concave: <= 10% loss */
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_online_opts oo;
    pfi_online_opts_default(&oo);
    double budget = 0.75 * NCURVE * 5600;
    pfi_online *st;
    assert_int_equal(pfi_online_new(P.j, NCURVE, budget, &o, &oo, &st, NULL), PFI_OK);
    const double *t0 = pfi_online_targets(st);
    double sum = 0;
    for (int i = 0; i < NCURVE; i++) sum += t0[i];
    assert_near(sum, budget, 1e-6 * budget);
    /* the reference: equal weight, the Flex 1 job at its conservative floor */
    double f0 = pfi_online_floor(st, 0);
    assert_near(f0, 5600 * (1 - 0.1 / 1.25), 1e-6);
    assert_true(t0[0] >= f0 - 1e-9);
    double p[NCURVE], pse[NCURVE], tk[NCURVE], tse[NCURVE], next[NCURVE];
    for (int i = 0; i < NCURVE; i++) {
        p[i] = t0[i];
        pse[i] = 1;
        tk[i] = 1000 * shapes[i][3];
        tse[i] = 1;
    }
    /* job 0 measured at 80% of T_max at its floor: a violation, it is forced up */
    tk[0] = 800;
    assert_int_equal(pfi_online_round(st, budget, p, pse, tk, tse, next, NULL), PFI_OK);
    assert_true(pfi_online_floor(st, 0) > p[0]);
    assert_true(next[0] > p[0]);
    sum = 0;
    for (int i = 0; i < NCURVE; i++) sum += next[i];
    assert_true(sum <= budget * (1 + 1e-9));
    /* a new budget: the reference there */
    double b2 = 0.85 * NCURVE * 5600;
    assert_int_equal(pfi_online_round(st, b2, p, pse, tk, tse, next, NULL), PFI_OK);
    sum = 0;
    for (int i = 0; i < NCURVE; i++) sum += next[i];
    assert_near(sum, b2, 1e-6 * b2);
    pfi_online_free(st);
    pool_dispose(&P);
}

/* shape k's throughput at power p (linear between the points; pool_init(_, 0)) */
static double tok_at(int k, double p)
{
    if (p <= pw[0]) return 1000 * shapes[k][0];
    for (int i = 1; i < NC; i++)
        if (p <= pw[i])
            return 1000 * (shapes[k][i - 1] + (shapes[k][i] - shapes[k][i - 1]) * (p - pw[i - 1]) /
                                                  (pw[i] - pw[i - 1]));
    return 1000 * shapes[k][NC - 1];
}

/* measure every job on its true curve at its target (no noise) and run a round */
static void round_true(pfi_online *st, const pool *P, int n, const int *map, double budget,
                       double *next)
{
    (void)P;
    const double *t = pfi_online_targets(st);
    double p[NCURVE], pse[NCURVE], tk[NCURVE], tse[NCURVE];
    for (int i = 0; i < n; i++) {
        p[i] = t[i];
        pse[i] = 5;
        tk[i] = tok_at(map[i], t[i]);
        tse[i] = 5;
    }
    assert_int_equal(pfi_online_round(st, budget, p, pse, tk, tse, next, NULL), PFI_OK);
}

/* the controller's changing job set: a held job stays put and out of moves;
 * a new budget by rebudget keeps the others where they were, shifted by equal
 * weight; rejob carries the kept jobs' targets and points, a new job at its
 * reference share, the budget held */
static void online_jobs(void **s)
{
    (void)s;
    pool P;
    pool_init(&P, 0);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_online_opts oo;
    pfi_online_opts_default(&oo);
    const int map5[5] = {0, 1, 2, 3, 5};
    pfi_alloc_job j5[5];
    for (int i = 0; i < 5; i++) j5[i] = P.j[map5[i]];
    double budget = 0.7 * 5 * 5600, next[NCURVE];
    pfi_online *st;
    assert_int_equal(pfi_online_new(j5, 5, budget, &o, &oo, &st, NULL), PFI_OK);
    pfi_online_hold(st, 4, 1);
    double held = pfi_online_targets(st)[4];
    for (int r = 0; r < 6; r++) round_true(st, &P, 5, map5, budget, next);
    assert_near(next[4], held, 1e-9); /* held: not moved */
    double moved = 0, sum = 0;
    for (int i = 0; i < 5; i++) moved += fabs(next[i] - 0.7 * 5600), sum += next[i];
    assert_true(moved > 100); /* the others did move on measured evidence */
    assert_true(sum <= budget * (1 + 1e-9));
    for (int i = 0; i < 4; i++) assert_true(pfi_online_points(st, i) >= 2);
    /* rebudget: 1% more, spread by equal weight, nobody restarted */
    double before[5];
    memcpy(before, pfi_online_targets(st), sizeof before);
    pfi_online_rebudget(st, budget * 1.01);
    sum = 0;
    for (int i = 0; i < 5; i++) {
        double t = pfi_online_targets(st)[i];
        sum += t;
        if (i == 4) assert_near(t, held, 1e-9);
        else assert_true(t >= before[i] - 1e-9 && t <= before[i] + 0.02 * budget);
    }
    assert_near(sum, budget * 1.01, 1e-6 * budget);
    /* rejob: job #1 (map 1) leaves, a new job (map 4) arrives; the held one is released */
    const int map_new[5] = {0, 2, 3, 5, 4};
    pfi_alloc_job jn[5];
    for (int i = 0; i < 5; i++) jn[i] = P.j[map_new[i]];
    const long from[5] = {0, 2, 3, 4, -1};
    pfi_online *st2;
    assert_int_equal(pfi_online_rejob(st, jn, 5, from, budget, &st2, NULL), PFI_OK);
    sum = 0;
    for (int i = 0; i < 5; i++) sum += pfi_online_targets(st2)[i];
    assert_near(sum, budget, 1e-6 * budget);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pfi_online_points(st2, i), pfi_online_points(st, from[i]));
        /* kept jobs: their targets, shifted by at most the new job's share */
        assert_true(fabs(pfi_online_targets(st2)[i] - pfi_online_targets(st)[from[i]]) <
                    0.2 * 5600);
    }
    assert_int_equal(pfi_online_points(st2, 4), 1); /* new: only its baseline */
    pfi_online_hold(st2, 3, 0);
    round_true(st2, &P, 5, map_new, budget, next);
    sum = 0;
    for (int i = 0; i < 5; i++) sum += next[i];
    assert_true(sum <= budget * (1 + 1e-9));
    pfi_online_free(st2);
    pfi_online_free(st);
    pool_dispose(&P);
}

/* issue 31, defect 1: jobs that sit just above a knee at the reference
 * (T/T_max 0.985 at 0.857 P_max, 0.85 at 0.714: a slope of 0.95 below the
 * reference, 0.15 on the secant above) beside jobs whose slope is 0.49
 * everywhere. At a 15% cut the secant above says the knee jobs lose little
 * below the reference; with the old extrapolation (curvature 0.3 below
 * every job's lowest point) safe-online moves 5% of P_max from each of them
 * to the others in round 1 and loses 7 gaps. The first step below a job's
 * lowest measured point must now clear the unverified curvature (3): no
 * round of 15, the first included, is below the reference by 0.2 of the
 * gap, on 5 seeds. */
static void knee_below_reference(void **s)
{
    (void)s;
    static const double knee[NC] = {0.30, 0.40, 0.55, 0.85, 0.985, 1.00};
    static const double recv[NC] = {0.65, 0.72, 0.79, 0.86, 0.93, 1.00};
    enum { NK = 4, NJ = 8, ROUNDS = 15 };
    pfi_curve c[2];
    for (int k = 0; k < 2; k++) {
        double t[NC];
        for (int i = 0; i < NC; i++) t[i] = 1000 * (k ? recv[i] : knee[i]);
        c[k] = tu_curve(NC, caps, pw, t);
    }
    pfi_alloc_job j[NJ];
    for (int i = 0; i < NJ; i++) {
        memset(&j[i], 0, sizeof j[i]);
        const pfi_curve *cv = &c[i >= NK];
        j[i].gpus = 8;
        j[i].tokens_per_s_max = cv->pts[cv->n - 1].tokens_per_s;
        j[i].power_max_w = pw[NC - 1];
        j[i].power_min_w = pw[0];
        j[i].curve = cv;
        j[i].sla_tier = -1;
        j[i].cap_min_w = 200;
        j[i].cap_max_w = 700;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.normalized = 1;
    double budget = 0.85 * NJ * pw[NC - 1];
    pfi_alloc_result orc;
    pfi_alloc_out out[NJ];
    o.strategy = PFI_STRAT_ORACLE;
    assert_int_equal(pfi_allocate(j, NJ, budget, &o, out, &orc, NULL), PFI_OK);
    double O = orc.total_tokens_true / 1000; /* normalized: every T_max is 1000 */
    pfi_online_opts oo;
    pfi_online_opts_default(&oo);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        double tot[ROUNDS + 1];
        assert_int_equal(
            pfi_alloc_safe_online(j, NJ, budget, &o, &oo, ROUNDS, seed, NULL, NULL, tot, NULL),
            PFI_OK);
        double gap = O - tot[0];
        assert_true(gap > 0.005); /* a real gap: the knee jobs should give watts */
        for (int r = 1; r <= ROUNDS; r++) assert_true(tot[r] >= tot[0] - 0.2 * gap);
    }
    /* the assumption made unverified curvature 0.3 again: round 1 loses */
    oo.curvature_unverified = oo.curvature;
    double tot[2];
    assert_int_equal(pfi_alloc_safe_online(j, NJ, budget, &o, &oo, 1, 1, NULL, NULL, tot, NULL),
                     PFI_OK);
    assert_true(tot[1] < tot[0] - 2 * (O - tot[0]));
    for (int k = 0; k < 2; k++) pfi_curve_dispose(&c[k]);
}

/* pfi-op: the PFI at the operating point; the flat top sheds more than the line */
static void pfi_op(void **s)
{
    (void)s;
    pool P;
    pool_init(&P, 0);
    pfi_alloc_job jobs[2] = {P.j[2], P.j[5]}; /* flat top, line */
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = PFI_STRAT_PFI_OP;
    o.op_pfi_true = 1;
    o.normalized = 1;
    pfi_alloc_out out[2];
    pfi_alloc_result r;
    double budget = 0.8 * 2 * 5600;
    assert_int_equal(pfi_allocate(jobs, 2, budget, &o, out, &r, NULL), PFI_OK);
    assert_near(r.total_power_w, budget, 1e-6);
    assert_true(out[0].target_w < out[1].target_w - 500);
    /* at a 20% cut the flat top's PFI there is 0.2 / (1 - 0.988) (capped at 100)
     * against the line's 1: the line sheds at most a few percent of the cut */
    assert_true(5600 - out[1].target_w < 0.1 * 0.2 * 2 * 5600);
    pool_dispose(&P);
}

/* two jobs, each with known points on 1000 x (p / 5600)^expo at 0.9 .. 0.5
   P_max, 1% standard error; job 0's point at 0.6 P_max raised by bump
   standard errors: the first targets under a 20% cut */
static void plan_pair(const double expo[2], double bump, double out[2])
{
    pfi_online_point kp[2][5];
    pfi_alloc_job j[2];
    for (int i = 0; i < 2; i++) {
        memset(&j[i], 0, sizeof j[i]);
        j[i].gpus = 8, j[i].tokens_per_s_max = 1000, j[i].power_max_w = 5600;
        j[i].power_min_w = 1600, j[i].sla_tier = -1, j[i].cap_min_w = 200, j[i].cap_max_w = 700;
        for (int k = 0; k < 5; k++) {
            double p = 5600 * (0.9 - 0.1 * k), t = 1000 * pow(p / 5600, expo[i]);
            kp[i][k] = (pfi_online_point){p, 5, t + (i == 0 && k == 3 ? bump * 10 : 0), 10};
        }
        j[i].known = kp[i], j[i].n_known = 5;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_online_opts oo;
    pfi_online_opts_default(&oo);
    pfi_online *st;
    assert_int_equal(pfi_online_new(j, 2, 0.8 * 2 * 5600, &o, &oo, &st, NULL), PFI_OK);
    out[0] = pfi_online_targets(st)[0], out[1] = pfi_online_targets(st)[1];
    pfi_online_free(st);
}

/* The plan leaves the reference only on evidence (issue 41): two identical
   jobs, one of whose points sits 2.5 standard errors high (its pessimistic
   curve then has a cheap stretch), keep the reference's equal split; the
   same noise beside a truly flat and a truly steep job still moves the
   flat one down */
static void plan_needs_evidence(void **s)
{
    (void)s;
    double t[2];
    plan_pair((const double[2]){0.4, 0.4}, 2.5, t);
    assert_near(t[0], t[1], 1e-6 * t[1]);
    plan_pair((const double[2]){0.05, 1.0}, 2.5, t);
    assert_true(t[0] < t[1] - 0.2 * 5600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(adversarial_safety),   cmocka_unit_test(adversarial_sla),
        cmocka_unit_test(online_api),           cmocka_unit_test(online_jobs),
        cmocka_unit_test(knee_below_reference), cmocka_unit_test(pfi_op),
        cmocka_unit_test(plan_needs_evidence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
