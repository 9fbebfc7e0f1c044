/* caps_request.h — the body of pfi-agent's PUT /v1/caps (JSON):
 *
 *   {"lease_s": 60, "controller": "ctl-a", "generation": 12,
 *    "gpus": [{"uuid": "GPU-...", "cap_w": 450}, {"index": 3, "cap_w": 500}],
 *    "jobs": [{"job_id": "4242", "cap_w": 400}]}
 *
 * cap_w is always per GPU. Parsing checks syntax, types and ranges (lease_s
 * 1..86400 s, generation an integer 0..2^53, cap_w finite and positive, each
 * GPU entry exactly one of uuid / index, at most 64 entries per list) and
 * rejects unknown keys; it knows nothing about devices (the agent checks caps
 * against their constraints). Errors name the field: "gpus[2].cap_w: ...".
 * How far a generation may rise above the agent's last is the lease's rule
 * (lease.h). */
#ifndef PFI_CAPS_REQUEST_H
#define PFI_CAPS_REQUEST_H

#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_CAPS_MAX_ENTRIES 64
#define PFI_CAPS_GENERATION_MAX (1LL << 53) /* exact in JSON's doubles */

typedef struct pfi_caps_entry {
    long index; /* -1 when given by uuid (gpus) or for jobs */
    char uuid[96];
    char job_id[64];
    double cap_w;
} pfi_caps_entry;

typedef struct pfi_caps_request {
    double lease_s;
    char controller[128];
    long long generation;
    size_t ngpus, njobs;
    pfi_caps_entry gpus[PFI_CAPS_MAX_ENTRIES], jobs[PFI_CAPS_MAX_ENTRIES];
} pfi_caps_request;

pfi_status pfi_caps_request_parse(const char *body, size_t len, pfi_caps_request *r,
                                  pfi_error *err);
/* The JSON text of a request (for clients: pfi sweep, the controller); malloc'd. */
char *pfi_caps_request_format(const pfi_caps_request *r);

#ifdef __cplusplus
}
#endif
#endif
