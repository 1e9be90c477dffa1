/* The values every command's flags share: strict numbers, copies into fixed buffers, the data
 * and viewing flags, a token file; the option loop over a command's rows, and the one line of
 * a usage error. */
#include "backend/core/errbuf.h"
#include "backend/core/secret_file.h"
#include "backend/data/data_csv.h"
#include "tui/cli/cli_args.h"
#include "tui/cli/cli_optab.h"
#include "tui/cli/cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_usage_error(const char *cmd, const char *msg) {
    char line[4608]; /* errbuf_set keeps it one line whatever the words quoted in msg hold */
    errbuf_set(line, sizeof(line), 0, "%s; see 'ringside %s --help'", msg, cmd[0] ? cmd : "train");
    fprintf(stderr, "ringside: %s\n", line);
    return RS_EXIT_USAGE;
}

int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out, char *err,
                   size_t errlen) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return errbuf_set(err, errlen, -EINVAL, "%s: '%s' is not an integer in [%ld, %ld]", flag, s,
                          lo, hi);
    *out = v;
    return 0;
}

int cli_parse_double(const char *flag, const char *s, double lo, double hi, double *out, char *err,
                     size_t errlen) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return errbuf_set(err, errlen, -EINVAL, "%s: '%s' is not a number in [%g, %g]", flag, s, lo,
                          hi);
    *out = v;
    return 0;
}

int cli_copy(const char *flag, char *dst, size_t cap, const char *src, char *err, size_t errlen) {
    if (strlen(src) >= cap)
        return errbuf_set(err, errlen, -ENAMETOOLONG, "%s: value longer than %zu bytes", flag,
                          cap - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

int cli_data_text(const char *flag, const char *v, char *dst, size_t cap, char *err,
                  size_t errlen) {
    int rc = data_csv_opt_check(flag, v, NULL, err, errlen);
    return rc != 0 ? rc : cli_copy(flag, dst, cap, v, err, errlen);
}

int cli_continuous(const char *v, bool *on, char *err, size_t errlen) {
    if (strcmp(v, "front") != 0)
        return errbuf_set(err, errlen, -EINVAL, "--continuous: '%s' is not front", v);
    *on = true;
    return 0;
}

int cli_getopt_run(int argc, char **argv, const char *cmd, unsigned bit, bool operands,
                   cli_opt_fn on_opt, void *ctx) {
    const struct option *tables[] = {cli_optab_longopts(bit), NULL};
    struct cli_args a;
    cli_args_init(&a, argc, argv, cli_optab_shortopts(bit), tables);
    const char *stray = NULL; /* said after the options, so that --help after it still helps */
    char err[1024];
    int id;
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id < 0)
            return cli_usage_error(cmd, err);
        if (id > CLI_ARGS_OPERAND && id <= CLI_O_NONE_) /* a letter: its row's id */
            id = cli_optab_letter(bit, id);
        if (id == CLI_O_HELP)
            return cli_optab_help(bit, stdout) == 0 ? 1 : RS_EXIT_USAGE;
        if (id == CLI_ARGS_OPERAND && !operands) {
            stray = stray ? stray : a.value;
            continue;
        }
        if (on_opt(id, a.value, ctx, err, sizeof(err)) != 0)
            return cli_usage_error(cmd, err);
    }
    if (stray) {
        errbuf_set(err, sizeof(err), -EINVAL, "unexpected argument '%s'", stray);
        return cli_usage_error(cmd, err);
    }
    return 0;
}

void cli_view_defaults(struct cli_train_opts *o) {
    engine_conf_default(&o->run.conf);
    o->view.delay_ds = 5;
    o->view.sync_slow_ns = o->run.sync_slow_ns = 1000000000ull;
    o->view.sync_timeout_ns = o->run.sync_timeout_ns = 30000000000ull;
}

int cli_view_opt(struct cli_train_opts *o, int id, const char *v, char *err, size_t errlen) {
    long x = 0;
    int rc;
    switch (id) {
    case CLI_O_VIEW_FRAMES:
        if ((rc = cli_parse_long("--frames", v, 1, 100000000, &x, err, errlen)) == 0)
            o->view.frames = (int)x;
        return rc;
    case CLI_O_VIEW_DELAY:
        if ((rc = cli_parse_long("--delay", v, 1, 600, &x, err, errlen)) == 0)
            o->view.delay_ds = (int)x;
        return rc;
    case CLI_O_VIEW_THEME:
        return cli_copy("--theme", o->view.theme, sizeof(o->view.theme), v, err, errlen);
    default:
        return -ENOENT;
    }
}

int cli_token_read(const char *path, char *out, size_t cap, char *err, size_t errlen) {
    int fd = secret_file_open(path, "token file", true, err, errlen);
    if (fd < 0)
        return fd;
    char line[512];
    ssize_t got = read(fd, line, sizeof(line) - 1);
    close(fd);
    size_t len = got > 0 ? (size_t)got : 0, n = 0;
    while (n < len && line[n] != '\n' && line[n] != '\r')
        n++;
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    if (n == 0)
        return errbuf_set(err, errlen, -EINVAL, "%s: no token on its first line", path);
    if (n >= cap || n >= sizeof(line) - 1)
        return errbuf_set(err, errlen, -EINVAL, "%s: the token is longer than %zu bytes", path,
                          cap - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] <= ' ' || line[i] == 0x7f)
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: the token has a space or control character at byte %zu", path,
                              i + 1);
    if (n < CLI_TOKEN_MIN)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: a token of %zu characters is too easy to guess (at least %d; e.g. "
                          "head -c 24 /dev/urandom | base64 > FILE)",
                          path, n, CLI_TOKEN_MIN);
    memcpy(out, line, n);
    out[n] = '\0';
    return 0;
}
