/* table.c — column store with an interned string pool (see table.h).
 * The pool is an open-addressing hash table of ids into an array of
 * NUL-terminated strings; ids are stable for the table's lifetime. */
#include "pfi/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "vec.h"

typedef struct column {
    char *name;
    pfi_coltype type;
    double *num;
    uint32_t *sid;
} column;

struct pfi_table {
    size_t nrows, rows_cap;
    size_t ncols, cols_cap;
    column *cols;
    uint32_t *row_file;
    uint64_t *row_line;
    /* string pool */
    char **strs;
    size_t nstrs, strs_cap;
    uint32_t *slots; /* 0 = empty, else id */
    size_t nslots;
    char **files;
    size_t nfiles, files_cap;
};

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

pfi_table *pfi_table_new(void)
{
    pfi_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->strs_cap = 64;
    t->strs = malloc(t->strs_cap * sizeof *t->strs);
    t->nslots = 128;
    t->slots = calloc(t->nslots, sizeof *t->slots);
    if (!t->strs || !t->slots) {
        pfi_table_free(t);
        return NULL;
    }
    t->strs[0] = dupn("", 0);
    if (!t->strs[0]) {
        pfi_table_free(t);
        return NULL;
    }
    t->nstrs = 1;
    return t;
}

void pfi_table_free(pfi_table *t)
{
    if (!t) return;
    for (size_t c = 0; c < t->ncols; c++) {
        free(t->cols[c].name);
        free(t->cols[c].num);
        free(t->cols[c].sid);
    }
    free(t->cols);
    free(t->row_file);
    free(t->row_line);
    if (t->strs)
        for (size_t i = 0; i < t->nstrs; i++) free(t->strs[i]);
    free(t->strs);
    free(t->slots);
    for (size_t i = 0; i < t->nfiles; i++) free(t->files[i]);
    free(t->files);
    free(t);
}

size_t pfi_table_nrows(const pfi_table *t)
{
    return t->nrows;
}
size_t pfi_table_ncols(const pfi_table *t)
{
    return t->ncols;
}
const char *pfi_table_colname(const pfi_table *t, size_t col)
{
    return t->cols[col].name;
}
pfi_coltype pfi_table_coltype(const pfi_table *t, size_t col)
{
    return t->cols[col].type;
}

long pfi_table_col(const pfi_table *t, const char *name)
{
    for (size_t c = 0; c < t->ncols; c++)
        if (strcmp(t->cols[c].name, name) == 0) return (long)c;
    return -1;
}

static int col_alloc(column *c, size_t cap, size_t nrows)
{
    if (c->type == PFI_COL_NUM) {
        if (PFI_VEC_RESIZE(c->num, cap, NULL)) return -1;
        for (size_t i = nrows; i < cap; i++) c->num[i] = NAN;
    } else {
        if (PFI_VEC_RESIZE(c->sid, cap, NULL)) return -1;
        for (size_t i = nrows; i < cap; i++) c->sid[i] = 0;
    }
    return 0;
}

long pfi_table_add_col(pfi_table *t, const char *name, pfi_coltype type, pfi_error *err)
{
    long have = pfi_table_col(t, name);
    if (have >= 0) {
        if (t->cols[have].type != type) {
            pfi_errorf(err, PFI_EINVAL, "column '%s' is both text and numeric", name);
            return -1;
        }
        return have;
    }
    if (PFI_VEC_RESERVE(t->cols, t->cols_cap, t->ncols + 1, NULL)) goto oom;
    column *c = &t->cols[t->ncols];
    memset(c, 0, sizeof *c);
    c->type = type;
    c->name = dupn(name, strlen(name));
    if (!c->name || col_alloc(c, t->rows_cap, 0) != 0) {
        free(c->name);
        free(c->num);
        free(c->sid);
        goto oom;
    }
    return (long)t->ncols++;
oom:
    pfi_errorf(err, PFI_ENOMEM, "out of memory adding column '%s'", name);
    return -1;
}

uint32_t pfi_table_add_file(pfi_table *t, const char *path)
{
    for (size_t i = 0; i < t->nfiles; i++)
        if (strcmp(t->files[i], path) == 0) return (uint32_t)i;
    if (PFI_VEC_RESERVE(t->files, t->files_cap, t->nfiles + 1, NULL)) return 0;
    t->files[t->nfiles] = dupn(path, strlen(path));
    if (!t->files[t->nfiles]) return 0;
    return (uint32_t)t->nfiles++;
}

const char *pfi_table_file(const pfi_table *t, uint32_t id)
{
    return id < t->nfiles ? t->files[id] : "(unknown)";
}

pfi_status pfi_table_add_row(pfi_table *t, uint32_t file, uint64_t line, size_t *row,
                             pfi_error *err)
{
    if (t->nrows == t->rows_cap) { /* parallel arrays: one capacity */
        size_t nc = 0;
        int bad = pfi_vec_next_cap(t->rows_cap, t->nrows + 1, sizeof(uint64_t), &nc, NULL) ||
                  PFI_VEC_RESIZE(t->row_file, nc, NULL) || PFI_VEC_RESIZE(t->row_line, nc, NULL);
        for (size_t c = 0; !bad && c < t->ncols; c++)
            bad = col_alloc(&t->cols[c], nc, t->nrows) != 0;
        if (bad) return pfi_errorf(err, PFI_ENOMEM, "out of memory (%zu rows)", t->nrows);
        t->rows_cap = nc;
    }
    size_t r = t->nrows++;
    t->row_file[r] = file;
    t->row_line[r] = line;
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->cols[c].type == PFI_COL_NUM) t->cols[c].num[r] = NAN;
        else t->cols[c].sid[r] = 0;
    }
    *row = r;
    return PFI_OK;
}

void pfi_table_row_origin(const pfi_table *t, size_t row, const char **file, uint64_t *line)
{
    if (file) *file = pfi_table_file(t, t->row_file[row]);
    if (line) *line = t->row_line[row];
}

void pfi_table_set_num(pfi_table *t, size_t col, size_t row, double v)
{
    t->cols[col].num[row] = v;
}
double pfi_table_num(const pfi_table *t, size_t col, size_t row)
{
    return t->cols[col].num[row];
}
const double *pfi_table_num_col(const pfi_table *t, size_t col)
{
    return t->cols[col].num;
}

static int pool_grow(pfi_table *t)
{
    size_t ns = t->nslots * 2;
    uint32_t *s = calloc(ns, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < t->nslots; i++) {
        uint32_t id = t->slots[i];
        if (!id) continue;
        uint64_t h = pfi_hash_str(t->strs[id], 0);
        size_t j = h & (ns - 1);
        while (s[j]) j = (j + 1) & (ns - 1);
        s[j] = id;
    }
    free(t->slots);
    t->slots = s;
    t->nslots = ns;
    return 0;
}

uint32_t pfi_table_intern(pfi_table *t, const char *s, size_t len)
{
    if (len == 0) return 0;
    uint64_t h = pfi_hash_bytes(s, len, 0);
    size_t j = h & (t->nslots - 1);
    while (t->slots[j]) {
        const char *c = t->strs[t->slots[j]];
        if (strncmp(c, s, len) == 0 && c[len] == '\0') return t->slots[j];
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->nstrs >= UINT32_MAX - 1) return UINT32_MAX;
    if (PFI_VEC_RESERVE(t->strs, t->strs_cap, t->nstrs + 1, NULL)) return UINT32_MAX;
    char *d = dupn(s, len);
    if (!d) return UINT32_MAX;
    uint32_t id = (uint32_t)t->nstrs++;
    t->strs[id] = d;
    t->slots[j] = id;
    if (2 * t->nstrs > t->nslots && pool_grow(t) != 0) return UINT32_MAX;
    return id;
}

const char *pfi_table_str(const pfi_table *t, uint32_t id)
{
    return id < t->nstrs ? t->strs[id] : "";
}
void pfi_table_set_text_id(pfi_table *t, size_t col, size_t row, uint32_t id)
{
    t->cols[col].sid[row] = id;
}

pfi_status pfi_table_set_text(pfi_table *t, size_t col, size_t row, const char *s, pfi_error *err)
{
    uint32_t id = pfi_table_intern(t, s, strlen(s));
    if (id == UINT32_MAX) return pfi_errorf(err, PFI_ENOMEM, "out of memory interning text");
    t->cols[col].sid[row] = id;
    return PFI_OK;
}

uint32_t pfi_table_text_id(const pfi_table *t, size_t col, size_t row)
{
    return t->cols[col].sid[row];
}
const char *pfi_table_text(const pfi_table *t, size_t col, size_t row)
{
    return t->strs[t->cols[col].sid[row]];
}
