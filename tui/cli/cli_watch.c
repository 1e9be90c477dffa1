/* `ringside watch`: the dashboard over this machine's GPUs and the PyTorch jobs that attach
 * through the bridge, with no loop of ours and no GPU context of ours. */
#include "backend/core/errbuf.h"
#include "backend/run/bridge.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_args.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --socket PATH taken out of argv, which keeps train's words in order for cli_train_parse. The
 * two commands' flags are read together: one rule, one error for a name that is neither. 0, 1
 * after --help, or RS_EXIT_USAGE after the error. */
static int cli_watch_args(int *argc, char **argv, char *path, size_t cap) {
    const struct option *tables[] = {cli_optab_longopts(CLI_CMD_WATCH), cli_train_options(), NULL};
    struct cli_args a;
    cli_args_init(&a, *argc, argv, cli_optab_shortopts(CLI_CMD_TRAIN), tables);
    char err[1024];
    int out = 1, copied = 1, id;
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id < 0)
            return cli_usage_error("watch", err);
        if (id == 'h' || id == CLI_O_HELP)
            return cli_optab_help(CLI_CMD_WATCH, stdout) == 0 ? 1 : RS_EXIT_USAGE;
        if (id != CLI_O_WATCH_SOCKET) { /* train's: its words as given, "--" included */
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
