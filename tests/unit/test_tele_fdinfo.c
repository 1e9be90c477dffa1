/* Tests for the fdinfo provider: the fdinfo parser on both amdgpu key sets, the per-process
 * aggregation (shared client ids, busy % over chosen times, the list cap), and the provider on
 * the rdna3-apu process tree (tests/fixtures/telemetry/README.md). Expected sizes are the
 * fixtures' printed numbers converted by hand. */
#include "backend/telemetry/tele_fdinfo_internal.h"
#include "backend/telemetry/tele_prov.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(tele_fdinfo, .timeout = 30);

#define TFD_APU  "0000:c5:00.0"
#define TFD_DGPU "0000:03:00.0"
#define TFD_KIB  1024ull
#define TFD_MIB  (1024ull * 1024ull)
#define TFD_S    1000000000ull

static void tfd_parse_fixture(const char *rel, struct tele_fdinfo_client *c) {
    char path[TELE_PATH_MAX], text[4096], full[256];
    snprintf(full, sizeof(full), "telemetry/rdna3-apu/proc/%s", rel);
    cr_assert_geq(tele_read_text(rs_test_fixture(full, path, sizeof(path)), text, sizeof(text)), 0,
                  "%s", rel);
    cr_assert_eq(tele_fdinfo_parse(text, c), 0, "%s", rel);
}

static const struct tele_fdinfo_engine *tfd_engine(const struct tele_fdinfo_client *c,
                                                   const char *name) {
    for (int i = 0; i < c->n_engines; i++)
        if (strcmp(c->engines[i].name, name) == 0)
            return &c->engines[i];
    cr_assert_fail("no engine %s", name);
    return NULL;
}

/* ---- parsing ---- */

Test(tele_fdinfo, old_amdgpu_keys_with_the_space_before_the_tab) {
    struct tele_fdinfo_client c;
    tfd_parse_fixture("1342/fdinfo/14", &c);
    cr_assert_str_eq(c.pdev, TFD_APU);
    cr_assert(c.has_client_id);
    cr_assert_eq(c.client_id, 8);
    cr_assert(c.vram_valid);
    cr_assert_eq(c.vram_bytes, 98304 * TFD_KIB);
    cr_assert(c.gtt_valid); /* "drm-memory-gtt: \t45056 KiB" */
    cr_assert_eq(c.gtt_bytes, 45056 * TFD_KIB);
    cr_assert(c.evicted_valid);
    cr_assert_eq(c.evicted_vram_bytes, 0);
    cr_assert_eq(c.n_engines, 2);
    cr_assert_eq(tfd_engine(&c, "gfx")->ns, 1873521934821ull);
    cr_assert_eq(tfd_engine(&c, "dma")->ns, 2731928112ull);
    cr_assert_eq(tfd_engine(&c, "gfx")->capacity, 1);
}

Test(tele_fdinfo, new_keys_prefer_resident_over_total) {
    struct tele_fdinfo_client c;
    tfd_parse_fixture("2817/fdinfo/9", &c);
    cr_assert_str_eq(c.pdev, TFD_DGPU);
    cr_assert_eq(c.client_id, 57);
    cr_assert_eq(c.vram_bytes, 8192 * TFD_MIB); /* not drm-total-vram's 8704 MiB */
    cr_assert_eq(c.vram_rank, 3);
    cr_assert_eq(c.gtt_bytes, 256 * TFD_MIB);
    cr_assert_eq(c.evicted_vram_bytes, 524288 * TFD_KIB);
    cr_assert_eq(c.n_engines, 3);
    cr_assert_eq(tfd_engine(&c, "compute")->ns, 84113452203ull);
}

Test(tele_fdinfo, units_ranks_and_capacity) {
    struct tele_fdinfo_client c;
    cr_assert_eq(tele_fdinfo_parse("drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\n"
                                   "drm-total-vram:\t8 MiB\n"
                                   "drm-memory-vram:\t6144 KiB\n"
                                   "drm-resident-vram:\t4096\n" /* bytes */
                                   "drm-total-gtt:\t3 MiB\n"
                                   "drm-memory-gtt: \t2048 KiB\n"
                                   "drm-engine-capacity-compute:\t2\n"
                                   "drm-engine-compute:\t500 ns\n"
                                   "drm-cycles-compute:\t99\n",
                                   &c),
                 0);
    cr_assert_eq(c.vram_bytes, 4096);          /* resident, whatever the order */
    cr_assert_eq(c.gtt_bytes, 2048 * TFD_KIB); /* memory beats total */
    cr_assert_not(c.has_client_id);
    cr_assert_eq(c.n_engines, 1); /* the capacity key is not an engine */
    cr_assert_eq(c.engines[0].capacity, 2);
    cr_assert_eq(c.engines[0].ns, 500);
    cr_assert_eq(tele_fdinfo_parse("drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\n"
                                   "drm-memory-vram:\t12 GiB\n",
                                   &c),
                 0);
    cr_assert_not(c.vram_valid); /* not a unit drm-usage-stats.rst allows */
    cr_assert_eq(tele_fdinfo_parse("drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\n"
                                   "drm-memory-vram:\t18446744073709551615 MiB\n"
                                   "drm-memory-gtt: \t17592186044416 MiB\n",
                                   &c),
                 0);
    cr_assert_not(c.vram_valid, "more bytes than 64 bits hold is no size (found by fuzz_fdinfo)");
    cr_assert_not(c.gtt_valid, "2^44 MiB is 2^64 bytes: one too many");
}

Test(tele_fdinfo, other_files_are_refused) {
    struct tele_fdinfo_client c;
    cr_assert_eq(tele_fdinfo_parse("pos:\t0\nflags:\t0100000\nmnt_id:\t31\nino:\t6684721\n", &c),
                 -ENODEV);
    cr_assert_eq(tele_fdinfo_parse("pos:\t0\ndrm-driver:\ti915\ndrm-pdev:\t0000:00:02.0\n"
                                   "drm-client-id:\t3\n",
                                   &c),
                 -ENODEV);
    cr_assert_eq(tele_fdinfo_parse("drm-driver:\tamdgpu\ndrm-client-id:\t3\n", &c), -EINVAL);
}

/* ---- aggregation ---- */

static struct tele_fdinfo_client tfd_client(int32_t pid, int32_t fd, const char *comm,
                                            const char *text) {
    struct tele_fdinfo_client c;
    cr_assert_eq(tele_fdinfo_parse(text, &c), 0, "%s", text);
    c.pid = pid;
    c.fd = fd;
    snprintf(c.comm, sizeof(c.comm), "%s", comm);
    return c;
}

/* An amdgpu client on the dGPU with a VRAM size and gfx/compute busy ns. */
static struct tele_fdinfo_client tfd_busy(int32_t pid, int32_t fd, uint64_t id, uint64_t gfx_ns,
                                          uint64_t compute_ns) {
    char text[512];
    snprintf(text, sizeof(text),
             "drm-driver:\tamdgpu\ndrm-pdev:\t" TFD_DGPU "\ndrm-client-id:\t%llu\n"
             "drm-memory-vram:\t1024 KiB\ndrm-engine-gfx:\t%llu ns\ndrm-engine-compute:\t%llu ns\n",
             (unsigned long long)id, (unsigned long long)gfx_ns, (unsigned long long)compute_ns);
    return tfd_client(pid, fd, "train", text);
}

struct tfd_agg {
    struct tele_fdinfo_hist h;
    struct tele_gpu out[TELE_MAX_GPUS];
    size_t n;
};

static void tfd_run(struct tfd_agg *a, struct tele_fdinfo_client *c, size_t n, uint64_t now) {
    cr_assert_eq(tele_fdinfo_aggregate(&a->h, c, n, now, 1, a->out, TELE_MAX_GPUS, &a->n), 0);
}

Test(tele_fdinfo, descriptors_sharing_a_client_count_once) {
    struct tele_fdinfo_client c[3];
    struct tfd_agg a;
    memset(&a, 0, sizeof(a));
    tfd_parse_fixture("2817/fdinfo/9", &c[0]);
    tfd_parse_fixture("2817/fdinfo/10", &c[1]); /* dup of 9: client 57 again */
    tfd_parse_fixture("2817/fdinfo/11", &c[2]); /* client 58 */
    for (int i = 0; i < 3; i++)
        c[i].pid = 2817;
    tfd_run(&a, c, 3, TFD_S);
    cr_assert_eq(a.n, 1);
    cr_assert_eq(a.out[0].n_procs, 1);
    const struct tele_proc *p = &a.out[0].procs[0];
    cr_assert_eq(p->vram_bytes, 8192 * TFD_MIB + 1572868 * TFD_KIB);
    cr_assert_eq(p->gtt_bytes, 256 * TFD_MIB + 8196 * TFD_KIB);
    cr_assert_not(p->busy_valid); /* first sample */
    tele_fdinfo_hist_fini(&a.h);
}

Test(tele_fdinfo, busy_is_the_busiest_engine_over_the_interval) {
    struct tfd_agg a;
    memset(&a, 0, sizeof(a));
    struct tele_fdinfo_client s1[] = {tfd_busy(100, 5, 7, 5 * TFD_S, 1 * TFD_S)};
    tfd_run(&a, s1, 1, 10 * TFD_S);
    cr_assert_not(a.out[0].procs[0].busy_valid);
    /* 0.5 s later: gfx +250 ms (50 %), compute +400 ms (80 %) */
    struct tele_fdinfo_client s2[] = {tfd_busy(100, 5, 7, 5250000000ull, 1400000000ull)};
    tfd_run(&a, s2, 1, 10 * TFD_S + 500000000ull);
    cr_assert(a.out[0].procs[0].busy_valid);
    cr_assert_float_eq(a.out[0].procs[0].busy_pct, 80.0, 1e-9);
    tele_fdinfo_hist_fini(&a.h);
}

Test(tele_fdinfo, busy_sums_a_process_clients_and_caps_at_100) {
    struct tfd_agg a;
    memset(&a, 0, sizeof(a));
    struct tele_fdinfo_client s1[] = {tfd_busy(100, 5, 7, 0, 1 * TFD_S),
                                      tfd_busy(100, 6, 8, 0, 2 * TFD_S), tfd_busy(200, 3, 9, 0, 0)};
    tfd_run(&a, s1, 3, TFD_S);
    /* 1 s later: pid 100 compute +700 ms and +600 ms on its two clients; pid 200 +300 ms */
    struct tele_fdinfo_client s2[] = {tfd_busy(100, 5, 7, 0, 1700000000ull),
                                      tfd_busy(100, 6, 8, 0, 2600000000ull),
                                      tfd_busy(200, 3, 9, 0, 300000000ull)};
    tfd_run(&a, s2, 3, 2 * TFD_S);
    cr_assert_eq(a.out[0].n_procs, 2);
    cr_assert_eq(a.out[0].procs[0].pid, 100); /* equal VRAM: by pid */
    cr_assert_float_eq(a.out[0].procs[0].busy_pct, 100.0, 1e-9);
    cr_assert_float_eq(a.out[0].procs[1].busy_pct, 30.0, 1e-9);
    tele_fdinfo_hist_fini(&a.h);
}

Test(tele_fdinfo, a_counter_that_goes_back_keeps_its_larger_value) {
    struct tfd_agg a;
    memset(&a, 0, sizeof(a));
    struct tele_fdinfo_client s1[] = {tfd_busy(100, 5, 7, 2 * TFD_S, 0)};
    tfd_run(&a, s1, 1, TFD_S);
    struct tele_fdinfo_client s2[] = {tfd_busy(100, 5, 7, 1 * TFD_S, 0)}; /* went back */
    tfd_run(&a, s2, 1, 2 * TFD_S);
    cr_assert_float_eq(a.out[0].procs[0].busy_pct, 0.0, 1e-9);
    /* catching up to 2.25 s counts from the 2 s seen before, not from 1 s */
    struct tele_fdinfo_client s3[] = {tfd_busy(100, 5, 7, 2250000000ull, 0)};
    tfd_run(&a, s3, 1, 3 * TFD_S);
    cr_assert_float_eq(a.out[0].procs[0].busy_pct, 25.0, 1e-9);
    tele_fdinfo_hist_fini(&a.h);
}

Test(tele_fdinfo, an_engine_that_appears_counts_from_zero_and_capacity_divides) {
    struct tfd_agg a;
    memset(&a, 0, sizeof(a));
    struct tele_fdinfo_client s1[] = {tfd_client(
        100, 5, "x", "drm-driver:\tamdgpu\ndrm-pdev:\t" TFD_DGPU "\ndrm-client-id:\t7\n")};
    tfd_run(&a, s1, 1, TFD_S);
    struct tele_fdinfo_client s2[] = {tfd_client(100, 5, "x",
                                                 "drm-driver:\tamdgpu\ndrm-pdev:\t" TFD_DGPU
                                                 "\ndrm-client-id:\t7\n"
                                                 "drm-engine-capacity-compute:\t4\n"
                                                 "drm-engine-compute:\t2000000000 ns\n")};
    tfd_run(&a, s2, 1, 2 * TFD_S);
    cr_assert(a.out[0].procs[0].busy_valid);
    cr_assert_float_eq(a.out[0].procs[0].busy_pct, 50.0, 1e-9); /* 2 s of 4 engines in 1 s */
    cr_assert_not(a.out[0].procs[0].vram_valid);
    cr_assert_eq(a.out[0].src[TELE_F_PROC_VRAM], 0); /* no VRAM keys (an APP APU): not 0 */
    tele_fdinfo_hist_fini(&a.h);
}

Test(tele_fdinfo, a_first_client_after_an_empty_sample) {
    struct tfd_agg a;
    memset(&a, 0, sizeof(a));
    tfd_run(&a, NULL, 0, TFD_S);
    cr_assert_eq(a.n, 0); /* no device known yet */
    struct tele_fdinfo_client s2[] = {tfd_busy(100, 5, 7, TFD_S, 0)};
    tfd_run(&a, s2, 1, 2 * TFD_S);
    cr_assert_eq(a.n, 1);
    cr_assert_not(a.out[0].procs[0].busy_valid); /* its first sample */
    tele_fdinfo_hist_fini(&a.h);
}

Test(tele_fdinfo, the_list_keeps_the_largest_and_counts_the_rest) {
    struct tfd_agg a;
    struct tele_fdinfo_client c[TELE_MAX_PROCS + 8];
    char text[256];
    uint64_t sum = 0;
    memset(&a, 0, sizeof(a));
    for (int i = 0; i < TELE_MAX_PROCS + 8; i++) {
        snprintf(text, sizeof(text),
                 "drm-driver:\tamdgpu\ndrm-pdev:\t" TFD_APU "\ndrm-client-id:\t%d\n"
                 "drm-memory-vram:\t%d KiB\n",
                 i, (i + 1) * 4);
        c[i] = tfd_client(1000 + i, 3, "p", text);
        sum += (uint64_t)(i + 1) * 4 * TFD_KIB;
    }
    tfd_run(&a, c, TELE_MAX_PROCS + 8, TFD_S);
    cr_assert_eq(a.out[0].n_procs, TELE_MAX_PROCS);
    cr_assert_eq(a.out[0].procs_more, 8);
    cr_assert_eq(a.out[0].procs[0].pid, 1000 + TELE_MAX_PROCS + 7); /* the largest first */
    cr_assert_eq(a.out[0].procs[TELE_MAX_PROCS - 1].pid, 1008);
    double v;
    cr_assert(tele_get(&a.out[0], TELE_F_PROC_VRAM, &v));
    cr_assert_float_eq(v, (double)sum, 0); /* listed and unlisted */
    tele_fdinfo_hist_fini(&a.h);
}

/* ---- the provider on a proc tree ---- */

struct tfd {
    struct tele_roots roots;
    struct tele_ctx ctx;
    void *state;
    char reason[TELE_REASON_BYTES];
    struct tele_gpu out[TELE_MAX_GPUS];
    size_t n;
};

static void tfd_emit(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                     const char *text) {
    (void)ctx, (void)sev, (void)pci, (void)text;
}

static int tfd_open_at(struct tfd *t, const char *proc, int32_t self) {
    memset(t, 0, sizeof(*t));
    snprintf(t->roots.proc, sizeof(t->roots.proc), "%s", proc);
    t->ctx = (struct tele_ctx){&t->roots, self, tfd_emit, NULL};
    return tele_prov_fdinfo_ops.open(&t->ctx, &t->state, t->reason, sizeof(t->reason));
}

static void tfd_sample(struct tfd *t) {
    cr_assert_eq(tele_prov_fdinfo_ops.sample(t->state, t->out, TELE_MAX_GPUS, &t->n, t->reason,
                                             sizeof(t->reason)),
                 0, "%s", t->reason);
}

static const struct tele_gpu *tfd_gpu(const struct tfd *t, const char *pci) {
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->out[i].pci, pci) == 0)
            return &t->out[i];
    cr_assert_fail("no record for %s", pci);
    return NULL;
}

Test(tele_fdinfo, rdna3_apu_tree_lists_the_processes_of_each_gpu) {
    char root[TELE_PATH_MAX];
    struct tfd t;
    cr_assert_eq(
        tfd_open_at(&t, rs_test_fixture("telemetry/rdna3-apu/proc", root, sizeof(root)), 5120), 0,
        "%s", t.reason);
    tfd_sample(&t);
    cr_assert_eq(t.n, 2);
    const struct tele_gpu *d = tfd_gpu(&t, TFD_DGPU), *a = tfd_gpu(&t, TFD_APU);
    cr_assert_eq(d->vendor, TELE_VENDOR_AMD);
    cr_assert_eq(d->procs_src, 1);
    cr_assert_eq(d->n_procs, 4);
    cr_assert_eq(d->procs[0].pid, 2817);
    cr_assert_str_eq(d->procs[0].name, "python3");
    cr_assert_eq(d->procs[0].vram_bytes, 8192 * TFD_MIB + 1572868 * TFD_KIB);
    cr_assert_eq(d->procs[1].pid, 3012);
    cr_assert_eq(d->procs[1].vram_bytes, 4352 * TFD_MIB);
    cr_assert_eq(d->procs[2].pid, 6001);
    cr_assert_str_eq(d->procs[2].name, ""); /* no comm */
    cr_assert_eq(d->procs[2].vram_bytes, 512 * TFD_MIB);
    cr_assert_eq(d->procs[3].pid, 5120);
    cr_assert(d->procs[3].self);
    cr_assert_not(d->procs[0].self);
    cr_assert(d->procs[3].vram_valid); /* "drm-resident-vram:\t0" */
    cr_assert_eq(d->procs[3].gtt_bytes, 12 * TFD_KIB);
    double v;
    cr_assert(tele_get(d, TELE_F_PROC_VRAM, &v));
    cr_assert_float_eq(v, (double)((8192 + 4352 + 512) * TFD_MIB + 1572868 * TFD_KIB), 0);
    cr_assert_eq(a->n_procs, 2);
    cr_assert_str_eq(a->procs[0].name, "gnome-shell");
    cr_assert_eq(a->procs[0].vram_bytes, (98304 + 16384) * TFD_KIB);
    cr_assert_eq(a->procs[0].gtt_bytes, (45056 + 8192) * TFD_KIB);
    cr_assert_str_eq(a->procs[1].name, "Xwayland");
    cr_assert(tele_get(a, TELE_F_PROC_VRAM, &v));
    cr_assert_float_eq(v, (double)((98304 + 16384 + 24576) * TFD_KIB), 0);
    cr_assert_not(d->procs[0].busy_valid);
    tfd_sample(&t); /* unchanged counters: valid, and idle */
    cr_assert(tfd_gpu(&t, TFD_DGPU)->procs[0].busy_valid);
    cr_assert_float_eq(tfd_gpu(&t, TFD_DGPU)->procs[0].busy_pct, 0.0, 0);
    tele_prov_fdinfo_ops.close(t.state);
}

static void tfd_mkdir(const char *a, const char *b, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", a, b);
    cr_assert_eq(mkdir(out, 0755), 0, "%s", out);
}

Test(tele_fdinfo, a_client_that_goes_away_leaves_an_empty_list) {
    char root[256], pid[512], fdinfo[768], path[1024];
    struct tfd t;
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    tfd_mkdir(root, "777", pid, sizeof(pid));
    tfd_mkdir(pid, "fdinfo", fdinfo, sizeof(fdinfo));
    rs_test_write_file(pid, "comm", "python3\n", path, sizeof(path));
    rs_test_write_file(fdinfo, "4",
                       "drm-driver:\tamdgpu\ndrm-pdev:\t" TFD_DGPU "\ndrm-client-id:\t1\n"
                       "drm-memory-vram:\t2048 KiB\n",
                       path, sizeof(path));
    cr_assert_eq(tfd_open_at(&t, root, 1), 0, "%s", t.reason);
    tfd_sample(&t);
    cr_assert_eq(t.n, 1);
    cr_assert_eq(t.out[0].n_procs, 1);
    cr_assert_eq(unlink(path), 0); /* the descriptor is closed */
    tfd_sample(&t);
    cr_assert_eq(t.n, 1);
    cr_assert_eq(t.out[0].procs_src, 1);
    cr_assert_eq(t.out[0].n_procs, 0);
    double v;
    cr_assert(tele_get(&t.out[0], TELE_F_PROC_VRAM, &v));
    cr_assert_float_eq(v, 0, 0);
    tele_prov_fdinfo_ops.close(t.state);
    rs_test_rmtree(root);
}

Test(tele_fdinfo, no_client_yet_is_fine_and_a_missing_root_is_not) {
    char root[256], want[300];
    struct tfd t;
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    cr_assert_eq(tfd_open_at(&t, root, 1), 0, "%s", t.reason);
    tfd_sample(&t);
    cr_assert_eq(t.n, 0);
    tele_prov_fdinfo_ops.close(t.state);
    rs_test_rmtree(root);
    snprintf(want, sizeof(want), "not found: %s", root);
    cr_assert_eq(tfd_open_at(&t, root, 1), -ENOENT);
    cr_assert_str_eq(t.reason, want);
}
