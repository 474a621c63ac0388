/* The ffnrt command's arguments, walked the same way by every subcommand
 * (and the bench's), so none reads options its own way:
 *  - an option is an argument that starts with '-' and is not "-" alone
 *    ("--stats", "-h"); the rest are operands;
 *  - an option's value is the argument after it, whatever it looks like
 *    ("--range -4,4", "--out --odd-name");
 *  - "--" ends the options (POSIX, Utility Syntax Guideline 10): the first
 *    "--" that is not an option's value is dropped wherever it stands, and
 *    every argument after it is an operand, even one that starts with '-'
 *    ("ffnrt run --stats relu -- -2 -1 0", "ffnrt bench --compare -- -a.json b.json");
 *  - a command whose operands run to the end once they start (ffnrt run:
 *    OP, then its numbers) ends the options itself at its first operand,
 *    so "-2" after OP is a number, as it always was. */
#ifndef FFNRT_CLI_ARGS_H
#define FFNRT_CLI_ARGS_H

typedef struct cli_args {
    int argc;
    char **argv;
    int next;          /* the index of the next argument */
    int dashdash_seen; /* the delimiter "--" was dropped: all that follows is an operand */
    int options_ended; /* by "--", or by the command (cli_args_end_options) */
} cli_args;

typedef enum cli_arg_kind { CLI_END, CLI_OPTION, CLI_OPERAND } cli_arg_kind;

void cli_args_init(cli_args *a, int argc, char **argv);
/* The next argument into *arg, and what it is; CLI_END (and *arg NULL)
 * when none is left. */
cli_arg_kind cli_args_next(cli_args *a, const char **arg);
/* The value of the option cli_args_next just returned: the next argument,
 * taken whole ("--" and "-5" included); NULL when none is left. */
const char *cli_args_value(cli_args *a);
/* From here on every argument is an operand (the first "--" is still
 * dropped). */
void cli_args_end_options(cli_args *a);
/* 1 if an option spelled `name` comes before the options end, not as
 * another option's value; `takes_value` says which options take one (NULL:
 * none). For a command that hands its whole argument list to another
 * (ffnrt check --fp32-control is ffnrt run's). */
/* Operands only (no option, "--" allowed), at most `most` of them, into
 * out: their number, or -1 for an option or one too many. */
int cli_args_operands(int argc, char **argv, const char **out, int most);

int cli_args_has_option(int argc, char **argv, const char *name, int (*takes_value)(const char *option));

#endif
