/* A main() for the fuzz targets where there is no libFuzzer (gcc builds, ctest): every file
 * named on the command line (directories: every regular file inside, recursively), then a
 * fixed series of pseudo-random inputs mixing random bytes with fragments of real log lines. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAIN_RANDOM_INPUTS 2000
#define FUZZ_MAIN_LONG_RUN      (100u * 1024u) /* a run of 'A's longer than any line buffer */
#define FUZZ_MAIN_MAX_INPUT     (FUZZ_MAIN_LONG_RUN * 2 + 4096)

static const char *const fuzz_main_fragments[] = {
    "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=",
    "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32779",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=",
    "Memory access fault by GPU node-1 (Agent handle: 0x",
    "6,1234,5678,-;",
    "\x0a",
    "%{",
    "\xc3\x28\xe2\x82\xf0\x90\x28",
    ", emitted seq=",
    "Process information: process python3 pid 4242 thread python3 pid 4243",
    "  in page starting at address 0x00007f1234567000 from client 10",
    "GCVM_L2_PROTECTION_FAULT_STATUS:0x00841051",
    "Faulty UTCL2 client ID: TCP (0x8)",
    "[  312.522668] ",
    "<3>",
    "kern  :err   : ",
    "Nov 24 14:52:39 host kernel: ",
    "2025-01-21T04:41:44,283302+00:00 ",
    "[Sun Feb 23 16:24:18 2025] ",
    "\n DEVICE=+pci:0000:03:00.0\n",
    "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ",
    "sq_intr: error, se 0, data 0x0, sh 0, priv 1, wave_id 0, simd_id 0, wgp_id 0",
    "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
    "18446744073709551615",
    "0x",
    "\t",
    "\r\n",
};

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
    size_t nfrag = sizeof(fuzz_main_fragments) / sizeof(fuzz_main_fragments[0]);
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
            const char *f = fuzz_main_fragments[(r >> 8) % nfrag];
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
    printf("fuzz_kmsg: %lu inputs, 0 crashes\n", count);
    return rc;
}
