/* Tests for the hang diagnostic bundle: written once, on a HANG alert only, as valid JSON with
 * every section, the kernel log near the hang and the last events. */
#include "backend/run/bundle.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(bundle, .timeout = 30);

static struct bundle_ring bt_ring;
static struct run_opts bt_opts;
static struct engine_snap bt_snap;

static struct ev bt_ev(unsigned kind, uint64_t t) {
    struct ev e = {.t_ns = t, .kind = (uint16_t)kind, .dev = EV_DEV_NONE};
    return e;
}

Test(bundle, written_once_on_a_hang_with_every_section) {
    char dir[1000], msg[EV_TEXT_BYTES];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    memset(&bt_ring, 0, sizeof(bt_ring));
    memset(&bt_opts, 0, sizeof(bt_opts));
    engine_conf_default(&bt_opts.conf);
    snprintf(bt_opts.conf.output_dir, sizeof(bt_opts.conf.output_dir), "%.900s/out", dir);
    snprintf(bt_snap.backend, sizeof(bt_snap.backend), "cpu");
    struct bundle_src b = {.o = &bt_opts, .snap = &bt_snap};
    umask(022);
    for (int i = 0; i < BUNDLE_EVENTS + 20; i++) { /* more than the ring holds */
        struct ev e = bt_ev(EV_LOG, 1000000000ull + (uint64_t)i);
        snprintf(e.u.text.text, sizeof(e.u.text.text), "line %d", i);
        cr_assert_not(bundle_due(&bt_ring, &e));
    }
    struct ev far = bt_ev(EV_KMSG, 1ull), near = bt_ev(EV_KMSG, 250000000000ull);
    far.u.kmsg.category = near.u.kmsg.category = KMSG_CAT_RING_TIMEOUT;
    snprintf(near.u.kmsg.message, sizeof(near.u.kmsg.message), "ring gfx timeout");
    cr_assert_not(bundle_due(&bt_ring, &far));
    cr_assert_not(bundle_due(&bt_ring, &near));
    struct ev slow = bt_ev(EV_ALERT, 290000000000ull);
    slow.u.text.code = ALERT_SYNC_SLOW;
    cr_assert_not(bundle_due(&bt_ring, &slow), "slow: no bundle");
    struct ev hang = bt_ev(EV_ALERT, 300000000000ull);
    hang.dev = 0;
    hang.u.text.code = ALERT_SYNC_HANG;
    snprintf(hang.u.text.text, sizeof(hang.u.text.text), "dev 0: device sync in cleanup: HANG");
    cr_assert(bundle_due(&bt_ring, &hang));
    bundle_on_hang(&bt_ring, &hang, &b, msg, sizeof(msg));
    cr_assert(strstr(msg, "hang diagnostics written to"), "%s", msg);
    cr_assert_not(bundle_due(&bt_ring, &hang), "once per run");
    const char *path = strstr(msg, dir);
    cr_assert_not_null(path);
    struct stat st; /* it copies kernel-log lines: for this user alone, whatever the umask */
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "the bundle is %o", (unsigned)(st.st_mode & 0777));
    json_object *j = json_object_from_file(path);
    cr_assert_not_null(j, "%s is not JSON", path);
    static const char *const keys[] = {"hang",   "versions",  "engine",     "pool",
                                       "config", "telemetry", "kernel_log", "events"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        cr_assert(json_object_object_get_ex(j, keys[i], NULL), "no %s", keys[i]);
    /* the configuration is the run's options: the engine's object and the run's own options */
    json_object *conf = json_object_object_get(j, "config"),
                *want = engine_conf_json(&bt_opts.conf);
    json_object_object_foreach(want, key, v) {
        json_object *got = NULL;
        cr_assert(json_object_object_get_ex(conf, key, &got), "the config lacks %s", key);
        cr_assert(json_object_equal(v, got), "config %s: %s", key, json_object_to_json_string(got));
    }
    json_object_put(want);
    cr_assert(json_object_object_get_ex(conf, "sync-timeout", NULL));
    cr_assert(json_object_object_get_ex(conf, "no-kmsg", NULL));
    json_object *ev = json_object_object_get(j, "events");
    cr_assert_eq(json_object_array_length(ev), BUNDLE_EVENTS, "the last 500 events");
    json_object *kl = json_object_object_get(j, "kernel_log");
    cr_assert_eq(json_object_array_length(kl), 1, "only the kernel-log line near the hang");
    cr_assert_str_eq(
        json_object_get_string(json_object_object_get(json_object_array_get_idx(kl, 0), "message")),
        "ring gfx timeout");
    cr_assert_str_eq(json_object_get_string(
                         json_object_object_get(json_object_object_get(j, "hang"), "message")),
                     "dev 0: device sync in cleanup: HANG");
    json_object_put(j);
    rs_test_rmtree(dir);
}

/* A hang while telemetry saw the training GPU's ring stop: the note names that ring, not a
 * moving one nor another GPU's. */
Test(bundle, the_note_names_the_training_gpus_stalled_rings) {
    static struct tele_snap t;
    char dir[1000], msg[EV_TEXT_BYTES], rings[160];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    memset(&bt_ring, 0, sizeof(bt_ring));
    memset(&bt_opts, 0, sizeof(bt_opts));
    memset(&t, 0, sizeof(t));
    engine_conf_default(&bt_opts.conf);
    snprintf(bt_opts.conf.output_dir, sizeof(bt_opts.conf.output_dir), "%.900s/out", dir);
    snprintf(bt_snap.backend, sizeof(bt_snap.backend), "hip");
    snprintf(bt_snap.dev.pci, sizeof(bt_snap.dev.pci), "0000:03:00.0");
    t.n_gpus = 2;
    snprintf(t.gpus[0].pci, sizeof(t.gpus[0].pci), "0000:03:00.0");
    snprintf(t.gpus[1].pci, sizeof(t.gpus[1].pci), "0000:43:00.0");
    for (int g = 0; g < 2; g++) {
        t.gpus[g].rings_src = 1;
        t.gpus[g].n_rings = 2;
        t.gpus[g].rings[0] = (struct tele_ring){"gfx_0.0.0", 7, 9, true};
        t.gpus[g].rings[1] = (struct tele_ring){"sdma0", 40, 41, false};
    }
    snprintf(t.gpus[1].rings[0].name, sizeof(t.gpus[1].rings[0].name), "comp_1.0.0");
    cr_assert(bundle_stalled_rings(&t, "0000:03:00.0", rings, sizeof(rings)));
    cr_assert_str_eq(rings, "gfx_0.0.0 at fence 0x7 of 0x9");
    cr_assert_not(bundle_stalled_rings(&t, "0000:99:00.0", rings, sizeof(rings)));
    cr_assert_str_eq(rings, "");
    cr_assert_not(bundle_stalled_rings(&t, "", rings, sizeof(rings)), "the CPU has no rings");
    struct bundle_src b = {.o = &bt_opts, .snap = &bt_snap, .tele = &t};
    struct ev hang = bt_ev(EV_ALERT, 300000000000ull);
    hang.dev = 0;
    hang.u.text.code = ALERT_SYNC_HANG;
    cr_assert(bundle_due(&bt_ring, &hang));
    bundle_on_hang(&bt_ring, &hang, &b, msg, sizeof(msg));
    cr_assert(strstr(msg, "hang diagnostics written to"), "%s", msg);
    cr_assert(strstr(msg, "; the GPU itself had stopped: ring gfx_0.0.0 at fence 0x7 of 0x9"), "%s",
              msg);
    cr_assert_null(strstr(msg, "sdma0"), "%s", msg);
    cr_assert_null(strstr(msg, "comp_1.0.0"), "%s", msg);
    memset(&bt_snap.dev, 0, sizeof(bt_snap.dev));
    rs_test_rmtree(dir);
}
