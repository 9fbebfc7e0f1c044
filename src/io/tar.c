/* tar.c — sequential tar reading and writing (see tar.h). */
#include "tar.h"

#include <stdlib.h>
#include <string.h>

#define BLK 512

void pfi_tar_init(pfi_tar *t, pfi_reader *r)
{
    memset(t, 0, sizeof *t);
    t->r = r;
    t->pending_size = -1;
}

static int read_exact(pfi_tar *t, void *buf, size_t n, pfi_error *err)
{
    ssize_t k = pfi_reader_read(t->r, buf, n, err);
    if (k < 0) return -1;
    if ((size_t)k != n) {
        pfi_errorf(err, PFI_EPARSE, "%s: truncated tar stream at byte %llu", t->r->name,
                   (unsigned long long)(t->offset + (uint64_t)k));
        return -1;
    }
    t->offset += n;
    return 0;
}

static int skip(pfi_tar *t, uint64_t n, pfi_error *err)
{
    char buf[4096];
    while (n) {
        size_t k = n > sizeof buf ? sizeof buf : (size_t)n;
        if (read_exact(t, buf, k, err)) return -1;
        n -= k;
    }
    return 0;
}

static int parse_octal(const char *p, size_t n, uint64_t *out)
{
    if ((unsigned char)p[0] & 0x80) { /* GNU base-256 */
        uint64_t v = (unsigned char)p[0] & 0x7f;
        for (size_t i = 1; i < n; i++) {
            if (v >> 55) return -1;
            v = (v << 8) | (unsigned char)p[i];
        }
        *out = v;
        return 0;
    }
    size_t i = 0;
    while (i < n && p[i] == ' ') i++;
    uint64_t v = 0;
    int any = 0;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
        if (v >> 60) return -1;
        v = v * 8 + (uint64_t)(p[i] - '0');
        any = 1;
    }
    for (; i < n; i++)
        if (p[i] != ' ' && p[i] != '\0') return -1;
    if (!any) v = 0;
    *out = v;
    return 0;
}

static void normalize(char *path)
{
    while (path[0] == '.' && path[1] == '/') memmove(path, path + 2, strlen(path + 2) + 1);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
}

/* read a member's data as a string (pax or GNU long name), limited */
static char *read_meta(pfi_tar *t, uint64_t size, pfi_error *err)
{
    if (size > (1u << 20)) {
        pfi_errorf(err, PFI_EPARSE, "%s: tar extended header of %llu bytes is too large",
                   t->r->name, (unsigned long long)size);
        return NULL;
    }
    char *s = malloc((size_t)size + 1);
    if (!s) {
        pfi_errorf(err, PFI_ENOMEM, "out of memory");
        return NULL;
    }
    if (read_exact(t, s, (size_t)size, err) || skip(t, (BLK - size % BLK) % BLK, err)) {
        free(s);
        return NULL;
    }
    s[size] = '\0';
    return s;
}

static int parse_pax(pfi_tar *t, char *s, uint64_t size, pfi_error *err)
{
    size_t i = 0;
    while (i < size) {
        char *end;
        unsigned long len = strtoul(s + i, &end, 10);
        if (end == s + i || *end != ' ' || len == 0 || i + len > size || s[i + len - 1] != '\n') {
            pfi_errorf(err, PFI_EPARSE, "%s: malformed pax extended header", t->r->name);
            return -1;
        }
        char *kv = end + 1;
        char *eq = memchr(kv, '=', (size_t)(s + i + len - kv));
        if (eq) {
            size_t klen = (size_t)(eq - kv);
            size_t vlen = (size_t)(s + i + len - 1 - (eq + 1));
            if (klen == 4 && memcmp(kv, "path", 4) == 0) {
                if (vlen >= sizeof t->pending_path) {
                    pfi_errorf(err, PFI_EPARSE, "%s: tar path too long", t->r->name);
                    return -1;
                }
                memcpy(t->pending_path, eq + 1, vlen);
                t->pending_path[vlen] = '\0';
                t->have_pending = 1;
            } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
                char tmp[32];
                if (vlen == 0 || vlen >= sizeof tmp) {
                    pfi_errorf(err, PFI_EPARSE, "%s: bad pax size", t->r->name);
                    return -1;
                }
                memcpy(tmp, eq + 1, vlen);
                tmp[vlen] = '\0';
                char *e2;
                unsigned long long v = strtoull(tmp, &e2, 10);
                if (*e2) {
                    pfi_errorf(err, PFI_EPARSE, "%s: bad pax size", t->r->name);
                    return -1;
                }
                t->pending_size = (int64_t)v;
            }
        }
        i += len;
    }
    return 0;
}

int pfi_tar_next(pfi_tar *t, pfi_error *err)
{
    if (t->remaining + t->pad && skip(t, t->remaining + t->pad, err)) return -1;
    t->remaining = t->pad = 0;
    for (;;) {
        unsigned char h[BLK];
        ssize_t k = pfi_reader_read(t->r, h, BLK, err);
        if (k < 0) return -1;
        if (k == 0) {
            if (t->offset == 0) {
                pfi_errorf(err, PFI_EPARSE, "%s: empty input (not a tar archive)", t->r->name);
                return -1;
            }
            return 0; /* end without the two zero blocks: tolerated */
        }
        if (k != BLK) {
            pfi_errorf(err, PFI_EPARSE, "%s: truncated tar stream at byte %llu", t->r->name,
                       (unsigned long long)(t->offset + (uint64_t)k));
            return -1;
        }
        uint64_t hdr_at = t->offset;
        t->offset += BLK;
        int zero = 1;
        for (int i = 0; i < BLK; i++)
            if (h[i]) {
                zero = 0;
                break;
            }
        if (zero) return 0;
        uint64_t chk, sum = 0;
        if (parse_octal((char *)h + 148, 8, &chk)) goto bad;
        for (int i = 0; i < BLK; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
        if (sum != chk) goto bad;
        uint64_t size;
        if (parse_octal((char *)h + 124, 12, &size)) goto bad;
        char type = (char)h[156];
        if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
            char *s = read_meta(t, size, err);
            if (!s) return -1;
            int rc = 0;
            if (type == 'x') rc = parse_pax(t, s, size, err);
            else if (type == 'L') {
                size_t n = strnlen(s, (size_t)size);
                if (n >= sizeof t->pending_path) {
                    free(s);
                    pfi_errorf(err, PFI_EPARSE, "%s: tar long name too long", t->r->name);
                    return -1;
                }
                memcpy(t->pending_path, s, n);
                t->pending_path[n] = '\0';
                t->have_pending = 1;
            }
            free(s);
            if (rc) return -1;
            continue;
        }
        if (t->pending_size >= 0) size = (uint64_t)t->pending_size;
        if (t->have_pending) {
            snprintf(t->path, sizeof t->path, "%s", t->pending_path);
        } else {
            char name[101], prefix[156];
            memcpy(name, h, 100);
            name[100] = '\0';
            memcpy(prefix, h + 345, 155);
            prefix[155] = '\0';
            int ustar = memcmp(h + 257, "ustar", 5) == 0;
            if (ustar && prefix[0] && memcmp(h + 257, "ustar\0", 6) == 0)
                snprintf(t->path, sizeof t->path, "%s/%s", prefix, name);
            else snprintf(t->path, sizeof t->path, "%s", name);
        }
        t->have_pending = 0;
        t->pending_size = -1;
        normalize(t->path);
        t->size = size;
        t->remaining = size;
        t->pad = (BLK - size % BLK) % BLK;
        t->is_dir = type == '5' || (t->path[0] && t->path[strlen(t->path) - 1] == '/');
        if (type == '0' || type == '\0' || type == '7' || type == '5') return 1;
        /* links, devices, fifos: skip their data */
        if (skip(t, t->remaining + t->pad, err)) return -1;
        t->remaining = t->pad = 0;
        continue;
    bad:
        pfi_errorf(err, PFI_EPARSE, "%s: byte %llu: not a tar header (bad checksum)", t->r->name,
                   (unsigned long long)hdr_at);
        return -1;
    }
}

static ssize_t member_read(void *ud, char *buf, size_t n)
{
    pfi_tar *t = ud;
    if (n > t->remaining) n = (size_t)t->remaining;
    if (n == 0) return 0;
    ssize_t k = pfi_reader_read(t->r, buf, n, NULL);
    if (k <= 0) {
        t->member.read_error = "truncated tar stream (inside this member)";
        return -1;
    }
    t->remaining -= (uint64_t)k;
    t->offset += (uint64_t)k;
    return k;
}

pfi_reader *pfi_tar_member(pfi_tar *t, size_t max)
{
    pfi_reader_close(&t->member);
    pfi_reader_init_fn(&t->member, member_read, t, t->path, max);
    return &t->member;
}

void pfi_tar_dispose(pfi_tar *t)
{
    pfi_reader_close(&t->member);
}

static void octal(char *dst, size_t n, uint64_t v)
{
    snprintf(dst, n, "%0*llo", (int)(n - 1), (unsigned long long)v);
}

static pfi_status write_header(FILE *f, const char *name, uint64_t size, char type, pfi_error *err)
{
    unsigned char h[BLK];
    memset(h, 0, sizeof h);
    snprintf((char *)h, 100, "%s", name);
    octal((char *)h + 100, 8, 0644);
    octal((char *)h + 108, 8, 0);
    octal((char *)h + 116, 8, 0);
    octal((char *)h + 124, 12, size);
    octal((char *)h + 136, 12, 0);
    h[156] = (unsigned char)type;
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memset(h + 148, ' ', 8);
    uint64_t sum = 0;
    for (int i = 0; i < BLK; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06llo", (unsigned long long)sum);
    h[155] = ' ';
    if (fwrite(h, 1, BLK, f) != BLK) return pfi_errorf(err, PFI_EIO, "tar write failed");
    return PFI_OK;
}

static pfi_status write_data(FILE *f, const void *data, size_t len, pfi_error *err)
{
    static const char zeros[BLK];
    if (len && fwrite(data, 1, len, f) != len) return pfi_errorf(err, PFI_EIO, "tar write failed");
    size_t pad = (BLK - len % BLK) % BLK;
    if (pad && fwrite(zeros, 1, pad, f) != pad) return pfi_errorf(err, PFI_EIO, "tar write failed");
    return PFI_OK;
}

pfi_status pfi_tar_write(FILE *f, const char *path, const void *data, size_t len, pfi_error *err)
{
    pfi_status st;
    if (strlen(path) >= 100) { /* pax header carrying the path */
        char rec[4200];
        size_t body = strlen(path) + strlen(" path=\n");
        size_t total = body + 1;
        for (int i = 0; i < 3; i++) { /* the length includes its own digits */
            char tmp[16];
            total = body + (size_t)snprintf(tmp, sizeof tmp, "%zu", total);
        }
        int n = snprintf(rec, sizeof rec, "%zu path=%s\n", total, path);
        if (n < 0 || (size_t)n >= sizeof rec)
            return pfi_errorf(err, PFI_EINVAL, "tar path too long");
        if ((st = write_header(f, "././@PaxHeader", (uint64_t)n, 'x', err))) return st;
        if ((st = write_data(f, rec, (size_t)n, err))) return st;
    }
    if ((st = write_header(f, path, len, '0', err))) return st;
    return write_data(f, data, len, err);
}

pfi_status pfi_tar_write_end(FILE *f, pfi_error *err)
{
    static const char zeros[2 * BLK];
    if (fwrite(zeros, 1, sizeof zeros, f) != sizeof zeros)
        return pfi_errorf(err, PFI_EIO, "tar write failed");
    return PFI_OK;
}
