/* vec.h — the one growable array of every layer. The array stays a plain
 * typed pointer in the caller's struct (T *p, with its capacity in
 * elements); these functions grow it with checked size arithmetic, so that
 * running out of memory, or an element count whose size in bytes does not
 * fit in size_t, is a PFI_ENOMEM with a one-line message, never a crash or
 * a short block.
 *
 *     double *v = NULL; size_t n = 0, cap = 0;
 *     if ((st = PFI_VEC_RESERVE(v, cap, n + 1, err))) return st;
 *     v[n++] = x;
 *
 * pp is the address of the array pointer (T **, passed as void *): the
 * pointer is read and written with memcpy, so T may be any object type. */
#ifndef PFI_VEC_H
#define PFI_VEC_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The capacity (elements) a growing array takes to hold need elements:
 * twice cap (at least 16), or need when more. PFI_ENOMEM, *out untouched,
 * when need * elem_size does not fit in size_t. */
pfi_status pfi_vec_next_cap(size_t cap, size_t need, size_t elem_size, size_t *out, pfi_error *err);

/* Make the array *pp of *cap elements hold at least need: grows as
 * pfi_vec_next_cap says. On failure *pp and *cap are unchanged (the old
 * block is kept, the caller frees it as usual). */
pfi_status pfi_vec_reserve(void *pp, size_t *cap, size_t need, size_t elem_size, pfi_error *err);

/* Reallocate the array *pp to exactly n elements (n * elem_size checked;
 * n == 0 keeps a 1-byte block, so the pointer stays non-NULL). For parallel
 * arrays that share one capacity: pfi_vec_next_cap once, then this for each,
 * and the shared capacity set when all of them succeeded. */
pfi_status pfi_vec_resize(void *pp, size_t n, size_t elem_size, pfi_error *err);

/* Append elem (elem_size bytes) at (*pp)[*n], growing as needed; ++*n. */
pfi_status pfi_vec_push(void *pp, size_t *n, size_t *cap, const void *elem, size_t elem_size,
                        pfi_error *err);

/* calloc(n, elem_size) whose failure is a PFI_ENOMEM in err (NULL then). */
void *pfi_calloc(size_t n, size_t elem_size, pfi_error *err);

/* The same with the element size taken from the pointer's type. */
#define PFI_VEC_RESERVE(p, cap, need, err) pfi_vec_reserve(&(p), &(cap), (need), sizeof *(p), (err))
#define PFI_VEC_RESIZE(p, n, err) pfi_vec_resize(&(p), (n), sizeof *(p), (err))

#ifdef __cplusplus
}
#endif
#endif
