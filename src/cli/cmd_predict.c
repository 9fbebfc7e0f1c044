/* cmd_predict.c — `pfi predict MODEL TABLE...`: apply a model file to every
 * group of the tables: the predicted PFI (OLS models) or the predicted
 * normalized curve (curve models), beside the measured value when the table
 * has the group's sweep; warns when an input lies outside the training range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/features.h"
#include "pfi/model_file.h"
#include "sweeps.h"

typedef struct predict_args {
    cli_out out;
    const char *gpu_model;
    pfi_opt_list only;
} predict_args;

#define OPT_T predict_args
static const pfi_opt predict_options[] = {
    OPT_LIST(0, "only", only, "COL=V[,V]", "predict only matching groups (repeatable)"),
    CLI_OPT_GPU_MODEL, OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC), OPT_HELP(), OPT_END()};
#undef OPT_T

const pfi_opts cmd_predict_opts = CLI_OPTS(
    predict, .usage = "pfi predict [options] MODEL TABLE...",
    .description = "Predict each sweep group's PFI (a \"pfi-ols\" model: columns pfi_predicted,\n"
                   "clamped, out_of_range, beside the measured pfi and pfi_robust) or its\n"
                   "normalized curve (a \"curve\" model: one row per grid cap fraction with the\n"
                   "predicted and, within the measured caps, the measured tokens and power\n"
                   "fractions, and the curve's PFI) from the features of its uncapped run.\n"
                   "Inputs outside the training range are predicted but warned about.\n",
    .options = predict_options, .operands = PFI_OPERANDS_FILES);

/* the empty rows of a model's kind */
static pfi_rows *predict_rows(const pfi_modelfile *M)
{
    pfi_rows *R;
    if (M->kind == PFI_MODELFILE_OLS) {
        const char *names[] = {"gpu_model",  "group",         "split",   "pfi",
                               "pfi_robust", "pfi_predicted", "clamped", "out_of_range"};
        pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM,
                            PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_INT,  PFI_CELL_INT};
        R = pfi_rows_new(8, names, t);
        for (int k = 3; k < 6; k++) pfi_rows_table_fmt(R, (size_t)k, "%.3f");
    } else {
        const char *names[] = {"gpu_model",
                               "group",
                               "split",
                               "cap_frac",
                               "cap_w",
                               "tokens_frac_predicted",
                               "power_frac_predicted",
                               "tokens_frac",
                               "power_frac"};
        pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_NUM,
                            PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM};
        R = pfi_rows_new(9, names, t);
        for (int k = 3; k < 9; k++) pfi_rows_table_fmt(R, (size_t)k, "%.3f");
    }
    return R;
}

/* group i's prediction from its features x (a pfi-ols model: one row; a curve model: one per grid
 * point) */
static void predict_group(pfi_rows *R, const pfi_modelfile *M, const pfi_groupset *S, size_t i,
                          const double *x, pfi_log *lg)
{
    const pfi_group *g = &S->gs.g[i];
    int clamped = 0, oor = 0;
    double pp = pfi_modelfile_pfi(M, x, &clamped, &oor);
    if (oor)
        pfi_warnf(lg, "group '%s' (%s): %d feature(s) outside the training range", g->name,
                  g->gpu_model, oor);
    if (M->kind == PFI_MODELFILE_OLS) {
        size_t r = pfi_rows_add(R);
        pfi_rows_text(R, r, 0, g->gpu_model);
        pfi_rows_text(R, r, 1, g->name);
        pfi_rows_text(R, r, 2, g->split);
        pfi_rows_num(R, r, 3, S->pfi[i]);
        pfi_rows_num(R, r, 4, S->robust[i]);
        pfi_rows_num(R, r, 5, pp);
        pfi_rows_int(R, r, 6, clamped);
        pfi_rows_int(R, r, 7, oor);
        return;
    }
    double tp[PFI_CURVE_GRID_MAX], pw[PFI_CURVE_GRID_MAX];
    pfi_curve_model_predict(&M->curve, x, tp, pw);
    double capmax = pfi_curve_uncapped(&g->curve)->cap_w;
    for (size_t k = 0; k < M->curve.ngrid; k++) {
        size_t r = pfi_rows_add(R);
        double tm = NAN, pm = NAN;
        pfi_curve_point_at_frac(&g->curve, M->curve.frac[k], &tm, &pm);
        pfi_rows_text(R, r, 0, g->gpu_model);
        pfi_rows_text(R, r, 1, g->name);
        pfi_rows_text(R, r, 2, g->split);
        pfi_rows_num(R, r, 3, M->curve.frac[k]);
        pfi_rows_num(R, r, 4, M->curve.frac[k] * capmax);
        pfi_rows_num(R, r, 5, tp[k]);
        pfi_rows_num(R, r, 6, pw[k]);
        pfi_rows_num(R, r, 7, tm);
        pfi_rows_num(R, r, 8, pm);
    }
}

static int predict_run(const char *cmd, const predict_args *a, char **paths, int npaths)
{
    if (npaths < 2) return cli_usage_error(cmd, "need a model file and at least one table");
    pfi_modelfile M;
    pfi_error err;
    if (pfi_modelfile_load(paths[0], &M, &err)) {
        cli_error(cmd, "%s", err.msg);
        return CLI_FAIL;
    }
    pfi_groupset S;
    if (cli_gset_load(cmd, paths + 1, npaths - 1, a->gpu_model, &S)) {
        pfi_modelfile_dispose(&M);
        return CLI_FAIL;
    }
    pfi_log lg = cli_log(cmd);
    double *x = malloc(M.p * sizeof *x);
    pfi_rows *R = predict_rows(&M);
    int rc = CLI_OK;
    for (size_t i = 0; i < S.gs.n && rc == CLI_OK; i++) {
        const pfi_group *g = &S.gs.g[i];
        int m = cli_group_match_all(cmd, &S, g, a->only.v, a->only.n);
        if (m < 0) {
            rc = CLI_USAGE;
            break;
        }
        if (!m) continue;
        int missing = 0;
        for (size_t k = 0; k < M.p; k++) {
            int known;
            x[k] = pfi_feature_value(S.t, g, M.features[k], &known);
            if (!known) {
                cli_error(cmd, "the table has no feature '%s' the model needs", M.features[k]);
                rc = CLI_FAIL;
                break;
            }
            if (!isfinite(x[k])) missing = 1;
        }
        if (rc) break;
        if (missing) {
            pfi_warnf(&lg, "group '%s' (%s): a feature is missing; no prediction", g->name,
                      g->gpu_model);
            continue;
        }
        predict_group(R, &M, &S, i, x, &lg);
    }
    if (rc == CLI_OK) rc = cli_save_rows(cmd, R, &a->out);
    pfi_rows_free(R);
    free(x);
    pfi_groupset_dispose(&S);
    pfi_modelfile_dispose(&M);
    return rc;
}

int cmd_predict(int argc, char **argv)
{
    predict_args a;
    memset(&a, 0, sizeof a);
    cli_out_init(&a.out);
    int first, rc = cli_parse(&cmd_predict_opts, &a, argc, argv, &first);
    if (rc < 0) rc = predict_run("predict", &a, argv + first, argc - first);
    pfi_opts_dispose(&cmd_predict_opts, &a);
    return rc;
}
