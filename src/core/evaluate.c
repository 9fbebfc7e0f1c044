/* evaluate.c — the predictor evaluated on sweep groups (evaluate.h). */
#include "evaluate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/features.h"

void pfi_fit_clusters(const pfi_groupset *S, const size_t *train, size_t n, const char *cluster_by,
                      int *cluster)
{
    char seen[256][96];
    int ns = 0;
    for (size_t i = 0; i < n; i++) {
        const pfi_group *g = &S->gs.g[train[i]];
        char key[200];
        if (cluster_by) snprintf(key, sizeof key, "%s", pfi_groupset_attr(S, g, cluster_by));
        else snprintf(key, sizeof key, "%s-%s", g->arch, g->task);
        int j;
        for (j = 0; j < ns; j++)
            if (!strcmp(seen[j], key)) break;
        if (j == ns && ns < 256) snprintf(seen[ns++], sizeof seen[0], "%.95s", key);
        cluster[i] = j;
    }
}

pfi_status pfi_fit_features(const pfi_groupset *S, char *const *feat, size_t p, const size_t *rows,
                            size_t n, double *X, pfi_error *err)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < p; k++) {
            int known;
            X[i * p + k] = pfi_feature_value(S->t, &S->gs.g[rows[i]], feat[k], &known);
            if (!known)
                return pfi_errorf(err, PFI_ENOTFOUND,
                                  "feature '%s' is not a numeric column of the table nor arch, "
                                  "task, log_gpus, power_frac",
                                  feat[k]);
        }
    return PFI_OK;
}

pfi_status pfi_fit_evaluate(const pfi_fit_data *d, char *const *feat, size_t p, pfi_fit_eval *ev,
                            pfi_pfi_model *model, pfi_error *err)
{
    size_t n = d->ntrain;
    double *X = calloc((n ? n : 1) * (p ? p : 1), sizeof *X), *y = calloc(n ? n : 1, sizeof *y),
           *yh = calloc(n ? n : 1, sizeof *yh);
    pfi_status st = PFI_OK;
    if (!X || !y || !yh) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = pfi_fit_features(d->S, feat, p, d->train, n, X, err))) goto out;
    for (size_t i = 0; i < n; i++) y[i] = d->y[d->train[i]];
    double mean = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(y[i])) mean += y[i], m++;
    mean /= (double)(m ? m : 1);
    if ((st = pfi_pfi_model_fit(X, y, n, p, model, err))) goto out;
    for (size_t i = 0; i < n; i++) yh[i] = pfi_linear_eval(&model->lin, X + i * p);
    pfi_eval_metrics(y, yh, n, mean, &ev->in_sample);
    pfi_cross_validate(X, y, n, p, NULL, yh, NULL);
    pfi_eval_metrics(y, yh, n, mean, &ev->loo);
    pfi_cross_validate(X, y, n, p, d->cluster, yh, NULL);
    pfi_eval_metrics(y, yh, n, mean, &ev->loco);
out:
    free(X), free(y), free(yh);
    return st;
}

pfi_status pfi_fit_eval_on(const pfi_fit_data *d, char *const *feat, size_t p,
                           const pfi_pfi_model *mod, const size_t *rows, size_t n, pfi_eval *ev,
                           size_t *n_used, size_t *n_out_of_range, pfi_error *err)
{
    size_t *use = malloc((n ? n : 1) * sizeof *use), m = 0;
    if (!use) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (isfinite(d->y[rows[i]])) use[m++] = rows[i];
    double *X = malloc((m ? m : 1) * (p ? p : 1) * sizeof *X), *y = malloc((m ? m : 1) * sizeof *y),
           *yh = malloc((m ? m : 1) * sizeof *yh);
    pfi_status st = PFI_OK;
    size_t oor = 0;
    if (!X || !y || !yh) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    else st = pfi_fit_features(d->S, feat, p, use, m, X, err);
    if (!st) {
        for (size_t i = 0; i < m; i++) {
            int o2;
            y[i] = d->y[use[i]];
            yh[i] = pfi_pfi_model_predict(mod, X + i * p, NULL, &o2);
            oor += o2 > 0;
        }
        pfi_eval_metrics(y, yh, m, NAN, ev);
    }
    if (n_used) *n_used = m;
    if (n_out_of_range) *n_out_of_range = oor;
    free(use), free(X), free(y), free(yh);
    return st;
}

/* table 3's predictor sets: the paper's name, the feature list */
static const char *const ablation_sets[PFI_ABLATION_SETS][2] = {
    {"dram_copy_product", "dram_copy_product"},
    {"arithmetic_intensity", "arithmetic_intensity"},
    {"dram_copy_product+arithmetic_intensity", "dram_copy_product,arithmetic_intensity"},
    {"job_metadata(arch;task;log_gpus)", "job_metadata"},
    {"dram_copy_product+job_metadata", "dram_copy_product,job_metadata"},
    {"all_dcgm_metrics", "all_dcgm_metrics"},
    {"all_dcgm_metrics+job_metadata", "all_dcgm_metrics,job_metadata"}};

pfi_status pfi_fit_ablation(const pfi_fit_data *d, pfi_ablation_row rows[PFI_ABLATION_SETS],
                            pfi_error *err)
{
    for (size_t s = 0; s < PFI_ABLATION_SETS; s++) {
        char **fs;
        size_t fp;
        pfi_status st = pfi_features_expand(ablation_sets[s][1], &fs, &fp, err);
        if (st) return st;
        pfi_pfi_model m;
        st = pfi_fit_evaluate(d, fs, fp, &rows[s].ev, &m, err);
        pfi_features_free(fs, fp);
        if (st) return st;
        pfi_pfi_model_dispose(&m);
        rows[s].name = ablation_sets[s][0];
        rows[s].p = fp;
    }
    return PFI_OK;
}

/* the training groups' features and curves */
static pfi_status training_set(const pfi_fit_data *d, char *const *feat, size_t p, double **X,
                               const pfi_curve ***cv, pfi_error *err)
{
    size_t n = d->ntrain;
    *X = malloc((n ? n : 1) * (p ? p : 1) * sizeof **X);
    *cv = malloc((n ? n : 1) * sizeof **cv);
    pfi_status st = *X && *cv ? pfi_fit_features(d->S, feat, p, d->train, n, *X, err)
                              : pfi_errorf(err, PFI_ENOMEM, "out of memory");
    if (st) {
        free(*X), free(*cv);
        *X = NULL, *cv = NULL;
        return st;
    }
    for (size_t i = 0; i < n; i++) (*cv)[i] = &d->S->gs.g[d->train[i]].curve;
    return PFI_OK;
}

pfi_status pfi_fit_curve(const pfi_fit_data *d, char *const *feat, size_t p, pfi_curve_model *m,
                         pfi_error *err)
{
    double *X;
    const pfi_curve **cv;
    pfi_status st = training_set(d, feat, p, &X, &cv, err);
    if (!st) st = pfi_curve_model_fit(X, cv, d->ntrain, p, m, err);
    free(X), free(cv);
    return st;
}

/* squared errors per grid point of m into sums, then the RMSE */
typedef struct curve_acc {
    double se_t[PFI_CURVE_GRID_MAX], se_p[PFI_CURVE_GRID_MAX];
    size_t cnt[PFI_CURVE_GRID_MAX];
} curve_acc;

static void finish(const pfi_curve_model *m, const curve_acc *a, pfi_curve_errors *out)
{
    memset(out, 0, sizeof *out);
    out->ngrid = m->ngrid;
    for (size_t k = 0; k < m->ngrid; k++) {
        out->frac[k] = m->frac[k];
        out->n[k] = a->cnt[k];
        out->tokens_frac_rmse[k] = a->cnt[k] ? sqrt(a->se_t[k] / (double)a->cnt[k]) : NAN;
        out->power_frac_rmse[k] = a->cnt[k] ? sqrt(a->se_p[k] / (double)a->cnt[k]) : NAN;
    }
}

/* the held-out groups of one fold against a model fitted without them */
static void score_fold(const pfi_curve_model *gm, const pfi_curve_model *fm, const double *X,
                       size_t p, const pfi_curve **cv, const int *held, size_t n, curve_acc *a)
{
    for (size_t i = 0; i < n; i++) {
        if (!held[i]) continue;
        double tp[PFI_CURVE_GRID_MAX], pp[PFI_CURVE_GRID_MAX];
        pfi_curve_model_predict(fm, X + i * p, tp, pp);
        for (size_t k = 0; k < fm->ngrid; k++) {
            double tm, pm;
            size_t kk;
            for (kk = 0; kk < gm->ngrid; kk++)
                if (fabs(gm->frac[kk] - fm->frac[k]) < 1e-9) break;
            if (kk == gm->ngrid || !pfi_curve_point_at_frac(cv[i], fm->frac[k], &tm, &pm)) continue;
            a->se_t[kk] += (tp[k] - tm) * (tp[k] - tm);
            a->se_p[kk] += (pp[k] - pm) * (pp[k] - pm);
            a->cnt[kk]++;
        }
    }
}

pfi_status pfi_fit_curve_cv(const pfi_fit_data *d, char *const *feat, size_t p,
                            const pfi_curve_model *m, int loco, pfi_curve_errors *out,
                            pfi_error *err)
{
    size_t n = d->ntrain;
    double *X;
    const pfi_curve **cv;
    pfi_status st = training_set(d, feat, p, &X, &cv, err);
    if (st) return st;
    curve_acc a;
    memset(&a, 0, sizeof a);
    int folds = 0;
    for (size_t i = 0; i < n; i++)
        if (d->cluster[i] + 1 > folds) folds = d->cluster[i] + 1;
    size_t nf = loco ? (size_t)folds : n;
    double *Xt = malloc((n ? n : 1) * (p ? p : 1) * sizeof *Xt);
    const pfi_curve **ct = malloc((n ? n : 1) * sizeof *ct);
    int *held = malloc((n ? n : 1) * sizeof *held);
    if (!Xt || !ct || !held) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t f = 0; f < nf && !st; f++) {
        size_t mt = 0;
        for (size_t i = 0; i < n; i++) {
            held[i] = loco ? d->cluster[i] == (int)f : i == f;
            if (held[i]) continue;
            memcpy(Xt + mt * p, X + i * p, p * sizeof *X);
            ct[mt++] = cv[i];
        }
        pfi_curve_model fm;
        if (pfi_curve_model_fit(Xt, ct, mt, p, &fm, NULL) != PFI_OK)
            continue; /* fold not fittable */
        score_fold(m, &fm, X, p, cv, held, n, &a);
        pfi_curve_model_dispose(&fm);
    }
    if (!st) finish(m, &a, out);
    free(Xt), free(ct), free(held), free(X), free(cv);
    return st;
}

pfi_status pfi_fit_curve_eval_on(const pfi_fit_data *d, char *const *feat, size_t p,
                                 const pfi_curve_model *m, const size_t *rows, size_t n,
                                 pfi_curve_errors *out, pfi_error *err)
{
    curve_acc a;
    memset(&a, 0, sizeof a);
    for (size_t i = 0; i < n; i++) {
        double x[256], tp[PFI_CURVE_GRID_MAX], pp[PFI_CURVE_GRID_MAX];
        if (p > 256 || pfi_fit_features(d->S, feat, p, &rows[i], 1, x, err)) continue;
        pfi_curve_model_predict(m, x, tp, pp);
        for (size_t k = 0; k < m->ngrid; k++) {
            double tm, pm;
            if (!pfi_curve_point_at_frac(&d->S->gs.g[rows[i]].curve, m->frac[k], &tm, &pm))
                continue;
            a.se_t[k] += (tp[k] - tm) * (tp[k] - tm);
            a.se_p[k] += (pp[k] - pm) * (pp[k] - pm);
            a.cnt[k]++;
        }
    }
    finish(m, &a, out);
    return PFI_OK;
}
