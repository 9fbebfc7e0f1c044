/* api.h — PFI_API marks the functions and data libpfi exports. The
 * library is compiled with hidden visibility (CMakeLists.txt), so a
 * function is part of the installed ABI only when a public header
 * (include/pfi/) declares it PFI_API; everything else stays internal. */
#ifndef PFI_API_H
#define PFI_API_H

#if defined(__GNUC__) || defined(__clang__)
#define PFI_API __attribute__((visibility("default")))
#else
#define PFI_API
#endif

#endif
