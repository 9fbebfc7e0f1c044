/* csv.h — streaming RFC 4180 CSV records over a pfi_reader.
 *
 * Quoted fields (with "" escapes and embedded newlines), CRLF or LF line
 * endings, blank lines skipped. Fields are unescaped in place and
 * NUL-terminated; they stay valid until the next call. Errors name the file
 * and line: unterminated quotes, text after a closing quote, NUL bytes, a
 * record longer than the reader's maximum. */
#ifndef PFI_CSV_H
#define PFI_CSV_H

#include <stdio.h>

#include "pfi/api.h"
#include "pfi/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_csv {
    pfi_reader *r;
    char **fields;
    size_t *lens;
    size_t nfields, fcap;
    uint64_t line; /* line on which the current record starts */
} pfi_csv;

PFI_API void pfi_csv_init(pfi_csv *c, pfi_reader *r);
PFI_API void pfi_csv_dispose(pfi_csv *c);
/* 1: a record in c->fields[0..nfields); 0: end of input; -1: error. */
PFI_API int pfi_csv_next(pfi_csv *c, pfi_error *err);

/* Write one text field as RFC 4180 CSV: as is, or quoted (with "" for ")
 * when it holds a comma, quote, CR or LF. */
PFI_API void pfi_csv_write_text(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
