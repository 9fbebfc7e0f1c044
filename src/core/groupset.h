/* groupset.h — sweep groups with their targets, what stats, fit, predict,
 * allocate and simulate share: a sweep table grouped (groups.h), each
 * group's Eq. 1 PFI and robust PFI (NaN unless its verdict is ok or
 * noisy), and a group's text attributes by column name. Pure computation:
 * the caller reads the table (the CLI: cli_read_sweeps). */
#ifndef PFI_GROUPSET_H
#define PFI_GROUPSET_H

#include "pfi/groups.h"
#include "pfi/pfi.h"
#include "pfi/status.h"
#include "pfi/table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_groupset {
    pfi_table *t; /* owned */
    pfi_groups gs;
    double *pfi;    /* Eq. 1, per group */
    double *robust; /* robust PFI (NaN unless verdict ok/noisy) */
    pfi_verdict *verdict;
} pfi_groupset;

/* Group t and compute every group's targets. The set takes t (freed with
 * it, also when this fails). */
pfi_status pfi_groupset_build(pfi_table *t, pfi_groupset *s, pfi_error *err);
void pfi_groupset_dispose(pfi_groupset *s);
/* The group's value of a text attribute: gpu_model, group, arch, task,
 * model, split, or any text column of its first row ("" if none). */
const char *pfi_groupset_attr(const pfi_groupset *s, const pfi_group *g, const char *col);
/* The target by name: "pfi" (Eq. 1) or "robust". NULL on another name. */
const double *pfi_groupset_target(const pfi_groupset *s, const char *name);

#ifdef __cplusplus
}
#endif
#endif
