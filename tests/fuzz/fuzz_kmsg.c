/* libFuzzer target for the kernel-log parser and classifier: arbitrary bytes as one /dev/kmsg
 * record and as lines (parsed, classified, grouped, written as JSON), with invariants checked. */
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_json.h"
#include "backend/kmsg/kmsg_lines.h"
#include "backend/kmsg/kmsg_parse.h"
#include "tests/fuzz/fuzz_target.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct fuzz_kmsg_run {
    struct kmsg_classifier cls;
    uint32_t lineno;
    size_t small_cap; /* a second, short JSON buffer: the truncation paths */
};

/* A fixed-size string field: NUL-terminated inside its array, no control byte before that. */
static void fuzz_kmsg_check_str(const char *s, size_t cap) {
    const char *nul = memchr(s, '\0', cap);
    FUZZ_CHECK(nul != NULL);
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)nul; p++)
        FUZZ_CHECK(*p >= 0x20 && *p != 0x7f);
}

/* kmsg_json_members into a buffer of cap bytes: NUL-terminated, the length returned is the
 * string's and below cap. The buffer is heap-allocated at its exact size, so an overrun is
 * caught by ASan. */
static void fuzz_kmsg_check_json(const struct kmsg_event *e, size_t cap) {
    char *buf = malloc(cap);
    FUZZ_CHECK(buf != NULL);
    memset(buf, 'x', cap);
    size_t n = kmsg_json_members(e, buf, cap);
    FUZZ_CHECK(n < cap);
    FUZZ_CHECK(memchr(buf, '\0', cap) != NULL);
    FUZZ_CHECK(strlen(buf) == n);
    free(buf);
}

static void fuzz_kmsg_check_event(const struct kmsg_event *e, size_t small_cap) {
    fuzz_kmsg_check_str(e->message, sizeof(e->message));
    fuzz_kmsg_check_str(e->pci, sizeof(e->pci));
    fuzz_kmsg_check_str(e->ring, sizeof(e->ring));
    fuzz_kmsg_check_str(e->process, sizeof(e->process));
    fuzz_kmsg_check_str(e->thread, sizeof(e->thread));
    fuzz_kmsg_check_str(e->client, sizeof(e->client));
    FUZZ_CHECK(e->category < KMSG_CAT_COUNT);
    FUZZ_CHECK(e->vendor < KMSG_VENDOR_COUNT);
    fuzz_kmsg_check_json(e, 1024);
    fuzz_kmsg_check_json(e, small_cap);
}

/* An event the classifier returned for input up to line `lineno`. */
static void fuzz_kmsg_check_fed(const struct fuzz_kmsg_run *r, const struct kmsg_event *e) {
    fuzz_kmsg_check_event(e, r->small_cap);
    FUZZ_CHECK(e->lines >= 1);
    FUZZ_CHECK(e->line >= 1 && e->line <= r->lineno);
    FUZZ_CHECK(e->source == KMSG_SRC_FILE);
}

/* The parsed message lies inside the line it came from. */
static void fuzz_kmsg_check_line(const struct kmsg_line *l, const char *buf, size_t n) {
    FUZZ_CHECK(l->text >= buf && l->len <= n && l->text + l->len <= buf + n);
    FUZZ_CHECK(l->prio >= -1 && l->prio <= 7);
    fuzz_kmsg_check_str(l->device, sizeof(l->device));
}

/* One line from the splitter: copied to a buffer of its exact size (an over-read past the
 * line is then caught by ASan), parsed as a record or else as text, classified on its own and
 * fed to the grouping classifier. */
static void fuzz_kmsg_on_line(void *ctx, const char *line, size_t n) {
    struct fuzz_kmsg_run *r = ctx;
    char *buf = malloc(n ? n : 1);
    FUZZ_CHECK(buf != NULL);
    if (n)
        memcpy(buf, line, n);
    struct kmsg_line l;
    if (kmsg_parse_record(buf, n, &l) != 0)
        kmsg_parse_text(buf, n, &l);
    fuzz_kmsg_check_line(&l, buf, n);
    struct kmsg_event one;
    bool flagged = kmsg_classify_line(&l, &one);
    fuzz_kmsg_check_event(&one, r->small_cap);
    FUZZ_CHECK(!flagged || one.category != KMSG_CAT_NONE);
    struct kmsg_event out[2];
    r->lineno++;
    int got = kmsg_classifier_feed(&r->cls, &l, r->lineno, out);
    FUZZ_CHECK(got >= 0 && got <= 2);
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
    FUZZ_CHECK(lines.delivered == r.lineno);
    struct kmsg_event last;
    if (kmsg_classifier_flush(&r.cls, &last))
        fuzz_kmsg_check_fed(&r, &last);
    FUZZ_CHECK(kmsg_classifier_pending(&r.cls) == NULL);
    return 0;
}

const char fuzz_target_name[] = "fuzz_kmsg";

/* Pieces of real kernel-log input the replay driver mixes into its generated inputs. */
const char *const fuzz_fragments[] = {
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
    "radeon 0000:01:00.0: ring 0 stalled for more than 10180msec",
    "radeon 0000:01:00.0: GPU lockup (current fence id 0x000000000005c299 last fence id ",
    "GPU lockup (waiting for 0x",
    " on ring 3)",
    "drmn0: GPU reset succeeded, trying to resume",
    "NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)",
    "NVRM: API mismatch: the client has the version 535.54.03, but#012",
    "               NVRM: this kernel module has the version 510.73.05.  Please",
    "NVRM: components have the same version.",
    "nvidia-modeset: Version mismatch: nvidia.ko(410.73) nvidia-modeset.ko(390.87)",
    "amdgpu: [powerplay] [AVFS] Something is broken. See log!",
    " failed to send pre message 14a ret is 0 ",
    "amdgpu: [powerplay] Can't find requested voltage id in vdd_dep_on_sclk table!",
    "NVRM objClInitPcieChipset: *** Chipset Setup Function Error!",
    "Okt 07 13:36:05 lucy kernel: ",
    "4\xe6\x9c\x88 20 19:55:29 Reverier-Arch kernel: ",
    "18446744073709551615",
    "0x",
    "\t",
    "\r\n",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
