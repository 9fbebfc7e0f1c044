/* datapath.h — where pfi's bundled data (data/: the paper's tables, the
 * reconstruction's spec and parameters, the Zeus traces) is found: an
 * explicit directory (--data), then $PFI_DATA_DIR, then the installed
 * share/pfi, then the source tree's data/ (a build that was not installed). */
#ifndef PFI_DATAPATH_H
#define PFI_DATAPATH_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Path of rel (relative to data/) into buf; PFI_ENOTFOUND with a message naming where it looked. */
pfi_status pfi_data_path(const char *data_dir, const char *rel, char *buf, size_t n,
                         pfi_error *err);

#ifdef __cplusplus
}
#endif
#endif
