/* ringside: a live dashboard for GPU training loops. */
#include "tui/cli/cli.h"

#include <locale.h>

int main(int argc, char **argv) {
    /* The terminal's character set, for the dashboard's UTF-8 drawing; set here, before any
     * thread exists: setlocale races with the per-thread locales json-c's parser makes. */
    setlocale(LC_CTYPE, "");
    return cli_main(argc, argv);
}
