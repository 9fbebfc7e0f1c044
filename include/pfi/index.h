/* index.h — `pfi index` as a library call: for every sweep group, Eq. 1,
 * the Appendix A variants, the Monte Carlo CI and the robust estimate, with
 * an optional sub-grid of caps. Shared by the CLI and `pfi reproduce`. */
#ifndef PFI_INDEX_H
#define PFI_INDEX_H

#include "pfi/api.h"
#include "pfi/groups.h"
#include "pfi/pfi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_index_opts {
    int want_ci;
    pfi_ci_opts ci;
    pfi_robust_opts robust;
    const double *caps_w; /* sub-grid, or NULL */
    size_t ncaps;
} pfi_index_opts;

PFI_API void pfi_index_opts_default(pfi_index_opts *o);

typedef struct pfi_index_row {
    const pfi_group *g;
    int skipped;     /* lacks a sub-grid cap */
    pfi_curve curve; /* the curve the numbers refer to (sub-grid if any) */
    pfi_eq1_result eq1;
    double area;
    int el_ok;
    pfi_elasticity_result el;
    pfi_ci_result ci;
    pfi_robust_result robust;
} pfi_index_row;

/* rows must hold gs->n entries; free them with pfi_index_rows_dispose. */
PFI_API pfi_status pfi_index_run(const pfi_groups *gs, const pfi_index_opts *o, pfi_index_row *rows,
                                 pfi_log *log, pfi_error *err);
PFI_API void pfi_index_rows_dispose(pfi_index_row *rows, size_t n);

#ifdef __cplusplus
}
#endif
#endif
