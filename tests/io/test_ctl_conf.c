/* test_ctl_conf.c — the pfi CLI's duration arguments (ISO 8601 or 90s, 5m,
 * 1h, 1h30m) and its controller configuration file: keys read, an unknown
 * key an error naming the file and the key, a missing file PFI_ENOTFOUND. */
#include "../testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctl_conf.h"

static void durations(void **s)
{
    (void)s;
    static const struct {
        const char *arg;
        double want;
    } good[] = {{"90s", 90}, {"5m", 300},    {"1h", 3600},   {"1h30m", 5400}, {"1d12h", 129600},
                {"0s", 0},   {"PT1H", 3600}, {"P1D", 86400}, {"PT90M", 5400}, {"2h0m5s", 7205}};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        double t = -1;
        if (pfi_duration_arg(good[i].arg, &t) != 0) fail_msg("refused %s", good[i].arg);
        assert_near(t, good[i].want, 0);
    }
    static const char *const bad[] = {"",     "90",   "h",   "1x",          "30m1h",
                                      "1h1h", "1.5h", "-5m", "1h 5m",       "5 m",
                                      "PT",   "pt1h", "1H",  "1234567890s", "1hm"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double t;
        if (pfi_duration_arg(bad[i], &t) == 0) fail_msg("accepted '%s'", bad[i]);
    }
}

static void conf(void **s)
{
    (void)s;
    char path[] = "/tmp/pfi-ctl-conf.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *good = "{\"controller\": \"https://c:8443\", \"token_file\": \"/t\", "
                       "\"ca_file\": \"/ca.pem\"}";
    assert_int_equal(write(fd, good, strlen(good)), (ssize_t)strlen(good));
    close(fd);
    pfi_ctl_conf c;
    pfi_error e;
    assert_int_equal(pfi_ctl_conf_read(path, &c, &e), PFI_OK);
    assert_string_equal(c.controller, "https://c:8443");
    assert_string_equal(c.token_file, "/t");
    assert_string_equal(c.ca_file, "/ca.pem");
    FILE *f = fopen(path, "w");
    fputs("{\"controller\": \"http://c\", \"tokenfile\": \"/t\"}", f);
    fclose(f);
    assert_int_not_equal(pfi_ctl_conf_read(path, &c, &e), PFI_OK);
    assert_non_null(strstr(e.msg, path));
    assert_non_null(strstr(e.msg, "tokenfile"));
    f = fopen(path, "w");
    fputs("{\"controller\": 5}", f);
    fclose(f);
    assert_int_not_equal(pfi_ctl_conf_read(path, &c, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "controller"));
    unlink(path);
    assert_int_equal(pfi_ctl_conf_read(path, &c, &e), PFI_ENOTFOUND);
    assert_non_null(strstr(e.msg, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(durations), cmocka_unit_test(conf)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
