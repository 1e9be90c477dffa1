/* The kernel-log classifier piece by piece (parsing, classification and grouping, JSON, line
 * splitting, the clock mapping, the remedies rules) against hand-written values. */
#include "backend/core/ev.h"
#include "backend/kmsg/kmsg.h"
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_json.h"
#include "backend/kmsg/kmsg_lines.h"
#include "backend/kmsg/kmsg_parse.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/kmsg/remedies.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(kmsg, .timeout = 60);

#define SHIPPED_REMEDIES RS_FIXTURES "/../../backend/kmsg/remedies.json"

/* ---- helpers ---- */

static void kt_parse(const char *s, struct kmsg_line *l) {
    kmsg_parse_text(s, strlen(s), l);
}

/* l->text[0..len) equals want. */
static void kt_expect_text(const struct kmsg_line *l, const char *want, const char *input) {
    size_t n = strlen(want);
    cr_expect(l->len == n && memcmp(l->text, want, n) == 0, "%s: text '%.*s', expected '%s'", input,
              (int)l->len, l->text, want);
}

/* Events from feeding lines (1-based line numbers) and a final flush; per_line[i]: how many
 * events the feed of line i + 1 returned. */
struct kt_run {
    struct kmsg_event ev[16];
    int n;
    int per_line[16];
    int flushed;
};

static void kt_feed_all(const char *const *lines, int count, bool all, struct kt_run *r) {
    struct kmsg_classifier c;
    struct kmsg_event out[2];
    kmsg_classifier_init(&c, KMSG_SRC_FILE, all);
    memset(r, 0, sizeof(*r));
    for (int i = 0; i < count; i++) {
        struct kmsg_line l;
        kt_parse(lines[i], &l);
        int got = kmsg_classifier_feed(&c, &l, (uint32_t)i + 1, out);
        cr_assert(got >= 0 && got <= 2, "feed returned %d", got);
        r->per_line[i] = got;
        for (int k = 0; k < got; k++)
            r->ev[r->n++] = out[k];
    }
    r->flushed = kmsg_classifier_flush(&c, &out[0]);
    if (r->flushed)
        r->ev[r->n++] = out[0];
    cr_assert_null(kmsg_classifier_pending(&c), "a group is still open after the flush");
}

/* The one event a single line gives (fed, then flushed). */
static struct kmsg_event kt_one(const char *line) {
    struct kt_run r;
    kt_feed_all(&line, 1, false, &r);
    cr_assert_eq(r.n, 1, "'%s': %d events, expected 1", line, r.n);
    return r.ev[0];
}

static void kt_expect_kind(const struct kmsg_event *e, unsigned cat, unsigned sev,
                           unsigned vendor) {
    cr_expect_eq(e->category, cat, "'%s': category %s, expected %s", e->message,
                 kmsg_category_name(e->category), kmsg_category_name(cat));
    cr_expect_eq(e->severity, sev, "'%s': severity %s, expected %s", e->message,
                 ev_severity_name(e->severity), ev_severity_name(sev));
    cr_expect_eq(e->vendor, vendor, "'%s': vendor '%s', expected '%s'", e->message,
                 kmsg_vendor_name(e->vendor), kmsg_vendor_name(vendor));
}

static void kt_expect_pci(const struct kmsg_event *e, const char *pci) {
    cr_expect(e->has & KMSG_HAS(PCI), "'%s': no pci", e->message);
    cr_expect_str_eq(e->pci, pci);
}

/* RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool kt_valid_utf8(const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        unsigned cp, min;
        int k;
        if (*u < 0x80) {
            u++;
            continue;
        }
        if ((*u & 0xe0) == 0xc0) {
            k = 1, cp = *u & 0x1fu, min = 0x80;
        } else if ((*u & 0xf0) == 0xe0) {
            k = 2, cp = *u & 0x0fu, min = 0x800;
        } else if ((*u & 0xf8) == 0xf0) {
            k = 3, cp = *u & 0x07u, min = 0x10000;
        } else {
            return false;
        }
        for (int j = 1; j <= k; j++) {
            if ((u[j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (u[j] & 0x3fu);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        u += k + 1;
    }
    return true;
}

/* ---- kmsg_parse_record ---- */

Test(kmsg, record_real_shape) {
    static const char rec[] = "6,1234,5678901,-;amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n"
                              " SUBSYSTEM=pci\n DEVICE=+pci:0000:03:00.0\n";
    struct kmsg_line l;
    cr_assert_eq(kmsg_parse_record(rec, sizeof(rec) - 1, &l), 0);
    cr_expect_eq(l.prio, 6);
    cr_expect(l.has_seq);
    cr_expect_eq(l.seq, 1234);
    cr_expect(l.has_ts);
    cr_expect_eq(l.ts_ns, 5678901000ull); /* 5678901 us */
    cr_expect_not(l.cont);
    kt_expect_text(&l, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!", rec);
    cr_expect_str_eq(l.device, "+pci:0000:03:00.0");
}

Test(kmsg, record_facility_masked_and_continuation) {
    /* prio field = facility * 8 + level: 30 is facility 3 (daemon), level 6 (info) */
    static const char rec[] = "30,7,1000000,-;systemd[1]: Started something.";
    struct kmsg_line l;
    cr_assert_eq(kmsg_parse_record(rec, sizeof(rec) - 1, &l), 0);
    cr_expect_eq(l.prio, 6);
    cr_expect_not(l.cont);
    cr_expect_str_eq(l.device, "");
    kt_expect_text(&l, "systemd[1]: Started something.", rec);

    static const char cont[] = "4,8,1000001,c;amdgpu: more of the line";
    cr_assert_eq(kmsg_parse_record(cont, sizeof(cont) - 1, &l), 0);
    cr_expect_eq(l.prio, 4);
    cr_expect_eq(l.seq, 8);
    cr_expect(l.cont);
    kt_expect_text(&l, "amdgpu: more of the line", cont);

    /* '+' (a fragment of older kernels' continuations) is not the 'c' flag */
    static const char plus[] = "3,9,5,+;x";
    cr_assert_eq(kmsg_parse_record(plus, sizeof(plus) - 1, &l), 0);
    cr_expect_not(l.cont);
    kt_expect_text(&l, "x", plus);
}

Test(kmsg, record_malformed_header_is_einval_and_whole_text) {
    static const char *const bad[] = {
        "amdgpu 0000:03:00.0: amdgpu: no header at all", /* no ';' */
        "6,1234,5678901,- no semicolon",
        "six,1234,5678901,-;msg", /* non-number prio */
        "6,12x4,5678901,-;msg",   /* non-number seq */
        "6,1234,-5,-;msg",        /* negative time */
        "6,1234;msg",             /* fields missing */
        "6,1234,5678901;msg",     /* flags missing */
        ";msg",                   /* empty header */
        "",                       /* empty record */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct kmsg_line l;
        size_t n = strlen(bad[i]);
        cr_expect_eq(kmsg_parse_record(bad[i], n, &l), -EINVAL, "'%s' parsed", bad[i]);
        cr_expect(l.text == bad[i] && l.len == n, "'%s': text is not the whole buffer", bad[i]);
        cr_expect_not(l.has_ts, "'%s'", bad[i]);
        cr_expect_not(l.has_seq, "'%s'", bad[i]);
        cr_expect_eq(l.prio, -1, "'%s'", bad[i]);
    }
}

/* ---- kmsg_parse_text ---- */

struct kt_text_case {
    const char *in;
    const char *text;
    int prio;
    bool has_ts;
    uint64_t ts_ns;
};

Test(kmsg, text_every_prefix_form) {
    static const struct kt_text_case cases[] = {
        /* dmesg */
        {"[  123.456789] msg", "msg", -1, true, 123456789000ull},
        /* fewer fraction digits: ".5" is half a second */
        {"[12.5] msg", "msg", -1, true, 12500000000ull},
        /* dmesg -r */
        {"<3>[    1.000001] msg", "msg", 3, true, 1000001000ull},
        /* dmesg -T: wall clock, no kernel stamp */
        {"[Sun Feb 23 16:24:18 2025] msg", "msg", -1, false, 0},
        /* dmesg -x */
        {"kern  :err   : [    5.000000] msg", "msg", 3, true, 5000000000ull},
        {"kern  :warn  : [    6.250000] msg", "msg", 4, true, 6250000000ull},
        /* dmesg --time-format iso, journalctl -o short-iso */
        {"2025-01-21T04:41:44,283302+00:00 msg", "msg", -1, false, 0},
        {"2025-01-21T04:41:44+0000 myhost kernel: msg", "msg", -1, false, 0},
        /* talosctl dmesg: host, facility and level, an ISO time in brackets */
        {"192.168.11.119: kern: warning: [2026-04-22T21:27:51.291919134Z]: msg", "msg", 4, false,
         0},
        {"k3s-node3.lab: kern:    info: [2023-08-22T01:37:23.894402442Z]: msg", "msg", 6, false, 0},
        {"node1: kern:     err: [2023-08-22T01:37:23.894402442Z]: msg", "msg", 3, false, 0},
        /* a message whose first word ends in ':' is not a host */
        {"amdgpu: kern: module loaded", "amdgpu: kern: module loaded", -1, false, 0},
        /* journalctl -k (short) */
        {"Nov 24 14:52:39 myhost kernel: msg", "msg", -1, false, 0},
        {"Nov  5 04:05:06 myhost kernel: msg", "msg", -1, false, 0},
        /* ... in other locales: the month as the locale abbreviates it */
        {"Okt 07 13:36:05 lucy kernel: msg", "msg", -1, false, 0},
        {"kv\304\233 25 19:29:48 bc250 kernel: msg", "msg", -1, false, 0},
        {"4\346\234\210 20 19:55:29 Reverier-Arch kernel: msg", "msg", -1, false, 0},
        {"d\303\251c. 05 10:00:00 h kernel: msg", "msg", -1, false, 0},
        /* a number is not a month, a word without a time is no date */
        {"2025 05 10:00:00 msg", "2025 05 10:00:00 msg", -1, false, 0},
        {"ring 12 test failed", "ring 12 test failed", -1, false, 0},
        /* /var/log/kern.log, syslog */
        {"Nov 24 14:52:39 myhost kernel: [   99.000001] msg", "msg", -1, true, 99000001000ull},
        /* journalctl -o short-monotonic */
        {"[  123.456789] myhost kernel: msg", "msg", -1, true, 123456789000ull},
        /* a bare message is left alone */
        {"amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
         "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!", -1, false, 0},
        {"NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
         "bus.",
         "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
         "bus.",
         -1, false, 0},
        /* the DRM error prefix belongs to the message */
        {"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=10, emitted "
         "seq=12",
         "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=10, emitted "
         "seq=12",
         -1, false, 0},
        {"[ 4.5] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* x",
         "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* x", -1, true, 4500000000ull},
        {"[drm] Initialized amdgpu 3.57.0 20150101 for 0000:03:00.0 on minor 0",
         "[drm] Initialized amdgpu 3.57.0 20150101 for 0000:03:00.0 on minor 0", -1, false, 0},
        /* CRLF and LF line ends */
        {"[  1.000000] msg\r\n", "msg", -1, true, 1000000000ull},
        {"plain\r\n", "plain", -1, false, 0},
        {"", "", -1, false, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct kt_text_case *c = &cases[i];
        struct kmsg_line l;
        kt_parse(c->in, &l);
        kt_expect_text(&l, c->text, c->in);
        cr_expect_eq(l.prio, c->prio, "'%s': prio %d, expected %d", c->in, l.prio, c->prio);
        cr_expect_eq(l.has_ts, c->has_ts, "'%s': has_ts %d", c->in, l.has_ts);
        if (c->has_ts)
            cr_expect_eq(l.ts_ns, c->ts_ns, "'%s': ts %llu, expected %llu", c->in,
                         (unsigned long long)l.ts_ns, (unsigned long long)c->ts_ns);
        cr_expect_not(l.has_seq, "'%s'", c->in);
    }
}

Test(kmsg, text_ten_fraction_digits_is_not_a_stamp) {
    static const char in[] = "[1.0123456789] msg";
    struct kmsg_line l;
    kt_parse(in, &l);
    cr_expect_not(l.has_ts);
    kt_expect_text(&l, in, in);
    /* nine digits is the most: nanoseconds */
    kt_parse("[1.012345678] msg", &l);
    cr_expect(l.has_ts);
    cr_expect_eq(l.ts_ns, 1012345678ull);
}

Test(kmsg, text_huge_seconds_do_not_overflow) {
    struct kmsg_line l;
    /* UINT64_MAX ns is 18446744073.709551615 s: the largest whole second that fits with any
     * fraction is 18446744072 */
    kt_parse("[18446744072.999999] msg", &l);
    cr_expect(l.has_ts);
    cr_expect_eq(l.ts_ns, 18446744072999999000ull);
    static const char *const huge[] = {
        "[18446744074.000000] msg",
        "[99999999999999999999.000000] msg",
        "[999999999999999999999999999999.5] msg",
    };
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        kt_parse(huge[i], &l);
        cr_expect_not(l.has_ts, "'%s' gave ts %llu", huge[i], (unsigned long long)l.ts_ns);
        kt_expect_text(&l, huge[i], huge[i]);
    }
}

/* ---- classification: one line per category ---- */

Test(kmsg, ring_timeout_old_and_new_forms) {
    struct kmsg_event e = kt_one("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, "
                                 "signaled seq=10, emitted seq=12");
    kt_expect_kind(&e, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect(e.has & KMSG_HAS(RING));
    cr_expect_str_eq(e.ring, "gfx");
    cr_expect(e.has & KMSG_HAS(SEQ));
    cr_expect_eq(e.seq_signaled, 10);
    cr_expect_eq(e.seq_emitted, 12);
    cr_expect_not(e.has & KMSG_HAS(PCI));
    cr_expect_eq(e.line, 1);
    cr_expect_eq(e.lines, 1);
    cr_expect_eq(e.source, KMSG_SRC_FILE);

    e = kt_one("amdgpu 0000:28:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=10, emitted "
               "seq=12");
    kt_expect_kind(&e, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect_str_eq(e.ring, "gfx_0.0.0");
    cr_expect_eq(e.seq_signaled, 10);
    cr_expect_eq(e.seq_emitted, 12);
    kt_expect_pci(&e, "0000:28:00.0");

    /* 4.x kernels: "last signaled seq=..., last emitted seq=..." */
    e = kt_one("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, last signaled "
               "seq=1719, last emitted seq=1721");
    kt_expect_kind(&e, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect_str_eq(e.ring, "sdma0");
    cr_expect_eq(e.seq_signaled, 1719);
    cr_expect_eq(e.seq_emitted, 1721);
}

Test(kmsg, ring_timeout_soft_recovery_is_a_warning_at_once) {
    struct kmsg_classifier c;
    struct kmsg_event out[2];
    struct kmsg_line l;
    kmsg_classifier_init(&c, KMSG_SRC_KMSG, false);
    kt_parse("amdgpu 0000:28:00.0: amdgpu: ring gfx_0.0.0 timeout, but soft recovered", &l);
    cr_assert_eq(kmsg_classifier_feed(&c, &l, 5, out), 1);
    kt_expect_kind(&out[0], KMSG_CAT_RING_TIMEOUT, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    cr_expect_str_eq(out[0].ring, "gfx_0.0.0");
    cr_expect_not(out[0].has & KMSG_HAS(SEQ));
    cr_expect_eq(out[0].line, 5);
    cr_expect_eq(out[0].source, KMSG_SRC_KMSG);
    cr_expect_null(kmsg_classifier_pending(&c));
}

Test(kmsg, one_line_per_category) {
    struct kmsg_event e;

    /* mes_v11_0.c mes_v11_0_submit_pkt_and_poll_completion() */
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE");
    kt_expect_kind(&e, KMSG_CAT_MES, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    kt_expect_pci(&e, "0000:03:00.0");
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: failed to remove hardware queue from MES, "
               "doorbell=0x1002");
    kt_expect_kind(&e, KMSG_CAT_MES, SEV_ERROR, KMSG_VENDOR_AMDGPU);

    /* amdgpu_device.c amdgpu_device_gpu_recover() */
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: GPU reset begin!");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    kt_expect_pci(&e, "0000:03:00.0");
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: VRAM is lost due to GPU reset!");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: GPU reset(2) succeeded!");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_INFO, KMSG_VENDOR_AMDGPU);
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: Starting gfx_0.0.0 ring reset");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    cr_expect_str_eq(e.ring, "gfx_0.0.0");

    /* kfd_int_process_v11.c: pr_fmt gives "amdgpu: " */
    e = kt_one("amdgpu: sq_intr: error, detail 0x00000000, type 2, sh 0, priv 1, wave_id 0, "
               "simd_id 0, wgp_id 0");
    kt_expect_kind(&e, KMSG_CAT_SQ_INTR, SEV_WARNING, KMSG_VENDOR_KFD);
    e = kt_one("amdgpu: sq_intr: inst, data 0x00000000, sh 0, priv 0, wave_id 1, simd_id 2, "
               "wgp_id 0");
    kt_expect_kind(&e, KMSG_CAT_SQ_INTR, SEV_INFO, KMSG_VENDOR_KFD);

    /* kfd_process.c kfd_process_evict_queues(): pasid printed as 0x%x */
    e = kt_one("amdgpu: Failed to evict queues of pasid 0x8001");
    kt_expect_kind(&e, KMSG_CAT_KFD, SEV_ERROR, KMSG_VENDOR_KFD);
    cr_expect(e.has & KMSG_HAS(PASID));
    cr_expect_eq(e.pasid, 0x8001);
    e = kt_one("amdgpu: Runlist is getting oversubscribed. Expect reduced ROCm performance.");
    kt_expect_kind(&e, KMSG_CAT_KFD, SEV_WARNING, KMSG_VENDOR_KFD);
    e = kt_one("amdgpu: Evicting PASID 0x8002 queues");
    kt_expect_kind(&e, KMSG_CAT_KFD, SEV_INFO, KMSG_VENDOR_KFD);
    cr_expect_eq(e.pasid, 0x8002);

    /* NVRM Xid: 13 is a warning in the catalogue table, 79 an error */
    e = kt_one("NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ESR 0x504648=0x10000");
    kt_expect_kind(&e, KMSG_CAT_XID, SEV_WARNING, KMSG_VENDOR_NVIDIA);
    cr_expect_eq(e.xid, 13);

    /* amdgpu_ring.c amdgpu_ring_test_helper() after a reset */
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 test failed (-110)");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect_str_eq(e.ring, "gfx_0.0.0");
    /* any other amdgpu *ERROR* line */
    e = kt_one("[drm:gfx_v11_0_hw_init [amdgpu]] *ERROR* KCQ enable failed");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    /* the runtime's abort */
    e = kt_one("HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory "
               "beyond the largest legal address. code: 0x29");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_HIP);
    e = kt_one("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_NVIDIA);
    kt_expect_pci(&e, "0000:3b:00.0");
}

Test(kmsg, reset_end_severity_from_ret) {
    struct kmsg_event e = kt_one("amdgpu 0000:03:00.0: amdgpu: GPU reset end with ret = 0");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_INFO, KMSG_VENDOR_AMDGPU);
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: GPU reset end with ret = -110");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_ERROR, KMSG_VENDOR_AMDGPU);
}

Test(kmsg, hip_memory_access_fault) {
    struct kmsg_event e = kt_one("Memory access fault by GPU node-2 (Agent handle: "
                                 "0x55d5d6a8e9a0) on address 0x7f0c2c000000. Reason: Page not "
                                 "present or supervisor privilege.");
    kt_expect_kind(&e, KMSG_CAT_PAGE_FAULT, SEV_ERROR, KMSG_VENDOR_HIP);
    cr_expect(e.has & KMSG_HAS(NODE));
    cr_expect_eq(e.node, 2);
    cr_expect(e.has & KMSG_HAS(ADDR));
    cr_expect_eq(e.addr, 0x7f0c2c000000ull);
    cr_expect_not(e.has & KMSG_HAS(TS));
}

/* ---- NVIDIA ---- */

Test(kmsg, xid_with_pid_and_name) {
    struct kmsg_event e =
        kt_one("NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, name=python3, Ch 00000018, intr "
               "10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f0b_5c000000. "
               "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ");
    kt_expect_kind(&e, KMSG_CAT_XID, SEV_WARNING, KMSG_VENDOR_NVIDIA);
    cr_expect(e.has & KMSG_HAS(XID));
    cr_expect_eq(e.xid, 31);
    kt_expect_pci(&e, "0000:3b:00.0");
    cr_expect(e.has & KMSG_HAS(PID));
    cr_expect_eq(e.pid, 1234);
    cr_expect(e.has & KMSG_HAS(PROCESS));
    cr_expect_str_eq(e.process, "python3");
    cr_expect(e.has & KMSG_HAS(ADDR));
    cr_expect_eq(e.addr, 0x7f0b5c000000ull);
    cr_expect(e.has & KMSG_HAS(CLIENT));
    cr_expect_str_eq(e.client, "GRAPHICS GPCCLIENT_T1_0");
}

Test(kmsg, xid_with_unknown_pid) {
    struct kmsg_event e = kt_one("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                                 "name=<unknown>, GPU has fallen off the bus.");
    kt_expect_kind(&e, KMSG_CAT_XID, SEV_ERROR, KMSG_VENDOR_NVIDIA);
    cr_expect_eq(e.xid, 79);
    kt_expect_pci(&e, "0000:3b:00.0");
    cr_expect_not(e.has & KMSG_HAS(PID));
    cr_expect_not(e.has & KMSG_HAS(PROCESS));
}

Test(kmsg, xid_without_pid) {
    struct kmsg_event e = kt_one("NVRM: Xid (PCI:0000:02:00): 43, Ch 00000010");
    kt_expect_kind(&e, KMSG_CAT_XID, SEV_WARNING, KMSG_VENDOR_NVIDIA);
    cr_expect_eq(e.xid, 43);
    kt_expect_pci(&e, "0000:02:00.0");
    cr_expect_not(e.has & (KMSG_HAS(PID) | KMSG_HAS(PROCESS) | KMSG_HAS(ADDR)));
}

Test(kmsg, nvrm_fallen_off_the_bus_record) {
    static const char *const lines[] = {
        "NVRM: The NVIDIA GPU 0000:b3:00.0",
        "NVRM: (PCI ID: 10de:26b5) installed in this system has",
        "NVRM: fallen off the bus and is not responding to commands.",
    };
    struct kt_run r;
    kt_feed_all(lines, 3, false, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.per_line[0], 0);
    cr_expect_eq(r.per_line[1], 0);
    cr_expect_eq(r.per_line[2], 1, "the event comes out with the line that closes the record");
    kt_expect_kind(&r.ev[0], KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_NVIDIA);
    cr_expect_eq(r.ev[0].line, 1);
    cr_expect_eq(r.ev[0].lines, 3);
    kt_expect_pci(&r.ev[0], "0000:b3:00.0");
    cr_expect_str_eq(r.ev[0].message, "NVRM: The NVIDIA GPU 0000:b3:00.0");
}

Test(kmsg, nvrm_gpu_line_alone_is_no_event) {
    static const char *const lines[] = {
        "NVRM: The NVIDIA GPU 0000:b3:00.0",
        "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
    };
    struct kt_run r;
    kt_feed_all(lines, 2, false, &r);
    cr_expect_eq(r.n, 0, "got a %s event", kmsg_category_name(r.ev[0].category));
    /* and at the end of input too */
    kt_feed_all(lines, 1, false, &r);
    cr_expect_eq(r.n, 0);
}

/* ---- radeon lockups, NVIDIA version mismatches, powerplay ---- */

Test(kmsg, radeon_stall_and_lockup_of_a_ring_are_one_error) {
    static const char *const lines[] = {
        "radeon 0000:01:00.0: ring 0 stalled for more than 10180msec",
        ("radeon 0000:01:00.0: GPU lockup (current fence id 0x000000000005c299 last fence id "
         "0x000000000005c40a on ring 0)"),
        "radeon 0000:01:00.0: GPU reset succeeded, trying to resume",
    };
    struct kt_run r;
    kt_feed_all(lines, 3, false, &r);
    cr_assert_eq(r.n, 2);
    cr_expect_eq(r.per_line[1], 1, "the lockup line closes the stall's group");
    kt_expect_kind(&r.ev[0], KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_DRM);
    cr_expect_eq(r.ev[0].line, 1);
    cr_expect_eq(r.ev[0].lines, 2);
    cr_expect_str_eq(r.ev[0].ring, "0");
    cr_expect_eq(r.ev[0].seq_signaled, 0x5c299);
    cr_expect_eq(r.ev[0].seq_emitted, 0x5c40a);
    kt_expect_pci(&r.ev[0], "0000:01:00.0");
    /* the reset after it is its recovery, and radeon's, not amdgpu's */
    kt_expect_kind(&r.ev[1], KMSG_CAT_GPU_RESET, SEV_INFO, KMSG_VENDOR_DRM);
    struct kmsg_event e = kt_one("radeon 0000:01:00.0: GPU reset failed");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_ERROR, KMSG_VENDOR_DRM);
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: GPU reset succeeded, trying to resume");
    kt_expect_kind(&e, KMSG_CAT_GPU_RESET, SEV_INFO, KMSG_VENDOR_AMDGPU);
}

Test(kmsg, radeon_lockup_of_another_ring_is_an_event_of_its_own) {
    static const char *const lines[] = {
        "radeon 0000:01:00.0: ring 3 stalled for more than 13024msec",
        "radeon 0000:01:00.0: GPU lockup (current fence id 0x0000000000000005 last fence id "
        "0x0000000000000013 on ring 4)",
    };
    struct kt_run r;
    kt_feed_all(lines, 2, false, &r);
    cr_assert_eq(r.n, 2);
    kt_expect_kind(&r.ev[0], KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_DRM);
    cr_expect_str_eq(r.ev[0].ring, "3");
    cr_expect_eq(r.ev[0].lines, 1);
    cr_expect_not(r.ev[0].has & KMSG_HAS(SEQ));
    kt_expect_kind(&r.ev[1], KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_DRM);
    cr_expect_eq(r.ev[1].line, 2);
    cr_expect_str_eq(r.ev[1].ring, "4");
    cr_expect_eq(r.ev[1].seq_signaled, 5);
    cr_expect_eq(r.ev[1].seq_emitted, 0x13);
}

Test(kmsg, radeon_lockup_alone_and_its_older_forms) {
    struct kmsg_event e = kt_one("drmn0: GPU lockup (waiting for 0x0000000000001234 last fence id "
                                 "0x0000000000001230 on ring 1)");
    kt_expect_kind(&e, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_DRM);
    cr_expect_str_eq(e.ring, "1");
    cr_expect_eq(e.seq_signaled, 0x1230);
    cr_expect_eq(e.seq_emitted, 0x1234);
    e = kt_one("radeon 0000:01:00.0: GPU lockup CP stall for more than 10000msec");
    kt_expect_kind(&e, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_DRM);
    /* radeon's other failures reach the last layer */
    e = kt_one("radeon 0000:01:00.0: failed to get a new IB (-35)");
    kt_expect_kind(&e, KMSG_CAT_DRIVER_OTHER, SEV_WARNING, KMSG_VENDOR_DRM);
}

Test(kmsg, nvrm_api_mismatch_record_is_one_error) {
    static const char *const old_form[] = {
        "[ 7386.259769] NVRM: API mismatch: the client has the version 515.48.07, but",
        "               NVRM: this kernel module has the version 510.73.05.  Please",
        "               NVRM: make sure that this kernel module and all NVIDIA driver",
        "               NVRM: components have the same version.",
        "[ 7390.000000] NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x61:0x56:1770)",
    };
    struct kt_run r;
    kt_feed_all(old_form, 5, false, &r);
    cr_assert_eq(r.n, 2);
    cr_expect_eq(r.per_line[3], 1, "the record's last line closes it");
    kt_expect_kind(&r.ev[0], KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_NVIDIA);
    cr_expect_eq(r.ev[0].lines, 4);
    cr_expect_eq(r.ev[1].line, 5, "the next failure is not folded in");
    static const char *const new_form[] = {
        "[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)",
        "               NVRM: has the version 595.84, but this kernel module has",
        "               NVRM: the version 595.80.  Please make sure that this",
        "               NVRM: kernel module and all NVIDIA driver components",
        "               NVRM: have the same version.",
    };
    kt_feed_all(new_form, 5, false, &r);
    cr_assert_eq(r.n, 1);
    kt_expect_kind(&r.ev[0], KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_NVIDIA);
    cr_expect_eq(r.ev[0].lines, 5);
    cr_expect_str_eq(r.ev[0].process, "kwin_wayland");
    cr_expect_eq(r.ev[0].pid, 1005);
    /* rsyslog's one line, and the other modules' version checks */
    struct kmsg_event e =
        kt_one("Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version "
               "535.54.03, but#012NVRM: this kernel module has the version 530.30.02.");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_NVIDIA);
    e = kt_one("nvidia-modeset: Version mismatch: nvidia.ko(410.73) nvidia-modeset.ko(390.87)");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_NVIDIA);
}

Test(kmsg, powerplay_avfs_and_smu7_messages_are_warnings) {
    struct kmsg_event e = kt_one("amdgpu: [powerplay] [AVFS] Something is broken. See log!");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    e = kt_one("[AVFS] Something is broken. See log!");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    e = kt_one("amdgpu: [powerplay] AVFS failed status is 5!");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    e = kt_one(" failed to send message 146 ret is 0 ");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    e = kt_one(" failed to send pre message 14a ret is 0 ");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
}

/* ---- grouping ---- */

static const char kt_timeout_new[] =
    "amdgpu 0000:28:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=10, emitted seq=12";

Test(kmsg, ring_timeout_and_process_line_are_one_event) {
    static const char *const lines[] = {
        kt_timeout_new,
        "amdgpu 0000:28:00.0: amdgpu:  Process information: process python3 pid 4242 thread "
        "python3 pid 4243",
    };
    struct kt_run r;
    kt_feed_all(lines, 2, false, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.per_line[0], 0, "the timeout waits for its process line");
    cr_expect_eq(r.per_line[1], 1, "the process line closes the group");
    cr_expect_eq(r.flushed, 0);
    const struct kmsg_event *e = &r.ev[0];
    kt_expect_kind(e, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect_eq(e->line, 1);
    cr_expect_eq(e->lines, 2);
    cr_expect_str_eq(e->ring, "gfx_0.0.0");
    cr_expect_eq(e->seq_signaled, 10);
    cr_expect_eq(e->seq_emitted, 12);
    kt_expect_pci(e, "0000:28:00.0");
    cr_expect(e->has & KMSG_HAS(PID));
    cr_expect_eq(e->pid, 4242);
    cr_expect(e->has & KMSG_HAS(TID));
    cr_expect_eq(e->tid, 4243);
    cr_expect(e->has & KMSG_HAS(PROCESS));
    cr_expect_str_eq(e->process, "python3");
    cr_expect(e->has & KMSG_HAS(THREAD));
    cr_expect_str_eq(e->thread, "python3");
    cr_expect_str_eq(e->message, kt_timeout_new);
}

Test(kmsg, process_line_with_unknown_process_sets_nothing) {
    static const char *const lines[] = {
        kt_timeout_new,
        "amdgpu 0000:28:00.0: amdgpu:  Process information: process  pid 0 thread  pid 0",
    };
    struct kt_run r;
    kt_feed_all(lines, 2, false, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.ev[0].lines, 2);
    cr_expect_not(r.ev[0].has &
                      (KMSG_HAS(PID) | KMSG_HAS(TID) | KMSG_HAS(PROCESS) | KMSG_HAS(THREAD)),
                  "has = %#x", r.ev[0].has);
}

static const char *const kt_fault[] = {
    "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32771)",
    ("amdgpu 0000:03:00.0: amdgpu:   in page starting at address 0x00007f1234560000 from IH client "
     "0x1b (UTCL2)"),
    "amdgpu 0000:03:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00B41051",
    "amdgpu 0000:03:00.0: amdgpu: \t Faulty UTCL2 client ID: CPC (0x5)",
    "amdgpu 0000:03:00.0: amdgpu: \t MORE_FAULTS: 0x1",
};

static void kt_expect_fault(const struct kmsg_event *e) {
    kt_expect_kind(e, KMSG_CAT_PAGE_FAULT, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect_eq(e->line, 1);
    cr_expect_eq(e->lines, 5);
    kt_expect_pci(e, "0000:03:00.0");
    cr_expect(e->has & KMSG_HAS(ADDR));
    cr_expect_eq(e->addr, 0x7f1234560000ull);
    cr_expect(e->has & KMSG_HAS(CLIENT));
    cr_expect_str_eq(e->client, "CPC");
    cr_expect(e->has & KMSG_HAS(VMID));
    cr_expect_eq(e->vmid, 3);
    cr_expect(e->has & KMSG_HAS(PASID));
    cr_expect_eq(e->pasid, 32771);
}

Test(kmsg, page_fault_group_closed_by_next_line) {
    const char *lines[6];
    memcpy(lines, kt_fault, sizeof(kt_fault));
    lines[5] = "usb 1-1: new high-speed USB device number 2 using xhci_hcd";
    struct kt_run r;
    kt_feed_all(lines, 6, false, &r);
    cr_assert_eq(r.n, 1);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(r.per_line[i], 0, "line %d returned an event inside the group", i + 1);
    cr_expect_eq(r.per_line[5], 1, "the unrelated line closes the group");
    cr_expect_eq(r.flushed, 0);
    kt_expect_fault(&r.ev[0]);
}

Test(kmsg, page_fault_group_closed_by_flush) {
    struct kt_run r;
    kt_feed_all(kt_fault, 5, false, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.flushed, 1);
    kt_expect_fault(&r.ev[0]);
}

Test(kmsg, page_fault_with_process_in_header) {
    static const char *const lines[] = {
        "amdgpu 0000:03:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:8 "
        "pasid:32769, for process python3 pid 4242 thread pt_main_thread pid 4250)",
        "amdgpu 0000:03:00.0: amdgpu:   in page starting at address 0x00007f0000001000 from "
        "client 18",
    };
    struct kt_run r;
    kt_feed_all(lines, 2, false, &r);
    cr_assert_eq(r.n, 1);
    kt_expect_kind(&r.ev[0], KMSG_CAT_PAGE_FAULT, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect_eq(r.ev[0].lines, 2);
    cr_expect_eq(r.ev[0].vmid, 8);
    cr_expect_eq(r.ev[0].pasid, 32769);
    cr_expect_eq(r.ev[0].pid, 4242);
    cr_expect_str_eq(r.ev[0].process, "python3");
    cr_expect_eq(r.ev[0].tid, 4250);
    cr_expect_str_eq(r.ev[0].thread, "pt_main_thread");
    cr_expect_eq(r.ev[0].addr, 0x7f0000001000ull);
}

Test(kmsg, unrelated_line_in_between_closes_the_group) {
    static const char *const lines[] = {
        "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32771)",
        "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
        ("amdgpu 0000:03:00.0: amdgpu:   in page starting at address 0x00007f1234560000 from IH "
         "client 0x1b (UTCL2)"),
        "amdgpu 0000:03:00.0: amdgpu: \t Faulty UTCL2 client ID: CPC (0x5)",
    };
    struct kt_run r;
    kt_feed_all(lines, 4, false, &r);
    cr_assert_eq(r.n, 1, "%d events", r.n);
    cr_expect_eq(r.per_line[1], 1);
    cr_expect_eq(r.ev[0].lines, 1);
    cr_expect_not(r.ev[0].has & (KMSG_HAS(ADDR) | KMSG_HAS(CLIENT)),
                  "the late follow-up lines were folded in");
}

Test(kmsg, group_event_comes_before_the_new_lines_event) {
    static const char *const lines[] = {
        kt_timeout_new,
        "amdgpu 0000:28:00.0: amdgpu: GPU reset begin!",
    };
    struct kt_run r;
    kt_feed_all(lines, 2, false, &r);
    cr_assert_eq(r.n, 2);
    cr_expect_eq(r.per_line[1], 2);
    cr_expect_eq(r.ev[0].category, KMSG_CAT_RING_TIMEOUT);
    cr_expect_eq(r.ev[0].line, 1);
    cr_expect_eq(r.ev[1].category, KMSG_CAT_GPU_RESET);
    cr_expect_eq(r.ev[1].line, 2);
}

Test(kmsg, pending_reports_the_open_group) {
    struct kmsg_classifier c;
    struct kmsg_event out[2];
    struct kmsg_line l;
    kmsg_classifier_init(&c, KMSG_SRC_FILE, false);
    cr_expect_null(kmsg_classifier_pending(&c));
    cr_expect_eq(kmsg_classifier_flush(&c, &out[0]), 0);
    for (int i = 0; i < 3; i++) {
        kt_parse(kt_fault[i], &l);
        cr_assert_eq(kmsg_classifier_feed(&c, &l, (uint32_t)i + 10, out), 0);
        const struct kmsg_event *p = kmsg_classifier_pending(&c);
        cr_assert_not_null(p, "no open group after line %d", i + 1);
        cr_expect_eq(p->category, KMSG_CAT_PAGE_FAULT);
        cr_expect_eq(p->line, 10);
        cr_expect_eq(p->lines, (uint32_t)i + 1);
    }
    cr_expect_eq(kmsg_classifier_flush(&c, &out[0]), 1);
    cr_expect_eq(out[0].lines, 3);
    cr_expect_null(kmsg_classifier_pending(&c));
    cr_expect_eq(kmsg_classifier_flush(&c, &out[0]), 0, "flushed twice");
}

/* ---- benign lines, chatter, records ---- */

static const char *const kt_benign[] = {
    ("amdgpu 0000:03:00.0: amdgpu: VRAM: 24560M 0x0000008000000000 - 0x00000085FEFFFFFF (24560M "
     "used)"),
    "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 uses VM inv eng 0 on hub 0",
    "[drm] Initialized amdgpu 3.57.0 20150101 for 0000:03:00.0 on minor 0",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
    "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
};

Test(kmsg, benign_lines_give_no_event) {
    struct kt_run r;
    kt_feed_all(kt_benign, 5, false, &r);
    cr_expect_eq(r.n, 0, "'%s' flagged as %s", r.n ? r.ev[0].message : "",
                 r.n ? kmsg_category_name(r.ev[0].category) : "");
}

/* ---- the last layer: driver lines no rule names that speak of failure ---- */

Test(kmsg, driver_other_takes_failure_words_of_driver_lines) {
    struct kmsg_event e = kt_one("amdgpu 0000:03:00.0: amdgpu: Failed to disable gfxoff!");
    kt_expect_kind(&e, KMSG_CAT_DRIVER_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    kt_expect_pci(&e, "0000:03:00.0");
    /* words for a device that stopped working are errors; any case */
    e = kt_one("amdgpu 0000:03:00.0: amdgpu: IP block:gfx_v11_0 is hung!");
    kt_expect_kind(&e, KMSG_CAT_DRIVER_OTHER, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    e = kt_one("nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state");
    kt_expect_kind(&e, KMSG_CAT_DRIVER_OTHER, SEV_WARNING, KMSG_VENDOR_NVIDIA);
    e = kt_one("[drm] psp gfx command UNKNOWN CMD(0xFFFFFFFF) failed and response status is "
               "(0xFFFFFFFF)");
    kt_expect_kind(&e, KMSG_CAT_DRIVER_OTHER, SEV_WARNING, KMSG_VENDOR_DRM);
    e = kt_one("kfd kfd: amdgpu: Pasid 0x8001 could not be restored, timed out");
    kt_expect_kind(&e, KMSG_CAT_DRIVER_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    e = kt_one("drmn0: IP block suspend did not finish: Not Ready");
    kt_expect_kind(&e, KMSG_CAT_DRIVER_OTHER, SEV_WARNING, KMSG_VENDOR_DRM);
}

static const char *const kt_not_driver_other[] = {
    /* a failure word inside a longer word or joined by '_' is not the word */
    "amdgpu 0000:03:00.0: amdgpu: \t WALKER_ERROR: 0x0",
    "amdgpu 0000:03:00.0: amdgpu:   Faulty UTCL2 client ID: TCP (0x8)",
    "amdgpu 0000:03:00.0: amdgpu: errorless_mode 1 hanging_off 0",
    /* driver words in a line another program printed */
    "systemd[1]: nvidia-persistenced.service: Failed with result 'exit-code'.",
    "snd_hda_intel 0000:03:00.1: amdgpu bound, codec probe failed",
    /* healthy systems' lines on the benign list */
    "nvidia: module verification failed: signature and/or required key missing - tainting kernel",
    "amdgpu 0000:04:00.0: amdgpu: Secure display: Generic Failure.",
    "[drm] psp gfx command LOAD_TA(0x1) failed and response status is (0x7)",
    "nvidia-gpu 0000:01:00.3: i2c timeout error e0000000",
    "[    1.924873] NVRM objClInitPcieChipset: *** Chipset Setup Function Error!",
    "amdgpu: [powerplay] Can't find requested voltage id in vdd_dep_on_sclk table!",
    /* a driver line without failure words */
    "amdgpu 0000:03:00.0: amdgpu: SMU is initialized successfully!",
};

Test(kmsg, driver_other_leaves_words_inside_words_other_programs_and_benign_lines) {
    size_t n = sizeof(kt_not_driver_other) / sizeof(kt_not_driver_other[0]);
    for (size_t i = 0; i < n; i++) {
        struct kt_run r;
        kt_feed_all(&kt_not_driver_other[i], 1, false, &r);
        cr_expect_eq(r.n, 0, "'%s' flagged as %s", kt_not_driver_other[i],
                     r.n ? kmsg_category_name(r.ev[0].category) : "");
    }
}

Test(kmsg, rules_and_error_markers_come_before_the_last_layer) {
    /* a rule names it: its own category and severity, not driver_other */
    struct kmsg_event e = kt_one("amdgpu 0000:03:00.0: amdgpu: resume of IP block <smu> failed -5");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    e = kt_one("[drm] Fence fallback timer expired on ring sdma0");
    kt_expect_kind(&e, KMSG_CAT_RING_TIMEOUT, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    cr_expect_str_eq(e.ring, "sdma0");
    /* FreeBSD drm-kmod's error marker is an error marker */
    e = kt_one("[drm ERROR :amdgpu_bo_init] Unable to set WC memtype for the aperture base");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    e = kt_one("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 33 LTSSM Fault Up");
    kt_expect_kind(&e, KMSG_CAT_FATAL_OTHER, SEV_ERROR, KMSG_VENDOR_NVIDIA);
    kt_expect_pci(&e, "0000:05:00.0");
}

Test(kmsg, all_shows_gpu_driver_chatter_with_its_vendor) {
    struct kt_run r;
    kt_feed_all(kt_benign, 5, true, &r);
    cr_assert_eq(r.n, 4, "%d events", r.n);
    static const unsigned vendors[] = {KMSG_VENDOR_AMDGPU, KMSG_VENDOR_AMDGPU, KMSG_VENDOR_AMDGPU,
                                       KMSG_VENDOR_NVIDIA};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(r.ev[i].category, KMSG_CAT_NONE, "line %d", i + 1);
        cr_expect_eq(r.ev[i].vendor, vendors[i], "line %d: vendor '%s'", i + 1,
                     kmsg_vendor_name(r.ev[i].vendor));
        cr_expect_eq(r.ev[i].line, (uint32_t)i + 1);
        cr_expect_str_eq(r.ev[i].message, kt_benign[i]);
    }
    cr_expect_eq(r.per_line[4], 0, "the USB line came out");
}

/* A /dev/kmsg record through the parser and the classifier. */
static int kt_feed_record(struct kmsg_classifier *c, const char *rec, struct kmsg_event out[2]) {
    struct kmsg_line l;
    cr_assert_eq(kmsg_parse_record(rec, strlen(rec), &l), 0, "'%s'", rec);
    return kmsg_classifier_feed(c, &l, 0, out);
}

Test(kmsg, error_level_record_nobody_names_is_fatal_other) {
    struct kmsg_classifier c;
    struct kmsg_event out[2];
    kmsg_classifier_init(&c, KMSG_SRC_KMSG, false);
    cr_assert_eq(kt_feed_record(&c,
                                "3,500,1000000,-;amdgpu 0000:03:00.0: amdgpu: failed to write reg "
                                "28b4 wait reg 28c6\n SUBSYSTEM=pci\n DEVICE=+pci:0000:03:00.0\n",
                                out),
                 1);
    kt_expect_kind(&out[0], KMSG_CAT_FATAL_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    cr_expect_eq(out[0].ts_ns, 1000000000ull);
    cr_expect(out[0].has & KMSG_HAS(TS));
    cr_expect_eq(out[0].source, KMSG_SRC_KMSG);
    cr_expect_str_eq(out[0].message,
                     "amdgpu 0000:03:00.0: amdgpu: failed to write reg 28b4 wait reg 28c6");
    /* the same text at info level reaches only the last layer: its failure word makes it a
     * driver_other warning */
    cr_expect_eq(kt_feed_record(&c,
                                "6,501,1000001,-;amdgpu 0000:03:00.0: amdgpu: failed to write reg "
                                "28b4 wait reg 28c6\n",
                                out),
                 1);
    kt_expect_kind(&out[0], KMSG_CAT_DRIVER_OTHER, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    /* and at info level without a failure word it is chatter */
    cr_expect_eq(
        kt_feed_record(&c, "6,504,1000003,-;amdgpu 0000:03:00.0: amdgpu: SE 4, SH per SE 2\n", out),
        0);
    /* and an error-level record from anything else is not ours */
    cr_expect_eq(
        kt_feed_record(&c, "3,502,1000002,-;usb 1-1: device descriptor read/64, error -71", out),
        0);
    /* NVIDIA's driver prints its load banner at KERN_ERR (seen on an H100): not a failure */
    cr_expect_eq(kt_feed_record(&c,
                                "3,503,1042838,-;NVRM: loading NVIDIA UNIX Open Kernel Module for "
                                "x86_64  580.159.04  Release Build  (nixbld@)  ",
                                out),
                 0);
}

Test(kmsg, pci_from_device_dictionary) {
    struct kmsg_classifier c;
    struct kmsg_event out[2];
    kmsg_classifier_init(&c, KMSG_SRC_KMSG, false);
    cr_assert_eq(kt_feed_record(&c,
                                "4,77,2000000,-;amdgpu: GPU reset begin!\n SUBSYSTEM=pci\n"
                                " DEVICE=+pci:0000:0c:00.0\n",
                                out),
                 1);
    kt_expect_kind(&out[0], KMSG_CAT_GPU_RESET, SEV_WARNING, KMSG_VENDOR_AMDGPU);
    kt_expect_pci(&out[0], "0000:0c:00.0");
    /* the message's own address wins over the dictionary's */
    cr_assert_eq(kt_feed_record(&c,
                                "4,78,2000001,-;amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n"
                                " DEVICE=+pci:0000:0c:00.0\n",
                                out),
                 1);
    kt_expect_pci(&out[0], "0000:03:00.0");
    /* a DEVICE= that is not a PCI device gives none */
    cr_assert_eq(
        kt_feed_record(&c, "4,79,2000002,-;amdgpu: GPU reset begin!\n DEVICE=c226:0\n", out), 1);
    cr_expect_not(out[0].has & KMSG_HAS(PCI), "pci '%s'", out[0].pci);
}

Test(kmsg, classify_line_on_its_own) {
    struct kmsg_line l;
    struct kmsg_event e;
    kt_parse("[  812.345678] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, "
             "signaled seq=10, emitted seq=12",
             &l);
    cr_assert(kmsg_classify_line(&l, &e));
    kt_expect_kind(&e, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, KMSG_VENDOR_AMDGPU);
    cr_expect_eq(e.lines, 1);
    cr_expect(e.has & KMSG_HAS(TS));
    cr_expect_eq(e.ts_ns, 812345678000ull);
    cr_expect_eq(e.seq_emitted, 12);
    cr_expect_str_eq(e.message, "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, "
                                "signaled seq=10, emitted seq=12");

    kt_parse(kt_benign[1], &l);
    cr_expect_not(kmsg_classify_line(&l, &e));
    cr_expect_eq(e.category, KMSG_CAT_NONE);
    cr_expect_eq(e.vendor, KMSG_VENDOR_AMDGPU);

    kt_parse(kt_benign[4], &l);
    cr_expect_not(kmsg_classify_line(&l, &e));
    cr_expect_eq(e.category, KMSG_CAT_NONE);
    cr_expect_eq(e.vendor, KMSG_VENDOR_NONE);
}

/* ---- robustness ---- */

Test(kmsg, long_message_cut_on_a_character_boundary) {
    /* 45 bytes of ASCII, then 60 three-byte euro signs: 175 bytes fit in message (176 with
     * the NUL); 45 + 43 * 3 = 174, the 44th sign would end at 177 */
    static const char head[] = "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!";
    cr_assert_eq(strlen(head), 45);
    char in[512];
    strcpy(in, head);
    for (int i = 0; i < 60; i++)
        strcat(in, "\xe2\x82\xac");
    struct kmsg_event e = kt_one(in);
    cr_expect_eq(e.category, KMSG_CAT_GPU_RESET);
    cr_expect_eq(strlen(e.message), 174);
    cr_expect_eq(memcmp(e.message, in, 174), 0);
    cr_expect(kt_valid_utf8(e.message), "message is not valid UTF-8");
}

Test(kmsg, control_and_invalid_bytes_become_question_marks) {
    /* \x01 and \x7f: control; \xff: never in UTF-8; \xc3 then '(': lead without continuation;
     * \xc0\x80: overlong NUL; \xed\xa0\x80: a surrogate; \xe2\x82 at the end: cut short */
    struct kmsg_event e = kt_one("amdgpu 0000:03:00.0: amdgpu: GPU reset begin! a\x01"
                                 "b\x7f"
                                 "c\xff"
                                 "d\xc3("
                                 "e\xc0\x80"
                                 "f\xed\xa0\x80"
                                 "g\xc3\xa9"
                                 "h\xe2\x82");
    cr_expect_str_eq(e.message, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin! a?b?c?d?(e??f???g"
                                "\xc3\xa9"
                                "h??");
    cr_expect(kt_valid_utf8(e.message));
}

Test(kmsg, huge_and_odd_lines_do_not_crash) {
    size_t n = 100 * 1024;
    char *big = malloc(n + 16);
    cr_assert_not_null(big);
    memset(big, 'A', n);
    big[n] = '\0';
    struct kt_run r;
    const char *one = big;
    kt_feed_all(&one, 1, true, &r);
    cr_expect_eq(r.n, 0, "a line of A's is no driver's");

    memcpy(big, "amdgpu: ", 8);
    kt_feed_all(&one, 1, true, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.ev[0].category, KMSG_CAT_NONE);
    cr_expect_eq(strlen(r.ev[0].message), KMSG_MSG_BYTES - 1);
    free(big);

    static const char *const odd[] = {"%{", "%{}", "amdgpu: %{", "%{pid}%{*}%{"};
    kt_feed_all(odd, 4, false, &r);
    cr_expect_eq(r.n, 0);

    /* template syntax in the input is just text: the seq values do not parse */
    static const char *const tmpl[] = {
        "amdgpu: ring %{ring} timeout, signaled seq=%{, emitted seq=%{seq_emitted}"};
    kt_feed_all(tmpl, 1, false, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.ev[0].category, KMSG_CAT_RING_TIMEOUT);
    cr_expect_not(r.ev[0].has & KMSG_HAS(SEQ));
}

/* ---- kmsg_json_members ---- */

static struct kmsg_event kt_json_event(void) {
    struct kmsg_event e;
    memset(&e, 0, sizeof(e));
    e.line = 7;
    e.ts_ns = 12500000000ull;
    e.vendor = KMSG_VENDOR_AMDGPU;
    e.category = KMSG_CAT_RING_TIMEOUT;
    e.severity = SEV_ERROR;
    e.lines = 2;
    e.has = KMSG_HAS(TS) | KMSG_HAS(PCI) | KMSG_HAS(RING) | KMSG_HAS(SEQ) | KMSG_HAS(PID) |
            KMSG_HAS(PROCESS) | KMSG_HAS(TID) | KMSG_HAS(THREAD);
    strcpy(e.pci, "0000:28:00.0");
    strcpy(e.ring, "gfx_0.0.0");
    e.seq_signaled = 10;
    e.seq_emitted = 12;
    e.pid = 4242;
    strcpy(e.process, "py\"x");
    e.tid = 4243;
    strcpy(e.thread, "th\\r");
    strcpy(e.message, "say \"hi\" C:\\dir\x01\tend");
    /* set but not flagged: must not appear */
    e.pasid = 99;
    e.vmid = 5;
    e.addr = 0x1000;
    e.xid = 79;
    e.node = 1;
    strcpy(e.client, "TCP");
    return e;
}

static const char kt_json_want[] =
    "\"line\":7,\"ts\":12.500000,\"vendor\":\"amdgpu\",\"category\":\"ring_timeout\","
    "\"severity\":\"error\",\"pci\":\"0000:28:00.0\",\"ring\":\"gfx_0.0.0\","
    "\"seq_signaled\":10,\"seq_emitted\":12,\"pid\":4242,\"process\":\"py\\\"x\","
    "\"tid\":4243,\"thread\":\"th\\\\r\",\"lines\":2,"
    "\"message\":\"say \\\"hi\\\" C:\\\\dir\\u0001\\u0009end\"";

Test(kmsg, json_members_exact) {
    struct kmsg_event e = kt_json_event();
    char buf[1024];
    size_t n = kmsg_json_members(&e, buf, sizeof(buf));
    cr_expect_str_eq(buf, kt_json_want);
    cr_expect_eq(n, strlen(buf));
}

Test(kmsg, json_members_other_fields_and_null_ts) {
    struct kmsg_event e;
    memset(&e, 0, sizeof(e));
    e.line = 3;
    e.vendor = KMSG_VENDOR_NVIDIA;
    e.category = KMSG_CAT_XID;
    e.severity = SEV_ERROR;
    e.lines = 1;
    e.has = KMSG_HAS(PCI) | KMSG_HAS(XID) | KMSG_HAS(PASID) | KMSG_HAS(VMID) | KMSG_HAS(ADDR) |
            KMSG_HAS(CLIENT) | KMSG_HAS(NODE);
    e.ts_ns = 5000000000ull; /* no TS bit: null */
    strcpy(e.pci, "0000:3b:00.0");
    e.xid = 79;
    e.pasid = 32771;
    e.vmid = 3;
    e.addr = 0x7f0b5c000000ull;
    strcpy(e.client, "GRAPHICS GPCCLIENT_T1_0");
    e.node = 2;
    strcpy(e.message, "m");
    char buf[1024];
    kmsg_json_members(&e, buf, sizeof(buf));
    cr_expect_str_eq(buf, "\"line\":3,\"ts\":null,\"vendor\":\"nvidia\",\"category\":\"xid\","
                          "\"severity\":\"error\",\"pci\":\"0000:3b:00.0\",\"xid\":79,"
                          "\"xid_meaning\":\"GPU has fallen off the bus\",\"pasid\":32771,"
                          "\"vmid\":3,\"addr\":\"0x7f0b5c000000\","
                          "\"client\":\"GRAPHICS GPCCLIENT_T1_0\",\"node\":2,\"message\":\"m\"");

    /* ts keeps microseconds: 3.000123456 s prints as 3.000123 */
    memset(&e, 0, sizeof(e));
    e.has = KMSG_HAS(TS);
    e.ts_ns = 3000123456ull;
    e.lines = 1;
    kmsg_json_members(&e, buf, sizeof(buf));
    cr_expect_str_eq(buf, "\"line\":0,\"ts\":3.000123,\"vendor\":\"\",\"category\":\"none\","
                          "\"severity\":\"info\",\"message\":\"\"");
}

Test(kmsg, json_members_parse_as_json) {
    struct kmsg_event e = kt_json_event();
    char buf[1024];
    buf[0] = '{';
    size_t n = kmsg_json_members(&e, buf + 1, sizeof(buf) - 3);
    memcpy(buf + 1 + n, "}", 2);
    struct json_object *o = json_tokener_parse(buf);
    cr_assert_not_null(o, "does not parse: %s", buf);
    struct json_object *v = NULL;
    cr_assert(json_object_object_get_ex(o, "message", &v));
    cr_expect_str_eq(json_object_get_string(v), "say \"hi\" C:\\dir\x01\tend");
    cr_assert(json_object_object_get_ex(o, "process", &v));
    cr_expect_str_eq(json_object_get_string(v), "py\"x");
    cr_assert(json_object_object_get_ex(o, "thread", &v));
    cr_expect_str_eq(json_object_get_string(v), "th\\r");
    cr_assert(json_object_object_get_ex(o, "ts", &v));
    cr_expect(json_object_is_type(v, json_type_double));
    cr_expect_float_eq(json_object_get_double(v), 12.5, 1e-9);
    cr_assert(json_object_object_get_ex(o, "seq_emitted", &v));
    cr_expect_eq(json_object_get_int64(v), 12);
    cr_expect_not(json_object_object_get_ex(o, "pasid", NULL));
    cr_expect_not(json_object_object_get_ex(o, "xid", NULL));
    cr_expect_not(json_object_object_get_ex(o, "client", NULL));
    cr_expect_eq(json_object_object_length(o), 15);
    json_object_put(o);
}

Test(kmsg, json_members_small_buffer_gives_a_whole_member_prefix) {
    struct kmsg_event e = kt_json_event();
    size_t full = strlen(kt_json_want);
    /* every size from nothing to one short of the whole: the output is NUL-terminated, is the
     * start of the full output, and ends where a member ends */
    for (size_t cap = 1; cap <= full; cap++) {
        char buf[1024];
        memset(buf, 'Z', sizeof(buf));
        size_t n = kmsg_json_members(&e, buf, cap);
        cr_assert_lt(n, cap, "cap %zu: length %zu", cap, n);
        cr_assert_eq(buf[n], '\0', "cap %zu: not NUL-terminated at %zu", cap, n);
        cr_assert_eq(buf[cap], 'Z', "cap %zu: wrote past the buffer", cap);
        /* a later, shorter member must not be written after one that did not fit */
        cr_assert(strncmp(buf, kt_json_want, n) == 0 &&
                      (kt_json_want[n] == ',' || (n == 0 && cap <= 9)),
                  "cap %zu: '%s' is not a whole-member prefix of the full output", cap, buf);
    }
    char buf[1024];
    cr_expect_eq(kmsg_json_members(&e, buf, full + 1), full);
    cr_expect_str_eq(buf, kt_json_want);
    cr_expect_eq(kmsg_json_members(&e, buf, 0), 0);
}

/* ---- kmsg_lines ---- */

struct kt_lines {
    char line[8][16384];
    size_t len[8];
    int n;
};

static void kt_lines_cb(void *ctx, const char *line, size_t n) {
    struct kt_lines *c = ctx;
    cr_assert_lt(c->n, 8, "too many lines");
    cr_assert_leq(n, sizeof(c->line[0]));
    memcpy(c->line[c->n], line, n);
    c->len[c->n++] = n;
}

static void kt_lines_expect(const struct kt_lines *c, int i, const char *want) {
    size_t n = strlen(want);
    cr_expect(c->len[i] == n && memcmp(c->line[i], want, n) == 0, "line %d: '%.*s', expected '%s'",
              i, (int)c->len[i], c->line[i], want);
}

Test(kmsg, lines_split_across_feeds_and_crlf_kept) {
    static struct kmsg_lines b;
    static struct kt_lines c;
    kmsg_lines_init(&b);
    kmsg_lines_feed(&b, "ab", 2, kt_lines_cb, &c);
    cr_expect_eq(c.n, 0);
    kmsg_lines_feed(&b, "c\nde", 4, kt_lines_cb, &c);
    cr_assert_eq(c.n, 1);
    kt_lines_expect(&c, 0, "abc");
    kmsg_lines_feed(&b, "f\r\n\n", 4, kt_lines_cb, &c);
    cr_assert_eq(c.n, 3);
    kt_lines_expect(&c, 1, "def\r");
    kt_lines_expect(&c, 2, "");
    cr_expect_eq(b.delivered, 3);
    cr_expect_eq(b.cut, 0);
    /* the parser strips the CR */
    struct kmsg_line l;
    kmsg_parse_text(c.line[1], c.len[1], &l);
    kt_expect_text(&l, "def", "def\\r");
}

Test(kmsg, lines_finish_delivers_the_last_unterminated_line) {
    static struct kmsg_lines b;
    static struct kt_lines c;
    kmsg_lines_init(&b);
    kmsg_lines_feed(&b, "one\nlast", 8, kt_lines_cb, &c);
    cr_assert_eq(c.n, 1);
    kmsg_lines_finish(&b, kt_lines_cb, &c);
    cr_assert_eq(c.n, 2);
    kt_lines_expect(&c, 1, "last");
    kmsg_lines_finish(&b, kt_lines_cb, &c);
    cr_expect_eq(c.n, 2, "finish delivered the last line twice");
    cr_expect_eq(b.delivered, 2);
}

Test(kmsg, lines_over_long_line_cut_once) {
    static struct kmsg_lines b;
    static struct kt_lines c;
    static char big[20000];
    memset(big, 'B', sizeof(big));
    kmsg_lines_init(&b);
    kmsg_lines_feed(&b, big, sizeof(big), kt_lines_cb, &c);
    kmsg_lines_feed(&b, "\nnext\ntail", 10, kt_lines_cb, &c);
    kmsg_lines_finish(&b, kt_lines_cb, &c);
    cr_assert_eq(c.n, 3);
    cr_expect_eq(c.len[0], KMSG_LINE_MAX);
    cr_expect_eq(memcmp(c.line[0], big, KMSG_LINE_MAX), 0);
    kt_lines_expect(&c, 1, "next");
    kt_lines_expect(&c, 2, "tail");
    cr_expect_eq(b.cut, 1);
    cr_expect_eq(b.delivered, 3);
}

Test(kmsg, lines_of_exactly_line_max_are_whole) {
    static struct kmsg_lines b;
    static struct kt_lines c;
    static char big[KMSG_LINE_MAX + 1];
    memset(big, 'D', KMSG_LINE_MAX);
    big[KMSG_LINE_MAX] = '\n';
    kmsg_lines_init(&b);
    kmsg_lines_feed(&b, big, KMSG_LINE_MAX, kt_lines_cb, &c); /* not yet its newline */
    kmsg_lines_feed(&b, "\n", 1, kt_lines_cb, &c);
    kmsg_lines_feed(&b, big, sizeof(big), kt_lines_cb, &c);
    cr_assert_eq(c.n, 2);
    cr_expect_eq(c.len[0], KMSG_LINE_MAX);
    cr_expect_eq(c.len[1], KMSG_LINE_MAX);
    cr_expect_eq(b.cut, 0);
}

Test(kmsg, lines_over_long_line_with_its_newline_in_one_feed_is_cut) {
    /* a line of KMSG_LINE_MAX + 100 bytes whose newline arrives in the same feed is cut too */
    static struct kmsg_lines b;
    static struct kt_lines c;
    static char big[KMSG_LINE_MAX + 101];
    memset(big, 'C', KMSG_LINE_MAX + 100);
    big[KMSG_LINE_MAX + 100] = '\n';
    kmsg_lines_init(&b);
    kmsg_lines_feed(&b, big, sizeof(big), kt_lines_cb, &c);
    kmsg_lines_feed(&b, "next\n", 5, kt_lines_cb, &c);
    cr_assert_eq(c.n, 2);
    cr_expect_eq(c.len[0], KMSG_LINE_MAX, "delivered %zu bytes", c.len[0]);
    cr_expect_eq(b.cut, 1);
    kt_lines_expect(&c, 1, "next");
}

Test(kmsg, lines_read_from_a_pipe) {
    static struct kmsg_lines b;
    static struct kt_lines c;
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    kmsg_lines_init(&b);
    cr_assert_eq(write(fd[1], "one\ntwo\nthr", 11), 11);
    cr_expect_eq(kmsg_lines_read(&b, fd[0], kt_lines_cb, &c), 11);
    cr_assert_eq(c.n, 2);
    kt_lines_expect(&c, 0, "one");
    kt_lines_expect(&c, 1, "two");
    cr_assert_eq(write(fd[1], "ee\n", 3), 3);
    cr_expect_eq(kmsg_lines_read(&b, fd[0], kt_lines_cb, &c), 3);
    cr_assert_eq(c.n, 3);
    kt_lines_expect(&c, 2, "three");

    /* nothing there on a non-blocking pipe: -EAGAIN, then end of file */
    cr_assert_eq(fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) | O_NONBLOCK), 0);
    cr_expect_eq(kmsg_lines_read(&b, fd[0], kt_lines_cb, &c), -EAGAIN);
    close(fd[1]);
    cr_expect_eq(kmsg_lines_read(&b, fd[0], kt_lines_cb, &c), 0);
    kmsg_lines_finish(&b, kt_lines_cb, &c);
    cr_expect_eq(c.n, 3);
    close(fd[0]);
}

/* ---- kmsg_clock ---- */

Test(kmsg, clock_offset_only_moves_down) {
    struct kmsg_clock k = {0};
    const uint64_t s = 1000000000ull;
    cr_expect_eq(k.offset_ns, 0);
    cr_expect_eq(kmsg_clock_map(&k, 5 * s), 5 * s);
    /* read a second after it was stamped: nothing to correct */
    kmsg_clock_observe(&k, 5 * s, 6 * s);
    cr_expect_eq(k.offset_ns, 0);
    kmsg_clock_observe(&k, 7 * s, 7 * s);
    cr_expect_eq(k.offset_ns, 0);
    /* stamped at 10 s, read at 9 s: the kernel clock leads by a second */
    kmsg_clock_observe(&k, 10 * s, 9 * s);
    cr_expect_eq(k.offset_ns, -1000000000ll);
    cr_expect_eq(kmsg_clock_map(&k, 10 * s), 9 * s);
    /* later records never move it back up */
    kmsg_clock_observe(&k, 11 * s, 12 * s);
    cr_expect_eq(k.offset_ns, -1000000000ll);
    kmsg_clock_observe(&k, 20 * s, 20 * s - s / 2);
    cr_expect_eq(k.offset_ns, -1000000000ll);
    /* but a larger lead lowers it further */
    kmsg_clock_observe(&k, 30 * s, 28 * s);
    cr_expect_eq(k.offset_ns, -2000000000ll);
    cr_expect_eq(kmsg_clock_map(&k, 30 * s), 28 * s);
}

/* ---- remedies ---- */

static char kt_dir[512];

static void kt_dir_setup(void) {
    cr_assert_eq(rs_test_tmpdir(kt_dir, sizeof(kt_dir)), 0);
}

static void kt_dir_teardown(void) {
    rs_test_rmtree(kt_dir);
}

static struct remedies *kt_shipped(void) {
    struct remedies *r = NULL;
    char err[512] = "";
    cr_assert_eq(remedies_load_file(&r, SHIPPED_REMEDIES, err, sizeof(err)), 0, "%s", err);
    cr_assert_not_null(r);
    return r;
}

static const struct remedy *kt_find_line(const struct remedies *r, const char *line) {
    struct kmsg_line l;
    struct kmsg_event e;
    kt_parse(line, &l);
    cr_assert(kmsg_classify_line(&l, &e), "'%s' is not classified", line);
    return remedies_find(r, &e);
}

Test(kmsg, remedies_shipped_cover_every_category) {
    struct remedies *r = kt_shipped();
    cr_expect_gt(remedies_count(r), 20);
    cr_expect_not_null(strstr(remedies_origin(r), "remedies.json"));
    for (unsigned c = 1; c < KMSG_CAT_COUNT; c++) {
        struct kmsg_event e;
        memset(&e, 0, sizeof(e));
        e.category = (uint8_t)c;
        e.lines = 1;
        strcpy(e.message, "something the rules do not name");
        const struct remedy *m = remedies_find(r, &e);
        cr_expect_not_null(m, "no rule for category %s", kmsg_category_name(c));
        if (m) {
            cr_expect_neq(m->title[0], '\0');
            cr_expect_gt(m->n_actions, 0, "%s: no actions", m->title);
        }
    }
    remedies_free(r);
}

Test(kmsg, remedies_specific_rules_win) {
    struct remedies *r = kt_shipped();
    const struct remedy *m = kt_find_line(r, "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                                             "name=<unknown>, GPU has fallen off the bus.");
    cr_assert_not_null(m);
    cr_expect_not_null(strstr(m->title, "bus"), "Xid 79 found '%s'", m->title);
    const struct remedy *generic_xid =
        kt_find_line(r, "NVRM: Xid (PCI:0000:02:00): 8, Ch 00000010");
    cr_assert_not_null(generic_xid);
    cr_expect_neq(generic_xid, m);

    const struct remedy *lost =
        kt_find_line(r, "amdgpu 0000:03:00.0: amdgpu: VRAM is lost due to GPU reset!");
    const struct remedy *begin = kt_find_line(r, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!");
    cr_assert_not_null(lost);
    cr_assert_not_null(begin);
    cr_expect_neq(lost, begin);
    cr_expect_not_null(strstr(lost->title, "VRAM"), "'%s'", lost->title);
    cr_expect_null(strstr(begin->title, "VRAM"), "'%s'", begin->title);
    remedies_free(r);
}

Test(kmsg, remedies_for_radeon_lockups_version_mismatches_and_smu7) {
    struct remedies *r = kt_shipped();
    const struct remedy *m =
        kt_find_line(r, "radeon 0000:01:00.0: ring 0 stalled for more than 10180msec");
    cr_assert_not_null(m);
    cr_expect_not_null(strstr(m->title, "radeon"), "'%s'", m->title);
    m = kt_find_line(r, "NVRM: API mismatch: the client has the version 515.48.07, but");
    cr_assert_not_null(m);
    cr_expect_not_null(strstr(m->title, "versions do not match"), "'%s'", m->title);
    m = kt_find_line(r, "amdgpu: [powerplay] [AVFS] Something is broken. See log!");
    cr_assert_not_null(m);
    cr_expect_not_null(strstr(m->title, "SMU7"), "'%s'", m->title);
    /* amdgpu's ring timeouts keep theirs */
    m = kt_find_line(r, kt_timeout_new);
    cr_assert_not_null(m);
    cr_expect_null(strstr(m->title, "radeon"), "'%s'", m->title);
    remedies_free(r);
}

Test(kmsg, remedies_user_rule_first, .init = kt_dir_setup, .fini = kt_dir_teardown) {
    char path[1024], err[512] = "";
    cr_assert_eq(rs_test_write_file(kt_dir, "user.json",
                                    "{\"version\": 1, \"rules\": [{\"category\": \"mes\", "
                                    "\"title\": \"My MES fix\", \"actions\": [\"reboot\"]}]}\n",
                                    path, sizeof(path)),
                 0);
    struct remedies *r = NULL;
    cr_assert_eq(remedies_load(&r, path, err, sizeof(err)), 0, "%s", err);
    cr_expect_gt(remedies_count(r), 21, "the shipped rules were not added");
    cr_expect_not_null(strstr(remedies_origin(r), path));
    const struct remedy *m =
        kt_find_line(r, "amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE");
    cr_assert_not_null(m);
    cr_expect_str_eq(m->title, "My MES fix");
    cr_expect_eq(m->n_actions, 1);
    cr_expect_str_eq(m->actions[0], "reboot");
    m = kt_find_line(r, kt_timeout_new);
    cr_assert_not_null(m, "the shipped ring timeout rule is missing");
    cr_expect_str_neq(m->title, "My MES fix");
    remedies_free(r);
}

Test(kmsg, remedies_replace_drops_shipped, .init = kt_dir_setup, .fini = kt_dir_teardown) {
    char path[1024], err[512] = "";
    cr_assert_eq(
        rs_test_write_file(kt_dir, "only.json",
                           "{\"version\": 1, \"replace\": true, \"rules\": [{\"category\": "
                           "\"mes\", \"title\": \"Only mine\"}]}\n",
                           path, sizeof(path)),
        0);
    struct remedies *r = NULL;
    cr_assert_eq(remedies_load(&r, path, err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(remedies_count(r), 1);
    const struct remedy *m =
        kt_find_line(r, "amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE");
    cr_assert_not_null(m);
    cr_expect_str_eq(m->title, "Only mine");
    cr_expect_null(kt_find_line(r, kt_timeout_new));
    remedies_free(r);
}

struct kt_broken {
    const char *name;
    const char *text;
    const char *want[3]; /* substrings the one-line error must hold */
};

Test(kmsg, remedies_broken_files_give_one_line_errors, .init = kt_dir_setup,
     .fini = kt_dir_teardown) {
    static const struct kt_broken cases[] = {
        {"syntax.json",
         "{\n  \"version\": 1,\n  \"rules\": [{\"category\": \"mes\" \"title\": \"x\"}]\n}\n",
         {"invalid JSON", "line 3", "column"}},
        {"category.json",
         "{\"version\": 1, \"rules\": [{\"category\": \"mes\", \"title\": \"ok\"},\n"
         " {\"category\": \"gpu_hang\", \"title\": \"x\"}]}\n",
         {"rules[1].category", "gpu_hang", NULL}},
        {"none.json",
         "{\"version\": 1, \"rules\": [{\"category\": \"none\", \"title\": \"x\"}]}",
         {"rules[0].category", "none", NULL}},
        {"key.json",
         "{\"version\": 1, \"rules\": [{\"category\": \"mes\", \"title\": \"x\", \"severity\": "
         "\"error\"}]}",
         {"rules[0]", "unknown key", "severity"}},
        {"actions.json",
         "{\"version\": 1, \"rules\": [{\"category\": \"mes\", \"title\": \"x\", \"actions\": "
         "\"reboot\"}]}",
         {"rules[0].actions", "not an array", NULL}},
        {"title.json",
         "{\"version\": 1, \"rules\": [{\"category\": \"mes\", \"actions\": [\"reboot\"]}]}",
         {"rules[0].title", "missing", NULL}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct kt_broken *c = &cases[i];
        char path[1024], err[512] = "";
        cr_assert_eq(rs_test_write_file(kt_dir, c->name, c->text, path, sizeof(path)), 0);
        for (int via_load = 0; via_load < 2; via_load++) {
            struct remedies *r = (struct remedies *)1;
            int rc = via_load ? remedies_load(&r, path, err, sizeof(err))
                              : remedies_load_file(&r, path, err, sizeof(err));
            cr_expect_eq(rc, -EINVAL, "%s: rc %d", c->name, rc);
            cr_expect_null(r, "%s", c->name);
            size_t pl = strlen(path);
            cr_expect(strncmp(err, path, pl) == 0 && strncmp(err + pl, ": ", 2) == 0,
                      "%s: '%s' does not start with the file", c->name, err);
            cr_expect_null(strchr(err, '\n'), "%s: more than one line: '%s'", c->name, err);
            for (int k = 0; k < 3 && c->want[k]; k++)
                cr_expect_not_null(strstr(err, c->want[k]), "%s: '%s' lacks '%s'", c->name, err,
                                   c->want[k]);
        }
    }
}
