/* Parser for PyTorch's PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF "key:value,..." strings. */
#include "backend/memory/mem_conf.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MEM_CONF_MIB           (1024ull * 1024ull)
#define MEM_CONF_MIN_SPLIT_MIB 20u /* kLargeBuffer / 1 MiB: PyTorch rejects anything smaller */

/* One "key:value" slice of the input; neither string is NUL-terminated. */
struct mem_conf_kv {
    const char *key, *val;
    size_t key_len, val_len;
};

struct mem_conf_key {
    const char *name;
    /* Validate kv->val and store it into c; 0 or -EINVAL with err set. */
    int (*parse)(const struct mem_conf_kv *kv, struct mem_conf *c, char *err, size_t errlen);
};

void mem_conf_default(struct mem_conf *c) {
    c->max_split_size_bytes = UINT64_MAX;
    c->gc_threshold = 0.0;
    c->memory_fraction = 0.0;
    c->expandable_segments = false;
    c->round_bytes = 512;
}

static int mem_conf_bad(const struct mem_conf_kv *kv, const char *reason, char *err,
                        size_t errlen) {
    return errbuf_set(err, errlen, -EINVAL, "alloc-conf: %.*s: '%.*s' %s", (int)kv->key_len,
                      kv->key, (int)kv->val_len, kv->val, reason);
}

/* Decimal digits only (no sign, no spaces), saturating at UINT64_MAX; false if not a number. */
static bool mem_conf_uint(const char *s, size_t n, uint64_t *out) {
    uint64_t v = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    *out = v;
    return true;
}

static bool mem_conf_pow2(uint64_t v) {
    return v != 0 && (v & (v - 1)) == 0;
}

static int mem_conf_max_split(const struct mem_conf_kv *kv, struct mem_conf *c, char *err,
                              size_t errlen) {
    uint64_t mib;
    if (!mem_conf_uint(kv->val, kv->val_len, &mib) || mib == 0)
        return mem_conf_bad(kv, "is not a positive integer", err, errlen);
    if (mib < MEM_CONF_MIN_SPLIT_MIB)
        return mem_conf_bad(kv, "is too small (must be >= 20)", err, errlen);
    /* PyTorch clamps rather than rejects huge values. */
    if (mib > UINT64_MAX / MEM_CONF_MIB)
        mib = UINT64_MAX / MEM_CONF_MIB;
    c->max_split_size_bytes = mib * MEM_CONF_MIB;
    return 0;
}

/* A decimal number into *v: 0, or -EINVAL with err set. */
static int mem_conf_num(const struct mem_conf_kv *kv, double *v, char *err, size_t errlen) {
    char buf[64];
    char *end;
    if (kv->val_len == 0 || kv->val_len >= sizeof(buf))
        return mem_conf_bad(kv, "is not a number", err, errlen);
    memcpy(buf, kv->val, kv->val_len);
    buf[kv->val_len] = '\0';
    errno = 0;
    *v = strtod(buf, &end);
    if (end != buf + kv->val_len || errno != 0 || !isfinite(*v))
        return mem_conf_bad(kv, "is not a number", err, errlen);
    return 0;
}

static int mem_conf_gc(const struct mem_conf_kv *kv, struct mem_conf *c, char *err, size_t errlen) {
    double v = 0.0;
    if (mem_conf_num(kv, &v, err, errlen) != 0)
        return -EINVAL;
    if (!(v > 0.0 && v < 1.0))
        return mem_conf_bad(kv, "is out of range (must be between 0 and 1, exclusive)", err,
                            errlen);
    c->gc_threshold = v;
    return 0;
}

static int mem_conf_fraction(const struct mem_conf_kv *kv, struct mem_conf *c, char *err,
                             size_t errlen) {
    double v = 0.0;
    if (mem_conf_num(kv, &v, err, errlen) != 0)
        return -EINVAL;
    if (!(v > 0.0 && v <= 1.0))
        return mem_conf_bad(kv, "is out of range (must be above 0, at most 1)", err, errlen);
    c->memory_fraction = v;
    return 0;
}

/* PyTorch compares against "True"/"False" exactly. */
static int mem_conf_bool(const struct mem_conf_kv *kv, bool *out, char *err, size_t errlen) {
    if (kv->val_len == 4 && memcmp(kv->val, "True", 4) == 0)
        *out = true;
    else if (kv->val_len == 5 && memcmp(kv->val, "False", 5) == 0)
        *out = false;
    else
        return mem_conf_bad(kv, "is not True or False", err, errlen);
    return 0;
}

static int mem_conf_expandable(const struct mem_conf_kv *kv, struct mem_conf *c, char *err,
                               size_t errlen) {
    return mem_conf_bool(kv, &c->expandable_segments, err, errlen);
}

/* Accepted for compatibility; the value is validated and dropped. */
static int mem_conf_ignored_bool(const struct mem_conf_kv *kv, struct mem_conf *c, char *err,
                                 size_t errlen) {
    bool unused;
    return mem_conf_bool(kv, &unused, err, errlen);
}

static size_t mem_conf_trim(const char **s, size_t n) {
    while (n > 0 && (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')) {
        (*s)++;
        n--;
    }
    while (n > 0 && strchr(" \t\n\r", (*s)[n - 1]) != NULL)
        n--;
    return n;
}

/* One "[interval_mb:divisions ...]" entry: interval a power of two or '>', divisions 0 or 2^k. */
static bool mem_conf_round_entry(const char *s, size_t n) {
    const char *colon = memchr(s, ':', n);
    if (!colon)
        return false;
    const char *a = s, *b = colon + 1;
    size_t an = mem_conf_trim(&a, (size_t)(colon - s));
    size_t bn = mem_conf_trim(&b, n - (size_t)(colon - s) - 1);
    uint64_t iv, div;
    bool iv_ok = (an == 1 && *a == '>') || (mem_conf_uint(a, an, &iv) && mem_conf_pow2(iv));
    return iv_ok && mem_conf_uint(b, bn, &div) && (div == 0 || mem_conf_pow2(div));
}

static bool mem_conf_round_list(const char *s, size_t n) {
    if (n < 2 || s[0] != '[' || s[n - 1] != ']')
        return false;
    const char *p = s + 1, *end = s + n - 1;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if (!mem_conf_round_entry(p, (size_t)(stop - p)))
            return false;
        p = comma ? comma + 1 : end;
    }
    return true;
}

static int mem_conf_roundup(const struct mem_conf_kv *kv, struct mem_conf *c, char *err,
                            size_t errlen) {
    uint64_t v;
    if (mem_conf_uint(kv->val, kv->val_len, &v) && mem_conf_pow2(v))
        return 0;
    if (mem_conf_round_list(kv->val, kv->val_len))
        return 0;
    return mem_conf_bad(kv, "is not a power of two or a [interval_mb:divisions,...] list", err,
                        errlen);
}

static const struct mem_conf_key mem_conf_keys[] = {
    {"max_split_size_mb", mem_conf_max_split},
    {"garbage_collection_threshold", mem_conf_gc},
    {"per_process_memory_fraction", mem_conf_fraction},
    {"expandable_segments", mem_conf_expandable},
    {"roundup_power2_divisions", mem_conf_roundup},
    {"pinned_use_host_register", mem_conf_ignored_bool},
    {"release_lock_on_cudamalloc", mem_conf_ignored_bool},
};

static int mem_conf_entry(const char *s, size_t n, struct mem_conf *c, char *err, size_t errlen) {
    const char *colon = memchr(s, ':', n);
    if (!colon)
        return errbuf_set(err, errlen, -EINVAL,
                          "alloc-conf: '%.*s' has no ':' (expected key:value)", (int)n, s);
    struct mem_conf_kv kv = {.key = s, .val = colon + 1};
    kv.key_len = mem_conf_trim(&kv.key, (size_t)(colon - s));
    kv.val_len = mem_conf_trim(&kv.val, n - (size_t)(colon - s) - 1);
    if (kv.key_len == 0)
        return errbuf_set(err, errlen, -EINVAL, "alloc-conf: empty key in '%.*s'", (int)n, s);
    for (size_t i = 0; i < sizeof(mem_conf_keys) / sizeof(mem_conf_keys[0]); i++) {
        const char *name = mem_conf_keys[i].name;
        if (strlen(name) == kv.key_len && memcmp(name, kv.key, kv.key_len) == 0)
            return mem_conf_keys[i].parse(&kv, c, err, errlen);
    }
    return errbuf_set(err, errlen, -EINVAL,
                      "alloc-conf: unknown key '%.*s' (known: max_split_size_mb, "
                      "garbage_collection_threshold, per_process_memory_fraction, "
                      "expandable_segments, "
                      "roundup_power2_divisions, pinned_use_host_register, "
                      "release_lock_on_cudamalloc)",
                      (int)kv.key_len, kv.key);
}

/* End of the entry starting at p: the next ',' outside [...] brackets, or the string end. */
static const char *mem_conf_entry_end(const char *p) {
    int depth = 0;
    for (; *p; p++) {
        if (*p == '[')
            depth++;
        else if (*p == ']' && depth > 0)
            depth--;
        else if (*p == ',' && depth == 0)
            break;
    }
    return p;
}

int mem_conf_parse(const char *s, struct mem_conf *c, char *err, size_t errlen) {
    struct mem_conf tmp;
    mem_conf_default(&tmp);
    const char *p = s ? s : "";
    while (*p) {
        const char *end = mem_conf_entry_end(p), *e = p;
        size_t n = mem_conf_trim(&e, (size_t)(end - p));
        /* An empty last entry is a blank string or one trailing comma, both allowed as in
         * PyTorch's lexer; any other empty entry (",a:1", "a:1,,b:2") is an error. */
        if (n == 0 && *end == '\0')
            break;
        if (n == 0)
            return errbuf_set(err, errlen, -EINVAL, "alloc-conf: empty entry in '%s'", s);
        int rc = mem_conf_entry(e, n, &tmp, err, errlen);
        if (rc < 0)
            return rc;
        p = *end ? end + 1 : end;
    }
    *c = tmp;
    return 0;
}
