/* rows.c — CSV / JSON / terminal-table rendering of command output. */
#include "rows.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "pfi/csv.h"
#include "vec.h"

/* One 8-byte cell: a double (NaN = missing), an integer (INT64_MIN =
 * missing) or an offset into the text arena (0 = empty string). */
typedef union cell {
    double num;
    long long i;
    size_t text;
} cell;

/* Out of memory while filling (the callers do not check each call) makes
 * the write an error: a row that could not be added is the spare row
 * (cells always has room for nrows + 1 rows), which is never written. */
struct pfi_rows {
    size_t ncols, nrows, cap; /* cap: rows */
    int oom;
    char **names;
    pfi_celltype *types;
    char **tfmt;
    cell *cells;
    char *arena; /* NUL-terminated strings; offset 0 holds "" */
    size_t alen, acap;
};

#define INT_MISSING LLONG_MIN

int pfi_format_parse(const char *s, pfi_format *out)
{
    if (strcmp(s, "csv") == 0) *out = PFI_FMT_CSV;
    else if (strcmp(s, "json") == 0) *out = PFI_FMT_JSON;
    else if (strcmp(s, "table") == 0) *out = PFI_FMT_TABLE;
    else return -1;
    return 0;
}

pfi_rows *pfi_rows_new(size_t ncols, const char *const *names, const pfi_celltype *types)
{
    pfi_rows *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->ncols = ncols;
    r->names = calloc(ncols, sizeof *r->names);
    r->types = calloc(ncols, sizeof *r->types);
    r->tfmt = calloc(ncols, sizeof *r->tfmt);
    r->acap = 4096;
    r->arena = malloc(r->acap);
    if (r->arena) {
        r->arena[0] = '\0';
        r->alen = 1;
    }
    if (!r->names || !r->types || !r->tfmt || !r->arena ||
        pfi_vec_reserve(&r->cells, &r->cap, 2, ncols * sizeof *r->cells, NULL)) {
        pfi_rows_free(r);
        return NULL;
    }
    for (size_t c = 0; c < ncols; c++) {
        r->names[c] = strdup(names[c]);
        r->types[c] = types ? types[c] : PFI_CELL_NUM;
        if (!r->names[c]) {
            pfi_rows_free(r);
            return NULL;
        }
    }
    return r;
}

void pfi_rows_free(pfi_rows *r)
{
    if (!r) return;
    for (size_t c = 0; c < r->ncols; c++) {
        if (r->names) free(r->names[c]);
        if (r->tfmt) free(r->tfmt[c]);
    }
    free(r->names);
    free(r->types);
    free(r->tfmt);
    free(r->cells);
    free(r->arena);
    free(r);
}

void pfi_rows_table_fmt(pfi_rows *r, size_t col, const char *f)
{
    char *d = strdup(f);
    if (!d) {
        r->oom = 1;
        return;
    }
    free(r->tfmt[col]);
    r->tfmt[col] = d;
}

size_t pfi_rows_add(pfi_rows *r)
{
    /* a row of ncols cells is one element; one spare row stays */
    int full = r->nrows == SIZE_MAX - 1 ||
               pfi_vec_reserve(&r->cells, &r->cap, r->nrows + 2, r->ncols * sizeof *r->cells, NULL);
    cell *row = &r->cells[r->nrows * r->ncols];
    if (full) { /* the spare row takes what the caller writes */
        r->oom = 1;
        return r->nrows;
    }
    for (size_t c = 0; c < r->ncols; c++) {
        if (r->types[c] == PFI_CELL_NUM) row[c].num = NAN;
        else if (r->types[c] == PFI_CELL_INT) row[c].i = INT_MISSING;
        else row[c].text = 0;
    }
    return r->nrows++;
}

void pfi_rows_num(pfi_rows *r, size_t row, size_t col, double v)
{
    r->cells[row * r->ncols + col].num = v;
}

void pfi_rows_int(pfi_rows *r, size_t row, size_t col, long long v)
{
    r->cells[row * r->ncols + col].i = v;
}

int pfi_rows_text(pfi_rows *r, size_t row, size_t col, const char *s)
{
    cell *c = &r->cells[row * r->ncols + col];
    size_t n = s ? strlen(s) : 0;
    if (n == 0) {
        c->text = 0;
        return 0;
    }
    if (n > SIZE_MAX - 1 - r->alen || PFI_VEC_RESERVE(r->arena, r->acap, r->alen + n + 1, NULL)) {
        r->oom = 1;
        c->text = 0;
        return -1;
    }
    memcpy(r->arena + r->alen, s, n + 1);
    c->text = r->alen;
    r->alen += n + 1;
    return 0;
}

size_t pfi_rows_count(const pfi_rows *r)
{
    return r->nrows;
}
size_t pfi_rows_ncols(const pfi_rows *r)
{
    return r->ncols;
}

long pfi_rows_col(const pfi_rows *r, const char *name)
{
    for (size_t c = 0; c < r->ncols; c++)
        if (strcmp(r->names[c], name) == 0) return (long)c;
    return -1;
}

double pfi_rows_get_num(const pfi_rows *r, size_t row, size_t col)
{
    const cell *c = &r->cells[row * r->ncols + col];
    if (r->types[col] == PFI_CELL_INT) return c->i == INT_MISSING ? NAN : (double)c->i;
    if (r->types[col] == PFI_CELL_TEXT) return NAN;
    return c->num;
}

const char *pfi_rows_get_text(const pfi_rows *r, size_t row, size_t col)
{
    if (r->types[col] != PFI_CELL_TEXT) return "";
    return r->arena + r->cells[row * r->ncols + col].text;
}

/* Exactly printf's %.10g (NaN as the empty string), fast for the common
 * range 1e-4 <= |v| < 1e9: x = |v| * 10^(9-e) with an exact power of ten is
 * the 10-digit significand, off from the exact product by at most half an ulp
 * of x (< 1e-6). Rounding x to an integer is then exact unless its fraction
 * is within that error of one half (a tie, or a value within an ulp of one);
 * those values, and every other magnitude (0, subnormals, large values,
 * infinities), go to snprintf. tests/io/test_rows.c checks it against
 * snprintf on random and boundary values. */
void pfi_fmt_num(char *buf, size_t n, double v)
{
    static const double p10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6, 1e7,
                                 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14};
    if (isnan(v)) {
        buf[0] = '\0';
        return;
    }
    double a = fabs(v);
    if (n < 32 || !(a >= 1e-4 && a < 1e9)) {
        snprintf(buf, n, "%.10g", v);
        return;
    }
    int e = (int)floor(log10(a)); /* may be off by one next to a power of ten */
    if (e < -4) e = -4;
    if (e > 8) e = 8;
    double x = a * p10[9 - e];
    if (x < 1e9 && e > -4) x = a * p10[9 - --e];
    else if (x >= 1e10 && e < 8) x = a * p10[9 - ++e];
    double ip = floor(x), frac = x - ip;
    if (x < 1e9 || x >= 1e10 || fabs(frac - 0.5) < 4e-6) {
        snprintf(buf, n, "%.10g", v);
        return;
    }
    long long m = (long long)ip + (frac > 0.5);
    if (m == 10000000000LL) { /* rounded up to the next decade */
        m = 1000000000LL;
        e++;
    }
    char dig[10];
    for (int i = 9; i >= 0; i--) {
        dig[i] = (char)('0' + m % 10);
        m /= 10;
    }
    char *o = buf;
    if (v < 0) *o++ = '-';
    int int_digits = e + 1, last = 9; /* strip trailing zeros after the point */
    while (last >= int_digits && last > 0 && dig[last] == '0') last--;
    if (int_digits <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -int_digits; i++) *o++ = '0';
        for (int i = 0; i <= last; i++) *o++ = dig[i];
    } else {
        for (int i = 0; i < int_digits; i++) *o++ = dig[i];
        if (last >= int_digits) {
            *o++ = '.';
            for (int i = int_digits; i <= last; i++) *o++ = dig[i];
        }
    }
    *o = '\0';
}

static void cell_str(const pfi_rows *r, size_t row, size_t col, char *buf, size_t n, int table)
{
    const cell *c = &r->cells[row * r->ncols + col];
    switch (r->types[col]) {
    case PFI_CELL_TEXT: snprintf(buf, n, "%s", r->arena + c->text); break;
    case PFI_CELL_INT:
        if (c->i != INT_MISSING) snprintf(buf, n, "%lld", c->i);
        else buf[0] = '\0';
        break;
    case PFI_CELL_NUM:
        if (table) {
            if (isnan(c->num)) snprintf(buf, n, "-");
            else if (isinf(c->num)) snprintf(buf, n, "%s", c->num > 0 ? "inf" : "-inf");
            else snprintf(buf, n, r->tfmt[col] ? r->tfmt[col] : "%.4g", c->num);
        } else {
            pfi_fmt_num(buf, n, c->num);
        }
        break;
    }
}

static pfi_status write_json(const pfi_rows *r, FILE *f, pfi_error *err)
{
    json_t *arr = json_array();
    if (!arr) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->nrows; i++) {
        json_t *o = json_object();
        for (size_t c = 0; c < r->ncols; c++) {
            const cell *x = &r->cells[i * r->ncols + c];
            json_t *v;
            if (r->types[c] == PFI_CELL_TEXT) v = json_string(r->arena + x->text);
            else if (r->types[c] == PFI_CELL_INT)
                v = x->i != INT_MISSING ? json_integer(x->i) : json_null();
            else v = isfinite(x->num) ? json_real(x->num) : json_null();
            json_object_set_new(o, r->names[c], v);
        }
        json_array_append_new(arr, o);
    }
    int rc = json_dumpf(arr, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    json_decref(arr);
    return rc ? pfi_errorf(err, PFI_EIO, "JSON write failed") : PFI_OK;
}

pfi_status pfi_rows_write(const pfi_rows *r, pfi_format fmt, FILE *f, pfi_error *err)
{
    char buf[512];
    if (r->oom)
        return pfi_errorf(err, PFI_ENOMEM, "out of memory (command output of %zu rows)", r->nrows);
    if (fmt == PFI_FMT_JSON) return write_json(r, f, err);
    if (fmt == PFI_FMT_CSV) {
        for (size_t c = 0; c < r->ncols; c++) {
            if (c) fputc(',', f);
            pfi_csv_write_text(f, r->names[c]);
        }
        fputc('\n', f);
        for (size_t i = 0; i < r->nrows; i++) {
            for (size_t c = 0; c < r->ncols; c++) {
                if (c) fputc(',', f);
                const cell *x = &r->cells[i * r->ncols + c];
                if (r->types[c] == PFI_CELL_TEXT) {
                    pfi_csv_write_text(f, r->arena + x->text);
                } else {
                    cell_str(r, i, c, buf, sizeof buf, 0);
                    fwrite(buf, 1, strlen(buf), f);
                }
            }
            fputc('\n', f);
        }
    } else {
        size_t *w = calloc(r->ncols, sizeof *w);
        if (!w) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        for (size_t c = 0; c < r->ncols; c++) w[c] = strlen(r->names[c]);
        for (size_t i = 0; i < r->nrows; i++)
            for (size_t c = 0; c < r->ncols; c++) {
                cell_str(r, i, c, buf, sizeof buf, 1);
                size_t l = strlen(buf);
                if (l > w[c]) w[c] = l;
            }
        for (size_t c = 0; c < r->ncols; c++)
            fprintf(f, "%-*s%s", (int)w[c], r->names[c], c + 1 < r->ncols ? "  " : "\n");
        for (size_t i = 0; i < r->nrows; i++)
            for (size_t c = 0; c < r->ncols; c++) {
                cell_str(r, i, c, buf, sizeof buf, 1);
                if (r->types[c] == PFI_CELL_TEXT)
                    fprintf(f, "%-*s%s", (int)w[c], buf, c + 1 < r->ncols ? "  " : "\n");
                else fprintf(f, "%*s%s", (int)w[c], buf, c + 1 < r->ncols ? "  " : "\n");
            }
        free(w);
    }
    return ferror(f) ? pfi_errorf(err, PFI_EIO, "write failed") : PFI_OK;
}

pfi_status pfi_rows_save(const pfi_rows *r, pfi_format fmt, const char *path, pfi_error *err)
{
    pfi_outfile o;
    pfi_status st = pfi_out_open(&o, path, err);
    if (st) return st;
    st = pfi_rows_write(r, fmt, o.f, err);
    if (st) {
        pfi_out_abort(&o);
        return st;
    }
    return pfi_out_commit(&o, err);
}
