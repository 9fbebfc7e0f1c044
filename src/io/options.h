/* options.h — one option table per program (each `pfi` subcommand, the
 * daemons) drives its parsing (getopt_long), its --help, the OPTIONS of its
 * man page, its shell completions (bash, zsh) and "did you mean" for a
 * misspelt option. Modelled on Linux perf's parse-options:
 *
 *     #define OPT_T index_args              (the struct the values go to)
 *     static const pfi_opt opts[] = {
 *         OPT_FILENAME(0, "ratios", ratios, "FILE", "write per-cap ratios to FILE"),
 *         OPT_U64(0, "seed", io.ci.seed, "N", 0, 1.8e19, "seed (default 1)"),
 *         OPT_INCLUDE(cli_out_options, out, NULL),
 *         OPT_HELP(),
 *         OPT_END()};
 *
 * A value is named by its field in OPT_T (an offset, checked against the
 * kind's C type at compile time), so a table is a constant the help, man
 * page and completion generators read without running the program; the
 * parser writes into the struct it is given. Internal to pfi (not
 * installed). Nothing here prints except to the stream the caller passes. */
#ifndef PFI_OPTIONS_H
#define PFI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum pfi_opt_kind {
    PFI_OPT_END = 0,
    PFI_OPT_INCLUDE, /* another table, its values relative to a member struct */
    PFI_OPT_HELP,    /* -h, --help: parsing stops with PFI_OPTS_HELP */
    PFI_OPT_STOP,    /* e.g. --version: parsing stops with PFI_OPTS_STOP */
    PFI_OPT_SET_INT, /* no argument: int = ival */
    PFI_OPT_STRING,  /* const char * = the argument (choices, if any, only for help) */
    PFI_OPT_CHOICE,  /* const char * = the argument, which must be one of choices */
    PFI_OPT_LIST,    /* repeatable: the argument appended to a pfi_opt_list */
    PFI_OPT_DOUBLE,  /* numbers in [lo, hi] (decimal syntax), times scale if set, */
    PFI_OPT_INT,     /*   then converted to the field's type */
    PFI_OPT_LONG,
    PFI_OPT_SIZE,
    PFI_OPT_U64,
    PFI_OPT_CALLBACK, /* cb(argument or NULL) */
} pfi_opt_kind;

/* flags: what the argument is, for completion */
enum { PFI_OPT_ARG_FILE = 1u, PFI_OPT_ARG_DIR = 2u };

/* a repeatable option's values (pointers into argv); start zeroed */
typedef struct pfi_opt_list {
    char **v;
    int n;
} pfi_opt_list;

typedef struct pfi_opt pfi_opt;
typedef struct pfi_opts_ctx pfi_opts_ctx;
/* A callback's argument is NULL for an option without one. Return 0, or -1
 * after printing why with pfi_opts_error (a usage error). */
typedef int (*pfi_opt_cb)(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value);

struct pfi_opt {
    pfi_opt_kind kind;
    int short_name;               /* 0: none */
    const char *long_name;        /* NULL: none */
    size_t offset;                /* of the value in the struct */
    const char *argh;             /* the argument's name in help ("FILE"); NULL: no argument */
    const char *help;             /* one paragraph; "\n" breaks a line */
    const char *(*help_of)(void); /* instead of help: a text another table writes (the GPU
                                     backends' for --backend, gpu_backends.c) */
    const char *choices;          /* "csv|json|table": completion, help, PFI_OPT_CHOICE's check */
    unsigned flags;               /* PFI_OPT_ARG_* */
    double lo, hi, scale; /* numbers: range, and a factor applied after the check (0: none) */
    int ival;             /* PFI_OPT_SET_INT */
    pfi_opt_cb cb;
    const pfi_opt *include; /* PFI_OPT_INCLUDE */
};

/* what the operands are, for completion */
typedef enum pfi_operands {
    PFI_OPERANDS_NONE = 0,
    PFI_OPERANDS_FILES,
    PFI_OPERANDS_COMMAND,    /* a command line (after --) */
    PFI_OPERANDS_SUBCOMMAND, /* a subcommand's name (pfi help CMD) */
    PFI_OPERANDS_ACTION,     /* first an action of pfi_opts.actions (pfi event ls) */
} pfi_operands;

enum { PFI_OPTS_IN_ORDER = 1u }; /* options end at the first operand (a COMMAND follows) */

/* One program (or subcommand). */
typedef struct pfi_opts {
    const char *prog;        /* "pfi index", "pfi-agent": starts every message */
    const char *see;         /* "see 'pfi help index'": ends usage errors, in parentheses */
    const char *usage;       /* synopsis lines without "usage: ", '\n' between */
    const char *description; /* prose, printed as written (NULL: none) */
    const char *footer;      /* after the options (NULL: none) */
    const pfi_opt *options;
    pfi_operands operands;
    const char *actions; /* PFI_OPERANDS_ACTION: "create|ls|show": completion */
    unsigned flags;      /* PFI_OPTS_IN_ORDER */
} pfi_opts;

typedef enum pfi_opts_rc {
    PFI_OPTS_OK = 0, /* parsed: operands from argv[*first] */
    PFI_OPTS_HELP,   /* --help: print pfi_opts_help and exit 0 */
    PFI_OPTS_STOP,   /* a PFI_OPT_STOP option (e.g. --version) */
    PFI_OPTS_USAGE,  /* a usage error, printed */
    PFI_OPTS_NOMEM,  /* out of memory, printed */
} pfi_opts_rc;

/* Parse argv[1..] into args (getopt_long; operands after options are
 * allowed unless PFI_OPTS_IN_ORDER; "--" ends the options). Long options
 * must be spelt out: an abbreviation is an unknown option, like a misspelling,
 * with the closest option suggested. Errors are one line on err. Leaves
 * optind at *first. Lists in args must start zeroed; free them with
 * pfi_opts_dispose whatever this returns. */
pfi_opts_rc pfi_opts_parse(const pfi_opts *spec, void *args, int argc, char **argv, FILE *err,
                           int *first);
void pfi_opts_dispose(const pfi_opts *spec, void *args);

/* For callbacks: "PROG: MESSAGE (SEE)" on the parse's stream. */
void pfi_opts_error(const pfi_opts_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "--X: 'arg' is not a, b or c" for an argument not in o->choices. */
void pfi_opts_bad_choice(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg);
/* Index of arg in o->choices, or -1. */
int pfi_opts_choice_index(const pfi_opt *o, const char *arg);
/* The option being parsed, as typed: "--caps" or "-o". */
const char *pfi_opts_name(const pfi_opts_ctx *ctx);

/* --help: usage, description, one aligned line per option, footer. */
void pfi_opts_help(const pfi_opts *spec, FILE *out);
/* A man page's part for this program: synopsis (.nf), description, and
 * the options as .TP paragraphs (an included table as one line naming its
 * options); sections are the caller's. */
void pfi_opts_man(const pfi_opts *spec, FILE *out);

/* The closest candidate to a misspelt name (optimal string alignment
 * distance <= 2, less than its length; or the one name it is a prefix
 * of), or NULL when nothing is close. */
const char *pfi_opts_suggest(const char *typed, const char *const *cands, size_t n);

/* Shell completion scripts for a program with subcommands. */
typedef struct pfi_opts_sub {
    const char *name, *summary;
    const pfi_opts *opts;
} pfi_opts_sub;
/* shell: "bash" or "zsh"; top_words: the program's own options ("--help
 * --version"), offered instead of a subcommand. Returns 0, or -1 for
 * another shell. */
int pfi_opts_completion(const char *shell, const char *prog, const pfi_opts_sub *subs, size_t n,
                        const char *top_words, FILE *out);

/* ---- table entries (OPT_T: the struct the values go to) ---- */
#define PFI_OPT_AT(f, type) (offsetof(OPT_T, f) + 0 * sizeof((type *)0 == &((OPT_T *)0)->f))
#define PFI_OPT_NUM(k, s, l, f, type, a, lo_, hi_, sc, h)                                          \
    {                                                                                              \
        .kind = (k), .short_name = (s), .long_name = (l), .offset = PFI_OPT_AT(f, type),           \
        .argh = (a), .help = (h), .lo = (lo_), .hi = (hi_), .scale = (sc)                          \
    }

#define OPT_END()                                                                                  \
    {                                                                                              \
        .kind = PFI_OPT_END                                                                        \
    }
#define OPT_HELP()                                                                                 \
    {                                                                                              \
        .kind = PFI_OPT_HELP, .short_name = 'h', .long_name = "help",                              \
        .help = "print this help and exit"                                                         \
    }
#define OPT_STOP(s, l, h)                                                                          \
    {                                                                                              \
        .kind = PFI_OPT_STOP, .short_name = (s), .long_name = (l), .help = (h)                     \
    }
/* h: the man page names the table's options in one paragraph with this
 * text (NULL: each option in full, as --help always does) */
#define OPT_INCLUDE(table, f, h)                                                                   \
    {                                                                                              \
        .kind = PFI_OPT_INCLUDE, .offset = offsetof(OPT_T, f), .help = (h), .include = (table)     \
    }
#define OPT_SET_INT(s, l, f, v, h)                                                                 \
    {                                                                                              \
        .kind = PFI_OPT_SET_INT, .short_name = (s), .long_name = (l),                              \
        .offset = PFI_OPT_AT(f, int), .help = (h), .ival = (v)                                     \
    }
#define OPT_BOOLEAN(s, l, f, h) OPT_SET_INT(s, l, f, 1, h)
#define OPT_STRING(s, l, f, a, h)                                                                  \
    {                                                                                              \
        .kind = PFI_OPT_STRING, .short_name = (s), .long_name = (l),                               \
        .offset = PFI_OPT_AT(f, const char *), .argh = (a), .help = (h)                            \
    }
#define OPT_FILENAME(s, l, f, a, h)                                                                \
    {                                                                                              \
        .kind = PFI_OPT_STRING, .short_name = (s), .long_name = (l),                               \
        .offset = PFI_OPT_AT(f, const char *), .argh = (a), .help = (h), .flags = PFI_OPT_ARG_FILE \
    }
#define OPT_DIRNAME(s, l, f, a, h)                                                                 \
    {                                                                                              \
        .kind = PFI_OPT_STRING, .short_name = (s), .long_name = (l),                               \
        .offset = PFI_OPT_AT(f, const char *), .argh = (a), .help = (h), .flags = PFI_OPT_ARG_DIR  \
    }
/* a string whose help text help_fn writes from a table of its values */
#define OPT_STRING_HELP_OF(s, l, f, a, fn)                                                         \
    {                                                                                              \
        .kind = PFI_OPT_STRING, .short_name = (s), .long_name = (l),                               \
        .offset = PFI_OPT_AT(f, const char *), .argh = (a), .help_of = (fn)                        \
    }
/* a string the command checks itself; choices for help and completion */
#define OPT_STRING_OF(s, l, f, ch, h)                                                              \
    {                                                                                              \
        .kind = PFI_OPT_STRING, .short_name = (s), .long_name = (l),                               \
        .offset = PFI_OPT_AT(f, const char *), .argh = (ch), .help = (h), .choices = (ch)          \
    }
#define OPT_CHOICE(s, l, f, ch, h)                                                                 \
    {                                                                                              \
        .kind = PFI_OPT_CHOICE, .short_name = (s), .long_name = (l),                               \
        .offset = PFI_OPT_AT(f, const char *), .argh = (ch), .help = (h), .choices = (ch)          \
    }
#define OPT_LIST(s, l, f, a, h)                                                                    \
    {                                                                                              \
        .kind = PFI_OPT_LIST, .short_name = (s), .long_name = (l),                                 \
        .offset = PFI_OPT_AT(f, pfi_opt_list), .argh = (a), .help = (h)                            \
    }
#define OPT_DIRNAME_LIST(s, l, f, a, h)                                                            \
    {                                                                                              \
        .kind = PFI_OPT_LIST, .short_name = (s), .long_name = (l),                                 \
        .offset = PFI_OPT_AT(f, pfi_opt_list), .argh = (a), .help = (h), .flags = PFI_OPT_ARG_DIR  \
    }
#define OPT_DOUBLE(s, l, f, a, lo, hi, h)                                                          \
    PFI_OPT_NUM(PFI_OPT_DOUBLE, s, l, f, double, a, lo, hi, 0, h)
#define OPT_DOUBLE_SCALED(s, l, f, a, lo, hi, sc, h)                                               \
    PFI_OPT_NUM(PFI_OPT_DOUBLE, s, l, f, double, a, lo, hi, sc, h)
#define OPT_INTEGER(s, l, f, a, lo, hi, h) PFI_OPT_NUM(PFI_OPT_INT, s, l, f, int, a, lo, hi, 0, h)
#define OPT_LONG(s, l, f, a, lo, hi, h) PFI_OPT_NUM(PFI_OPT_LONG, s, l, f, long, a, lo, hi, 0, h)
#define OPT_SIZE(s, l, f, a, lo, hi, h) PFI_OPT_NUM(PFI_OPT_SIZE, s, l, f, size_t, a, lo, hi, 0, h)
#define OPT_SIZE_SCALED(s, l, f, a, lo, hi, sc, h)                                                 \
    PFI_OPT_NUM(PFI_OPT_SIZE, s, l, f, size_t, a, lo, hi, sc, h)
#define OPT_U64(s, l, f, a, lo, hi, h) PFI_OPT_NUM(PFI_OPT_U64, s, l, f, uint64_t, a, lo, hi, 0, h)
/* a: the argument's name, NULL for none; the value's type is the callback's */
#define OPT_CALLBACK(s, l, f, a, h, fn)                                                            \
    {                                                                                              \
        .kind = PFI_OPT_CALLBACK, .short_name = (s), .long_name = (l),                             \
        .offset = offsetof(OPT_T, f), .argh = (a), .help = (h), .cb = (fn)                         \
    }
#define OPT_CALLBACK_CHOICES(s, l, f, ch, h, fn)                                                   \
    {                                                                                              \
        .kind = PFI_OPT_CALLBACK, .short_name = (s), .long_name = (l),                             \
        .offset = offsetof(OPT_T, f), .argh = (ch), .help = (h), .choices = (ch), .cb = (fn)       \
    }

#endif
