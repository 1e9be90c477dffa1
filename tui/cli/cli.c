/* Subcommand table and top-level help. */
#include "tui/cli/cli.h"

#include "backend/compute/compute.h"
#include "backend/core/errbuf.h"

#include <stdio.h>
#include <string.h>

struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct cli_cmd cli_cmds[] = {
    {"train", cli_train, "run the training loop (dashboard, or --headless JSON lines)"},
    {"vpoc", cli_vpoc, "print each session's VPOC, VAH and VAL as JSON lines"},
    {"predict", cli_predict, "a trained model's prediction for every bar of a data file"},
    {"export", cli_export, "write a trained model as ONNX or safetensors"},
    {"synth", cli_synth, "write deterministic synthetic ES one-minute bars as CSV"},
    {"watch", cli_watch, "the dashboard over your own PyTorch jobs (python/ringside), no loop"},
    {"replay", cli_replay, "show a recorded run (JSON lines) in the dashboard"},
    {"probe", cli_probe, "print what every telemetry provider finds, per GPU (--json)"},
    {"kmsg", cli_kmsg, "classify kernel-log lines: 'kmsg classify [FILE|-] [--all]'"},
    {"doctor", cli_doctor, "check this machine: drivers, runtime, archs, permissions, GPU tests"},
    {"agent", cli_agent, "serve /metrics (Prometheus) and /events without a terminal"},
    {"attach", cli_attach, "show a remote agent's run in the dashboard: 'attach URL'"},
};

static void cli_help(void) {
    printf("usage: ringside [COMMAND] [options]\n\n"
           "With no command, ringside opens the dashboard on its own training loop (synthetic\n"
           "data unless --data is given; see 'ringside train --help' for the options).\n\n"
           "Commands:\n");
    for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
        printf("  %-8s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
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
    for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
        if (strcmp(argv[1], cli_cmds[i].name) == 0)
            return cli_cmds[i].run(argc - 1, argv + 1);
    char msg[256]; /* one line, whatever the word holds */
    errbuf_set(msg, sizeof(msg), 0, "unknown command '%.80s'; see 'ringside --help'", argv[1]);
    fprintf(stderr, "ringside: %s\n", msg);
    return RS_EXIT_USAGE;
}
