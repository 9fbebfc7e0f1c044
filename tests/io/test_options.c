/* test_options.c — the option tables (options.h): every kind of entry,
 * --opt=value and --opt value, short clusters, "--", operands after
 * options, missing and unwanted arguments, unknown and abbreviated options
 * with and without a suggestion, the suggestion rule itself, and that the
 * generated help, man page and completions name every option. */
#include "../testutil.h"

#include <stdio.h>

#include "options.h"

typedef struct sub_args {
    const char *path;
    int flag;
} sub_args;

typedef struct t_args {
    int verbose, quiet, cb_noarg;
    const char *name, *file, *mode, *hint;
    pfi_opt_list where;
    double ratio, minutes;
    int count;
    long big;
    size_t size, bytes;
    uint64_t seed;
    double pair[2];
    sub_args sub;
} t_args;

static int pair_cb(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    double *v = value;
    if (sscanf(arg, "%lf,%lf", &v[0], &v[1]) != 2) {
        pfi_opts_error(ctx, "%s: expected A,B", pfi_opts_name(ctx));
        return -1;
    }
    return 0;
}

static int noarg_cb(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    *(int *)value = arg == NULL ? 7 : -1;
    return 0;
}

#define OPT_T sub_args
static const pfi_opt sub_options[] = {
    OPT_FILENAME('o', "output", path, "FILE", "write to FILE"),
    OPT_BOOLEAN(0, "sub-flag", flag, "a flag of the included table"), OPT_END()};
#undef OPT_T

#define OPT_T t_args
static const pfi_opt t_options[] = {
    OPT_BOOLEAN('v', "verbose", verbose, "say more"),
    OPT_SET_INT('q', "quiet", quiet, 3, "say less (sets 3)"),
    OPT_STRING('n', "name", name, "NAME", "a name"),
    OPT_FILENAME(0, "file", file, "FILE", "a file"),
    OPT_CHOICE(0, "mode", mode, "fast|slow|exact", "how"),
    OPT_STRING_OF(0, "hint", hint, "a|b", "checked by the caller"),
    OPT_LIST(0, "where", where, "COL=V", "filter (repeatable)"),
    OPT_DOUBLE(0, "ratio", ratio, "R", 0, 1, "a ratio"),
    OPT_DOUBLE_SCALED(0, "minutes", minutes, "M", 1, 60, 60, "minutes, kept in seconds"),
    OPT_INTEGER(0, "count", count, "N", 1, 10, "a count"),
    OPT_LONG(0, "big", big, "N", 0, 1e12, "a long"),
    OPT_SIZE(0, "size", size, "N", 1, 100, "a size"),
    OPT_SIZE_SCALED(0, "bytes-mb", bytes, "MB", 0.5, 10, 1048576, "MiB, kept in bytes"),
    OPT_U64(0, "seed", seed, "N", 0, 1.8e19, "a seed"),
    OPT_CALLBACK(0, "pair", pair, "A,B", "two numbers", pair_cb),
    OPT_CALLBACK(0, "no-arg-cb", cb_noarg, NULL, "a callback without an argument", noarg_cb),
    OPT_INCLUDE(sub_options, sub, "the included options"),
    OPT_STOP(0, "version", "print the version"),
    OPT_HELP(),
    OPT_END()};
#undef OPT_T

static const pfi_opts t_spec = {.prog = "t",
                                .see = "see t --help",
                                .usage = "t [options] FILE...\nt --version",
                                .description = "A test program.\n",
                                .footer = "The end.\n",
                                .options = t_options,
                                .operands = PFI_OPERANDS_FILES};

/* argv from a NULL-terminated list (getopt permutes it: a writable copy) */
typedef struct run {
    char *argv[64];
    int argc, first;
    t_args a;
    pfi_opts_rc rc;
    char *err;
    size_t errlen;
} run;

static void parse_with(run *r, const pfi_opts *spec, const char *const *args)
{
    memset(r, 0, sizeof *r);
    r->argv[r->argc++] = strdup("t");
    for (; *args && r->argc < 63; args++) r->argv[r->argc++] = strdup(*args);
    FILE *err = open_memstream(&r->err, &r->errlen);
    assert_non_null(err);
    r->rc = pfi_opts_parse(spec, &r->a, r->argc, r->argv, err, &r->first);
    fclose(err);
}

static void parse(run *r, const char *const *args)
{
    parse_with(r, &t_spec, args);
}

static void done(run *r)
{
    pfi_opts_dispose(&t_spec, &r->a);
    assert_null(r->a.where.v);
    for (int i = 0; i < r->argc; i++) free(r->argv[i]);
    free(r->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void every_kind(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("-v", "--quiet", "--name", "x", "--file=f.csv", "--mode", "slow", "--hint",
                   "zzz", "--where", "a=1", "--where=b=2", "--ratio", "0.25", "--minutes", "1.5",
                   "--count", "7", "--big", "123456789012", "--size", "42", "--bytes-mb", "1.5",
                   "--seed", "12345678901234567890", "--pair", "1,2", "--no-arg-cb", "-o", "out",
                   "--sub-flag", "operand"));
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_int_equal(r.a.verbose, 1);
    assert_int_equal(r.a.quiet, 3);
    assert_string_equal(r.a.name, "x");
    assert_string_equal(r.a.file, "f.csv");
    assert_string_equal(r.a.mode, "slow");
    assert_string_equal(r.a.hint, "zzz"); /* a hint is not checked */
    assert_int_equal(r.a.where.n, 2);
    assert_string_equal(r.a.where.v[0], "a=1");
    assert_string_equal(r.a.where.v[1], "b=2");
    assert_null(r.a.where.v[2]);
    assert_true(r.a.ratio == 0.25);
    assert_true(r.a.minutes == 90);
    assert_int_equal(r.a.count, 7);
    assert_true(r.a.big == 123456789012L);
    assert_int_equal(r.a.size, 42);
    assert_int_equal(r.a.bytes, (size_t)(1.5 * 1048576));
    assert_true(r.a.seed == (uint64_t)12345678901234567890.0);
    assert_true(r.a.pair[0] == 1 && r.a.pair[1] == 2);
    assert_int_equal(r.a.cb_noarg, 7);
    assert_string_equal(r.a.sub.path, "out");
    assert_int_equal(r.a.sub.flag, 1);
    assert_int_equal(r.first, r.argc - 1);
    assert_string_equal(r.argv[r.first], "operand");
    done(&r);
}

static void equals_and_separate(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("--name=a=b", "--count=3", "--output=x"));
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_string_equal(r.a.name, "a=b");
    assert_int_equal(r.a.count, 3);
    assert_string_equal(r.a.sub.path, "x");
    done(&r);
    parse(&r, ARGS("--name", "--count")); /* an argument may look like an option */
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_string_equal(r.a.name, "--count");
    done(&r);
    parse(&r, ARGS("--name=")); /* an empty argument is an argument */
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_string_equal(r.a.name, "");
    done(&r);
}

static void short_clusters_and_operands(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("a", "-vq", "b", "-oFILE", "-vn", "N", "c"));
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_int_equal(r.a.verbose, 1);
    assert_int_equal(r.a.quiet, 3);
    assert_string_equal(r.a.sub.path, "FILE");
    assert_string_equal(r.a.name, "N");
    /* operands after options are allowed; they end up after them, in order */
    assert_int_equal(r.argc - r.first, 3);
    assert_string_equal(r.argv[r.first], "a");
    assert_string_equal(r.argv[r.first + 1], "b");
    assert_string_equal(r.argv[r.first + 2], "c");
    done(&r);
}

static void double_dash_ends_options(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("-v", "--", "--name", "x", "-"));
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_null(r.a.name);
    assert_int_equal(r.argc - r.first, 3);
    assert_string_equal(r.argv[r.first], "--name");
    assert_string_equal(r.argv[r.first + 2], "-");
    done(&r);
    /* in order: the first operand ends the options (a command follows) */
    pfi_opts in_order = t_spec;
    in_order.flags = PFI_OPTS_IN_ORDER;
    parse_with(&r, &in_order, ARGS("-v", "cmd", "--name", "x"));
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_int_equal(r.a.verbose, 1);
    assert_null(r.a.name);
    assert_string_equal(r.argv[r.first], "cmd");
    assert_int_equal(r.argc - r.first, 3);
    done(&r);
    /* and a fresh parse after an in-order one permutes again */
    parse(&r, ARGS("a", "-v"));
    assert_int_equal(r.rc, PFI_OPTS_OK);
    assert_int_equal(r.a.verbose, 1);
    assert_string_equal(r.argv[r.first], "a");
    done(&r);
}

static void missing_argument(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("x", "--name"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: option '--name' needs an argument (see t --help)\n");
    done(&r);
    parse(&r, ARGS("-n"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: option '-n' needs an argument (see t --help)\n");
    done(&r);
    parse(&r, ARGS("--verbose=yes"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: option '--verbose' takes no argument (see t --help)\n");
    done(&r);
}

static void unknown_options(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("--nmae", "x"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: unknown option '--nmae'; did you mean '--name'?\n");
    done(&r);
    parse(&r, ARGS("--frobnicate"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: unknown option '--frobnicate' (see t --help)\n");
    done(&r);
    parse(&r, ARGS("--frobnicate=3"));
    assert_string_equal(r.err, "t: unknown option '--frobnicate' (see t --help)\n");
    done(&r);
    parse(&r, ARGS("-x"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: unknown option '-x' (see t --help)\n");
    done(&r);
    /* an abbreviation getopt_long would take is refused, with the option suggested */
    parse(&r, ARGS("--verb"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_int_equal(r.a.verbose, 0);
    assert_string_equal(r.err, "t: unknown option '--verb'; did you mean '--verbose'?\n");
    done(&r);
    parse(&r, ARGS("--cou", "3"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_int_equal(r.a.count, 0);
    assert_string_equal(r.err, "t: unknown option '--cou'; did you mean '--count'?\n");
    done(&r);
    parse(&r, ARGS("--cou=3"));
    assert_string_equal(r.err, "t: unknown option '--cou'; did you mean '--count'?\n");
    done(&r);
    parse(&r, ARGS("--cou")); /* abbreviated and without its argument */
    assert_string_equal(r.err, "t: unknown option '--cou'; did you mean '--count'?\n");
    done(&r);
}

static void bad_values(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("--count", "11"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: --count: '11' is not a number in [1, 10] (see t --help)\n");
    done(&r);
    parse(&r, ARGS("--ratio", "0x1"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: --ratio: '0x1' is not a number in [0, 1] (see t --help)\n");
    done(&r);
    parse(&r, ARGS("--mode", "quick"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: --mode: 'quick' is not fast, slow or exact (see t --help)\n");
    done(&r);
    parse(&r, ARGS("--pair", "1"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    assert_string_equal(r.err, "t: --pair: expected A,B (see t --help)\n");
    done(&r);
}

static void help_and_stop(void **s)
{
    (void)s;
    run r;
    parse(&r, ARGS("-v", "--help", "--bogus"));
    assert_int_equal(r.rc, PFI_OPTS_HELP);
    done(&r);
    parse(&r, ARGS("--version", "--bogus"));
    assert_int_equal(r.rc, PFI_OPTS_STOP);
    done(&r);
    parse(&r, ARGS("--bogus", "--help"));
    assert_int_equal(r.rc, PFI_OPTS_USAGE);
    done(&r);
}

/* text of a generator (not inlined: gcc -O2 then takes the returned text
 * for a pointer to the local variable buf, -Wdangling-pointer) */
__attribute__((noinline)) static char *generated(int what)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pfi_opts_sub sub = {"t", "the test program", &t_spec};
    if (what == 0) pfi_opts_help(&t_spec, f);
    else if (what == 1) pfi_opts_man(&t_spec, f);
    else
        assert_int_equal(pfi_opts_completion(what == 2 ? "bash" : "zsh", "p", &sub, 1, "--help", f),
                         0);
    fclose(f);
    return buf;
}

/* every long option of t_options (and of the included table) appears */
static void names_every_option(const char *text, const char *dashes, int roff)
{
    const pfi_opt *tables[] = {t_options, sub_options};
    for (size_t k = 0; k < 2; k++)
        for (const pfi_opt *o = tables[k]; o->kind != PFI_OPT_END; o++) {
            if (!o->long_name) continue;
            char want[64];
            size_t k2 = (size_t)snprintf(want, sizeof want, "%s", dashes);
            for (const char *p = o->long_name; *p && k2 + 3 < sizeof want; p++) {
                if (*p == '-' && roff) want[k2++] = '\\';
                want[k2++] = *p;
            }
            want[k2] = '\0';
            if (!strstr(text, want)) fail_msg("'%s' missing from:\n%s", want, text);
        }
}

/* the column where text starts on its line */
static size_t column_of(const char *h, const char *text)
{
    const char *p = strstr(h, text);
    assert_non_null(p);
    size_t at = (size_t)(p - h), col = 0;
    while (col < at && h[at - col - 1] != '\n') col++;
    return col;
}

static void generated_help(void **s)
{
    (void)s;
    char *h = generated(0);
    names_every_option(h, "--", 0);
    assert_non_null(strstr(h, "usage: t [options] FILE...\n       t --version\n"));
    assert_non_null(strstr(h, "\nA test program.\n"));
    assert_non_null(strstr(h, "  -o, --output FILE"));
    assert_non_null(strstr(h, "      --mode fast|slow|exact"));
    assert_non_null(strstr(h, "  -h, --help"));
    assert_non_null(strstr(h, "\nThe end.\n"));
    /* aligned: the help of -v and of --file start in the same column */
    assert_int_equal(column_of(h, "say more"), column_of(h, "a file"));
    free(h);
    char *m = generated(1);
    names_every_option(m, "\\-\\-", 1);
    assert_non_null(strstr(m, ".TP\n.BI \"\\-n, \\-\\-name \" \"NAME\"\na name\n"));
    assert_non_null(strstr(m, "the included options")); /* an include with help: one paragraph */
    free(m);
}

static void completions(void **s)
{
    (void)s;
    char *b = generated(2);
    names_every_option(b, "--", 0);
    assert_non_null(strstr(b, "complete -F _p p\n"));
    assert_non_null(strstr(b, "--mode) _p_words \"fast slow exact\"; return 0;;"));
    assert_non_null(strstr(b, "--file|--output|-o) _p_files; return 0;;"));
    free(b);
    char *z = generated(3);
    names_every_option(z, "--", 0);
    assert_non_null(strstr(z, "#compdef p\n"));
    assert_non_null(strstr(z, "'--mode=[how]:fast|slow|exact:(fast slow exact)'"));
    assert_non_null(strstr(z, "'(-o --output)'{-o+,--output=}'[write to FILE]:FILE:_files'"));
    assert_non_null(strstr(z, "'*--where=[filter]:COL=V: '"));
    free(z);
    assert_int_equal(pfi_opts_completion("fish", "p", NULL, 0, NULL, stdout), -1);
}

static void suggestions(void **s)
{
    (void)s;
    const char *c[] = {"index", "ingest", "record", "synth", "fit", "help"};
    assert_string_equal(pfi_opts_suggest("indx", c, 6), "index");
    assert_string_equal(pfi_opts_suggest("idnex", c, 6), "index"); /* a transposition is one edit */
    assert_string_equal(pfi_opts_suggest("ingets", c, 6), "ingest");
    assert_string_equal(pfi_opts_suggest("rec", c, 6), "record"); /* a unique prefix */
    assert_null(pfi_opts_suggest("in", c, 6)); /* a prefix of two, and too short */
    assert_null(pfi_opts_suggest("frobnicate", c, 6));
    assert_null(pfi_opts_suggest("xy", c, 6)); /* two edits of a two-letter word is no suggestion */
    assert_null(pfi_opts_suggest("", c, 6));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind),
        cmocka_unit_test(equals_and_separate),
        cmocka_unit_test(short_clusters_and_operands),
        cmocka_unit_test(double_dash_ends_options),
        cmocka_unit_test(missing_argument),
        cmocka_unit_test(unknown_options),
        cmocka_unit_test(bad_values),
        cmocka_unit_test(help_and_stop),
        cmocka_unit_test(generated_help),
        cmocka_unit_test(completions),
        cmocka_unit_test(suggestions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
