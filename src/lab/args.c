/* The command line's one argument walk (args.h). */
#include "args.h"

#include <stddef.h>
#include <string.h>

void cli_args_init(cli_args *a, int argc, char **argv)
{
    a->argc = argc;
    a->argv = argv;
    a->next = 0;
    a->dashdash_seen = 0;
    a->options_ended = 0;
}

cli_arg_kind cli_args_next(cli_args *a, const char **arg)
{
    *arg = NULL;
    if (a->next < a->argc && !a->dashdash_seen && strcmp(a->argv[a->next], "--") == 0) {
        a->dashdash_seen = a->options_ended = 1;
        a->next++;
    }
    if (a->next >= a->argc)
        return CLI_END;
    *arg = a->argv[a->next++];
    return !a->options_ended && (*arg)[0] == '-' && (*arg)[1] != '\0' ? CLI_OPTION : CLI_OPERAND;
}

const char *cli_args_value(cli_args *a)
{
    return a->next < a->argc ? a->argv[a->next++] : NULL;
}

void cli_args_end_options(cli_args *a) { a->options_ended = 1; }

int cli_args_has_option(int argc, char **argv, const char *name, int (*takes_value)(const char *option))
{
    cli_args a;
    const char *arg;
    cli_arg_kind k;
    cli_args_init(&a, argc, argv);
    while ((k = cli_args_next(&a, &arg)) != CLI_END) {
        if (k != CLI_OPTION)
            continue;
        if (strcmp(arg, name) == 0)
            return 1;
        if (takes_value && takes_value(arg))
            cli_args_value(&a);
    }
    return 0;
}

int cli_args_operands(int argc, char **argv, const char **out, int most)
{
    cli_args a;
    const char *arg;
    cli_arg_kind k;
    int n = 0;
    cli_args_init(&a, argc, argv);
    while ((k = cli_args_next(&a, &arg)) != CLI_END) {
        if (k == CLI_OPTION || n == most)
            return -1;
        out[n++] = arg;
    }
    return n;
}
