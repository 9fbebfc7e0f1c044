/* options.c — option tables (options.h): parsing through getopt_long,
 * "did you mean", and the generated --help, man page OPTIONS and shell
 * completions (bash, zsh). */
#include "options.h"

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"

struct pfi_opts_ctx {
    const pfi_opts *spec;
    FILE *err;
    char name[80]; /* the option being parsed, as "--long" or "-s" */
};

/* a table with its includes spliced in; off: of the value's struct in args */
typedef struct flat {
    const pfi_opt *o;
    size_t off;
} flat;

enum { VAL_LONG_ONLY = 256 }; /* getopt's val for entry i without a short name */

static size_t count(const pfi_opt *t)
{
    size_t n = 0;
    for (; t->kind != PFI_OPT_END; t++) n += t->kind == PFI_OPT_INCLUDE ? count(t->include) : 1;
    return n;
}

static void flatten(const pfi_opt *t, size_t off, flat *f, size_t *n)
{
    for (; t->kind != PFI_OPT_END; t++) {
        if (t->kind == PFI_OPT_INCLUDE) {
            flatten(t->include, off + t->offset, f, n);
        } else {
            f[*n].o = t;
            f[*n].off = off;
            (*n)++;
        }
    }
}

/* the table flattened (free it); NULL when out of memory */
static flat *flat_table(const pfi_opt *t, size_t *n)
{
    *n = 0;
    flat *f = malloc((count(t) + 1) * sizeof *f);
    if (f) flatten(t, 0, f, n);
    return f;
}

void pfi_opts_error(const pfi_opts_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    fprintf(ctx->err, "%s: ", ctx->spec->prog);
    va_start(ap, fmt);
    vfprintf(ctx->err, fmt, ap);
    va_end(ap);
    if (ctx->spec->see) fprintf(ctx->err, " (%s)", ctx->spec->see);
    fputc('\n', ctx->err);
}

const char *pfi_opts_name(const pfi_opts_ctx *ctx)
{
    return ctx->name;
}

int pfi_opts_choice_index(const pfi_opt *o, const char *arg)
{
    const char *p = o->choices;
    size_t len = strlen(arg);
    for (int k = 0; p && *p; k++) {
        const char *q = strchr(p, '|');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == len && strncmp(p, arg, n) == 0) return k;
        if (!q) break;
        p = q + 1;
    }
    return -1;
}

void pfi_opts_bad_choice(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg)
{
    char list[512] = "";
    const char *p = o->choices ? o->choices : "";
    size_t k = 0;
    while (*p && k + 8 < sizeof list) {
        const char *q = strchr(p, '|');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        const char *sep = !q ? "" : strchr(q + 1, '|') ? ", " : " or ";
        k += (size_t)snprintf(list + k, sizeof list - k, "%.*s%s", (int)n, p, sep);
        if (!q || k >= sizeof list) break;
        p = q + 1;
    }
    pfi_opts_error(ctx, "%s: '%s' is not %s", ctx->name, arg, list);
}

/* optimal string alignment distance (Damerau-Levenshtein, no substring
 * edited twice); 99 for names too long to matter */
static int osa_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

const char *pfi_opts_suggest(const char *typed, const char *const *cands, size_t n)
{
    size_t len = strlen(typed);
    if (len == 0) return NULL;
    const char *prefix_of = NULL, *best = NULL;
    size_t nprefix = 0;
    int best_d = 3;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i]) continue;
        if (strncmp(cands[i], typed, len) == 0) prefix_of = cands[i], nprefix++;
        int d = osa_distance(typed, cands[i]);
        if (d < best_d) best_d = d, best = cands[i];
    }
    if (nprefix == 1) return prefix_of;
    return best && (size_t)best_d < len ? best : NULL;
}

/* "unknown option '--cap'; did you mean '--caps'?" (typed: after the dashes) */
static void unknown_long(const pfi_opts_ctx *ctx, const flat *f, size_t n, const char *typed)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(typed, "="), typed);
    const char **cands = malloc((n + 1) * sizeof *cands);
    const char *s = NULL;
    if (cands) {
        for (size_t i = 0; i < n; i++) cands[i] = f[i].o->long_name;
        s = pfi_opts_suggest(name, cands, n);
        free(cands);
    }
    if (s)
        fprintf(ctx->err, "%s: unknown option '--%s'; did you mean '--%s'?\n", ctx->spec->prog,
                name, s);
    else pfi_opts_error(ctx, "unknown option '--%s'", name);
}

/* the entry getopt_long's val names, or n */
static size_t entry_of(const flat *f, size_t n, int val)
{
    if (val >= VAL_LONG_ONLY)
        return (size_t)(val - VAL_LONG_ONLY) < n ? (size_t)(val - VAL_LONG_ONLY) : n;
    for (size_t i = 0; i < n; i++)
        if (val && f[i].o->short_name == val) return i;
    return n;
}

/* a long option as typed (elem: "--name[=value]") is exactly entry e's name */
static int spelt_out(const char *elem, const pfi_opt *o)
{
    size_t k = strcspn(elem + 2, "=");
    return o->long_name && strlen(o->long_name) == k && strncmp(elem + 2, o->long_name, k) == 0;
}

/* getopt_long returned '?' or ':' */
static pfi_opts_rc bad_option(pfi_opts_ctx *ctx, const flat *f, size_t n, char **argv, int c)
{
    const char *elem = optind > 0 ? argv[optind - 1] : "";
    size_t e = entry_of(f, n, optopt);
    int is_long = strncmp(elem, "--", 2) == 0 && elem[2];
    if (c == '?' && optopt == 0) {
        unknown_long(ctx, f, n, is_long ? elem + 2 : elem);
    } else if (c == '?' && e == n) {
        pfi_opts_error(ctx, "unknown option '-%c'", optopt);
    } else if (is_long && e < n && !spelt_out(elem, f[e].o)) {
        unknown_long(ctx, f, n, elem + 2);
    } else if (c == ':') {
        if (is_long) pfi_opts_error(ctx, "option '--%s' needs an argument", f[e].o->long_name);
        else pfi_opts_error(ctx, "option '-%c' needs an argument", optopt);
    } else {
        pfi_opts_error(ctx, "option '--%s' takes no argument", f[e].o->long_name);
    }
    return PFI_OPTS_USAGE;
}

static pfi_opts_rc number(pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *v)
{
    double x;
    int e = pfi_parse_double(arg, strlen(arg), &x);
    if (e || x < o->lo || x > o->hi) {
        if (isinf(o->lo) && isinf(o->hi))
            pfi_opts_error(ctx, "%s: '%s' is not a number", ctx->name, arg);
        else
            pfi_opts_error(ctx, "%s: '%s' is not a number in [%g, %g]", ctx->name, arg, o->lo,
                           o->hi);
        return PFI_OPTS_USAGE;
    }
    if (o->scale != 0) x *= o->scale;
    switch (o->kind) {
    case PFI_OPT_INT: *(int *)v = (int)x; break;
    case PFI_OPT_LONG: *(long *)v = (long)x; break;
    case PFI_OPT_SIZE: *(size_t *)v = (size_t)x; break;
    case PFI_OPT_U64: *(uint64_t *)v = (uint64_t)x; break;
    default: *(double *)v = x; break;
    }
    return PFI_OPTS_OK;
}

/* store one option's value */
static pfi_opts_rc apply(pfi_opts_ctx *ctx, const flat *e, void *args, char *arg)
{
    const pfi_opt *o = e->o;
    void *v = (char *)args + e->off + o->offset;
    switch (o->kind) {
    case PFI_OPT_HELP: return PFI_OPTS_HELP;
    case PFI_OPT_STOP: return PFI_OPTS_STOP;
    case PFI_OPT_SET_INT: *(int *)v = o->ival; return PFI_OPTS_OK;
    case PFI_OPT_CHOICE:
        if (pfi_opts_choice_index(o, arg) < 0) {
            pfi_opts_bad_choice(ctx, o, arg);
            return PFI_OPTS_USAGE;
        }
        /* fall through */
    case PFI_OPT_STRING: *(const char **)v = arg; return PFI_OPTS_OK;
    case PFI_OPT_LIST: {
        pfi_opt_list *l = v;
        char **p = realloc(l->v, ((size_t)l->n + 2) * sizeof *p);
        if (!p) {
            fprintf(ctx->err, "%s: out of memory\n", ctx->spec->prog);
            return PFI_OPTS_NOMEM;
        }
        p[l->n++] = arg;
        p[l->n] = NULL;
        l->v = p;
        return PFI_OPTS_OK;
    }
    case PFI_OPT_CALLBACK: return o->cb(ctx, o, arg, v) ? PFI_OPTS_USAGE : PFI_OPTS_OK;
    case PFI_OPT_DOUBLE:
    case PFI_OPT_INT:
    case PFI_OPT_LONG:
    case PFI_OPT_SIZE:
    case PFI_OPT_U64: return number(ctx, o, arg, v);
    case PFI_OPT_END:
    case PFI_OPT_INCLUDE: break;
    }
    return PFI_OPTS_OK;
}

/* getopt_long returned val c (li: the long option's index, or -1) */
static pfi_opts_rc one(pfi_opts_ctx *ctx, const flat *f, size_t n, void *args, char **argv, int c,
                       int li)
{
    size_t e = entry_of(f, n, c);
    if (e == n) return bad_option(ctx, f, n, argv, c);
    const pfi_opt *o = f[e].o;
    if (li >= 0) {
        /* getopt_long takes abbreviations; pfi wants options spelt out */
        const char *elem =
            o->argh && optarg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
        if (!spelt_out(elem, o)) {
            unknown_long(ctx, f, n, elem + 2);
            return PFI_OPTS_USAGE;
        }
        snprintf(ctx->name, sizeof ctx->name, "--%s", o->long_name);
    } else {
        snprintf(ctx->name, sizeof ctx->name, "-%c", c);
    }
    return apply(ctx, &f[e], args, o->argh ? optarg : NULL);
}

pfi_opts_rc pfi_opts_parse(const pfi_opts *spec, void *args, int argc, char **argv, FILE *err,
                           int *first)
{
    size_t n;
    flat *f = flat_table(spec->options, &n);
    struct option *lo = calloc(n + 1, sizeof *lo);
    char *so = malloc(2 * n + 3);
    pfi_opts_ctx ctx = {spec, err, ""};
    *first = argc;
    if (!f || !lo || !so) {
        free(f), free(lo), free(so);
        fprintf(err, "%s: out of memory\n", spec->prog);
        return PFI_OPTS_NOMEM;
    }
    size_t k = 0, nl = 0;
    if (spec->flags & PFI_OPTS_IN_ORDER) so[k++] = '+';
    so[k++] = ':'; /* a missing argument is ':', not '?' */
    for (size_t i = 0; i < n; i++) {
        const pfi_opt *o = f[i].o;
        int val = o->short_name ? o->short_name : VAL_LONG_ONLY + (int)i;
        if (o->short_name) {
            so[k++] = (char)o->short_name;
            if (o->argh) so[k++] = ':';
        }
        if (o->long_name)
            lo[nl++] =
                (struct option){o->long_name, o->argh ? required_argument : no_argument, NULL, val};
    }
    so[k] = '\0';
    int saved_opterr = opterr, c;
    opterr = 0;
    optind = 0; /* a fresh scan (also of the ordering in so) */
    pfi_opts_rc rc = PFI_OPTS_OK;
    while (rc == PFI_OPTS_OK) {
        int li = -1;
        if ((c = getopt_long(argc, argv, so, lo, &li)) == -1) break;
        rc = one(&ctx, f, n, args, argv, c, li);
    }
    opterr = saved_opterr;
    *first = optind;
    free(f), free(lo), free(so);
    return rc;
}

void pfi_opts_dispose(const pfi_opts *spec, void *args)
{
    size_t n;
    flat *f = flat_table(spec->options, &n);
    for (size_t i = 0; f && i < n; i++)
        if (f[i].o->kind == PFI_OPT_LIST) {
            pfi_opt_list *l = (pfi_opt_list *)((char *)args + f[i].off + f[i].o->offset);
            free(l->v);
            l->v = NULL;
            l->n = 0;
        }
    free(f);
}

/* an option's help text: its own, or what its table writes */
static const char *help_text(const pfi_opt *o)
{
    const char *h = o->help_of ? o->help_of() : o->help;
    return h ? h : "";
}

/* ---------------------------------------------------------------- help */

enum { HELP_WIDTH = 79, HELP_LEFT_MAX = 26 };

/* "  -o, --output FILE" */
static void left_part(const pfi_opt *o, char *b, size_t n)
{
    char s[8] = "    ";
    if (o->short_name) snprintf(s, sizeof s, "-%c%s", o->short_name, o->long_name ? ", " : "");
    snprintf(b, n, "  %s%s%s%s%s", s, o->long_name ? "--" : "", o->long_name ? o->long_name : "",
             o->argh ? " " : "", o->argh ? o->argh : "");
}

/* text wrapped at HELP_WIDTH, every line after the first indented to col */
static void wrapped(FILE *out, const char *text, size_t col, size_t at)
{
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fprintf(out, "\n%*s", (int)col, "");
            at = col;
            p++;
            continue;
        }
        size_t w = strcspn(p, " \n");
        if (at > col && at + 1 + w > HELP_WIDTH) {
            fprintf(out, "\n%*s", (int)col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', out);
            at++;
        }
        fwrite(p, 1, w, out);
        at += w;
        p += w;
        while (*p == ' ') p++;
    }
    fputc('\n', out);
}

static void usage_lines(const pfi_opts *spec, FILE *out)
{
    const char *p = spec->usage;
    for (int k = 0; p && *p; k++) {
        size_t w = strcspn(p, "\n");
        fprintf(out, "%s%.*s\n", k ? "       " : "usage: ", (int)w, p);
        p += w;
        if (*p) p++;
    }
}

void pfi_opts_help(const pfi_opts *spec, FILE *out)
{
    usage_lines(spec, out);
    if (spec->description) fprintf(out, "\n%s", spec->description);
    size_t n, col = 0;
    flat *f = flat_table(spec->options, &n);
    if (!f) return;
    char b[160];
    for (size_t i = 0; i < n; i++) {
        left_part(f[i].o, b, sizeof b);
        if (strlen(b) <= HELP_LEFT_MAX && strlen(b) + 2 > col) col = strlen(b) + 2;
    }
    if (n) fprintf(out, "\noptions:\n");
    for (size_t i = 0; i < n; i++) {
        left_part(f[i].o, b, sizeof b);
        size_t w = strlen(b);
        fputs(b, out);
        if (w + 2 > col) {
            fprintf(out, "\n%*s", (int)col, "");
        } else {
            fprintf(out, "%*s", (int)(col - w), "");
        }
        wrapped(out, help_text(f[i].o), col, col);
    }
    free(f);
    if (spec->footer) fprintf(out, "\n%s", spec->footer);
}

/* ------------------------------------------------------------ man page */

/* roff text: backslashes and dashes escaped, a leading '.' or '\'' guarded;
 * in a quoted macro argument (quoted) a '"' is \(dq */
static void roff(FILE *out, const char *s, size_t len, int quoted)
{
    int bol = 1;
    for (size_t i = 0; i < len && s[i]; i++) {
        char ch = s[i];
        if (bol && (ch == '.' || ch == '\'')) fputs("\\&", out);
        if (ch == '\\') fputs("\\e", out);
        else if (ch == '-') fputs("\\-", out);
        else if (ch == '"' && quoted) fputs("\\(dq", out);
        else fputc(ch, out);
        bol = ch == '\n';
    }
}

static void man_option(const pfi_opt *o, FILE *out)
{
    fputs(".TP\n.BI \"", out);
    char s[8] = "";
    if (o->short_name) snprintf(s, sizeof s, "-%c%s", o->short_name, o->long_name ? ", " : "");
    roff(out, s, strlen(s), 1);
    if (o->long_name) {
        fputs("\\-\\-", out);
        roff(out, o->long_name, strlen(o->long_name), 1);
    }
    fputs(o->argh ? " \" \"" : "\"", out);
    if (o->argh) {
        roff(out, o->argh, strlen(o->argh), 1);
        fputs("\"", out);
    }
    fputc('\n', out);
    const char *h = help_text(o);
    for (const char *p = h; *p;) {
        size_t w = strcspn(p, "\n");
        roff(out, p, w, 0);
        fputc('\n', out);
        p += w;
        if (*p && *++p) fputs(".br\n", out);
    }
}

/* an included table with help: one paragraph naming its options */
static void man_include(const pfi_opt *inc, FILE *out)
{
    size_t n;
    flat *f = flat_table(inc->include, &n);
    if (!f) return;
    fputs(".TP\n.B \"", out);
    for (size_t i = 0; i < n; i++) {
        char b[80];
        if (f[i].o->long_name) snprintf(b, sizeof b, "%s--%s", i ? ", " : "", f[i].o->long_name);
        else snprintf(b, sizeof b, "%s-%c", i ? ", " : "", f[i].o->short_name);
        roff(out, b, strlen(b), 1);
    }
    fputs("\"\n", out);
    roff(out, inc->help, strlen(inc->help), 0);
    fputc('\n', out);
    free(f);
}

static void man_options(const pfi_opt *t, FILE *out)
{
    for (; t->kind != PFI_OPT_END; t++) {
        if (t->kind == PFI_OPT_INCLUDE && t->help) man_include(t, out);
        else if (t->kind == PFI_OPT_INCLUDE) man_options(t->include, out);
        else man_option(t, out);
    }
}

void pfi_opts_man(const pfi_opts *spec, FILE *out)
{
    fputs(".PP\n.nf\n", out);
    if (spec->usage) {
        roff(out, spec->usage, strlen(spec->usage), 0);
        fputc('\n', out);
    }
    fputs(".fi\n", out);
    if (spec->description) {
        fputs(".PP\n.nf\n", out);
        roff(out, spec->description, strlen(spec->description), 0);
        fputs(".fi\n", out);
    }
    if (spec->options[0].kind != PFI_OPT_END) fputs(".PP\nOptions:\n.RS\n", out);
    man_options(spec->options, out);
    if (spec->options[0].kind != PFI_OPT_END) fputs(".RE\n", out);
    if (spec->footer) {
        fputs(".PP\n", out);
        roff(out, spec->footer, strlen(spec->footer), 0);
    }
}

/* ---------------------------------------------------------- completion */

/* each option of f (kinds selected by want) as "--long" and "-s", joined by sep */
static void option_names(FILE *out, const flat *f, size_t n, int (*want)(const pfi_opt *),
                         const char *sep)
{
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        const pfi_opt *o = f[i].o;
        if (want && !want(o)) continue;
        if (o->long_name) fprintf(out, "%s--%s", k++ ? sep : "", o->long_name);
        if (o->short_name) fprintf(out, "%s-%c", k++ ? sep : "", o->short_name);
    }
}

static int arg_file(const pfi_opt *o)
{
    return o->argh && (o->flags & PFI_OPT_ARG_FILE);
}
static int arg_dir(const pfi_opt *o)
{
    return o->argh && (o->flags & PFI_OPT_ARG_DIR) && !(o->flags & PFI_OPT_ARG_FILE);
}
static int arg_other(const pfi_opt *o)
{
    return o->argh && !o->choices && !(o->flags & (PFI_OPT_ARG_FILE | PFI_OPT_ARG_DIR));
}
static int any_of(const flat *f, size_t n, int (*want)(const pfi_opt *))
{
    for (size_t i = 0; i < n; i++)
        if (want(f[i].o)) return 1;
    return 0;
}

/* "a|b|c" as "a b c" */
static void choice_words(FILE *out, const char *choices)
{
    for (const char *p = choices; *p; p++) fputc(*p == '|' ? ' ' : *p, out);
}

static void bash_sub(FILE *out, const char *prog, const pfi_opts_sub *s, const pfi_opts_sub *subs,
                     size_t nsubs)
{
    size_t n;
    flat *f = flat_table(s->opts->options, &n);
    if (!f) return;
    fprintf(out, "    %s)\n        if [ $dd = 0 ]; then\n            case $prev in\n", s->name);
    if (any_of(f, n, arg_file)) {
        fputs("            ", out);
        option_names(out, f, n, arg_file, "|");
        fprintf(out, ") _%s_files; return 0;;\n", prog);
    }
    if (any_of(f, n, arg_dir)) {
        fputs("            ", out);
        option_names(out, f, n, arg_dir, "|");
        fprintf(out, ") _%s_dirs; return 0;;\n", prog);
    }
    for (size_t i = 0; i < n; i++) {
        if (!f[i].o->argh || !f[i].o->choices) continue;
        fputs("            ", out);
        option_names(out, f + i, 1, NULL, "|");
        fprintf(out, ") _%s_words \"", prog);
        choice_words(out, f[i].o->choices);
        fputs("\"; return 0;;\n", out);
    }
    if (any_of(f, n, arg_other)) {
        fputs("            ", out);
        option_names(out, f, n, arg_other, "|");
        fputs(") return 0;;\n", out);
    }
    fprintf(out, "            esac\n            case $cur in -*) _%s_words \"", prog);
    option_names(out, f, n, NULL, " ");
    fputs("\"; return 0;; esac\n        fi\n", out);
    switch (s->opts->operands) {
    case PFI_OPERANDS_FILES: fprintf(out, "        _%s_files;;\n", prog); break;
    case PFI_OPERANDS_COMMAND:
        fprintf(out,
                "        if [ \"$prev\" = -- ]; then COMPREPLY=($(compgen -c -- \"$cur\")); else "
                "_%s_files; fi;;\n",
                prog);
        break;
    case PFI_OPERANDS_SUBCOMMAND:
        fprintf(out, "        _%s_words \"", prog);
        for (size_t i = 0; i < nsubs; i++) fprintf(out, "%s%s", i ? " " : "", subs[i].name);
        fputs("\";;\n", out);
        break;
    case PFI_OPERANDS_ACTION:
        fprintf(out, "        _%s_words \"", prog);
        choice_words(out, s->opts->actions ? s->opts->actions : "");
        fputs("\";;\n", out);
        break;
    case PFI_OPERANDS_NONE: fputs("        ;;\n", out); break;
    }
    free(f);
}

static void bash(const char *prog, const pfi_opts_sub *subs, size_t n, const char *top_words,
                 FILE *out)
{
    fprintf(
        out,
        "# bash completion for %s (generated by `%s help --completion bash`)\n"
        "_%s_files() { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); }\n"
        "_%s_dirs() { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")); }\n"
        "_%s_words() { COMPREPLY=($(compgen -W \"$1\" -- \"$cur\")); }\n"
        "_%s() {\n"
        "    local cur=${COMP_WORDS[COMP_CWORD]} prev= dd=0 i\n"
        "    COMPREPLY=()\n"
        "    [ \"$COMP_CWORD\" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
        "    # --opt=value: bash splits at '='\n"
        "    if [ \"$cur\" = = ]; then cur=; elif [ \"$prev\" = = ] && [ \"$COMP_CWORD\" -gt 1 ]; "
        "then prev=${COMP_WORDS[COMP_CWORD-2]}; fi\n"
        "    if [ \"$COMP_CWORD\" -le 1 ]; then\n        _%s_words \"",
        prog, prog, prog, prog, prog, prog, prog);
    for (size_t i = 0; i < n; i++) fprintf(out, "%s ", subs[i].name);
    fprintf(
        out,
        "%s\"\n        return 0\n    fi\n"
        "    for ((i = 2; i < COMP_CWORD; i++)); do [ \"${COMP_WORDS[i]}\" = -- ] && dd=1; done\n"
        "    case ${COMP_WORDS[1]} in\n",
        top_words ? top_words : "");
    for (size_t i = 0; i < n; i++) bash_sub(out, prog, &subs[i], subs, n);
    fprintf(out, "    esac\n    return 0\n}\ncomplete -F _%s %s\n", prog, prog);
}

/* text for a single-quoted zsh _arguments description [..] or _describe
 * item: the first clause of s (up to ";", " (" or a line break; at most
 * 70 characters, cut at a space), brackets made parentheses, quotes
 * escaped, and (colon) colons escaped */
static void zsh_text(FILE *out, const char *s, int colon)
{
    s = s ? s : "";
    size_t n = 0;
    while (s[n] && s[n] != '\n' && s[n] != ';' && !(s[n] == ' ' && s[n + 1] == '(')) n++;
    if (n > 70) {
        n = 70;
        while (n > 0 && s[n] != ' ') n--;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\'') fputs("'\\''", out);
        else if (ch == '[' || ch == ']') fputc(ch == '[' ? '(' : ')', out);
        else if (ch == '\\') fputc('/', out);
        else if (ch == ':' && colon) fputs("\\:", out);
        else fputc(ch, out);
    }
}

static void zsh_option(FILE *out, const pfi_opt *o)
{
    int both = o->short_name && o->long_name;
    const char *eq = o->argh ? "=" : "", *plus = o->argh ? "+" : "";
    fputs("        ", out);
    const char *rep = o->kind == PFI_OPT_LIST ? "*" : "";
    if (both && !*rep) fprintf(out, "'(-%c --%s)'", o->short_name, o->long_name);
    if (both)
        fprintf(out, "%s{-%c%s,--%s%s}'[", *rep ? "'*'" : "", o->short_name, plus, o->long_name,
                eq);
    else if (o->long_name) fprintf(out, "'%s--%s%s[", rep, o->long_name, eq);
    else fprintf(out, "'%s-%c%s[", rep, o->short_name, plus);
    zsh_text(out, help_text(o), 0);
    fputs("]", out);
    if (o->argh) {
        fputc(':', out);
        for (const char *p = o->argh; *p; p++)
            fputc(*p == ':' || *p == '\'' || *p == '\\' ? '_'
                  : *p == '['                           ? '('
                  : *p == ']'                           ? ')'
                                                        : *p,
                  out);
        if (o->choices) {
            fputs(":(", out);
            choice_words(out, o->choices);
            fputs(")", out);
        } else if (o->flags & PFI_OPT_ARG_FILE) {
            fputs(":_files", out);
        } else if (o->flags & PFI_OPT_ARG_DIR) {
            fputs(":_files -/", out);
        } else {
            fputs(": ", out);
        }
    }
    fputs("' \\\n", out);
}

static void zsh_sub(FILE *out, const char *prog, const pfi_opts_sub *s, const pfi_opts_sub *subs,
                    size_t nsubs)
{
    size_t n;
    flat *f = flat_table(s->opts->options, &n);
    if (!f) return;
    fprintf(out, "_%s_%s() {\n    _arguments -s -S \\\n", prog, s->name);
    for (size_t i = 0; i < n; i++) zsh_option(out, f[i].o);
    switch (s->opts->operands) {
    case PFI_OPERANDS_FILES: fputs("        '*:file:_files'\n", out); break;
    case PFI_OPERANDS_COMMAND: fputs("        '*::command:_normal'\n", out); break;
    case PFI_OPERANDS_SUBCOMMAND:
        fputs("        '*:command:(", out);
        for (size_t i = 0; i < nsubs; i++) fprintf(out, "%s%s", i ? " " : "", subs[i].name);
        fputs(")'\n", out);
        break;
    case PFI_OPERANDS_ACTION:
        fputs("        '1:action:(", out);
        choice_words(out, s->opts->actions ? s->opts->actions : "");
        fputs(")' '*::argument:'\n", out);
        break;
    case PFI_OPERANDS_NONE: fputs("\n", out); break; /* ends the continued line */
    }
    fputs("}\n", out);
    free(f);
}

static void zsh(const char *prog, const pfi_opts_sub *subs, size_t n, const char *top_words,
                FILE *out)
{
    fprintf(out, "#compdef %s\n# zsh completion for %s (generated by `%s help --completion zsh`)\n",
            prog, prog, prog);
    for (size_t i = 0; i < n; i++) zsh_sub(out, prog, &subs[i], subs, n);
    fprintf(out, "_%s() {\n    local -a cmds\n    cmds=(\n", prog);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "        '%s:", subs[i].name);
        zsh_text(out, subs[i].summary, 1);
        fputs("'\n", out);
    }
    fprintf(out,
            "    )\n"
            "    if (( CURRENT == 2 )); then\n"
            "        _describe -t commands '%s command' cmds\n"
            "        [[ $PREFIX == -* ]] && compadd -- %s\n"
            "        return\n"
            "    fi\n"
            "    local cmd=$words[2]\n"
            "    shift words\n"
            "    (( CURRENT-- ))\n"
            "    (( $+functions[_%s_$cmd] )) && _%s_$cmd\n"
            "}\n"
            "_%s \"$@\"\n",
            prog, top_words ? top_words : "", prog, prog, prog);
}

int pfi_opts_completion(const char *shell, const char *prog, const pfi_opts_sub *subs, size_t n,
                        const char *top_words, FILE *out)
{
    if (strcmp(shell, "bash") == 0) bash(prog, subs, n, top_words, out);
    else if (strcmp(shell, "zsh") == 0) zsh(prog, subs, n, top_words, out);
    else return -1;
    return 0;
}
