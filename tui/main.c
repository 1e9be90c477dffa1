/* ringside: a live dashboard for GPU training loops. */
#include "tui/cli.h"

int main(int argc, char **argv) {
    return cli_main(argc, argv);
}
