/* table_csv.h — writing a pfi_table (the column store of table.h) as CSV.
 * An io function, kept out of the core's table.c so that the core never
 * calls io; numbers go through the one CSV number writer, pfi_fmt_num
 * (rows.h: exactly %.10g, missing as empty). */
#ifndef PFI_TABLE_CSV_H
#define PFI_TABLE_CSV_H

#include <stdio.h>

#include "pfi/api.h"
#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Write as CSV (header + rows). Numbers as %.10g, missing (NaN) as empty;
 * text as RFC 4180 fields. */
PFI_API pfi_status pfi_table_write_csv(const pfi_table *t, FILE *f, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
