/* vec.c — growable arrays with checked sizes (vec.h). */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the largest block malloc may give: object sizes must fit in ptrdiff_t */
#define VEC_MAX_BYTES ((size_t)PTRDIFF_MAX)

static pfi_status too_big(size_t n, size_t elem_size, pfi_error *err)
{
    return pfi_errorf(err, PFI_ENOMEM,
                      "out of memory: %zu elements of %zu bytes do not fit in memory", n,
                      elem_size);
}

pfi_status pfi_vec_next_cap(size_t cap, size_t need, size_t elem_size, size_t *out, pfi_error *err)
{
    if (elem_size == 0) elem_size = 1;
    size_t max = VEC_MAX_BYTES / elem_size;
    if (need > max) return too_big(need, elem_size, err);
    size_t nc = cap < 16 ? 16 : cap;
    while (nc < need) nc = nc > max / 2 ? max : 2 * nc;
    if (nc > max) nc = max;
    *out = nc;
    return PFI_OK;
}

pfi_status pfi_vec_resize(void *pp, size_t n, size_t elem_size, pfi_error *err)
{
    if (elem_size == 0) elem_size = 1;
    if (n > VEC_MAX_BYTES / elem_size) return too_big(n, elem_size, err);
    size_t bytes = n * elem_size;
    void *p;
    memcpy(&p, pp, sizeof p);
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q)
        return pfi_errorf(err, PFI_ENOMEM, "out of memory (%zu elements of %zu bytes)", n,
                          elem_size);
    memcpy(pp, &q, sizeof q);
    return PFI_OK;
}

pfi_status pfi_vec_reserve(void *pp, size_t *cap, size_t need, size_t elem_size, pfi_error *err)
{
    if (need <= *cap) return PFI_OK;
    size_t nc = 0;
    pfi_status st = pfi_vec_next_cap(*cap, need, elem_size, &nc, err);
    if (!st) st = pfi_vec_resize(pp, nc, elem_size, err);
    if (!st) *cap = nc;
    return st;
}

pfi_status pfi_vec_push(void *pp, size_t *n, size_t *cap, const void *elem, size_t elem_size,
                        pfi_error *err)
{
    if (*n == SIZE_MAX) return too_big(*n, elem_size, err);
    pfi_status st = pfi_vec_reserve(pp, cap, *n + 1, elem_size, err);
    if (st) return st;
    char *p;
    memcpy(&p, pp, sizeof p);
    memcpy(p + *n * elem_size, elem, elem_size);
    (*n)++;
    return PFI_OK;
}

void *pfi_calloc(size_t n, size_t elem_size, pfi_error *err)
{
    if (elem_size && n > VEC_MAX_BYTES / elem_size) {
        too_big(n, elem_size, err);
        return NULL;
    }
    void *p = calloc(n ? n : 1, elem_size ? elem_size : 1);
    if (!p) pfi_errorf(err, PFI_ENOMEM, "out of memory (%zu elements of %zu bytes)", n, elem_size);
    return p;
}
