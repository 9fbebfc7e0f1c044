/* reader.c — bounded buffered input (see reader.h). */
#include "pfi/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ssize_t fd_read(void *ud, char *buf, size_t n)
{
    pfi_reader *r = ud;
    for (;;) {
        ssize_t k = read(r->fd, buf, n);
        if (k < 0 && errno == EINTR) continue;
        return k;
    }
}

static ssize_t mem_read(void *ud, char *buf, size_t n)
{
    pfi_reader *r = ud;
    size_t left = r->mem_len - r->mem_pos;
    if (n > left) n = left;
    memcpy(buf, r->mem + r->mem_pos, n);
    r->mem_pos += n;
    return (ssize_t)n;
}

static void base_init(pfi_reader *r, const char *name, size_t max)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->max = max ? max : PFI_READER_DEFAULT_MAX;
    r->line = 1;
    snprintf(r->name, sizeof r->name, "%s", name ? name : "(input)");
}

pfi_status pfi_reader_open(pfi_reader *r, const char *path, size_t max, pfi_error *err)
{
    if (strcmp(path, "-") == 0) {
        pfi_reader_init_fd(r, 0, "(stdin)", max);
        return PFI_OK;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pfi_errorf(err, PFI_EIO, "%s: cannot open: %s", path, strerror(errno));
    pfi_reader_init_fd(r, fd, path, max);
    r->own_fd = 1;
    return PFI_OK;
}

void pfi_reader_init_fd(pfi_reader *r, int fd, const char *name, size_t max)
{
    base_init(r, name, max);
    r->fd = fd;
    r->read = fd_read;
    r->ud = r;
}

void pfi_reader_init_mem(pfi_reader *r, const void *data, size_t len, const char *name, size_t max)
{
    base_init(r, name, max);
    r->mem = data;
    r->mem_len = len;
    r->read = mem_read;
    r->ud = r;
}

void pfi_reader_init_fn(pfi_reader *r, pfi_read_fn fn, void *ud, const char *name, size_t max)
{
    base_init(r, name, max);
    r->read = fn;
    r->ud = ud;
}

void pfi_reader_close(pfi_reader *r)
{
    if (r->own_fd && r->fd >= 0) close(r->fd);
    free(r->buf);
    r->buf = NULL;
    r->fd = -1;
}

ssize_t pfi_reader_fill(pfi_reader *r, size_t want, pfi_error *err)
{
    size_t have = r->end - r->start;
    if (have >= want || r->eof) return (ssize_t)have;
    if (want > r->max) {
        pfi_errorf(err, PFI_ENOMEM, "%s:%llu: record longer than %zu bytes", r->name,
                   (unsigned long long)r->line, r->max);
        return -1;
    }
    if (r->start > 0) { /* compact */
        memmove(r->buf, r->buf + r->start, have);
        r->start = 0;
        r->end = have;
    }
    if (r->cap < want + 1) {
        size_t nc = r->cap * 2 > 65536 ? r->cap * 2 : 65536;
        while (nc < want + 1) nc *= 2;
        if (nc > r->max + 1) nc = r->max + 1;
        char *b = realloc(r->buf, nc);
        if (!b) {
            pfi_errorf(err, PFI_ENOMEM, "%s: out of memory", r->name);
            return -1;
        }
        r->buf = b;
        r->cap = nc;
    }
    while (r->end - r->start < want && !r->eof) {
        ssize_t k = r->read(r->ud, r->buf + r->end, r->cap - 1 - r->end);
        if (k < 0) {
            if (r->read_error) pfi_errorf(err, PFI_EPARSE, "%s: %s", r->name, r->read_error);
            else pfi_errorf(err, PFI_EIO, "%s: read error: %s", r->name, strerror(errno));
            return -1;
        }
        if (k == 0) r->eof = 1;
        r->end += (size_t)k;
    }
    return (ssize_t)(r->end - r->start);
}

int pfi_reader_line(pfi_reader *r, char **line, size_t *len, pfi_error *err)
{
    size_t scanned = 0;
    for (;;) {
        size_t have = r->end - r->start;
        char *s = r->buf ? r->buf + r->start : NULL;
        char *nl = have > scanned ? memchr(s + scanned, '\n', have - scanned) : NULL;
        if (nl || (r->eof && have > 0)) {
            size_t n = nl ? (size_t)(nl - s) : have;
            if (memchr(s, '\0', n)) {
                pfi_errorf(err, PFI_EPARSE, "%s:%llu: binary data (NUL byte)", r->name,
                           (unsigned long long)r->line);
                return -1;
            }
            size_t consumed = nl ? n + 1 : n;
            r->last_nl = nl != NULL;
            if (n > 0 && s[n - 1] == '\r') n--;
            s[n] = '\0'; /* the buffer always has a spare byte */
            *line = s;
            *len = n;
            r->start += consumed;
            r->bytes += consumed;
            r->line++;
            return 1;
        }
        if (r->eof) return 0;
        if (have >= r->max) {
            pfi_errorf(err, PFI_ENOMEM, "%s:%llu: line longer than %zu bytes", r->name,
                       (unsigned long long)r->line, r->max);
            return -1;
        }
        scanned = have;
        size_t want = have + 65536 < r->max ? have + 65536 : r->max;
        if (pfi_reader_fill(r, want, err) < 0) return -1;
    }
}

uint64_t pfi_reader_lineno(const pfi_reader *r)
{
    return r->line - 1;
}

int pfi_reader_truncated_last(const pfi_reader *r)
{
    return !r->last_nl && r->eof && r->start == r->end;
}

ssize_t pfi_reader_read(pfi_reader *r, void *dst, size_t n, pfi_error *err)
{
    size_t done = 0;
    char *d = dst;
    while (done < n) {
        size_t have = r->end - r->start;
        if (have == 0) {
            if (r->eof) break;
            size_t want = n - done;
            if (want > r->max) want = r->max;
            if (want > 65536) want = 65536;
            if (pfi_reader_fill(r, want, err) < 0) return -1;
            have = r->end - r->start;
            if (have == 0) break;
        }
        size_t k = have < n - done ? have : n - done;
        memcpy(d + done, r->buf + r->start, k);
        r->start += k;
        r->bytes += k;
        done += k;
    }
    return (ssize_t)done;
}
