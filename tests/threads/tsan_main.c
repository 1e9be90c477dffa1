/* Runs every multi-threaded scenario without Criterion, for the ThreadSanitizer build. */
#include "tests/threads/thread_cases.h"

#include <stdio.h>

int main(void) {
    int passed = 0, failed = 0;
    for (const struct thread_case *c = thread_cases; c->name; c++) {
        char why[512] = "";
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
