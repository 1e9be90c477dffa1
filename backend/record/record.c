/* The JSON-lines recorder: run line, events, layout lines and the summary, flushed per line. */
#include "backend/record/record.h"

#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/record/record_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RS_VERSION
#define RS_VERSION "dev"
#endif

struct rec {
    FILE *f;         /* NULL for a sink */
    struct afile af; /* the file's (not stdout's, nor a sink's) */
    rec_sink_fn sink;
    void *sink_ctx;
    bool is_stdout;
    int err;                          /* first write error (-errno), 0 = none */
    bool has_layout[RUN_MAX_DEVICES]; /* last_mem is the state of the device's last layout */
    struct mem_stats last_mem[RUN_MAX_DEVICES];
    char path[ENGINE_PATH_MAX];
};

int rec_open(struct rec **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    struct rec *r = calloc(1, sizeof(*r));
    if (!r)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    snprintf(r->path, sizeof(r->path), "%s", path);
    r->is_stdout = strcmp(path, "-") == 0;
    int rc = r->is_stdout ? 0 : afile_open_stream(&r->af, path, err, errlen);
    if (rc != 0) {
        free(r);
        return rc;
    }
    r->f = r->is_stdout ? stdout : r->af.fp;
    *out = r;
    return 0;
}

int rec_open_sink(struct rec **out, rec_sink_fn line, void *ctx) {
    struct rec *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->sink = line;
    r->sink_ctx = ctx;
    snprintf(r->path, sizeof(r->path), "the event stream");
    *out = r;
    return 0;
}

/* One line: the text, a newline, a flush (a crash loses at most the line being written). */
static int rec_line(struct rec *r, const char *text) {
    if (r->err)
        return r->err;
    if (r->sink)
        return r->err = r->sink(r->sink_ctx, text, strlen(text));
    errno = 0;
    if (fputs(text, r->f) == EOF || fputc('\n', r->f) == EOF || fflush(r->f) == EOF)
        r->err = errno ? -errno : -EIO;
    return r->err;
}

static void rec_put_str(json_object *o, const char *key, const char *s) {
    json_object_object_add(o, key, json_object_new_string(s));
}

static void rec_put_int(json_object *o, const char *key, int64_t v) {
    json_object_object_add(o, key, json_object_new_int64(v));
}

int rec_run(struct rec *r, const struct run_info *run, const struct engine_conf *conf) {
    json_object *o = json_object_new_object();
    if (!o)
        return -ENOMEM;
    rec_put_str(o, "type", "run");
    rec_put_int(o, "version", REC_VERSION);
    rec_put_str(o, "ringside", RS_VERSION);
    rec_put_str(o, "host", run->host);
    rec_put_str(o, "backend", run->backend);
    rec_put_str(o, "device", run->dev_name);
    rec_put_str(o, "arch", run->dev_arch);
    rec_put_int(o, "devices", run->n_devices);
    json_object *list = json_object_new_array();
    for (unsigned k = 0; list && k < run->n_devices && k < RUN_MAX_DEVICES; k++)
        json_object_array_add(list, json_object_new_int(run->devices[k]));
    json_object_object_add(o, "device_list", list);
    json_object_object_add(o, "start_ns", json_object_new_uint64(run->start_ns));
    json_object_object_add(o, "start_wall_ns", json_object_new_uint64(run->start_wall_ns));
    rec_put_int(o, "epochs", conf->epochs);
    rec_put_int(o, "chunk", conf->chunk_bars);
    json_object *config = engine_conf_json(conf);
    if (!config) {
        json_object_put(o);
        return -ENOMEM;
    }
    json_object_object_add(o, "config", config);
    int rc = rec_line(r, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return rc;
}

int rec_event(struct rec *r, const struct ev *e) {
    char line[2048];
    if ((size_t)rec_json_event(e, line, sizeof(line)) < sizeof(line))
        return rec_line(r, line);
    size_t n = (size_t)rec_json_event(e, NULL, 0) + 1;
    char *big = malloc(n);
    if (!big)
        return -ENOMEM;
    rec_json_event(e, big, n);
    int rc = rec_line(r, big);
    free(big);
    return rc;
}

/* Appends to a growing heap buffer; false when out of memory. */
struct rec_buf {
    char *p;
    size_t len, cap;
};

static bool rec_buf_put(struct rec_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool rec_buf_put(struct rec_buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return false;
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return true;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *p = realloc(b->p, cap);
        if (!p)
            return false;
        b->p = p;
        b->cap = cap;
    }
}

static bool rec_layout_seg(struct rec_buf *b, const struct mem_layout *l, uint32_t i) {
    bool ok = rec_buf_put(b, "%s{\"size\":%llu,\"small\":%s,\"truncated\":%s,\"blocks\":[",
                          i ? "," : "", (unsigned long long)l->seg[i].size_bytes,
                          l->seg[i].small_pool ? "true" : "false",
                          l->seg[i].truncated ? "true" : "false");
    uint32_t nb =
        l->seg[i].n_blocks < MEM_LAYOUT_MAX_BLOCKS ? l->seg[i].n_blocks : MEM_LAYOUT_MAX_BLOCKS;
    for (uint32_t k = 0; ok && k < nb; k++) {
        const struct mem_block_info *bl = &l->seg[i].blocks[k];
        ok = rec_buf_put(b, "%s[%llu,%llu,%d]", k ? "," : "", (unsigned long long)bl->offset_bytes,
                         (unsigned long long)bl->size_bytes, bl->allocated ? 1 : 0);
    }
    return ok && rec_buf_put(b, "]}");
}

int rec_layout(struct rec *r, uint64_t t_ns, unsigned dev, const struct mem_layout *l) {
    struct rec_buf b = {malloc(4096), 0, 4096};
    if (!b.p)
        return -ENOMEM;
    bool ok = rec_buf_put(&b, "{\"type\":\"layout\",\"dev\":%u,\"t_ns\":%llu,\"segments\":[", dev,
                          (unsigned long long)t_ns);
    uint32_t n = l->n_listed < MEM_LAYOUT_MAX_SEGMENTS ? l->n_listed : MEM_LAYOUT_MAX_SEGMENTS;
    for (uint32_t i = 0; ok && i < n; i++)
        ok = rec_layout_seg(&b, l, i);
    ok = ok && rec_buf_put(&b, "],\"n_segments\":%u}", l->n_segments);
    int rc = ok ? rec_line(r, b.p) : -ENOMEM;
    free(b.p);
    return rc;
}

static bool rec_mem_same(const struct mem_stats *a, const struct mem_stats *b) {
    return a->allocated_bytes == b->allocated_bytes && a->reserved_bytes == b->reserved_bytes &&
           a->largest_free_bytes == b->largest_free_bytes && a->free_blocks == b->free_blocks &&
           a->segments == b->segments;
}

int rec_snap(struct rec *r, unsigned dev, const struct engine_snap *s) {
    if (dev >= RUN_MAX_DEVICES)
        return 0;
    if (r->has_layout[dev] && rec_mem_same(&r->last_mem[dev], &s->mem))
        return r->err;
    r->has_layout[dev] = true;
    r->last_mem[dev] = s->mem;
    return rec_layout(r, s->t_ns, dev, &s->layout);
}

void rec_live_run(struct engine *e, struct run_info *out) {
    const struct engine_snap *s = engine_snap_read(e, NULL);
    memset(out, 0, sizeof(*out));
    if (gethostname(out->host, sizeof(out->host) - 1) != 0)
        snprintf(out->host, sizeof(out->host), "localhost");
    snprintf(out->backend, sizeof(out->backend), "%s", s->backend);
    snprintf(out->dev_name, sizeof(out->dev_name), "%s", s->dev.name);
    snprintf(out->dev_arch, sizeof(out->dev_arch), "%s", s->dev.arch);
    unsigned devs[ENGINE_MAX_DEVICES];
    out->n_devices = engine_devices(e, devs);
    for (unsigned k = 0; k < out->n_devices && k < RUN_MAX_DEVICES; k++)
        out->devices[k] = (uint16_t)devs[k];
    snprintf(out->origin, sizeof(out->origin), "live");
    engine_clock_anchor(e, &out->start_wall_ns, &out->start_ns);
}

int rec_summary(struct rec *r, const struct engine_result *res, uint64_t dropped) {
    size_t n = (size_t)rec_json_summary(res, dropped, NULL, 0) + 1;
    char *line = malloc(n);
    if (!line)
        return -ENOMEM;
    rec_json_summary(res, dropped, line, n);
    int rc = rec_line(r, line);
    free(line);
    return rc;
}

int rec_close(struct rec *r, char *err, size_t errlen) {
    if (!r)
        return 0;
    int rc = r->err;
    errno = 0;
    if (r->is_stdout && fflush(r->f) == EOF && rc == 0)
        rc = errno ? -errno : -EIO;
    int crc = r->af.fp ? afile_commit(&r->af, NULL, 0) : 0; /* flushed and closed */
    rc = rc ? rc : crc;
    if (rc != 0)
        errbuf_set(err, errlen, rc, "cannot write %s: %s",
                   r->is_stdout ? "standard output" : r->path, strerror(-rc));
    free(r);
    return rc;
}
