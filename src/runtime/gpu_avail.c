/* gpu_avail.c — the names of a GPU's availability states (gpu.h:
 * pfi_gpu_avail), as logs, /v1/node and /metrics write them. Below the
 * backends and the worker, which all name states (issue 43: in gpu.c it
 * tied gpu.c, gpu_worker.c and nvml.c into a circle). */
#include "gpu.h"

const char *pfi_gpu_avail_name(pfi_gpu_avail a)
{
    switch (a) {
    case PFI_GPU_OK: return "ok";
    case PFI_GPU_LOST: return "lost";
    case PFI_GPU_NO_PERMISSION: return "no_permission";
    case PFI_GPU_NOT_SUPPORTED: return "not_supported";
    case PFI_GPU_RESET_REQUIRED: return "reset_required";
    case PFI_GPU_TIMEOUT: return "timeout";
    case PFI_GPU_OS_BLOCKED: return "os_blocked";
    default: return "unknown";
    }
}
