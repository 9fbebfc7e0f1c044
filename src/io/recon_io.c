/* recon_io.c — spec.csv and params.csv of the reconstruction (see
 * recon_io.h). Both are plain CSV read with the project's CSV reader;
 * errors name file, line and column. */
#include "recon_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "num.h"
#include "pfi/csv.h"
#include "vec.h"

typedef struct hdrmap {
    const char *name;
    int idx;
} hdrmap;

static int col(const pfi_csv *c, const char *name)
{
    for (size_t i = 0; i < c->nfields; i++)
        if (strcmp(c->fields[i], name) == 0) return (int)i;
    return -1;
}

static pfi_status num_field(const pfi_csv *c, int i, const char *file, const char *name,
                            int optional, double *v, pfi_error *err)
{
    int e = pfi_parse_double(c->fields[i], c->lens[i], v);
    if (e == PFI_NUM_EMPTY && optional) {
        *v = NAN;
        return PFI_OK;
    }
    if (e)
        return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column '%s': %s", file,
                          (unsigned long long)c->line, name, pfi_num_error_name(e));
    return PFI_OK;
}

static pfi_status load_spec(const char *path, pfi_recon *out, pfi_error *err)
{
    static const char *const need[] = {"group_id", "split",  "gpu_model",      "arch",
                                       "task",     "model",  "total_params_b", "active_params_b",
                                       "gpus",     "caps_w", "pfi_target",     "pfi4_target",
                                       "compile",  "ep",     "seq_len",        "batch"};
    enum { N = 16 };
    pfi_reader r;
    pfi_status st = pfi_reader_open(&r, path, 0, err);
    if (st) return st;
    pfi_csv c;
    pfi_csv_init(&c, &r);
    int idx[N];
    int rc = pfi_csv_next(&c, err);
    if (rc <= 0) {
        st = rc == 0 ? pfi_errorf(err, PFI_EINVAL, "%s: empty file", path)
                     : (err ? err->code : PFI_EPARSE);
        goto out;
    }
    for (int k = 0; k < N; k++)
        if ((idx[k] = col(&c, need[k])) < 0) {
            st = pfi_errorf(err, PFI_EINVAL, "%s:1: missing column '%s'", path, need[k]);
            goto out;
        }
    size_t nh = c.nfields, cap = 0;
    while ((rc = pfi_csv_next(&c, err)) == 1) {
        if (c.nfields != nh) {
            st = pfi_errorf(err, PFI_EPARSE, "%s:%llu: expected %zu fields, found %zu", path,
                            (unsigned long long)c.line, nh, c.nfields);
            goto out;
        }
        if (PFI_VEC_RESERVE(out->g, cap, out->n + 1, NULL)) {
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            goto out;
        }
        pfi_recon_group *g = &out->g[out->n];
        memset(g, 0, sizeof *g);
        snprintf(g->group, sizeof g->group, "%s", c.fields[idx[0]]);
        snprintf(g->split, sizeof g->split, "%s", c.fields[idx[1]]);
        snprintf(g->gpu_model, sizeof g->gpu_model, "%s", c.fields[idx[2]]);
        snprintf(g->arch, sizeof g->arch, "%s", c.fields[idx[3]]);
        snprintf(g->task, sizeof g->task, "%s", c.fields[idx[4]]);
        snprintf(g->model, sizeof g->model, "%s", c.fields[idx[5]]);
        double v[8];
        const int numcols[] = {6, 7, 8, 10, 11, 13, 14, 15};
        for (int k = 0; k < 8; k++)
            if ((st = num_field(&c, idx[numcols[k]], path, need[numcols[k]], numcols[k] == 11,
                                &v[k], err)))
                goto out;
        g->total_params_b = v[0];
        g->active_params_b = v[1];
        g->gpus = (int)v[2];
        g->pfi_target = v[3];
        g->pfi4_target = v[4];
        g->ep = (int)v[5];
        g->seq_len = (int)v[6];
        g->batch = (int)v[7];
        const char *cp = c.fields[idx[12]];
        g->compile = cp[0] ? atoi(cp) : -1;
        g->hw = pfi_hw_get(g->gpu_model);
        if (!g->hw || g->gpus < 1 || g->gpus > 4096) {
            st = pfi_errorf(err, PFI_EINVAL, "%s:%llu: unknown gpu_model or bad gpus", path,
                            (unsigned long long)c.line);
            goto out;
        }
        /* caps "200;300;...": ascending, the last one the uncapped TDP */
        const char *p = c.fields[idx[9]];
        while (*p) {
            const char *e = strchr(p, ';');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            double cw;
            if (g->ncaps >= PFI_RECON_MAX_CAPS || pfi_parse_double(p, len, &cw) != PFI_NUM_OK) {
                st = pfi_errorf(err, PFI_EINVAL, "%s:%llu: column 'caps_w': bad cap list", path,
                                (unsigned long long)c.line);
                goto out;
            }
            g->caps_w[g->ncaps++] = cw;
            if (!e) break;
            p = e + 1;
        }
        if (g->ncaps < 2) {
            st = pfi_errorf(err, PFI_EINVAL, "%s:%llu: column 'caps_w': needs at least two caps",
                            path, (unsigned long long)c.line);
            goto out;
        }
        out->n++;
    }
    if (rc < 0) st = err ? err->code : PFI_EPARSE;
out:
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    return st;
}

static pfi_status load_params(const char *path, pfi_recon *out, pfi_error *err)
{
    pfi_reader r;
    pfi_status st = pfi_reader_open(&r, path, 0, err);
    if (st) return st;
    pfi_csv c;
    pfi_csv_init(&c, &r);
    int rc = pfi_csv_next(&c, err);
    int ig, im, ip, is;
    if (rc <= 0) {
        st = rc == 0 ? pfi_errorf(err, PFI_EINVAL, "%s: empty file", path)
                     : (err ? err->code : PFI_EPARSE);
        goto out;
    }
    ig = col(&c, "group_id"), im = col(&c, "gpu_model"), ip = col(&c, "phi"), is = col(&c, "sm_w");
    if (ig < 0 || im < 0 || ip < 0 || is < 0) {
        st =
            pfi_errorf(err, PFI_EINVAL, "%s:1: needs columns group_id, gpu_model, phi, sm_w", path);
        goto out;
    }
    size_t nh = c.nfields;
    while ((rc = pfi_csv_next(&c, err)) == 1) {
        if (c.nfields != nh) {
            st = pfi_errorf(err, PFI_EPARSE, "%s:%llu: expected %zu fields, found %zu", path,
                            (unsigned long long)c.line, nh, c.nfields);
            goto out;
        }
        pfi_recon_group *g = pfi_recon_find(out, c.fields[ig], c.fields[im]);
        if (!g) {
            st = pfi_errorf(err, PFI_ENOTFOUND, "%s:%llu: group '%s' (%s) is not in the spec", path,
                            (unsigned long long)c.line, c.fields[ig], c.fields[im]);
            goto out;
        }
        double phi, sm;
        if ((st = num_field(&c, ip, path, "phi", 0, &phi, err)) ||
            (st = num_field(&c, is, path, "sm_w", 0, &sm, err)))
            goto out;
        if (!(phi > 0 && phi < 1) || !(sm > 0 && sm < 10000)) {
            st = pfi_errorf(err, PFI_EINVAL, "%s:%llu: phi must be in (0,1) and sm_w positive",
                            path, (unsigned long long)c.line);
            goto out;
        }
        g->job.phi = phi;
        g->job.sm_w = sm;
        g->calibrated = 1;
    }
    if (rc < 0) st = err ? err->code : PFI_EPARSE;
out:
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    return st;
}

pfi_status pfi_recon_load(const char *spec_path, const char *params_path, pfi_recon *out,
                          pfi_error *err)
{
    memset(out, 0, sizeof *out);
    pfi_status st = load_spec(spec_path, out, err);
    if (!st && params_path) st = load_params(params_path, out, err);
    if (st) {
        pfi_recon_dispose(out);
        return st;
    }
    for (size_t i = 0; i < out->n; i++)
        if (out->g[i].calibrated) pfi_recon_apply_priors(&out->g[i]);
    return PFI_OK;
}

pfi_status pfi_recon_save_params(const pfi_recon *r, const char *path, pfi_error *err)
{
    pfi_outfile o;
    pfi_status st = pfi_out_open(&o, path, err);
    if (st) return st;
    fprintf(
        o.f,
        "group_id,gpu_model,split,phi,sm_w,mu,kappa,tokens_per_s_ref,mfu_uncapped,provenance\n");
    for (size_t i = 0; i < r->n; i++) {
        const pfi_recon_group *g = &r->g[i];
        if (!g->calibrated) continue;
        fprintf(o.f, "%s,%s,%s,%.6f,%.1f,%.6f,%.6f,%.2f,%.4f,%s\n", g->group, g->gpu_model,
                g->split, g->job.phi, g->job.sm_w, g->job.mu, g->job.kappa, g->job.tokens_per_s_ref,
                g->mfu_uncapped, "reconstruction calibrated to published tables");
    }
    return pfi_out_commit(&o, err);
}
