/* The agent's status line, written with json-c (the telemetry object is tele_json_write's) and
 * read back member by member: unknown members ignored, known ones type-checked. */
#include "tui/agent/agent_status.h"

#include "backend/core/errbuf.h"
#include "backend/core/ev.h"
#include "backend/core/json_text.h"
#include "backend/telemetry/tele_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const agent_status_kmsg_states[] = {
    [KMSG_STATE_OFF] = "off",
    [KMSG_STATE_LIVE] = "live",
    [KMSG_STATE_FILE] = "file",
    [KMSG_STATE_UNREADABLE] = "unreadable",
};
#define AGENT_STATUS_KMSG_STATES                                                                   \
    (sizeof(agent_status_kmsg_states) / sizeof(agent_status_kmsg_states[0]))

static const char *agent_status_kmsg_state(enum kmsg_state s) {
    return (unsigned)s < AGENT_STATUS_KMSG_STATES ? agent_status_kmsg_states[s] : "unreadable";
}

/* ---- writing ---- */

static json_object *agent_status_kmsg(const struct agent_status *s) {
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "state",
                           json_object_new_string(agent_status_kmsg_state(s->kmsg.state)));
    json_object_object_add(o, "reason", json_object_new_string(s->kmsg_reason));
    json_object_object_add(o, "lines", json_object_new_uint64(s->kmsg.lines));
    json_object_object_add(o, "events", json_object_new_uint64(s->kmsg.events));
    json_object_object_add(o, "lost", json_object_new_uint64(s->kmsg.lost));
    json_object_object_add(o, "cut", json_object_new_uint64(s->kmsg.cut));
    json_object_object_add(o, "dropped", json_object_new_uint64(s->kmsg.dropped));
    return o;
}

static json_object *agent_status_inflight(const struct agent_status *s) {
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "dev", json_object_new_int64(s->inflight_dev));
    json_object_object_add(o, "op", json_object_new_string(ev_sync_op_name(s->inflight.op)));
    json_object_object_add(o, "phase", json_object_new_string(ev_phase_name(s->inflight.phase)));
    json_object_object_add(o, "start_ns", json_object_new_uint64(s->inflight.start_ns));
    return o;
}

/* A member that is null when absent; false when it should be there and is not (no memory). */
static bool agent_status_put(json_object *o, const char *key, bool has, json_object *v) {
    json_object_object_add(o, key, has ? v : NULL);
    return !has || v != NULL;
}

int agent_status_write(const struct agent_status *s, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    json_object *o = json_object_new_object();
    if (!o)
        return -ENOMEM;
    json_object_object_add(o, "type", json_object_new_string("status"));
    json_object_object_add(o, "t_ns", json_object_new_uint64(s->t_ns));
    json_object_object_add(o, "control", json_object_new_boolean(s->control));
    bool ok = agent_status_put(o, "telemetry", s->has_tele,
                               s->has_tele ? tele_json_object(&s->tele) : NULL);
    ok &= agent_status_put(o, "kmsg", s->has_kmsg, s->has_kmsg ? agent_status_kmsg(s) : NULL);
    ok &= agent_status_put(o, "inflight", s->has_inflight,
                           s->has_inflight ? agent_status_inflight(s) : NULL);
    const char *text = ok ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE)
                          : NULL;
    if (text && (*out = strdup(text)) != NULL)
        *len = strlen(text);
    json_object_put(o);
    return *out ? 0 : -ENOMEM;
}

/* ---- reading ---- */

/* A parse in progress: the first error sticks. */
struct agent_status_p {
    char *why;
    size_t whylen;
    int rc;
};

static void agent_status_fail(struct agent_status_p *p, const char *key, const char *what) {
    if (p->rc == 0)
        p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "member '%s': %s", key, what);
}

/* Member key of o: NULL when absent or null (required: an error then), or of the wrong type
 * (an error). key_path names it in messages ("kmsg.lines"). */
static json_object *agent_status_get(struct agent_status_p *p, const json_object *o,
                                     const char *key, const char *key_path, json_type want,
                                     bool required) {
    json_object *v = NULL;
    if (p->rc != 0)
        return NULL;
    if (!json_object_object_get_ex(o, key, &v) || !v) {
        if (required)
            agent_status_fail(p, key_path, "missing");
        return NULL;
    }
    if (!json_object_is_type(v, want)) {
        static const char *const what[] = {
            [json_type_null] = "not null",        [json_type_boolean] = "not a boolean",
            [json_type_double] = "not a number",  [json_type_int] = "not an integer",
            [json_type_object] = "not an object", [json_type_array] = "not an array",
            [json_type_string] = "not a string",
        };
        agent_status_fail(p, key_path, what[want]);
        return NULL;
    }
    return v;
}

/* A non-negative integer (0 when absent and not required). */
static uint64_t agent_status_u64(struct agent_status_p *p, const json_object *o, const char *key,
                                 const char *key_path, bool required) {
    json_object *v = agent_status_get(p, o, key, key_path, json_type_int, required);
    if (!v)
        return 0;
    if (json_object_get_int64(v) < 0) {
        agent_status_fail(p, key_path, "negative");
        return 0;
    }
    return json_object_get_uint64(v);
}

static void agent_status_parse_kmsg(struct agent_status_p *p, const json_object *o,
                                    struct agent_status *s) {
    json_object *st = agent_status_get(p, o, "state", "kmsg.state", json_type_string, true);
    json_object *reason = agent_status_get(p, o, "reason", "kmsg.reason", json_type_string, false);
    if (!st)
        return;
    const char *name = json_object_get_string(st);
    unsigned k = 0;
    while (k < AGENT_STATUS_KMSG_STATES && strcmp(agent_status_kmsg_states[k], name) != 0)
        k++;
    if (k == AGENT_STATUS_KMSG_STATES) {
        agent_status_fail(p, "kmsg.state", "unknown value");
        return;
    }
    s->kmsg.state = (enum kmsg_state)k;
    if (reason)
        snprintf(s->kmsg_reason, sizeof(s->kmsg_reason), "%s", json_object_get_string(reason));
    s->kmsg.lines = agent_status_u64(p, o, "lines", "kmsg.lines", false);
    s->kmsg.events = agent_status_u64(p, o, "events", "kmsg.events", false);
    s->kmsg.lost = agent_status_u64(p, o, "lost", "kmsg.lost", false);
    s->kmsg.cut = agent_status_u64(p, o, "cut", "kmsg.cut", false);
    s->kmsg.dropped = agent_status_u64(p, o, "dropped", "kmsg.dropped", false);
    s->has_kmsg = p->rc == 0;
}

static void agent_status_parse_inflight(struct agent_status_p *p, const json_object *o,
                                        struct agent_status *s) {
    uint64_t dev = agent_status_u64(p, o, "dev", "inflight.dev", true);
    json_object *op = agent_status_get(p, o, "op", "inflight.op", json_type_string, true);
    json_object *ph = agent_status_get(p, o, "phase", "inflight.phase", json_type_string, true);
    s->inflight.start_ns = agent_status_u64(p, o, "start_ns", "inflight.start_ns", true);
    if (p->rc != 0)
        return;
    if (dev > 0xFFFF) {
        agent_status_fail(p, "inflight.dev", "out of range");
        return;
    }
    unsigned k = 0;
    while (k < SYNC_OP_COUNT && strcmp(ev_sync_op_name(k), json_object_get_string(op)) != 0)
        k++;
    int phase = ev_phase_from_name(json_object_get_string(ph));
    if (k == SYNC_OP_COUNT || phase < 0) {
        agent_status_fail(p, k == SYNC_OP_COUNT ? "inflight.op" : "inflight.phase",
                          "unknown value");
        return;
    }
    s->inflight_dev = (unsigned)dev;
    s->inflight.op = (uint8_t)k;
    s->inflight.phase = (uint8_t)phase;
    s->has_inflight = true;
}

/* The members, once the line is a JSON object. */
static void agent_status_members(struct agent_status_p *p, const json_object *o,
                                 struct agent_status *s) {
    json_object *type = agent_status_get(p, o, "type", "type", json_type_string, true);
    if (type && strcmp(json_object_get_string(type), "status") != 0)
        agent_status_fail(p, "type", "not \"status\"");
    s->t_ns = agent_status_u64(p, o, "t_ns", "t_ns", true);
    json_object *control = agent_status_get(p, o, "control", "control", json_type_boolean, false);
    s->control = control && json_object_get_boolean(control);
    json_object *tele = agent_status_get(p, o, "telemetry", "telemetry", json_type_object, false);
    json_object *kmsg = agent_status_get(p, o, "kmsg", "kmsg", json_type_object, false);
    json_object *inflight = agent_status_get(p, o, "inflight", "inflight", json_type_object, false);
    if (tele && p->rc == 0) {
        char why[192];
        if (tele_json_read_object(tele, &s->tele, why, sizeof(why)) != 0)
            p->rc = errbuf_set(p->why, p->whylen, -EINVAL, "member 'telemetry': %s", why);
        s->has_tele = p->rc == 0;
        s->tele.t_ns = s->t_ns ? s->t_ns : 1; /* a sample: the agent's time when it was sent */
    }
    if (kmsg)
        agent_status_parse_kmsg(p, kmsg, s);
    if (inflight)
        agent_status_parse_inflight(p, inflight, s);
}

int agent_status_parse(const char *line, size_t len, struct agent_status *s, char *why,
                       size_t whylen) {
    memset(s, 0, sizeof(*s));
    json_object *o = NULL;
    int rc = json_text_parse(line, len, &o, why, whylen);
    if (rc == 0) {
        struct agent_status_p p = {why, whylen, 0};
        agent_status_members(&p, o, s);
        rc = p.rc;
    }
    json_object_put(o);
    if (rc != 0)
        memset(s, 0, sizeof(*s)); /* nothing half-read */
    return rc;
}
