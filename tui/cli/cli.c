/* Subcommand dispatch (the commands are cli_cmds.def's rows) and the top-level help. */
#include "tui/cli/cli.h"

#include "backend/compute/compute.h"
#include "backend/core/errbuf.h"
#include "tui/cli/cli_optab.h"

#include <stdio.h>
#include <string.h>

static void cli_help(void) {
    printf("usage: ringside [COMMAND] [options]\n\n"
           "With no command, ringside opens the dashboard on its own training loop (synthetic\n"
           "data unless --data is given; see 'ringside train --help' for the options).\n\n"
           "Commands:\n");
    size_t n;
    const struct cli_cmd_doc *cmds = cli_optab_cmds(&n);
    for (size_t i = 0; i < n; i++)
        printf("  %-8s %s\n", cmds[i].name, cmds[i].summary);
    printf("\n  -h, --help     this help\n  -V, --version  version and compiled-in backends\n"
           "\nRun 'ringside COMMAND --help' for a command's options.\n");
}

int cli_main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        cli_help();
        return 0;
    }
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("ringside %s (backends: %s)\n", RS_VERSION, compute_backends());
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-')
        return cli_dashboard(argc, argv);
    const struct cli_cmd_doc *cmd = cli_optab_cmd_named(argv[1]);
    if (cmd)
        return cmd->run(argc - 1, argv + 1);
    char msg[256]; /* one line, whatever the word holds */
    errbuf_set(msg, sizeof(msg), 0, "unknown command '%.80s'; see 'ringside --help'", argv[1]);
    fprintf(stderr, "ringside: %s\n", msg);
    return RS_EXIT_USAGE;
}
