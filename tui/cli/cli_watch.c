/* `ringside watch`: the dashboard over this machine's GPUs and the PyTorch jobs that attach
 * through the bridge, with no loop of ours and no GPU context of ours. */
#include "backend/core/errbuf.h"
#include "backend/run/bridge.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_args.h"

#include <errno.h>
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

enum { CLI_WATCH_SOCKET = 1000 }; /* above train's ids: the two tables are read together */

/* --socket PATH taken out of argv, which keeps train's words in order for cli_train_parse. The
 * two commands' flags are read together: one rule, one error for a name that is neither. 0, 1
 * after --help, or RS_EXIT_USAGE after the error. */
static int cli_watch_args(int *argc, char **argv, char *path, size_t cap) {
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, CLI_WATCH_SOCKET},
        {NULL, 0, NULL, 0},
    };
    const struct option *tables[] = {longopts, cli_train_options(), NULL};
    struct cli_args a;
    cli_args_init(&a, *argc, argv, "d:h", tables);
    char err[1024];
    int out = 1, copied = 1, id;
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id < 0)
            return cli_usage_error("watch", err);
        if (id == 'h') {
            fputs(cli_watch_help, stdout);
            return 1;
        }
        if (id != CLI_WATCH_SOCKET) { /* train's: its words as given, "--" included */
            while (copied < a.next)
                argv[out++] = argv[copied++];
            continue;
        }
        copied = a.next;
        if (strlen(a.value) >= cap || !a.value[0]) {
            errbuf_set(err, sizeof(err), -EINVAL, "--socket: '%s' is %s", a.value,
                       a.value[0] ? "longer than a socket path can be" : "empty");
            return cli_usage_error("watch", err);
        }
        snprintf(path, cap, "%s", a.value);
    }
    *argc = out;
    return 0;
}

int cli_watch(int argc, char **argv) {
    char socket[BRIDGE_PATH_MAX] = "";
    int rc = cli_watch_args(&argc, argv, socket, sizeof(socket));
    struct cli_train_opts *o = rc ? NULL : calloc(1, sizeof(*o));
    if (rc != 0 || !o)
        return rc == 1 ? 0 : rc ? rc : 1;
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
