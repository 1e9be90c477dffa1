/* Engine configuration: the documented defaults and validation of every field. */
#include "backend/core/errbuf.h"
#include "backend/core/utf8.h"
#include "backend/engine/engine.h"
#include "backend/vpoc/vpoc.h"
#include "backend/vpoc/vpoc_features.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void engine_conf_default(struct engine_conf *c) {
    memset(c, 0, sizeof(*c));
    c->synthetic_days = 60;
    c->seed = 42;
    c->session_start_hour = 18;
    c->chunk_bars = 500;
    c->vpoc.profile = VPOC_CLOSE;
    c->vpoc.tick = 0.25;
    c->vpoc.value_area = 0.70;
    c->vpoc_kernel = COMPUTE_VPOC_PACKED;
    c->horizon = 15;
    c->arch.n_in = FEAT_COUNT;
    c->arch.n_hidden = 2;
    c->arch.hidden[0] = 32;
    c->arch.hidden[1] = 16;
    c->arch.act = MLP_ACT_SILU;
    c->arch.loss = MLP_LOSS_MSE;
    mlp_adam_conf_default(&c->adam);
    c->batch = 256;
    c->epochs = 10;
    c->val_frac = 0.2;
    c->metric_every = 20;
    snprintf(c->output_dir, sizeof(c->output_dir), "%s", "./TRAINING");
    snprintf(c->name, sizeof(c->name), "%s", "vpoc_mlp");
    snprintf(c->backend, sizeof(c->backend), "%s", "auto");
    c->threads = 1;
    mem_conf_default(&c->alloc);
    c->pre_cleanup = true;
    c->comm_timeout_s = 300;
    c->teardown_timeout_s = 30;
}

int engine_devices_parse(const char *s, struct engine_conf *c, char *err, size_t errlen) {
    if (strcmp(s, "all") == 0) {
        c->n_devices = ENGINE_ALL_DEVICES;
        return 0;
    }
    bool seen[ENGINE_MAX_DEVICES] = {false};
    int n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0)
            return errbuf_set(err, errlen, -EINVAL,
                              "--devices '%s': expected device numbers like 0,1 or 0-3, or all", s);
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || b < a)
                return errbuf_set(err, errlen, -EINVAL, "--devices '%s': bad range at '%s'", s, p);
        }
        if (b >= ENGINE_MAX_DEVICES)
            return errbuf_set(err, errlen, -EINVAL, "--devices '%s': device %ld is past %d", s, b,
                              ENGINE_MAX_DEVICES - 1);
        for (long d = a; d <= b; d++) {
            if (seen[d])
                return errbuf_set(err, errlen, -EINVAL, "--devices '%s': device %ld twice", s, d);
            seen[d] = true;
            c->devices[n++] = (int)d;
        }
        if (*end == '\0')
            break;
        if (*end != ',')
            return errbuf_set(err, errlen, -EINVAL, "--devices '%s': unexpected '%c'", s, *end);
        p = end + 1;
    }
    c->n_devices = n;
    return 0;
}

void engine_devices_format(const struct engine_conf *c, char *buf, size_t n) {
    buf[0] = '\0';
    if (c->n_devices == ENGINE_ALL_DEVICES) {
        snprintf(buf, n, "all");
        return;
    }
    size_t len = 0;
    for (int k = 0; k < c->n_devices && len + 1 < n; k++) {
        int w = snprintf(buf + len, n - len, "%s%d", k ? "," : "", c->devices[k]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

static int engine_conf_range(const char *flag, double v, double lo, double hi, char *err,
                             size_t errlen) {
    if (!(v >= lo && v <= hi))
        return errbuf_set(err, errlen, -EINVAL, "%s: %g is out of range [%g, %g]", flag, v, lo, hi);
    return 0;
}

int engine_conf_validate(const struct engine_conf *c, char *err, size_t errlen) {
    int rc = 0;
    if (!c->data_path[0])
        rc = engine_conf_range("--synthetic-days", c->synthetic_days, 3, 100000, err, errlen);
    rc = rc ? rc
            : engine_conf_range("--session-start-hour", c->session_start_hour, 0, 23, err, errlen);
    rc = rc ? rc : engine_conf_range("--chunk", c->chunk_bars, 0, VPOC_CHUNK_MAX, err, errlen);
    if (rc == 0 && (unsigned)c->vpoc_kernel >= COMPUTE_VPOC_KERNEL_COUNT)
        rc = errbuf_set(err, errlen, -EINVAL, "--vpoc-kernel: %d is not a kernel",
                        (int)c->vpoc_kernel);
    rc = rc ? rc : engine_conf_range("--horizon", c->horizon, 1, 100000, err, errlen);
    rc = rc ? rc : engine_conf_range("--batch", c->batch, 1, 1 << 20, err, errlen);
    rc = rc ? rc : engine_conf_range("--epochs", c->epochs, 0, 1e6, err, errlen);
    rc = rc ? rc : engine_conf_range("--lr", c->adam.lr, 1e-12, 10, err, errlen);
    rc = rc ? rc : engine_conf_range("--weight-decay", c->adam.weight_decay, 0, 10, err, errlen);
    rc = rc ? rc : engine_conf_range("--value-area", c->vpoc.value_area, 1e-9, 1, err, errlen);
    rc = rc ? rc : engine_conf_range("--threads", c->threads, 1, 256, err, errlen);
    rc = rc ? rc : engine_conf_range("--device", c->device, 0, TRACE_MAX_DEVICES - 1, err, errlen);
    rc = rc ? rc : engine_conf_range("--val-frac", c->val_frac, 0.01, 0.9, err, errlen);
    rc =
        rc ? rc : engine_conf_range("--comm-timeout", c->comm_timeout_s, 0.001, 86400, err, errlen);
    rc = rc ? rc
            : engine_conf_range("--teardown-timeout", c->teardown_timeout_s, 0.001, 86400, err,
                                errlen);
    if (rc == 0 && !(c->vpoc.tick > 0 && isfinite(c->vpoc.tick)))
        rc = errbuf_set(err, errlen, -EINVAL, "--tick: %g must be a positive number", c->vpoc.tick);
    size_t bad = 0;
    if (rc == 0 && (!c->name[0] || strchr(c->name, '/')))
        rc =
            errbuf_set(err, errlen, -EINVAL, "--name: '%s' must be a non-empty file name", c->name);
    else if (rc == 0 && !utf8_printable(c->name, &bad))
        rc = errbuf_set(err, errlen, -EINVAL,
                        "--name: byte %zu (0x%02x) is not printable UTF-8: the name goes into "
                        "file names and JSON; use printable UTF-8 text",
                        bad + 1, (unsigned)(unsigned char)c->name[bad]);
    if (rc == 0 && !c->output_dir[0])
        rc = errbuf_set(err, errlen, -EINVAL, "--output: empty directory name");
    return rc;
}
