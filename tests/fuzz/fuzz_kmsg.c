/* libFuzzer target for the kernel-log parser and classifier: arbitrary bytes as one /dev/kmsg
 * record and as lines (parsed, classified, grouped, written as JSON), with invariants checked. */
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_json.h"
#include "backend/kmsg/kmsg_lines.h"
#include "backend/kmsg/kmsg_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_KMSG_CHECK(cond)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            __builtin_trap();                                                                      \
    } while (0)

struct fuzz_kmsg_run {
    struct kmsg_classifier cls;
    uint32_t lineno;
    size_t small_cap; /* a second, short JSON buffer: the truncation paths */
};

/* A fixed-size string field: NUL-terminated inside its array, no control byte before that. */
static void fuzz_kmsg_check_str(const char *s, size_t cap) {
    const char *nul = memchr(s, '\0', cap);
    FUZZ_KMSG_CHECK(nul != NULL);
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)nul; p++)
        FUZZ_KMSG_CHECK(*p >= 0x20 && *p != 0x7f);
}

/* kmsg_json_members into a buffer of cap bytes: NUL-terminated, the length returned is the
 * string's and below cap. The buffer is heap-allocated at its exact size, so an overrun is
 * caught by ASan. */
static void fuzz_kmsg_check_json(const struct kmsg_event *e, size_t cap) {
    char *buf = malloc(cap);
    FUZZ_KMSG_CHECK(buf != NULL);
    memset(buf, 'x', cap);
    size_t n = kmsg_json_members(e, buf, cap);
    FUZZ_KMSG_CHECK(n < cap);
    FUZZ_KMSG_CHECK(memchr(buf, '\0', cap) != NULL);
    FUZZ_KMSG_CHECK(strlen(buf) == n);
    free(buf);
}

static void fuzz_kmsg_check_event(const struct kmsg_event *e, size_t small_cap) {
    fuzz_kmsg_check_str(e->message, sizeof(e->message));
    fuzz_kmsg_check_str(e->pci, sizeof(e->pci));
    fuzz_kmsg_check_str(e->ring, sizeof(e->ring));
    fuzz_kmsg_check_str(e->process, sizeof(e->process));
    fuzz_kmsg_check_str(e->thread, sizeof(e->thread));
    fuzz_kmsg_check_str(e->client, sizeof(e->client));
    FUZZ_KMSG_CHECK(e->category < KMSG_CAT_COUNT);
    FUZZ_KMSG_CHECK(e->vendor < KMSG_VENDOR_COUNT);
    fuzz_kmsg_check_json(e, 1024);
    fuzz_kmsg_check_json(e, small_cap);
}

/* An event the classifier returned for input up to line `lineno`. */
static void fuzz_kmsg_check_fed(const struct fuzz_kmsg_run *r, const struct kmsg_event *e) {
    fuzz_kmsg_check_event(e, r->small_cap);
    FUZZ_KMSG_CHECK(e->lines >= 1);
    FUZZ_KMSG_CHECK(e->line >= 1 && e->line <= r->lineno);
    FUZZ_KMSG_CHECK(e->source == KMSG_SRC_FILE);
}

/* The parsed message lies inside the line it came from. */
static void fuzz_kmsg_check_line(const struct kmsg_line *l, const char *buf, size_t n) {
    FUZZ_KMSG_CHECK(l->text >= buf && l->len <= n && l->text + l->len <= buf + n);
    FUZZ_KMSG_CHECK(l->prio >= -1 && l->prio <= 7);
    fuzz_kmsg_check_str(l->device, sizeof(l->device));
}

/* One line from the splitter: copied to a buffer of its exact size (an over-read past the
 * line is then caught by ASan), parsed as a record or else as text, classified on its own and
 * fed to the grouping classifier. */
static void fuzz_kmsg_on_line(void *ctx, const char *line, size_t n) {
    struct fuzz_kmsg_run *r = ctx;
    char *buf = malloc(n ? n : 1);
    FUZZ_KMSG_CHECK(buf != NULL);
    if (n)
        memcpy(buf, line, n);
    struct kmsg_line l;
    if (kmsg_parse_record(buf, n, &l) != 0)
        kmsg_parse_text(buf, n, &l);
    fuzz_kmsg_check_line(&l, buf, n);
    struct kmsg_event one;
    bool flagged = kmsg_classify_line(&l, &one);
    fuzz_kmsg_check_event(&one, r->small_cap);
    FUZZ_KMSG_CHECK(!flagged || one.category != KMSG_CAT_NONE);
    struct kmsg_event out[2];
    r->lineno++;
    int got = kmsg_classifier_feed(&r->cls, &l, r->lineno, out);
    FUZZ_KMSG_CHECK(got >= 0 && got <= 2);
    for (int i = 0; i < got; i++)
        fuzz_kmsg_check_fed(r, &out[i]);
    const struct kmsg_event *pending = kmsg_classifier_pending(&r->cls);
    if (pending)
        fuzz_kmsg_check_str(pending->message, sizeof(pending->message));
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    static const char empty[1] = "";
    if (!text)
        text = empty;

    /* the whole input as one /dev/kmsg record */
    struct kmsg_line rec;
    kmsg_parse_record(text, size, &rec);
    fuzz_kmsg_check_line(&rec, text, size);
    struct kmsg_event e;
    kmsg_classify_line(&rec, &e);
    fuzz_kmsg_check_event(&e, 64);

    /* the input as lines, fed in chunks whose size the first byte picks (line ends fall on
     * chunk boundaries too) */
    struct fuzz_kmsg_run r;
    kmsg_classifier_init(&r.cls, KMSG_SRC_FILE, true);
    r.lineno = 0;
    r.small_cap = 1 + (size ? data[0] % 160u : 17u);
    static struct kmsg_lines lines; /* 12 KiB: kept off the stack */
    kmsg_lines_init(&lines);
    size_t chunk = size ? 1 + (size_t)data[size - 1] * 61u : 1;
    for (size_t off = 0; off < size; off += chunk) {
        size_t k = size - off < chunk ? size - off : chunk;
        kmsg_lines_feed(&lines, text + off, k, fuzz_kmsg_on_line, &r);
    }
    kmsg_lines_finish(&lines, fuzz_kmsg_on_line, &r);
    FUZZ_KMSG_CHECK(lines.delivered == r.lineno);
    struct kmsg_event last;
    if (kmsg_classifier_flush(&r.cls, &last))
        fuzz_kmsg_check_fed(&r, &last);
    FUZZ_KMSG_CHECK(kmsg_classifier_pending(&r.cls) == NULL);
    return 0;
}
