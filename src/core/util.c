/* util.c — hashing and selection helpers (see util.h). */
#include "util.h"

uint64_t pfi_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t pfi_hash_bytes(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return pfi_mix64(h);
}

uint64_t pfi_hash_str(const char *s, uint64_t seed)
{
    size_t n = 0;
    while (s[n]) n++;
    return pfi_hash_bytes(s, n, seed);
}

double pfi_select_kth(double *x, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        /* median of three pivot */
        size_t mid = lo + (hi - lo) / 2;
        double a = x[lo], b = x[mid], c = x[hi];
        double pivot = (a < b) ? ((b < c) ? b : (a < c ? c : a)) : ((a < c) ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot) i++;
            while (x[j] > pivot) j--;
            if (i <= j) {
                double t = x[i];
                x[i] = x[j];
                x[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else break;
    }
    return x[k];
}

double pfi_quantile_select(double *x, size_t n, double q)
{
    if (n == 1) return x[0];
    double h = (double)(n - 1) * q;
    size_t k = (size_t)h;
    if (k >= n - 1) {
        k = n - 1;
        return pfi_select_kth(x, n, k);
    }
    double lo = pfi_select_kth(x, n, k);
    /* the (k+1)-th smallest is the minimum of the part after k */
    double hi = x[k + 1];
    for (size_t i = k + 2; i < n; i++)
        if (x[i] < hi) hi = x[i];
    return lo + (h - (double)k) * (hi - lo);
}
