/* rows.h — tabular command output in three renderings: CSV (stable,
 * documented columns), JSON (an array of objects; NaN and infinities become
 * null) and an aligned terminal table for people. Commands fill a pfi_rows
 * and choose the rendering with --format. */
#ifndef PFI_ROWS_H
#define PFI_ROWS_H

#include <stdio.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_format { PFI_FMT_CSV = 0, PFI_FMT_JSON, PFI_FMT_TABLE } pfi_format;
int pfi_format_parse(const char *s, pfi_format *out); /* 0 ok, -1 unknown */

typedef enum pfi_celltype { PFI_CELL_NUM = 0, PFI_CELL_INT, PFI_CELL_TEXT } pfi_celltype;

typedef struct pfi_rows pfi_rows;

pfi_rows *pfi_rows_new(size_t ncols, const char *const *names, const pfi_celltype *types);
void pfi_rows_free(pfi_rows *r);
/* Terminal-table number format for a column (default "%.4g"). */
void pfi_rows_table_fmt(pfi_rows *r, size_t col, const char *printf_fmt);
/* Append an empty row; returns its index. Out of memory here, in
 * pfi_rows_text or pfi_rows_table_fmt makes pfi_rows_write and
 * pfi_rows_save fail with PFI_ENOMEM (the index returned then is a spare
 * row that is never written), so callers need not check each call. */
size_t pfi_rows_add(pfi_rows *r);
void pfi_rows_num(pfi_rows *r, size_t row, size_t col, double v);
void pfi_rows_int(pfi_rows *r, size_t row, size_t col, long long v);
int pfi_rows_text(pfi_rows *r, size_t row, size_t col, const char *s);
size_t pfi_rows_count(const pfi_rows *r);
size_t pfi_rows_ncols(const pfi_rows *r);
long pfi_rows_col(const pfi_rows *r, const char *name);
double pfi_rows_get_num(const pfi_rows *r, size_t row, size_t col);
const char *pfi_rows_get_text(const pfi_rows *r, size_t row, size_t col);

pfi_status pfi_rows_write(const pfi_rows *r, pfi_format fmt, FILE *f, pfi_error *err);
/* Write to path atomically (NULL or "-" = stdout). */
pfi_status pfi_rows_save(const pfi_rows *r, pfi_format fmt, const char *path, pfi_error *err);

/* The one CSV number writer (rows, tables, the report's summary): exactly
 * printf's %.10g, with NaN (missing) as the empty string. */
void pfi_fmt_num(char *buf, size_t n, double v);

#ifdef __cplusplus
}
#endif
#endif
