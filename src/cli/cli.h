/* cli.h — what every `pfi` subcommand shares: the command table, common
 * output flags (--format csv|json|table, --json, -o FILE written
 * atomically), reading sweep tables, and uniform error/warning printing.
 * Each subcommand lives in its own cmd_*.c and stays thin: parse flags,
 * call the library, print. */
#ifndef PFI_CLI_H
#define PFI_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "rows.h"
#include "pfi/status.h"
#include "pfi/table.h"

typedef struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *usage; /* full help text */
} cli_cmd;

extern const cli_cmd cli_commands[];
extern const size_t cli_ncommands;
const cli_cmd *cli_find(const char *name);

/* Exit codes: 0 ok, 1 failure (bad data, I/O), 2 usage error. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Common output options. Add CLI_COMMON_LONGOPTS to a getopt_long table and
 * pass unknown option characters to cli_common_opt. */
typedef struct cli_out {
    pfi_format fmt;
    int fmt_set;
    const char *path;
} cli_out;

#define CLI_OPT_FORMAT 0x1001
#define CLI_OPT_JSON 0x1002
#define CLI_OPT_HELP 'h'
#define CLI_COMMON_LONGOPTS                                                                  \
    {"format", required_argument, NULL, CLI_OPT_FORMAT}, {"json", no_argument, NULL, CLI_OPT_JSON}, \
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}
#define CLI_COMMON_SHORTOPTS "o:h"

void cli_out_init(cli_out *o);
/* 1 if handled, 0 if not a common option, -1 on error (message printed). */
int cli_common_opt(const char *cmd, int c, const char *arg, cli_out *o);
/* Default format when --format is absent: table on a terminal, else csv. */
pfi_format cli_out_format(const cli_out *o);

void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_warn_cb(void *ud, const char *msg);
/* A pfi_log that prints "pfi CMD: warning: ..." to stderr. */
pfi_log cli_log(const char *cmd);
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_help(const char *cmd);
/* getopt_long loop tail: unknown option / missing argument. */
int cli_bad_option(const char *cmd, char **argv);

/* Parse "a,b,c" into doubles (positive, finite). Returns count or -1. */
int cli_parse_list(const char *s, double *out, int max);
/* Strict number from an option argument. */
int cli_parse_num(const char *cmd, const char *opt, const char *s, double lo, double hi, double *v);

/* Read sweep tables (files or "-") into one table. --gpu-model for Zeus. */
pfi_table *cli_read_sweeps(const char *cmd, char **paths, int n, const char *gpu_model);

/* Apply --where col=value filters (AND). Returns a new table. */
pfi_table *cli_filter_table(const char *cmd, const pfi_table *t, char **where, int nwhere);

/* Path of a bundled data file (relative to data/): --data DIR, then
 * $PFI_DATA_DIR, then the installed share/pfi, then the source tree's data/.
 * Returns 0 and fills buf, or -1 (message printed). */
int cli_data_path(const char *cmd, const char *data_dir, const char *rel, char *buf, size_t n);

/* Save a table (CSV by default, or as rows in JSON/table). Returns exit code. */
int cli_save_table(const char *cmd, const pfi_table *t, const cli_out *o);
/* Convert a table to rows (for JSON / terminal rendering). */
pfi_rows *cli_table_rows(const pfi_table *t);

/* Save rows with the chosen format (atomic for -o). Returns exit code. */
int cli_save_rows(const char *cmd, const pfi_rows *r, const cli_out *o);

#endif
