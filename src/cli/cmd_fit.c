/* cmd_fit.c — `pfi fit`: the paper's predictor (OLS of PFI on features of
 * the uncapped run), its in-sample / leave-one-out / leave-one-cluster-out
 * evaluation, the table-3 ablation, out-of-sample evaluation on filtered
 * groups, and pfi's curve predictor; writes the model file. The fits and
 * their evaluation are core (src/core/evaluate.h); this file picks the
 * groups, reads the paper's table 3, prints and writes the model file. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "evaluate.h"
#include "num.h"
#include "pfi/csv.h"
#include "pfi/features.h"
#include "pfi/model_file.h"
#include "sweeps.h"

typedef struct fit_args {
    cli_out out;
    const char *features, *target, *cluster_by, *model_path, *data, *gpu_model;
    pfi_opt_list train_w, eval_w;
    int ablation, curve;
} fit_args;

#define OPT_T fit_args
static const pfi_opt fit_options[] = {
    OPT_STRING(
        0, "features", features, "LIST",
        "comma list (default dram_copy_product); named sets job_metadata (arch,task,log_gpus), "
        "all_dcgm_metrics (13); also power_frac (Zeus) and any numeric column"),
    OPT_STRING_OF(0, "target", target, "pfi|robust", "Eq. 1 (default) or pfi's robust PFI"),
    OPT_LIST(0, "train-where", train_w, "C=V[,V]", "fit on matching groups only (repeatable, AND)"),
    OPT_LIST(0, "eval-where", eval_w, "C=V[,V]",
             "also evaluate on these groups (repeatable: one set each)"),
    OPT_STRING(0, "cluster-by", cluster_by, "COL", "LOCO clusters (default: arch x task)"),
    OPT_BOOLEAN(0, "ablation", ablation, "the paper's seven predictor sets beside table 3"),
    OPT_BOOLEAN(0, "curve", curve, "the curve predictor (kind \"curve\")"),
    OPT_FILENAME(0, "model", model_path, "FILE", "write the model file (JSON, docs/formats.md)"),
    OPT_DIRNAME(0, "data", data, "DIR", "where paper/table3_predictor_ablation.csv is (ablation)"),
    CLI_OPT_GPU_MODEL,
    OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

const pfi_opts cmd_fit_opts = CLI_OPTS(
    fit, .usage = "pfi fit [options] TABLE...",
    .description = "Fit PFI = b0 + sum_k b_k F_k over the sweep groups (features from each\n"
                   "group's uncapped run; minimum-norm least squares on standardized features,\n"
                   "so underdetermined fits are well defined) and evaluate it in-sample,\n"
                   "leave-one-out and leave-one-cluster-out (R^2 = 1 - SSE/SST, SST about the\n"
                   "full-sample mean; RMSE; Spearman rho). With --curve, fit pfi's curve\n"
                   "predictor instead: normalized throughput and power at cap fractions.\n",
    .options = fit_options, .operands = PFI_OPERANDS_FILES);

static void eval_row(pfi_rows *r, const char *name, const pfi_eval *e)
{
    size_t k = pfi_rows_add(r);
    pfi_rows_text(r, k, 0, name);
    pfi_rows_int(r, k, 1, (long long)e->n);
    pfi_rows_num(r, k, 2, e->r2);
    pfi_rows_num(r, k, 3, e->rmse);
    pfi_rows_num(r, k, 4, e->rho);
}

static json_t *eval_json(const pfi_eval *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "r2", isfinite(e->r2) ? json_real(e->r2) : json_null());
    json_object_set_new(o, "rmse", isfinite(e->rmse) ? json_real(e->rmse) : json_null());
    json_object_set_new(o, "rho", isfinite(e->rho) ? json_real(e->rho) : json_null());
    json_object_set_new(o, "n", json_integer((json_int_t)e->n));
    return o;
}

/* paper table 3 values by predictor name */
static int paper_row(const char *path, const char *pred, double v[7])
{
    pfi_reader r;
    if (pfi_reader_open(&r, path, 0, NULL) != PFI_OK) return -1;
    pfi_csv c;
    pfi_csv_init(&c, &r);
    int found = -1;
    if (pfi_csv_next(&c, NULL) == 1)
        while (pfi_csv_next(&c, NULL) == 1)
            if (c.nfields >= 9 && strcmp(c.fields[0], pred) == 0) {
                for (int k = 0; k < 7; k++)
                    if (pfi_parse_double(c.fields[2 + k], c.lens[2 + k], &v[k])) v[k] = NAN;
                found = 0;
                break;
            }
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    return found;
}

/* one `pfi fit`: the groups, the training set and what is printed */
typedef struct fit_job {
    const char *cmd, *target;
    pfi_groupset S;
    size_t *train, ntrain;
    int *cluster;
    pfi_fit_data d;
    char **eval_w;
    int nev;
    const cli_out *out;
} fit_job;

/* the training groups (every --train-where matches; a finite target unless
 * curves are fitted) and their LOCO clusters */
static int select_training(fit_job *F, char **train_w, int ntw, const char *cluster_by, int curve)
{
    size_t ng = F->S.gs.n, skipped = 0;
    const double *y = pfi_groupset_target(&F->S, F->target);
    F->train = malloc((ng ? ng : 1) * sizeof *F->train);
    F->cluster = malloc((ng ? ng : 1) * sizeof *F->cluster);
    if (!F->train || !F->cluster) {
        cli_error(F->cmd, "out of memory");
        return CLI_FAIL;
    }
    for (size_t i = 0; i < ng; i++) {
        int m = cli_group_match_all(F->cmd, &F->S, &F->S.gs.g[i], train_w, ntw);
        if (m < 0) return CLI_USAGE;
        if (!m) continue;
        if (!curve && !isfinite(y[i])) {
            skipped++;
            continue;
        }
        F->train[F->ntrain++] = i;
    }
    if (skipped) {
        pfi_log lg = cli_log(F->cmd);
        pfi_warnf(
            &lg,
            "%zu training groups have no finite %s target (e.g. not power-bound) and are left out",
            skipped, F->target);
    }
    if (F->ntrain < 3) {
        cli_error(F->cmd, "only %zu training groups: need at least 3", F->ntrain);
        return CLI_FAIL;
    }
    pfi_fit_clusters(&F->S, F->train, F->ntrain, cluster_by, F->cluster);
    F->d = (pfi_fit_data){&F->S, y, F->train, F->ntrain, F->cluster};
    return CLI_OK;
}

/* the groups matching one --eval-where filter (*rows malloc'd); -1 when the
 * filter is malformed (printed; *rows has what matched before) */
static int match_rows(fit_job *F, const char *filter, size_t **rows, size_t *n)
{
    *n = 0;
    *rows = malloc((F->S.gs.n ? F->S.gs.n : 1) * sizeof **rows);
    if (!*rows) {
        cli_error(F->cmd, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < F->S.gs.n; i++) {
        int mm = cli_group_match(F->cmd, &F->S, &F->S.gs.g[i], filter);
        if (mm < 0) return -1;
        if (mm) (*rows)[(*n)++] = i;
    }
    return 0;
}

/* --ablation: table 3's seven predictor sets beside the paper's values */
static int fit_ablation(fit_job *F, const char *data)
{
    const char *names[] = {"predictors",      "p",
                           "r2_in",           "loo_r2",
                           "loo_rmse",        "loo_rho",
                           "loco_r2",         "loco_rmse",
                           "loco_rho",        "paper_r2_in",
                           "paper_loo_r2",    "paper_loo_rmse",
                           "paper_loo_rho",   "paper_loco_r2",
                           "paper_loco_rmse", "paper_loco_rho"};
    pfi_celltype types[16];
    for (int k = 0; k < 16; k++) types[k] = PFI_CELL_NUM;
    types[0] = PFI_CELL_TEXT;
    types[1] = PFI_CELL_INT;
    char t3[4096];
    int have_paper =
        cli_data_path(F->cmd, data, "paper/table3_predictor_ablation.csv", t3, sizeof t3) == 0;
    pfi_ablation_row ab[PFI_ABLATION_SETS];
    pfi_error err;
    if (pfi_fit_ablation(&F->d, ab, &err)) {
        cli_error(F->cmd, "%s", err.msg);
        return CLI_FAIL;
    }
    pfi_rows *R = pfi_rows_new(16, names, types);
    for (int k = 2; k < 16; k++) pfi_rows_table_fmt(R, (size_t)k, "%.3f");
    for (size_t s = 0; s < PFI_ABLATION_SETS; s++) {
        const pfi_fit_eval *e = &ab[s].ev;
        size_t k = pfi_rows_add(R);
        pfi_rows_text(R, k, 0, ab[s].name);
        pfi_rows_int(R, k, 1, (long long)ab[s].p);
        double v[7] = {e->in_sample.r2, e->loo.r2,    e->loo.rmse, e->loo.rho,
                       e->loco.r2,      e->loco.rmse, e->loco.rho},
               pv[7];
        for (int j = 0; j < 7; j++) pfi_rows_num(R, k, 2 + (size_t)j, v[j]);
        if (have_paper && paper_row(t3, ab[s].name, pv) == 0)
            for (int j = 0; j < 7; j++) pfi_rows_num(R, k, 9 + (size_t)j, pv[j]);
    }
    int rc = cli_save_rows(F->cmd, R, F->out);
    pfi_rows_free(R);
    return rc;
}

/* the OLS model with its in-sample, LOO, LOCO and --eval-where metrics;
 * -1 (and *rc) when no model is to be written */
static int fit_ols(fit_job *F, char **feat, size_t p, pfi_modelfile *M, json_t *metrics,
                   pfi_rows **R, int *rc)
{
    const char *names[] = {"evaluation", "n", "r2", "rmse", "rho"};
    pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM};
    *R = pfi_rows_new(5, names, types);
    for (int k = 2; k < 5; k++) pfi_rows_table_fmt(*R, (size_t)k, "%.3f");
    pfi_fit_eval ev;
    pfi_error err;
    if (pfi_fit_evaluate(&F->d, feat, p, &ev, &M->ols, &err)) {
        cli_error(F->cmd, "%s", err.msg);
        return *rc = CLI_FAIL, -1;
    }
    M->kind = PFI_MODELFILE_OLS;
    eval_row(*R, "in_sample", &ev.in_sample);
    eval_row(*R, "loo", &ev.loo);
    eval_row(*R, "loco", &ev.loco);
    json_object_set_new(metrics, "in_sample", eval_json(&ev.in_sample));
    json_object_set_new(metrics, "loo", eval_json(&ev.loo));
    json_object_set_new(metrics, "loco", eval_json(&ev.loco));
    for (int e = 0; e < F->nev; e++) {
        size_t *rows, m, used, oor;
        pfi_eval ee;
        pfi_status st = match_rows(F, F->eval_w[e], &rows, &m) ? PFI_EINVAL : PFI_OK;
        if (st) *rc = CLI_USAGE; /* printed */
        else if ((st = pfi_fit_eval_on(&F->d, feat, p, &M->ols, rows, m, &ee, &used, &oor, &err))) {
            cli_error(F->cmd, "%s", err.msg);
            *rc = CLI_FAIL;
        }
        free(rows);
        if (st) return pfi_pfi_model_dispose(&M->ols), -1;
        char name[160];
        snprintf(name, sizeof name, "eval:%s", F->eval_w[e]);
        eval_row(*R, name, &ee);
        json_object_set_new(metrics, name, eval_json(&ee));
        if (oor) {
            pfi_log lg = cli_log(F->cmd);
            pfi_warnf(&lg, "%s: %d of %zu groups have a feature outside the training range", name,
                      (int)oor, used);
        }
    }
    fprintf(stderr, "pfi fit: %s = %.4g", F->target, M->ols.lin.intercept);
    for (size_t k = 0; k < p; k++) fprintf(stderr, " %+.4g x %s", M->ols.lin.beta[k], feat[k]);
    fprintf(stderr, " (rank %zu, %zu groups)\n", M->ols.lin.rank, M->ols.n_train);
    return 0;
}

/* one evaluation of the curve predictor: a row per grid point but the last */
static void curve_rows(pfi_rows *R, json_t *metrics, const char *name, const pfi_curve_errors *ce)
{
    json_t *jt = json_array(), *jp = json_array();
    for (size_t k = 0; k + 1 < ce->ngrid; k++) {
        size_t r = pfi_rows_add(R);
        double rt = ce->tokens_frac_rmse[k], rp = ce->power_frac_rmse[k];
        pfi_rows_text(R, r, 0, name);
        pfi_rows_num(R, r, 1, ce->frac[k]);
        pfi_rows_int(R, r, 2, (long long)ce->n[k]);
        pfi_rows_num(R, r, 3, rt);
        pfi_rows_num(R, r, 4, rp);
        json_array_append_new(jt, isfinite(rt) ? json_real(rt) : json_null());
        json_array_append_new(jp, isfinite(rp) ? json_real(rp) : json_null());
    }
    json_t *mj = json_object();
    json_object_set_new(mj, "tokens_frac_rmse", jt);
    json_object_set_new(mj, "power_frac_rmse", jp);
    json_object_set_new(metrics, name, mj);
}

/* --curve: the curve predictor, its LOO, LOCO and --eval-where errors; a
 * malformed --eval-where is exit 2 but the model is still written */
static int fit_curves(fit_job *F, char **feat, size_t p, pfi_modelfile *M, json_t *metrics,
                      pfi_rows **R, int *rc)
{
    pfi_error err;
    M->kind = PFI_MODELFILE_CURVE;
    if (pfi_fit_curve(&F->d, feat, p, &M->curve, &err)) {
        cli_error(F->cmd, "%s", err.msg);
        return *rc = CLI_FAIL, -1;
    }
    const char *names[] = {"evaluation", "cap_frac", "n", "tokens_frac_rmse", "power_frac_rmse"};
    pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_NUM};
    *R = pfi_rows_new(5, names, types);
    pfi_rows_table_fmt(*R, 1, "%.2f");
    pfi_rows_table_fmt(*R, 3, "%.4f");
    pfi_rows_table_fmt(*R, 4, "%.4f");
    for (int mode = 0; mode < 2 + F->nev; mode++) {
        pfi_curve_errors ce;
        char name[160];
        pfi_status st;
        if (mode < 2) {
            st = pfi_fit_curve_cv(&F->d, feat, p, &M->curve, mode, &ce, &err);
            snprintf(name, sizeof name, "%s", mode == 0 ? "loo" : "loco");
        } else {
            size_t *rows, m;
            if (match_rows(F, F->eval_w[mode - 2], &rows, &m))
                *rc = CLI_USAGE; /* evaluated on what matched: none */
            st = pfi_fit_curve_eval_on(&F->d, feat, p, &M->curve, rows, m, &ce, &err);
            free(rows);
            snprintf(name, sizeof name, "eval:%s", F->eval_w[mode - 2]);
        }
        if (st) {
            cli_error(F->cmd, "%s", err.msg);
            return *rc = CLI_FAIL, -1;
        }
        curve_rows(*R, metrics, name, &ce);
    }
    return 0;
}

/* the model file: the model, its metrics and where it was trained */
static int save_model(fit_job *F, const char *path, pfi_modelfile *M, char **feat, size_t p,
                      json_t *metrics, char **tables, int ntables, char **train_w, int ntw)
{
    M->p = p;
    M->features = feat;
    json_t *meta = json_object();
    json_object_set_new(meta, "metrics", metrics);
    json_t *tr = json_array();
    for (int i = 0; i < ntables; i++) json_array_append_new(tr, json_string(tables[i]));
    json_object_set_new(meta, "trained_on", tr);
    char tw[1024] = "";
    for (int i = 0; i < ntw; i++) {
        strncat(tw, i ? " AND " : "", sizeof tw - strlen(tw) - 1);
        strncat(tw, train_w[i], sizeof tw - strlen(tw) - 1);
    }
    json_object_set_new(meta, "train_where", json_string(tw));
    int recon = pfi_table_col(F->S.t, "provenance") >= 0;
    json_object_set_new(
        meta, "provenance",
        json_string(recon ? "fitted on a reconstruction calibrated to published tables"
                          : "fitted on the given sweep tables"));
    M->meta = meta;
    pfi_error err;
    int rc = CLI_OK;
    if (pfi_modelfile_save(M, path, &err)) {
        cli_error(F->cmd, "%s", err.msg);
        rc = CLI_FAIL;
    }
    json_decref(meta);
    M->meta = NULL;
    M->features = NULL;
    return rc;
}

/* the OLS or curve model: evaluated, written (--model), its metrics printed */
static int fit_model(fit_job *F, const char *features, int curve, const char *model_path,
                     char **tables, int ntables, char **train_w, int ntw)
{
    char **feat = NULL;
    size_t p = 0;
    pfi_error err;
    if (pfi_features_expand(features, &feat, &p, &err)) {
        cli_error(F->cmd, "%s", err.msg);
        return CLI_FAIL;
    }
    json_t *metrics = json_object();
    pfi_modelfile M;
    memset(&M, 0, sizeof M);
    snprintf(M.target, sizeof M.target, "%s", !strcmp(F->target, "pfi") ? "pfi" : "pfi_robust");
    pfi_rows *R = NULL;
    int rc = CLI_OK, fitted = (curve ? fit_curves : fit_ols)(F, feat, p, &M, metrics, &R, &rc) == 0;
    if (fitted && model_path) {
        if (save_model(F, model_path, &M, feat, p, metrics, tables, ntables, train_w, ntw) !=
            CLI_OK)
            rc = CLI_FAIL;
        metrics = NULL; /* the model file's meta took it */
    }
    if (metrics) json_decref(metrics);
    if (fitted && M.kind == PFI_MODELFILE_OLS) pfi_pfi_model_dispose(&M.ols);
    else if (fitted) pfi_curve_model_dispose(&M.curve);
    if (rc == CLI_OK) rc = cli_save_rows(F->cmd, R, F->out);
    pfi_rows_free(R);
    pfi_features_free(feat, p);
    return rc;
}

int cmd_fit(int argc, char **argv)
{
    const char *cmd = "fit";
    fit_args A = {.features = "dram_copy_product", .target = "pfi"};
    cli_out_init(&A.out);
    int operand0, rc = cli_parse(&cmd_fit_opts, &A, argc, argv, &operand0);
    if (rc >= 0) {
        pfi_opts_dispose(&cmd_fit_opts, &A);
        return rc;
    }
    rc = CLI_OK;
    cli_out out = A.out;
    const char *features = A.features, *target = A.target, *cluster_by = A.cluster_by,
               *model_path = A.model_path;
    const char *data = A.data, *gpu_model = A.gpu_model;
    char **train_w = A.train_w.v, **eval_w = A.eval_w.v; /* freed at done: */
    int ntw = A.train_w.n, nev = A.eval_w.n, ablation = A.ablation, curve = A.curve;
    optind = operand0;
    if (optind >= argc) {
        rc = cli_usage_error(cmd, "no sweep table given");
        goto done;
    }
    if (strcmp(target, "pfi") && strcmp(target, "robust")) {
        rc = cli_usage_error(cmd, "--target: '%s' is not pfi or robust", target);
        goto done;
    }
    if (ablation && curve) {
        rc = cli_usage_error(cmd, "--ablation and --curve exclude each other");
        goto done;
    }
    fit_job F = {.cmd = cmd, .target = target, .eval_w = eval_w, .nev = nev, .out = &out};
    if (cli_gset_load(cmd, argv + optind, argc - optind, gpu_model, &F.S)) {
        rc = CLI_FAIL;
        goto done;
    }
    rc = select_training(&F, train_w, ntw, cluster_by, curve);
    if (rc == CLI_OK && ablation) rc = fit_ablation(&F, data);
    else if (rc == CLI_OK)
        rc = fit_model(&F, features, curve, model_path, argv + optind, argc - optind, train_w, ntw);
    free(F.train);
    free(F.cluster);
    pfi_groupset_dispose(&F.S);
done:
    free(train_w);
    free(eval_w);
    return rc;
}
