/* fuzz_csv.c — libFuzzer target for the CSV reader and the sweep-table /
 * Zeus reader on top of it, followed by grouping and the index, so malformed
 * input is exercised all the way through. */
#include <stdint.h>
#include <stdlib.h>

#include "pfi/groups.h"
#include "pfi/index.h"
#include "pfi/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_table *t = pfi_table_new();
    if (!t) return 0;
    pfi_reader r;
    pfi_reader_init_mem(&r, data, size, "fuzz.csv", 4096);
    pfi_error err;
    pfi_sweep_read_opts o = {"FUZZ", 0};
    if (pfi_sweep_read_reader(t, &r, &o, NULL, &err) == PFI_OK) {
        pfi_groups gs;
        if (pfi_groups_build(t, &gs, &err) == PFI_OK) {
            pfi_index_opts io;
            pfi_index_opts_default(&io);
            io.ci.resamples = 50;
            pfi_index_row *rows = calloc(gs.n, sizeof *rows);
            if (rows && pfi_index_run(&gs, &io, rows, NULL, &err) == PFI_OK)
                pfi_index_rows_dispose(rows, gs.n);
            free(rows);
            pfi_groups_dispose(&gs);
        }
    }
    pfi_reader_close(&r);
    pfi_table_free(t);
    return 0;
}
