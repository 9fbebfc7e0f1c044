/* cmd_predict.c — `pfi predict MODEL TABLE...`: apply a model file to every
 * group of the tables: the predicted PFI (OLS models) or the predicted
 * normalized curve (curve models), beside the measured value when the table
 * has the group's sweep; warns when an input lies outside the training range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sweeps.h"
#include "pfi/features.h"
#include "pfi/model_file.h"

const char cmd_predict_usage[] =
    "usage: pfi predict [options] MODEL TABLE...\n"
    "\n"
    "Predict each sweep group's PFI (a \"pfi-ols\" model: columns pfi_predicted,\n"
    "clamped, out_of_range, beside the measured pfi and pfi_robust) or its\n"
    "normalized curve (a \"curve\" model: one row per grid cap fraction with the\n"
    "predicted and, within the measured caps, the measured tokens and power\n"
    "fractions, and the curve's PFI) from the features of its uncapped run.\n"
    "Inputs outside the training range are predicted but warned about.\n"
    "\n"
    "options: --only COL=V[,V] (repeatable), --gpu-model NAME,\n"
    "         --format csv|json|table, --json, -o FILE\n";

int cmd_predict(int argc, char **argv)
{
    const char *cmd = "predict";
    enum { O_ONLY = 1, O_GPU };
    static const struct option lo[] = {{"only", required_argument, NULL, O_ONLY},
                                       {"gpu-model", required_argument, NULL, O_GPU},
                                       CLI_COMMON_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    cli_out out;
    cli_out_init(&out);
    const char *gpu_model = NULL;
    char **only = calloc((size_t)argc + 1, sizeof *only);
    int nonly = 0, c, rc = CLI_OK;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, lo, NULL)) != -1) {
        int h = cli_common_opt(cmd, c, optarg, &out);
        if (h < 0) { rc = CLI_USAGE; goto done; }
        if (h) continue;
        switch (c) {
        case 'h': rc = cli_help(cmd); goto done;
        case O_ONLY: only[nonly++] = optarg; break;
        case O_GPU: gpu_model = optarg; break;
        default: rc = cli_bad_option(cmd, argv); goto done;
        }
    }
    if (argc - optind < 2) { rc = cli_usage_error(cmd, "need a model file and at least one table"); goto done; }
    pfi_model M;
    pfi_error err;
    if (pfi_model_load(argv[optind], &M, &err)) { cli_error(cmd, "%s", err.msg); rc = CLI_FAIL; goto done; }
    cli_gset S;
    if (cli_gset_load(cmd, argv + optind + 1, argc - optind - 1, gpu_model, &S)) {
        pfi_model_free(&M);
        rc = CLI_FAIL;
        goto done;
    }
    pfi_log lg = cli_log(cmd);
    double *x = malloc(M.p * sizeof *x);
    pfi_rows *R;
    if (M.kind == PFI_MODEL_OLS) {
        const char *names[] = {"gpu_model", "group", "split", "pfi", "pfi_robust", "pfi_predicted", "clamped", "out_of_range"};
        pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_INT, PFI_CELL_INT};
        R = pfi_rows_new(8, names, t);
        for (int k = 3; k < 6; k++) pfi_rows_table_fmt(R, (size_t)k, "%.3f");
    } else {
        const char *names[] = {"gpu_model", "group", "split", "cap_frac", "cap_w", "tokens_frac_predicted",
                               "power_frac_predicted", "tokens_frac", "power_frac"};
        pfi_celltype t[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_NUM,
                            PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_NUM};
        R = pfi_rows_new(9, names, t);
        for (int k = 3; k < 9; k++) pfi_rows_table_fmt(R, (size_t)k, "%.3f");
    }
    for (size_t i = 0; i < S.gs.n && rc == CLI_OK; i++) {
        const pfi_group *g = &S.gs.g[i];
        int m = cli_group_match_all(cmd, &S, g, only, nonly);
        if (m < 0) { rc = CLI_USAGE; break; }
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
            pfi_warnf(&lg, "group '%s' (%s): a feature is missing; no prediction", g->name, g->gpu_model);
            continue;
        }
        int clamped = 0, oor = 0;
        double pp = pfi_model_pfi(&M, x, &clamped, &oor);
        if (oor) pfi_warnf(&lg, "group '%s' (%s): %d feature(s) outside the training range", g->name, g->gpu_model, oor);
        if (M.kind == PFI_MODEL_OLS) {
            size_t r = pfi_rows_add(R);
            pfi_rows_text(R, r, 0, g->gpu_model);
            pfi_rows_text(R, r, 1, g->name);
            pfi_rows_text(R, r, 2, g->split);
            pfi_rows_num(R, r, 3, S.pfi[i]);
            pfi_rows_num(R, r, 4, S.robust[i]);
            pfi_rows_num(R, r, 5, pp);
            pfi_rows_int(R, r, 6, clamped);
            pfi_rows_int(R, r, 7, oor);
        } else {
            double tp[PFI_CURVE_GRID_MAX], pw[PFI_CURVE_GRID_MAX];
            pfi_curve_model_predict(&M.curve, x, tp, pw);
            double capmax = pfi_curve_uncapped(&g->curve)->cap_w;
            for (size_t k = 0; k < M.curve.ngrid; k++) {
                size_t r = pfi_rows_add(R);
                double tm = NAN, pm = NAN;
                pfi_curve_point_at_frac(&g->curve, M.curve.frac[k], &tm, &pm);
                pfi_rows_text(R, r, 0, g->gpu_model);
                pfi_rows_text(R, r, 1, g->name);
                pfi_rows_text(R, r, 2, g->split);
                pfi_rows_num(R, r, 3, M.curve.frac[k]);
                pfi_rows_num(R, r, 4, M.curve.frac[k] * capmax);
                pfi_rows_num(R, r, 5, tp[k]);
                pfi_rows_num(R, r, 6, pw[k]);
                pfi_rows_num(R, r, 7, tm);
                pfi_rows_num(R, r, 8, pm);
            }
        }
    }
    if (rc == CLI_OK) rc = cli_save_rows(cmd, R, &out);
    pfi_rows_free(R);
    free(x);
    cli_gset_free(&S);
    pfi_model_free(&M);
done:
    free(only);
    return rc;
}
