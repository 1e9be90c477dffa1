/* libFuzzer target for recordings (`ringside replay`): arbitrary bytes as the lines of a recording,
 * each parsed (and every event written back as JSON and parsed the same), then the whole input
 * opened as a recording and played to its end on a fake clock. */
#include "backend/engine/engine.h"
#include "backend/record/record.h"
#include "backend/record/record_json.h"
#include "backend/record/replay_internal.h"
#include "backend/run/replay.h"
#include "tests/fuzz/fuzz_target.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_RECORDING_WHY   256
#define FUZZ_RECORDING_JSON  8192 /* an event written back: far more than any one needs */
#define FUZZ_RECORDING_DRAIN 64
#define FUZZ_RECORDING_STEPS 48
/* The fake clock stops here, so that d * speed stays in range. */
#define FUZZ_RECORDING_MAX_NS (1ull << 63)

static char fuzz_recording_path[64];
static uint64_t fuzz_recording_now;

/* A fixed-size string: NUL-terminated inside its array. */
#define FUZZ_RECORDING_STR(s) FUZZ_CHECK(memchr((s), '\0', sizeof(s)) != NULL)

/* Whether a key or string anywhere in v holds a newline (a message may quote one). */
static bool fuzz_recording_has_nl(json_object *v) {
    if (json_object_is_type(v, json_type_string))
        return memchr(json_object_get_string(v), '\n', (size_t)json_object_get_string_len(v)) !=
               NULL;
    if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (fuzz_recording_has_nl(json_object_array_get_idx(v, i)))
                return true;
        return false;
    }
    if (!json_object_is_type(v, json_type_object))
        return false;
    json_object_object_foreach(v, key, val) {
        if (strchr(key, '\n') || fuzz_recording_has_nl(val))
            return true;
    }
    return false;
}

/* The line as JSON quotes a newline somewhere. */
static bool fuzz_recording_quotes_nl(const char *line, size_t len) {
    json_tokener *tok = json_tokener_new();
    FUZZ_CHECK(tok != NULL);
    json_object *o = json_tokener_parse_ex(tok, line, (int)len);
    json_tokener_free(tok);
    bool nl = o && fuzz_recording_has_nl(o);
    json_object_put(o);
    return nl;
}

static bool fuzz_recording_has_ctl(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

/* Every enum in range, every string terminated, t_ns as replay_internal.h defines it. */
static void fuzz_recording_check_ev(const struct ev *e) {
    FUZZ_CHECK(e->kind < EV_KIND_COUNT);
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        FUZZ_CHECK(e->u.phase.phase < PHASE_COUNT && e->t_ns == e->u.phase.end_ns);
        break;
    case EV_SYNC:
        FUZZ_CHECK(e->u.sync.op < SYNC_OP_COUNT);
        FUZZ_CHECK(e->t_ns == e->u.sync.start_ns + e->u.sync.dur_ns);
        break;
    case EV_MEM:
        FUZZ_CHECK(e->u.mem.total_free_bytes <= e->u.mem.reserved_bytes);
        break;
    case EV_METRIC:
        break;
    case EV_COLLECTIVE:
        FUZZ_CHECK(e->u.coll.op < EV_COLL_COUNT && e->u.coll.calls >= 1);
        break;
    case EV_COMMAND:
        FUZZ_CHECK(e->u.command.cmd < CMD_COUNT);
        FUZZ_RECORDING_STR(e->u.command.text);
        break;
    case EV_ALERT:
    case EV_LOG:
        FUZZ_CHECK(e->u.text.severity <= SEV_ERROR);
        FUZZ_RECORDING_STR(e->u.text.text);
        break;
    case EV_KMSG: {
        const struct kmsg_event *k = &e->u.kmsg;
        FUZZ_CHECK(k->category < KMSG_CAT_COUNT && k->vendor < KMSG_VENDOR_COUNT);
        FUZZ_CHECK(k->severity <= SEV_ERROR && k->source <= KMSG_SRC_STDERR && k->lines >= 1);
        FUZZ_RECORDING_STR(k->message);
        FUZZ_RECORDING_STR(k->pci);
        FUZZ_RECORDING_STR(k->ring);
        FUZZ_RECORDING_STR(k->process);
        FUZZ_RECORDING_STR(k->thread);
        FUZZ_RECORDING_STR(k->client);
        break;
    }
    case EV_KIND_COUNT:
        break;
    }
}

static void fuzz_recording_check_item(const struct replay_item *it) {
    switch (it->kind) {
    case REPLAY_EVENT:
        fuzz_recording_check_ev(&it->ev);
        FUZZ_CHECK(it->t_ns == it->ev.t_ns);
        break;
    case REPLAY_LAYOUT:
        FUZZ_CHECK(it->dev <= 0xFFFF && it->layout.n_listed <= MEM_LAYOUT_MAX_SEGMENTS);
        for (uint32_t i = 0; i < it->layout.n_listed; i++)
            FUZZ_CHECK(it->layout.seg[i].n_blocks <= MEM_LAYOUT_MAX_BLOCKS);
        break;
    case REPLAY_SUMMARY:
        FUZZ_CHECK(it->t_ns == 0 && !(it->sum.failed && it->sum.stopped));
        break;
    case REPLAY_RUN:
        FUZZ_CHECK(it->extra.version >= 1 && it->extra.version <= REC_VERSION);
        FUZZ_CHECK(it->t_ns == it->run.start_ns && it->run.n_devices <= 0xFFFF);
        FUZZ_RECORDING_STR(it->run.host);
        FUZZ_RECORDING_STR(it->run.backend);
        FUZZ_RECORDING_STR(it->run.dev_name);
        FUZZ_RECORDING_STR(it->run.dev_arch);
        break;
    case REPLAY_BLANK:
        break;
    case REPLAY_NONE:
        FUZZ_CHECK(!"a line parsed without a kind");
    }
}

/* Doubles written as their shortest text read back exactly; NaN and infinity are written as
 * null and read back as NaN. */
static bool fuzz_recording_same_num(double a, double b) {
    if (!isfinite(a) || !isfinite(b))
        return !isfinite(a) && isnan(b);
    return a == b;
}

/* The fields of an event the writer writes, as the reader reads them back. */
static bool fuzz_recording_same_ev(const struct ev *a, const struct ev *b) {
    if (a->kind != b->kind || a->seq != b->seq || a->t_ns != b->t_ns || a->dev != b->dev)
        return false;
    switch ((enum ev_kind)a->kind) {
    case EV_PHASE:
        return a->u.phase.phase == b->u.phase.phase && a->u.phase.epoch == b->u.phase.epoch &&
               a->u.phase.step == b->u.phase.step && a->u.phase.chunk == b->u.phase.chunk &&
               a->u.phase.start_ns == b->u.phase.start_ns && a->u.phase.end_ns == b->u.phase.end_ns;
    case EV_SYNC:
        return a->u.sync.op == b->u.sync.op && a->u.sync.rc == b->u.sync.rc &&
               a->u.sync.start_ns == b->u.sync.start_ns && a->u.sync.dur_ns == b->u.sync.dur_ns;
    case EV_MEM: {
        const struct ev_mem *x = &a->u.mem, *y = &b->u.mem;
        return x->allocated_bytes == y->allocated_bytes && x->reserved_bytes == y->reserved_bytes &&
               x->largest_free_bytes == y->largest_free_bytes &&
               x->total_free_bytes == y->total_free_bytes && x->free_blocks == y->free_blocks &&
               x->segments == y->segments && fuzz_recording_same_num(x->frag, y->frag);
    }
    case EV_METRIC: {
        const struct ev_metric *x = &a->u.metric, *y = &b->u.metric;
        return x->epoch == y->epoch && x->step == y->step && x->has_val == y->has_val &&
               fuzz_recording_same_num(x->loss, y->loss) &&
               fuzz_recording_same_num(x->samples_per_s, y->samples_per_s) &&
               (!x->has_val || fuzz_recording_same_num(x->val_loss, y->val_loss));
    }
    case EV_COLLECTIVE: {
        const struct ev_coll *x = &a->u.coll, *y = &b->u.coll;
        return x->op == y->op && x->rc == y->rc && x->calls == y->calls && x->bytes == y->bytes &&
               x->start_ns == y->start_ns && x->dur_ns == y->dur_ns && x->max_ns == y->max_ns &&
               x->epoch == y->epoch && x->step == y->step;
    }
    case EV_COMMAND:
        return a->u.command.cmd == b->u.command.cmd && a->u.command.rc == b->u.command.rc &&
               a->u.command.arg == b->u.command.arg &&
               strcmp(a->u.command.text, b->u.command.text) == 0;
    case EV_ALERT:
    case EV_LOG:
        return a->u.text.severity == b->u.text.severity &&
               strcmp(a->u.text.text, b->u.text.text) == 0;
    case EV_KMSG: {
        const struct kmsg_event *x = &a->u.kmsg, *y = &b->u.kmsg;
        /* ts is written in microseconds and read back through a double */
        uint64_t dts = x->ts_ns > y->ts_ns ? x->ts_ns - y->ts_ns : y->ts_ns - x->ts_ns;
        bool ts_ok = x->ts_ns >= (1ull << 62) || dts <= 1000 + (x->ts_ns >> 48);
        return x->has == y->has && ts_ok && x->addr == y->addr &&
               x->seq_signaled == y->seq_signaled && x->seq_emitted == y->seq_emitted &&
               x->line == y->line && x->lines == y->lines && x->pid == y->pid && x->tid == y->tid &&
               x->pasid == y->pasid && x->node == y->node && x->vmid == y->vmid &&
               x->xid == y->xid && x->category == y->category && x->severity == y->severity &&
               x->vendor == y->vendor && x->source == y->source && strcmp(x->pci, y->pci) == 0 &&
               strcmp(x->ring, y->ring) == 0 && strcmp(x->process, y->process) == 0 &&
               strcmp(x->thread, y->thread) == 0 && strcmp(x->client, y->client) == 0 &&
               strcmp(x->message, y->message) == 0;
    }
    case EV_KIND_COUNT:
        break;
    }
    return false;
}

/* An event written as a recording line reads back as the same event. Kernel-log events whose
 * strings hold control bytes are left out: the classifier never makes those, and escaped six
 * bytes each they can outgrow the writer's buffer for the kernel-log members. */
static void fuzz_recording_round_trip(const struct ev *e) {
    const struct kmsg_event *k = &e->u.kmsg;
    if (e->kind == EV_KMSG &&
        (fuzz_recording_has_ctl(k->message) || fuzz_recording_has_ctl(k->pci) ||
         fuzz_recording_has_ctl(k->ring) || fuzz_recording_has_ctl(k->process) ||
         fuzz_recording_has_ctl(k->thread) || fuzz_recording_has_ctl(k->client)))
        return;
    char *json = malloc(FUZZ_RECORDING_JSON);
    struct replay_item *back = malloc(sizeof(*back));
    FUZZ_CHECK(json != NULL && back != NULL);
    int n = rec_json_event(e, json, FUZZ_RECORDING_JSON);
    FUZZ_CHECK(n > 0 && n < FUZZ_RECORDING_JSON && (size_t)n == strlen(json));
    char why[FUZZ_RECORDING_WHY];
    FUZZ_CHECK(replay_parse_line(json, (size_t)n, back, why, sizeof(why)) == 0);
    FUZZ_CHECK(back->kind == REPLAY_EVENT);
    FUZZ_CHECK(fuzz_recording_same_ev(e, &back->ev));
    free(back);
    free(json);
}

/* One line, copied at its exact size so that an over-read is caught. */
static void fuzz_recording_line(const char *line, size_t len, struct replay_item *it) {
    char *copy = malloc(len ? len : 1);
    FUZZ_CHECK(copy != NULL);
    if (len)
        memcpy(copy, line, len);
    char why[FUZZ_RECORDING_WHY];
    memset(why, 'x', sizeof(why));
    int rc = replay_parse_line(copy, len, it, why, sizeof(why));
    if (rc == 0) {
        fuzz_recording_check_item(it);
        if (it->kind == REPLAY_EVENT)
            fuzz_recording_round_trip(&it->ev);
    } else {
        FUZZ_CHECK(rc == -EINVAL);
        FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0');
        FUZZ_CHECK(!strchr(why, '\n') || fuzz_recording_quotes_nl(copy, len));
    }
    free(copy);
}

static uint64_t fuzz_recording_clock(void *ctx) {
    (void)ctx;
    return fuzz_recording_now;
}

/* The whole input as a recording file: opened, then played on a clock that leaps ahead until
 * the recording is over (or the clock's end), every released event checked. */
static void fuzz_recording_play(const uint8_t *data, size_t size, bool quotes_nl) {
    FILE *f = fopen(fuzz_recording_path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(fclose(f) == 0);
    struct source *src = NULL;
    char err[512];
    memset(err, 'x', sizeof(err));
    int rc = replay_open(&src, fuzz_recording_path, 1.0, err, sizeof(err));
    if (rc != 0) {
        FUZZ_CHECK(rc == -EINVAL && src == NULL);
        FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
        FUZZ_CHECK(strncmp(err, fuzz_recording_path, strlen(fuzz_recording_path)) == 0);
        FUZZ_CHECK(strlen(err) > strlen(fuzz_recording_path) + 2);
        FUZZ_CHECK(!strchr(err, '\n') || quotes_nl);
        return;
    }
    FUZZ_CHECK(src != NULL && src->run.replay);
    fuzz_recording_now = 0;
    replay_set_clock(src, fuzz_recording_clock, NULL);
    static struct ev out[FUZZ_RECORDING_DRAIN];
    for (int step = 0; step < FUZZ_RECORDING_STEPS && !src->ops->done(src); step++) {
        uint64_t leap = 1ull << (step + 16);
        fuzz_recording_now = fuzz_recording_now > FUZZ_RECORDING_MAX_NS - leap
                                 ? FUZZ_RECORDING_MAX_NS
                                 : fuzz_recording_now + leap;
        uint64_t now = src->ops->now_ns(src);
        size_t n;
        while ((n = src->ops->drain(src, out, FUZZ_RECORDING_DRAIN)) > 0) {
            FUZZ_CHECK(n <= FUZZ_RECORDING_DRAIN);
            for (size_t i = 0; i < n; i++) {
                fuzz_recording_check_ev(&out[i]);
                FUZZ_CHECK(out[i].t_ns <= now);
            }
        }
        const struct engine_snap *s = src->ops->snap(src);
        FUZZ_CHECK(s->phase <= PHASE_COUNT);
        FUZZ_CHECK(s->layout.n_listed <= MEM_LAYOUT_MAX_SEGMENTS);
        const char *status = src->ops->status(src);
        FUZZ_CHECK(status != NULL && status[0] != '\0');
        FUZZ_CHECK(!strchr(status, '\n') || quotes_nl);
    }
    src->ops->stop(src);
    FUZZ_CHECK(src->ops->done(src));
    FUZZ_CHECK(src->ops->drain(src, out, FUZZ_RECORDING_DRAIN) == 0);
    src->ops->destroy(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_recording_path[0])
        snprintf(fuzz_recording_path, sizeof(fuzz_recording_path), "/tmp/fuzz_recording_%ld.jsonl",
                 (long)getpid());
    const char *text = (const char *)data;
    struct replay_item *it = malloc(sizeof(*it));
    FUZZ_CHECK(it != NULL);
    bool quotes_nl = false;
    /* the input's lines, as replay reads them: up to and including each '\n' */
    for (size_t off = 0; off < size;) {
        const char *nl = memchr(text + off, '\n', size - off);
        size_t len = nl ? (size_t)(nl - (text + off)) + 1 : size - off;
        fuzz_recording_line(text + off, len, it);
        /* the file reader sees each line up to its first NUL (fgets, then strlen) */
        quotes_nl = quotes_nl || fuzz_recording_quotes_nl(text + off, len) ||
                    fuzz_recording_quotes_nl(text + off, strnlen(text + off, len));
        off += len;
    }
    free(it);
    fuzz_recording_play(data, size, quotes_nl);
    return 0;
}

const char fuzz_target_name[] = "fuzz_recording";

/* Pieces of real recording lines (tests/fixtures/replay, `ringside train --headless`). */
const char *const fuzz_fragments[] = {
    "{\"type\":\"run\",\"version\":1,\"ringside\":\"0.1.0\",\"host\":\"fixture\",\"backend\":"
    "\"cpu\",\"device\":\"host CPU (1 threads)\",\"arch\":\"x86_64\",\"devices\":1,\"start_ns\":"
    "1000000000,\"start_wall_ns\":1700000000000000000,\"epochs\":1,\"chunk\":500,\"config\":{}}\n",
    "{\"type\":\"log\",\"seq\":0,\"t_ns\":1000000000,\"severity\":\"info\",\"message\":\"loaded\"}"
    "\n",
    "{\"type\":\"phase\",\"seq\":1,\"dev\":0,\"phase\":\"load\",\"start_ns\":1000000000,\"end_ns\":"
    "1100000000,\"epoch\":0,\"step\":-1,\"chunk\":-1}\n",
    "{\"type\":\"sync\",\"seq\":2,\"dev\":0,\"op\":\"stream\",\"start_ns\":1100000000,\"dur_ns\":"
    "250000,\"rc\":0}\n",
    "{\"type\":\"mem\",\"seq\":3,\"dev\":0,\"t_ns\":1100250000,\"allocated\":1048576,\"reserved\":"
    "2097152,\"largest_free\":1048576,\"free_blocks\":1,\"segments\":1,\"frag\":0}\n",
    "{\"type\":\"metric\",\"seq\":4,\"t_ns\":1200000000,\"epoch\":1,\"step\":5,\"loss\":0.75,"
    "\"val_loss\":0.8,\"samples_per_s\":5000}\n",
    "{\"type\":\"command\",\"seq\":5,\"t_ns\":1300000000,\"cmd\":\"set_chunk\",\"arg\":250,\"rc\":"
    "0,"
    "\"result\":\"chunk 250\"}\n",
    "{\"type\":\"alert\",\"seq\":6,\"t_ns\":1300000001,\"dev\":0,\"severity\":\"warning\","
    "\"message\":\"slow sync\"}\n",
    "{\"type\":\"kmsg\",\"seq\":7,\"t_ns\":1400000000,\"source\":\"kmsg\",\"line\":3,\"ts\":312.5,"
    "\"vendor\":\"amdgpu\",\"category\":\"ring_timeout\",\"severity\":\"error\",\"pci\":"
    "\"0000:03:00.0\",\"ring\":\"gfx_0.0.0\",\"seq_signaled\":1,\"seq_emitted\":3,\"pid\":4242,"
    "\"addr\":\"0x7f1234567000\",\"message\":\"ring gfx_0.0.0 timeout\"}\n",
    "{\"type\":\"layout\",\"dev\":0,\"t_ns\":1500000000,\"segments\":[{\"size\":2097152,\"small\":"
    "false,\"truncated\":false,\"blocks\":[[0,1048576,1],[1048576,1048576,0]]}],\"n_segments\":1}"
    "\n",
    "{\"type\":\"summary\",\"state\":\"completed\",\"epochs\":1,\"steps\":5,\"train_loss\":0.75,"
    "\"val_loss\":0.8,\"best_val_loss\":0.8,\"elapsed_s\":0.2,\"samples_per_s\":5000,"
    "\"dropped_events\":0,\"checkpoint\":\"TRAINING/vpoc_mlp.rsmodel\"}\n",
    "\"state\":\"failed\"",
    "\"state\":\"stopped\"",
    "\"phase\":\"backward\"",
    "\"op\":\"device\"",
    "\"cmd\":\"stop\"",
    "\"cmd\":\"pause\"",
    "\"epoch\":2147483647",
    "\"step\":9223372036854775807",
    "\"t_ns\":18446744073709551615",
    "\"dur_ns\":18446744073709551615",
    "\"version\":2",
    "\"frag\":null",
    "\"ts\":1e300",
    "\"dev\":65535",
    "-9223372036854775808",
    "\"\\n\"",
    "\"\\u0000\"",
    "{\"type\":\"run\"}",
    "{}",
    "\n",
    "\r\n",
    " \t",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
