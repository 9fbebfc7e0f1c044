/* buf.c — the growable text/byte buffer (buf.h). */
#include "buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pfi_status fail(pfi_buf *b, pfi_status st, size_t want)
{
    if (!b->st) {
        b->st = st;
        b->want = want;
    }
    return b->st;
}

pfi_status pfi_buf_reserve(pfi_buf *b, size_t more)
{
    if (b->st) return b->st;
    /* n + more + 1 bytes, checked */
    if (more > (size_t)PTRDIFF_MAX - 1 - b->n) return fail(b, PFI_ENOMEM, SIZE_MAX);
    size_t need = b->n + more + 1;
    if (b->max && need - 1 > b->max) return fail(b, PFI_ENOMEM, need - 1);
    if (b->p && need <= b->cap) return PFI_OK;
    size_t nc = b->cap < 64 ? 64 : b->cap;
    while (nc < need) nc = nc > (size_t)PTRDIFF_MAX / 2 ? (size_t)PTRDIFF_MAX : 2 * nc;
    if (b->max && nc > b->max + 1) nc = b->max + 1;
    char *q = realloc(b->p, nc);
    if (!q) return fail(b, PFI_ENOMEM, need);
    if (!b->p) q[0] = '\0';
    b->p = q;
    b->cap = nc;
    return PFI_OK;
}

pfi_status pfi_buf_add_slow(pfi_buf *b, const void *data, size_t n)
{
    pfi_status st = pfi_buf_reserve(b, n);
    if (st) return st;
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
    return PFI_OK;
}

pfi_status pfi_buf_vprintf(pfi_buf *b, const char *fmt, va_list ap)
{
    if (b->st) return b->st;
    va_list ap2;
    va_copy(ap2, ap);
    size_t room = b->p ? b->cap - b->n : 0;
    int k = vsnprintf(room ? b->p + b->n : NULL, room, fmt, ap2);
    va_end(ap2);
    if (k < 0) { /* an encoding error: nothing is added */
        if (b->p) b->p[b->n] = '\0';
        return fail(b, PFI_EINVAL, 0);
    }
    if ((size_t)k < room) {
        b->n += (size_t)k;
        return PFI_OK;
    }
    pfi_status st = pfi_buf_reserve(b, (size_t)k);
    if (st) {
        if (b->p) b->p[b->n] = '\0'; /* a partial write is dropped */
        return st;
    }
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    b->n += (size_t)k;
    return PFI_OK;
}

pfi_status pfi_buf_printf(pfi_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_status st = pfi_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return st;
}

pfi_status pfi_buf_status(const pfi_buf *b, pfi_error *err)
{
    if (!b->st) return PFI_OK;
    if (b->st == PFI_EINVAL)
        return pfi_errorf(err, b->st, "text formatting failed (an invalid character)");
    if (b->max && b->want != SIZE_MAX && b->want > b->max)
        return pfi_errorf(err, b->st, "more than %zu bytes", b->max);
    if (b->want == SIZE_MAX)
        return pfi_errorf(err, b->st, "out of memory: a text larger than memory");
    return pfi_errorf(err, b->st, "out of memory (a text of %zu bytes)", b->want);
}

char *pfi_buf_take(pfi_buf *b, size_t *len)
{
    char *p = NULL;
    size_t n = 0;
    if (!b->st) {
        p = b->p ? b->p : calloc(1, 1);
        n = b->n;
        b->p = NULL;
    }
    size_t max = b->max;
    pfi_buf_dispose(b);
    b->max = max;
    if (len) *len = p ? n : 0;
    return p;
}

void pfi_buf_clear(pfi_buf *b)
{
    b->n = 0;
    b->st = PFI_OK;
    b->want = 0;
    if (b->p) b->p[0] = '\0';
}

void pfi_buf_dispose(pfi_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
