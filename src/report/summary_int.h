/* summary_int.h — internals of the paper-vs-pfi summary, shared by summary.c
 * (walks the row table data/report/summary_rows.csv), summary_ref.c (cell
 * references FILE|KEY=VALUE[&KEY=VALUE...]|COLUMN and the CSV files they
 * name) and summary_compute.c (the rows whose pfi value is computed from
 * several cells rather than looked up). Not installed. */
#ifndef PFI_SUMMARY_INT_H
#define PFI_SUMMARY_INT_H

#include <stddef.h>

#include "csvtable.h"
#include "report.h"

enum { SUM_MAX_KEYS = 8, SUM_MAX_COLS = 4, SUM_MAX_TABLES = 48 };

/* where a referenced CSV file lives */
typedef enum sum_dir {
    SUM_RUN,   /* the run's outputs: OUTDIR/data/FILE */
    SUM_PAPER, /* the paper's values: DATADIR/paper/FILE */
    SUM_RECON  /* the reconstruction's spec: DATADIR/reconstruction/FILE */
} sum_dir;

typedef struct sum_ctx {
    const char *outdir; /* NULL: resolve the paper's values only */
    const char *datadir;
    char rows_path[4200]; /* the row table; line and field say where an error is */
    unsigned long line;
    const char *field;
    struct {
        char key[96];
        pfi_table *t;
    } tabs[SUM_MAX_TABLES]; /* every CSV file read once */
    int ntabs;
    pfi_error *err;
} sum_ctx;

/* A reference FILE|KEYS|COLUMNS, split in place. KEYS is KEY=VALUE joined by
 * '&' (a value may itself hold '='); COLUMNS is one column or several joined
 * by '+' (their sum). Computed rows may name several files (FILE,FILE),
 * several values (KEY=A,B), free text instead of keys, or an aggregate
 * instead of a column; each computation checks what it reads. */
typedef struct sum_ref {
    char text[320]; /* the reference as written */
    char buf[320];
    char *file, *keys, *col;
    char *k[SUM_MAX_KEYS], *v[SUM_MAX_KEYS];
    int nk; /* 0 when KEYS is not KEY=VALUE pairs */
    char *cols[SUM_MAX_COLS];
    int ncols;
} sum_ref;

/* One-line error "ROWS:LINE: FIELD: message" (the row table's file, line and field). */
pfi_status sum_fail(sum_ctx *x, pfi_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The table FILE in d (read on first use). */
pfi_status sum_table(sum_ctx *x, sum_dir d, const char *file, pfi_table **t);
void sum_tables_free(sum_ctx *x);
/* strict: KEYS must be KEY=VALUE pairs (a lookup); otherwise they may be anything */
pfi_status sum_ref_parse(sum_ctx *x, const char *text, int strict, sum_ref *r);
/* the columns of r's keys in t (an error names a missing one) */
pfi_status sum_key_cols(sum_ctx *x, const pfi_table *t, const sum_ref *r, long *kc);
/* whether row of t has every key of r (kc from sum_key_cols); numbers match within 1e-9 */
int sum_row_has(const pfi_table *t, const long *kc, const sum_ref *r, size_t row);
/* The value r names in d: the one row matching every key, the sum of its
 * columns. No matching row: NaN when missing_ok, else an error; several: an error. */
pfi_status sum_lookup(sum_ctx *x, sum_dir d, const sum_ref *r, int missing_ok, double *v);
/* the same for a reference built as text */
pfi_status sum_lookup_text(sum_ctx *x, sum_dir d, const char *text, int missing_ok, double *v);
/* a text cell ("" for a column that is not text) */
const char *sum_text(const pfi_table *t, long col, size_t row);
/* column index of name in t, or an error naming file */
pfi_status sum_col(sum_ctx *x, const pfi_table *t, const char *file, const char *name, long *col);

/* A computed pfi value: reads the run's files (and bundled data) named by
 * its reference; may write a note. */
typedef pfi_status (*sum_compute_fn)(sum_ctx *x, const sum_ref *src, double *v, char *note,
                                     size_t n);
/* the computation called name, or NULL */
sum_compute_fn sum_compute_find(const char *name);

#endif
