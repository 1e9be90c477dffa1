/* Runs every multi-threaded scenario without Criterion, for the ThreadSanitizer build; with
 * arguments, only the scenarios whose names contain one of them. */
#include "tests/threads/thread_cases.h"

#include <stdio.h>
#include <string.h>

static int picked(const char *name, int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return 1;
    return argc < 2;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    for (const struct thread_case *c = thread_cases; c->name; c++) {
        char why[512] = "";
        if (!picked(c->name, argc, argv))
            continue;
        if (c->run(why, sizeof(why)) == 0) {
            printf("PASS %s\n", c->name);
            passed++;
        } else {
            printf("FAIL %s: %s\n", c->name, why);
            failed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
