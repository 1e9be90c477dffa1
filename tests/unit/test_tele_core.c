/* Tests for the telemetry core: PCI addresses, file helpers, the per-GPU merge with its
 * priorities and sources, provider selection, and the service's snapshots. */
#include "backend/telemetry/tele.h"
#include "backend/telemetry/tele_internal.h"
#include "backend/telemetry/tele_prov.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(tele_core, .timeout = 30);

Test(tele_core, pci_addresses_are_normalised) {
    char out[16];
    cr_assert(tele_pci_norm("0000:03:00.0", out));
    cr_assert_str_eq(out, "0000:03:00.0");
    cr_assert(tele_pci_norm("00000000:2A:00.0", out)); /* NVML's spelling */
    cr_assert_str_eq(out, "0000:2a:00.0");
    cr_assert(tele_pci_norm("c5:00.1", out)); /* no domain */
    cr_assert_str_eq(out, "0000:c5:00.1");
    cr_assert_not(tele_pci_norm("card0", out));
    cr_assert_not(tele_pci_norm("0000:03:00.0x", out));
    cr_assert_not(tele_pci_norm("0000:03:20.0", out)); /* device > 31 */
    cr_assert_not(tele_pci_norm("0000:03:00.8", out)); /* function > 7 */
}

Test(tele_core, paths_join_roots) {
    char p[64];
    cr_assert_eq(tele_path(p, sizeof(p), "/fix/sys/", "/class/drm"), 0);
    cr_assert_str_eq(p, "/fix/sys/class/drm");
    cr_assert_eq(tele_path(p, sizeof(p), "/", "proc"), 0);
    cr_assert_str_eq(p, "/proc");
    cr_assert_eq(tele_path(p, 8, "/sys", "class/drm"), -ENAMETOOLONG);
}

Test(tele_core, numbers_from_files) {
    char dir[256], path[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    uint64_t v = 0;
    rs_test_write_file(dir, "dec", "25753026560\n", path, sizeof(path));
    cr_assert_eq(tele_read_u64(path, &v), 0);
    cr_assert_eq(v, 25753026560ull);
    rs_test_write_file(dir, "hex", "0x744c\n", path, sizeof(path));
    cr_assert_eq(tele_read_u64(path, &v), 0);
    cr_assert_eq(v, 0x744c);
    rs_test_write_file(dir, "bad", "banana\n", path, sizeof(path));
    cr_assert_eq(tele_read_u64(path, &v), -EINVAL);
    rs_test_write_file(dir, "trail", "12 MiB\n", path, sizeof(path));
    cr_assert_eq(tele_read_u64(path, &v), -EINVAL);
    rs_test_write_file(dir, "neg", "-1\n", path, sizeof(path));
    cr_assert_eq(tele_read_u64(path, &v), -EINVAL);
    snprintf(path, sizeof(path), "%s/missing", dir);
    cr_assert_eq(tele_read_u64(path, &v), -ENOENT);
    char line[16];
    rs_test_write_file(dir, "line", "active\nmore\n", path, sizeof(path));
    cr_assert_eq(tele_read_line(path, line, sizeof(line)), 0);
    cr_assert_str_eq(line, "active");
    rs_test_rmtree(dir);
}

Test(tele_core, pci_address_from_uevent) {
    char pci[16], drv[16];
    const char *ue = "DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_ID=1002:744C\n"
                     "PCI_SUBSYS_ID=1EAE:7901\nPCI_SLOT_NAME=0000:0A:00.0\n"
                     "MODALIAS=pci:v00001002d0000744Csv00001EAEsd00007901\n";
    cr_assert(tele_uevent_pci(ue, pci));
    cr_expect_str_eq(pci, "0000:0a:00.0");
    cr_assert(tele_uevent_get(ue, "DRIVER", drv, sizeof(drv)));
    cr_expect_str_eq(drv, "amdgpu");
    cr_expect_not(tele_uevent_get(ue, "DRIVE", drv, sizeof(drv)), "a prefix is not the key");
    cr_assert(tele_uevent_pci("PCI_SLOT_NAME=0000:03:00.0", pci), "no newline");
    cr_expect_str_eq(pci, "0000:03:00.0");
    cr_expect_not(tele_uevent_pci("DRIVER=amdgpu\nPCI_ID=1002:744C\n", pci));
    cr_expect_not(tele_uevent_pci("PCI_SLOT_NAME=banana\n", pci));
    cr_expect_not(tele_uevent_pci("", pci));
}

Test(tele_core, runtime_status_words) {
    cr_expect_eq(tele_power_parse("active"), TELE_POWER_ACTIVE);
    cr_expect_eq(tele_power_parse("suspended"), TELE_POWER_SUSPENDED);
    cr_expect_eq(tele_power_parse("suspending"), TELE_POWER_SUSPENDED);
    cr_expect_eq(tele_power_parse("resuming"), TELE_POWER_SUSPENDED);
    cr_expect_eq(tele_power_parse("unsupported"), TELE_POWER_UNKNOWN);
}

Test(tele_core, power_of_a_pci_device_from_sysfs) {
    char dir[256], d[512], path[640];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    const char *parts[] = {"bus", "bus/pci", "bus/pci/devices", "bus/pci/devices/0000:03:00.0",
                           "bus/pci/devices/0000:03:00.0/power"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        snprintf(d, sizeof(d), "%s/%s", dir, parts[i]);
        cr_assert_eq(mkdir(d, 0755), 0);
    }
    cr_assert_eq(tele_pci_power(dir, "0000:03:00.0"), TELE_POWER_UNKNOWN); /* no file */
    rs_test_write_file(d, "runtime_status", "suspended\n", path, sizeof(path));
    cr_assert_eq(tele_pci_power(dir, "0000:03:00.0"), TELE_POWER_SUSPENDED);
    rs_test_write_file(d, "runtime_status", "active\n", path, sizeof(path));
    cr_assert_eq(tele_pci_power(dir, "0000:03:00.0"), TELE_POWER_ACTIVE);
    cr_assert_eq(tele_pci_power(dir, "0000:04:00.0"), TELE_POWER_UNKNOWN);
    rs_test_rmtree(dir);
}

Test(tele_core, reasons_name_the_path) {
    char r[128];
    tele_reason_errno(r, sizeof(r), -EACCES, "/sys/kernel/debug");
    cr_assert_str_eq(r, "permission denied: /sys/kernel/debug (needs root)");
    tele_reason_errno(r, sizeof(r), -ENOENT, "/x/class/drm");
    cr_assert_str_eq(r, "not found: /x/class/drm");
}

static struct tele_gpu tele_core_rec(const char *pci) {
    struct tele_gpu g;
    tele_gpu_init(&g, pci);
    return g;
}

Test(tele_core, merge_first_provider_wins_per_field) {
    static struct tele_snap s;
    memset(&s, 0, sizeof(s));
    s.n_prov = 3;
    struct tele_gpu a = tele_core_rec("0000:03:00.0"), b = tele_core_rec("03:00.0");
    tele_set(&a, TELE_F_VRAM_USED, 1000);
    tele_set(&a, TELE_F_VRAM_TOTAL, 4000);
    tele_set(&b, TELE_F_VRAM_USED, 1100); /* a later provider: kept aside, not merged */
    tele_set(&b, TELE_F_TEMP, 61);
    snprintf(b.name, sizeof(b.name), "RX 7900 XTX");
    b.vendor = TELE_VENDOR_AMD;
    tele_merge_begin(&s);
    cr_assert_eq(tele_merge_add(&s, 0, &a, 1), 0);
    cr_assert_eq(tele_merge_add(&s, 2, &b, 1), 0);
    tele_merge_end(&s);
    cr_assert_eq(s.n_gpus, 1); /* the same PCI address spelled two ways */
    const struct tele_gpu *g = &s.gpus[0];
    double v;
    cr_assert(tele_get(g, TELE_F_VRAM_USED, &v));
    cr_assert_float_eq(v, 1000, 0);
    cr_assert_eq(g->src[TELE_F_VRAM_USED], 1);
    cr_assert(tele_get(g, TELE_F_TEMP, &v));
    cr_assert_float_eq(v, 61, 0);
    cr_assert_eq(g->src[TELE_F_TEMP], 3);
    cr_assert_not(tele_get(g, TELE_F_POWER, &v)); /* nobody read it: not valid, not 0 */
    cr_assert_str_eq(g->name, "RX 7900 XTX");
    cr_assert_eq(g->name_src, 3);
    cr_assert_eq(g->vendor, TELE_VENDOR_AMD);
    /* both providers' VRAM kept for the reconciliation */
    cr_assert_eq(g->vram_by_valid, (1u << 0) | (1u << 2));
    cr_assert_float_eq(g->vram_used_by[2], 1100, 0);
    cr_assert_float_eq(g->vram_total_by[0], 4000, 0);
    cr_assert_eq(g->vram_total_by_valid, 1u << 0, "the later provider read no total");
}

Test(tele_core, merge_orders_by_pci_and_counts_overflow) {
    static struct tele_snap s;
    static struct tele_gpu recs[TELE_MAX_GPUS + 2];
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < TELE_MAX_GPUS + 2; i++) {
        char pci[16];
        snprintf(pci, sizeof(pci), "0000:%02x:00.0", 0x40 - i);
        recs[i] = tele_core_rec(pci);
    }
    tele_merge_begin(&s);
    cr_assert_eq(tele_merge_add(&s, 0, recs, TELE_MAX_GPUS + 2), 2);
    tele_merge_end(&s);
    cr_assert_eq(s.n_gpus, TELE_MAX_GPUS);
    for (unsigned i = 1; i < s.n_gpus; i++)
        cr_assert_lt(strcmp(s.gpus[i - 1].pci, s.gpus[i].pci), 0);
    cr_assert_eq(s.gpus[3].index, 3);
    cr_assert_eq(tele_snap_find(&s, "0000:40:00.0")->index, (int)TELE_MAX_GPUS - 1);
    cr_assert_null(tele_snap_find(&s, "0000:2e:00.0")); /* dropped: no room */
    cr_assert_null(tele_snap_find(&s, "not a pci address"));
}

Test(tele_core, merge_lists_come_from_one_provider) {
    static struct tele_snap s;
    memset(&s, 0, sizeof(s));
    struct tele_gpu a = tele_core_rec("0000:03:00.0"), b = tele_core_rec("0000:03:00.0");
    a.procs_src = 1;
    a.n_procs = 1;
    a.procs[0].pid = 42;
    b.procs_src = 1;
    b.n_procs = 2;
    b.buddy.valid = true;
    b.buddy.free_bytes = 77;
    tele_merge_begin(&s);
    tele_merge_add(&s, 1, &a, 1);
    tele_merge_add(&s, 4, &b, 1);
    tele_merge_end(&s);
    cr_assert_eq(s.gpus[0].n_procs, 1);
    cr_assert_eq(s.gpus[0].procs[0].pid, 42);
    cr_assert_eq(s.gpus[0].procs_src, 2);
    cr_assert_eq(s.gpus[0].buddy_src, 5);
    cr_assert_eq(s.gpus[0].buddy.free_bytes, 77);
    cr_assert_eq(s.gpus[0].rings_src, 0);
}

Test(tele_core, unknown_provider_names_are_refused) {
    struct tele_conf c;
    tele_conf_default(&c);
    snprintf(c.only, sizeof(c.only), "sysfs,bogus");
    struct tele *t = NULL;
    char err[256];
    cr_assert_eq(tele_create(&t, &c, NULL, err, sizeof(err)), -EINVAL);
    cr_assert_null(t);
    cr_assert(strstr(err, "'bogus'"), "%s", err);
}

Test(tele_core, none_opens_nothing_and_publishes_empty_snapshots) {
    struct tele_conf c;
    tele_conf_default(&c);
    snprintf(c.only, sizeof(c.only), "none");
    struct tele *t = NULL;
    char err[256];
    cr_assert_eq(tele_create(&t, &c, NULL, err, sizeof(err)), 0);
    bool fresh = true;
    const struct tele_snap *s = tele_snap_read(t, &fresh);
    cr_assert_not(fresh);
    cr_assert_eq(s->seq, 0);
    tele_sample_now(t);
    s = tele_snap_read(t, &fresh);
    cr_assert(fresh);
    cr_assert_eq(s->seq, 1);
    cr_assert_eq(s->n_prov, 0);
    cr_assert_eq(s->n_gpus, 0);
    tele_destroy(t);
}

Test(tele_core, a_selected_provider_is_the_only_one_opened) {
    struct tele_conf c;
    tele_conf_default(&c);
    snprintf(c.only, sizeof(c.only), "debugfs");
    char dir[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(c.roots.debugfs, sizeof(c.roots.debugfs), "%s", dir); /* empty: nothing there */
    struct tele *t = NULL;
    char err[256];
    cr_assert_eq(tele_create(&t, &c, NULL, err, sizeof(err)), 0);
    tele_sample_now(t);
    const struct tele_snap *s = tele_snap_read(t, NULL);
    cr_assert_eq(s->n_prov, 1);
    cr_assert_str_eq(s->prov[0].name, "debugfs");
    cr_assert_eq(s->prov[0].status, TELE_UNAVAILABLE);
    cr_assert_neq(s->prov[0].reason[0], '\0');
    cr_assert_eq(s->n_gpus, 0);
    tele_destroy(t);
    rs_test_rmtree(dir);
}

Test(tele_core, field_names_round_trip) {
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        cr_assert_eq(tele_field_from_json(tele_field_json(f)), (int)f);
    cr_assert_eq(tele_field_from_json("nope"), -1);
    cr_assert_str_eq(tele_field_json(TELE_F_COUNT), "?");
    cr_assert_str_eq(tele_field_json(TELE_F_VRAM_USED), "vram_used_bytes");
}
