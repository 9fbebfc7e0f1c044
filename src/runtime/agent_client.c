/* agent_client.c — HTTP client of pfi-agent, the token file and where a
 * secret may be sent (agent_client.h). */
#include "agent_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

static pfi_status secret_check(const char *path, char *buf, size_t k, size_t min, size_t max,
                               char *token, size_t n, pfi_error *err);

pfi_status pfi_token_read(const char *path, char *token, size_t n, pfi_error *err)
{
    return pfi_secret_read(path, 16, PFI_TOKEN_MAX, token, n, err);
}

pfi_status pfi_secret_read(const char *path, size_t min, size_t max, char *token, size_t n,
                           pfi_error *err)
{
    /* non-blocking: a FIFO put in its place must not hang the daemon's start
       (it is then refused: not a regular file) */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == EACCES) /* e.g. root's, read by the packaged controller's own user */
        return pfi_errorf(err, PFI_EIO,
                          "%s: cannot open the token file: %s (this process runs as uid %u: the "
                          "file must be that user's)",
                          path, strerror(errno), (unsigned)geteuid());
    if (fd < 0)
        return pfi_errorf(err, PFI_EIO, "%s: cannot open the token file: %s", path,
                          strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return pfi_errorf(err, PFI_EINVAL, "%s: not a regular file", path);
    }
    /* root reads only root's (issue 41): another user who owns the file can
       swap the token a root daemon trusts */
    if (geteuid() == 0 && sb.st_uid != 0) {
        close(fd);
        return pfi_errorf(err, PFI_EPERM,
                          "%s: owned by uid %u: a token file read as root must be root's "
                          "(chown root)",
                          path, (unsigned)sb.st_uid);
    }
    if (sb.st_mode & 077) {
        close(fd);
        return pfi_errorf(err, PFI_EPERM, "%s: mode %04o lets others read the token; chmod 600 it",
                          path, (unsigned)(sb.st_mode & 07777));
    }
    size_t cap = max + 8;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return pfi_errorf(err, PFI_ENOMEM, "%s: out of memory", path);
    }
    ssize_t k = read(fd, buf, cap - 1);
    close(fd);
    pfi_status st = k < 0 ? pfi_errorf(err, PFI_EIO, "%s: %s", path, strerror(errno))
                          : secret_check(path, buf, (size_t)k, min, max, token, n, err);
    memset(buf, 0, cap);
    free(buf);
    return st;
}

static pfi_status secret_check(const char *path, char *buf, size_t k, size_t min, size_t max,
                               char *token, size_t n, pfi_error *err)
{
    buf[k] = '\0';
    size_t len = strcspn(buf, "\r\n");
    buf[len] = '\0';
    if (len < min || len > max)
        return pfi_errorf(err, PFI_EINVAL,
                          "%s: the token must be %zu..%zu characters on the first line", path, min,
                          max);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] <= 0x20 || buf[i] == 0x7f)
            return pfi_errorf(err, PFI_EINVAL, "%s: the token has spaces or control characters",
                              path);
    if (len >= n) return pfi_errorf(err, PFI_ERANGE, "%s: token too long", path);
    memcpy(token, buf, len + 1);
    return PFI_OK;
}

void pfi_http_reply_dispose(pfi_http_reply *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    pfi_buf *b = ud;
    size_t k = sz * nm;
    return pfi_buf_add(b, p, k) ? 0 : k; /* over the limit or out of memory: the transfer fails */
}

static pfi_status perform(CURL *c, const char *url, pfi_http_reply *r, pfi_error *err)
{
    pfi_buf body = {.max = 16u << 20}; /* an agent's answer is small: refuse floods */
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        pfi_buf_dispose(&body);
        pfi_http_reply_dispose(r);
        return pfi_errorf(err, PFI_EIO, "%s: %s", url, curl_easy_strerror(cc));
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    /* libcurl reads both forms of Retry-After (delta seconds, HTTP date) */
    curl_off_t after = 0;
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0)
        r->retry_after_s = (double)after;
    r->body = pfi_buf_take(&body, &r->len);
    if (!r->body) return pfi_errorf(err, PFI_ENOMEM, "%s: out of memory", url);
    return PFI_OK;
}

pfi_status pfi_agent_get(const char *url, const char *path, double timeout_s, pfi_http_reply *r,
                         pfi_error *err)
{
    memset(r, 0, sizeof *r);
    CURL *c = curl_easy_init();
    if (!c) return pfi_errorf(err, PFI_ENOMEM, "libcurl: init failed");
    char full[2048];
    snprintf(full, sizeof full, "%s%s", url, path);
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    pfi_status st = perform(c, full, r, err);
    curl_easy_cleanup(c);
    return st;
}

pfi_status pfi_http_request(const char *method, const char *url, const char *token,
                            const char *body, double timeout_s, pfi_http_reply *r, pfi_error *err)
{
    return pfi_http_request_ca(method, url, token, body, NULL, timeout_s, r, err);
}

pfi_status pfi_http_request_ca(const char *method, const char *url, const char *token,
                               const char *body, const char *ca_file, double timeout_s,
                               pfi_http_reply *r, pfi_error *err)
{
    char auth[PFI_TOKEN_MAX + 32];
    const char *hdr[2] = {NULL, NULL};
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr[0] = auth;
    }
    return pfi_http_request_ex(method, url, hdr, body, body ? "application/json" : NULL, ca_file,
                               timeout_s, r, err);
}

pfi_status pfi_http_request_ex(const char *method, const char *url, const char *const *headers,
                               const char *body, const char *content_type, const char *ca_file,
                               double timeout_s, pfi_http_reply *r, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    CURL *c = curl_easy_init();
    if (!c) return pfi_errorf(err, PFI_ENOMEM, "libcurl: init failed");
    struct curl_slist *h = NULL;
    for (size_t i = 0; headers && headers[i]; i++) h = curl_slist_append(h, headers[i]);
    char ct[128];
    if (body && content_type) {
        snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
        h = curl_slist_append(h, ct);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (strcmp(method, "GET")) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (h) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    pfi_status st = perform(c, url, r, err);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return st;
}

pfi_status pfi_agent_put_caps(const char *url, const char *token, const pfi_caps_request *req,
                              double timeout_s, pfi_http_reply *r, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    char *body = pfi_caps_request_format(req);
    if (!body) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    char full[2048];
    snprintf(full, sizeof full, "%s/v1/caps", url);
    pfi_status st = pfi_http_request("PUT", full, token, body, timeout_s, r, err);
    free(body);
    return st;
}

int pfi_url_loopback(const char *url)
{
    const char *h = strstr(url, "://");
    if (!h) return 0;
    h += 3;
    size_t n = strcspn(h, "/?#");
    if (memchr(h, '@', n)) return 0;
    char host[256];
    if (n >= sizeof host) return 0;
    memcpy(host, h, n);
    host[n] = '\0';
    if (host[0] == '[') {
        char *close = strchr(host, ']');
        if (!close || (close[1] && close[1] != ':')) return 0;
        *close = '\0';
        struct in6_addr a6;
        return inet_pton(AF_INET6, host + 1, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    char *colon = strchr(host, ':');
    if (colon) *colon = '\0';
    size_t hn = strlen(host);
    if (!strcasecmp(host, "localhost") || (hn > 10 && !strcasecmp(host + hn - 10, ".localhost")))
        return 1;
    struct in_addr a4;
    return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

int pfi_url_secret_ok(const char *url, int allow_insecure_http)
{
    if (!strncasecmp(url, "https://", 8)) return 1;
    if (strncasecmp(url, "http://", 7)) return 0;
    return allow_insecure_http || pfi_url_loopback(url);
}
