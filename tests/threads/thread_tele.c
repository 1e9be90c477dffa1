/* The telemetry service under threads: its sampling thread (and the fdinfo provider's index
 * thread) publish snapshots of a fixture machine while this thread reads them; every snapshot
 * must be whole, and destroy must stop everything. */
#include "backend/core/errbuf.h"
#include "backend/core/evring.h"
#include "backend/telemetry/tele.h"
#include "tests/support/rs_test.h"
#include "tests/threads/thread_cases.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#define TT_FAIL(...) errbuf_set(why, whylen, -1, __VA_ARGS__)

/* A snapshot of the fixture machine is whole: both GPUs, in order, with their totals. */
static int thread_tele_check(const struct tele_snap *s, char *why, size_t whylen) {
    double v = 0;
    if (s->n_gpus != 2)
        return TT_FAIL("snapshot %llu has %u GPUs", (unsigned long long)s->seq, s->n_gpus);
    if (strcmp(s->gpus[0].pci, "0000:03:00.0") != 0 || strcmp(s->gpus[1].pci, "0000:c5:00.0"))
        return TT_FAIL("snapshot %llu: GPUs out of order", (unsigned long long)s->seq);
    if (!tele_get(&s->gpus[0], TELE_F_VRAM_TOTAL, &v) || v != 25753026560.0)
        return TT_FAIL("snapshot %llu: torn VRAM total %.0f", (unsigned long long)s->seq, v);
    return 0;
}

int thread_case_telemetry(char *why, size_t whylen) {
    struct tele_conf c;
    tele_conf_default(&c);
    c.interval_ns = 0; /* sample back to back: as many publishes as possible */
    snprintf(c.only, sizeof(c.only), "sysfs,debugfs,fdinfo");
    rs_test_fixture("telemetry/rdna3-apu/sys", c.roots.sys, sizeof(c.roots.sys));
    rs_test_fixture("telemetry/rdna3-apu/debugfs", c.roots.debugfs, sizeof(c.roots.debugfs));
    rs_test_fixture("telemetry/rdna3-apu/proc", c.roots.proc, sizeof(c.roots.proc));
    struct evring *ring = NULL;
    struct tele *t = NULL;
    char err[256];
    if (evring_create(&ring, 64) != 0 || tele_create(&t, &c, ring, err, sizeof(err)) != 0 ||
        tele_start(t) != 0) {
        tele_destroy(t);
        evring_destroy(ring);
        return TT_FAIL("cannot start telemetry: %s", err);
    }
    int rc = 0;
    uint64_t seen = 0;
    while (rc == 0 && seen < 50) {
        bool fresh = false;
        const struct tele_snap *s = tele_snap_read(t, &fresh);
        if (!fresh) {
            sched_yield(); /* the next publish is on its way: the thread samples back to back */
            continue;
        }
        rc = thread_tele_check(s, why, whylen);
        seen++;
    }
    tele_destroy(t);
    struct ev e[64];
    size_t n = evring_drain(ring, e, 64); /* the stalled ring's event came through the ring */
    evring_destroy(ring);
    if (rc == 0 && n == 0)
        return TT_FAIL("no event from the providers (the fixture has a stalled ring)");
    return rc;
}
