/* What a fuzz target defines: the libFuzzer entry point, its name, and fragments of real input
 * that the replay driver (fuzz_main.c, for builds without libFuzzer) mixes into the inputs it
 * generates. */
#ifndef RINGSIDE_TESTS_FUZZ_FUZZ_TARGET_H
#define RINGSIDE_TESTS_FUZZ_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Run the code under test on data[0..size); crash (trap) on a broken invariant; return 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern const char fuzz_target_name[];      /* "fuzz_kmsg" */
extern const char *const fuzz_fragments[]; /* pieces of real input, NUL-terminated */
extern const size_t fuzz_fragments_count;

/* Trap unless cond holds: a broken invariant is a finding like a crash. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            __builtin_trap();                                                                      \
    } while (0)

/* data[0..size) as a C string (malloc'd; an embedded NUL cuts it where a parser of C strings
 * would be cut): for the targets whose code under test reads C strings. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
