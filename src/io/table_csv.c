/* table_csv.c — a pfi_table as CSV (see table_csv.h): the table's own
 * accessors, pfi_csv_write_text for text and pfi_fmt_num for numbers. */
#include "pfi/table_csv.h"

#include <string.h>

#include "pfi/csv.h"
#include "rows.h"

pfi_status pfi_table_write_csv(const pfi_table *t, FILE *f, pfi_error *err)
{
    size_t ncols = pfi_table_ncols(t), nrows = pfi_table_nrows(t);
    for (size_t c = 0; c < ncols; c++) {
        if (c) fputc(',', f);
        pfi_csv_write_text(f, pfi_table_colname(t, c));
    }
    fputc('\n', f);
    char num[64];
    for (size_t r = 0; r < nrows; r++) {
        for (size_t c = 0; c < ncols; c++) {
            if (c) fputc(',', f);
            if (pfi_table_coltype(t, c) == PFI_COL_NUM) {
                pfi_fmt_num(num, sizeof num, pfi_table_num(t, c, r));
                fwrite(num, 1, strlen(num), f);
            } else {
                pfi_csv_write_text(f, pfi_table_text(t, c, r));
            }
        }
        fputc('\n', f);
    }
    if (ferror(f)) return pfi_errorf(err, PFI_EIO, "write failed");
    return PFI_OK;
}
