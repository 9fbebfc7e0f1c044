/* test_vec.c — the growable array (vec.h) and buffer (buf.h): growth keeps
 * the contents, n * size overflow is refused before any allocation, out of
 * memory (injected: this test is linked with -Wl,--wrap=realloc) is a
 * PFI_ENOMEM with a one-line message and leaves the array as it was, and
 * the buffer formats long text, stays NUL-terminated, honours its limit
 * and keeps its first failure. */
#include "../testutil.h"

#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "vec.h"

/* realloc, failing the fail_after-th call from now (0: never) */
void *__real_realloc(void *p, size_t n);
static int fail_after;
static size_t realloc_calls;
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    realloc_calls++;
    if (fail_after > 0 && --fail_after == 0) return NULL;
    return __real_realloc(p, n);
}

static void vec_growth(void **s)
{
    (void)s;
    double *v = NULL;
    size_t n = 0, cap = 0;
    pfi_error e;
    for (size_t i = 0; i < 10000; i++) {
        assert_int_equal(PFI_VEC_RESERVE(v, cap, n + 1, &e), PFI_OK);
        v[n++] = (double)i;
    }
    assert_true(cap >= 10000 && cap < 20000 * 2);
    for (size_t i = 0; i < n; i++) assert_near(v[i], (double)i, 0);
    /* reserving what is there does not reallocate */
    size_t calls = realloc_calls, c0 = cap;
    assert_int_equal(PFI_VEC_RESERVE(v, cap, 100, &e), PFI_OK);
    assert_int_equal(realloc_calls, calls);
    assert_int_equal(cap, c0);
    free(v);
}

static void vec_push_and_resize(void **s)
{
    (void)s;
    struct pair {
        int a;
        double b;
    } *v = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 100; i++) {
        struct pair x = {i, i * 0.5};
        assert_int_equal(pfi_vec_push(&v, &n, &cap, &x, sizeof x, NULL), PFI_OK);
    }
    assert_int_equal(n, 100);
    assert_int_equal(v[99].a, 99);
    assert_near(v[42].b, 21, 0);
    assert_int_equal(PFI_VEC_RESIZE(v, 3, NULL), PFI_OK);
    assert_int_equal(v[2].a, 2);
    /* parallel arrays sharing one capacity */
    size_t nc;
    assert_int_equal(pfi_vec_next_cap(16, 17, sizeof(double), &nc, NULL), PFI_OK);
    assert_int_equal(nc, 32);
    assert_int_equal(pfi_vec_next_cap(0, 1000, sizeof(double), &nc, NULL), PFI_OK);
    assert_int_equal(nc, 1024);
    free(v);
}

static void vec_overflow(void **s)
{
    (void)s;
    double *v = NULL;
    size_t cap = 0;
    pfi_error e;
    size_t calls = realloc_calls;
    assert_int_equal(PFI_VEC_RESERVE(v, cap, SIZE_MAX / 8 + 1, &e), PFI_ENOMEM);
    assert_int_equal(realloc_calls, calls); /* refused before asking */
    assert_null(v);
    assert_int_equal(cap, 0);
    assert_non_null(strstr(e.msg, "out of memory"));
    assert_null(strchr(e.msg, '\n'));
    assert_int_equal(PFI_VEC_RESIZE(v, SIZE_MAX / 4, &e), PFI_ENOMEM);
    size_t nc = 7;
    assert_int_equal(pfi_vec_next_cap(0, SIZE_MAX, 2, &nc, &e), PFI_ENOMEM);
    assert_int_equal(nc, 7);
    /* growth near the limit stops at the limit, never wraps */
    size_t max = (size_t)PTRDIFF_MAX / 8;
    assert_int_equal(pfi_vec_next_cap(max / 2 + 1, max / 2 + 2, 8, &nc, &e), PFI_OK);
    assert_int_equal(nc, max);
    assert_null(pfi_calloc(SIZE_MAX / 2, 4, &e));
    assert_int_equal(e.code, PFI_ENOMEM);
    size_t n = SIZE_MAX;
    int x = 1;
    int *iv = NULL;
    assert_int_equal(pfi_vec_push(&iv, &n, &cap, &x, sizeof x, &e), PFI_ENOMEM);
}

static void vec_oom(void **s)
{
    (void)s;
    int *v = NULL;
    size_t n = 0, cap = 0;
    pfi_error e;
    for (int i = 0; i < 16; i++) {
        assert_int_equal(pfi_vec_push(&v, &n, &cap, &i, sizeof i, &e), PFI_OK);
    }
    int *before = v;
    fail_after = 1;
    int x = 16;
    assert_int_equal(pfi_vec_push(&v, &n, &cap, &x, sizeof x, &e), PFI_ENOMEM);
    fail_after = 0;
    assert_ptr_equal(v, before); /* unchanged: the caller still owns it */
    assert_int_equal(n, 16);
    assert_int_equal(cap, 16);
    assert_int_equal(v[15], 15);
    assert_string_equal(e.msg, "out of memory (32 elements of 4 bytes)");
    /* and it grows again once memory is back */
    assert_int_equal(pfi_vec_push(&v, &n, &cap, &x, sizeof x, &e), PFI_OK);
    assert_int_equal(v[16], 16);
    free(v);
}

static void buf_text(void **s)
{
    (void)s;
    pfi_buf b = {0};
    pfi_error e;
    assert_int_equal(pfi_buf_status(&b, &e), PFI_OK);
    size_t len = 99;
    char *t = pfi_buf_take(&b, &len);
    assert_string_equal(t, ""); /* nothing added: an empty text, not NULL */
    assert_int_equal(len, 0);
    free(t);
    pfi_buf_puts(&b, "a");
    pfi_buf_add(&b, "bc\0d", 4); /* any bytes */
    assert_int_equal(b.n, 5);
    assert_int_equal(b.p[5], '\0');
    assert_memory_equal(b.p, "abc\0d", 6);
    pfi_buf_clear(&b);
    assert_int_equal(b.n, 0);
    assert_string_equal(b.p, "");
    for (int i = 0; i < 1000; i++) pfi_buf_printf(&b, "%d,", i);
    assert_int_equal(pfi_buf_status(&b, &e), PFI_OK);
    assert_int_equal(strncmp(b.p, "0,1,2,", 6), 0);
    assert_non_null(strstr(b.p, ",998,999,"));
    assert_int_equal(strlen(b.p), b.n);
    t = pfi_buf_take(&b, &len);
    assert_int_equal(len, strlen(t));
    assert_null(b.p);
    assert_int_equal(b.n, 0);
    free(t);
    pfi_buf_dispose(&b);
}

static void buf_long_printf(void **s)
{
    (void)s;
    /* one printf far longer than any initial capacity, twice */
    size_t big = 200000;
    char *long_s = malloc(big + 1);
    memset(long_s, 'x', big);
    long_s[big] = '\0';
    pfi_buf b = {0};
    pfi_buf_printf(&b, "<%s>", long_s);
    pfi_buf_printf(&b, "[%s|%d]", long_s, 42);
    assert_int_equal(pfi_buf_status(&b, NULL), PFI_OK);
    assert_int_equal(b.n, 2 * big + 2 + 5);
    assert_int_equal(b.p[0], '<');
    assert_int_equal(b.p[big + 1], '>');
    assert_int_equal(b.p[big + 2], '[');
    assert_string_equal(b.p + b.n - 4, "|42]");
    assert_int_equal(strlen(b.p), b.n);
    free(long_s);
    pfi_buf_dispose(&b);
}

static void buf_limit(void **s)
{
    (void)s;
    pfi_buf b = {.max = 10};
    pfi_error e;
    assert_int_equal(pfi_buf_add(&b, "0123456789", 10), PFI_OK);
    assert_int_equal(pfi_buf_add(&b, "x", 1), PFI_ENOMEM);
    /* the failure is kept: later additions do nothing, even small ones */
    b.max = 0;
    assert_int_equal(pfi_buf_puts(&b, ""), PFI_ENOMEM);
    assert_int_equal(b.n, 10);
    assert_string_equal(b.p, "0123456789");
    b.max = 10;
    assert_int_equal(pfi_buf_status(&b, &e), PFI_ENOMEM);
    assert_string_equal(e.msg, "more than 10 bytes");
    size_t len = 5;
    assert_null(pfi_buf_take(&b, &len));
    assert_int_equal(len, 0);
    assert_int_equal(b.max, 10); /* the limit stays */
    assert_int_equal(pfi_buf_printf(&b, "%s", "0123456789a"), PFI_ENOMEM);
    pfi_buf_dispose(&b);
}

static void buf_oom(void **s)
{
    (void)s;
    pfi_buf b = {0};
    pfi_error e;
    pfi_buf_puts(&b, "kept");
    fail_after = 1;
    char line[300];
    memset(line, 'y', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    assert_int_equal(pfi_buf_printf(&b, "%s", line), PFI_ENOMEM);
    fail_after = 0;
    assert_string_equal(b.p, "kept"); /* nothing partial */
    assert_int_equal(pfi_buf_puts(&b, "more"), PFI_ENOMEM);
    assert_int_equal(pfi_buf_status(&b, &e), PFI_ENOMEM);
    assert_non_null(strstr(e.msg, "out of memory"));
    pfi_buf_clear(&b);
    assert_int_equal(pfi_buf_printf(&b, "%s", line), PFI_OK);
    assert_int_equal(b.n, sizeof line - 1);
    pfi_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vec_growth),   cmocka_unit_test(vec_push_and_resize),
        cmocka_unit_test(vec_overflow), cmocka_unit_test(vec_oom),
        cmocka_unit_test(buf_text),     cmocka_unit_test(buf_long_printf),
        cmocka_unit_test(buf_limit),    cmocka_unit_test(buf_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
