/* main.c — the `pfi` command: dispatch to subcommands, `pfi help [cmd]`,
 * `pfi --version`. The command table below is the single list of
 * subcommands (help, man page and README list the same). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pfi/version.h"

#define CMD(name, summary) int cmd_##name(int, char **); extern const char cmd_##name##_usage[];
#include "commands.def"
#undef CMD

const cli_cmd cli_commands[] = {
#define CMD(name, summary) {#name, cmd_##name, summary, cmd_##name##_usage},
#include "commands.def"
#undef CMD
};
const size_t cli_ncommands = sizeof cli_commands / sizeof *cli_commands;

static void usage(FILE *f)
{
    fprintf(f,
            "pfi %s — power-flexible LLM training: measure, predict and allocate the Power\n"
            "Flexibility Index (PFI) of training jobs (arXiv:2609.11542).\n\n"
            "usage: pfi <command> [options] [args]\n"
            "       pfi help [command]\n"
            "       pfi --version\n\ncommands:\n",
            PFI_VERSION);
    for (size_t i = 0; i < cli_ncommands; i++)
        fprintf(f, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(f,
            "\ncommon options: --format csv|json|table (--json), -o FILE (written atomically;\n"
            "                devices, FIFOs and /dev/stdout are written directly, never replaced)\n");
}

/* `pfi help --man`: the man page, generated from the same command table and
 * usage texts as `pfi help`, so the two never disagree. */
static void man_page(void)
{
    printf(".TH PFI 1 \"\" \"pfi %s\" \"User Commands\"\n"
           ".SH NAME\npfi \\- Power Flexibility Index toolkit for power-flexible LLM training\n"
           ".SH SYNOPSIS\n.B pfi\n.I command\n[options] [args]\n.br\n.B pfi help\n[command]\n"
           ".SH DESCRIPTION\npfi measures how much throughput a training job loses per watt shed "
           "under GPU power caps (the Power Flexibility Index of arXiv:2609.11542), predicts it "
           "from telemetry, and splits a cluster power cut across jobs.\n"
           ".SH COMMON OPTIONS\n.TP\n.B \\-\\-format csv|json|table\nOutput rendering "
           "(\\-\\-json is an alias for json). Default: table on a terminal, csv otherwise.\n"
           ".TP\n.B \\-o FILE\nWrite to FILE (also \\-\\-ratios and other output files). A regular file, "
           "reached through any symlinks, or a new path is written atomically: a temporary file in the "
           "final target's directory, with the existing file's mode and owner, fsynced and renamed over "
           "the target, then the directory fsynced; a symlink stays a symlink. A character device, FIFO, "
           "/dev/stdout, /dev/stderr or /dev/fd/N is written directly, never replaced. A directory or a "
           "block device is an error. \\- is standard output.\n"
           ".SH COMMANDS\n",
           PFI_VERSION);
    for (size_t i = 0; i < cli_ncommands; i++) {
        printf(".SS %s\n%s.\n.PP\n.nf\n", cli_commands[i].name, cli_commands[i].summary);
        for (const char *p = cli_commands[i].usage; *p; p++) {
            if (*p == '\\') fputs("\\\\", stdout);
            else if (*p == '-' ) fputs("\\-", stdout);
            else if (*p == '.' && (p == cli_commands[i].usage || p[-1] == '\n')) fputs("\\&.", stdout);
            else putchar(*p);
        }
        printf(".fi\n");
    }
    printf(".SH EXIT STATUS\n0 success, 1 bad input or failure (a one-line error naming file, "
           "line and column), 2 usage error.\n"
           ".SH SEE ALSO\nThe README and docs/ of the pfi source tree.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *c = argv[1];
    if (strcmp(c, "--version") == 0 || strcmp(c, "version") == 0) {
        printf("pfi %s\n", PFI_VERSION);
        return CLI_OK;
    }
    if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(c, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return CLI_OK;
        }
        if (strcmp(argv[2], "--man") == 0) {
            man_page();
            return CLI_OK;
        }
        if (!cli_find(argv[2])) {
            fprintf(stderr, "pfi: unknown command '%s' (see 'pfi help')\n", argv[2]);
            return CLI_USAGE;
        }
        return cli_help(argv[2]);
    }
    opterr = 0; /* commands report bad options themselves, on one line */
    const cli_cmd *cmd = cli_find(c);
    if (!cmd) {
        fprintf(stderr, "pfi: unknown command '%s' (see 'pfi help')\n", c);
        return CLI_USAGE;
    }
    return cmd->run(argc - 1, argv + 1);
}
