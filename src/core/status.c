/* status.c — pfi_error formatting and the warning sink (see status.h). */
#include "pfi/status.h"

#include <stdio.h>
#include <string.h>

pfi_status pfi_verrorf(pfi_error *err, pfi_status code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

pfi_status pfi_errorf(pfi_error *err, pfi_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_verrorf(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void pfi_error_prefix(pfi_error *err, const char *fmt, ...)
{
    if (!err) return;
    char old[PFI_ERROR_MSG_MAX];
    memcpy(old, err->msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    size_t used = (size_t)n < sizeof err->msg ? (size_t)n : sizeof err->msg - 1;
    size_t left = sizeof err->msg - used;
    if (left > 3) {
        memcpy(err->msg + used, ": ", 2);
        size_t k = strlen(old);
        if (k > left - 3) k = left - 3;
        memcpy(err->msg + used + 2, old, k);
        err->msg[used + 2 + k] = '\0';
    }
}

void pfi_error_clear(pfi_error *err)
{
    if (err) {
        err->code = PFI_OK;
        err->msg[0] = '\0';
    }
}

const char *pfi_status_name(pfi_status code)
{
    switch (code) {
    case PFI_OK: return "ok";
    case PFI_EINVAL: return "invalid value";
    case PFI_EPARSE: return "parse error";
    case PFI_EIO: return "i/o error";
    case PFI_ENOMEM: return "out of memory or size limit";
    case PFI_ENOTFOUND: return "not found";
    case PFI_ERANGE: return "out of range";
    case PFI_EUNSUPP: return "not supported";
    case PFI_EPERM: return "permission denied";
    case PFI_ESTATE: return "invalid state";
    }
    return "unknown error";
}

void pfi_warnf(pfi_log *log, const char *fmt, ...)
{
    if (!log) return;
    log->n_warnings++;
    if (!log->warn) return;
    char msg[PFI_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log->warn(log->ud, msg);
}
