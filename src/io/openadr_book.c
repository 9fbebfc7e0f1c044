/* openadr_book.c — what a VEN keeps of the OpenADR event versions it has
 * seen (openadr.h): the bounded book of versions per event id, and the
 * limit on log lines about versions not acted on. */
#include "openadr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* an id of a full book that may be forgotten: deleted ones first, then
   the least recently seen */
typedef struct book_victim {
    unsigned long long seen;
    size_t i;
    int deleted;
} book_victim;

static int victim_cmp(const void *a, const void *b)
{
    const book_victim *x = a, *y = b;
    if (x->deleted != y->deleted) return y->deleted - x->deleted;
    return (x->seen > y->seen) - (x->seen < y->seen);
}

/* room in a full book: up to PFI_OADR_BOOK_MAX / 8 ids forgotten, never
   one pending() keeps; how many were */
static size_t book_make_room(pfi_oadr_book *b)
{
    book_victim *o = malloc(b->n * sizeof *o);
    unsigned char *gone = calloc(b->n, 1);
    size_t k = 0, want = PFI_OADR_BOOK_MAX / 8;
    for (size_t i = 0; o && gone && i < b->n; i++)
        o[i] = (book_victim){b->v[i].seen, i, b->v[i].deleted};
    if (o && gone) qsort(o, b->n, sizeof *o, victim_cmp);
    /* pending() is asked only down the order, until enough are found */
    for (size_t j = 0; o && gone && j < b->n && k < want; j++) {
        if (b->pending && b->pending(b->ud, b->v[o[j].i].id)) continue;
        gone[o[j].i] = 1;
        k++;
    }
    size_t w = 0;
    for (size_t i = 0; k && i < b->n; i++)
        if (!gone[i]) b->v[w++] = b->v[i];
    if (k) b->n = w;
    b->forgotten += k;
    free(o);
    free(gone);
    return k;
}

pfi_oadr_verdict pfi_oadr_book_note(pfi_oadr_book *b, const char *id, double modified, int deleted,
                                    int *report)
{
    *report = 1;
    b->tick++;
    for (size_t i = 0; i < b->n; i++) {
        pfi_oadr_seen *s = &b->v[i];
        if (strcmp(s->id, id)) continue;
        s->seen = b->tick;
        if (modified > s->modified || (deleted && !s->deleted && modified == s->modified)) {
            s->modified = modified;
            s->deleted = deleted;
            s->reported = NAN;
            return PFI_OADR_NEWER;
        }
        if (modified == s->modified) {
            *report = 0;
            return PFI_OADR_SAME;
        }
        *report = !(s->reported == modified);
        s->reported = modified;
        return PFI_OADR_OLDER;
    }
    if (b->n >= PFI_OADR_BOOK_MAX && !book_make_room(b)) return PFI_OADR_NEW; /* not recorded */
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        if (cap > PFI_OADR_BOOK_MAX) cap = PFI_OADR_BOOK_MAX;
        pfi_oadr_seen *v = realloc(b->v, cap * sizeof *v);
        if (!v) return PFI_OADR_NEW;
        b->v = v;
        b->cap = cap;
    }
    pfi_oadr_seen *s = &b->v[b->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    s->modified = modified;
    s->reported = NAN;
    s->deleted = deleted;
    s->seen = b->tick;
    return PFI_OADR_NEW;
}

void pfi_oadr_book_free(pfi_oadr_book *b)
{
    free(b->v);
    memset(b, 0, sizeof *b);
}

/* the window that ended by now_s: its suppressed count, and no window open */
static unsigned long long window_ended(pfi_oadr_loglimit *l, double now_s)
{
    if ((!l->logged && !l->suppressed) || now_s - l->start < PFI_OADR_LOG_WINDOW_S) return 0;
    unsigned long long n = l->suppressed;
    l->logged = 0;
    l->suppressed = 0;
    return n;
}

int pfi_oadr_log_allow(pfi_oadr_loglimit *l, double now_s, unsigned long long *summary)
{
    *summary = window_ended(l, now_s);
    if (!l->logged && !l->suppressed) l->start = now_s; /* a window opens */
    if (l->logged < PFI_OADR_LOG_BURST) {
        l->logged++;
        return 1;
    }
    l->suppressed++;
    return 0;
}

unsigned long long pfi_oadr_log_due(pfi_oadr_loglimit *l, double now_s)
{
    return window_ended(l, now_s);
}
