/* test_atomic.c — output files by what the path is: a symlink stays a link
 * and its final target (in another directory) gets the content; a dangling
 * link gets its target created; the mode of an existing file is kept; a
 * FIFO and a /dev/fd/N pipe are written through, never replaced; a
 * directory is an error; the daemons' private variant replaces a symlink at
 * the path and never writes through it. No test touches /dev itself. */
#include "../testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"

static char dir[64];

static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/pfi-atomic-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *name)
{
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void content_is(const char *path, const char *want)
{
    char b[256] = {0};
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(b, 1, sizeof b - 1, f);
    fclose(f);
    b[n] = '\0';
    assert_string_equal(b, want);
}

/* names in directory d containing ".tmp." (left-over temporary files) */
static int tmp_files(const char *d)
{
    DIR *dp = opendir(d);
    assert_non_null(dp);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(dp);
    return n;
}

static void symlink_kept_target_updated(void **s)
{
    (void)s;
    assert_int_equal(mkdir(at("a"), 0755), 0);
    assert_int_equal(mkdir(at("b"), 0755), 0);
    put(at("b/real.csv"), "old\n");
    assert_int_equal(symlink("../b/real.csv", at("a/link.csv")), 0);
    assert_int_equal(pfi_write_file_atomic(at("a/link.csv"), "new\n", 4, NULL), PFI_OK);
    struct stat sb;
    assert_int_equal(lstat(at("a/link.csv"), &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    content_is(at("b/real.csv"), "new\n");
    assert_int_equal(tmp_files(at("a")), 0);
    assert_int_equal(tmp_files(at("b")), 0);
    /* a chain of two links, the second absolute */
    assert_int_equal(symlink(at("a/link.csv"), at("chain.csv")), 0);
    assert_int_equal(pfi_write_file_atomic(at("chain.csv"), "newer\n", 6, NULL), PFI_OK);
    assert_int_equal(lstat(at("chain.csv"), &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    content_is(at("b/real.csv"), "newer\n");
}

static void dangling_symlink_creates_target(void **s)
{
    (void)s;
    assert_int_equal(symlink("made.csv", at("dangling.csv")), 0);
    assert_int_equal(pfi_write_file_atomic(at("dangling.csv"), "x\n", 2, NULL), PFI_OK);
    struct stat sb;
    assert_int_equal(lstat(at("dangling.csv"), &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(lstat(at("made.csv"), &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    content_is(at("made.csv"), "x\n");
    /* a loop is an error, not a hang */
    assert_int_equal(symlink("loop2", at("loop1")), 0);
    assert_int_equal(symlink("loop1", at("loop2")), 0);
    pfi_error e;
    assert_int_equal(pfi_write_file_atomic(at("loop1"), "x", 1, &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "loop1"));
}

static void mode_kept_new_mode_from_umask(void **s)
{
    (void)s;
    put(at("m.csv"), "old\n");
    assert_int_equal(chmod(at("m.csv"), 0600), 0);
    assert_int_equal(pfi_write_file_atomic(at("m.csv"), "new\n", 4, NULL), PFI_OK);
    struct stat sb;
    assert_int_equal(stat(at("m.csv"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    content_is(at("m.csv"), "new\n");
    mode_t old = umask(027);
    pfi_status st = pfi_write_file_atomic(at("n.csv"), "n\n", 2, NULL);
    umask(old);
    assert_int_equal(st, PFI_OK);
    assert_int_equal(stat(at("n.csv"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0640);
}

static void fifo_written_through(void **s)
{
    (void)s;
    assert_int_equal(mkfifo(at("fifo"), 0600), 0);
    /* the read end first (non-blocking), so opening the write end does not wait */
    int rd = open(at("fifo"), O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(pfi_write_file_atomic(at("fifo"), "via fifo\n", 9, NULL), PFI_OK);
    char b[32] = {0};
    assert_int_equal(read(rd, b, sizeof b - 1), 9);
    close(rd);
    assert_string_equal(b, "via fifo\n");
    struct stat sb;
    assert_int_equal(lstat(at("fifo"), &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(tmp_files(dir), 0);
}

static void dev_fd_pipe_written_through(void **s)
{
    (void)s;
    int p[2];
    assert_int_equal(pipe(p), 0);
    char path[32];
    snprintf(path, sizeof path, "/dev/fd/%d", p[1]);
    /* a pipe answers fsync with EINVAL: that must not be a write failure */
    assert_int_equal(pfi_write_file_atomic(path, "via pipe\n", 9, NULL), PFI_OK);
    close(p[1]);
    char b[32] = {0};
    assert_int_equal(read(p[0], b, sizeof b - 1), 9);
    close(p[0]);
    assert_string_equal(b, "via pipe\n");
    /* a descriptor that is not open: a clear error */
    pfi_error e;
    assert_int_equal(pfi_write_file_atomic("/dev/fd/987", "x", 1, &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "/dev/fd/987: cannot open"));
}

static void directory_is_an_error(void **s)
{
    (void)s;
    pfi_error e;
    pfi_outfile o;
    assert_int_equal(pfi_out_open(&o, dir, &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "is a directory"));
    assert_null(o.f);
    assert_int_equal(tmp_files(dir), 0);
}

static void private_never_follows_a_symlink(void **s)
{
    (void)s;
    put(at("victim"), "precious\n");
    assert_int_equal(symlink("victim", at("state.json")), 0);
    assert_int_equal(pfi_write_file_private(at("state.json"), "{}\n", 3, NULL), PFI_OK);
    content_is(at("victim"), "precious\n");
    struct stat sb;
    assert_int_equal(lstat(at("state.json"), &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0644);
    content_is(at("state.json"), "{}\n");
    assert_int_equal(tmp_files(dir), 0);
    /* an aborted write leaves neither the file nor a temporary file */
    pfi_outfile o;
    assert_int_equal(pfi_out_open_private(&o, at("p2.json"), NULL), PFI_OK);
    fputs("half", o.f);
    pfi_out_abort(&o);
    assert_int_not_equal(lstat(at("p2.json"), &sb), 0);
    assert_int_equal(tmp_files(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(symlink_kept_target_updated, setup, teardown),
        cmocka_unit_test_setup_teardown(dangling_symlink_creates_target, setup, teardown),
        cmocka_unit_test_setup_teardown(mode_kept_new_mode_from_umask, setup, teardown),
        cmocka_unit_test_setup_teardown(fifo_written_through, setup, teardown),
        cmocka_unit_test_setup_teardown(dev_fd_pipe_written_through, setup, teardown),
        cmocka_unit_test_setup_teardown(directory_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(private_never_follows_a_symlink, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
