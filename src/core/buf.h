/* buf.h — the one growable text/byte buffer of every layer (HTTP bodies,
 * Prometheus text, generated files, uploads). Always NUL-terminated once
 * anything was added. Growth is overflow-checked; the first failure (out
 * of memory, or more than max bytes) is kept in the buffer and every later
 * addition does nothing, so a writer makes many additions and checks once:
 *
 *     pfi_buf b = {0};
 *     pfi_buf_printf(&b, "%s %g\n", name, v);   ... as often as needed
 *     if (pfi_buf_status(&b, err)) { pfi_buf_dispose(&b); return err->code; }
 *     char *text = pfi_buf_take(&b, &len);
 *
 * A zeroed pfi_buf is empty, with no limit. */
#ifndef PFI_BUF_H
#define PFI_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_buf {
    char *p;       /* malloc'd, NUL-terminated; NULL until the first addition */
    size_t n;      /* bytes held, without the NUL */
    size_t cap;    /* bytes allocated (room for n + 1) */
    size_t max;    /* at most this many bytes (0: no limit) */
    pfi_status st; /* PFI_OK, or the first failure (later additions do nothing) */
    size_t want;   /* the size that failed, for the message */
} pfi_buf;

/* Room for `more` bytes after n (and the NUL). */
pfi_status pfi_buf_reserve(pfi_buf *b, size_t more);
/* Append n bytes (any bytes; the text stays NUL-terminated after them). */
pfi_status pfi_buf_add_slow(pfi_buf *b, const void *data, size_t n);
static inline pfi_status pfi_buf_add(pfi_buf *b, const void *data, size_t n)
{
    if (!b->st && b->p && n < b->cap - b->n) { /* fast path: it fits */
        memcpy(b->p + b->n, data, n);
        b->n += n;
        b->p[b->n] = '\0';
        return PFI_OK;
    }
    return pfi_buf_add_slow(b, data, n);
}
static inline pfi_status pfi_buf_puts(pfi_buf *b, const char *s)
{
    return pfi_buf_add(b, s, strlen(s));
}
/* Append printf-formatted text (of any length). */
pfi_status pfi_buf_printf(pfi_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
pfi_status pfi_buf_vprintf(pfi_buf *b, const char *fmt, va_list ap);

/* PFI_OK, or the first failure with its one-line message in err. */
pfi_status pfi_buf_status(const pfi_buf *b, pfi_error *err);
/* The text (malloc'd, "" when nothing was added; the caller frees it) and
 * its length; NULL after a failure. The buffer is empty afterwards (its
 * limit kept). */
char *pfi_buf_take(pfi_buf *b, size_t *len);
/* Empty the buffer for reuse: n = 0, the failure forgotten, memory kept. */
void pfi_buf_clear(pfi_buf *b);
void pfi_buf_dispose(pfi_buf *b);

#ifdef __cplusplus
}
#endif
#endif
