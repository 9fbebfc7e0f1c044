/* capfail.c — an LD_PRELOAD shim for tests: makes the process's capget(2)
 * ($PFI_CAPFAIL=get) or capset(2) ($PFI_CAPFAIL=set) fail with EPERM, as in
 * a container whose seccomp profile refuses them, so that a test can show
 * that restoring a GPU never depends on dropping capabilities (issue 41).
 * pfi-agent calls both through syscall(2), the one symbol shimmed; every
 * other system call goes to libc's. Not instrumented: it is preloaded
 * ahead of the sanitizers' runtime. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#define API __attribute__((visibility("default")))

API long syscall(long n, ...)
{
    va_list ap;
    va_start(ap, n);
    long a[6];
    for (int k = 0; k < 6; k++) a[k] = va_arg(ap, long);
    va_end(ap);
    const char *f = getenv("PFI_CAPFAIL");
    if (f && ((n == SYS_capget && !strcmp(f, "get")) || (n == SYS_capset && !strcmp(f, "set")))) {
        errno = EPERM;
        return -1;
    }
    static long (*real)(long, ...);
    if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
