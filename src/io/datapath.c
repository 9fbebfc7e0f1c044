/* datapath.c — finding the bundled data (datapath.h). */
#include "datapath.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef PFI_INSTALL_DATA_DIR
#define PFI_INSTALL_DATA_DIR ""
#endif
#ifndef PFI_SOURCE_DATA_DIR
#define PFI_SOURCE_DATA_DIR ""
#endif

pfi_status pfi_data_path(const char *data_dir, const char *rel, char *buf, size_t n, pfi_error *err)
{
    const char *cands[4] = {data_dir, getenv("PFI_DATA_DIR"), PFI_INSTALL_DATA_DIR,
                            PFI_SOURCE_DATA_DIR};
    for (int i = 0; i < 4; i++) {
        if (!cands[i] || !cands[i][0]) continue;
        snprintf(buf, n, "%s/%s", cands[i], rel);
        if (access(buf, R_OK) == 0) return PFI_OK;
        if (i == 0)
            return pfi_errorf(err, PFI_ENOTFOUND, "%s: not found (--data %s)", buf, data_dir);
    }
    return pfi_errorf(err, PFI_ENOTFOUND,
                      "bundled data file %s not found (use --data DIR or set PFI_DATA_DIR)", rel);
}
