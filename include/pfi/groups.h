/* groups.h — sweep groups: the rows of a sweep table grouped by
 * (gpu_model, group), repeats at one cap averaged into a curve point.
 *
 * Repeats: rows with the same (gpu_model, group, cap_w) are averaged; the
 * point's SEM is the larger of the between-run standard error (sample SD /
 * sqrt(n)) and the propagated within-run SEM (sqrt(sum sem_i^2)/n). */
#ifndef PFI_GROUPS_H
#define PFI_GROUPS_H

#include "pfi/api.h"
#include "pfi/curve.h"
#include "pfi/status.h"
#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_group {
    const char *gpu_model, *name;            /* owned by the table */
    const char *arch, *task, *model, *split; /* "" when absent */
    int gpus;
    pfi_curve curve; /* repeats averaged, sorted by cap */
    size_t *rows;    /* the group's rows, sorted by cap */
    size_t nrows;
    size_t n_uncapped_rows; /* rows at the largest cap (the last ones in rows) */
} pfi_group;

typedef struct pfi_groups {
    size_t n;
    pfi_group *g;
    size_t *row_storage;
} pfi_groups;

/* Groups in order of first appearance. Errors: missing required columns,
 * gpus differing within a group (naming both lines). */
PFI_API pfi_status pfi_groups_build(const pfi_table *t, pfi_groups *out, pfi_error *err);
PFI_API void pfi_groups_dispose(pfi_groups *gs);

/* Mean of a numeric column over the group's uncapped rows (NaN if none has it). */
PFI_API double pfi_group_uncapped_mean(const pfi_table *t, const pfi_group *g, size_t col);
/* Text of a column on the group's first row ("" if absent). */
PFI_API const char *pfi_group_text(const pfi_table *t, const pfi_group *g, const char *col);
/* Stable key for seeding per-group random streams. */
PFI_API uint64_t pfi_group_key(const pfi_group *g);

#ifdef __cplusplus
}
#endif
#endif
