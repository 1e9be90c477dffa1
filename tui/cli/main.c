/* ringside: a live dashboard for GPU training loops. */
#include "tui/cli/cli.h"

#include <locale.h>
#include <malloc.h>

int main(int argc, char **argv) {
    /* The heap's shape fixed here rather than left to glibc's guesses, which follow the
     * machine: at most 2 arenas (glibc allows 8 a core, and a thread that allocates may get
     * one of its own, whose freed memory no other thread reuses), and blocks of 128 KiB and
     * more always mapped apart and unmapped when freed (glibc otherwise raises that threshold
     * to the largest block freed, up to 32 MiB, after which such blocks stay in the heap). No
     * step of the loop allocates: the training does not notice. */
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    /* The terminal's character set, for the dashboard's UTF-8 drawing; set here, before any
     * thread exists: setlocale races with the per-thread locales json-c's parser makes. */
    setlocale(LC_CTYPE, "");
    return cli_main(argc, argv);
}
