/* model_file.c — writing and reading predictor model files (see model_file.h). */
#include "pfi/model_file.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "pfi/features.h"

void pfi_modelfile_dispose(pfi_modelfile *m)
{
    if (m->features)
        for (size_t k = 0; k < m->p; k++) free(m->features[k]);
    free(m->features);
    if (m->kind == PFI_MODELFILE_OLS) pfi_pfi_model_dispose(&m->ols);
    else pfi_curve_model_dispose(&m->curve);
    if (m->meta) json_decref((json_t *)m->meta);
    memset(m, 0, sizeof *m);
}

static json_t *darray(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *linear_json(const pfi_linear *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "intercept", json_real(l->intercept));
    json_object_set_new(o, "coefficients", darray(l->beta, l->p));
    return o;
}

pfi_status pfi_modelfile_save(const pfi_modelfile *m, const char *path, pfi_error *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "format_version", json_integer(1));
    json_object_set_new(o, "kind", json_string(m->kind == PFI_MODELFILE_OLS ? "pfi-ols" : "curve"));
    json_object_set_new(o, "target", json_string(m->target));
    const double *fmin = m->kind == PFI_MODELFILE_OLS ? m->ols.fmin : m->curve.fmin;
    const double *fmax = m->kind == PFI_MODELFILE_OLS ? m->ols.fmax : m->curve.fmax;
    json_t *fs = json_array();
    for (size_t k = 0; k < m->p; k++) {
        json_t *f = json_object();
        json_object_set_new(f, "name", json_string(m->features[k]));
        json_object_set_new(f, "unit", json_string(pfi_feature_unit(m->features[k])));
        json_object_set_new(f, "computed", json_string(pfi_feature_source(m->features[k])));
        json_object_set_new(f, "min", json_real(fmin[k]));
        json_object_set_new(f, "max", json_real(fmax[k]));
        json_array_append_new(fs, f);
    }
    json_object_set_new(o, "features", fs);
    json_object_set_new(o, "solver",
                        json_string("minimum-norm least squares (SVD) on standardized features"));
    if (m->kind == PFI_MODELFILE_OLS) {
        json_object_set_new(o, "intercept", json_real(m->ols.lin.intercept));
        json_object_set_new(o, "coefficients", darray(m->ols.lin.beta, m->p));
        json_t *c = json_object();
        json_object_set_new(c, "min", json_real(m->ols.clamp_lo));
        json_object_set_new(c, "max", json_real(m->ols.clamp_hi));
        json_object_set_new(o, "clamp", c);
        json_object_set_new(o, "rank", json_integer((json_int_t)m->ols.lin.rank));
        json_object_set_new(o, "n_train", json_integer((json_int_t)m->ols.n_train));
    } else {
        json_object_set_new(o, "grid_cap_frac", darray(m->curve.frac, m->curve.ngrid));
        json_t *t = json_array(), *p = json_array(), *nt = json_array();
        for (size_t k = 0; k < m->curve.ngrid; k++) {
            json_array_append_new(t, linear_json(&m->curve.t[k]));
            json_array_append_new(p, linear_json(&m->curve.pw[k]));
            json_array_append_new(nt, json_integer((json_int_t)m->curve.n_train[k]));
        }
        json_object_set_new(o, "throughput", t);
        json_object_set_new(o, "power", p);
        json_object_set_new(o, "n_train_per_point", nt);
        /* the prior (issue 44): written when the fit made it */
        int have = 1;
        for (size_t k = 0; k < m->curve.ngrid; k++)
            have &= isfinite(m->curve.t_se[k]) && isfinite(m->curve.p_se[k]) &&
                    isfinite(m->curve.pop_t[k]) && isfinite(m->curve.pop_p[k]) &&
                    isfinite(m->curve.pop_t_sd[k]) && isfinite(m->curve.pop_p_sd[k]);
        if (have) {
            size_t ng = m->curve.ngrid;
            json_t *pr = json_object();
            json_object_set_new(pr, "throughput_se", darray(m->curve.t_se, ng));
            json_object_set_new(pr, "power_se", darray(m->curve.p_se, ng));
            json_object_set_new(pr, "population_throughput", darray(m->curve.pop_t, ng));
            json_object_set_new(pr, "population_power", darray(m->curve.pop_p, ng));
            json_object_set_new(pr, "population_throughput_sd", darray(m->curve.pop_t_sd, ng));
            json_object_set_new(pr, "population_power_sd", darray(m->curve.pop_p_sd, ng));
            json_object_set_new(o, "prior", pr);
        }
    }
    if (m->meta) json_object_update(o, (json_t *)m->meta);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(o);
    if (!s) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    size_t n = strlen(s);
    pfi_status st = pfi_write_file_atomic(path, s, n, err);
    free(s);
    return st;
}

static pfi_status get_num(json_t *o, const char *key, const char *path, const char *ctx, double *v,
                          pfi_error *err)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return pfi_errorf(err, PFI_EINVAL, "%s: %s%s'%s': expected a finite number", path, ctx,
                          ctx[0] ? "." : "", key);
    *v = json_number_value(x);
    return PFI_OK;
}

static pfi_status get_darray(json_t *a, size_t n, const char *path, const char *what, double *out,
                             pfi_error *err)
{
    if (!json_is_array(a) || json_array_size(a) != n)
        return pfi_errorf(err, PFI_EINVAL, "%s: '%s': expected an array of %zu numbers", path, what,
                          n);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(a, i);
        if (!json_is_number(x) || !isfinite(json_number_value(x)))
            return pfi_errorf(err, PFI_EINVAL, "%s: '%s'[%zu]: not a finite number", path, what, i);
        out[i] = json_number_value(x);
    }
    return PFI_OK;
}

static pfi_status get_linear(json_t *o, size_t p, const char *path, const char *what, pfi_linear *l,
                             pfi_error *err)
{
    memset(l, 0, sizeof *l);
    l->p = p;
    l->beta = calloc(p ? p : 1, sizeof *l->beta);
    if (!l->beta) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    if (!json_is_object(o))
        return pfi_errorf(err, PFI_EINVAL, "%s: '%s': expected an object", path, what);
    pfi_status st = get_num(o, "intercept", path, what, &l->intercept, err);
    if (!st)
        st = get_darray(json_object_get(o, "coefficients"), p, path, "coefficients", l->beta, err);
    return st;
}

/* an OLS model's intercept, coefficients and clamp into m (its features read) */
static pfi_status load_ols(json_t *o, const char *path, pfi_modelfile *m, pfi_error *err)
{
    pfi_status st;
    m->ols.lin.p = m->p;
    m->ols.lin.beta = calloc(m->p, sizeof(double));
    if (!m->ols.lin.beta) {
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    json_t *cl = json_object_get(o, "clamp");
    if ((st = get_num(o, "intercept", path, "", &m->ols.lin.intercept, err))) return st;
    if ((st = get_darray(json_object_get(o, "coefficients"), m->p, path, "coefficients",
                         m->ols.lin.beta, err)))
        return st;
    if (!json_is_object(cl)) {
        return pfi_errorf(err, PFI_EINVAL, "%s: 'clamp': expected {\"min\", \"max\"}", path);
    }
    if ((st = get_num(cl, "min", path, "clamp", &m->ols.clamp_lo, err)) ||
        (st = get_num(cl, "max", path, "clamp", &m->ols.clamp_hi, err)))
        return st;
    if (!(m->ols.clamp_lo > 0 && m->ols.clamp_hi > m->ols.clamp_lo)) {
        return pfi_errorf(err, PFI_EINVAL, "%s: 'clamp': needs 0 < min < max", path);
    }
    return PFI_OK;
}

/* the prior (issue 44), optional: "prior": {"throughput_se", "power_se",
   "population_throughput", "population_power", "population_throughput_sd",
   "population_power_sd"}, one non-negative number per grid point each;
   absent: NaN (the offer then takes its proportional bound) */
static pfi_status load_prior(json_t *o, const char *path, pfi_curve_model *c, pfi_error *err)
{
    size_t ng = c->ngrid;
    double *dst[6] = {c->t_se, c->p_se, c->pop_t, c->pop_p, c->pop_t_sd, c->pop_p_sd};
    static const char *const key[6] = {"throughput_se",
                                       "power_se",
                                       "population_throughput",
                                       "population_power",
                                       "population_throughput_sd",
                                       "population_power_sd"};
    json_t *pr = json_object_get(o, "prior");
    for (int w = 0; w < 6; w++)
        for (size_t k = 0; k < ng; k++) dst[w][k] = NAN;
    if (!pr) return PFI_OK;
    if (!json_is_object(pr))
        return pfi_errorf(err, PFI_EINVAL, "%s: 'prior': expected an object", path);
    for (int w = 0; w < 6; w++) {
        char what[64];
        snprintf(what, sizeof what, "prior.%s", key[w]);
        pfi_status st = get_darray(json_object_get(pr, key[w]), ng, path, what, dst[w], err);
        if (st) return st;
        for (size_t k = 0; k < ng; k++)
            if (!(dst[w][k] >= 0 && dst[w][k] <= 10))
                return pfi_errorf(err, PFI_EINVAL, "%s: '%s'[%zu]: expected 0..10", path, what, k);
    }
    return PFI_OK;
}

/* a curve model's grid and, per grid point, its throughput and power models */
static pfi_status load_curve(json_t *o, const char *path, pfi_modelfile *m, pfi_error *err)
{
    pfi_status st;
    json_t *grid = json_object_get(o, "grid_cap_frac"), *t = json_object_get(o, "throughput"),
           *p = json_object_get(o, "power");
    size_t ng = json_array_size(grid);
    if (!json_is_array(grid) || ng < 2 || ng > PFI_CURVE_GRID_MAX) {
        return pfi_errorf(err, PFI_EINVAL, "%s: 'grid_cap_frac': expected 2..%d numbers", path,
                          PFI_CURVE_GRID_MAX);
    }
    if ((st = get_darray(grid, ng, path, "grid_cap_frac", m->curve.frac, err))) return st;
    for (size_t k = 0; k < ng; k++)
        if (!(m->curve.frac[k] > 0 && m->curve.frac[k] <= 1) ||
            (k && m->curve.frac[k] <= m->curve.frac[k - 1])) {
            return pfi_errorf(err, PFI_EINVAL, "%s: 'grid_cap_frac': must increase within (0, 1]",
                              path);
        }
    if (m->curve.frac[ng - 1] != 1.0) {
        return pfi_errorf(err, PFI_EINVAL, "%s: 'grid_cap_frac': must end at 1", path);
    }
    if (json_array_size(t) != ng || json_array_size(p) != ng) {
        return pfi_errorf(err, PFI_EINVAL,
                          "%s: 'throughput' and 'power' need one entry per grid point", path);
    }
    for (size_t k = 0; k < ng; k++) {
        m->curve.ngrid = k; /* so free releases what was read */
        if ((st =
                 get_linear(json_array_get(t, k), m->p, path, "throughput", &m->curve.t[k], err))) {
            pfi_linear_dispose(&m->curve.t[k]);
            return st;
        }
        if ((st = get_linear(json_array_get(p, k), m->p, path, "power", &m->curve.pw[k], err))) {
            pfi_linear_dispose(&m->curve.t[k]);
            pfi_linear_dispose(&m->curve.pw[k]);
            return st;
        }
    }
    m->curve.ngrid = ng;
    return load_prior(o, path, &m->curve, err);
}

pfi_status pfi_modelfile_load(const char *path, pfi_modelfile *m, pfi_error *err)
{
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        if (je.line <= 0) return pfi_errorf(err, PFI_EIO, "%s: %s", path, je.text);
        return pfi_errorf(err, PFI_EPARSE, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column,
                          je.text);
    }
    pfi_status st = PFI_OK;
    json_t *fv = json_object_get(o, "format_version"), *kind = json_object_get(o, "kind");
    json_t *fs = json_object_get(o, "features"), *tg = json_object_get(o, "target");
    if (!json_is_object(o)) st = pfi_errorf(err, PFI_EPARSE, "%s: not a JSON object", path);
    else if (!json_is_integer(fv) || json_integer_value(fv) != 1)
        st = pfi_errorf(err, PFI_EINVAL, "%s: 'format_version': expected 1", path);
    else if (!json_is_string(kind) || (strcmp(json_string_value(kind), "pfi-ols") &&
                                       strcmp(json_string_value(kind), "curve")))
        st = pfi_errorf(err, PFI_EINVAL, "%s: 'kind': expected \"pfi-ols\" or \"curve\"", path);
    else if (!json_is_array(fs) || json_array_size(fs) == 0 || json_array_size(fs) > 256)
        st = pfi_errorf(err, PFI_EINVAL, "%s: 'features': expected a non-empty array", path);
    if (st) goto out;
    m->kind =
        strcmp(json_string_value(kind), "curve") == 0 ? PFI_MODELFILE_CURVE : PFI_MODELFILE_OLS;
    snprintf(m->target, sizeof m->target, "%s", json_is_string(tg) ? json_string_value(tg) : "pfi");
    m->p = json_array_size(fs);
    m->features = calloc(m->p, sizeof *m->features);
    double *fmin = malloc(m->p * sizeof *fmin), *fmax = malloc(m->p * sizeof *fmax);
    if (!m->features || !fmin || !fmax) {
        free(fmin), free(fmax);
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < m->p && !st; k++) {
        json_t *f = json_array_get(fs, k), *nm = json_object_get(f, "name");
        char ctx[32];
        snprintf(ctx, sizeof ctx, "features[%zu]", k);
        if (!json_is_string(nm))
            st = pfi_errorf(err, PFI_EINVAL, "%s: %s.'name': expected a string", path, ctx);
        else {
            m->features[k] = strdup(json_string_value(nm));
            st = m->features[k] ? get_num(f, "min", path, ctx, &fmin[k], err)
                                : pfi_errorf(err, PFI_ENOMEM, "out of memory");
            if (!st) st = get_num(f, "max", path, ctx, &fmax[k], err);
        }
    }
    if (m->kind == PFI_MODELFILE_OLS) {
        m->ols.fmin = fmin;
        m->ols.fmax = fmax;
        if (!st) st = load_ols(o, path, m, err);
    } else {
        m->curve.fmin = fmin;
        m->curve.fmax = fmax;
        m->curve.p = m->p;
        if (!st) st = load_curve(o, path, m, err);
    }
    if (st) goto out;
    /* keep the rest (metrics, provenance) for display */
    json_t *meta = json_object();
    static const char *const keep[] = {"metrics",    "trained_on", "train_where",
                                       "provenance", "n_train",    NULL};
    for (int i = 0; keep[i]; i++) {
        json_t *v = json_object_get(o, keep[i]);
        if (v) json_object_set(meta, keep[i], v);
    }
    m->meta = meta;
out:
    json_decref(o);
    if (st) pfi_modelfile_dispose(m);
    return st;
}
