/* status.h — error codes and messages shared by every pfi layer.
 *
 * Library functions return a pfi_status and, when given a pfi_error, fill it
 * with one line saying what went wrong and where (file:line: column: ...).
 * The library never prints and never exits; warnings go to an optional
 * callback (pfi_log) so the CLI decides how to show them. */
#ifndef PFI_STATUS_H
#define PFI_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#include "pfi/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_status {
    PFI_OK = 0,
    PFI_EINVAL,    /* bad argument or bad value in input data */
    PFI_EPARSE,    /* malformed input (syntax) */
    PFI_EIO,       /* read/write/system failure */
    PFI_ENOMEM,    /* allocation failed or a size limit was exceeded */
    PFI_ENOTFOUND, /* a named thing (column, group, file) does not exist */
    PFI_ERANGE,    /* a value outside its allowed range */
    PFI_EUNSUPP,   /* operation not supported (e.g. by a GPU backend) */
    PFI_EPERM,     /* permission denied */
    PFI_ESTATE     /* operation not valid in the current state */
} pfi_status;

#define PFI_ERROR_MSG_MAX 512

typedef struct pfi_error {
    pfi_status code;
    char msg[PFI_ERROR_MSG_MAX];
} pfi_error;

/* Set *err (if non-NULL) and return code. printf-style message. */
PFI_API pfi_status pfi_errorf(pfi_error *err, pfi_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
PFI_API pfi_status pfi_verrorf(pfi_error *err, pfi_status code, const char *fmt, va_list ap);
/* Prefix an existing message: "prefix: old message". */
PFI_API void pfi_error_prefix(pfi_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
PFI_API void pfi_error_clear(pfi_error *err);
PFI_API const char *pfi_status_name(pfi_status code);

/* Warning sink. A NULL pfi_log or NULL fn drops warnings. */
typedef struct pfi_log {
    void (*warn)(void *ud, const char *msg);
    void *ud;
    size_t n_warnings; /* counted even when dropped */
} pfi_log;

PFI_API void pfi_warnf(pfi_log *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
