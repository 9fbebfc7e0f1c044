/* pool.c — see pool.h. */
#include "pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/features.h"
#include "pfi/model_file.h"
#include "physmodel.h"

void cli_pool_free(cli_pool *P)
{
    if (P->pred)
        for (size_t i = 0; i < P->n; i++) pfi_curve_free(&P->pred[i]);
    free(P->pred);
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

static int needs_pfi(const cli_pool_opts *o)
{
    return (o->strategies & (BIT(PFI_STRAT_PFI_AWARE) | BIT(PFI_STRAT_CLOSED_LOOP))) != 0;
}

static int needs_curves(const cli_pool_opts *o)
{
    return (o->strategies & (BIT(PFI_STRAT_CURVE_AWARE) | BIT(PFI_STRAT_CLOSED_LOOP))) != 0;
}

int cli_pfi_source_parse(const char *s, cli_pfi_source *out)
{
    for (int i = CLI_PFI_PREDICTED; i <= CLI_PFI_MEASURED_ROBUST; i++)
        if (!strcmp(s, cli_pfi_source_name((cli_pfi_source)i))) {
            *out = (cli_pfi_source)i;
            return 0;
        }
    return -1;
}

int cli_opt_pfi_source(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    if (cli_pfi_source_parse(arg, value)) return pfi_opts_bad_choice(ctx, o, arg), -1;
    return 0;
}

const char *cli_pfi_source_name(cli_pfi_source s)
{
    return s == CLI_PFI_MEASURED ? "measured" : s == CLI_PFI_MEASURED_ROBUST ? "measured-robust" : "predicted";
}

/* the first of the features (a comma list) that the table lacks */
static int lacks_feature(const cli_gset *S, const char *features, char *col, size_t ncol)
{
    char **feat = NULL;
    size_t p = 0;
    pfi_error err;
    if (pfi_features_expand(features, &feat, &p, &err)) return 0; /* a malformed list is reported where it is fitted */
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

int cli_pool_lacks(const cli_gset *S, const cli_pool_opts *o, pfi_strategy s, char *col, size_t ncol)
{
    const char *fs = o->features ? o->features : DEFAULT_FEATURES;
    int by_pfi = s == PFI_STRAT_PFI_AWARE || s == PFI_STRAT_CLOSED_LOOP;
    int by_curve = s == PFI_STRAT_CURVE_AWARE || s == PFI_STRAT_CLOSED_LOOP;
    if (s == PFI_STRAT_DCGM && lacks_feature(S, "dram_copy_product", col, ncol)) return CLI_LACK_DCP;
    if (by_pfi && o->pfi == CLI_PFI_PREDICTED && !o->model && lacks_feature(S, fs, col, ncol)) return CLI_LACK_PFI_FIT;
    if (by_curve && !o->curve_model && lacks_feature(S, fs, col, ncol)) return CLI_LACK_CURVE_FIT;
    return 0;
}

/* what each strategy needs that the table may lack, as one line */
static int check_columns(const char *cmd, const cli_gset *S, const cli_pool_opts *o)
{
    for (int s = 0; s < PFI_STRAT_COUNT; s++) {
        char col[128];
        const char *name = pfi_strategy_name((pfi_strategy)s);
        switch (o->strategies & BIT(s) ? cli_pool_lacks(S, o, (pfi_strategy)s, col, sizeof col) : 0) {
        case CLI_LACK_DCP:
            cli_error(cmd, "dcgm weights each job by its dram_copy_product: the table has no column 'dram_copy_product'");
            return -1;
        case CLI_LACK_PFI_FIT:
            cli_error(cmd, "%s needs a predicted PFI: the table has no column '%s' for the in-sample fit "
                           "(choose features with --features, a model with --model, or --pfi measured)", name, col);
            return -1;
        case CLI_LACK_CURVE_FIT:
            cli_error(cmd, "%s needs predicted curves: the table has no column '%s' for the in-sample fit "
                           "(choose features with --features, or a curve model with --curve-model)", name, col);
            return -1;
        default: break;
        }
    }
    return 0;
}

static int features_of(const char *cmd, cli_gset *S, const size_t *use, size_t n, char **feat, size_t p, double *X,
                       const char *who)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < p; k++) {
            int known;
            X[i * p + k] = pfi_feature_value(S->t, &S->gs.g[use[i]], feat[k], &known);
            if (!known) {
                cli_error(cmd, "%s needs feature '%s': the table has no such column", who, feat[k]);
                return -1;
            }
        }
    return 0;
}

/* one allocation job per group use[i] */
static int pool_jobs(const char *cmd, cli_gset *S, const size_t *use, size_t n, cli_pool *P)
{
    memset(P, 0, sizeof *P);
    P->n = n;
    P->jobs = calloc(n ? n : 1, sizeof *P->jobs);
    P->is_ft = calloc(n ? n : 1, sizeof *P->is_ft);
    P->group = malloc((n ? n : 1) * sizeof *P->group);
    P->name = calloc(n ? n : 1, sizeof *P->name);
    if (!P->jobs || !P->is_ft || !P->group || !P->name) {
        cli_error(cmd, "out of memory");
        return -1;
    }
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
        j->dcp = pfi_feature_value(S->t, g, "dram_copy_product", NULL); /* NaN if none: dcgm says so */
        j->pfi_pred = NAN; /* only strategies that weight by the PFI get one (below) */
        size_t len = strlen(g->name) + strlen(g->gpu_model) + 8;
        if ((P->name[i] = malloc(len))) snprintf(P->name[i], len, "'%s' (%s)", g->name, g->gpu_model);
        j->name = P->name[i];
    }
    P->have_task = task_seen;
    return 0;
}

/* the in-sample fit's features (the default list unless --features), once */
static int pool_features(const char *cmd, const cli_pool_opts *o, char ***feat, size_t *p)
{
    pfi_error err;
    if (*feat) return 0;
    if (pfi_features_expand(o->features ? o->features : DEFAULT_FEATURES, feat, p, &err)) {
        *feat = NULL; /* freed by pfi_features_expand */
        *p = 0;
        cli_error(cmd, "%s", err.msg);
        return -1;
    }
    return 0;
}

/* each job's PFI from the model file o->model */
static int pool_pfi_model(const char *cmd, cli_gset *S, const size_t *use, size_t n, const cli_pool_opts *o, cli_pool *P)
{
    pfi_error err;
    pfi_model M;
    if (pfi_model_load(o->model, &M, &err)) {
        cli_error(cmd, "%s", err.msg);
        return -1;
    }
    double *x = malloc(M.p * sizeof *x);
    size_t oor = 0;
    for (size_t i = 0; i < n; i++) {
        if (features_of(cmd, S, &use[i], 1, M.features, M.p, x, o->model)) {
            free(x);
            pfi_model_free(&M);
            return -1;
        }
        int o2 = 0;
        P->jobs[i].pfi_pred = pfi_model_pfi(&M, x, NULL, &o2);
        oor += o2 > 0;
    }
    pfi_log lg = cli_log(cmd);
    if (oor) pfi_warnf(&lg, "%zu of %zu jobs have features outside the model's training range", oor, n);
    free(x);
    pfi_model_free(&M);
    return 0;
}

/* the PFI pfi-aware weights by: measured, from a model file, or an
 * in-sample fit on *feat (expanded here); checked finite and positive */
static int pool_pfi(const char *cmd, cli_gset *S, const size_t *use, size_t n, const cli_pool_opts *o, cli_pool *P,
                    char ***feat, size_t *p)
{
    pfi_error err;
    if (!needs_pfi(o)) return 0;
    if (o->pfi != CLI_PFI_PREDICTED) {
        const double *m = o->pfi == CLI_PFI_MEASURED ? S->pfi : S->robust;
        for (size_t i = 0; i < n; i++) P->jobs[i].pfi_pred = m[use[i]];
    } else if (o->model) {
        if (pool_pfi_model(cmd, S, use, n, o, P)) return -1;
    } else {
        if (pool_features(cmd, o, feat, p)) return -1;
        double *X = malloc(n * *p * sizeof *X), *y = malloc(n * sizeof *y);
        const double *tgt = cli_gset_target(S, o->target ? o->target : "pfi");
        if (features_of(cmd, S, use, n, *feat, *p, X, "the in-sample PFI fit")) {
            free(X), free(y);
            return -1;
        }
        for (size_t i = 0; i < n; i++) y[i] = tgt[use[i]];
        pfi_pfi_model m;
        if (pfi_pfi_model_fit(X, y, n, *p, &m, &err)) {
            cli_error(cmd, "in-sample PFI fit: %s", err.msg);
            free(X), free(y);
            return -1;
        }
        for (size_t i = 0; i < n; i++) P->jobs[i].pfi_pred = pfi_pfi_model_predict(&m, X + i * *p, NULL, NULL);
        pfi_pfi_model_free(&m);
        free(X), free(y);
    }
    /* a weight is never zeroed: name the groups without a finite, positive PFI */
    pfi_alloc_opts ao;
    pfi_alloc_opts_default(&ao);
    if (pfi_alloc_check_weights(P->jobs, n, &ao, &err)) {
        const char *src = o->pfi == CLI_PFI_MEASURED          ? "each group's Eq. 1 PFI"
                          : o->pfi == CLI_PFI_MEASURED_ROBUST ? "each group's robust PFI, none unless verdict ok or noisy"
                          : o->model                          ? o->model
                                                              : "in-sample fit";
        cli_error(cmd, "--pfi %s (%s): %s", cli_pfi_source_name(o->pfi), src, err.msg);
        return -1;
    }
    return 0;
}

/* the in-sample curve model on *feat (expanded here if not yet) */
static int pool_curve_fit(const char *cmd, cli_gset *S, const size_t *use, size_t n, const cli_pool_opts *o, char ***feat,
                          size_t *p, pfi_curve_model *cm)
{
    pfi_error err;
    if (pool_features(cmd, o, feat, p)) return -1;
    double *X = malloc(n * *p * sizeof *X);
    const pfi_curve **cv = malloc(n * sizeof *cv);
    if (features_of(cmd, S, use, n, *feat, *p, X, "the in-sample curve fit")) {
        free(X), free(cv);
        return -1;
    }
    for (size_t i = 0; i < n; i++) cv[i] = &S->gs.g[use[i]].curve;
    pfi_status st = pfi_curve_model_fit(X, cv, n, *p, cm, &err);
    free(X), free(cv);
    if (st) {
        cli_error(cmd, "in-sample curve fit: %s", err.msg);
        return -1;
    }
    return 0;
}

/* the predicted curves curve-aware and closed-loop use: from the curve
 * model file o->curve_model, or an in-sample fit */
static int pool_curves(const char *cmd, cli_gset *S, const size_t *use, size_t n, const cli_pool_opts *o, cli_pool *P,
                       char ***feat, size_t *p)
{
    pfi_error err;
    pfi_curve_model cm;
    size_t cp = 0;
    char **cfeat = NULL;
    pfi_model CM;
    int loaded = 0;
    if (o->curve_model) {
        if (pfi_model_load(o->curve_model, &CM, &err)) {
            cli_error(cmd, "%s", err.msg);
            return -1;
        }
        if (CM.kind != PFI_MODEL_CURVE) {
            cli_error(cmd, "%s: not a curve model (kind \"curve\")", o->curve_model);
            pfi_model_free(&CM);
            return -1;
        }
        cm = CM.curve;
        cfeat = CM.features;
        cp = CM.p;
        loaded = 1;
    } else {
        if (pool_curve_fit(cmd, S, use, n, o, feat, p, &cm)) return -1;
        cfeat = *feat;
        cp = *p;
    }
    P->pred = calloc(n, sizeof *P->pred);
    double *x = malloc((cp ? cp : 1) * sizeof *x);
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        if (features_of(cmd, S, &use[i], 1, cfeat, cp, x, loaded ? o->curve_model : "the in-sample curve fit")) bad = 1;
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
    return bad ? -1 : 0;
}

int cli_pool_build(const char *cmd, cli_gset *S, const size_t *use, size_t n, const cli_pool_opts *o, cli_pool *P)
{
    if (pool_jobs(cmd, S, use, n, P) || check_columns(cmd, S, o)) return -1;
    char **feat = NULL; /* the in-sample fits' features, shared */
    size_t p = 0;
    int rc = pool_pfi(cmd, S, use, n, o, P, &feat, &p);
    if (!rc && needs_curves(o)) rc = pool_curves(cmd, S, use, n, o, P, &feat, &p);
    pfi_features_free(feat, p);
    return rc;
}
