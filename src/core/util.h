/* util.h — small pure helpers used across the core: hashing/mixing for
 * seeds and hash tables, and order statistics by selection. */
#ifndef PFI_UTIL_H
#define PFI_UTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* splitmix64 finalizer: a good 64-bit mixer for seeds. */
uint64_t pfi_mix64(uint64_t x);
/* FNV-1a over bytes, then mixed. */
uint64_t pfi_hash_bytes(const void *data, size_t len, uint64_t seed);
uint64_t pfi_hash_str(const char *s, uint64_t seed);

/* Quantile q in [0,1] of x[0..n-1] with linear interpolation between order
 * statistics (numpy's default, Hyndman-Fan type 7). Reorders x. n >= 1. */
double pfi_quantile_select(double *x, size_t n, double q);
/* k-th smallest (0-based) of x; reorders x so x[k] holds it, smaller before. */
double pfi_select_kth(double *x, size_t n, size_t k);

#ifdef __cplusplus
}
#endif
#endif
