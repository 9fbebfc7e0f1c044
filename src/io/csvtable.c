/* csvtable.c — generic CSV files as tables (see csvtable.h). Two passes
 * over the parsed cells: decide each column's type, then fill. */
#include "csvtable.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"
#include "pfi/csv.h"
#include "vec.h"

typedef struct cellbuf {
    char **cells; /* nrows x ncols, owned */
    size_t n, cap;
} cellbuf;

/* the record's fields, copied, appended to b */
static pfi_status push_record(cellbuf *b, const pfi_csv *c, pfi_error *err)
{
    if (PFI_VEC_RESERVE(b->cells, b->cap, b->n + c->nfields, NULL))
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->nfields; i++) {
        char *d = strdup(c->fields[i]);
        if (!d) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        b->cells[b->n++] = d;
    }
    return PFI_OK;
}

static void cellbuf_free(cellbuf *b)
{
    for (size_t i = 0; i < b->n; i++) free(b->cells[i]);
    free(b->cells);
}

pfi_status pfi_csv_load(const char *path, pfi_table **out, pfi_error *err)
{
    *out = NULL;
    pfi_reader r;
    pfi_status st = pfi_reader_open(&r, path, 0, err);
    if (st) return st;
    pfi_csv c;
    pfi_csv_init(&c, &r);
    int rc = pfi_csv_next(&c, err);
    cellbuf b = {0}, hb = {0};
    size_t nh = 0;
    if (rc <= 0) {
        st = rc == 0 ? pfi_errorf(err, PFI_EINVAL, "%s: empty file", path)
                     : (err ? err->code : PFI_EPARSE);
        goto out;
    }
    nh = c.nfields;
    if ((st = push_record(&hb, &c, err))) goto out;
    char **hdr = hb.cells;
    while ((rc = pfi_csv_next(&c, err)) == 1) {
        if (c.nfields != nh) {
            st = pfi_errorf(err, PFI_EPARSE, "%s:%llu: expected %zu fields, found %zu", path,
                            (unsigned long long)c.line, nh, c.nfields);
            goto out;
        }
        if ((st = push_record(&b, &c, err))) goto out;
    }
    if (rc < 0) {
        st = err ? err->code : PFI_EPARSE;
        goto out;
    }
    size_t nrows = nh ? b.n / nh : 0;
    pfi_table *t = pfi_table_new();
    int *num = calloc(nh ? nh : 1, sizeof *num);
    if (!t || !num) {
        pfi_table_free(t);
        free(num);
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    uint32_t file = pfi_table_add_file(t, path);
    for (size_t i = 0; i < nh; i++) {
        num[i] = 1;
        for (size_t r2 = 0; r2 < nrows && num[i]; r2++) {
            const char *s = b.cells[r2 * nh + i];
            double v;
            int e = pfi_parse_double(s, strlen(s), &v);
            if (e == PFI_NUM_SYNTAX && strcmp(s, "inf") && strcmp(s, "-inf")) num[i] = 0;
        }
        if (pfi_table_add_col(t, hdr[i], num[i] ? PFI_COL_NUM : PFI_COL_TEXT, err) < 0) {
            st = err ? err->code : PFI_EINVAL;
            free(num);
            pfi_table_free(t);
            goto out;
        }
    }
    for (size_t r2 = 0; r2 < nrows && !st; r2++) {
        size_t row;
        if ((st = pfi_table_add_row(t, file, r2 + 2, &row, err))) break;
        for (size_t i = 0; i < nh && !st; i++) {
            const char *s = b.cells[r2 * nh + i];
            if (num[i]) {
                double v = NAN;
                if (!strcmp(s, "inf")) v = INFINITY;
                else if (!strcmp(s, "-inf")) v = -INFINITY;
                else pfi_parse_double(s, strlen(s), &v);
                pfi_table_set_num(t, i, row, v);
            } else {
                st = pfi_table_set_text(t, i, row, s, err);
            }
        }
    }
    free(num);
    if (st) pfi_table_free(t);
    else *out = t;
out:
    cellbuf_free(&b);
    cellbuf_free(&hb);
    pfi_csv_dispose(&c);
    pfi_reader_close(&r);
    return st;
}

long pfi_table_find_row(const pfi_table *t, const char *key, const char *value, const char *key2,
                        const char *value2)
{
    long c1 = pfi_table_col(t, key), c2 = key2 ? pfi_table_col(t, key2) : -1;
    if (c1 < 0 || (key2 && c2 < 0)) return -1;
    for (size_t r = 0; r < pfi_table_nrows(t); r++) {
        int m1 = pfi_table_coltype(t, (size_t)c1) == PFI_COL_TEXT
                     ? !strcmp(pfi_table_text(t, (size_t)c1, r), value)
                     : pfi_table_num(t, (size_t)c1, r) == atof(value);
        if (!m1) continue;
        if (key2) {
            int m2 = pfi_table_coltype(t, (size_t)c2) == PFI_COL_TEXT
                         ? !strcmp(pfi_table_text(t, (size_t)c2, r), value2)
                         : fabs(pfi_table_num(t, (size_t)c2, r) - atof(value2)) < 1e-9;
            if (!m2) continue;
        }
        return (long)r;
    }
    return -1;
}

double pfi_table_get(const pfi_table *t, long row, const char *col)
{
    long c = pfi_table_col(t, col);
    if (row < 0 || c < 0 || pfi_table_coltype(t, (size_t)c) != PFI_COL_NUM) return NAN;
    return pfi_table_num(t, (size_t)c, (size_t)row);
}
