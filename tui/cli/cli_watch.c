/* `ringside watch`: the dashboard over this machine's GPUs and the PyTorch jobs that attach
 * through the bridge, with no loop of ours and no GPU context of ours. */
#include "backend/run/bridge.h"
#include "tui/cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cli_watch_help[] =
    "usage: ringside watch [--socket PATH] [dashboard options]\n\n"
    "The dashboard without a training loop of ours: every GPU's telemetry and processes, the\n"
    "kernel log, and the PyTorch jobs that attach with the Python bridge (python/ringside:\n"
    "'import ringside; rs = ringside.connect()'): their phases, metrics, synchronizes,\n"
    "process-group calls and caching allocator, shown as the loop's are. The loop's keys\n"
    "(p + - c m) go to the attached jobs that take commands. ringside itself opens no GPU\n"
    "context and allocates nothing on the GPUs it watches.\n\n"
    "  --socket PATH            listen at PATH (default $XDG_RUNTIME_DIR/ringside/bridge.sock,\n"
    "                           or /tmp/ringside-UID/bridge.sock; the script's connect() and\n"
    "                           $RINGSIDE_SOCKET name the same)\n"
    "  -h, --help               this help\n\n"
    "The dashboard's options of 'ringside --help' apply: -d, --theme, --frames, --sync-slow,\n"
    "--sync-timeout, --telemetry and its roots, the kernel-log options, --config. The data,\n"
    "training and compute options are refused: watch trains nothing.\n";

/* --socket PATH / --socket=PATH taken out of argv (which keeps the rest, in order). */
static int cli_watch_socket(int *argc, char **argv, char *path, size_t cap) {
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--socket") == 0) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "ringside watch: missing value for '--socket'\n"
                                "Try 'ringside watch --help'.\n");
                return RS_EXIT_USAGE;
            }
            v = argv[++i];
        } else if (strncmp(argv[i], "--socket=", 9) == 0) {
            v = argv[i] + 9;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        if (strlen(v) >= cap || !v[0]) {
            fprintf(stderr, "ringside watch: --socket: '%s' is %s\n", v,
                    v[0] ? "longer than a socket path can be" : "empty");
            return RS_EXIT_USAGE;
        }
        snprintf(path, cap, "%s", v);
    }
    *argc = out;
    return 0;
}

int cli_watch(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(cli_watch_help, stdout);
            return 0;
        }
    char socket[BRIDGE_PATH_MAX] = "";
    int rc = cli_watch_socket(&argc, argv, socket, sizeof(socket));
    struct cli_train_opts *o = rc ? NULL : calloc(1, sizeof(*o));
    if (rc != 0 || !o)
        return rc ? rc : 1;
    rc = cli_train_parse(argc, argv, "watch", o);
    if (rc == 0) {
        struct app_view v = o->view;
        v.sync_slow_ns = o->run.sync_slow_ns;
        v.sync_timeout_ns = o->run.sync_timeout_ns;
        rc = app_watch(&o->run, &v, socket[0] ? socket : NULL);
    } else if (rc == 1) {
        rc = 0;
    }
    free(o);
    return rc;
}
