/* main.c — the `pfi` command: dispatch to subcommands, `pfi help [cmd]`,
 * `pfi help --man`, `pfi help --completion bash|zsh`, `pfi --version`. The
 * command table below is the single list of subcommands; each subcommand's
 * option table (options.h) gives its help, its part of the man page and of
 * the completions, so none of them can disagree with what it parses. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pfi/version.h"

#define CMDN(name, str, summary)                                                                   \
    int cmd_##name(int, char **);                                                                  \
    extern const pfi_opts cmd_##name##_opts;
#define CMD(name, summary) CMDN(name, #name, summary)
#include "commands.def"
#undef CMD
#undef CMDN

const cli_cmd cli_commands[] = {
#define CMDN(name, str, summary) {str, cmd_##name, summary, &cmd_##name##_opts},
#define CMD(name, summary) CMDN(name, #name, summary)
#include "commands.def"
#undef CMD
#undef CMDN
};
const size_t cli_ncommands = sizeof cli_commands / sizeof *cli_commands;

typedef struct help_args {
    int man;
    const char *completion;
} help_args;

#define OPT_T help_args
static const pfi_opt help_options[] = {
    OPT_BOOLEAN(0, "man", man,
                "print the man page pfi(1) (roff), generated from the option tables"),
    OPT_CHOICE(0, "completion", completion, "bash|zsh",
               "print the completion script for this shell"),
    OPT_HELP(), OPT_END()};
#undef OPT_T

static const pfi_opts help_opts = {
    .prog = "pfi help",
    .see = "see 'pfi help help'",
    .usage = "pfi help [COMMAND]\npfi help --man\npfi help --completion bash|zsh",
    .description = "Print the help of COMMAND (the same as pfi COMMAND --help), or of pfi; the\n"
                   "man page; or a shell completion script.\n",
    .options = help_options,
    .operands = PFI_OPERANDS_SUBCOMMAND,
};

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
    fprintf(
        f,
        "\ncommon options: --format csv|json|table (--json), -o FILE (written atomically;\n"
        "                devices, FIFOs and /dev/stdout are written directly, never replaced)\n");
}

/* `pfi help --man`: the man page, generated from the same command and
 * option tables as `pfi help`, so the two never disagree. */
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
           ".TP\n.B \\-o FILE, \\-\\-output FILE\nWrite to FILE (also \\-\\-ratios and other "
           "output files). A regular file, "
           "reached through any symlinks, or a new path is written atomically: a temporary file in "
           "the "
           "final target's directory, with the existing file's mode and owner, fsynced and renamed "
           "over "
           "the target, then the directory fsynced; a symlink stays a symlink. A character device, "
           "FIFO, "
           "/dev/stdout, /dev/stderr or /dev/fd/N is written directly, never replaced. A directory "
           "or a "
           "block device is an error. \\- is standard output.\n"
           ".TP\n.B \\-h, \\-\\-help\nPrint the command's help and exit.\n"
           ".SH COMMANDS\n",
           PFI_VERSION);
    for (size_t i = 0; i < cli_ncommands; i++) {
        printf(".SS %s\n%s.\n", cli_commands[i].name, cli_commands[i].summary);
        pfi_opts_man(cli_commands[i].opts, stdout);
    }
    printf(".SS help\nThis help, the man page and the shell completions.\n");
    pfi_opts_man(&help_opts, stdout);
    printf(".SH EXIT STATUS\n0 success, 1 bad input or failure (a one-line error naming file, "
           "line and column), 2 usage error (an unknown command or option names the closest one).\n"
           ".SH FILES\n.TP\n.I share/bash-completion/completions/pfi, "
           "share/zsh/vendor-completions/_pfi\n"
           "Completion scripts (pfi help \\-\\-completion bash|zsh).\n"
           ".SH SEE ALSO\nThe README and docs/ of the pfi source tree.\n");
}

/* "pfi: unknown command 'indx'; did you mean 'index'?" */
static int unknown_command(const char *c)
{
    const char *names[64];
    size_t n = 0;
    for (size_t i = 0; i < cli_ncommands && n < 62; i++) names[n++] = cli_commands[i].name;
    names[n++] = "help";
    names[n++] = "version";
    const char *s = pfi_opts_suggest(c, names, n);
    if (s) fprintf(stderr, "pfi: unknown command '%s'; did you mean '%s'?\n", c, s);
    else fprintf(stderr, "pfi: unknown command '%s' (see 'pfi help')\n", c);
    return CLI_USAGE;
}

static int completion(const char *shell)
{
    pfi_opts_sub subs[64];
    size_t n = 0;
    for (size_t i = 0; i < cli_ncommands && n < 63; i++)
        subs[n++] =
            (pfi_opts_sub){cli_commands[i].name, cli_commands[i].summary, cli_commands[i].opts};
    subs[n++] =
        (pfi_opts_sub){"help", "a command's help, the man page, shell completions", &help_opts};
    return pfi_opts_completion(shell, "pfi", subs, n, "--help --version", stdout) ? CLI_USAGE
                                                                                  : CLI_OK;
}

/* pfi help [--man | --completion SHELL | COMMAND] */
static int help(int argc, char **argv)
{
    help_args a = {0, NULL};
    int first, rc = cli_parse(&help_opts, &a, argc, argv, &first);
    if (rc >= 0) return rc;
    if (a.man) {
        man_page();
        return CLI_OK;
    }
    if (a.completion) return completion(a.completion);
    if (first >= argc) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[first], "help") == 0) {
        pfi_opts_help(&help_opts, stdout);
        return CLI_OK;
    }
    if (!cli_find(argv[first])) return unknown_command(argv[first]);
    return cli_help(argv[first]);
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
    if (strcmp(c, "help") == 0) return help(argc - 1, argv + 1);
    opterr = 0; /* commands report bad options themselves, on one line */
    const cli_cmd *cmd = cli_find(c);
    if (!cmd) return unknown_command(c);
    return cmd->run(argc - 1, argv + 1);
}
