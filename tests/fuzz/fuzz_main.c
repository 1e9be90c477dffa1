/* A main() for the fuzz targets where there is no libFuzzer (gcc builds, ctest): every file
 * named on the command line (directories: every regular file inside, recursively), then a
 * fixed series of pseudo-random inputs mixing random bytes with the target's fragments of real
 * input (fuzz_fragments). */
#include "tests/fuzz/fuzz_target.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FUZZ_MAIN_RANDOM_INPUTS 2000
#define FUZZ_MAIN_LONG_RUN      (100u * 1024u) /* a run of 'A's longer than any line buffer */
#define FUZZ_MAIN_MAX_INPUT     (FUZZ_MAIN_LONG_RUN * 2 + 4096)

static uint64_t fuzz_main_state = 0x9e3779b97f4a7c15ull;

/* xorshift64 */
static uint64_t fuzz_main_rand(void) {
    uint64_t x = fuzz_main_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return fuzz_main_state = x;
}

/* Run the target on a copy of the bytes at their exact size, so an over-read is caught. */
static void fuzz_main_one(const char *bytes, size_t n, unsigned long *count) {
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) {
        fprintf(stderr, "fuzz_main: out of memory\n");
        exit(1);
    }
    if (n)
        memcpy(copy, bytes, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    (*count)++;
}

static int fuzz_main_file(const char *path, unsigned long *count) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int rc = buf && !ferror(f) ? 0 : -1;
    fclose(f);
    if (rc == 0)
        fuzz_main_one(buf, n, count);
    else
        fprintf(stderr, "fuzz_main: %s: cannot read\n", path);
    free(buf);
    return rc;
}

/* A file, or every regular file under a directory (in name order). */
static int fuzz_main_path(const char *path, unsigned long *count) {
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return S_ISREG(st.st_mode) ? fuzz_main_file(path, count) : 0;
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        perror(path);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            size_t len = strlen(path) + strlen(name) + 2;
            char *sub = malloc(len);
            if (!sub || (snprintf(sub, len, "%s/%s", path, name), fuzz_main_path(sub, count)))
                rc = -1;
            free(sub);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static void fuzz_main_append(char *buf, size_t *len, const char *s, size_t n) {
    if (n > FUZZ_MAIN_MAX_INPUT - *len)
        n = FUZZ_MAIN_MAX_INPUT - *len;
    memcpy(buf + *len, s, n);
    *len += n;
}

/* One pseudo-random input: a few pieces, each random bytes, random digits, the long run, or a
 * whole or cut fragment of a real line. */
static size_t fuzz_main_make(char *buf) {
    size_t len = 0;
    unsigned pieces = 1 + (unsigned)(fuzz_main_rand() % 24);
    size_t nfrag = fuzz_fragments_count;
    for (unsigned k = 0; k < pieces; k++) {
        uint64_t r = fuzz_main_rand();
        unsigned kind = (unsigned)(r % 100);
        char tmp[64];
        if (kind < 25) { /* random bytes */
            size_t n = (size_t)(r >> 8) % sizeof(tmp);
            for (size_t i = 0; i < n; i++)
                tmp[i] = (char)(fuzz_main_rand() & 0xff);
            fuzz_main_append(buf, &len, tmp, n);
        } else if (kind < 35) { /* digits: numbers of every width */
            size_t n = 1 + (size_t)(r >> 8) % 24;
            for (size_t i = 0; i < n; i++)
                tmp[i] = (char)('0' + fuzz_main_rand() % 10);
            fuzz_main_append(buf, &len, tmp, n);
        } else if (kind < 37) { /* the long run */
            size_t n = FUZZ_MAIN_LONG_RUN;
            if (n > FUZZ_MAIN_MAX_INPUT - len)
                n = FUZZ_MAIN_MAX_INPUT - len;
            memset(buf + len, 'A', n);
            len += n;
        } else { /* a fragment, whole or with its head or tail cut */
            const char *f = fuzz_fragments[(r >> 8) % nfrag];
            size_t n = strlen(f), from = 0;
            if (kind >= 85 && n > 1) {
                size_t cut = 1 + (size_t)(fuzz_main_rand() % (n - 1));
                if (kind < 93)
                    n = cut;
                else
                    from = cut;
            }
            fuzz_main_append(buf, &len, f + from, n - from);
        }
    }
    return len;
}

int main(int argc, char **argv) {
    unsigned long count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++)
        if (fuzz_main_path(argv[i], &count) != 0)
            rc = 1;
    char *buf = malloc(FUZZ_MAIN_MAX_INPUT);
    if (!buf) {
        fprintf(stderr, "fuzz_main: out of memory\n");
        return 1;
    }
    for (int i = 0; i < FUZZ_MAIN_RANDOM_INPUTS; i++) {
        size_t n = fuzz_main_make(buf);
        fuzz_main_one(buf, n, &count);
    }
    free(buf);
    printf("%s: %lu inputs, 0 crashes\n", fuzz_target_name, count);
    return rc;
}
