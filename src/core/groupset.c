/* groupset.c — sweep groups with their targets (groupset.h). */
#include "groupset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

pfi_status pfi_groupset_build(pfi_table *t, pfi_groupset *s, pfi_error *err)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    pfi_status st = pfi_groups_build(t, &s->gs, err);
    if (st != PFI_OK) {
        pfi_table_free(t);
        s->t = NULL;
        return st;
    }
    size_t ng = s->gs.n;
    s->pfi = malloc(ng * sizeof *s->pfi);
    s->robust = malloc(ng * sizeof *s->robust);
    s->verdict = malloc(ng * sizeof *s->verdict);
    if (!s->pfi || !s->robust || !s->verdict) {
        pfi_groupset_dispose(s);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    pfi_robust_opts ro;
    pfi_robust_opts_default(&ro);
    for (size_t i = 0; i < ng; i++) {
        pfi_eq1_result r;
        pfi_eq1(&s->gs.g[i].curve, &r);
        s->pfi[i] = r.pfi;
        pfi_robust_result rr;
        pfi_robust(&s->gs.g[i].curve, &ro, &rr);
        s->verdict[i] = rr.verdict;
        s->robust[i] =
            (rr.verdict == PFI_VERDICT_OK || rr.verdict == PFI_VERDICT_NOISY) ? rr.pfi_robust : NAN;
    }
    return PFI_OK;
}

void pfi_groupset_dispose(pfi_groupset *s)
{
    pfi_groups_dispose(&s->gs);
    pfi_table_free(s->t);
    free(s->pfi);
    free(s->robust);
    free(s->verdict);
    memset(s, 0, sizeof *s);
}

const char *pfi_groupset_attr(const pfi_groupset *s, const pfi_group *g, const char *col)
{
    if (!strcmp(col, "gpu_model")) return g->gpu_model;
    if (!strcmp(col, "group")) return g->name;
    if (!strcmp(col, "arch")) return g->arch;
    if (!strcmp(col, "task")) return g->task;
    if (!strcmp(col, "model")) return g->model;
    if (!strcmp(col, "split")) return g->split;
    return pfi_group_text(s->t, g, col);
}

const double *pfi_groupset_target(const pfi_groupset *s, const char *name)
{
    if (!strcmp(name, "pfi")) return s->pfi;
    if (!strcmp(name, "robust")) return s->robust;
    return NULL;
}
