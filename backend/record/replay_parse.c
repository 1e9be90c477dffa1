/* Recording lines back into events, layouts, summaries and the run line, with json-c: every
 * field checked for presence and type, the first problem named. */
#include "backend/core/errbuf.h"
#include "backend/core/json_text.h"
#include "backend/kmsg/kmsg.h"
#include "backend/record/record.h"
#include "backend/record/replay_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A parse in progress: the first error sticks and later reads are no-ops. */
struct replay_p {
    json_object *o;
    char *why;
    size_t whylen;
    int rc;
};

static json_object *replay_p_get(struct replay_p *p, const char *key, json_type want,
                                 const char *what) {
    json_object *v = NULL;
    if (p->rc != 0)
        return NULL;
    if (!json_object_object_get_ex(p->o, key, &v)) {
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "missing field '%s'", key);
        return NULL;
    }
    bool ok = json_object_is_type(v, want) ||
              (want == json_type_double && json_object_is_type(v, json_type_int));
    if (!ok) {
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "field '%s' is not %s", key, what);
        return NULL;
    }
    return v;
}

static uint64_t replay_p_u64(struct replay_p *p, const char *key) {
    json_object *v = replay_p_get(p, key, json_type_int, "an integer");
    if (!v)
        return 0;
    if (json_object_get_int64(v) < 0) {
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "field '%s' is negative", key);
        return 0;
    }
    return json_object_get_uint64(v);
}

static int64_t replay_p_int(struct replay_p *p, const char *key, int64_t lo, int64_t hi) {
    json_object *v = replay_p_get(p, key, json_type_int, "an integer");
    if (!v)
        return 0;
    int64_t x = json_object_get_int64(v);
    if (x < lo || x > hi) {
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "field '%s' is out of range", key);
        return 0;
    }
    return x;
}

/* A number; null (how the writer spells NaN and infinity) reads as NaN. */
static double replay_p_num(struct replay_p *p, const char *key) {
    json_object *v = NULL;
    if (p->rc == 0 && json_object_object_get_ex(p->o, key, &v) && v == NULL)
        return NAN;
    v = replay_p_get(p, key, json_type_double, "a number");
    return v ? json_object_get_double(v) : 0;
}

static bool replay_p_has(struct replay_p *p, const char *key) {
    return p->rc == 0 && json_object_object_get_ex(p->o, key, NULL);
}

static void replay_p_str(struct replay_p *p, const char *key, char *dst, size_t cap) {
    json_object *v = replay_p_get(p, key, json_type_string, "a string");
    if (v)
        snprintf(dst, cap, "%s", json_object_get_string(v));
}

/* A name from one of ev.h's tables (names(0..count-1)). */
static uint8_t replay_p_enum(struct replay_p *p, const char *key, const char *(*names)(unsigned),
                             unsigned count) {
    json_object *v = replay_p_get(p, key, json_type_string, "a string");
    if (!v)
        return 0;
    const char *s = json_object_get_string(v);
    for (unsigned i = 0; i < count; i++)
        if (strcmp(names(i), s) == 0)
            return (uint8_t)i;
    p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "field '%s': unknown value '%s'", key, s);
    return 0;
}

static void replay_parse_phase(struct replay_p *p, struct ev *e) {
    e->dev = (uint16_t)replay_p_int(p, "dev", 0, 0xFFFF);
    e->u.phase.phase = replay_p_enum(p, "phase", ev_phase_name, PHASE_COUNT);
    e->u.phase.start_ns = replay_p_u64(p, "start_ns");
    e->u.phase.end_ns = replay_p_u64(p, "end_ns");
    e->u.phase.epoch = (int32_t)replay_p_int(p, "epoch", INT32_MIN, INT32_MAX);
    e->u.phase.step = replay_p_int(p, "step", INT64_MIN, INT64_MAX);
    e->u.phase.chunk = (int32_t)replay_p_int(p, "chunk", INT32_MIN, INT32_MAX);
    if (replay_p_has(p, "count")) { /* a window of steps summed: both fields, or neither */
        e->u.phase.count = (uint32_t)replay_p_int(p, "count", 2, UINT32_MAX);
        e->u.phase.busy_ns = replay_p_u64(p, "busy_ns");
        uint64_t span = e->u.phase.end_ns - e->u.phase.start_ns;
        if (p->rc == 0 && (e->u.phase.end_ns < e->u.phase.start_ns || e->u.phase.busy_ns > span))
            p->rc = errbuf_set(p->why, p->whylen, -EINVAL,
                               "field 'busy_ns' is more than its span (end_ns - start_ns)");
    }
    e->t_ns = e->u.phase.end_ns;
}

static void replay_parse_sync(struct replay_p *p, struct ev *e) {
    e->dev = (uint16_t)replay_p_int(p, "dev", 0, 0xFFFF);
    e->u.sync.op = replay_p_enum(p, "op", ev_sync_op_name, SYNC_OP_COUNT);
    e->u.sync.start_ns = replay_p_u64(p, "start_ns");
    e->u.sync.dur_ns = replay_p_u64(p, "dur_ns");
    e->u.sync.rc = (int32_t)replay_p_int(p, "rc", INT32_MIN, INT32_MAX);
    e->t_ns = e->u.sync.start_ns + e->u.sync.dur_ns;
}

static void replay_parse_mem(struct replay_p *p, struct ev *e) {
    struct ev_mem *m = &e->u.mem;
    e->dev = (uint16_t)replay_p_int(p, "dev", 0, 0xFFFF);
    e->t_ns = replay_p_u64(p, "t_ns");
    m->allocated_bytes = replay_p_u64(p, "allocated");
    m->reserved_bytes = replay_p_u64(p, "reserved");
    m->largest_free_bytes = replay_p_u64(p, "largest_free");
    m->free_blocks = (uint32_t)replay_p_int(p, "free_blocks", 0, UINT32_MAX);
    m->segments = (uint32_t)replay_p_int(p, "segments", 0, UINT32_MAX);
    m->frag = replay_p_num(p, "frag");
    /* not in the line: free is what is reserved and not allocated (as mem_stats defines it) */
    m->total_free_bytes =
        m->reserved_bytes > m->allocated_bytes ? m->reserved_bytes - m->allocated_bytes : 0;
}

/* "dev" where the event names a device; absent for the run as a whole. */
static uint16_t replay_p_dev(struct replay_p *p) {
    return replay_p_has(p, "dev") ? (uint16_t)replay_p_int(p, "dev", 0, 0xFFFF) : EV_DEV_NONE;
}

/* A metric line; a job's may leave samples_per_s out (it does not know its batch) and adds
 * steps_per_s (the bridge counts its steps). */
static void replay_parse_metric(struct replay_p *p, struct ev *e, struct replay_metric_extra *x) {
    struct ev_metric *m = &e->u.metric;
    e->dev = replay_p_dev(p);
    e->t_ns = replay_p_u64(p, "t_ns");
    m->epoch = (int32_t)replay_p_int(p, "epoch", INT32_MIN, INT32_MAX);
    m->step = replay_p_int(p, "step", INT64_MIN, INT64_MAX);
    m->loss = replay_p_num(p, "loss");
    m->has_val = replay_p_has(p, "val_loss");
    m->val_loss = m->has_val ? replay_p_num(p, "val_loss") : 0;
    memset(x, 0, sizeof(*x));
    if ((x->has_samples_per_s = replay_p_has(p, "samples_per_s")))
        m->samples_per_s = replay_p_num(p, "samples_per_s");
    if ((x->has_steps_per_s = replay_p_has(p, "steps_per_s")))
        x->steps_per_s = replay_p_num(p, "steps_per_s");
}

static void replay_parse_command(struct replay_p *p, struct ev *e) {
    e->dev = replay_p_dev(p);
    e->t_ns = replay_p_u64(p, "t_ns");
    e->u.command.cmd = replay_p_enum(p, "cmd", ev_cmd_name, CMD_COUNT);
    e->u.command.arg = replay_p_int(p, "arg", INT64_MIN, INT64_MAX);
    e->u.command.rc = (int32_t)replay_p_int(p, "rc", INT32_MIN, INT32_MAX);
    replay_p_str(p, "result", e->u.command.text, sizeof(e->u.command.text));
}

static void replay_parse_coll(struct replay_p *p, struct ev *e) {
    struct ev_coll *c = &e->u.coll;
    e->dev = (uint16_t)replay_p_int(p, "dev", 0, 0xFFFF);
    e->t_ns = replay_p_u64(p, "t_ns");
    c->op = replay_p_enum(p, "op", ev_coll_op_name, EV_COLL_COUNT);
    c->calls = (uint32_t)replay_p_int(p, "calls", 1, UINT32_MAX);
    c->bytes = replay_p_u64(p, "bytes");
    c->start_ns = replay_p_u64(p, "start_ns");
    c->dur_ns = replay_p_u64(p, "dur_ns");
    c->max_ns = replay_p_u64(p, "max_ns");
    c->epoch = (int32_t)replay_p_int(p, "epoch", INT32_MIN, INT32_MAX);
    c->step = replay_p_int(p, "step", INT64_MIN, INT64_MAX);
    c->rc = (int32_t)replay_p_int(p, "rc", INT32_MIN, INT32_MAX);
}

static void replay_parse_text(struct replay_p *p, struct ev *e) {
    e->t_ns = replay_p_u64(p, "t_ns");
    e->dev = replay_p_dev(p);
    e->u.text.severity = replay_p_enum(p, "severity", ev_severity_name, SEV_ERROR + 1);
    replay_p_str(p, "message", e->u.text.text, sizeof(e->u.text.text));
}

/* An optional integer field of a kernel-log event: its KMSG_HAS bit when present. */
static bool replay_p_opt(struct replay_p *p, const char *key, int64_t lo, int64_t hi,
                         int64_t *out) {
    if (!replay_p_has(p, key))
        return false;
    *out = replay_p_int(p, key, lo, hi);
    return p->rc == 0;
}

static void replay_p_opt_str(struct replay_p *p, const char *key, char *dst, size_t cap,
                             struct kmsg_event *k, uint32_t bit) {
    if (replay_p_has(p, key)) {
        replay_p_str(p, key, dst, cap);
        k->has |= bit;
    }
}

static void replay_parse_kmsg_nums(struct replay_p *p, struct kmsg_event *k) {
    int64_t v = 0;
    if (replay_p_opt(p, "seq_signaled", 0, INT64_MAX, &v)) {
        k->seq_signaled = (uint64_t)v;
        k->seq_emitted = (uint64_t)replay_p_int(p, "seq_emitted", 0, INT64_MAX);
        k->has |= KMSG_HAS(SEQ);
    }
    if (replay_p_opt(p, "xid", 0, 0xFFFF, &v))
        k->xid = (uint16_t)v, k->has |= KMSG_HAS(XID);
    if (replay_p_opt(p, "pid", 1, INT32_MAX, &v))
        k->pid = (int32_t)v, k->has |= KMSG_HAS(PID);
    if (replay_p_opt(p, "tid", 1, INT32_MAX, &v))
        k->tid = (int32_t)v, k->has |= KMSG_HAS(TID);
    if (replay_p_opt(p, "pasid", 0, UINT32_MAX, &v))
        k->pasid = (uint32_t)v, k->has |= KMSG_HAS(PASID);
    if (replay_p_opt(p, "vmid", 0, 0xFFFF, &v))
        k->vmid = (uint16_t)v, k->has |= KMSG_HAS(VMID);
    if (replay_p_opt(p, "node", 0, UINT32_MAX, &v))
        k->node = (uint32_t)v, k->has |= KMSG_HAS(NODE);
    if (replay_p_opt(p, "lines", 1, UINT32_MAX, &v))
        k->lines = (uint32_t)v;
}

/* A kernel-log event: the members kmsg_json_members writes, plus t_ns and source. */
static void replay_parse_kmsg(struct replay_p *p, struct ev *e) {
    struct kmsg_event *k = &e->u.kmsg;
    char addr[32] = "";
    e->dev = EV_DEV_NONE;
    e->t_ns = replay_p_u64(p, "t_ns");
    k->source = replay_p_enum(p, "source", kmsg_source_name, KMSG_SRC_COUNT);
    k->line = (uint32_t)replay_p_int(p, "line", 0, UINT32_MAX);
    k->lines = 1;
    k->category = replay_p_enum(p, "category", kmsg_category_name, KMSG_CAT_COUNT);
    k->severity = replay_p_enum(p, "severity", ev_severity_name, SEV_ERROR + 1);
    k->vendor = replay_p_enum(p, "vendor", kmsg_vendor_name, KMSG_VENDOR_COUNT);
    replay_p_str(p, "message", k->message, sizeof(k->message));
    json_object *ts = NULL;
    if (p->rc == 0 && json_object_object_get_ex(p->o, "ts", &ts) && ts) {
        double sec = replay_p_num(p, "ts");
        k->ts_ns = sec > 0 ? (uint64_t)llround(sec * 1e9) : 0;
        k->has |= KMSG_HAS(TS);
    }
    replay_p_opt_str(p, "pci", k->pci, sizeof(k->pci), k, KMSG_HAS(PCI));
    replay_p_opt_str(p, "ring", k->ring, sizeof(k->ring), k, KMSG_HAS(RING));
    replay_p_opt_str(p, "process", k->process, sizeof(k->process), k, KMSG_HAS(PROCESS));
    replay_p_opt_str(p, "thread", k->thread, sizeof(k->thread), k, KMSG_HAS(THREAD));
    replay_p_opt_str(p, "client", k->client, sizeof(k->client), k, KMSG_HAS(CLIENT));
    replay_p_opt_str(p, "addr", addr, sizeof(addr), k, KMSG_HAS(ADDR));
    if (k->has & KMSG_HAS(ADDR))
        k->addr = strtoull(addr, NULL, 16);
    replay_parse_kmsg_nums(p, k);
}

static void replay_parse_event(struct replay_p *p, unsigned kind, struct replay_item *it) {
    struct ev *e = &it->ev;
    memset(e, 0, sizeof(*e));
    e->kind = (uint16_t)kind;
    e->seq = (uint32_t)replay_p_int(p, "seq", 0, UINT32_MAX);
    it->phase_name[0] = '\0';
    json_object *name = NULL;
    switch ((enum ev_kind)kind) {
    case EV_PHASE:
        replay_parse_phase(p, e);
        if (p->rc == 0 && json_object_object_get_ex(p->o, "name", &name) &&
            json_object_is_type(name, json_type_string))
            snprintf(it->phase_name, sizeof(it->phase_name), "%s", json_object_get_string(name));
        break;
    case EV_SYNC:
        replay_parse_sync(p, e);
        break;
    case EV_MEM:
        replay_parse_mem(p, e);
        break;
    case EV_METRIC:
        replay_parse_metric(p, e, &it->metric);
        break;
    case EV_COMMAND:
        replay_parse_command(p, e);
        break;
    case EV_ALERT:
    case EV_LOG:
        replay_parse_text(p, e);
        break;
    case EV_KMSG:
        replay_parse_kmsg(p, e);
        break;
    case EV_COLLECTIVE:
        replay_parse_coll(p, e);
        break;
    case EV_KIND_COUNT:
        break;
    }
    it->kind = REPLAY_EVENT;
    it->t_ns = e->t_ns;
}

/* [offset, size, 0|1] */
static bool replay_parse_block(json_object *b, struct mem_block_info *out) {
    if (!json_object_is_type(b, json_type_array) || json_object_array_length(b) != 3)
        return false;
    for (size_t k = 0; k < 3; k++)
        if (!json_object_is_type(json_object_array_get_idx(b, k), json_type_int) ||
            json_object_get_int64(json_object_array_get_idx(b, k)) < 0)
            return false;
    out->offset_bytes = json_object_get_uint64(json_object_array_get_idx(b, 0));
    out->size_bytes = json_object_get_uint64(json_object_array_get_idx(b, 1));
    out->allocated = json_object_get_int64(json_object_array_get_idx(b, 2)) != 0;
    return true;
}

static void replay_parse_seg(struct replay_p *p, json_object *s, size_t i, struct mem_layout *l) {
    if (!json_object_is_type(s, json_type_object)) {
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "segment %zu is not an object", i);
        return;
    }
    struct replay_p sp = {s, p->why, p->whylen, 0};
    l->seg[i].size_bytes = replay_p_u64(&sp, "size");
    l->seg[i].small_pool =
        json_object_get_boolean(replay_p_get(&sp, "small", json_type_boolean, "a boolean"));
    l->seg[i].truncated =
        json_object_get_boolean(replay_p_get(&sp, "truncated", json_type_boolean, "a boolean"));
    json_object *blocks = replay_p_get(&sp, "blocks", json_type_array, "an array");
    size_t nb = blocks ? json_object_array_length(blocks) : 0;
    for (size_t k = 0; sp.rc == 0 && k < nb && k < MEM_LAYOUT_MAX_BLOCKS; k++)
        if (!replay_parse_block(json_object_array_get_idx(blocks, k), &l->seg[i].blocks[k]))
            sp.rc = errbuf_set(p->why, p->whylen, -EINVAL,
                               "segment %zu block %zu is not [offset, size, 0|1]", i, k);
    l->seg[i].n_blocks = (uint32_t)(nb < MEM_LAYOUT_MAX_BLOCKS ? nb : MEM_LAYOUT_MAX_BLOCKS);
    l->seg[i].truncated |= nb > MEM_LAYOUT_MAX_BLOCKS;
    p->rc = sp.rc;
}

static void replay_parse_layout(struct replay_p *p, struct replay_item *it) {
    struct mem_layout *l = &it->layout;
    memset(l, 0, sizeof(*l));
    it->kind = REPLAY_LAYOUT;
    it->dev = (unsigned)replay_p_int(p, "dev", 0, 0xFFFF);
    it->t_ns = replay_p_u64(p, "t_ns");
    json_object *segs = replay_p_get(p, "segments", json_type_array, "an array");
    size_t n = segs ? json_object_array_length(segs) : 0;
    l->n_listed = (uint32_t)(n < MEM_LAYOUT_MAX_SEGMENTS ? n : MEM_LAYOUT_MAX_SEGMENTS);
    for (size_t i = 0; p->rc == 0 && i < l->n_listed; i++)
        replay_parse_seg(p, json_object_array_get_idx(segs, i), i, l);
    l->n_segments = (uint32_t)replay_p_int(p, "n_segments", 0, UINT32_MAX);
}

static void replay_parse_summary(struct replay_p *p, struct replay_item *it) {
    struct replay_summary *s = &it->sum;
    char state[32] = "";
    memset(s, 0, sizeof(*s));
    it->kind = REPLAY_SUMMARY;
    it->t_ns = 0;
    replay_p_str(p, "state", state, sizeof(state));
    if (p->rc == 0 && strcmp(state, "completed") != 0 && strcmp(state, "stopped") != 0 &&
        strcmp(state, "failed") != 0)
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "field 'state': unknown value '%s'", state);
    s->failed = strcmp(state, "failed") == 0;
    s->stopped = strcmp(state, "stopped") == 0;
    s->epochs = (int32_t)replay_p_int(p, "epochs", INT32_MIN, INT32_MAX);
    s->steps = replay_p_int(p, "steps", INT64_MIN, INT64_MAX);
    if ((s->has_train_loss = replay_p_has(p, "train_loss")))
        s->train_loss = replay_p_num(p, "train_loss");
    if ((s->has_val = replay_p_has(p, "val_loss"))) {
        s->val_loss = replay_p_num(p, "val_loss");
        s->best_val_loss = replay_p_num(p, "best_val_loss");
    }
    if (replay_p_has(p, "checkpoint"))
        replay_p_str(p, "checkpoint", s->checkpoint, sizeof(s->checkpoint));
    if (replay_p_has(p, "best_checkpoint")) {
        replay_p_str(p, "best_checkpoint", s->best_checkpoint, sizeof(s->best_checkpoint));
        s->best_epoch = (int32_t)replay_p_int(p, "best_epoch", 0, INT32_MAX);
    }
}

/* "device_list": the training devices in rank order (absent in a recording of one device:
 * device 0, or what its events say). */
static void replay_parse_device_list(struct replay_p *p, struct run_info *r) {
    if (r->n_devices > RUN_MAX_DEVICES && p->rc == 0)
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "field 'devices': %u is more than %d",
                           r->n_devices, RUN_MAX_DEVICES);
    if (p->rc != 0 || !replay_p_has(p, "device_list"))
        return;
    json_object *a = replay_p_get(p, "device_list", json_type_array, "an array");
    size_t n = a ? json_object_array_length(a) : 0;
    if (a && n != r->n_devices) {
        p->rc =
            errbuf_set(p->why, p->whylen, -EINVAL,
                       "field 'device_list': %zu devices where 'devices' says %u", n, r->n_devices);
        return;
    }
    for (size_t k = 0; k < n && p->rc == 0; k++) {
        json_object *v = json_object_array_get_idx(a, k);
        int64_t d = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
        if (d < 0 || d > 0xFFFF)
            p->rc = errbuf_set(p->why, p->whylen, -EINVAL,
                               "field 'device_list': item %zu is not a device number", k);
        else
            r->devices[k] = (uint16_t)d;
    }
}

/* Whether the run line is a PyTorch job's (the bridge writes "ringside": "bridge", a loop
 * of ours its version), and the length it tells: 0 where it does not. */
static void replay_parse_job(struct replay_p *p, struct replay_run_extra *x) {
    json_object *v = NULL;
    x->job = p->rc == 0 && json_object_object_get_ex(p->o, "ringside", &v) &&
             json_object_is_type(v, json_type_string) &&
             strcmp(json_object_get_string(v), "bridge") == 0;
    x->steps_per_epoch = x->batch_size = 0;
    if (replay_p_has(p, "steps_per_epoch"))
        x->steps_per_epoch = replay_p_int(p, "steps_per_epoch", 0, INT32_MAX);
    if (replay_p_has(p, "batch_size"))
        x->batch_size = replay_p_int(p, "batch_size", 0, INT32_MAX);
}

static void replay_parse_run(struct replay_p *p, struct replay_item *it) {
    struct run_info *r = &it->run;
    memset(r, 0, sizeof(*r));
    it->kind = REPLAY_RUN;
    it->extra.version = replay_p_int(p, "version", 1, INT32_MAX);
    if (p->rc == 0 && it->extra.version > REC_VERSION)
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL,
                           "recording version %lld is newer than this ringside reads (%d)",
                           (long long)it->extra.version, REC_VERSION);
    replay_p_str(p, "host", r->host, sizeof(r->host));
    replay_p_str(p, "backend", r->backend, sizeof(r->backend));
    replay_p_str(p, "device", r->dev_name, sizeof(r->dev_name));
    replay_p_str(p, "arch", r->dev_arch, sizeof(r->dev_arch));
    r->n_devices = (unsigned)replay_p_int(p, "devices", 0, 0xFFFF);
    replay_parse_device_list(p, r);
    r->start_ns = replay_p_u64(p, "start_ns");
    r->start_wall_ns = replay_p_u64(p, "start_wall_ns");
    it->extra.epochs = (int32_t)replay_p_int(p, "epochs", 0, INT32_MAX);
    it->extra.chunk_bars = (int)replay_p_int(p, "chunk", 0, INT32_MAX);
    replay_parse_job(p, &it->extra);
    it->t_ns = r->start_ns;
}

static void replay_parse_typed(struct replay_p *p, struct replay_item *it) {
    char type[32] = "";
    replay_p_str(p, "type", type, sizeof(type));
    if (p->rc != 0)
        return;
    for (unsigned k = 0; k < EV_KIND_COUNT; k++)
        if (strcmp(type, ev_kind_name(k)) == 0) {
            replay_parse_event(p, k, it);
            return;
        }
    if (strcmp(type, "layout") == 0)
        replay_parse_layout(p, it);
    else if (strcmp(type, "summary") == 0)
        replay_parse_summary(p, it);
    else if (strcmp(type, "run") == 0)
        replay_parse_run(p, it);
    else if (strcmp(type, "call") == 0 || strcmp(type, "rank") == 0 ||
             strcmp(type, "stack") == 0) /* the Python bridge's: for a live watch only */
        it->kind = REPLAY_BLANK;
    else
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "unknown type '%s'", type);
}

int replay_parse_object(json_object *o, struct replay_item *it, char *why, size_t whylen) {
    struct replay_p p = {o, why, whylen, 0};
    it->kind = REPLAY_NONE;
    replay_parse_typed(&p, it);
    return p.rc;
}

int replay_parse_line(const char *line, size_t len, struct replay_item *it, char *why,
                      size_t whylen) {
    it->kind = REPLAY_NONE;
    if (json_text_blank(line, len)) {
        it->kind = REPLAY_BLANK;
        return 0;
    }
    json_object *o = NULL;
    int rc = json_text_parse(line, len, &o, why, whylen);
    if (rc == 0)
        rc = replay_parse_object(o, it, why, whylen);
    json_object_put(o);
    return rc;
}
