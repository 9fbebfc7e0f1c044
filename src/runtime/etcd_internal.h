/* etcd_internal.h — what etcd.c and etcd_watch.c share: the client's
 * state and its request plumbing. Not an API. */
#ifndef PFI_ETCD_INTERNAL_H
#define PFI_ETCD_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>

#include "etcd.h"

struct pfi_etcd {
    pthread_mutex_t mu;
    CURL *curl;
    char *endpoints[PFI_ETCD_MAX_ENDPOINTS];
    size_t n, cur;
    char *prefix;
    size_t prefix_len;
    double timeout_s;
    char *ca_file, *cert_file, *key_file, *user, *password;
    char token[512]; /* "" until authenticated */
};

/* one POST to endpoint ep, the answer to write_fn (curl's write callback):
   0 answered (*code its HTTP status), -1 no answer, -2 the deadline
   passed, -3 write_fn stopped it; why says what went wrong. e->mu held. */
int pfi_etcd_post_with(pfi_etcd *e, size_t ep, const char *path, const char *body, double timeout_s,
                       size_t (*write_fn)(char *, size_t, size_t, void *), void *write_ud,
                       long *code, char *why, size_t nwhy);
/* a key under the prefix, base64; the range end of every key starting with it */
char *pfi_etcd_key64(const pfi_etcd *e, const char *key);
char *pfi_etcd_prefix_end64(const pfi_etcd *e, const char *key);
/* a returned key made relative to the prefix */
void pfi_etcd_strip_prefix(const pfi_etcd *e, pfi_etcd_kv *kv);

#endif
