/* The classifier's template matcher and field parsers, and the one-pass keyword scan. */
#define _GNU_SOURCE /* memmem */
#include "backend/kmsg/kmsg_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const kmsg_keyword_text[KMSG_KW_COUNT] = {
#define X(id, text) text,
    KMSG_KEYWORDS(X)
#undef X
};

/* Per first byte: the keywords that start with it. Built once (the table is tiny). */
static uint64_t kmsg_keyword_first[256];
static uint8_t kmsg_keyword_len[KMSG_KW_COUNT];
static uint8_t kmsg_keyword_bigram[65536 / 8]; /* bit: some keyword starts with these 2 bytes */

static void kmsg_keywords_init(void) {
    for (unsigned k = 0; k < KMSG_KW_COUNT; k++) {
        const unsigned char *t = (const unsigned char *)kmsg_keyword_text[k];
        unsigned b = (unsigned)t[0] << 8 | t[1];
        kmsg_keyword_first[t[0]] |= 1ull << k;
        kmsg_keyword_len[k] = (uint8_t)strlen(kmsg_keyword_text[k]);
        kmsg_keyword_bigram[b >> 3] |= (uint8_t)(1u << (b & 7));
    }
}

uint64_t kmsg_keywords_scan(const char *text, size_t len) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, kmsg_keywords_init);
    uint64_t found = 0;
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i + 2 < len; i++) { /* every keyword is 3 bytes or longer */
        unsigned b = (unsigned)u[i] << 8 | u[i + 1];
        if (!(kmsg_keyword_bigram[b >> 3] & (1u << (b & 7))))
            continue; /* most positions: one bit test */
        uint64_t cand = kmsg_keyword_first[u[i]] & ~found;
        while (cand) {
            unsigned k = (unsigned)__builtin_ctzll(cand);
            cand &= cand - 1;
            size_t n = kmsg_keyword_len[k];
            if (n <= len - i && u[i + 1] == (unsigned char)kmsg_keyword_text[k][1] &&
                memcmp(text + i, kmsg_keyword_text[k], n) == 0)
                found |= 1ull << k;
        }
    }
    return found;
}

void kmsg_copy_clean(char *out, size_t cap, const char *s, size_t n) {
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n && o + 1 < cap;) {
        unsigned c = u[i];
        size_t k = c < 0x80             ? 1
                   : (c & 0xe0) == 0xc0 ? 2
                   : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4
                                        : 0;
        bool ok = k > 0 && i + k <= n && !(k == 2 && c < 0xc2) && !(k == 4 && c > 0xf4);
        for (size_t j = 1; ok && j < k; j++)
            ok = (u[i + j] & 0xc0) == 0x80;
        if (ok && k == 3)
            ok = !(c == 0xe0 && u[i + 1] < 0xa0) && !(c == 0xed && u[i + 1] >= 0xa0);
        if (ok && k == 4)
            ok = !(c == 0xf0 && u[i + 1] < 0x90) && !(c == 0xf4 && u[i + 1] >= 0x90);
        if (!ok || (k == 1 && (c < 0x20 || c == 0x7f))) {
            out[o++] = c == '\t' ? ' ' : '?';
            i++;
            continue;
        }
        if (o + k >= cap)
            break; /* never half a character */
        memcpy(out + o, s + i, k);
        o += k;
        i += k;
    }
    out[o] = '\0';
}

static bool kmsg_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char kmsg_lower(char c) {
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* "dddd:bb:dd[.f]" at s (s[0..n)); the normalised form into out[16]. */
static bool kmsg_pci_at(const char *s, size_t n, char *out) {
    static const char shape[] = "hhhh:hh:hh";
    if (n < 10)
        return false;
    for (size_t i = 0; i < 10; i++)
        if (shape[i] == 'h' ? !kmsg_hex(s[i]) : s[i] != ':')
            return false;
    if (n > 10 && (kmsg_hex(s[10]) || s[10] == ':'))
        return false;
    char fn = n > 11 && s[10] == '.' && s[11] >= '0' && s[11] <= '7' ? s[11] : '0';
    for (size_t i = 0; i < 10; i++)
        out[i] = kmsg_lower(s[i]);
    out[10] = '.';
    out[11] = fn;
    out[12] = '\0';
    return true;
}

bool kmsg_find_pci(const char *text, size_t len, char *out) {
    for (const char *p = text; (p = memchr(p, ':', len - (size_t)(p - text))) != NULL; p++) {
        if (p - text >= 4 && (p - text == 4 || !kmsg_hex(p[-5])) &&
            kmsg_pci_at(p - 4, len - (size_t)(p - 4 - text), out))
            return true;
    }
    return false;
}

/* The fields a template can capture. */
enum kmsg_cap {
    KMSG_CAP_SKIP,
    KMSG_CAP_RING,
    KMSG_CAP_SEQ_SIGNALED,
    KMSG_CAP_SEQ_EMITTED,
    KMSG_CAP_PID,
    KMSG_CAP_PROCESS,
    KMSG_CAP_TID,
    KMSG_CAP_THREAD,
    KMSG_CAP_PASID,
    KMSG_CAP_VMID,
    KMSG_CAP_ADDR,
    KMSG_CAP_PAGE,
    KMSG_CAP_CLIENT,
    KMSG_CAP_ENGINE,
    KMSG_CAP_XID,
    KMSG_CAP_PCI,
    KMSG_CAP_NODE,
    KMSG_CAP_RET,
};

static const struct {
    const char *name;
    enum kmsg_cap cap;
} kmsg_caps[] = {
    {"*", KMSG_CAP_SKIP},
    {"ring", KMSG_CAP_RING},
    {"seq_signaled", KMSG_CAP_SEQ_SIGNALED},
    {"seq_emitted", KMSG_CAP_SEQ_EMITTED},
    {"pid", KMSG_CAP_PID},
    {"process", KMSG_CAP_PROCESS},
    {"tid", KMSG_CAP_TID},
    {"thread", KMSG_CAP_THREAD},
    {"pasid", KMSG_CAP_PASID},
    {"vmid", KMSG_CAP_VMID},
    {"addr", KMSG_CAP_ADDR},
    {"page", KMSG_CAP_PAGE},
    {"client", KMSG_CAP_CLIENT},
    {"engine", KMSG_CAP_ENGINE},
    {"xid", KMSG_CAP_XID},
    {"pci", KMSG_CAP_PCI},
    {"node", KMSG_CAP_NODE},
    {"ret", KMSG_CAP_RET},
};

/* A whole number in s[0..n) (surrounding blanks allowed; base 0: 0x.. is hex); false when
 * there is none or something else follows. Underscores inside hex digits are dropped
 * (NVIDIA prints 0x7f0b_5c000000). */
static bool kmsg_num(const char *s, size_t n, bool hex, long long *out) {
    char buf[40];
    size_t o = 0;
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < n && o < sizeof(buf) - 1; i++)
        if (s[i] != '_')
            buf[o++] = s[i];
    if (o == 0 || o >= sizeof(buf) - 1)
        return false;
    buf[o] = '\0';
    char *end;
    if (buf[0] == '-' && !hex) { /* a return code */
        long long v = strtoll(buf, &end, 10);
        *out = v;
        return *end == '\0';
    }
    if (buf[0] == '-' || buf[0] == '+')
        return false;
    *out = (long long)strtoull(buf, &end, hex ? 16 : 0);
    return *end == '\0';
}

/* A name: blanks trimmed; "<unknown>" and "" are no value. */
static bool kmsg_name(const char *s, size_t n, char *out, size_t cap) {
    while (n && *s == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    if (n == 0 || (n == 9 && memcmp(s, "<unknown>", 9) == 0))
        return false;
    kmsg_copy_clean(out, cap, s, n);
    return true;
}

/* The first word of s[0..n): "CPC (0x5)" -> "CPC". */
static size_t kmsg_word(const char *s, size_t n) {
    size_t k = 0;
    while (k < n && s[k] == ' ')
        k++;
    while (k < n && s[k] != ' ')
        k++;
    return k;
}

static void kmsg_set_num(struct kmsg_event *e, enum kmsg_cap cap, long long v, long *ret) {
    switch (cap) {
    case KMSG_CAP_SEQ_SIGNALED:
        e->seq_signaled = (uint64_t)v;
        e->has |= KMSG_HAS(SEQ);
        break;
    case KMSG_CAP_SEQ_EMITTED:
        e->seq_emitted = (uint64_t)v;
        e->has |= KMSG_HAS(SEQ);
        break;
    case KMSG_CAP_PID:
    case KMSG_CAP_TID:
        if (v > 0 && v <= 0x7fffffff) { /* 0 is the kernel's "unknown" */
            *(cap == KMSG_CAP_PID ? &e->pid : &e->tid) = (int32_t)v;
            e->has |= cap == KMSG_CAP_PID ? KMSG_HAS(PID) : KMSG_HAS(TID);
        }
        break;
    case KMSG_CAP_PASID:
        e->pasid = (uint32_t)v;
        e->has |= KMSG_HAS(PASID);
        break;
    case KMSG_CAP_VMID:
        e->vmid = (uint16_t)v;
        e->has |= KMSG_HAS(VMID);
        break;
    case KMSG_CAP_ADDR:
    case KMSG_CAP_PAGE:
        e->addr = cap == KMSG_CAP_PAGE ? (uint64_t)v << 12 : (uint64_t)v;
        e->has |= KMSG_HAS(ADDR);
        break;
    case KMSG_CAP_XID:
        e->xid = (uint16_t)v;
        e->has |= KMSG_HAS(XID);
        break;
    case KMSG_CAP_NODE:
        e->node = (uint32_t)v;
        e->has |= KMSG_HAS(NODE);
        break;
    case KMSG_CAP_RET:
        *ret = (long)v;
        break;
    default:
        break;
    }
}

/* Store capture cap = s[0..n) into e (fields already set by an earlier line stay). */
static void kmsg_capture(struct kmsg_event *e, enum kmsg_cap cap, const char *s, size_t n,
                         long *ret) {
    long long v = 0;
    switch (cap) {
    case KMSG_CAP_SKIP:
        return;
    case KMSG_CAP_RING:
        if (!(e->has & KMSG_HAS(RING)) && kmsg_name(s, kmsg_word(s, n), e->ring, sizeof(e->ring)))
            e->has |= KMSG_HAS(RING);
        return;
    case KMSG_CAP_PROCESS:
    case KMSG_CAP_THREAD: {
        uint32_t bit = cap == KMSG_CAP_PROCESS ? KMSG_HAS(PROCESS) : KMSG_HAS(THREAD);
        char *dst = cap == KMSG_CAP_PROCESS ? e->process : e->thread;
        if (!(e->has & bit) && kmsg_name(s, n, dst, KMSG_NAME_BYTES))
            e->has |= bit;
        return;
    }
    case KMSG_CAP_CLIENT: /* "CPC (0x5)": the name */
    case KMSG_CAP_ENGINE: /* "GRAPHICS GPCCLIENT_T1_0": all of it */
        if (!(e->has & KMSG_HAS(CLIENT)) &&
            kmsg_name(s, cap == KMSG_CAP_CLIENT ? kmsg_word(s, n) : n, e->client,
                      sizeof(e->client)))
            e->has |= KMSG_HAS(CLIENT);
        return;
    case KMSG_CAP_PCI:
        if (n > 4 && memcmp(s, "PCI:", 4) == 0)
            s += 4, n -= 4;
        if (!(e->has & KMSG_HAS(PCI)) && kmsg_pci_at(s, n, e->pci))
            e->has |= KMSG_HAS(PCI);
        return;
    default: /* a field an earlier line of the group set stays */
        if (kmsg_num(s, n, cap == KMSG_CAP_ADDR, &v) &&
            !((cap == KMSG_CAP_ADDR || cap == KMSG_CAP_PAGE) && (e->has & KMSG_HAS(ADDR))))
            kmsg_set_num(e, cap, v, ret);
        return;
    }
}

/* The capture named by the "%{name}" at t (its length in *len). */
static enum kmsg_cap kmsg_cap_at(const char *t, size_t *len) {
    const char *close = strchr(t, '}');
    size_t n = close ? (size_t)(close - t - 2) : 0;
    *len = close ? (size_t)(close - t + 1) : strlen(t);
    for (size_t i = 0; i < sizeof(kmsg_caps) / sizeof(kmsg_caps[0]); i++)
        if (strlen(kmsg_caps[i].name) == n && memcmp(kmsg_caps[i].name, t + 2, n) == 0)
            return kmsg_caps[i].cap;
    return KMSG_CAP_SKIP;
}

/* Length of the literal at t (up to the next "%{" or the end). */
static size_t kmsg_lit_len(const char *t) {
    const char *c = strstr(t, "%{");
    return c ? (size_t)(c - t) : strlen(t);
}

/* Match the template rest t against s[0..n) (s starts right after the first literal). */
static bool kmsg_match_rest(const char *t, const char *s, size_t n, struct kmsg_event *e,
                            long *ret) {
    const char *end = s + n;
    while (*t) {
        size_t lit = kmsg_lit_len(t);
        if (lit) { /* a literal must follow here exactly */
            if ((size_t)(end - s) < lit || memcmp(s, t, lit) != 0)
                return false;
            s += lit;
            t += lit;
            continue;
        }
        size_t clen;
        enum kmsg_cap cap = kmsg_cap_at(t, &clen);
        t += clen;
        size_t next = kmsg_lit_len(t);
        const char *stop = end;
        if (next) {
            stop = memmem(s, (size_t)(end - s), t, next);
            if (!stop)
                return false;
        }
        kmsg_capture(e, cap, s, (size_t)(stop - s), ret);
        s = stop;
    }
    return true;
}

bool kmsg_match(const char *tmpl, const char *text, size_t len, struct kmsg_event *e, long *ret) {
    size_t lit = kmsg_lit_len(tmpl);
    const char *p = text, *end = text + len;
    while (lit && (size_t)(end - p) >= lit && (p = memmem(p, (size_t)(end - p), tmpl, lit))) {
        struct kmsg_event tmp = *e;
        if (kmsg_match_rest(tmpl + lit, p + lit, (size_t)(end - p - lit), &tmp, ret)) {
            *e = tmp;
            return true;
        }
        p++;
    }
    return false;
}
