/* test_openadr_book.c — the bounds of what a flood of OpenADR event ids
 * costs the VEN (openadr.h): the book of versions seen holds at most
 * PFI_OADR_BOOK_MAX ids whatever comes; when full it forgets deleted ids
 * first, then the least recently seen (a repeated poll keeps an id recent),
 * never an id pending() says is scheduled or active, and records nothing
 * when everything is pending; the rejection lines are limited to the first
 * PFI_OADR_LOG_BURST of a minute, the rest counted for one summary line.
 * (The versions themselves: test_openadr.c.) */
#include "../testutil.h"

#include <stdio.h>

#include "openadr.h"

/* "live-*" ids have a step scheduled or active; *all: every id has */
static int pending(void *ud, const char *id)
{
    return (ud && *(int *)ud) || !strncmp(id, "live-", 5);
}

static pfi_oadr_verdict note(pfi_oadr_book *b, const char *prefix, int k, int deleted)
{
    char id[64];
    int rep;
    snprintf(id, sizeof id, "%s%d", prefix, k);
    pfi_oadr_verdict v = pfi_oadr_book_note(b, id, 100, deleted, &rep);
    if (v == PFI_OADR_NEW) assert_int_equal(rep, 1);
    assert_true(b->n <= PFI_OADR_BOOK_MAX);
    return v;
}

static void bounded_book(void **s)
{
    (void)s;
    pfi_oadr_book b = {0};
    b.pending = pending;
    const int nlive = 100, ndel = 100, nold = PFI_OADR_BOOK_MAX - 200;
    for (int k = 0; k < nlive; k++) assert_int_equal(note(&b, "live-", k, 0), PFI_OADR_NEW);
    for (int k = 0; k < ndel; k++) assert_int_equal(note(&b, "del-", k, 1), PFI_OADR_NEW);
    for (int k = 0; k < nold; k++) assert_int_equal(note(&b, "old-", k, 0), PFI_OADR_NEW);
    assert_int_equal(b.n, PFI_OADR_BOOK_MAX);
    /* full: one new id forgets an eighth, the deleted first, then the
       oldest of the rest; the live ones, older still, stay */
    assert_int_equal(note(&b, "new-", 0, 0), PFI_OADR_NEW);
    const int batch = PFI_OADR_BOOK_MAX / 8, old_gone = batch - ndel;
    assert_int_equal(b.forgotten, batch);
    assert_int_equal(b.n, PFI_OADR_BOOK_MAX - batch + 1);
    for (int k = 0; k < nlive; k++) assert_int_equal(note(&b, "live-", k, 0), PFI_OADR_SAME);
    assert_int_equal(note(&b, "old-", old_gone, 0), PFI_OADR_SAME);    /* the oldest kept */
    assert_int_equal(note(&b, "old-", old_gone - 1, 0), PFI_OADR_NEW); /* forgotten */
    assert_int_equal(note(&b, "del-", ndel - 1, 0), PFI_OADR_NEW);     /* forgotten */
    /* a flood of new ids: the book stays bounded; the live ids and one a
       VTN keeps serving (noted again between the flood's) stay known */
    assert_int_equal(note(&b, "served-", 0, 0), PFI_OADR_NEW);
    for (int k = 0; k < 20000; k++) {
        assert_int_equal(note(&b, "flood-", k, 0), PFI_OADR_NEW);
        if (k % 1000 == 0) assert_int_equal(note(&b, "served-", 0, 0), PFI_OADR_SAME);
    }
    for (int k = 0; k < nlive; k++) assert_int_equal(note(&b, "live-", k, 0), PFI_OADR_SAME);
    assert_int_equal(note(&b, "flood-", 19999, 0), PFI_OADR_SAME);
    assert_int_equal(note(&b, "flood-", 0, 0), PFI_OADR_NEW);
    assert_true(b.cap <= PFI_OADR_BOOK_MAX);
    pfi_oadr_book_free(&b);
}

/* everything pending: nothing is forgotten, a new id is not recorded */
static void all_pending(void **s)
{
    (void)s;
    int all = 1;
    pfi_oadr_book b = {0};
    b.pending = pending;
    b.ud = &all;
    for (int k = 0; k < PFI_OADR_BOOK_MAX; k++) note(&b, "x-", k, 0);
    assert_int_equal(note(&b, "y-", 0, 0), PFI_OADR_NEW);
    assert_int_equal(note(&b, "y-", 0, 0), PFI_OADR_NEW); /* still not recorded */
    assert_int_equal(b.n, PFI_OADR_BOOK_MAX);
    assert_int_equal(b.forgotten, 0);
    assert_int_equal(note(&b, "x-", 0, 0), PFI_OADR_SAME);
    all = 0; /* x-0 was just noted: the others go first */
    assert_int_equal(note(&b, "y-", 0, 0), PFI_OADR_NEW);
    assert_int_equal(note(&b, "y-", 0, 0), PFI_OADR_SAME);
    assert_int_equal(note(&b, "x-", 0, 0), PFI_OADR_SAME);
    assert_int_equal(note(&b, "x-", 1, 0), PFI_OADR_NEW);
    pfi_oadr_book_free(&b);
}

static void log_limit(void **s)
{
    (void)s;
    pfi_oadr_loglimit l = {0};
    unsigned long long sum;
    int logged = 0;
    /* 25 lines in the first second: 20 logged, 5 counted */
    for (int i = 0; i < 25; i++) {
        logged += pfi_oadr_log_allow(&l, 1000 + i * 0.04, &sum);
        assert_int_equal(sum, 0);
    }
    assert_int_equal(logged, PFI_OADR_LOG_BURST);
    assert_int_equal(pfi_oadr_log_due(&l, 1030), 0);   /* the minute still runs */
    assert_int_equal(pfi_oadr_log_due(&l, 1060.5), 5); /* then its summary, once */
    assert_int_equal(pfi_oadr_log_due(&l, 1061), 0);
    /* a new window with the next line; its summary with the first line after it */
    logged = 0;
    for (int i = 0; i < 30; i++) logged += pfi_oadr_log_allow(&l, 2000 + i, &sum);
    assert_int_equal(logged, PFI_OADR_LOG_BURST);
    assert_int_equal(pfi_oadr_log_allow(&l, 2059, &sum), 0); /* still the same minute */
    assert_int_equal(sum, 0);
    assert_int_equal(pfi_oadr_log_allow(&l, 2061, &sum), 1);
    assert_int_equal(sum, 11);
    /* a quiet window says nothing */
    assert_int_equal(pfi_oadr_log_due(&l, 3000), 0);
    assert_int_equal(pfi_oadr_log_allow(&l, 3001, &sum), 1);
    assert_int_equal(sum, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(bounded_book),
                                       cmocka_unit_test(all_pending), cmocka_unit_test(log_limit)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
