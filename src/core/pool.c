/* pool.c — sweep groups as allocation jobs (pool.h). */
#include "pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/features.h"
#include "physmodel.h"
#include "strategy.h"

void pfi_pool_dispose(pfi_pool *P)
{
    if (P->pred)
        for (size_t i = 0; i < P->n; i++) pfi_curve_dispose(&P->pred[i]);
    free(P->pred);
    if (P->prior)
        for (size_t i = 0; i < P->n; i++) pfi_curve_dispose(&P->prior[i]);
    free(P->prior);
    free(P->jobs);
    free(P->is_ft);
    free(P->group);
    if (P->name)
        for (size_t i = 0; i < P->n; i++) free(P->name[i]);
    free(P->name);
    memset(P, 0, sizeof *P);
}

#define BIT(s) (1u << (s))
#define DEFAULT_FEATURES "dram_copy_product"

/* strategy s needs a PFI / predicted curves from the pool (the table's needs) */
static int needs_pfi(const pfi_pool_opts *o, pfi_strategy s)
{
    (void)o;
    return pfi_strategy_needs(s, PFI_NEEDS_PFI);
}

static int needs_curves(const pfi_pool_opts *o, pfi_strategy s)
{
    /* the PFI at the operating point: from predicted curves unless measured */
    return pfi_strategy_needs(s, PFI_NEEDS_PRED_CURVE) ||
           (pfi_strategy_needs(s, PFI_NEEDS_OP_CURVE) && o->pfi == PFI_PFI_PREDICTED);
}

static int any_strategy(const pfi_pool_opts *o, int (*need)(const pfi_pool_opts *, pfi_strategy))
{
    for (int s = 0; s < PFI_STRAT_COUNT; s++)
        if ((o->strategies & BIT(s)) && need(o, (pfi_strategy)s)) return 1;
    return 0;
}

int pfi_pool_needs_pfi(const pfi_pool_opts *o)
{
    return any_strategy(o, needs_pfi);
}

int pfi_pool_needs_curves(const pfi_pool_opts *o)
{
    return any_strategy(o, needs_curves);
}

int pfi_pfi_source_parse(const char *s, pfi_pfi_source *out)
{
    for (int i = PFI_PFI_PREDICTED; i <= PFI_PFI_MEASURED_ROBUST; i++)
        if (!strcmp(s, pfi_pfi_source_name((pfi_pfi_source)i))) {
            *out = (pfi_pfi_source)i;
            return 0;
        }
    return -1;
}

const char *pfi_pfi_source_name(pfi_pfi_source s)
{
    return s == PFI_PFI_MEASURED          ? "measured"
           : s == PFI_PFI_MEASURED_ROBUST ? "measured-robust"
                                          : "predicted";
}

/* the first of the features (a comma list) that the table lacks */
static int lacks_feature(const pfi_groupset *S, const char *features, char *col, size_t ncol)
{
    char **feat = NULL;
    size_t p = 0;
    pfi_error err;
    if (pfi_features_expand(features, &feat, &p, &err))
        return 0; /* a malformed list is reported where it is fitted */
    int lacks = 0;
    for (size_t k = 0; k < p && !lacks && S->gs.n; k++) {
        int known;
        pfi_feature_value(S->t, &S->gs.g[0], feat[k], &known);
        if (!known) {
            snprintf(col, ncol, "%s", feat[k]);
            lacks = 1;
        }
    }
    pfi_features_free(feat, p);
    return lacks;
}

int pfi_pool_lacks(const pfi_groupset *S, const pfi_pool_opts *o, pfi_strategy s, char *col,
                   size_t ncol)
{
    const char *fs = o->features ? o->features : DEFAULT_FEATURES;
    const pfi_strategy_ops *t = pfi_strategy_get(s);
    if (!t) return 0;
    if ((t->needs & PFI_NEEDS_COLUMN) && lacks_feature(S, t->column, col, ncol))
        return PFI_POOL_LACK_COLUMN;
    if (needs_pfi(o, s) && o->pfi == PFI_PFI_PREDICTED && !o->model &&
        lacks_feature(S, fs, col, ncol))
        return PFI_POOL_LACK_PFI_FIT;
    if (needs_curves(o, s) && !o->curve_model && lacks_feature(S, fs, col, ncol))
        return PFI_POOL_LACK_CURVE_FIT;
    return 0;
}

pfi_status pfi_pool_check(const pfi_groupset *S, const pfi_pool_opts *o, pfi_error *err)
{
    for (int s = 0; s < PFI_STRAT_COUNT; s++) {
        char col[128];
        const char *name = pfi_strategy_name((pfi_strategy)s);
        switch (o->strategies & BIT(s) ? pfi_pool_lacks(S, o, (pfi_strategy)s, col, sizeof col)
                                       : 0) {
        case PFI_POOL_LACK_COLUMN:
            return pfi_errorf(err, PFI_ENOTFOUND,
                              "%s weights each job by its %s: the table has no column '%s'", name,
                              col, col);
        case PFI_POOL_LACK_PFI_FIT:
            return pfi_errorf(
                err, PFI_ENOTFOUND,
                "%s needs a predicted PFI: the table has no column '%s' for the in-sample fit "
                "(choose features with --features, a model with --model, or --pfi measured)",
                name, col);
        case PFI_POOL_LACK_CURVE_FIT:
            return pfi_errorf(
                err, PFI_ENOTFOUND,
                "%s needs predicted curves: the table has no column '%s' for the in-sample fit "
                "(choose features with --features, or a curve model with --curve-model)",
                name, col);
        default: break;
        }
    }
    return PFI_OK;
}

/* X[i * p + k] = feature k of group use[i]; who needs them names the error */
static pfi_status features_of(const pfi_groupset *S, const size_t *use, size_t n, char *const *feat,
                              size_t p, double *X, const char *who, pfi_error *err)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < p; k++) {
            int known;
            X[i * p + k] = pfi_feature_value(S->t, &S->gs.g[use[i]], feat[k], &known);
            if (!known)
                return pfi_errorf(err, PFI_ENOTFOUND,
                                  "%s needs feature '%s': the table has no such column", who,
                                  feat[k]);
        }
    return PFI_OK;
}

pfi_status pfi_pool_init(const pfi_groupset *S, const size_t *use, size_t n, pfi_pool *P,
                         pfi_error *err)
{
    memset(P, 0, sizeof *P);
    P->n = n;
    P->jobs = calloc(n ? n : 1, sizeof *P->jobs);
    P->is_ft = calloc(n ? n : 1, sizeof *P->is_ft);
    P->group = malloc((n ? n : 1) * sizeof *P->group);
    P->name = calloc(n ? n : 1, sizeof *P->name);
    if (!P->jobs || !P->is_ft || !P->group || !P->name)
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    int task_seen = 0;
    for (size_t i = 0; i < n; i++) {
        const pfi_group *g = &S->gs.g[use[i]];
        pfi_alloc_job *j = &P->jobs[i];
        const pfi_point *u = pfi_curve_uncapped(&g->curve);
        P->group[i] = use[i];
        j->gpus = g->gpus;
        j->tokens_per_s_max = u->tokens_per_s;
        j->power_max_w = u->power_w;
        double pmin = u->power_w;
        for (size_t k = 0; k < g->curve.n; k++)
            if (g->curve.pts[k].power_w < pmin) pmin = g->curve.pts[k].power_w;
        j->power_min_w = pmin;
        j->curve = &g->curve;
        j->sla_tier = -1;
        const pfi_hw *hw = pfi_hw_get(g->gpu_model);
        j->cap_min_w = hw ? hw->min_cap_w : g->curve.pts[0].cap_w;
        j->cap_max_w = hw ? hw->tdp_w : u->cap_w;
        j->moe_ft = !strcmp(g->arch, "moe") && !strcmp(g->task, "ft");
        P->is_ft[i] = !strcmp(g->task, "ft");
        task_seen |= g->task[0] != 0;
        j->dcp =
            pfi_feature_value(S->t, g, "dram_copy_product", NULL); /* NaN if none: dcgm says so */
        j->pfi_pred = NAN; /* only strategies that weight by the PFI get one (pfi_pool_set_pfi) */
        size_t len = strlen(g->name) + strlen(g->gpu_model) + 8;
        if ((P->name[i] = malloc(len)))
            snprintf(P->name[i], len, "'%s' (%s)", g->name, g->gpu_model);
        j->name = P->name[i];
    }
    P->have_task = task_seen;
    return PFI_OK;
}

/* the model's PFI of every job */
static pfi_status pfi_from_model(pfi_pool *P, const pfi_groupset *S, const pfi_pool_opts *o,
                                 const pfi_modelfile *M, pfi_log *log, pfi_error *err)
{
    double *x = malloc((M->p ? M->p : 1) * sizeof *x);
    if (!x) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    size_t oor = 0;
    for (size_t i = 0; i < P->n; i++) {
        pfi_status st = features_of(S, &P->group[i], 1, M->features, M->p, x, o->model, err);
        if (st) {
            free(x);
            return st;
        }
        int o2 = 0;
        P->jobs[i].pfi_pred = pfi_modelfile_pfi(M, x, NULL, &o2);
        oor += o2 > 0;
    }
    if (oor)
        pfi_warnf(log, "%zu of %zu jobs have features outside the model's training range", oor,
                  P->n);
    free(x);
    return PFI_OK;
}

/* the paper's way: an OLS of the target on the features over the pool itself */
static pfi_status pfi_in_sample(pfi_pool *P, const pfi_groupset *S, const pfi_pool_opts *o,
                                pfi_error *err)
{
    char **feat = NULL;
    size_t p = 0, n = P->n;
    pfi_status st =
        pfi_features_expand(o->features ? o->features : DEFAULT_FEATURES, &feat, &p, err);
    if (st) return st;
    double *X = malloc((n ? n : 1) * (p ? p : 1) * sizeof *X), *y = malloc((n ? n : 1) * sizeof *y);
    const double *tgt = pfi_groupset_target(S, o->target ? o->target : "pfi");
    if (!X || !y) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    else st = features_of(S, P->group, n, feat, p, X, "the in-sample PFI fit", err);
    pfi_pfi_model m;
    if (!st) {
        for (size_t i = 0; i < n; i++) y[i] = tgt[P->group[i]];
        if ((st = pfi_pfi_model_fit(X, y, n, p, &m, err)))
            pfi_error_prefix(err, "in-sample PFI fit");
    }
    if (!st) {
        for (size_t i = 0; i < n; i++)
            P->jobs[i].pfi_pred = pfi_pfi_model_predict(&m, X + i * p, NULL, NULL);
        pfi_pfi_model_dispose(&m);
    }
    free(X), free(y);
    pfi_features_free(feat, p);
    return st;
}

pfi_status pfi_pool_set_pfi(pfi_pool *P, const pfi_groupset *S, const pfi_pool_opts *o,
                            const pfi_modelfile *model, pfi_log *log, pfi_error *err)
{
    if (!pfi_pool_needs_pfi(o)) return PFI_OK;
    pfi_status st = PFI_OK;
    if (o->pfi != PFI_PFI_PREDICTED) {
        const double *m = o->pfi == PFI_PFI_MEASURED ? S->pfi : S->robust;
        for (size_t i = 0; i < P->n; i++) P->jobs[i].pfi_pred = m[P->group[i]];
    } else if (model) {
        st = pfi_from_model(P, S, o, model, log, err);
    } else {
        st = pfi_in_sample(P, S, o, err);
    }
    if (st) return st;
    /* a weight is never zeroed: name the groups without a finite, positive PFI */
    pfi_alloc_opts ao;
    pfi_alloc_opts_default(&ao);
    if (pfi_alloc_check_weights(P->jobs, P->n, &ao, err)) {
        const char *src = o->pfi == PFI_PFI_MEASURED ? "each group's Eq. 1 PFI"
                          : o->pfi == PFI_PFI_MEASURED_ROBUST
                              ? "each group's robust PFI, none unless verdict ok or noisy"
                          : o->model ? o->model
                                     : "in-sample fit";
        pfi_error_prefix(err, "--pfi %s (%s)", pfi_pfi_source_name(o->pfi), src);
        return err ? err->code : PFI_EINVAL;
    }
    return PFI_OK;
}

/* every job's curve from cm on the features feat[0..p) (who names the
   model): predicted (P->pred, j->pred_curve), or with prior the prior's
   bound, 2 residual SE (P->prior, j->prior_curve) */
static pfi_status model_curves(pfi_pool *P, const pfi_groupset *S, const pfi_curve_model *cm,
                               char *const *feat, size_t p, const char *who, int prior,
                               pfi_error *err)
{
    pfi_curve *out = calloc(P->n ? P->n : 1, sizeof *out);
    *(prior ? &P->prior : &P->pred) = out;
    double *x = malloc((p ? p : 1) * sizeof *x);
    pfi_status st = out && x ? PFI_OK : pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; i < P->n && !st; i++) {
        if ((st = features_of(S, &P->group[i], 1, feat, p, x, who, err))) break;
        pfi_alloc_job *j = &P->jobs[i];
        const pfi_point *u = pfi_curve_uncapped(&S->gs.g[P->group[i]].curve);
        double c = u->cap_w, t = j->tokens_per_s_max, w = j->power_max_w;
        st = prior ? pfi_curve_model_bound(cm, x, 2, c, t, w, &out[i], err)
                   : pfi_curve_model_curve(cm, x, c, t, w, &out[i], err);
        if (st && prior) pfi_error_prefix(err, "%s", who);
        if (!st) *(prior ? &j->prior_curve : &j->pred_curve) = &out[i];
    }
    free(x);
    return st;
}

/* what the pool takes from a curve model: predicted curves, prior bounds */
static pfi_status from_model(pfi_pool *P, const pfi_groupset *S, const pfi_pool_opts *o,
                             const pfi_curve_model *cm, char *const *feat, size_t p,
                             const char *who, pfi_error *err)
{
    pfi_status st = PFI_OK;
    if (pfi_pool_needs_curves(o)) st = model_curves(P, S, cm, feat, p, who, 0, err);
    if (!st && o->prior) st = model_curves(P, S, cm, feat, p, who, 1, err);
    return st;
}

pfi_status pfi_pool_set_curves(pfi_pool *P, const pfi_groupset *S, const pfi_pool_opts *o,
                               const pfi_modelfile *curve_model, pfi_error *err)
{
    if (!pfi_pool_needs_curves(o) && !o->prior) return PFI_OK;
    if (curve_model) {
        if (curve_model->kind != PFI_MODELFILE_CURVE)
            return pfi_errorf(err, PFI_EINVAL, "%s: not a curve model (kind \"curve\")",
                              o->curve_model ? o->curve_model : "the curve model");
        return from_model(P, S, o, &curve_model->curve, curve_model->features, curve_model->p,
                          o->curve_model, err);
    }
    char **feat = NULL;
    size_t p = 0, n = P->n;
    pfi_status st =
        pfi_features_expand(o->features ? o->features : DEFAULT_FEATURES, &feat, &p, err);
    if (st) return st;
    double *X = malloc((n ? n : 1) * (p ? p : 1) * sizeof *X);
    const pfi_curve **cv = malloc((n ? n : 1) * sizeof *cv);
    pfi_curve_model cm;
    if (!X || !cv) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    else st = features_of(S, P->group, n, feat, p, X, "the in-sample curve fit", err);
    if (!st) {
        for (size_t i = 0; i < n; i++) cv[i] = &S->gs.g[P->group[i]].curve;
        if ((st = pfi_curve_model_fit(X, cv, n, p, &cm, err)))
            pfi_error_prefix(err, "in-sample curve fit");
    }
    free(X), free(cv);
    if (!st) {
        st = from_model(P, S, o, &cm, feat, p, "the in-sample curve fit", err);
        pfi_curve_model_dispose(&cm);
    }
    pfi_features_free(feat, p);
    return st;
}

pfi_status pfi_pool_build(const pfi_groupset *S, const size_t *use, size_t n,
                          const pfi_pool_opts *o, const pfi_modelfile *model,
                          const pfi_modelfile *curve_model, pfi_pool *P, pfi_log *log,
                          pfi_error *err)
{
    pfi_status st = pfi_pool_init(S, use, n, P, err);
    if (!st) st = pfi_pool_check(S, o, err);
    if (!st) st = pfi_pool_set_pfi(P, S, o, model, log, err);
    if (!st) st = pfi_pool_set_curves(P, S, o, curve_model, err);
    return st;
}
