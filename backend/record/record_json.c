/* Events as JSON lines: the schema of headless mode, recordings and the agent's stream
 * (replay_parse.c reads them back). */
#include "backend/record/record_json.h"

#include "backend/core/json_out.h"
#include "backend/kmsg/kmsg_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Appends to a fixed buffer and keeps the total length as snprintf would report it. */
struct rec_json_buf {
    char *p;
    size_t cap, len;
};

static void rec_json_put(struct rec_json_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rec_json_put(struct rec_json_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->len += (size_t)n;
}

static void rec_json_str(struct rec_json_buf *b, const char *key, const char *s) {
    rec_json_put(b, ",\"%s\":\"", key);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    b->len += json_out_escape(room ? b->p + b->len : NULL, room, s);
    rec_json_put(b, "\"");
}

/* JSON has no NaN or infinity: json_out_num writes those as null. */
static void rec_json_num(struct rec_json_buf *b, const char *key, double v) {
    char text[JSON_OUT_NUM_MAX];
    json_out_num(text, sizeof(text), v, JSON_OUT_POINT);
    rec_json_put(b, ",\"%s\":%s", key, text);
}

/* The device an event names; nothing for one about the run as a whole. */
static void rec_json_dev(struct rec_json_buf *b, const struct ev *e) {
    if (e->dev != EV_DEV_NONE)
        rec_json_put(b, ",\"dev\":%u", e->dev);
}

static void rec_json_body(struct rec_json_buf *b, const struct ev *e) {
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        rec_json_put(b, ",\"dev\":%u,\"phase\":\"%s\",\"start_ns\":%llu,\"end_ns\":%llu", e->dev,
                     ev_phase_name(e->u.phase.phase), (unsigned long long)e->u.phase.start_ns,
                     (unsigned long long)e->u.phase.end_ns);
        rec_json_put(b, ",\"epoch\":%d,\"step\":%lld,\"chunk\":%d", e->u.phase.epoch,
                     (long long)e->u.phase.step, e->u.phase.chunk);
        if (e->u.phase.count > 1)
            rec_json_put(b, ",\"count\":%u,\"busy_ns\":%llu", e->u.phase.count,
                         (unsigned long long)e->u.phase.busy_ns);
        return;
    case EV_SYNC:
        rec_json_put(b, ",\"dev\":%u,\"op\":\"%s\",\"start_ns\":%llu,\"dur_ns\":%llu,\"rc\":%d",
                     e->dev, ev_sync_op_name(e->u.sync.op), (unsigned long long)e->u.sync.start_ns,
                     (unsigned long long)e->u.sync.dur_ns, e->u.sync.rc);
        return;
    case EV_MEM:
        rec_json_put(b,
                     ",\"dev\":%u,\"t_ns\":%llu,\"allocated\":%llu,\"reserved\":%llu,"
                     "\"largest_free\":%llu,\"free_blocks\":%u,\"segments\":%u",
                     e->dev, (unsigned long long)e->t_ns,
                     (unsigned long long)e->u.mem.allocated_bytes,
                     (unsigned long long)e->u.mem.reserved_bytes,
                     (unsigned long long)e->u.mem.largest_free_bytes, e->u.mem.free_blocks,
                     e->u.mem.segments);
        rec_json_num(b, "frag", e->u.mem.frag);
        return;
    case EV_METRIC:
        rec_json_dev(b, e);
        rec_json_put(b, ",\"t_ns\":%llu,\"epoch\":%d,\"step\":%lld", (unsigned long long)e->t_ns,
                     e->u.metric.epoch, (long long)e->u.metric.step);
        rec_json_num(b, "loss", e->u.metric.loss);
        if (e->u.metric.has_val)
            rec_json_num(b, "val_loss", e->u.metric.val_loss);
        rec_json_num(b, "samples_per_s", e->u.metric.samples_per_s);
        return;
    case EV_COMMAND:
        rec_json_dev(b, e);
        rec_json_put(b, ",\"t_ns\":%llu,\"cmd\":\"%s\",\"arg\":%lld,\"rc\":%d",
                     (unsigned long long)e->t_ns, ev_cmd_name(e->u.command.cmd),
                     (long long)e->u.command.arg, e->u.command.rc);
        rec_json_str(b, "result", e->u.command.text);
        return;
    case EV_ALERT:
    case EV_LOG:
        rec_json_put(b, ",\"t_ns\":%llu", (unsigned long long)e->t_ns);
        rec_json_dev(b, e);
        rec_json_put(b, ",\"severity\":\"%s\"", ev_severity_name(e->u.text.severity));
        rec_json_str(b, "message", e->u.text.text);
        return;
    case EV_KMSG: {
        unsigned source = e->u.kmsg.source < KMSG_SRC_COUNT ? e->u.kmsg.source : KMSG_SRC_KMSG;
        char members[1536];
        kmsg_json_members(&e->u.kmsg, members, sizeof(members));
        rec_json_put(b, ",\"t_ns\":%llu,\"source\":\"%s\",%s", (unsigned long long)e->t_ns,
                     kmsg_source_name(source), members);
        return;
    }
    case EV_COLLECTIVE: {
        const struct ev_coll *c = &e->u.coll;
        rec_json_put(b,
                     ",\"dev\":%u,\"t_ns\":%llu,\"op\":\"%s\",\"calls\":%u,\"bytes\":%llu,"
                     "\"start_ns\":%llu,\"dur_ns\":%llu,\"max_ns\":%llu,\"epoch\":%d,"
                     "\"step\":%lld,\"rc\":%d",
                     e->dev, (unsigned long long)e->t_ns, ev_coll_op_name(c->op), c->calls,
                     (unsigned long long)c->bytes, (unsigned long long)c->start_ns,
                     (unsigned long long)c->dur_ns, (unsigned long long)c->max_ns, c->epoch,
                     (long long)c->step, c->rc);
        return;
    }
    case EV_KIND_COUNT:
        break;
    }
}

int rec_json_event(const struct ev *e, char *buf, size_t n) {
    struct rec_json_buf b = {buf, n, 0};
    rec_json_put(&b, "{\"type\":\"%s\",\"seq\":%u", ev_kind_name(e->kind), e->seq);
    rec_json_body(&b, e);
    rec_json_put(&b, "}");
    return (int)b.len;
}

int rec_json_summary(const struct engine_result *r, uint64_t dropped, char *buf, size_t n) {
    struct rec_json_buf b = {buf, n, 0};
    rec_json_put(&b, "{\"type\":\"summary\"");
    rec_json_str(&b, "state",
                 r->state == ENGINE_FINISHED ? (r->stopped ? "stopped" : "completed") : "failed");
    rec_json_put(&b, ",\"epochs\":%d,\"steps\":%lld", r->epochs_done, (long long)r->steps);
    if (r->has_train_loss)
        rec_json_num(&b, "train_loss", r->train_loss);
    if (r->has_val) {
        rec_json_num(&b, "val_loss", r->val_loss);
        rec_json_num(&b, "best_val_loss", r->best_val_loss);
    }
    if (r->best_checkpoint[0]) {
        rec_json_put(&b, ",\"best_epoch\":%d", r->best_epoch);
        rec_json_str(&b, "best_checkpoint", r->best_checkpoint);
    }
    rec_json_num(&b, "elapsed_s", r->elapsed_s);
    rec_json_num(&b, "samples_per_s", r->samples_per_s);
    rec_json_put(&b, ",\"dropped_events\":%llu", (unsigned long long)dropped);
    rec_json_str(&b, "checkpoint", r->checkpoint);
    if (r->checkpoint[0])
        rec_json_put(&b, ",\"checkpoint_epoch\":%d", r->checkpoint_epoch);
    if (r->checkpoint_error[0]) { /* the final checkpoint was not written */
        rec_json_str(&b, "checkpoint_error", r->checkpoint_error);
        rec_json_put(&b, ",\"checkpoint_error_epoch\":%d", r->checkpoint_error_epoch);
    }
    if (r->state == ENGINE_FAILED)
        rec_json_str(&b, "error", r->error);
    rec_json_put(&b, "}");
    return (int)b.len;
}
