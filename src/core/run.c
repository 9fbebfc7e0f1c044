/* run.c — a run's summary from its binned telemetry and step log, and the
 * sweep table of summaries (see run.h). */
#include "pfi/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pfi_run_summary_dispose(pfi_run_summary *s)
{
    pfi_manifest_dispose(&s->m);
    free(s->name);
    s->name = NULL;
}

static void agg(const double *x, size_t b, size_t e, const pfi_protocol_opts *o, double *v,
                double *sem)
{
    double dummy;
    pfi_aggregate(x + b, e - b, o->agg, o->top_frac, v, sem ? sem : &dummy);
}

static int all_nan(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i])) return 0;
    return 1;
}

/* the telemetry has what the protocol needs: power for as many GPUs as
 * run.json says, and utilization to find the training phase */
static pfi_status check_series(const pfi_series *ser, const pfi_run_summary *s, const char *name,
                               pfi_log *log, pfi_error *err)
{
    if (ser->n_gpus == 0 || ser->n == 0)
        return pfi_errorf(err, PFI_EINVAL,
                          "run %s: no GPU power telemetry (DCGM_FI_DEV_POWER_USAGE)", name);
    if ((int)ser->n_gpus != s->m.gpus)
        return pfi_errorf(err, PFI_EINVAL,
                          "run %s: run.json says %d GPUs but the telemetry has %zu", name,
                          s->m.gpus, ser->n_gpus);
    if (ser->n_dropped)
        pfi_warnf(log,
                  "run %s: %zu of %zu scrape intervals dropped (a GPU's power missing even after "
                  "carrying its last value for one interval)",
                  name, ser->n_dropped, ser->n_dropped + ser->n);
    int have_util = 0;
    for (size_t i = 0; i < ser->n && !have_util; i++) have_util = !isnan(ser->util_min[i]);
    if (!have_util)
        return pfi_errorf(err, PFI_EINVAL,
                          "run %s: no GPU utilization (DCGM_FI_DEV_GPU_UTIL): cannot find the "
                          "training phase",
                          name);
    return PFI_OK;
}

/* the training phase of the series (phases.c), or an error saying why
 * there is none */
static pfi_status find_training(const pfi_series *ser, const pfi_protocol_opts *o, const char *name,
                                pfi_log *log, pfi_phases *ph, pfi_error *err)
{
    /* a protocol rule without its input is skipped, never silently */
    if (all_nan(ser->metric[PFI_M_FB_USED], ser->n))
        pfi_warnf(log,
                  "run %s: warm-up rule skipped: no framebuffer-used column "
                  "(DCGM_FI_DEV_FB_USED; nvidia-smi memory.used)",
                  name);
    pfi_phases_segment(ser->metric[PFI_M_FB_USED], ser->metric[PFI_M_GPU_UTIL], ser->util_min,
                       ser->n, o, ph);
    if (!ph->has_training)
        return pfi_errorf(err, PFI_EINVAL,
                          "run %s: no training phase (never %d consecutive scrapes with every GPU "
                          "above %g%% utilization)",
                          name, o->sustain_scrapes, o->util_train_pct);
    return PFI_OK;
}

/* power, the metrics, the derived features and the enforced limit over the
 * training bins [b, e) */
static void aggregate_telemetry(const pfi_series *ser, size_t b, size_t e,
                                const pfi_protocol_opts *o, pfi_run_summary *s)
{
    agg(ser->power_w, b, e, o, &s->power_w, &s->power_w_sem);
    for (int m = 0; m < PFI_M_COUNT; m++) agg(ser->metric[m], b, e, o, &s->metric[m], NULL);
    for (int d = 0; d < PFI_D_COUNT; d++) agg(ser->derived[d], b, e, o, &s->derived[d], NULL);
    /* the cap check uses the median enforced limit over training (not top-10%) */
    double med_sem;
    const double *lim = ser->metric[PFI_M_ENFORCED_LIMIT];
    s->enforced_limit_w = NAN;
    if (pfi_aggregate(lim + b, e - b, PFI_AGG_MEDIAN, 0, &s->enforced_limit_w, &med_sem) == 0)
        pfi_aggregate(ser->metric[PFI_M_MGMT_LIMIT] + b, e - b, PFI_AGG_MEDIAN, 0,
                      &s->enforced_limit_w, &med_sem);
}

/* the enforced limit in the telemetry is the cap run.json names */
static pfi_status check_cap(const pfi_run_summary *s, const pfi_protocol_opts *o, const char *name,
                            pfi_log *log, pfi_error *err)
{
    if (o->cap_check && isnan(s->enforced_limit_w))
        pfi_warnf(log,
                  "run %s: cap check skipped: no power-limit column with values in the "
                  "training phase (DCGM_FI_DEV_ENFORCED_POWER_LIMIT or "
                  "DCGM_FI_DEV_POWER_MGMT_LIMIT; nvidia-smi enforced.power.limit or "
                  "power.limit): cap_w %g W is not verified",
                  name, s->m.cap_w);
    if (o->cap_check && pfi_cap_check(s->enforced_limit_w, s->m.cap_w, o->cap_tol_w) != 0)
        return pfi_errorf(err, PFI_EINVAL,
                          "run %s: enforced power limit %.1f W in the telemetry but cap_w %g W in "
                          "run.json (--no-cap-check to override)",
                          name, s->enforced_limit_w, s->m.cap_w);
    return PFI_OK;
}

/* A run whose caps something stepped while it trained (a profile at job
 * start, pfi-controller's; an event): its row is the one at the cap
 * run.json names, so with the cap check on, [*b, *e) narrows to the
 * longest stretch of training bins whose enforced limit (else the
 * management limit; a bin with neither counts as at the cap) is within
 * cap_tol_w of cap_w, when bins at another limit are there and that
 * stretch is at least sustain_scrapes long (else the cap check below
 * decides as before). Noted as a warning with the counts. */
static void stretch_at_cap(const pfi_series *ser, const pfi_protocol_opts *o, double cap_w,
                           const char *name, pfi_log *log, size_t *b, size_t *e)
{
    if (!o->cap_check) return;
    const double *lim = ser->metric[PFI_M_ENFORCED_LIMIT], *mg = ser->metric[PFI_M_MGMT_LIMIT];
    size_t best_b = *b, best_n = 0, run_b = *b, off = 0;
    for (size_t i = *b; i <= *e; i++) {
        double l = i < *e ? (isnan(lim[i]) ? mg[i] : lim[i]) : NAN;
        int at = i < *e && pfi_cap_check(l, cap_w, o->cap_tol_w) == 0;
        off += i < *e && !at;
        if (at) continue;
        if (i - run_b > best_n) best_b = run_b, best_n = i - run_b;
        run_b = i + 1;
    }
    if (!off || best_n < (size_t)o->sustain_scrapes) return;
    pfi_warnf(log,
              "run %s: %zu of %zu training scrapes at another enforced limit than cap_w %g W (a "
              "profile or an event stepped the caps): the row is from the longest stretch at "
              "cap_w (%zu scrapes)",
              name, off, *e - *b, cap_w, best_n);
    *b = best_b;
    *e = best_b + best_n;
}

/* throughput, MFU and TFLOPS from the step log's samples in the training
 * phase [t0, t1) s */
static pfi_status aggregate_steps(const pfi_steplog *steps, double t0, double t1,
                                  const pfi_protocol_opts *o, pfi_run_summary *s, const char *name,
                                  pfi_error *err)
{
    if (!steps || steps->n == 0)
        return pfi_errorf(err, PFI_EINVAL, "run %s: no step log samples: throughput unknown", name);
    double *tps = malloc(steps->n * sizeof *tps), *mfu = malloc(steps->n * sizeof *mfu);
    double *tfl = malloc(steps->n * sizeof *tfl);
    if (!tps || !mfu || !tfl) {
        free(tps), free(mfu), free(tfl);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    size_t k = 0, first = steps->n;
    for (size_t i = 0; i < steps->n; i++)
        if (steps->t_s[i] >= t0 && steps->t_s[i] < t1) {
            if (first == steps->n) first = i;
            tps[k] = steps->tokens_per_s[i];
            mfu[k] = steps->mfu[i];
            tfl[k] = steps->tflops[i];
            k++;
        }
    s->n_steps = k;
    if (k == 0) {
        free(tps), free(mfu), free(tfl);
        return pfi_errorf(
            err, PFI_EINVAL,
            "run %s: the step log has no samples in the training phase (%.0f..%.0f s; "
            "step log %.0f..%.0f s)",
            name, t0, t1, steps->t_s[0], steps->t_s[steps->n - 1]);
    }
    if (o->tput_agg == PFI_AGG_RATE) /* the lines in the window are consecutive */
        pfi_throughput_rate(steps->t_s + first, steps->tokens_per_s + first,
                            steps->tokens ? steps->tokens + first : NULL,
                            steps->step ? steps->step + first : NULL, k, &s->tokens_per_s,
                            &s->tokens_per_s_sem);
    else pfi_aggregate(tps, k, o->tput_agg, o->top_frac, &s->tokens_per_s, &s->tokens_per_s_sem);
    agg(mfu, 0, k, o, &s->mfu, &s->mfu_sem);
    agg(tfl, 0, k, o, &s->tflops, NULL);
    free(tps), free(mfu), free(tfl);
    if (!(s->tokens_per_s > 0))
        return pfi_errorf(err, PFI_EINVAL, "run %s: throughput in the training phase is zero",
                          name);
    return PFI_OK;
}

pfi_status pfi_summarize_run(const pfi_bins *bins, const pfi_steplog *steps,
                             const pfi_protocol_opts *o, pfi_run_summary *s, pfi_log *log,
                             pfi_error *err)
{
    const char *name = s->name ? s->name : s->m.group;
    pfi_series ser;
    pfi_status st = pfi_bins_series(bins, &ser, err);
    if (st) return st;
    s->ngpus = (int)ser.n_gpus;
    s->n_bins = ser.n;
    s->n_dropped = ser.n_dropped;
    pfi_phases ph;
    if ((st = check_series(&ser, s, name, log, err)) ||
        (st = find_training(&ser, o, name, log, &ph, err))) {
        pfi_series_dispose(&ser);
        return st;
    }
    size_t b = ph.train_begin, e = ph.train_end;
    stretch_at_cap(&ser, o, s->m.cap_w, name, log, &b, &e);
    s->n_train = e - b;
    int64_t iv_ms = (int64_t)llround(o->interval_s * 1000);
    double t0 = (double)ser.t_ms[b] / 1000.0, t1 = (double)(ser.t_ms[e - 1] + iv_ms) / 1000.0;
    s->train_s = t1 - t0;
    aggregate_telemetry(&ser, b, e, o, s);
    pfi_series_dispose(&ser);
    if ((st = check_cap(s, o, name, log, err))) return st;
    return aggregate_steps(steps, t0, t1, o, s, name, err);
}

/* ---- the sweep table of summaries ---- */

enum {
    F_GROUP,
    F_GPU_MODEL,
    F_GPUS,
    F_CAP,
    F_TPS,
    F_TPS_SEM,
    F_PW,
    F_PW_SEM,
    F_ARCH,
    F_TASK,
    F_MODEL,
    F_SPLIT,
    F_MFU,
    F_MFU_SEM,
    F_TFLOPS,
    F_N
};
static const char *const fixed[F_N] = {
    "group",   "gpu_model",   "gpus",  "cap_w", "tokens_per_s", "tokens_per_s_sem",
    "power_w", "power_w_sem", "arch",  "task",  "model",        "split",
    "mfu",     "mfu_sem",     "tflops"};
static const int fixed_text[F_N] = {1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0};

pfi_status pfi_summaries_table(const pfi_run_summary *const *runs, size_t n, pfi_table **out,
                               pfi_error *err)
{
    pfi_table *t = pfi_table_new();
    if (!t) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    pfi_status st = PFI_OK;
    long cf[F_N];
    for (int i = 0; i < F_N; i++)
        if ((cf[i] = pfi_table_add_col(t, fixed[i], fixed_text[i] ? PFI_COL_TEXT : PFI_COL_NUM,
                                       err)) < 0)
            goto fail;
    long cm[PFI_M_COUNT], cd[PFI_D_COUNT];
    for (int m = 0; m < PFI_M_COUNT; m++) {
        cm[m] = -1;
        for (size_t r = 0; r < n; r++)
            if (!isnan(runs[r]->metric[m])) {
                if ((cm[m] = pfi_table_add_col(t, pfi_metric_get((pfi_metric)m)->name, PFI_COL_NUM,
                                               err)) < 0)
                    goto fail;
                break;
            }
    }
    for (int d = 0; d < PFI_D_COUNT; d++) {
        cd[d] = -1;
        for (size_t r = 0; r < n; r++)
            if (!isnan(runs[r]->derived[d])) {
                if ((cd[d] = pfi_table_add_col(t, pfi_derived_name((pfi_derived)d), PFI_COL_NUM,
                                               err)) < 0)
                    goto fail;
                break;
            }
    }
    long cns = pfi_table_add_col(t, "n_samples", PFI_COL_NUM, err);
    long cnst = pfi_table_add_col(t, "n_steps", PFI_COL_NUM, err);
    long ctr = pfi_table_add_col(t, "train_s", PFI_COL_NUM, err);
    long crun = pfi_table_add_col(t, "run", PFI_COL_TEXT, err);
    if (cns < 0 || cnst < 0 || ctr < 0 || crun < 0) goto fail;
    uint32_t file = pfi_table_add_file(t, "(ingest)");
    for (size_t r = 0; r < n; r++) {
        const pfi_run_summary *s = runs[r];
        size_t row;
        if ((st = pfi_table_add_row(t, file, r + 1, &row, err))) goto fail_st;
        const char *txt[F_N] = {0};
        txt[F_GROUP] = s->m.group;
        txt[F_GPU_MODEL] = s->m.gpu_model;
        txt[F_ARCH] = s->m.arch;
        txt[F_TASK] = s->m.task;
        txt[F_MODEL] = s->m.model;
        txt[F_SPLIT] = s->m.split;
        double num[F_N];
        num[F_GPUS] = s->m.gpus;
        num[F_CAP] = s->m.cap_w;
        num[F_TPS] = s->tokens_per_s;
        num[F_TPS_SEM] = s->tokens_per_s_sem;
        num[F_PW] = s->power_w;
        num[F_PW_SEM] = s->power_w_sem;
        num[F_MFU] = s->mfu;
        num[F_MFU_SEM] = s->mfu_sem;
        num[F_TFLOPS] = s->tflops;
        for (int i = 0; i < F_N; i++) {
            if (fixed_text[i]) {
                if (txt[i] && (st = pfi_table_set_text(t, (size_t)cf[i], row, txt[i], err)))
                    goto fail_st;
            } else {
                pfi_table_set_num(t, (size_t)cf[i], row, num[i]);
            }
        }
        for (int m = 0; m < PFI_M_COUNT; m++)
            if (cm[m] >= 0) pfi_table_set_num(t, (size_t)cm[m], row, s->metric[m]);
        for (int d = 0; d < PFI_D_COUNT; d++)
            if (cd[d] >= 0) pfi_table_set_num(t, (size_t)cd[d], row, s->derived[d]);
        pfi_table_set_num(t, (size_t)cns, row, (double)s->n_train);
        pfi_table_set_num(t, (size_t)cnst, row, (double)s->n_steps);
        pfi_table_set_num(t, (size_t)ctr, row, s->train_s);
        if (s->name && (st = pfi_table_set_text(t, (size_t)crun, row, s->name, err))) goto fail_st;
        for (size_t k = 0; k < s->m.nmeta; k++) {
            long c = pfi_table_col(t, s->m.meta[k].key);
            if (c < 0) c = pfi_table_add_col(t, s->m.meta[k].key, PFI_COL_TEXT, err);
            if (c < 0) goto fail;
            if (pfi_table_coltype(t, (size_t)c) != PFI_COL_TEXT) {
                st = pfi_errorf(err, PFI_EINVAL, "run %s: metadata key '%s' clashes with a column",
                                s->name ? s->name : "?", s->m.meta[k].key);
                goto fail_st;
            }
            if ((st = pfi_table_set_text(t, (size_t)c, row, s->m.meta[k].value, err))) goto fail_st;
        }
    }
    *out = t;
    return PFI_OK;
fail:
    st = err ? err->code : PFI_ENOMEM;
fail_st:
    pfi_table_free(t);
    return st;
}
