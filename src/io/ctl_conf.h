/* ctl_conf.h — what the pfi CLI needs to reach pfi-controller (pfi event,
 * pfi status): the client configuration file and duration arguments.
 *
 * The configuration (/etc/pfi/pfi.conf; $PFI_CONF overrides the path) is
 * one JSON object, every key optional:
 *   {"controller": "https://ctl.example:8443",   the controller's URL
 *    "token_file": "/etc/pfi/operator.token",    its bearer token (mode 0600)
 *    "ca_file": "/etc/pfi/ca.pem"}               trust anchors for https
 * An unknown key is an error naming the file and the key. */
#ifndef PFI_CTL_CONF_H
#define PFI_CTL_CONF_H

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_CTL_CONF_DEFAULT "/etc/pfi/pfi.conf"

typedef struct pfi_ctl_conf {
    char controller[1024];
    char token_file[1024];
    char ca_file[1024];
} pfi_ctl_conf;

/* Read path into *c (absent keys: empty strings). A missing file is
 * PFI_ENOTFOUND (message naming it); other errors name the file (and key). */
pfi_status pfi_ctl_conf_read(const char *path, pfi_ctl_conf *c, pfi_error *err);

/* A duration argument -> seconds: ISO 8601 (PT1H, P1D, PT90M) or a short
 * form of integer parts with units d, h, m, s in that order, each at most
 * once (90s, 5m, 1h, 1h30m, 1d12h). -1 if malformed. */
int pfi_duration_arg(const char *s, double *seconds);

#ifdef __cplusplus
}
#endif
#endif
