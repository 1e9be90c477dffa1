/* Parsing of the telemetry flags into a tele_conf, with one-line errors. */
#include "tui/cli/cli_tele.h"

#include "backend/core/errbuf.h"
#include "tui/cli/cli_opts.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int cli_tele_root(const char *flag, const char *v, char *dst, size_t cap, char *err,
                         size_t errlen) {
    struct stat st;
    if (stat(v, &st) != 0)
        return errbuf_set(err, errlen, -EINVAL, "%s: %s: %s", flag, v, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return errbuf_set(err, errlen, -EINVAL, "%s: %s is not a directory", flag, v);
    return cli_copy(flag, dst, cap, v, err, errlen) ? -EINVAL : 0;
}

int cli_tele_opt(const char *flag, const char *v, struct tele_conf *c, char *err, size_t errlen) {
    struct tele_roots *r = &c->roots;
    if (strcmp(flag, "--telemetry") == 0)
        return cli_copy(flag, c->only, sizeof(c->only), v, err, errlen) ? -EINVAL : 0;
    if (strcmp(flag, "--telemetry-interval") == 0) {
        long ms = 0;
        if (cli_parse_long(flag, v, 50, 3600000, &ms, err, errlen) != 0)
            return -EINVAL;
        c->interval_ns = (uint64_t)ms * 1000000ull;
        return 0;
    }
    if (strcmp(flag, "--sysfs-root") == 0)
        return cli_tele_root(flag, v, r->sys, sizeof(r->sys), err, errlen);
    if (strcmp(flag, "--proc-root") == 0)
        return cli_tele_root(flag, v, r->proc, sizeof(r->proc), err, errlen);
    if (strcmp(flag, "--debugfs-root") == 0)
        return cli_tele_root(flag, v, r->debugfs, sizeof(r->debugfs), err, errlen);
    if (strcmp(flag, "--dev-root") == 0)
        return cli_tele_root(flag, v, r->dev, sizeof(r->dev), err, errlen);
    if (strcmp(flag, "--nvml-lib") == 0)
        return cli_copy(flag, r->nvml_lib, sizeof(r->nvml_lib), v, err, errlen) ? -EINVAL : 0;
    return -ENOENT;
}
