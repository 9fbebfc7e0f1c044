/* cli.h — what every `pfi` subcommand shares: the command table, common
 * output flags (--format csv|json|table, --json, -o FILE written
 * atomically), reading sweep tables, and uniform error/warning printing.
 * Each subcommand lives in its own cmd_*.c and stays thin: one option table
 * (options.h) for its flags, then call the library, print. */
#ifndef PFI_CLI_H
#define PFI_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "options.h"
#include "pfi/status.h"
#include "pfi/table.h"
#include "rows.h"

typedef struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const pfi_opts *opts; /* its option table: parsing, --help, man page, completion */
} cli_cmd;

extern const cli_cmd cli_commands[];
extern const size_t cli_ncommands;
const cli_cmd *cli_find(const char *name);

/* Exit codes: 0 ok, 1 failure (bad data, I/O), 2 usage error. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* A subcommand's pfi_opts (options.h): messages start "pfi NAME: ", usage
 * errors end "(see 'pfi help NAME')". */
#define CLI_OPTS(name, ...)                                                                        \
    {                                                                                              \
        .prog = "pfi " #name, .see = "see 'pfi help " #name "'", __VA_ARGS__                       \
    }

/* Parse a subcommand's options into args. Returns -1 to go on, operands
 * from argv[*first]; else the exit code (CLI_OK after --help, printed). */
int cli_parse(const pfi_opts *spec, void *args, int argc, char **argv, int *first);

/* Common output options: OPT_INCLUDE(cli_out_options, out, CLI_OUT_DOC)
 * puts --format csv|json|table, --json and -o/--output FILE into a cli_out. */
typedef struct cli_out {
    pfi_format fmt;
    int fmt_set;
    const char *path;
} cli_out;
extern const pfi_opt cli_out_options[];
#define CLI_OUT_DOC "the common output options (see COMMON OPTIONS)"

/* --gpu-model NAME into the args struct's gpu_model (the commands that read
 * sweep tables; OPT_T must be that struct) */
#define CLI_OPT_GPU_MODEL                                                                          \
    OPT_STRING(0, "gpu-model", gpu_model, "NAME",                                                  \
               "GPU model for a Zeus trace whose file name does not say it")

void cli_out_init(cli_out *o);
/* Default format when --format is absent: table on a terminal, else csv. */
pfi_format cli_out_format(const cli_out *o);

/* Option callbacks two commands share: --objective tokens|normalized (an
 * int set to 1 for normalized) */
int cli_opt_objective(const pfi_opts_ctx *ctx, const pfi_opt *o, const char *arg, void *value);

void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_warn_cb(void *ud, const char *msg);
/* A pfi_log that prints "pfi CMD: warning: ..." to stderr. */
pfi_log cli_log(const char *cmd);
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `pfi help CMD` / `pfi CMD --help`: the help generated from its table. */
int cli_help(const char *cmd);

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
/* A body as it came (a controller's JSON): to -o FILE atomically, else to
   stdout ending in a newline. Returns exit code. */
int cli_save_body(const char *cmd, const char *body, size_t len, const cli_out *o);

#endif
