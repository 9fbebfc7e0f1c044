/* test_daemon_util.c — the daemons' log (daemon_util.h): JOURNAL_STREAM
 * names stderr only with stderr's own device and inode in decimal
 * ("DEV:INODE", nothing else accepted); a message's priority comes from its
 * first word; to the journal a line is "<N>message" with no timestamp, to
 * a file or a terminal "TIMESTAMP who: message"; while starting, an error
 * logged to a file is copied to stderr, afterwards not; SIGHUP's reopen
 * moves later lines to a new file after a rename; the daemons' shared
 * start-up refuses a bad clock setting or level (2) and a log file it
 * cannot open (1), each said in one line; a message with a newline, a
 * journal priority and other control characters (as a VTN's answer could
 * carry) stays one line, in the journal, a file and the start-up copy. */
#include "../testutil.h"

#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_util.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/pfi-dutil.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* "DEV:INO" of the file open on fd, plus add to the inode */
static void dev_ino(int fd, long long add, char *b, size_t n)
{
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    snprintf(b, n, "%llu:%llu", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino + (unsigned long long)add);
}

static void test_journal_stream(void **state)
{
    (void)state;
    char path[128], v[64];
    snprintf(path, sizeof path, "%s/f", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    int fd = fileno(f);
    dev_ino(fd, 0, v, sizeof v);
    assert_int_equal(pfi_journal_stream_is(v, fd), 1);
    dev_ino(fd, 1, v, sizeof v); /* another inode on the same device */
    assert_int_equal(pfi_journal_stream_is(v, fd), 0);
    struct stat sb;
    fstat(fd, &sb);
    char good[64];
    snprintf(good, sizeof good, "%llu:%llu", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino);
    /* malformed: each would name the file if read leniently */
    char bad[8][80];
    snprintf(bad[0], sizeof bad[0], "%s ", good);
    snprintf(bad[1], sizeof bad[1], " %s", good);
    snprintf(bad[2], sizeof bad[2], "+%s", good);
    snprintf(bad[3], sizeof bad[3], "%s:", good);
    snprintf(bad[4], sizeof bad[4], "%llu", (unsigned long long)sb.st_dev);
    snprintf(bad[5], sizeof bad[5], "%llu:", (unsigned long long)sb.st_dev);
    snprintf(bad[6], sizeof bad[6], "%llx:%llx", (unsigned long long)sb.st_dev + 0x100000,
             (unsigned long long)sb.st_ino); /* hex is not decimal */
    snprintf(bad[7], sizeof bad[7], "%llu:%llu99999999999999999999", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino); /* overflow */
    for (int i = 0; i < 8; i++) {
        if (pfi_journal_stream_is(bad[i], fd)) fail_msg("accepted '%s'", bad[i]);
    }
    assert_int_equal(pfi_journal_stream_is(NULL, fd), 0);
    assert_int_equal(pfi_journal_stream_is("", fd), 0);
    assert_int_equal(pfi_journal_stream_is(":", fd), 0);
    assert_int_equal(pfi_journal_stream_is(good, -1), 0); /* no such descriptor */
    fclose(f);
}

static void test_level(void **state)
{
    (void)state;
    assert_int_equal(pfi_daemon_log_level("error: x"), PFI_LOG_ERR);
    assert_int_equal(pfi_daemon_log_level("warning: x"), PFI_LOG_WARNING);
    assert_int_equal(pfi_daemon_log_level("lease granted"), PFI_LOG_INFO);
    assert_int_equal(pfi_daemon_log_level("errors: 3"), PFI_LOG_INFO);
    assert_int_equal(pfi_daemon_log_level("an error: x"), PFI_LOG_INFO);
    assert_int_equal(pfi_daemon_log_level(""), PFI_LOG_INFO);
}

/* the whole of a file */
static char *slurp(const char *path)
{
    static char b[8192];
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = fread(b, 1, sizeof b - 1, f);
    b[n] = '\0';
    fclose(f);
    return b;
}

/* stderr into the file path (returns the saved descriptor) */
static int stderr_to(const char *path)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(dup2(fileno(f), 2) == 2);
    fclose(f);
    return saved;
}

static void stderr_back(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static void test_journal_lines(void **state)
{
    (void)state;
    char err_path[128], v[64];
    snprintf(err_path, sizeof err_path, "%s/journal", dir);
    int saved = stderr_to(err_path);
    dev_ino(2, 0, v, sizeof v);
    setenv("JOURNAL_STREAM", v, 1);
    pfi_daemon_log l;
    pfi_daemon_log_init(&l, "pfi-test");
    pfi_daemon_logf(&l, "error: disk %d", 1);
    pfi_daemon_logf(&l, "warning: slow");
    pfi_daemon_logf(&l, "lease granted for %g s", 30.0);
    /* a long line is not cut */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    pfi_daemon_logf(&l, "%s", big);
    pfi_daemon_log_close(&l);
    stderr_back(saved);
    unsetenv("JOURNAL_STREAM");
    char *s = slurp(err_path);
    assert_non_null(s);
    char want[3200];
    snprintf(want, sizeof want,
             "<3>error: disk 1\n<4>warning: slow\n<6>lease granted for 30 s\n<6>%s\n", big);
    assert_string_equal(s, want);
}

/* not the journal: "YYYY-MM-DDTHH:MM:SS.mmmZ who: message" */
static void assert_stamped(const char *line, const char *who_msg)
{
    if (strlen(line) < 25 || line[4] != '-' || line[10] != 'T' || line[19] != '.' ||
        line[23] != 'Z' || line[24] != ' ')
        fail_msg("no timestamp: '%s'", line);
    assert_memory_equal(line + 25, who_msg, strlen(who_msg));
}

static void test_file_and_startup_copy(void **state)
{
    (void)state;
    char err_path[128], log_path[128], moved[128];
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    snprintf(moved, sizeof moved, "%s/log.1", dir);
    int saved = stderr_to(err_path);
    setenv("JOURNAL_STREAM", "1:1", 1); /* some other file: not the journal */
    pfi_daemon_log l;
    pfi_daemon_log_init(&l, "pfi-test");
    pfi_error e;
    assert_int_equal(pfi_daemon_log_open(&l, log_path, 0, &e), PFI_OK);
    pfi_daemon_logf(&l, "starting");
    pfi_daemon_logf(&l, "error: cannot bind");
    pfi_daemon_logf(&l, "warning: no token");
    pfi_daemon_log_started(&l);
    pfi_daemon_logf(&l, "error: later");
    /* SIGHUP after a rename: later lines in the new file */
    assert_int_equal(rename(log_path, moved), 0);
    assert_int_equal(pfi_daemon_log_reopen(&l, &e), PFI_OK);
    pfi_daemon_logf(&l, "after");
    pfi_daemon_log_close(&l);
    stderr_back(saved);
    unsetenv("JOURNAL_STREAM");
    /* stderr: only the start-up error, without a timestamp */
    assert_string_equal(slurp(err_path), "pfi-test: error: cannot bind\n");
    char *s = slurp(moved);
    assert_non_null(s);
    char *lines[5];
    int n = 0;
    for (char *p = strtok(s, "\n"); p && n < 5; p = strtok(NULL, "\n")) lines[n++] = p;
    assert_int_equal(n, 4);
    assert_stamped(lines[0], "pfi-test: starting");
    assert_stamped(lines[1], "pfi-test: error: cannot bind");
    assert_stamped(lines[2], "pfi-test: warning: no token");
    assert_stamped(lines[3], "pfi-test: error: later");
    s = slurp(log_path);
    assert_non_null(s);
    assert_stamped(s, "pfi-test: after\n");
}

static void test_open_fails(void **state)
{
    (void)state;
    pfi_daemon_log l;
    pfi_daemon_log_init(&l, "pfi-test");
    pfi_error e;
    char path[128];
    snprintf(path, sizeof path, "%s/no/such/dir/log", dir);
    assert_int_not_equal(pfi_daemon_log_open(&l, path, 0, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "/no/such/dir/log: cannot open: No such file or directory"));
    assert_null(l.file);
    /* nothing to reopen */
    assert_int_equal(pfi_daemon_log_reopen(&l, &e), PFI_ESTATE);
}

/* the shared start-up: each refusal's exit status and line, then a good
 * one opens the log file with its level, and SIGHUP's work names the file */
static void test_start(void **state)
{
    (void)state;
    char err_path[128], log_path[128], bad_path[128];
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    snprintf(log_path, sizeof log_path, "%s/start.log", dir);
    snprintf(bad_path, sizeof bad_path, "%s/no/such/dir/log", dir);
    int saved = stderr_to(err_path);
    setenv("JOURNAL_STREAM", "1:1", 1);
    pfi_daemon_log l;
    pfi_daemon_log_init(&l, "pfi-test");
    pfi_daemon_setup s = {.time_scale = 0, .epoch = NAN, .log_what = "--log"};
    assert_int_equal(pfi_daemon_start(&l, &s), 2); /* a scale of 0 */
    s.time_scale = 1;
    s.log_level = "loud";
    assert_int_equal(pfi_daemon_start(&l, &s), 2);
    s.log_level = NULL;
    s.log_path = bad_path;
    assert_int_equal(pfi_daemon_start(&l, &s), 1);
    pfi_daemon_log_hup(&l, "--log"); /* no file: said so */
    s.log_level = "warning";
    s.log_path = log_path;
    s.raise_nofile = 1;
    assert_int_equal(pfi_daemon_start(&l, &s), 0);
    assert_int_equal(l.max_level, PFI_LOG_WARNING);
    pfi_daemon_logf(&l, "an info line, dropped");
    pfi_daemon_logf(&l, "warning: kept");
    l.max_level = PFI_LOG_INFO; /* SIGHUP's lines are info */
    pfi_daemon_log_hup(&l, "--log");
    pfi_daemon_log_close(&l);
    stderr_back(saved);
    unsetenv("JOURNAL_STREAM");
    char *e = strdup(slurp(err_path)); /* slurp's buffer is reused below */
    assert_non_null(e);
    assert_non_null(strstr(e, "pfi-test: error: "));
    assert_non_null(strstr(e, "pfi-test: error: --log-level: 'loud' is not error, warning, info "
                              "or debug\n"));
    assert_non_null(strstr(e, "pfi-test: error: --log: "));
    assert_non_null(strstr(e, "/no/such/dir/log: cannot open: No such file or directory\n"));
    assert_non_null(strstr(e, "pfi-test: SIGHUP: no --log file to reopen; ignored\n"));
    char *f = slurp(log_path);
    assert_non_null(f);
    assert_null(strstr(f, "dropped"));
    assert_non_null(strstr(f, "pfi-test: warning: kept\n"));
    assert_non_null(strstr(f, "pfi-test: SIGHUP: log file "));
    assert_non_null(strstr(f, "/start.log reopened\n"));
    free(e);
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    assert_true(rl.rlim_cur == rl.rlim_max);
}

/* what a VTN could put in an answer or an event field */
static const char forged[] = "said: x\n<0>ALARM: forged\r\x1b[2J\tz\x7f";
static const char escaped[] = "said: x\\n<0>ALARM: forged\\r\\x1b[2J\\tz\\x7f";

static void test_one_line(void **state)
{
    (void)state;
    char err_path[128], log_path[128], v[64];
    snprintf(err_path, sizeof err_path, "%s/journal1", dir);
    snprintf(log_path, sizeof log_path, "%s/log1", dir);
    /* the journal: one "<4>" line, no "<0>" line */
    int saved = stderr_to(err_path);
    dev_ino(2, 0, v, sizeof v);
    setenv("JOURNAL_STREAM", v, 1);
    pfi_daemon_log l;
    pfi_daemon_log_init(&l, "pfi-test");
    pfi_daemon_logf(&l, "warning: VTN %s", forged);
    pfi_daemon_log_close(&l);
    /* a file, and the start-up copy of an error on stderr (the journal) */
    pfi_daemon_log_init(&l, "pfi-test");
    pfi_error e;
    assert_int_equal(pfi_daemon_log_open(&l, log_path, 0, &e), PFI_OK);
    pfi_daemon_logf(&l, "error: VTN %s", forged);
    pfi_daemon_log_close(&l);
    stderr_back(saved);
    unsetenv("JOURNAL_STREAM");
    char want[256];
    snprintf(want, sizeof want, "<4>warning: VTN %s\n<3>error: VTN %s\n", escaped, escaped);
    assert_string_equal(slurp(err_path), want);
    char *s = slurp(log_path);
    assert_non_null(s);
    assert_int_equal(strchr(s, '\n') - s + 1, (long)strlen(s)); /* one line */
    snprintf(want, sizeof want, "pfi-test: error: VTN %s\n", escaped);
    assert_stamped(s, want);
    /* the escape itself: whole escapes only when cut */
    char out[12];
    assert_int_equal(pfi_log_escape("ab\ncd", out, sizeof out), 6);
    assert_string_equal(out, "ab\\ncd");
    assert_int_equal(pfi_log_escape("abcdefgh\x01", out, sizeof out), 8);
    assert_string_equal(out, "abcdefgh");
    assert_int_equal(pfi_log_escape("caf\xc3\xa9", out, sizeof out), 5); /* UTF-8 kept */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_stream), cmocka_unit_test(test_level),
        cmocka_unit_test(test_journal_lines),  cmocka_unit_test(test_file_and_startup_copy),
        cmocka_unit_test(test_open_fails),     cmocka_unit_test(test_start),
        cmocka_unit_test(test_one_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
