/* libFuzzer target for the allocator configuration parser (PYTORCH_*_ALLOC_CONF syntax):
 * arbitrary bytes as one string, the result checked against the documented ranges, the message
 * and the untouched output on errors, and equal results for equivalent spellings. */
#include "backend/memory/mem_conf.h"
#include "tests/fuzz/fuzz_target.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ALLOC_CONF_MIB     (1024ull * 1024ull)
#define FUZZ_ALLOC_CONF_ERR     256
#define FUZZ_ALLOC_CONF_PATTERN 0xA5

static bool fuzz_alloc_conf_same(const struct mem_conf *a, const struct mem_conf *b) {
    return a->max_split_size_bytes == b->max_split_size_bytes &&
           a->gc_threshold == b->gc_threshold && a->memory_fraction == b->memory_fraction &&
           a->expandable_segments == b->expandable_segments && a->round_bytes == b->round_bytes;
}

/* A parsed configuration within the ranges mem_conf.h documents. */
static void fuzz_alloc_conf_check_ok(const struct mem_conf *c) {
    uint64_t split = c->max_split_size_bytes;
    FUZZ_CHECK(split == UINT64_MAX ||
               (split % FUZZ_ALLOC_CONF_MIB == 0 && split >= 20 * FUZZ_ALLOC_CONF_MIB));
    FUZZ_CHECK(c->gc_threshold == 0.0 || (c->gc_threshold > 0.0 && c->gc_threshold < 1.0));
    FUZZ_CHECK(c->memory_fraction == 0.0 ||
               (c->memory_fraction > 0.0 && c->memory_fraction <= 1.0));
    FUZZ_CHECK(c->round_bytes == 512);
}

/* One parse of s into a patterned struct: on error the struct is untouched and the message is
 * "alloc-conf: ...", NUL-terminated, on one line unless s itself spans lines. */
static int fuzz_alloc_conf_parse(const char *s, struct mem_conf *out) {
    struct mem_conf c, before;
    memset(&c, FUZZ_ALLOC_CONF_PATTERN, sizeof(c));
    memcpy(&before, &c, sizeof(c));
    char err[FUZZ_ALLOC_CONF_ERR];
    memset(err, 'x', sizeof(err));
    int rc = mem_conf_parse(s, &c, err, sizeof(err));
    if (rc != 0) {
        FUZZ_CHECK(rc == -EINVAL);
        FUZZ_CHECK(memcmp(&c, &before, sizeof(c)) == 0);
        FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
        FUZZ_CHECK(strncmp(err, "alloc-conf: ", 12) == 0 && err[12] != '\0');
        FUZZ_CHECK(strchr(err, '\n') == NULL || strchr(s, '\n') != NULL);
        return rc;
    }
    fuzz_alloc_conf_check_ok(&c);
    *out = c;
    return 0;
}

/* The last non-blank byte of s, or 0. */
static char fuzz_alloc_conf_last(const char *s) {
    size_t n = strlen(s);
    while (n > 0 && strchr(" \t\n\r", s[n - 1]))
        n--;
    return n ? s[n - 1] : '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the string, then room for the variants: blanks around it, a trailing comma */
    char *s = fuzz_cstring(data, size);
    char *v = malloc(size + 4);
    FUZZ_CHECK(v != NULL);
    size_t len = strlen(s);

    struct mem_conf c, c2;
    int rc = fuzz_alloc_conf_parse(s, &c);

    /* blanks around the whole string change nothing */
    v[0] = '\t';
    memcpy(v + 1, s, len);
    memcpy(v + 1 + len, " \r", 3);
    int rc2 = fuzz_alloc_conf_parse(v, &c2);
    FUZZ_CHECK(rc2 == rc);
    FUZZ_CHECK(rc != 0 || fuzz_alloc_conf_same(&c, &c2));

    /* one trailing comma is allowed after a non-empty list */
    char last = fuzz_alloc_conf_last(s);
    if (rc == 0 && last != '\0' && last != ',') {
        memcpy(v, s, len);
        memcpy(v + len, ",", 2);
        FUZZ_CHECK(fuzz_alloc_conf_parse(v, &c2) == 0 && fuzz_alloc_conf_same(&c, &c2));
    }

    /* a short or absent error buffer gives the same result (the output is cut, not overrun) */
    size_t cap = size ? 1 + data[0] % 8u : 1;
    char *err = malloc(cap);
    FUZZ_CHECK(err != NULL);
    FUZZ_CHECK(mem_conf_parse(s, &c2, err, cap) == rc);
    FUZZ_CHECK(rc == 0 || memchr(err, '\0', cap) != NULL);
    FUZZ_CHECK(mem_conf_parse(s, &c2, NULL, 0) == rc);
    free(err);
    free(v);
    free(s);
    return 0;
}

const char fuzz_target_name[] = "fuzz_alloc_conf";

/* Pieces of real PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF strings. */
const char *const fuzz_fragments[] = {
    "max_split_size_mb:128",
    "max_split_size_mb:20",
    "max_split_size_mb:19",
    "max_split_size_mb:18446744073709551615",
    "max_split_size_mb:99999999999999999999999",
    "garbage_collection_threshold:0.8",
    "garbage_collection_threshold:0.6",
    "garbage_collection_threshold:1",
    "garbage_collection_threshold:1e-300",
    "garbage_collection_threshold:nan",
    "garbage_collection_threshold:0x0.8p0",
    "per_process_memory_fraction:0.5",
    "per_process_memory_fraction:1",
    "per_process_memory_fraction:0",
    "expandable_segments:True",
    "expandable_segments:False",
    "expandable_segments:true",
    "roundup_power2_divisions:4",
    "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
    "roundup_power2_divisions:[>:0]",
    "roundup_power2_divisions:[",
    "pinned_use_host_register:True",
    "release_lock_on_cudamalloc:False",
    "backend:cudaMallocAsync",
    ",",
    ", ",
    ":",
    "[",
    "]",
    " \t",
    "\n",
    "1024",
    "0.5",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
