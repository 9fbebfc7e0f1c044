/* pool.c — see pool.h. */
#include "pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/features.h"
#include "pfi/model_file.h"
#include "pfi/physmodel.h"

void cli_pool_free(cli_pool *P)
{
    if (P->pred)
        for (size_t i = 0; i < P->n; i++) pfi_curve_free(&P->pred[i]);
    free(P->pred);
    free(P->jobs);
    free(P->is_ft);
    free(P->group);
    memset(P, 0, sizeof *P);
}

static int features_of(const char *cmd, cli_gset *S, const size_t *use, size_t n, char **feat, size_t p, double *X)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < p; k++) {
            int known;
            X[i * p + k] = pfi_feature_value(S->t, &S->gs.g[use[i]], feat[k], &known);
            if (!known) {
                cli_error(cmd, "the table has no feature '%s'", feat[k]);
                return -1;
            }
        }
    return 0;
}

int cli_pool_build(const char *cmd, cli_gset *S, const size_t *use, size_t n, const cli_pool_opts *o, cli_pool *P)
{
    memset(P, 0, sizeof *P);
    P->n = n;
    P->jobs = calloc(n ? n : 1, sizeof *P->jobs);
    P->is_ft = calloc(n ? n : 1, sizeof *P->is_ft);
    P->group = malloc((n ? n : 1) * sizeof *P->group);
    if (!P->jobs || !P->is_ft || !P->group) {
        cli_error(cmd, "out of memory");
        return -1;
    }
    pfi_log lg = cli_log(cmd);
    int task_seen = 0;
    for (size_t i = 0; i < n; i++) {
        const pfi_group *g = &S->gs.g[use[i]];
        pfi_alloc_job *j = &P->jobs[i];
        const pfi_point *u = pfi_curve_uncapped(&g->curve);
        P->group[i] = use[i];
        j->gpus = g->gpus;
        j->tokens_max = u->tokens_per_s;
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
        double d = pfi_feature_value(S->t, g, "dram_copy_product", NULL);
        j->dcp = isfinite(d) ? d : 0;
    }
    P->have_task = task_seen;
    /* predicted PFI */
    char **feat = NULL;
    size_t p = 0;
    pfi_error err;
    if (o->model) {
        pfi_model M;
        if (pfi_model_load(o->model, &M, &err)) {
            cli_error(cmd, "%s", err.msg);
            return -1;
        }
        double *x = malloc(M.p * sizeof *x);
        size_t oor = 0;
        for (size_t i = 0; i < n; i++) {
            if (features_of(cmd, S, &use[i], 1, M.features, M.p, x)) {
                free(x);
                pfi_model_free(&M);
                return -1;
            }
            int o2 = 0;
            P->jobs[i].pfi_pred = pfi_model_pfi(&M, x, NULL, &o2);
            oor += o2 > 0;
        }
        if (oor) pfi_warnf(&lg, "%zu of %zu jobs have features outside the model's training range", oor, n);
        free(x);
        pfi_model_free(&M);
    } else {
        if (pfi_features_expand(o->features ? o->features : "dram_copy_product", &feat, &p, &err)) {
            cli_error(cmd, "%s", err.msg);
            return -1;
        }
        double *X = malloc(n * p * sizeof *X), *y = malloc(n * sizeof *y);
        const double *tgt = cli_gset_target(S, o->target ? o->target : "pfi");
        if (features_of(cmd, S, use, n, feat, p, X)) {
            free(X), free(y);
            pfi_features_free(feat, p);
            return -1;
        }
        for (size_t i = 0; i < n; i++) y[i] = tgt[use[i]];
        pfi_pfi_model m;
        if (pfi_pfi_model_fit(X, y, n, p, &m, &err)) {
            cli_error(cmd, "in-sample PFI fit: %s", err.msg);
            free(X), free(y);
            pfi_features_free(feat, p);
            return -1;
        }
        for (size_t i = 0; i < n; i++) P->jobs[i].pfi_pred = pfi_pfi_model_predict(&m, X + i * p, NULL, NULL);
        pfi_pfi_model_free(&m);
        free(X), free(y);
    }
    if (o->want_curves) {
        pfi_curve_model cm;
        size_t cp = 0;
        char **cfeat = NULL;
        pfi_model CM;
        int loaded = 0;
        if (o->curve_model) {
            if (pfi_model_load(o->curve_model, &CM, &err)) {
                cli_error(cmd, "%s", err.msg);
                pfi_features_free(feat, p);
                return -1;
            }
            if (CM.kind != PFI_MODEL_CURVE) {
                cli_error(cmd, "%s: not a curve model (kind \"curve\")", o->curve_model);
                pfi_model_free(&CM);
                pfi_features_free(feat, p);
                return -1;
            }
            cm = CM.curve;
            cfeat = CM.features;
            cp = CM.p;
            loaded = 1;
        } else {
            if (!feat && pfi_features_expand(o->features ? o->features : "dram_copy_product", &feat, &p, &err)) {
                cli_error(cmd, "%s", err.msg);
                return -1;
            }
            double *X = malloc(n * p * sizeof *X);
            const pfi_curve **cv = malloc(n * sizeof *cv);
            features_of(cmd, S, use, n, feat, p, X);
            for (size_t i = 0; i < n; i++) cv[i] = &S->gs.g[use[i]].curve;
            pfi_status st = pfi_curve_model_fit(X, cv, n, p, &cm, &err);
            free(X), free(cv);
            if (st) {
                cli_error(cmd, "in-sample curve fit: %s", err.msg);
                pfi_features_free(feat, p);
                return -1;
            }
            cfeat = feat;
            cp = p;
        }
        P->pred = calloc(n, sizeof *P->pred);
        double *x = malloc((cp ? cp : 1) * sizeof *x);
        int bad = 0;
        for (size_t i = 0; i < n && !bad; i++) {
            if (features_of(cmd, S, &use[i], 1, cfeat, cp, x)) bad = 1;
            else {
                pfi_alloc_job *j = &P->jobs[i];
                const pfi_point *u = pfi_curve_uncapped(&S->gs.g[use[i]].curve);
                if (pfi_curve_model_curve(&cm, x, u->cap_w, j->tokens_max, j->power_max_w, &P->pred[i], &err)) {
                    cli_error(cmd, "%s", err.msg);
                    bad = 1;
                } else {
                    j->pred_curve = &P->pred[i];
                }
            }
        }
        free(x);
        if (loaded) pfi_model_free(&CM);
        else pfi_curve_model_free(&cm);
        if (bad) {
            pfi_features_free(feat, p);
            return -1;
        }
    }
    pfi_features_free(feat, p);
    return 0;
}
