/* summary_ref.c — cell references of the summary's row table (see
 * summary_int.h): parsing FILE|KEY=VALUE[&...]|COLUMN[+COLUMN], reading the
 * files they name once each, and finding the one row and the value. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "num.h"
#include "summary_int.h"

pfi_status sum_fail(sum_ctx *x, pfi_status code, const char *fmt, ...)
{
    char msg[PFI_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pfi_errorf(x->err, code, "%s:%lu: %s: %s", x->rows_path, x->line,
                      x->field ? x->field : "row", msg);
}

pfi_status sum_table(sum_ctx *x, sum_dir d, const char *file, pfi_table **t)
{
    static const char *const sub[] = {"data", "paper", "reconstruction"};
    if (!file[0] || strchr(file, '/') || !strcmp(file, "..") || strlen(file) > 64)
        return sum_fail(x, PFI_EINVAL, "'%s' is not a file name", file);
    char key[96];
    snprintf(key, sizeof key, "%s/%s", sub[d], file);
    for (int i = 0; i < x->ntabs; i++)
        if (!strcmp(x->tabs[i].key, key)) {
            *t = x->tabs[i].t;
            return PFI_OK;
        }
    if (x->ntabs == SUM_MAX_TABLES)
        return sum_fail(x, PFI_ENOMEM, "more than %d files", SUM_MAX_TABLES);
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", d == SUM_RUN ? x->outdir : x->datadir, key);
    pfi_error e;
    if (pfi_csv_load(path, t, &e) != PFI_OK) return sum_fail(x, e.code, "%s", e.msg);
    snprintf(x->tabs[x->ntabs].key, sizeof x->tabs[0].key, "%s", key);
    x->tabs[x->ntabs++].t = *t;
    return PFI_OK;
}

void sum_tables_free(sum_ctx *x)
{
    for (int i = 0; i < x->ntabs; i++) pfi_table_free(x->tabs[i].t);
    x->ntabs = 0;
}

/* KEYS into k/v: 0, or -1 when a part is not KEY=VALUE */
static int split_keys(sum_ref *r)
{
    r->nk = 0;
    if (!r->keys[0]) return 0;
    for (char *p = r->keys; p;) {
        char *amp = strchr(p, '&');
        if (amp) *amp = '\0';
        char *eq = strchr(p, '=');
        if (!eq || eq == p || r->nk == SUM_MAX_KEYS) return -1;
        *eq = '\0';
        r->k[r->nk] = p;
        r->v[r->nk++] = eq + 1;
        p = amp ? amp + 1 : NULL;
    }
    return 0;
}

pfi_status sum_ref_parse(sum_ctx *x, const char *text, int strict, sum_ref *r)
{
    memset(r, 0, sizeof *r);
    if (strlen(text) >= sizeof r->buf)
        return sum_fail(x, PFI_EINVAL, "reference longer than %zu characters", sizeof r->buf - 1);
    snprintf(r->text, sizeof r->text, "%s", text);
    snprintf(r->buf, sizeof r->buf, "%s", text);
    char *b1 = strchr(r->buf, '|'), *b2 = b1 ? strchr(b1 + 1, '|') : NULL;
    if (!b1 || !b2 || strchr(b2 + 1, '|') || b1 == r->buf || !b2[1])
        return sum_fail(x, PFI_EPARSE, "'%s' is not FILE|KEY=VALUE[&KEY=VALUE...]|COLUMN", text);
    *b1 = *b2 = '\0';
    r->file = r->buf;
    r->keys = b1 + 1;
    r->col = b2 + 1;
    char keys[320];
    snprintf(keys, sizeof keys, "%s", r->keys);
    if (split_keys(r) != 0) {
        if (strict)
            return sum_fail(x, PFI_EPARSE, "'%s': '%s' is not KEY=VALUE[&KEY=VALUE...]", text,
                            keys);
        snprintf(r->keys, strlen(keys) + 1, "%s", keys); /* free text: keep it whole */
        r->nk = 0;
    }
    for (char *p = r->col; p && r->ncols < SUM_MAX_COLS;) {
        char *plus = strict ? strchr(p, '+') : NULL;
        if (plus) *plus = '\0';
        if (!*p) return sum_fail(x, PFI_EPARSE, "'%s': empty column name", text);
        r->cols[r->ncols++] = p;
        p = plus ? plus + 1 : NULL;
    }
    return PFI_OK;
}

pfi_status sum_col(sum_ctx *x, const pfi_table *t, const char *file, const char *name, long *col)
{
    *col = pfi_table_col(t, name);
    if (*col < 0) return sum_fail(x, PFI_ENOTFOUND, "%s has no column '%s'", file, name);
    return PFI_OK;
}

pfi_status sum_key_cols(sum_ctx *x, const pfi_table *t, const sum_ref *r, long *kc)
{
    for (int i = 0; i < r->nk; i++) {
        pfi_status st = sum_col(x, t, r->file, r->k[i], &kc[i]);
        if (st) return st;
    }
    return PFI_OK;
}

int sum_row_has(const pfi_table *t, const long *kc, const sum_ref *r, size_t row)
{
    for (int i = 0; i < r->nk; i++) {
        if (pfi_table_coltype(t, (size_t)kc[i]) == PFI_COL_TEXT) {
            if (strcmp(pfi_table_text(t, (size_t)kc[i], row), r->v[i])) return 0;
            continue;
        }
        double want;
        if (pfi_parse_double(r->v[i], strlen(r->v[i]), &want) != PFI_NUM_OK) return 0;
        if (!(fabs(pfi_table_num(t, (size_t)kc[i], row) - want) < 1e-9)) return 0;
    }
    return 1;
}

pfi_status sum_lookup(sum_ctx *x, sum_dir d, const sum_ref *r, int missing_ok, double *v)
{
    *v = NAN;
    pfi_table *t;
    long kc[SUM_MAX_KEYS], cc[SUM_MAX_COLS];
    pfi_status st = sum_table(x, d, r->file, &t);
    if (!st) st = sum_key_cols(x, t, r, kc);
    for (int c = 0; !st && c < r->ncols; c++) st = sum_col(x, t, r->file, r->cols[c], &cc[c]);
    if (st) return st;
    long row = -1;
    size_t n = 0;
    for (size_t i = 0; i < pfi_table_nrows(t); i++)
        if (sum_row_has(t, kc, r, i) && n++ == 0) row = (long)i;
    const char *keys = strchr(r->text, '|') + 1;
    int klen = (int)(strchr(keys, '|') - keys);
    if (n > 1) return sum_fail(x, PFI_EINVAL, "%s: %.*s matches %zu rows", r->file, klen, keys, n);
    if (n == 0)
        return missing_ok ? PFI_OK
                          : sum_fail(x, PFI_ENOTFOUND, "%s has no row %.*s", r->file, klen, keys);
    for (int c = 0; c < r->ncols; c++) {
        double cv = pfi_table_get(t, row, r->cols[c]);
        *v = c ? *v + cv : cv;
    }
    return PFI_OK;
}

pfi_status sum_lookup_text(sum_ctx *x, sum_dir d, const char *text, int missing_ok, double *v)
{
    sum_ref r;
    pfi_status st = sum_ref_parse(x, text, 1, &r);
    return st ? st : sum_lookup(x, d, &r, missing_ok, v);
}

const char *sum_text(const pfi_table *t, long col, size_t row)
{
    return pfi_table_coltype(t, (size_t)col) == PFI_COL_TEXT ? pfi_table_text(t, (size_t)col, row)
                                                             : "";
}
