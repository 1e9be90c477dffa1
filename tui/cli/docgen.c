/* rs_docgen DIR: writes DIR/man1/ringside.1, DIR/man1/ringside-CMD.1 for every command and
 * DIR/completion/ringside (bash), from the option and command tables. Run by the build. */
#include "tui/cli/cli_man.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* path written whole by fn(cmd, out), through a temporary file renamed over it. */
static int docgen_write(const char *path, int (*page)(unsigned, FILE *), unsigned cmd,
                        int (*script)(FILE *)) {
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "rs_docgen: %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    int rc = page ? page(cmd, f) : script(f);
    if (fclose(f) != 0 || rc != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "rs_docgen: cannot write %s\n", path);
        remove(tmp);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: rs_docgen DIR\n");
        return 2;
    }
    char path[4096];
    const char *sub[] = {"", "/man1", "/completion"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s%s", argv[1], sub[i]);
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "rs_docgen: %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    snprintf(path, sizeof(path), "%s/man1/ringside.1", argv[1]);
    int rc = docgen_write(path, cli_man_page, 0, NULL);
    size_t n;
    const struct cli_cmd_doc *cmds = cli_optab_cmds(&n);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/man1/ringside-%s.1", argv[1], cmds[i].name);
        rc |= docgen_write(path, cli_man_page, cmds[i].bit, NULL);
    }
    snprintf(path, sizeof(path), "%s/completion/ringside", argv[1]);
    rc |= docgen_write(path, NULL, 0, cli_complete_bash);
    return rc;
}
