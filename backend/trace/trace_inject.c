/* Fault-injection specs: "hang:PHASE:SECONDS" and "slow-sync:PHASE:MS". */
#include "backend/core/errbuf.h"
#include "backend/trace/trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The phase named by s[0..n), or -1. */
static int trace_inject_phase(const char *s, size_t n) {
    char name[32];
    if (n == 0 || n >= sizeof(name))
        return -1;
    memcpy(name, s, n);
    name[n] = '\0';
    return ev_phase_from_name(name);
}

int trace_inject_parse(const char *spec, struct trace_inject *out, char *err, size_t errlen) {
    static const char usage[] = "use hang:PHASE:SECONDS or slow-sync:PHASE:MS";
    const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2)
        return errbuf_set(err, errlen, -EINVAL, "--inject '%s': %s", spec, usage);
    size_t kind_n = (size_t)(c1 - spec);
    bool hang = kind_n == 4 && strncmp(spec, "hang", 4) == 0;
    bool slow = kind_n == 9 && strncmp(spec, "slow-sync", 9) == 0;
    if (!hang && !slow)
        return errbuf_set(err, errlen, -EINVAL, "--inject '%s': unknown kind '%.*s' (%s)", spec,
                          (int)kind_n, spec, usage);
    int ph = trace_inject_phase(c1 + 1, (size_t)(c2 - c1 - 1));
    if (ph < 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "--inject '%s': unknown phase '%.*s' (load, vpoc, features, h2d, "
                          "cleanup, forward, backward, optimizer, eval, checkpoint)",
                          spec, (int)(c2 - c1 - 1), c1 + 1);
    char *end;
    double v = strtod(c2 + 1, &end);
    double lo = hang ? 0.001 : 1, hi = hang ? 86400 : 3600000;
    if (end == c2 + 1 || *end || !isfinite(v) || v < lo || v > hi)
        return errbuf_set(err, errlen, -EINVAL,
                          "--inject '%s': %s '%s' is not a number in "
                          "[%g, %g]",
                          spec, hang ? "SECONDS" : "MS", c2 + 1, lo, hi);
    *out = (struct trace_inject){
        .phase = (uint8_t)ph, .once = hang, .extra_ns = (uint64_t)llround(v * (hang ? 1e9 : 1e6))};
    return 0;
}

void trace_inject_format(const struct trace_inject *in, char *buf, size_t n) {
    if (in->once)
        snprintf(buf, n, "hang:%s:%g", ev_phase_name(in->phase), (double)in->extra_ns / 1e9);
    else
        snprintf(buf, n, "slow-sync:%s:%g", ev_phase_name(in->phase), (double)in->extra_ns / 1e6);
}
