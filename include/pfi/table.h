/* table.h — a column store for the sweep table (and other tabular data).
 *
 * Columns are numeric (double, NaN = missing) or text (interned: each cell is
 * an id into the table's string pool; id 0 is the empty string = missing).
 * Interning keeps a million-row table small and makes grouping by text keys
 * a comparison of integers. Every row remembers the file and line it came
 * from, so later checks can name them in errors. */
#ifndef PFI_TABLE_H
#define PFI_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pfi/api.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_coltype { PFI_COL_TEXT = 0, PFI_COL_NUM = 1 } pfi_coltype;

typedef struct pfi_table pfi_table;

PFI_API pfi_table *pfi_table_new(void);
PFI_API void pfi_table_free(pfi_table *t);

PFI_API size_t pfi_table_nrows(const pfi_table *t);
PFI_API size_t pfi_table_ncols(const pfi_table *t);
PFI_API const char *pfi_table_colname(const pfi_table *t, size_t col);
PFI_API pfi_coltype pfi_table_coltype(const pfi_table *t, size_t col);
/* Index of the named column, or -1. */
PFI_API long pfi_table_col(const pfi_table *t, const char *name);
/* Add a column (existing rows get missing values); returns its index or -1
 * on allocation failure. If it exists with the same type, returns it; with
 * another type, -1 and an error. */
PFI_API long pfi_table_add_col(pfi_table *t, const char *name, pfi_coltype type, pfi_error *err);

/* Register a source file name; returns its id. */
PFI_API uint32_t pfi_table_add_file(pfi_table *t, const char *path);
PFI_API const char *pfi_table_file(const pfi_table *t, uint32_t id);

/* Append a row with all cells missing; returns PFI_OK and sets *row. */
PFI_API pfi_status pfi_table_add_row(pfi_table *t, uint32_t file, uint64_t line, size_t *row,
                                     pfi_error *err);
PFI_API void pfi_table_row_origin(const pfi_table *t, size_t row, const char **file,
                                  uint64_t *line);

PFI_API void pfi_table_set_num(pfi_table *t, size_t col, size_t row, double v);
PFI_API double pfi_table_num(const pfi_table *t, size_t col, size_t row);
PFI_API const double *pfi_table_num_col(const pfi_table *t, size_t col);

/* Text cells: intern returns the id of s (len bytes); 0 for the empty string,
 * UINT32_MAX on allocation failure. */
PFI_API uint32_t pfi_table_intern(pfi_table *t, const char *s, size_t len);
PFI_API const char *pfi_table_str(const pfi_table *t, uint32_t id);
PFI_API void pfi_table_set_text_id(pfi_table *t, size_t col, size_t row, uint32_t id);
PFI_API pfi_status pfi_table_set_text(pfi_table *t, size_t col, size_t row, const char *s,
                                      pfi_error *err);
PFI_API uint32_t pfi_table_text_id(const pfi_table *t, size_t col, size_t row);
PFI_API const char *pfi_table_text(const pfi_table *t, size_t col, size_t row);

/* Writing a table as CSV is io: pfi/table_csv.h. */

#ifdef __cplusplus
}
#endif
#endif
