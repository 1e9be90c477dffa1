/* Fault-injection specs: "hang:PHASE:SECONDS", "slow-sync:PHASE:MS", "oom:PHASE" and
 * "error:PHASE:NAME" (each with an optional ":devN"), "drop:devN", and the runtime errors
 * error: can name. */
#include "backend/core/errbuf.h"
#include "backend/trace/trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *text;
    int code;
} trace_errors[TRACE_ERR_COUNT] = {
#define X(id, name, code, text) [TRACE_ERR_##id] = {name, text, code},
    TRACE_RUNTIME_ERRORS(X)
#undef X
};

const char *trace_error_name(enum trace_runtime_error e) {
    return e < TRACE_ERR_COUNT ? trace_errors[e].name : "unknown";
}

int trace_error_code(enum trace_runtime_error e) {
    return e < TRACE_ERR_COUNT ? trace_errors[e].code : 0;
}

const char *trace_error_text(enum trace_runtime_error e) {
    return e < TRACE_ERR_COUNT ? trace_errors[e].text : "unknown error";
}

/* What each kind is called and takes after its phase. */
static const struct {
    const char *name;
    const char *usage; /* the whole spec's form */
    const char *arg;   /* what follows the phase, or NULL for nothing */
} trace_kinds[] = {
    [TRACE_FAULT_HANG] = {"hang", "hang:PHASE:SECONDS", "SECONDS"},
    [TRACE_FAULT_SLOW] = {"slow-sync", "slow-sync:PHASE:MS", "MS"},
    [TRACE_FAULT_OOM] = {"oom", "oom:PHASE", NULL},
    [TRACE_FAULT_ERROR] = {"error", "error:PHASE:NAME", "NAME"},
    [TRACE_FAULT_DROP] = {"drop", "drop:devN", NULL},
    [TRACE_FAULT_WRITE] = {"write", "write:checkpoint:N", "N"},
    [TRACE_FAULT_STALL] = {"stall", "stall:checkpoint:N", "N"},
};
#define TRACE_KINDS (sizeof(trace_kinds) / sizeof(trace_kinds[0]))
#define TRACE_USAGE                                                                                \
    "use hang:PHASE:SECONDS, slow-sync:PHASE:MS, oom:PHASE, error:PHASE:NAME, "                    \
    "write:checkpoint:N or stall:checkpoint:N (each may end in :devN), or drop:devN"

/* The phase named by s[0..n), or -1. */
static int trace_inject_phase(const char *s, size_t n) {
    char name[32];
    if (n == 0 || n >= sizeof(name))
        return -1;
    memcpy(name, s, n);
    name[n] = '\0';
    return ev_phase_from_name(name);
}

/* The kind named by s[0..n), or -1. */
static int trace_inject_kind(const char *s, size_t n) {
    for (unsigned k = 0; k < TRACE_KINDS; k++)
        if (strlen(trace_kinds[k].name) == n && strncmp(s, trace_kinds[k].name, n) == 0)
            return (int)k;
    return -1;
}

/* NAME of error:PHASE:NAME into out->error. */
static int trace_inject_error(const char *spec, const char *name, struct trace_inject *out,
                              char *err, size_t errlen) {
    for (unsigned k = 0; k < TRACE_ERR_COUNT; k++)
        if (strcmp(name, trace_errors[k].name) == 0) {
            out->error = (uint8_t)k;
            return 0;
        }
    char names[200] = "";
    for (unsigned k = 0; k < TRACE_ERR_COUNT; k++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k ? ", " : "",
                 trace_errors[k].name);
    return errbuf_set(err, errlen, -EINVAL, "--inject '%s': unknown error '%s' (%s)", spec, name,
                      names);
}

/* SECONDS of hang or MS of slow-sync into out->extra_ns. */
static int trace_inject_time(const char *spec, const char *arg, struct trace_inject *out, char *err,
                             size_t errlen) {
    bool hang = out->kind == TRACE_FAULT_HANG;
    char *end;
    double v = strtod(arg, &end);
    double lo = hang ? 0.001 : 1, hi = hang ? 86400 : 3600000;
    if (end == arg || *end || !isfinite(v) || v < lo || v > hi)
        return errbuf_set(err, errlen, -EINVAL,
                          "--inject '%s': %s '%s' is not a number in [%g, %g]", spec,
                          trace_kinds[out->kind].arg, arg, lo, hi);
    out->extra_ns = (uint64_t)llround(v * (hang ? 1e9 : 1e6));
    return 0;
}

/* N of write:checkpoint:N (1 is the run's first checkpoint file) into out->extra_ns. */
static int trace_inject_nth(const char *spec, const char *arg, struct trace_inject *out, char *err,
                            size_t errlen) {
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || v < 1 || v > 1000000)
        return errbuf_set(err, errlen, -EINVAL,
                          "--inject '%s': N '%s' is not a whole number in [1, 1000000] (the "
                          "nth checkpoint file the run writes)",
                          spec, arg);
    out->extra_ns = (uint64_t)v;
    return 0;
}

/* A trailing ":devN" of spec: N, with *len cut to what comes before it; -1 when there is
 * none; -2 when N is no device number. */
static int trace_inject_dev(const char *spec, size_t *len) {
    const char *c = strrchr(spec, ':');
    if (!c || strncmp(c + 1, "dev", 3) != 0)
        return -1;
    char *end;
    long n = strtol(c + 4, &end, 10);
    if (end == c + 4 || *end || n < 0 || n >= TRACE_MAX_DEVICES)
        return -2;
    *len = (size_t)(c - spec);
    return (int)n;
}

static int trace_inject_parse_one(const char *spec, const char *full, struct trace_inject *out,
                                  char *err, size_t errlen);

int trace_inject_parse(const char *full, struct trace_inject *out, char *err, size_t errlen) {
    char spec[128];
    size_t len = strlen(full);
    int dev = trace_inject_dev(full, &len);
    if (dev == -2)
        return errbuf_set(err, errlen, -EINVAL, "--inject '%s': devN takes a device number 0-%d",
                          full, TRACE_MAX_DEVICES - 1);
    if (len >= sizeof(spec))
        return errbuf_set(err, errlen, -EINVAL, "--inject '%.40s...': too long", full);
    memcpy(spec, full, len);
    spec[len] = '\0';
    if (strcmp(spec, "drop") == 0) {
        if (dev < 0)
            return errbuf_set(err, errlen, -EINVAL, "--inject '%s': use drop:devN", full);
        *out = (struct trace_inject){
            .kind = TRACE_FAULT_DROP, .phase = PHASE_COUNT, .dev = (int16_t)dev};
        return 0;
    }
    int rc = trace_inject_parse_one(spec, full, out, err, errlen);
    if (rc == 0)
        out->dev = (int16_t)dev;
    return rc;
}

static int trace_inject_parse_one(const char *spec, const char *full, struct trace_inject *out,
                                  char *err, size_t errlen) {
    const char *c1 = strchr(spec, ':');
    int kind = c1 ? trace_inject_kind(spec, (size_t)(c1 - spec)) : -1;
    if (!c1)
        return errbuf_set(err, errlen, -EINVAL, "--inject '%s': %s", full, TRACE_USAGE);
    if (kind < 0)
        return errbuf_set(err, errlen, -EINVAL, "--inject '%s': unknown kind '%.*s' (%s)", full,
                          (int)(c1 - spec), spec, TRACE_USAGE "; or kmsg:FILE");
    const char *c2 = strchr(c1 + 1, ':');
    bool wants_arg = trace_kinds[kind].arg != NULL;
    if (wants_arg != (c2 != NULL))
        return errbuf_set(err, errlen, -EINVAL, "--inject '%s': use %s", full,
                          trace_kinds[kind].usage);
    size_t phase_n = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
    int ph = trace_inject_phase(c1 + 1, phase_n);
    if (ph < 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "--inject '%s': unknown phase '%.*s' (load, vpoc, features, h2d, "
                          "cleanup, forward, backward, optimizer, eval, checkpoint, comm-init, "
                          "allreduce, barrier, teardown)",
                          full, (int)phase_n, c1 + 1);
    *out = (struct trace_inject){.kind = (uint8_t)kind, .phase = (uint8_t)ph};
    if (kind == TRACE_FAULT_OOM && ph != PHASE_VPOC && ph != PHASE_H2D)
        return errbuf_set(err, errlen, -EINVAL,
                          "--inject '%s': nothing is allocated in phase %s (oom:vpoc for the "
                          "VPOC chunk buffers, oom:h2d for the training buffers)",
                          full, ev_phase_name((enum ev_phase_id)ph));
    if ((kind == TRACE_FAULT_WRITE || kind == TRACE_FAULT_STALL) && ph != PHASE_CHECKPOINT)
        return errbuf_set(err, errlen, -EINVAL,
                          "--inject '%s': files are written in phase checkpoint alone (use "
                          "%s)",
                          full, trace_kinds[kind].usage);
    if (kind == TRACE_FAULT_ERROR)
        return trace_inject_error(full, c2 + 1, out, err, errlen);
    if (kind == TRACE_FAULT_WRITE || kind == TRACE_FAULT_STALL)
        return trace_inject_nth(full, c2 + 1, out, err, errlen);
    if (wants_arg)
        return trace_inject_time(full, c2 + 1, out, err, errlen);
    return 0;
}

void trace_inject_format(const struct trace_inject *in, char *buf, size_t n) {
    const char *phase = ev_phase_name((enum ev_phase_id)in->phase);
    char dev[16] = "";
    if (in->dev >= 0)
        snprintf(dev, sizeof(dev), ":dev%d", in->dev);
    switch (in->kind) {
    case TRACE_FAULT_DROP:
        snprintf(buf, n, "drop%s", dev);
        return;
    case TRACE_FAULT_HANG:
        snprintf(buf, n, "hang:%s:%g", phase, (double)in->extra_ns / 1e9);
        break;
    case TRACE_FAULT_SLOW:
        snprintf(buf, n, "slow-sync:%s:%g", phase, (double)in->extra_ns / 1e6);
        break;
    case TRACE_FAULT_OOM:
        snprintf(buf, n, "oom:%s", phase);
        break;
    case TRACE_FAULT_WRITE:
    case TRACE_FAULT_STALL:
        snprintf(buf, n, "%s:%s:%llu", trace_kinds[in->kind].name, phase,
                 (unsigned long long)in->extra_ns);
        break;
    default:
        snprintf(buf, n, "error:%s:%s", phase,
                 trace_error_name((enum trace_runtime_error)in->error));
        break;
    }
    size_t len = strlen(buf);
    if (len < n)
        snprintf(buf + len, n - len, "%s", dev);
}
