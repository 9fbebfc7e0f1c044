/* reader.h — buffered, bounded input for every text parser in pfi.
 *
 * A pfi_reader pulls bytes from a file descriptor, a memory block, or a
 * callback into a buffer that grows up to a maximum record size, so a
 * pathological input (a 2 GB line) is an error after max bytes, not an
 * allocation of 2 GB. It tracks line numbers for error messages. */
#ifndef PFI_READER_H
#define PFI_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pfi/api.h"
#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_READER_DEFAULT_MAX (1u << 20) /* 1 MiB per line/record */

typedef ssize_t (*pfi_read_fn)(void *ud, char *buf, size_t n);

typedef struct pfi_reader {
    pfi_read_fn read;
    void *ud;
    int fd; /* when reading a descriptor we opened (-1 otherwise) */
    int own_fd;
    const char *mem; /* when reading memory */
    size_t mem_len, mem_pos;
    char *buf;
    size_t cap, max;
    size_t start, end; /* unread data is buf[start..end) */
    int eof;
    char name[256];         /* for messages */
    uint64_t line;          /* 1-based line of the next unread byte */
    uint64_t bytes;         /* total bytes consumed */
    int last_nl;            /* the line last returned ended with a newline */
    const char *read_error; /* set by a read callback to explain a -1 */
} pfi_reader;

/* path "-" means standard input. */
PFI_API pfi_status pfi_reader_open(pfi_reader *r, const char *path, size_t max, pfi_error *err);
PFI_API void pfi_reader_init_fd(pfi_reader *r, int fd, const char *name, size_t max);
PFI_API void pfi_reader_init_mem(pfi_reader *r, const void *data, size_t len, const char *name,
                                 size_t max);
PFI_API void pfi_reader_init_fn(pfi_reader *r, pfi_read_fn fn, void *ud, const char *name,
                                size_t max);
PFI_API void pfi_reader_close(pfi_reader *r);

/* Ensure at least want bytes are buffered after start (or EOF). Returns the
 * number of buffered bytes, or -1 with err set (I/O error, or want > max). */
PFI_API ssize_t pfi_reader_fill(pfi_reader *r, size_t want, pfi_error *err);

/* Next line without its terminator ("\n" or "\r\n"). *line points into the
 * buffer and is valid until the next call. Returns 1 for a line, 0 at EOF,
 * -1 on error (line longer than max, I/O error, NUL byte). The line number of
 * the returned line is r->line - 1 afterwards; use pfi_reader_lineno. */
PFI_API int pfi_reader_line(pfi_reader *r, char **line, size_t *len, pfi_error *err);
PFI_API uint64_t pfi_reader_lineno(const pfi_reader *r);
/* 1 if the line last returned was the input's final line and had no newline
 * (a truncated write). */
PFI_API int pfi_reader_truncated_last(const pfi_reader *r);

/* Raw read of exactly n bytes (for binary formats such as tar); returns n,
 * fewer at EOF, or -1 on error. */
PFI_API ssize_t pfi_reader_read(pfi_reader *r, void *dst, size_t n, pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
