/* test_protocol.c — the measurement protocol's rules on hand-made series:
 * binning with out-of-phase hosts, carrying a GPU's value for one interval
 * only, dropping incomplete bins, sums vs averages, phase segmentation with
 * dips inside training, top-10% / mean / median aggregation, the loop's own
 * throughput (tokens over wall time), cap check, a run whose caps a profile
 * stepped (its row from the longest stretch at its cap);
 * the derived features from a job's metric values, and a model feature by
 * name from them (what the agent and the controller compute). */
#include "../testutil.h"

#include <math.h>

#include "pfi/features.h"
#include "pfi/protocol.h"
#include "pfi/run.h"

static pfi_protocol_opts opts(void)
{
    pfi_protocol_opts o;
    pfi_protocol_opts_default(&o);
    return o;
}

static void binning_and_carry(void **s)
{
    (void)s;
    pfi_protocol_opts o = opts();
    pfi_bins *b = pfi_bins_new(&o);
    int g0 = pfi_bins_gpu(b, "A:0", 3), g1 = pfi_bins_gpu(b, "B:0", 3);
    assert_int_equal(g0, 0);
    assert_int_equal(g1, 1);
    assert_int_equal(pfi_bins_gpu(b, "A:0", 3), 0);
    /* host A at +100 ms, host B at +3000 ms of each 5 s interval: same bins */
    for (int k = 0; k < 6; k++) {
        int64_t t = 1000000000LL + k * 5000;
        assert_int_equal(pfi_bins_add(b, g0, PFI_M_POWER_USAGE, t + 100, 100 + k, NULL), PFI_OK);
        assert_int_equal(pfi_bins_add(b, g0, PFI_M_GPU_UTIL, t + 100, 90, NULL), PFI_OK);
        /* B misses its scrape in bin 2 (carried from bin 1) and bins 4,5 (dropped: only one
         * interval carried) */
        if (k != 2 && k < 4) {
            assert_int_equal(pfi_bins_add(b, g1, PFI_M_POWER_USAGE, t + 3000, 200 + k, NULL),
                             PFI_OK);
            assert_int_equal(pfi_bins_add(b, g1, PFI_M_GPU_UTIL, t + 3000, 60, NULL), PFI_OK);
        }
    }
    pfi_series sr;
    assert_int_equal(pfi_bins_series(b, &sr, NULL), PFI_OK);
    assert_int_equal(sr.n_gpus, 2);
    /* bins 0,1,2,3,4 kept (4: B carried from 3), bin 5 dropped */
    assert_int_equal(sr.n, 5);
    assert_int_equal(sr.n_dropped, 1);
    assert_near(sr.power_w[0], 100 + 200, 0);
    assert_near(sr.power_w[2], 102 + 201, 0); /* B's bin-1 value carried */
    assert_near(sr.power_w[4], 104 + 203, 0);
    assert_int_equal(sr.n_carried, 2);
    /* utilization averaged, its minimum tracked */
    assert_near(sr.metric[PFI_M_GPU_UTIL][0], 75, 1e-12);
    assert_near(sr.util_min[0], 60, 0);
    /* power per GPU averaged in the metric column, summed in power_w */
    assert_near(sr.metric[PFI_M_POWER_USAGE][0], 150, 1e-12);
    /* a metric only one GPU reports is missing for the job */
    assert_true(isnan(sr.metric[PFI_M_DRAM_ACTIVE][0]));
    pfi_series_dispose(&sr);
    pfi_bins_free(b);
}

static void bins_two_samples_and_growth(void **s)
{
    (void)s;
    pfi_protocol_opts o = opts();
    o.max_bins = 1000;
    pfi_bins *b = pfi_bins_new(&o);
    int g = pfi_bins_gpu(b, "U", 1);
    /* two samples in one bin are averaged; a later file may add earlier bins */
    pfi_bins_add(b, g, PFI_M_POWER_USAGE, 50000 + 10, 100, NULL);
    pfi_bins_add(b, g, PFI_M_POWER_USAGE, 50000 + 4900, 110, NULL);
    assert_int_equal(pfi_bins_add(b, g, PFI_M_POWER_USAGE, 50000 - 300 * 5000, 7, NULL), PFI_OK);
    pfi_series sr;
    pfi_bins_series(b, &sr, NULL);
    assert_int_equal(sr.n, 2);
    assert_near(sr.power_w[0], 7, 0);
    assert_near(sr.power_w[1], 105, 1e-12);
    assert_true(sr.t_ms[1] - sr.t_ms[0] == 300 * 5000);
    pfi_series_dispose(&sr);
    /* an absurd span is refused, not allocated */
    pfi_error e;
    assert_int_equal(pfi_bins_add(b, g, PFI_M_POWER_USAGE, 50000 + 5000LL * 5000000, 1, &e),
                     PFI_ERANGE);
    assert_non_null(strstr(e.msg, "spans more than 1000"));
    /* metrics: sums for bytes */
    int g2 = pfi_bins_gpu(b, "V", 1);
    pfi_bins_add(b, g, PFI_M_NVLINK_TX_BYTES, 50000, 10, NULL);
    pfi_bins_add(b, g2, PFI_M_NVLINK_TX_BYTES, 50000, 30, NULL);
    pfi_bins_add(b, g, PFI_M_NVLINK_RX_BYTES, 50000, 1, NULL);
    pfi_bins_add(b, g2, PFI_M_NVLINK_RX_BYTES, 50000, 2, NULL);
    pfi_bins_add(b, g2, PFI_M_POWER_USAGE, 50000, 5, NULL);
    pfi_bins_series(b, &sr, NULL);
    size_t last = sr.n - 1;
    assert_near(sr.metric[PFI_M_NVLINK_TX_BYTES][last], 40, 0);
    assert_near(sr.derived[PFI_D_NVLINK_BYTES][last], 43, 0);
    pfi_series_dispose(&sr);
    pfi_bins_free(b);
}

static void phases(void **s)
{
    (void)s;
    pfi_protocol_opts o = opts();
    /* warmup 3, startup 2, training 10 with a dip of 2 in the middle, tail 3 */
    double fb[18], ua[18], um[18];
    for (int i = 0; i < 18; i++) {
        fb[i] = i < 3 ? 2000 : 50000;
        ua[i] = um[i] = (i >= 5 && i < 15) ? 95 : 0;
        if (i == 9 || i == 10) ua[i] = um[i] = 20; /* evaluation dip */
    }
    um[7] = 45; /* one GPU lagging below 50% at one scrape */
    pfi_phases p;
    pfi_phases_segment(fb, ua, um, 18, &o, &p);
    assert_int_equal(p.warmup_end, 3);
    assert_int_equal(p.startup_end, 5);
    assert_true(p.has_training);
    /* scrape 7 breaks 5..7, the dip breaks 8..10: the first sustained window is 11..13 */
    assert_int_equal(p.train_begin, 11);
    assert_int_equal(p.train_end, 15);
    um[7] = 95;
    pfi_phases_segment(fb, ua, um, 18, &o, &p);
    /* now 5..7 is sustained: training from 5 to 15, the dip at 9-10 stays inside */
    assert_int_equal(p.train_begin, 5);
    assert_int_equal(p.train_end, 15);
    assert_int_equal(pfi_phase_of(&p, 0), PFI_PHASE_WARMUP);
    assert_int_equal(pfi_phase_of(&p, 4), PFI_PHASE_STARTUP);
    assert_int_equal(pfi_phase_of(&p, 9), PFI_PHASE_TRAINING);
    assert_int_equal(pfi_phase_of(&p, 16), PFI_PHASE_TAIL);
    assert_string_equal(pfi_phase_name(PFI_PHASE_TRAINING), "training");
    /* a smaller warmup threshold for small jobs */
    o.fb_warmup_mib = 1000;
    pfi_phases_segment(fb, ua, um, 18, &o, &p);
    assert_int_equal(p.warmup_end, 0);
    /* no sustained window: no training */
    double flat[5] = {95, 20, 95, 95, 20};
    o = opts();
    pfi_phases_segment(NULL, flat, flat, 5, &o, &p);
    assert_false(p.has_training);
    /* no utilization at all */
    pfi_phases_segment(NULL, NULL, NULL, 5, &o, &p);
    assert_false(p.has_training);
}

static void aggregation(void **s)
{
    (void)s;
    double x[20], v, sem;
    for (int i = 0; i < 20; i++) x[i] = i + 1; /* 1..20 */
    /* top 10% of 20 = the 2 largest: 19, 20 */
    assert_int_equal(pfi_aggregate(x, 20, PFI_AGG_TOP, 0.10, &v, &sem), 2);
    assert_near(v, 19.5, 1e-12);
    assert_near(sem, sqrt(0.5) / sqrt(2.0), 1e-12);
    /* ceil: 21 samples -> 3 */
    double y[21];
    for (int i = 0; i < 21; i++) y[i] = i;
    assert_int_equal(pfi_aggregate(y, 21, PFI_AGG_TOP, 0.10, &v, &sem), 3);
    assert_near(v, 19, 1e-12);
    assert_int_equal(pfi_aggregate(x, 20, PFI_AGG_MEAN, 0.10, &v, &sem), 20);
    assert_near(v, 10.5, 1e-12);
    pfi_aggregate(x, 20, PFI_AGG_MEDIAN, 0.10, &v, &sem);
    assert_near(v, 10.5, 1e-12);
    /* NaN skipped; one sample: no SEM */
    double z[3] = {NAN, 4, NAN};
    assert_int_equal(pfi_aggregate(z, 3, PFI_AGG_TOP, 0.10, &v, &sem), 1);
    assert_near(v, 4, 0);
    assert_true(isnan(sem));
    assert_int_equal(pfi_aggregate(z, 1, PFI_AGG_TOP, 0.10, &v, &sem), 0);
    assert_true(isnan(v));
    /* dips below the top 10% do not move it */
    double d[30];
    for (int i = 0; i < 30; i++) d[i] = 100 + (i % 10);
    pfi_aggregate(d, 30, PFI_AGG_TOP, 0.10, &v, &sem);
    d[3] = d[14] = 5; /* an evaluation and a checkpoint */
    double v2;
    pfi_aggregate(d, 30, PFI_AGG_TOP, 0.10, &v2, &sem);
    assert_near(v, v2, 0);
    pfi_agg_mode m;
    assert_int_equal(pfi_agg_mode_parse("median", &m), 0);
    assert_int_equal(m, PFI_AGG_MEDIAN);
    assert_int_equal(pfi_agg_mode_parse("max", &m), -1);
}

/* the loop's own rate (issue 30): a noisy loop whose steps take 0.1 s of
   compute and 0.02..0.1 s of overhead, one step in ten slowed 5x: its
   tokens over the wall time, where the top 10% of per-step rates is far
   above it; a log of every 4th step (step numbers); lines with
   tokens_per_s alone (weighted by time); fewer than two lines */
static void throughput_rate(void **s)
{
    (void)s;
    enum { N = 200 };
    double t[N], tps[N], tok[N], step[N], now = 1000, v, sem, top, dummy;
    for (int i = 0; i < N; i++) {
        double compute = 0.1 * (i % 10 == 3 ? 5 : 1), overhead = 0.02 + 0.08 * (i % 7) / 6.0;
        now += compute + overhead;
        t[i] = now;
        tok[i] = 1000;
        tps[i] = 1000 / compute; /* the loop's own per-step rate: compute only */
        step[i] = i;
    }
    double truth = 1000.0 * (N - 1) / (t[N - 1] - t[0]);
    assert_int_equal(pfi_throughput_rate(t, tps, tok, step, N, &v, &sem), N);
    assert_near(v, truth, 1e-9 * truth);
    assert_true(sem > 0 && sem < 0.2 * truth);
    pfi_aggregate(tps, N, PFI_AGG_TOP, 0.10, &top, &dummy);
    assert_true(top > 1.5 * truth); /* what the default was */
    /* every 4th step logged: the steps between count too */
    double t4[N / 4], tps4[N / 4], tok4[N / 4], st4[N / 4];
    for (int i = 0; i < N / 4; i++)
        t4[i] = t[4 * i], tps4[i] = tps[4 * i], tok4[i] = tok[4 * i], st4[i] = step[4 * i];
    pfi_throughput_rate(t4, tps4, tok4, st4, N / 4, &v, &sem);
    double truth4 = 1000.0 * 4 * (N / 4 - 1) / (t4[N / 4 - 1] - t4[0]);
    assert_near(v, truth4, 1e-9 * truth4);
    /* tokens_per_s alone: tokens_per_s x the time since the line before */
    double flat[3] = {10, 20, 40}, tt[3] = {0, 1, 3};
    pfi_throughput_rate(tt, flat, NULL, NULL, 3, &v, &sem);
    assert_near(v, (20 * 1 + 40 * 2) / 3.0, 1e-12);
    /* one line: its tokens_per_s */
    assert_int_equal(pfi_throughput_rate(tt, flat, NULL, NULL, 1, &v, &sem), 1);
    assert_near(v, 10, 1e-12);
    pfi_agg_mode m;
    assert_int_equal(pfi_agg_mode_parse("rate", &m), 0);
    assert_int_equal(m, PFI_AGG_RATE);
}

static void cap_check(void **s)
{
    (void)s;
    assert_int_equal(pfi_cap_check(700.4, 700, 1), 0);
    assert_int_equal(pfi_cap_check(698.9, 700, 1), -1);
    assert_int_equal(pfi_cap_check(NAN, 700, 1), 0);
    assert_true(pfi_dcgm_is_blank(9223372036854775792.0));
    assert_true(pfi_dcgm_is_blank(140737488355328.0));
    assert_true(pfi_dcgm_is_blank(2147483632.0));
    assert_false(pfi_dcgm_is_blank(700.0));
    assert_false(pfi_dcgm_is_blank(1e12));
    assert_int_equal(pfi_metric_lookup("DCGM_FI_PROF_DRAM_ACTIVE", 24), PFI_M_DRAM_ACTIVE);
    assert_int_equal(pfi_metric_lookup("DCGM_FI_DEV_XID_ERRORS", 22), -1);
}

/* a run profiled at job start: 10 scrapes at 500 W limits (the profile),
   then 30 at the run's cap of 700 W; the row is the 30 at 700 W */
static void profiled_run(void **s)
{
    (void)s;
    pfi_protocol_opts o = opts();
    o.tput_agg = o.agg = PFI_AGG_MEAN;
    pfi_bins *b = pfi_bins_new(&o);
    int g = pfi_bins_gpu(b, "A:0", 3);
    double t_s[40], tps[40], nan40[40];
    for (int k = 0; k < 40; k++) {
        int64_t t = 1000000000LL + k * 5000;
        int prof = k < 10;
        assert_int_equal(pfi_bins_add(b, g, PFI_M_POWER_USAGE, t, prof ? 480 : 690, NULL), PFI_OK);
        assert_int_equal(pfi_bins_add(b, g, PFI_M_GPU_UTIL, t, 95, NULL), PFI_OK);
        assert_int_equal(pfi_bins_add(b, g, PFI_M_FB_USED, t, 50000, NULL), PFI_OK);
        assert_int_equal(pfi_bins_add(b, g, PFI_M_ENFORCED_LIMIT, t, prof ? 500 : 700, NULL),
                         PFI_OK);
        t_s[k] = (double)t / 1000 + 1;
        tps[k] = prof ? 800 : 1000;
        nan40[k] = NAN;
    }
    pfi_steplog sl = {.n = 40, .t_s = t_s, .tokens_per_s = tps, .mfu = nan40, .tflops = nan40};
    pfi_run_summary r = {.name = "prof"};
    r.m.cap_w = 700;
    r.m.gpus = 1;
    pfi_error e;
    if (pfi_summarize_run(b, &sl, &o, &r, NULL, &e)) fail_msg("%s", e.msg);
    assert_int_equal(r.n_train, 30);
    assert_near(r.power_w, 690, 1e-9);
    assert_near(r.tokens_per_s, 1000, 1e-9);
    assert_int_equal(r.n_steps, 30);
    /* without the cap check: the whole training phase, as before */
    pfi_run_summary all = {.name = "prof"};
    all.m.cap_w = 700;
    all.m.gpus = 1;
    o.cap_check = 0;
    if (pfi_summarize_run(b, &sl, &o, &all, NULL, &e)) fail_msg("%s", e.msg);
    assert_int_equal(all.n_train, 40);
    assert_true(all.power_w < 690);
    /* a run never at its cap: refused as before */
    pfi_run_summary bad = {.name = "prof"};
    bad.m.cap_w = 600;
    bad.m.gpus = 1;
    o.cap_check = 1;
    assert_int_equal(pfi_summarize_run(b, &sl, &o, &bad, NULL, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "cap_w 600 W"));
    pfi_bins_free(b);
}

static void derived_features(void **s)
{
    (void)s;
    double m[PFI_M_COUNT];
    for (int i = 0; i < PFI_M_COUNT; i++) m[i] = NAN;
    m[PFI_M_DRAM_ACTIVE] = 0.5;
    m[PFI_M_MEM_COPY_UTIL] = 40;
    m[PFI_M_PIPE_TENSOR_ACTIVE] = 0.3;
    m[PFI_M_SM_ACTIVE] = 0.6;
    m[PFI_M_NVLINK_TX_BYTES] = 1e9;
    m[PFI_M_NVLINK_RX_BYTES] = 2e9;
    assert_true(pfi_derived_value(PFI_D_DRAM_COPY_PRODUCT, m) == 0.5 * 40 / 100.0);
    assert_true(pfi_derived_value(PFI_D_ARITHMETIC_INTENSITY, m) == 0.3 / 0.5);
    assert_true(pfi_derived_value(PFI_D_TENSOR_SM_RATIO, m) == 0.3 / 0.6);
    assert_true(pfi_derived_value(PFI_D_NVLINK_BYTES, m) == 3e9);
    int known = -1;
    assert_true(pfi_feature_from_metrics("arithmetic_intensity", m, &known) == 0.3 / 0.5);
    assert_int_equal(known, 1);
    assert_true(pfi_feature_from_metrics("DCGM_FI_PROF_SM_ACTIVE", m, &known) == 0.6);
    assert_int_equal(known, 1);
    assert_true(isnan(pfi_feature_from_metrics("DCGM_FI_DEV_GPU_TEMP", m, &known)));
    assert_int_equal(known, 1); /* a metric, not measured */
    assert_true(isnan(pfi_feature_from_metrics("power_frac", m, &known)));
    assert_int_equal(known, 0); /* not telemetry */
    assert_true(isnan(pfi_feature_from_metrics("log_gpus", m, NULL)));
    /* a ratio over nothing is missing, not infinite */
    m[PFI_M_DRAM_ACTIVE] = 0;
    m[PFI_M_SM_ACTIVE] = 0;
    assert_true(isnan(pfi_derived_value(PFI_D_ARITHMETIC_INTENSITY, m)));
    assert_true(isnan(pfi_derived_value(PFI_D_TENSOR_SM_RATIO, m)));
    assert_true(pfi_derived_value(PFI_D_DRAM_COPY_PRODUCT, m) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binning_and_carry),
        cmocka_unit_test(bins_two_samples_and_growth),
        cmocka_unit_test(phases),
        cmocka_unit_test(aggregation),
        cmocka_unit_test(throughput_rate),
        cmocka_unit_test(cap_check),
        cmocka_unit_test(profiled_run),
        cmocka_unit_test(derived_features),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
