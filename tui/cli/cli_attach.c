/* `ringside attach URL`: a remote agent's run (ringside agent) in the dashboard. */
#include "backend/core/errbuf.h"
#include "backend/kmsg/remedies.h"
#include "backend/run/replay.h"
#include "tui/agent/http_client.h"
#include "tui/agent/remote.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_optab.h"
#include "tui/dashboard/app.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cli_attach_opts {
    struct cli_train_opts o;
    struct remote_conf rc;
    const char *url;
    const char *token_file;
};

static int cli_attach_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_attach_opts *a = ctx;
    long x = 0;
    int rc;
    switch (id) {
    case CLI_O_ATTACH_TOKEN_FILE:
        a->token_file = v;
        return 0;
    case CLI_O_ATTACH_CACERT:
        return cli_copy("--cacert", a->rc.cacert, sizeof(a->rc.cacert), v, err, n);
    case CLI_O_ATTACH_TIMEOUT:
        if ((rc = cli_parse_long("--timeout", v, 1, 3600, &x, err, n)) == 0)
            a->rc.timeout_ms = (int)x * 1000;
        return rc;
    case 1: /* the URL operand ("-" in shortopts returns operands in order) */
        if (a->url)
            return errbuf_set(err, n, -EINVAL, "unexpected argument '%s'", v);
        a->url = v;
        return cli_copy("URL", a->rc.url, sizeof(a->rc.url), v, err, n);
    default:
        rc = cli_view_opt(&a->o, id, v, err, n);
        return rc == -ENOENT ? errbuf_set(err, n, -EINVAL, "internal: unhandled option") : rc;
    }
}

static int cli_attach_parse(int argc, char **argv, struct cli_attach_opts *a) {
    cli_view_defaults(&a->o);
    remote_conf_default(&a->rc);
    int rc = cli_getopt_run(argc, argv, "attach", CLI_CMD_ATTACH, true, cli_attach_opt, a);
    if (rc != 0)
        return rc;
    if (!a->url)
        return cli_usage_error("attach", "URL is required");
    return 0;
}

/* --cacert's file can be read (a regular file: a FIFO is refused, not waited on): 0, or
 * -errno with err naming it. Its certificates are read when the connection is made. */
static int cli_attach_cacert(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errbuf_set(err, errlen, -errno, "--cacert %s: %s", path, strerror(errno));
    struct stat st;
    int rc = fstat(fd, &st) != 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
    close(fd);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "--cacert %s: %s", path,
                          rc == -EINVAL ? "not a regular file (give a PEM file of certificates)"
                                        : strerror(-rc));
    return 0;
}

/* remote_open's words for a line longer than the client takes, said as which line it was and
 * the limit: libcurl's refusal of a status or header line over HTTP_HEAD_LINE_MAX
 * (http_head_too_long), and a first line (the run
 * line) over REPLAY_LINE_BYTES comes back as E2BIG's "Argument list too long". err's tail is
 * replaced in place; any other err is left as it is. */
static void cli_attach_too_long(int rc, char *err, size_t errlen) {
    const char *tail = NULL;
    char said[256];
    if (rc == -E2BIG && errbuf_ends_with(err, strerror(E2BIG))) {
        tail = strerror(E2BIG);
        snprintf(said, sizeof(said),
                 "the stream's first line (the run line) is over %u bytes (%u MiB), the "
                 "longest line attach reads",
                 REPLAY_LINE_BYTES, REPLAY_LINE_BYTES >> 20);
    } else if ((tail = http_head_too_long(err)) != NULL) {
        snprintf(said, sizeof(said),
                 "the answer's status line or one of its header lines is over %d bytes (%d "
                 "KiB), the longest libcurl takes (libcurl: %s)",
                 HTTP_HEAD_LINE_MAX, HTTP_HEAD_LINE_MAX >> 10, tail);
    }
    if (!tail)
        return;
    size_t at = strlen(err) - strlen(tail);
    snprintf(err + at, errlen - at, "%s", said);
}

/* The token (--token-file), the CA file (--cacert), the connection and the remedies. 0, or
 * -errno with err. A token about to cross a network in clear is warned of first. */
static int cli_attach_open(struct cli_attach_opts *a, struct source **src, struct remedies **rules,
                           char *err, size_t errlen) {
    char why[512];
    int rc;
    if (a->token_file && (rc = cli_token_read(a->token_file, a->rc.token, sizeof(a->rc.token), why,
                                              sizeof(why))) != 0)
        return errbuf_set(err, errlen, rc, "--token-file %s", why);
    if (a->rc.cacert[0] && (rc = cli_attach_cacert(a->rc.cacert, err, errlen)) != 0)
        return rc;
    if (remote_token_in_clear(&a->rc))
        fprintf(stderr,
                "ringside attach: warning: the token crosses the network in clear to %s (plain "
                "http://): anyone on the path can read and reuse it; serve the agent over "
                "https:// and attach with https://\n",
                a->rc.url);
    if ((rc = remote_open(src, &a->rc, err, errlen)) != 0) {
        cli_attach_too_long(rc, err, errlen);
        return rc;
    }
    /* the agent's kernel-log events get their remedies here */
    return remedies_load(rules, NULL, err, errlen);
}

int cli_attach(int argc, char **argv) {
    struct cli_attach_opts *a = calloc(1, sizeof(*a));
    if (!a)
        return 1;
    int rc = cli_attach_parse(argc, argv, a);
    if (rc != 0) {
        free(a);
        return rc == 1 ? 0 : rc;
    }
    char err[ENGINE_PATH_MAX + 256];
    struct source *src = NULL;
    struct remedies *rules = NULL;
    if (cli_attach_open(a, &src, &rules, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside attach: %s\n", err);
        if (src)
            src->ops->destroy(src);
        free(a);
        return RS_EXIT_USAGE;
    }
    struct app_services svc = {NULL, NULL, rules};
    rc = app_main(src, &a->o.view, &svc);
    src->ops->destroy(src);
    remedies_free(rules);
    free(a);
    return rc;
}
