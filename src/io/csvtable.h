/* csvtable.h — any CSV file as a pfi_table: a column is numeric when every
 * non-empty cell parses as a number, text otherwise. Used to read pfi's own
 * outputs back (the report reads the CSVs the run wrote, so every number it
 * shows comes from a file the run left). */
#ifndef PFI_CSVTABLE_H
#define PFI_CSVTABLE_H

#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

pfi_status pfi_csv_load(const char *path, pfi_table **out, pfi_error *err);
/* the first row whose text column `key` equals `value` (and, if key2 is not
 * NULL, key2 equals value2); -1 if none */
long pfi_table_find_row(const pfi_table *t, const char *key, const char *value, const char *key2,
                        const char *value2);
/* numeric value of column col in row (NaN if absent) */
double pfi_table_get(const pfi_table *t, long row, const char *col);

#ifdef __cplusplus
}
#endif
#endif
