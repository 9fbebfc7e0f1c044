/* cmd_fit.c — `pfi fit`: the paper's predictor (OLS of PFI on features of
 * the uncapped run), its in-sample / leave-one-out / leave-one-cluster-out
 * evaluation, the table-3 ablation, out-of-sample evaluation on filtered
 * groups, and pfi's curve predictor; writes the model file. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sweeps.h"
#include "pfi/csv.h"
#include "pfi/features.h"
#include "pfi/model_file.h"
#include "num.h"

const char cmd_fit_usage[] =
    "usage: pfi fit [options] TABLE...\n"
    "\n"
    "Fit PFI = b0 + sum_k b_k F_k over the sweep groups (features from each\n"
    "group's uncapped run; minimum-norm least squares on standardized features,\n"
    "so underdetermined fits are well defined) and evaluate it in-sample,\n"
    "leave-one-out and leave-one-cluster-out (R^2 = 1 - SSE/SST, SST about the\n"
    "full-sample mean; RMSE; Spearman rho). With --curve, fit pfi's curve\n"
    "predictor instead: normalized throughput and power at cap fractions.\n"
    "\n"
    "options:\n"
    "  --features LIST      comma list (default dram_copy_product); named sets\n"
    "                       job_metadata (arch,task,log_gpus), all_dcgm_metrics (13);\n"
    "                       also power_frac (Zeus) and any numeric column\n"
    "  --target pfi|robust  Eq. 1 (default) or pfi's robust PFI\n"
    "  --train-where C=V[,V]  fit on matching groups only (repeatable, AND)\n"
    "  --eval-where C=V[,V]   also evaluate on these groups (repeatable: one set each)\n"
    "  --cluster-by COL     LOCO clusters (default: arch x task)\n"
    "  --ablation           the paper's seven predictor sets beside table 3\n"
    "  --curve              the curve predictor (kind \"curve\")\n"
    "  --model FILE         write the model file (JSON, docs/formats.md)\n"
    "  --data DIR           where paper/table3_predictor_ablation.csv is (ablation)\n"
    "  --gpu-model NAME, --format csv|json|table, --json, -o FILE\n";

typedef struct fitctx {
    const char *cmd;
    cli_gset *S;
    size_t *train, ntrain;
    const double *y;       /* all groups */
    int *cluster;          /* for train rows */
} fitctx;

static int build_X(fitctx *c, char **feat, size_t p, const size_t *rows, size_t n, double *X)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < p; k++) {
            int known;
            X[i * p + k] = pfi_feature_value(c->S->t, &c->S->gs.g[rows[i]], feat[k], &known);
            if (!known) {
                cli_error(c->cmd, "feature '%s' is not a numeric column of the table nor arch, task, log_gpus, power_frac", feat[k]);
                return -1;
            }
        }
    return 0;
}

/* in-sample, LOO, LOCO of a feature set on the training rows */
static int evaluate(fitctx *c, char **feat, size_t p, pfi_eval *ins, pfi_eval *loo, pfi_eval *loco, pfi_pfi_model *model)
{
    size_t n = c->ntrain;
    double *X = calloc(n * p, sizeof *X), *y = calloc(n, sizeof *y), *yh = calloc(n, sizeof *yh);
    int rc = -1;
    if (!X || !y || !yh) goto out;
    if (build_X(c, feat, p, c->train, n, X)) goto out;
    for (size_t i = 0; i < n; i++) y[i] = c->y[c->train[i]];
    double mean = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(y[i])) mean += y[i], m++;
    mean /= (double)(m ? m : 1);
    pfi_error err;
    if (pfi_pfi_model_fit(X, y, n, p, model, &err) != PFI_OK) {
        cli_error(c->cmd, "%s", err.msg);
        goto out;
    }
    for (size_t i = 0; i < n; i++) yh[i] = pfi_linear_eval(&model->lin, X + i * p);
    pfi_eval_metrics(y, yh, n, mean, ins);
    pfi_cross_validate(X, y, n, p, NULL, yh, &err);
    pfi_eval_metrics(y, yh, n, mean, loo);
    pfi_cross_validate(X, y, n, p, c->cluster, yh, &err);
    pfi_eval_metrics(y, yh, n, mean, loco);
    rc = 0;
out:
    free(X), free(y), free(yh);
    return rc;
}

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
    pfi_csv_free(&c);
    pfi_reader_close(&r);
    return found;
}

int cmd_fit(int argc, char **argv)
{
    const char *cmd = "fit";
    enum { O_FEAT = 1, O_TARGET, O_TRAIN, O_EVAL, O_CLUSTER, O_ABL, O_CURVE, O_MODEL, O_DATA, O_GPU };
    static const struct option lo[] = {{"features", required_argument, NULL, O_FEAT},
                                       {"target", required_argument, NULL, O_TARGET},
                                       {"train-where", required_argument, NULL, O_TRAIN},
                                       {"eval-where", required_argument, NULL, O_EVAL},
                                       {"cluster-by", required_argument, NULL, O_CLUSTER},
                                       {"ablation", no_argument, NULL, O_ABL},
                                       {"curve", no_argument, NULL, O_CURVE},
                                       {"model", required_argument, NULL, O_MODEL},
                                       {"data", required_argument, NULL, O_DATA},
                                       {"gpu-model", required_argument, NULL, O_GPU},
                                       CLI_COMMON_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    cli_out out;
    cli_out_init(&out);
    const char *features = "dram_copy_product", *target = "pfi", *cluster_by = NULL, *model_path = NULL;
    const char *data = NULL, *gpu_model = NULL;
    char **train_w = calloc((size_t)argc + 1, sizeof *train_w), **eval_w = calloc((size_t)argc + 1, sizeof *eval_w);
    int ntw = 0, nev = 0, ablation = 0, curve = 0, c, rc = CLI_OK;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, lo, NULL)) != -1) {
        int h = cli_common_opt(cmd, c, optarg, &out);
        if (h < 0) { rc = CLI_USAGE; goto done; }
        if (h) continue;
        switch (c) {
        case 'h': rc = cli_help(cmd); goto done;
        case O_FEAT: features = optarg; break;
        case O_TARGET: target = optarg; break;
        case O_TRAIN: train_w[ntw++] = optarg; break;
        case O_EVAL: eval_w[nev++] = optarg; break;
        case O_CLUSTER: cluster_by = optarg; break;
        case O_ABL: ablation = 1; break;
        case O_CURVE: curve = 1; break;
        case O_MODEL: model_path = optarg; break;
        case O_DATA: data = optarg; break;
        case O_GPU: gpu_model = optarg; break;
        default: rc = cli_bad_option(cmd, argv); goto done;
        }
    }
    if (optind >= argc) { rc = cli_usage_error(cmd, "no sweep table given"); goto done; }
    if (strcmp(target, "pfi") && strcmp(target, "robust")) {
        rc = cli_usage_error(cmd, "--target: '%s' is not pfi or robust", target);
        goto done;
    }
    if (ablation && curve) { rc = cli_usage_error(cmd, "--ablation and --curve exclude each other"); goto done; }
    cli_gset S;
    if (cli_gset_load(cmd, argv + optind, argc - optind, gpu_model, &S)) { rc = CLI_FAIL; goto done; }
    fitctx fc = {cmd, &S, NULL, 0, cli_gset_target(&S, target), NULL};
    size_t ng = S.gs.n;
    fc.train = malloc(ng * sizeof *fc.train);
    fc.cluster = malloc(ng * sizeof *fc.cluster);
    char **feat = NULL;
    size_t p = 0;
    pfi_rows *R = NULL;
    pfi_error err;
    size_t skipped = 0;
    for (size_t i = 0; i < ng; i++) {
        int m = cli_group_match_all(cmd, &S, &S.gs.g[i], train_w, ntw);
        if (m < 0) { rc = CLI_USAGE; goto free_all; }
        if (!m) continue;
        if (!curve && !isfinite(fc.y[i])) { skipped++; continue; }
        fc.train[fc.ntrain++] = i;
    }
    if (skipped) {
        pfi_log lg = cli_log(cmd);
        pfi_warnf(&lg, "%zu training groups have no finite %s target (e.g. not power-bound) and are left out", skipped, target);
    }
    if (fc.ntrain < 3) { cli_error(cmd, "only %zu training groups: need at least 3", fc.ntrain); rc = CLI_FAIL; goto free_all; }
    /* LOCO clusters */
    {
        char seen[256][96];
        int ns = 0;
        for (size_t i = 0; i < fc.ntrain; i++) {
            const pfi_group *g = &S.gs.g[fc.train[i]];
            char key[200];
            if (cluster_by) snprintf(key, sizeof key, "%s", cli_group_attr(&S, g, cluster_by));
            else snprintf(key, sizeof key, "%s-%s", g->arch, g->task);
            int j;
            for (j = 0; j < ns; j++)
                if (!strcmp(seen[j], key)) break;
            if (j == ns && ns < 256) snprintf(seen[ns++], sizeof seen[0], "%.95s", key);
            fc.cluster[i] = j;
        }
    }
    if (ablation) {
        static const char *const sets[][2] = {
            {"dram_copy_product", "dram_copy_product"},
            {"arithmetic_intensity", "arithmetic_intensity"},
            {"dram_copy_product+arithmetic_intensity", "dram_copy_product,arithmetic_intensity"},
            {"job_metadata(arch;task;log_gpus)", "job_metadata"},
            {"dram_copy_product+job_metadata", "dram_copy_product,job_metadata"},
            {"all_dcgm_metrics", "all_dcgm_metrics"},
            {"all_dcgm_metrics+job_metadata", "all_dcgm_metrics,job_metadata"}};
        const char *names[] = {"predictors", "p", "r2_in", "loo_r2", "loo_rmse", "loo_rho", "loco_r2", "loco_rmse",
                               "loco_rho", "paper_r2_in", "paper_loo_r2", "paper_loo_rmse", "paper_loo_rho",
                               "paper_loco_r2", "paper_loco_rmse", "paper_loco_rho"};
        pfi_celltype types[16];
        for (int k = 0; k < 16; k++) types[k] = PFI_CELL_NUM;
        types[0] = PFI_CELL_TEXT;
        types[1] = PFI_CELL_INT;
        R = pfi_rows_new(16, names, types);
        for (int k = 2; k < 16; k++) pfi_rows_table_fmt(R, (size_t)k, "%.3f");
        char t3[4096];
        int have_paper = cli_data_path(cmd, data, "paper/table3_predictor_ablation.csv", t3, sizeof t3) == 0;
        for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
            char **fs;
            size_t fp;
            if (pfi_features_expand(sets[s][1], &fs, &fp, &err)) { cli_error(cmd, "%s", err.msg); rc = CLI_FAIL; goto free_all; }
            pfi_eval a, b, d;
            pfi_pfi_model m;
            int e = evaluate(&fc, fs, fp, &a, &b, &d, &m);
            pfi_features_free(fs, fp);
            if (e) { rc = CLI_FAIL; goto free_all; }
            pfi_pfi_model_free(&m);
            size_t k = pfi_rows_add(R);
            pfi_rows_text(R, k, 0, sets[s][0]);
            pfi_rows_int(R, k, 1, (long long)fp);
            double v[7] = {a.r2, b.r2, b.rmse, b.rho, d.r2, d.rmse, d.rho}, pv[7];
            for (int j = 0; j < 7; j++) pfi_rows_num(R, k, 2 + (size_t)j, v[j]);
            if (have_paper && paper_row(t3, sets[s][0], pv) == 0)
                for (int j = 0; j < 7; j++) pfi_rows_num(R, k, 9 + (size_t)j, pv[j]);
        }
        rc = cli_save_rows(cmd, R, &out);
        goto free_all;
    }
    if (pfi_features_expand(features, &feat, &p, &err)) { cli_error(cmd, "%s", err.msg); rc = CLI_FAIL; goto free_all; }
    json_t *metrics = json_object();
    pfi_model M;
    memset(&M, 0, sizeof M);
    snprintf(M.target, sizeof M.target, "%s", !strcmp(target, "pfi") ? "pfi" : "pfi_robust");
    if (!curve) {
        const char *names[] = {"evaluation", "n", "r2", "rmse", "rho"};
        pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_NUM, PFI_CELL_NUM};
        R = pfi_rows_new(5, names, types);
        for (int k = 2; k < 5; k++) pfi_rows_table_fmt(R, (size_t)k, "%.3f");
        pfi_eval a, b, d;
        if (evaluate(&fc, feat, p, &a, &b, &d, &M.ols)) { rc = CLI_FAIL; json_decref(metrics); goto free_all; }
        M.kind = PFI_MODEL_OLS;
        eval_row(R, "in_sample", &a);
        eval_row(R, "loo", &b);
        eval_row(R, "loco", &d);
        json_object_set_new(metrics, "in_sample", eval_json(&a));
        json_object_set_new(metrics, "loo", eval_json(&b));
        json_object_set_new(metrics, "loco", eval_json(&d));
        for (int e = 0; e < nev; e++) {
            size_t *rows = malloc(ng * sizeof *rows), m = 0;
            for (size_t i = 0; i < ng; i++) {
                int mm = cli_group_match(cmd, &S, &S.gs.g[i], eval_w[e]);
                if (mm < 0) { free(rows); rc = CLI_USAGE; json_decref(metrics); goto free_all; }
                if (mm && isfinite(fc.y[i])) rows[m++] = i;
            }
            double *X = malloc((m ? m : 1) * p * sizeof *X), *y = malloc((m ? m : 1) * sizeof *y), *yh = malloc((m ? m : 1) * sizeof *yh);
            build_X(&fc, feat, p, rows, m, X);
            int oor = 0;
            for (size_t i = 0; i < m; i++) {
                int o2;
                y[i] = fc.y[rows[i]];
                yh[i] = pfi_pfi_model_predict(&M.ols, X + i * p, NULL, &o2);
                oor += o2 > 0;
            }
            pfi_eval ev;
            pfi_eval_metrics(y, yh, m, NAN, &ev);
            char name[160];
            snprintf(name, sizeof name, "eval:%s", eval_w[e]);
            eval_row(R, name, &ev);
            json_object_set_new(metrics, name, eval_json(&ev));
            if (oor) {
                pfi_log lg = cli_log(cmd);
                pfi_warnf(&lg, "%s: %d of %zu groups have a feature outside the training range", name, oor, m);
            }
            free(rows), free(X), free(y), free(yh);
        }
        fprintf(stderr, "pfi fit: %s = %.4g", target, M.ols.lin.intercept);
        for (size_t k = 0; k < p; k++) fprintf(stderr, " %+.4g x %s", M.ols.lin.beta[k], feat[k]);
        fprintf(stderr, " (rank %zu, %zu groups)\n", M.ols.lin.rank, M.ols.n_train);
    } else {
        /* curve predictor */
        M.kind = PFI_MODEL_CURVE;
        size_t n = fc.ntrain;
        double *X = malloc(n * p * sizeof *X);
        const pfi_curve **cv = malloc(n * sizeof *cv);
        if (build_X(&fc, feat, p, fc.train, n, X)) { free(X); free(cv); rc = CLI_FAIL; json_decref(metrics); goto free_all; }
        for (size_t i = 0; i < n; i++) cv[i] = &S.gs.g[fc.train[i]].curve;
        if (pfi_curve_model_fit(X, cv, n, p, &M.curve, &err)) {
            cli_error(cmd, "%s", err.msg);
            free(X), free(cv);
            rc = CLI_FAIL;
            json_decref(metrics);
            goto free_all;
        }
        const char *names[] = {"evaluation", "cap_frac", "n", "tokens_frac_rmse", "power_frac_rmse"};
        pfi_celltype types[] = {PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_INT, PFI_CELL_NUM, PFI_CELL_NUM};
        R = pfi_rows_new(5, names, types);
        pfi_rows_table_fmt(R, 1, "%.2f");
        pfi_rows_table_fmt(R, 3, "%.4f");
        pfi_rows_table_fmt(R, 4, "%.4f");
        /* LOO / LOCO: refit per fold, errors per grid point */
        for (int mode = 0; mode < 2 + nev; mode++) {
            double se_t[PFI_CURVE_GRID_MAX] = {0}, se_p[PFI_CURVE_GRID_MAX] = {0};
            size_t cnt[PFI_CURVE_GRID_MAX] = {0};
            const pfi_curve_model *gm = &M.curve;
            if (mode < 2) {
                int folds = 0;
                for (size_t i = 0; i < n; i++)
                    if (fc.cluster[i] + 1 > folds) folds = fc.cluster[i] + 1;
                size_t nf = mode == 0 ? n : (size_t)folds;
                for (size_t f = 0; f < nf; f++) {
                    double *Xt = malloc(n * p * sizeof *Xt);
                    const pfi_curve **ct = malloc(n * sizeof *ct);
                    size_t m = 0;
                    for (size_t i = 0; i < n; i++) {
                        int held = mode == 0 ? i == f : fc.cluster[i] == (int)f;
                        if (held) continue;
                        memcpy(Xt + m * p, X + i * p, p * sizeof *X);
                        ct[m++] = cv[i];
                    }
                    pfi_curve_model fm;
                    if (pfi_curve_model_fit(Xt, ct, m, p, &fm, NULL) == PFI_OK) {
                        for (size_t i = 0; i < n; i++) {
                            int held = mode == 0 ? i == f : fc.cluster[i] == (int)f;
                            if (!held) continue;
                            double tp[PFI_CURVE_GRID_MAX], pp[PFI_CURVE_GRID_MAX];
                            pfi_curve_model_predict(&fm, X + i * p, tp, pp);
                            for (size_t k = 0; k < fm.ngrid; k++) {
                                double tm, pm;
                                size_t kk;
                                for (kk = 0; kk < gm->ngrid; kk++)
                                    if (fabs(gm->frac[kk] - fm.frac[k]) < 1e-9) break;
                                if (kk == gm->ngrid || !pfi_curve_point_at_frac(cv[i], fm.frac[k], &tm, &pm)) continue;
                                se_t[kk] += (tp[k] - tm) * (tp[k] - tm);
                                se_p[kk] += (pp[k] - pm) * (pp[k] - pm);
                                cnt[kk]++;
                            }
                        }
                        pfi_curve_model_free(&fm);
                    }
                    free(Xt);
                    free(ct);
                }
            } else {
                for (size_t i = 0; i < ng; i++) {
                    int mm = cli_group_match(cmd, &S, &S.gs.g[i], eval_w[mode - 2]);
                    if (mm < 0) { rc = CLI_USAGE; break; }
                    if (!mm) continue;
                    double x[256], tp[PFI_CURVE_GRID_MAX], pp[PFI_CURVE_GRID_MAX];
                    size_t one = i;
                    if (p > 256 || build_X(&fc, feat, p, &one, 1, x)) continue;
                    pfi_curve_model_predict(gm, x, tp, pp);
                    for (size_t k = 0; k < gm->ngrid; k++) {
                        double tm, pm;
                        if (!pfi_curve_point_at_frac(&S.gs.g[i].curve, gm->frac[k], &tm, &pm)) continue;
                        se_t[k] += (tp[k] - tm) * (tp[k] - tm);
                        se_p[k] += (pp[k] - pm) * (pp[k] - pm);
                        cnt[k]++;
                    }
                }
            }
            char name[160];
            snprintf(name, sizeof name, "%s", mode == 0 ? "loo" : mode == 1 ? "loco" : "eval:");
            if (mode >= 2) snprintf(name, sizeof name, "eval:%s", eval_w[mode - 2]);
            json_t *jt = json_array(), *jp = json_array();
            for (size_t k = 0; k + 1 < gm->ngrid; k++) {
                size_t r = pfi_rows_add(R);
                double rt = cnt[k] ? sqrt(se_t[k] / (double)cnt[k]) : NAN, rp = cnt[k] ? sqrt(se_p[k] / (double)cnt[k]) : NAN;
                pfi_rows_text(R, r, 0, name);
                pfi_rows_num(R, r, 1, gm->frac[k]);
                pfi_rows_int(R, r, 2, (long long)cnt[k]);
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
        free(X);
        free(cv);
    }
    if (model_path) {
        M.p = p;
        M.features = feat;
        json_t *meta = json_object();
        json_object_set_new(meta, "metrics", metrics);
        metrics = NULL;
        json_t *tr = json_array();
        for (int i = optind; i < argc; i++) json_array_append_new(tr, json_string(argv[i]));
        json_object_set_new(meta, "trained_on", tr);
        char tw[1024] = "";
        for (int i = 0; i < ntw; i++) {
            strncat(tw, i ? " AND " : "", sizeof tw - strlen(tw) - 1);
            strncat(tw, train_w[i], sizeof tw - strlen(tw) - 1);
        }
        json_object_set_new(meta, "train_where", json_string(tw));
        int recon = pfi_table_col(S.t, "provenance") >= 0;
        json_object_set_new(meta, "provenance", json_string(recon ? "fitted on a reconstruction calibrated to published tables"
                                                                  : "fitted on the given sweep tables"));
        M.meta = meta;
        if (pfi_model_save(&M, model_path, &err)) { cli_error(cmd, "%s", err.msg); rc = CLI_FAIL; }
        json_decref(meta);
        M.meta = NULL;
        M.features = NULL;
    }
    if (metrics) json_decref(metrics);
    if (M.kind == PFI_MODEL_OLS) pfi_pfi_model_free(&M.ols);
    else pfi_curve_model_free(&M.curve);
    if (rc == CLI_OK) rc = cli_save_rows(cmd, R, &out);
free_all:
    pfi_rows_free(R);
    pfi_features_free(feat, p);
    free(fc.train);
    free(fc.cluster);
    cli_gset_free(&S);
done:
    free(train_w);
    free(eval_w);
    return rc;
}
