/* sweep.c — reading sweep tables (and Zeus power traces) into a pfi_table.
 *
 * Validation happens here, where file and line are known: required columns,
 * duplicate headers, field counts, numbers (finite, non-negative; the
 * required ones positive), and the arch/task vocabularies. */
#include "pfi/sweep.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"
#include "pfi/csv.h"

const char *const pfi_derived_features[] = {"dram_copy_product", "arithmetic_intensity",
                                            "tensor_sm_ratio", "nvlink_bytes"};
const size_t pfi_n_derived_features = sizeof pfi_derived_features / sizeof *pfi_derived_features;

static const char *const numeric_meta[] = {"gpus",       "cap_w",   "tokens_per_s", "power_w",
                                           "mfu",        "tflops",  "repeats",      "n_samples",
                                           "batch_size", "n_steps", "train_s"};

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int pfi_sweep_is_telemetry(const char *name)
{
    if (strncmp(name, "DCGM_FI_", 8) == 0) return !ends_with(name, "_sem");
    for (size_t i = 0; i < pfi_n_derived_features; i++)
        if (strcmp(name, pfi_derived_features[i]) == 0) return 1;
    return 0;
}

pfi_coltype pfi_sweep_coltype(const char *name)
{
    for (size_t i = 0; i < sizeof numeric_meta / sizeof *numeric_meta; i++)
        if (strcmp(name, numeric_meta[i]) == 0) return PFI_COL_NUM;
    if (ends_with(name, "_sem")) return PFI_COL_NUM;
    if (strncmp(name, "DCGM_FI_", 8) == 0) return PFI_COL_NUM;
    if (pfi_sweep_is_telemetry(name)) return PFI_COL_NUM;
    return PFI_COL_TEXT;
}

const char *pfi_zeus_gpu_model(const char *path, char *buf, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *pre = "summary_power_";
    if (strncmp(base, pre, strlen(pre)) != 0) return NULL;
    const char *m = base + strlen(pre);
    const char *dot = strchr(m, '.');
    size_t len = dot ? (size_t)(dot - m) : strlen(m);
    if (len == 0 || len + 1 > n) return NULL;
    for (size_t i = 0; i < len; i++) buf[i] = (char)toupper((unsigned char)m[i]);
    buf[len] = '\0';
    return buf;
}

enum { K_OTHER, K_GROUP, K_GPU_MODEL, K_GPUS, K_CAP, K_TOKENS, K_POWER, K_ARCH, K_TASK };

static int kind_of(const char *name)
{
    static const struct {
        const char *n;
        int k;
    } m[] = {
        {"group", K_GROUP},         {"gpu_model", K_GPU_MODEL}, {"gpus", K_GPUS}, {"cap_w", K_CAP},
        {"tokens_per_s", K_TOKENS}, {"power_w", K_POWER},       {"arch", K_ARCH}, {"task", K_TASK}};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (strcmp(name, m[i].n) == 0) return m[i].k;
    return K_OTHER;
}

static const char *const zeus_cols[] = {"dataset",      "network",     "batch_size",
                                        "optimizer",    "power_limit", "time_per_epoch",
                                        "average_power"};

typedef struct hdr {
    size_t n;
    char **names;
    long *tcol; /* table column per field */
    int *kind;
} hdr;

static void hdr_free(hdr *h)
{
    for (size_t i = 0; i < h->n; i++) free(h->names[i]);
    free(h->names);
    free(h->tcol);
    free(h->kind);
}

static long hfind(const hdr *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->names[i], name) == 0) return (long)i;
    return -1;
}

static pfi_status read_zeus(pfi_table *t, pfi_csv *csv, hdr *h, uint32_t file,
                            const char *gpu_model, pfi_error *err)
{
    const char *fname = csv->r->name;
    long zi[7];
    for (int k = 0; k < 7; k++) zi[k] = hfind(h, zeus_cols[k]);
    static const char *const out_text[] = {"group", "gpu_model", "dataset", "model", "optimizer"};
    static const char *const out_num[] = {"gpus", "cap_w", "tokens_per_s", "power_w", "batch_size"};
    long tc[5], nc[5];
    for (int k = 0; k < 5; k++) {
        tc[k] = pfi_table_add_col(t, out_text[k], PFI_COL_TEXT, err);
        nc[k] = pfi_table_add_col(t, out_num[k], PFI_COL_NUM, err);
        if (tc[k] < 0 || nc[k] < 0) return err ? err->code : PFI_EINVAL;
    }
    uint32_t gm = pfi_table_intern(t, gpu_model, strlen(gpu_model));
    size_t nrows = 0;
    int rc;
    char group[1024];
    while ((rc = pfi_csv_next(csv, err)) == 1) {
        uint64_t line = csv->line;
        if (csv->nfields != h->n)
            return pfi_errorf(err, PFI_EPARSE, "%s:%llu: expected %zu fields, found %zu", fname,
                              (unsigned long long)line, h->n, csv->nfields);
        double v[3];
        for (int k = 0; k < 3; k++) {
            const char *col = zeus_cols[4 + k];
            int e = pfi_parse_double(csv->fields[zi[4 + k]], csv->lens[zi[4 + k]], &v[k]);
            if (e)
                return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column '%s': %s ('%.40s')", fname,
                                  (unsigned long long)line, col, pfi_num_error_name(e),
                                  csv->fields[zi[4 + k]]);
            if (!(v[k] > 0))
                return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column '%s': must be positive (%g)",
                                  fname, (unsigned long long)line, col, v[k]);
        }
        long bs;
        int e = pfi_parse_long(csv->fields[zi[2]], csv->lens[zi[2]], 1, 1L << 30, &bs);
        if (e)
            return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column 'batch_size': %s", fname,
                              (unsigned long long)line, pfi_num_error_name(e));
        for (int k = 0; k < 4; k++)
            if (k != 2 && csv->lens[zi[k]] == 0)
                return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column '%s': empty", fname,
                                  (unsigned long long)line, zeus_cols[k]);
        int gl = snprintf(group, sizeof group, "%s/%s/%s/%s", csv->fields[zi[0]],
                          csv->fields[zi[1]], csv->fields[zi[2]], csv->fields[zi[3]]);
        if (gl < 0 || (size_t)gl >= sizeof group)
            return pfi_errorf(err, PFI_EINVAL, "%s:%llu: group name too long", fname,
                              (unsigned long long)line);
        size_t row;
        pfi_status st = pfi_table_add_row(t, file, line, &row, err);
        if (st) return st;
        uint32_t ids[5] = {pfi_table_intern(t, group, (size_t)gl), gm,
                           pfi_table_intern(t, csv->fields[zi[0]], csv->lens[zi[0]]),
                           pfi_table_intern(t, csv->fields[zi[1]], csv->lens[zi[1]]),
                           pfi_table_intern(t, csv->fields[zi[3]], csv->lens[zi[3]])};
        for (int k = 0; k < 5; k++) {
            if (ids[k] == UINT32_MAX) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
            pfi_table_set_text_id(t, (size_t)tc[k], row, ids[k]);
        }
        pfi_table_set_num(t, (size_t)nc[0], row, 1);
        pfi_table_set_num(t, (size_t)nc[1], row, v[0]);
        pfi_table_set_num(t, (size_t)nc[2], row, 1.0 / v[1]);
        pfi_table_set_num(t, (size_t)nc[3], row, v[2]);
        pfi_table_set_num(t, (size_t)nc[4], row, (double)bs);
        nrows++;
    }
    if (rc < 0) return err ? err->code : PFI_EPARSE;
    if (nrows == 0) return pfi_errorf(err, PFI_EINVAL, "%s: header only, no data rows", fname);
    return PFI_OK;
}

static pfi_status read_sweep(pfi_table *t, pfi_csv *csv, hdr *h, uint32_t file, pfi_error *err)
{
    const char *fname = csv->r->name;
    static const char *const required[] = {"group", "gpu_model",    "gpus",
                                           "cap_w", "tokens_per_s", "power_w"};
    for (size_t i = 0; i < 6; i++)
        if (hfind(h, required[i]) < 0)
            return pfi_errorf(err, PFI_EINVAL, "%s:1: missing required column '%s'", fname,
                              required[i]);
    for (size_t i = 0; i < h->n; i++) {
        h->kind[i] = kind_of(h->names[i]);
        h->tcol[i] = pfi_table_add_col(t, h->names[i], pfi_sweep_coltype(h->names[i]), err);
        if (h->tcol[i] < 0) return err ? err->code : PFI_EINVAL;
    }
    size_t nrows = 0;
    int rc;
    while ((rc = pfi_csv_next(csv, err)) == 1) {
        uint64_t line = csv->line;
        if (csv->nfields != h->n)
            return pfi_errorf(err, PFI_EPARSE, "%s:%llu: expected %zu fields, found %zu", fname,
                              (unsigned long long)line, h->n, csv->nfields);
        size_t row;
        pfi_status st = pfi_table_add_row(t, file, line, &row, err);
        if (st) return st;
        for (size_t i = 0; i < h->n; i++) {
            const char *f = csv->fields[i];
            size_t len = csv->lens[i];
            const char *col = h->names[i];
            int kind = h->kind[i];
            if (pfi_table_coltype(t, (size_t)h->tcol[i]) == PFI_COL_NUM) {
                double v;
                int e = pfi_parse_double(f, len, &v);
                int req = kind == K_GPUS || kind == K_CAP || kind == K_TOKENS || kind == K_POWER;
                if (e == PFI_NUM_EMPTY && !req) continue; /* missing optional value */
                if (e)
                    return pfi_errorf(
                        err, PFI_EINVAL, "%s:%llu: column '%s': %s ('%.40s')", fname,
                        (unsigned long long)line, col,
                        e == PFI_NUM_EMPTY ? "missing required value" : pfi_num_error_name(e), f);
                if (v < 0)
                    return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column '%s': negative value %g",
                                      fname, (unsigned long long)line, col, v);
                if (req && v == 0)
                    return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column '%s': must be positive",
                                      fname, (unsigned long long)line, col);
                if (kind == K_GPUS && (v != floor(v) || v > 1048576))
                    return pfi_errorf(err, PFI_EINVAL,
                                      "%s:%llu: column 'gpus': not a GPU count (%g)", fname,
                                      (unsigned long long)line, v);
                if (kind == K_CAP && v > 100000)
                    return pfi_errorf(err, PFI_EINVAL,
                                      "%s:%llu: column 'cap_w': %g W per GPU is not a power cap",
                                      fname, (unsigned long long)line, v);
                pfi_table_set_num(t, (size_t)h->tcol[i], row, v);
            } else {
                if (len == 0 && (kind == K_GROUP || kind == K_GPU_MODEL))
                    return pfi_errorf(err, PFI_EINVAL, "%s:%llu: column '%s': empty", fname,
                                      (unsigned long long)line, col);
                if (kind == K_ARCH && len && strcmp(f, "dense") && strcmp(f, "moe"))
                    return pfi_errorf(err, PFI_EINVAL,
                                      "%s:%llu: column 'arch': '%.40s' is not dense or moe", fname,
                                      (unsigned long long)line, f);
                if (kind == K_TASK && len && strcmp(f, "pt") && strcmp(f, "ft"))
                    return pfi_errorf(err, PFI_EINVAL,
                                      "%s:%llu: column 'task': '%.40s' is not pt or ft", fname,
                                      (unsigned long long)line, f);
                uint32_t id = pfi_table_intern(t, f, len);
                if (id == UINT32_MAX) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
                pfi_table_set_text_id(t, (size_t)h->tcol[i], row, id);
            }
        }
        nrows++;
    }
    if (rc < 0) return err ? err->code : PFI_EPARSE;
    if (nrows == 0) return pfi_errorf(err, PFI_EINVAL, "%s: header only, no data rows", fname);
    return PFI_OK;
}

pfi_status pfi_sweep_read_reader(pfi_table *t, pfi_reader *r, const pfi_sweep_read_opts *o,
                                 pfi_log *log, pfi_error *err)
{
    (void)log;
    pfi_csv csv;
    pfi_csv_init(&csv, r);
    hdr h = {0};
    pfi_status st = PFI_OK;
    int rc = pfi_csv_next(&csv, err);
    if (rc < 0) {
        st = err ? err->code : PFI_EPARSE;
        goto out;
    }
    if (rc == 0) {
        st = pfi_errorf(err, PFI_EINVAL, "%s: empty file (no header)", r->name);
        goto out;
    }
    h.n = csv.nfields;
    h.names = calloc(h.n, sizeof *h.names);
    h.tcol = calloc(h.n, sizeof *h.tcol);
    h.kind = calloc(h.n, sizeof *h.kind);
    if (!h.names || !h.tcol || !h.kind) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < h.n; i++) {
        const char *f = csv.fields[i];
        size_t len = csv.lens[i];
        while (len && (f[len - 1] == ' ')) len--;
        while (len && *f == ' ') f++, len--;
        if (len == 0) {
            st = pfi_errorf(err, PFI_EPARSE, "%s:%llu: header field %zu is empty", r->name,
                            (unsigned long long)csv.line, i + 1);
            goto out;
        }
        h.names[i] = strndup(f, len);
        if (!h.names[i]) {
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(h.names[j], h.names[i]) == 0) {
                st = pfi_errorf(err, PFI_EPARSE, "%s:%llu: duplicate column '%s'", r->name,
                                (unsigned long long)csv.line, h.names[i]);
                goto out;
            }
    }
    uint32_t file = pfi_table_add_file(t, r->name);
    int zeus = 1;
    for (int k = 0; k < 7; k++)
        if (hfind(&h, zeus_cols[k]) < 0) zeus = 0;
    if (zeus && hfind(&h, "cap_w") < 0) {
        char buf[64];
        const char *gm =
            o && o->gpu_model ? o->gpu_model : pfi_zeus_gpu_model(r->name, buf, sizeof buf);
        if (!gm) {
            st = pfi_errorf(err, PFI_EINVAL,
                            "%s: Zeus trace whose file name does not give the GPU model; "
                            "pass --gpu-model",
                            r->name);
            goto out;
        }
        st = read_zeus(t, &csv, &h, file, gm, err);
    } else {
        st = read_sweep(t, &csv, &h, file, err);
    }
out:
    hdr_free(&h);
    pfi_csv_dispose(&csv);
    return st;
}

pfi_status pfi_sweep_read(pfi_table *t, const char *path, const pfi_sweep_read_opts *o,
                          pfi_log *log, pfi_error *err)
{
    pfi_reader r;
    pfi_status st = pfi_reader_open(&r, path, o && o->max_record ? o->max_record : 0, err);
    if (st) return st;
    st = pfi_sweep_read_reader(t, &r, o, log, err);
    pfi_reader_close(&r);
    return st;
}
