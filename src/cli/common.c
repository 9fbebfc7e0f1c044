/* common.c — shared CLI plumbing (see cli.h). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "cli.h"
#include "datapath.h"
#include "num.h"
#include "pfi/sweep.h"
#include "pfi/table_csv.h"

const cli_cmd *cli_find(const char *name)
{
    for (size_t i = 0; i < cli_ncommands; i++)
        if (strcmp(cli_commands[i].name, name) == 0) return &cli_commands[i];
    return NULL;
}

void cli_out_init(cli_out *o)
{
    o->fmt = PFI_FMT_CSV;
    o->fmt_set = 0;
    o->path = NULL;
}

static int opt_format(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    cli_out *out = (cli_out *)((char *)value - offsetof(cli_out, fmt));
    if (pfi_format_parse(arg, &out->fmt) != 0) {
        pfi_opts_bad_choice(ctx, o, arg);
        return -1;
    }
    out->fmt_set = 1;
    return 0;
}

static int opt_json(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    cli_out *out = (cli_out *)((char *)value - offsetof(cli_out, fmt));
    out->fmt = PFI_FMT_JSON;
    out->fmt_set = 1;
    return 0;
}

#define OPT_T cli_out
const pfi_opt cli_out_options[] = {
    OPT_CALLBACK_CHOICES(
        0, "format", fmt, "csv|json|table",
        "output rendering (default: table on a terminal, else csv; a sweep table: csv)",
        opt_format),
    OPT_CALLBACK(0, "json", fmt, NULL, "the same as --format json", opt_json),
    OPT_FILENAME('o', "output", path, "FILE", "write to FILE, atomically (- is standard output)"),
    OPT_END()};
#undef OPT_T

int cli_opt_objective(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value)
{
    if (!strcmp(arg, "normalized")) *(int *)value = 1;
    else if (strcmp(arg, "tokens")) return pfi_opts_bad_choice(ctx, o, arg), -1;
    return 0;
}

int cli_parse(const pfi_opts *spec, void *args, int argc, char **argv, int *first)
{
    switch (pfi_opts_parse(spec, args, argc, argv, stderr, first)) {
    case PFI_OPTS_OK: return -1;
    case PFI_OPTS_HELP: pfi_opts_help(spec, stdout); return CLI_OK;
    case PFI_OPTS_NOMEM: return CLI_FAIL;
    default: return CLI_USAGE;
    }
}

pfi_format cli_out_format(const cli_out *o)
{
    if (o->fmt_set) return o->fmt;
    if ((!o->path || strcmp(o->path, "-") == 0) && isatty(STDOUT_FILENO)) return PFI_FMT_TABLE;
    return PFI_FMT_CSV;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pfi %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_warn_cb(void *ud, const char *msg)
{
    fprintf(stderr, "pfi %s: warning: %s\n", (const char *)ud, msg);
}

pfi_log cli_log(const char *cmd)
{
    pfi_log l = {cli_warn_cb, (void *)cmd, 0};
    return l;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pfi %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'pfi help %s')\n", cmd);
    return CLI_USAGE;
}

int cli_help(const char *cmd)
{
    const cli_cmd *c = cli_find(cmd);
    if (!c) return CLI_USAGE;
    pfi_opts_help(c->opts, stdout);
    return CLI_OK;
}

pfi_table *cli_read_sweeps(const char *cmd, char **paths, int n, const char *gpu_model)
{
    pfi_table *t = pfi_table_new();
    if (!t) {
        cli_error(cmd, "out of memory");
        return NULL;
    }
    pfi_log log = cli_log(cmd);
    pfi_sweep_read_opts o = {gpu_model, 0};
    for (int i = 0; i < n; i++) {
        pfi_error err;
        if (pfi_sweep_read(t, paths[i], &o, &log, &err) != PFI_OK) {
            cli_error(cmd, "%s", err.msg);
            pfi_table_free(t);
            return NULL;
        }
    }
    return t;
}

pfi_table *cli_filter_table(const char *cmd, const pfi_table *t, char **where, int nwhere)
{
    long *cols = calloc((size_t)nwhere + 1, sizeof *cols);
    const char **vals = calloc((size_t)nwhere + 1, sizeof *vals);
    pfi_table *o = pfi_table_new();
    pfi_error err;
    if (!cols || !vals || !o) goto oom;
    for (int i = 0; i < nwhere; i++) {
        char *eq = strchr(where[i], '=');
        if (!eq || eq == where[i]) {
            cli_usage_error(cmd, "filter '%s' is not COLUMN=VALUE", where[i]);
            goto fail;
        }
        *eq = '\0';
        cols[i] = pfi_table_col(t, where[i]);
        vals[i] = eq + 1;
        if (cols[i] < 0) {
            cli_error(cmd, "filter: no column '%s' in the table", where[i]);
            *eq = '=';
            goto fail;
        }
        *eq = '=';
    }
    size_t nc = pfi_table_ncols(t);
    for (size_t c = 0; c < nc; c++)
        if (pfi_table_add_col(o, pfi_table_colname(t, c), pfi_table_coltype(t, c), &err) < 0)
            goto oom;
    for (size_t r = 0; r < pfi_table_nrows(t); r++) {
        int keep = 1;
        for (int i = 0; i < nwhere && keep; i++) {
            size_t c = (size_t)cols[i];
            if (pfi_table_coltype(t, c) == PFI_COL_TEXT) {
                keep = strcmp(pfi_table_text(t, c, r), vals[i]) == 0;
            } else {
                double v;
                keep = pfi_parse_double(vals[i], strlen(vals[i]), &v) == PFI_NUM_OK &&
                       pfi_table_num(t, c, r) == v;
            }
        }
        if (!keep) continue;
        const char *file;
        uint64_t line;
        pfi_table_row_origin(t, r, &file, &line);
        size_t row;
        if (pfi_table_add_row(o, pfi_table_add_file(o, file), line, &row, &err)) goto oom;
        for (size_t c = 0; c < nc; c++) {
            if (pfi_table_coltype(t, c) == PFI_COL_NUM) {
                pfi_table_set_num(o, c, row, pfi_table_num(t, c, r));
            } else {
                const char *s = pfi_table_text(t, c, r);
                if (pfi_table_set_text(o, c, row, s, &err)) goto oom;
            }
        }
    }
    free(cols);
    free(vals);
    if (pfi_table_nrows(o) == 0) {
        cli_error(cmd, "no rows match the filter");
        pfi_table_free(o);
        return NULL;
    }
    return o;
oom:
    cli_error(cmd, "out of memory");
fail:
    free(cols);
    free(vals);
    pfi_table_free(o);
    return NULL;
}

int cli_save_body(const char *cmd, const char *body, size_t len, const cli_out *o)
{
    pfi_error e;
    if (o->path && strcmp(o->path, "-")) {
        if (pfi_write_file_atomic(o->path, body, len, &e)) {
            cli_error(cmd, "%s", e.msg);
            return CLI_FAIL;
        }
        return CLI_OK;
    }
    fwrite(body, 1, len, stdout);
    if (len && body[len - 1] != '\n') putchar('\n');
    return CLI_OK;
}

int cli_save_rows(const char *cmd, const pfi_rows *r, const cli_out *o)
{
    pfi_error err;
    if (pfi_rows_save(r, cli_out_format(o), o->path, &err) != PFI_OK) {
        cli_error(cmd, "%s", err.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

pfi_rows *cli_table_rows(const pfi_table *t)
{
    size_t nc = pfi_table_ncols(t);
    const char **names = calloc(nc ? nc : 1, sizeof *names);
    pfi_celltype *types = calloc(nc ? nc : 1, sizeof *types);
    pfi_rows *r = NULL;
    if (names && types) {
        for (size_t c = 0; c < nc; c++) {
            names[c] = pfi_table_colname(t, c);
            types[c] = pfi_table_coltype(t, c) == PFI_COL_NUM ? PFI_CELL_NUM : PFI_CELL_TEXT;
        }
        r = pfi_rows_new(nc, names, types);
    }
    free(names);
    free(types);
    if (!r) return NULL;
    for (size_t i = 0; i < pfi_table_nrows(t); i++) {
        size_t k = pfi_rows_add(r);
        if (k == (size_t)-1) {
            pfi_rows_free(r);
            return NULL;
        }
        for (size_t c = 0; c < nc; c++) {
            if (pfi_table_coltype(t, c) == PFI_COL_NUM)
                pfi_rows_num(r, k, c, pfi_table_num(t, c, i));
            else pfi_rows_text(r, k, c, pfi_table_text(t, c, i));
        }
    }
    return r;
}

int cli_save_table(const char *cmd, const pfi_table *t, const cli_out *o)
{
    pfi_format fmt = o->fmt_set ? o->fmt : PFI_FMT_CSV;
    pfi_error err;
    if (fmt == PFI_FMT_CSV) {
        pfi_outfile f;
        if (pfi_out_open(&f, o->path, &err) != PFI_OK) {
            cli_error(cmd, "%s", err.msg);
            return CLI_FAIL;
        }
        if (pfi_table_write_csv(t, f.f, &err) != PFI_OK) {
            pfi_out_abort(&f);
            cli_error(cmd, "%s", err.msg);
            return CLI_FAIL;
        }
        if (pfi_out_commit(&f, &err) != PFI_OK) {
            cli_error(cmd, "%s", err.msg);
            return CLI_FAIL;
        }
        return CLI_OK;
    }
    pfi_rows *r = cli_table_rows(t);
    if (!r) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    cli_out o2 = *o;
    o2.fmt = fmt;
    o2.fmt_set = 1;
    int rc = cli_save_rows(cmd, r, &o2);
    pfi_rows_free(r);
    return rc;
}

int cli_data_path(const char *cmd, const char *data_dir, const char *rel, char *buf, size_t n)
{
    pfi_error e;
    if (pfi_data_path(data_dir, rel, buf, n, &e) == PFI_OK) return 0;
    cli_error(cmd, "%s", e.msg);
    return -1;
}
