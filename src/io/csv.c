/* csv.c — streaming CSV record parser (see csv.h). Two passes per record:
 * find its end honouring quotes (refilling the buffer as needed, without
 * modifying it), then split and unescape the fields in place. */
#include "pfi/csv.h"

#include <stdlib.h>
#include <string.h>

#include "vec.h"

void pfi_csv_init(pfi_csv *c, pfi_reader *r)
{
    memset(c, 0, sizeof *c);
    c->r = r;
}

void pfi_csv_dispose(pfi_csv *c)
{
    free(c->fields);
    free(c->lens);
    c->fields = NULL;
    c->lens = NULL;
}

static int push_field(pfi_csv *c, char *s, size_t n, pfi_error *err)
{
    if (c->nfields == c->fcap) { /* parallel arrays: one capacity */
        size_t nc = 0;
        if (pfi_vec_next_cap(c->fcap, c->nfields + 1, sizeof(size_t), &nc, NULL) ||
            PFI_VEC_RESIZE(c->fields, nc, NULL) || PFI_VEC_RESIZE(c->lens, nc, NULL))
            return pfi_errorf(err, PFI_ENOMEM, "out of memory"), -1;
        c->fcap = nc;
    }
    c->fields[c->nfields] = s;
    c->lens[c->nfields] = n;
    c->nfields++;
    return 0;
}

/* pass 2: the record s (rec_len bytes, NUL-terminated) split into
 * c->fields in place, quoted fields unescaped; 1, or -1 (err set) */
static int split_record(pfi_csv *c, char *s, size_t rec_len, pfi_error *err)
{
    const pfi_reader *r = c->r;
    c->nfields = 0;
    size_t i = 0;
    for (;;) {
        if (i < rec_len && s[i] == '"') {
            size_t out = i, j = i + 1;
            char *start = s + i;
            for (;;) {
                if (j >= rec_len) {
                    pfi_errorf(err, PFI_EPARSE, "%s:%llu: unterminated quoted field", r->name,
                               (unsigned long long)c->line);
                    return -1;
                }
                if (s[j] == '"') {
                    if (j + 1 < rec_len && s[j + 1] == '"') {
                        s[out++] = '"';
                        j += 2;
                        continue;
                    }
                    j++;
                    break;
                }
                s[out++] = s[j++];
            }
            if (j < rec_len && s[j] != ',') {
                pfi_errorf(err, PFI_EPARSE,
                           "%s:%llu: field %zu: unexpected text after closing quote", r->name,
                           (unsigned long long)c->line, c->nfields + 1);
                return -1;
            }
            size_t n = out - i;
            start[n] = '\0';
            if (push_field(c, start, n, err) < 0) return -1;
            if (j >= rec_len) break;
            i = j + 1;
            if (i == rec_len) { /* trailing comma: one more empty field */
                if (push_field(c, s + rec_len, 0, err) < 0) return -1;
                break;
            }
        } else {
            char *comma = memchr(s + i, ',', rec_len - i);
            size_t n = comma ? (size_t)(comma - (s + i)) : rec_len - i;
            s[i + n] = '\0';
            if (push_field(c, s + i, n, err) < 0) return -1;
            if (!comma) break;
            i += n + 1;
            if (i == rec_len) {
                if (push_field(c, s + rec_len, 0, err) < 0) return -1;
                break;
            }
        }
    }
    return 1;
}

int pfi_csv_next(pfi_csv *c, pfi_error *err)
{
    pfi_reader *r = c->r;
    for (;;) {
        /* pass 1: find the end of the record */
        size_t pos = 0;
        int inq = 0;
        size_t newlines = 0;
        size_t rec_len, consumed;
        for (;;) {
            size_t have = r->end - r->start;
            const char *s = r->buf ? r->buf + r->start : NULL;
            if (!inq && pos < have) {
                /* fast path: the next newline, if no quote comes before it */
                const char *nl = memchr(s + pos, '\n', have - pos);
                if (nl && !memchr(s + pos, '"', (size_t)(nl - (s + pos)))) {
                    size_t end = (size_t)(nl - s);
                    if (memchr(s + pos, '\0', end - pos)) {
                        pfi_errorf(err, PFI_EPARSE, "%s:%llu: binary data (NUL byte)", r->name,
                                   (unsigned long long)(r->line + newlines));
                        return -1;
                    }
                    pos = end;
                }
            }
            while (pos < have) {
                char ch = s[pos];
                if (ch == '"') inq = !inq;
                else if (ch == '\n') {
                    if (!inq) break;
                    newlines++;
                } else if (ch == '\0') {
                    pfi_errorf(err, PFI_EPARSE, "%s:%llu: binary data (NUL byte)", r->name,
                               (unsigned long long)(r->line + newlines));
                    return -1;
                }
                pos++;
            }
            if (pos < have) {
                rec_len = pos;
                consumed = pos + 1;
                break;
            }
            if (r->eof) {
                if (have == 0) return 0;
                if (inq) {
                    pfi_errorf(err, PFI_EPARSE, "%s:%llu: unterminated quoted field", r->name,
                               (unsigned long long)r->line);
                    return -1;
                }
                rec_len = consumed = have;
                break;
            }
            if (have >= r->max) {
                pfi_errorf(err, PFI_ENOMEM, "%s:%llu: record longer than %zu bytes", r->name,
                           (unsigned long long)r->line, r->max);
                return -1;
            }
            size_t want = have + 65536 < r->max ? have + 65536 : r->max;
            if (pfi_reader_fill(r, want, err) < 0) return -1;
        }
        char *s = r->buf + r->start;
        c->line = r->line;
        r->start += consumed;
        r->bytes += consumed;
        r->line += newlines + (consumed > rec_len ? 1 : 0);
        if (rec_len > 0 && s[rec_len - 1] == '\r') rec_len--;
        s[rec_len] = '\0';
        if (rec_len == 0) continue; /* blank line */
        return split_record(c, s, rec_len, err);
    }
}

void pfi_csv_write_text(FILE *f, const char *s)
{
    size_t n = strcspn(s, ",\"\r\n");
    if (s[n] == '\0') {
        fwrite(s, 1, n, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
