/* Tests for the core module: event ring, snapshots, CRC32, atomic files. */
#include "backend/core/afile.h"
#include "backend/core/crc32.h"
#include "backend/core/errbuf.h"
#include "backend/core/ev.h"
#include "backend/core/evring.h"
#include "backend/core/snap.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(core, .timeout = 30);

static struct ev core_ev(uint16_t dev, int64_t step) {
    struct ev e = {.t_ns = 1, .kind = EV_PHASE, .dev = dev};
    e.u.phase.step = step;
    return e;
}

Test(core, ring_keeps_order_and_assigns_seq) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 8), 0);
    for (int i = 0; i < 5; i++) {
        struct ev e = core_ev(0, i);
        evring_push(r, &e);
    }
    struct ev out[8];
    cr_assert_eq(evring_drain(r, out, 8), 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(out[i].u.phase.step, i);
        cr_assert_eq(out[i].seq, (uint32_t)i);
    }
    cr_assert_eq(evring_drain(r, out, 8), 0);
    cr_assert_eq(evring_dropped(r), 0);
    evring_destroy(r);
}

Test(core, ring_full_drops_oldest_and_counts) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 4), 0);
    for (int i = 0; i < 10; i++) {
        struct ev e = core_ev(0, i);
        evring_push(r, &e);
    }
    struct ev out[8];
    cr_assert_eq(evring_drain(r, out, 8), 4);
    cr_assert_eq(evring_dropped(r), 6);
    /* the newest four survive, and the seq gap shows what was lost */
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(out[i].u.phase.step, 6 + i);
        cr_assert_eq(out[i].seq, (uint32_t)(6 + i));
    }
    evring_destroy(r);
}

Test(core, ring_wake_fd_readable_only_while_pending) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 4), 0);
    struct pollfd pf = {evring_wake_fd(r), POLLIN, 0};
    cr_assert_eq(poll(&pf, 1, 0), 0);
    struct ev e = core_ev(0, 1), out[4];
    evring_push(r, &e);
    cr_assert_eq(poll(&pf, 1, 0), 1);
    evring_drain(r, out, 4);
    cr_assert_eq(poll(&pf, 1, 0), 0);
    evring_destroy(r);
}

Test(core, snap_reader_sees_latest_publish) {
    struct snap *s;
    cr_assert_eq(snap_create(&s, sizeof(int)), 0);
    bool fresh = true;
    const int *v = snap_read(s, &fresh);
    cr_assert_not(fresh);
    cr_assert_eq(*v, 0);
    for (int i = 1; i <= 3; i++) {
        *(int *)snap_write_begin(s) = i;
        snap_publish(s);
    }
    v = snap_read(s, &fresh);
    cr_assert(fresh);
    cr_assert_eq(*v, 3);
    v = snap_read(s, &fresh);
    cr_assert_not(fresh);
    cr_assert_eq(*v, 3);
    snap_destroy(s);
}

Test(core, crc32_known_vectors) {
    cr_assert_eq(crc32_update(0, "123456789", 9), 0xCBF43926u);
    cr_assert_eq(crc32_update(0, "", 0), 0u);
    /* incremental equals one-shot */
    uint32_t c = crc32_update(0, "1234", 4);
    cr_assert_eq(crc32_update(c, "56789", 5), 0xCBF43926u);
}

Test(core, afile_replaces_atomically_and_cleans_up) {
    char dir[256], path[512], buf[64];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/out.bin", dir);
    cr_assert_eq(afile_write_all(path, "first", 5, NULL, 0), 0);
    struct afile af;
    cr_assert_eq(afile_open(&af, path, NULL, 0), 0);
    fputs("second", af.fp);
    /* until commit the old content is what readers see */
    FILE *f = fopen(path, "rb");
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert_eq(n, 5);
    cr_assert_eq(memcmp(buf, "first", 5), 0);
    afile_abort(&af);
    cr_assert_neq(access(af.tmp_path, F_OK), 0);
    cr_assert_eq(afile_write_all(path, "second", 6, NULL, 0), 0);
    f = fopen(path, "rb");
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert_eq(n, 6);
    rs_test_rmtree(dir);
}

Test(core, afile_errors_name_the_path) {
    char err[256];
    cr_assert_lt(afile_write_all("/nonexistent-dir/x/y.bin", "a", 1, err, sizeof(err)), 0);
    cr_assert(strstr(err, "/nonexistent-dir/x/y.bin") != NULL, "%s", err);
}

Test(core, mkdirs_creates_nested_and_rejects_files) {
    char dir[256], sub[512], file[512], err[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
    cr_assert_eq(afile_mkdirs(sub, err, sizeof(err)), 0);
    struct stat st;
    cr_assert_eq(stat(sub, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(afile_mkdirs(sub, err, sizeof(err)), 0); /* idempotent */
    cr_assert_eq(rs_test_write_file(dir, "plain", "x", file, sizeof(file)), 0);
    cr_assert_lt(afile_mkdirs(file, err, sizeof(err)), 0);
    rs_test_rmtree(dir);
}

Test(core, names_round_trip) {
    for (unsigned p = 0; p < PHASE_COUNT; p++)
        cr_assert_eq(ev_phase_from_name(ev_phase_name(p)), (int)p);
    cr_assert_str_eq(ev_phase_name(PHASE_CHECKPOINT), "checkpoint");
    cr_assert_str_eq(ev_sync_op_name(SYNC_OP_COPY), "copy");
    cr_assert_str_eq(ev_kind_name(EV_METRIC), "metric");
    cr_assert_str_eq(ev_phase_name(PHASE_COUNT), "?");
    cr_assert_eq(ev_phase_from_name("nope"), -1);
}

Test(core, error_text_stays_one_line) {
    char err[64];
    cr_assert_eq(errbuf_set(err, sizeof(err), -22, "unknown key '%s'", "x\n\x1b[31mred\tz"), -22);
    cr_assert_str_eq(err, "unknown key 'x??[31mred z'");
}
