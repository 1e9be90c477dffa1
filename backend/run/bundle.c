/* The hang diagnostic bundle: recent events kept by the consumer, one JSON file on a HANG. */
#include "backend/run/bundle.h"

#include "backend/compute/compute.h"
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/record/record_json.h"
#include "backend/telemetry/tele_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>

#define BUNDLE_KMSG_WINDOW_NS 120000000000ull /* kernel-log lines this close to the hang */

void bundle_ring_add(struct bundle_ring *r, const struct ev *e) {
    ev_copy(&r->ev[r->head], e); /* every event passes here: its own bytes only */
    r->head = r->head + 1 == BUNDLE_EVENTS ? 0 : r->head + 1;
    if (r->n < BUNDLE_EVENTS)
        r->n++;
}

/* Event k of the ring, oldest first. */
static const struct ev *bundle_ring_at(const struct bundle_ring *r, size_t k) {
    return &r->ev[(r->head + BUNDLE_EVENTS - r->n + k) % BUNDLE_EVENTS];
}

/* The first line of a small file, as a JSON string member (null when unreadable). */
static void bundle_file_line(FILE *f, const char *key, const char *path, bool last) {
    char line[256] = "";
    FILE *in = fopen(path, "r");
    bool ok = in && fgets(line, sizeof(line), in);
    if (in)
        fclose(in);
    line[strcspn(line, "\n")] = '\0';
    json_object *s = ok ? json_object_new_string(line) : NULL;
    fprintf(f, "\"%s\":%s%s", key, s ? json_object_to_json_string(s) : "null", last ? "" : ",");
    json_object_put(s);
}

static void bundle_versions(FILE *f) {
    struct utsname u;
    json_object *k = json_object_new_string(uname(&u) == 0 ? u.release : "");
    fprintf(f, "\"versions\":{\"ringside\":\"%s\",\"backends\":\"%s\",\"kernel\":%s,", RS_VERSION,
            compute_backends(), json_object_to_json_string(k));
    json_object_put(k);
    bundle_file_line(f, "amdgpu", "/sys/module/amdgpu/version", false);
    bundle_file_line(f, "nvidia", "/proc/driver/nvidia/version", false);
    bundle_file_line(f, "rocm", "/opt/rocm/.info/version", true);
    fprintf(f, "},\n");
}

static void bundle_string(FILE *f, const char *key, const char *s, const char *sep) {
    json_object *o = json_object_new_string(s);
    fprintf(f, "\"%s\":%s%s", key, json_object_to_json_string(o), sep);
    json_object_put(o);
}

static void bundle_engine(FILE *f, const struct engine_snap *s) {
    fprintf(f, "\"engine\":{");
    bundle_string(f, "backend", s->backend, ",");
    bundle_string(f, "device", s->dev.name, ",");
    bundle_string(f, "arch", s->dev.arch, ",");
    bundle_string(f, "pci", s->dev.pci, ",");
    fprintf(f, "\"phase\":\"%s\",\"epoch\":%d,\"step\":%lld,\"chunk_bars\":%d},\n",
            s->phase < PHASE_COUNT ? ev_phase_name(s->phase) : "idle", s->epoch, (long long)s->step,
            s->chunk_bars);
    fprintf(f,
            "\"pool\":{\"allocated_bytes\":%llu,\"reserved_bytes\":%llu,"
            "\"largest_free_bytes\":%llu,\"free_blocks\":%u,\"segments\":%u},\n",
            (unsigned long long)s->mem.allocated_bytes, (unsigned long long)s->mem.reserved_bytes,
            (unsigned long long)s->mem.largest_free_bytes, (unsigned)s->mem.free_blocks,
            (unsigned)s->mem.segments);
}

/* The events as JSON-lines objects in an array; kmsg_only: the kernel log near the hang. */
static void bundle_events(FILE *f, const struct bundle_src *b, bool kmsg_only) {
    char line[4096];
    bool first = true;
    uint64_t t = b->hang->t_ns;
    fprintf(f, "\"%s\":[", kmsg_only ? "kernel_log" : "events");
    for (size_t k = 0; k < b->ring->n; k++) {
        const struct ev *e = bundle_ring_at(b->ring, k);
        uint64_t d = e->t_ns > t ? e->t_ns - t : t - e->t_ns;
        if (kmsg_only && (e->kind != EV_KMSG || d > BUNDLE_KMSG_WINDOW_NS))
            continue;
        int n = rec_json_event(e, line, sizeof(line));
        if (n <= 0 || (size_t)n >= sizeof(line))
            continue;
        fprintf(f, "%s\n%s", first ? "" : ",", line);
        first = false;
    }
    fprintf(f, "]");
}

static void bundle_body(FILE *f, const struct bundle_src *b) {
    fprintf(f,
            "{\"bundle\":\"ringside hang diagnostics\",\"version\":1,\"written_wall_ns\":%llu,\n",
            (unsigned long long)mono_wall_ns());
    fprintf(f, "\"hang\":{\"dev\":%u,\"t_ns\":%llu,", (unsigned)b->hang->dev,
            (unsigned long long)b->hang->t_ns);
    bundle_string(f, "message", b->hang->u.text.text, "},\n");
    if (b->diagnosis)
        bundle_string(f, "diagnosis", b->diagnosis, ",\n");
    bundle_versions(f);
    bundle_engine(f, b->snap);
    json_object *conf = run_opts_json(b->o); /* in the config file's words */
    fprintf(f, "\"config\":%s",
            conf ? json_object_to_json_string_ext(conf, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE)
                 : "null");
    json_object_put(conf);
    fprintf(f, ",\"telemetry\":");
    if (b->tele)
        tele_json_write(f, b->tele, false);
    else
        fprintf(f, "null");
    fprintf(f, ",\n");
    bundle_events(f, b, true);
    fprintf(f, ",\n");
    bundle_events(f, b, false);
    fprintf(f, "}\n");
}

int bundle_write(const struct bundle_src *b, char *path, size_t pathlen, char *err, size_t errlen) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    int n = snprintf(path, pathlen, "%s/hang-%s.json", b->o->conf.output_dir, stamp);
    if (n < 0 || (size_t)n >= pathlen)
        return errbuf_set(err, errlen, -ENAMETOOLONG, "the bundle's path is too long");
    int rc = afile_mkdirs(b->o->conf.output_dir, err, errlen);
    struct afile af;
    if (rc == 0 && (rc = afile_open_private(&af, path, err, errlen)) == 0) {
        bundle_body(af.fp, b);
        rc = afile_commit(&af, err, errlen);
    }
    return rc;
}

bool bundle_due(struct bundle_ring *r, const struct ev *e) {
    bundle_ring_add(r, e);
    return e->kind == EV_ALERT && e->u.text.code == ALERT_SYNC_HANG && !r->written;
}

bool bundle_stalled_rings(const struct tele_snap *t, const char *pci, char *out, size_t len) {
    out[0] = '\0';
    if (!t || !pci || !pci[0])
        return false;
    for (unsigned i = 0; i < t->n_gpus; i++) {
        const struct tele_gpu *g = &t->gpus[i];
        if (!g->rings_src || strcasecmp(g->pci, pci) != 0)
            continue;
        size_t u = 0;
        for (int k = 0; k < g->n_rings && u < len; k++) {
            const struct tele_ring *x = &g->rings[k];
            if (!x->stalled)
                continue;
            int w =
                snprintf(out + u, len - u, "%s%s at fence 0x%llx of 0x%llx", u ? ", " : "", x->name,
                         (unsigned long long)x->signaled, (unsigned long long)x->emitted);
            u += w > 0 ? (size_t)w : 0;
        }
        return out[0] != '\0';
    }
    return false;
}

void bundle_on_hang(struct bundle_ring *r, const struct ev *e, const struct bundle_src *b,
                    char *msg, size_t msglen) {
    r->written = true;
    char path[ENGINE_PATH_MAX + 64], err[512], rings[160];
    struct bundle_src src = *b;
    src.ring = r;
    src.hang = e;
    int n;
    if (bundle_write(&src, path, sizeof(path), err, sizeof(err)) == 0)
        n = snprintf(msg, msglen, "hang diagnostics written to %.180s", path);
    else
        n = snprintf(msg, msglen, "hang diagnostics not written: %.180s", err);
    if (n > 0 && (size_t)n < msglen && b->snap &&
        bundle_stalled_rings(b->tele, b->snap->dev.pci, rings, sizeof(rings)))
        snprintf(msg + n, msglen - (size_t)n, "; the GPU itself had stopped: ring %s", rings);
}
