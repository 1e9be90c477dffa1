/* libFuzzer target for the amdgpu sysfs parsers: arbitrary bytes as a gpu_metrics table, as text
 * for the uevent, PCI address and runtime-PM parsers, and, through a temporary tree whose files
 * all name one file holding them, as every text file the sysfs readers open (pp_dpm_*, hwmon,
 * RAS counts, link speed, KFD node properties), with invariants checked. */
#include "backend/telemetry/tele_prov.h"
#include "backend/telemetry/tele_sysfs_internal.h"
#include "tests/fuzz/fuzz_target.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_SYSFS_GPU_ID   "4660" /* the KFD node's gpu_id, a fixed file */
#define FUZZ_SYSFS_GPU_ID_N 4660u
#define FUZZ_SYSFS_KFD      "sys/class/kfd/kfd"

/* The tree under /tmp/fuzz_sysfs.PID: directories, links to the input file, and fixed files,
 * created in this order and removed in the reverse one. */
static const struct {
    char kind; /* 'd' directory, 'l' link to BASE/input, 'f' the gpu_id file */
    const char *rel;
} fuzz_sysfs_tree[] = {
    {'d', "dev"},
    {'d', "dev/power"},
    {'d', "dev/ras"},
    {'l', "dev/pp_dpm_sclk"},
    {'l', "dev/pp_dpm_mclk"},
    {'l', "dev/gpu_busy_percent"},
    {'l', "dev/mem_busy_percent"},
    {'l', "dev/current_link_speed"},
    {'l', "dev/current_link_width"},
    {'l', "dev/mem_info_vram_total"},
    {'l', "dev/gpu_metrics"},
    {'l', "dev/power/runtime_status"},
    {'l', "dev/ras/umc_err_count"},
    {'d', "hwmon"},
    {'l', "hwmon/temp1_input"},
    {'l', "hwmon/temp1_label"},
    {'l', "hwmon/temp2_input"},
    {'l', "hwmon/power1_average"},
    {'l', "hwmon/power1_cap"},
    {'l', "hwmon/fan1_input"},
    {'l', "hwmon/pwm1"},
    {'d', "sys"},
    {'d', "sys/class"},
    {'d', "sys/class/kfd"},
    {'d', FUZZ_SYSFS_KFD},
    {'d', FUZZ_SYSFS_KFD "/topology"},
    {'d', FUZZ_SYSFS_KFD "/topology/nodes"},
    {'d', FUZZ_SYSFS_KFD "/topology/nodes/1"},
    {'f', FUZZ_SYSFS_KFD "/topology/nodes/1/gpu_id"},
    {'l', FUZZ_SYSFS_KFD "/topology/nodes/1/properties"},
    {'d', FUZZ_SYSFS_KFD "/proc"},
    {'d', FUZZ_SYSFS_KFD "/proc/77"},
    {'l', FUZZ_SYSFS_KFD "/proc/77/vram_" FUZZ_SYSFS_GPU_ID},
};
#define FUZZ_SYSFS_TREE (sizeof(fuzz_sysfs_tree) / sizeof(fuzz_sysfs_tree[0]))

static char fuzz_sysfs_base[64];  /* /tmp/fuzz_sysfs.PID */
static char fuzz_sysfs_input[96]; /* BASE/input, the file every link names */

static void fuzz_sysfs_path(char *out, size_t cap, const char *rel) {
    FUZZ_CHECK(tele_path(out, cap, fuzz_sysfs_base, rel) == 0);
}

static void fuzz_sysfs_remove(void) {
    char path[TELE_PATH_MAX];
    for (size_t i = FUZZ_SYSFS_TREE; i-- > 0;) {
        fuzz_sysfs_path(path, sizeof(path), fuzz_sysfs_tree[i].rel);
        if (fuzz_sysfs_tree[i].kind == 'd')
            rmdir(path);
        else
            unlink(path);
    }
    unlink(fuzz_sysfs_input);
    rmdir(fuzz_sysfs_base);
}

static void fuzz_sysfs_write(const char *path, const void *bytes, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(n == 0 || write(fd, bytes, n) == (ssize_t)n);
    close(fd);
}

/* Build the tree once per process; it goes at exit. */
static void fuzz_sysfs_setup(void) {
    char path[TELE_PATH_MAX];
    snprintf(fuzz_sysfs_base, sizeof(fuzz_sysfs_base), "/tmp/fuzz_sysfs.%ld", (long)getpid());
    snprintf(fuzz_sysfs_input, sizeof(fuzz_sysfs_input), "%s/input", fuzz_sysfs_base);
    fuzz_sysfs_remove(); /* what a killed run of a process with this pid left */
    FUZZ_CHECK(mkdir(fuzz_sysfs_base, 0700) == 0);
    fuzz_sysfs_write(fuzz_sysfs_input, "", 0);
    for (size_t i = 0; i < FUZZ_SYSFS_TREE; i++) {
        fuzz_sysfs_path(path, sizeof(path), fuzz_sysfs_tree[i].rel);
        if (fuzz_sysfs_tree[i].kind == 'd')
            FUZZ_CHECK(mkdir(path, 0700) == 0);
        else if (fuzz_sysfs_tree[i].kind == 'l')
            FUZZ_CHECK(symlink(fuzz_sysfs_input, path) == 0);
        else
            fuzz_sysfs_write(path, FUZZ_SYSFS_GPU_ID "\n", sizeof(FUZZ_SYSFS_GPU_ID));
    }
    atexit(fuzz_sysfs_remove);
}

/* What a reader with a buffer of cap bytes sees of the input: its first cap - 1 bytes, up to
 * the first NUL. */
struct fuzz_sysfs_text {
    char s[4096];
};

static char *fuzz_sysfs_seen(struct fuzz_sysfs_text *t, const uint8_t *data, size_t size,
                             size_t cap) {
    size_t n = size < cap - 1 ? size : cap - 1;
    memcpy(t->s, data, n);
    t->s[n] = '\0';
    return t->s;
}

static bool fuzz_sysfs_has_ci(const char *s, const char *needle) {
    for (size_t n = strlen(needle); *s; s++)
        if (strncasecmp(s, needle, n) == 0)
            return true;
    return false;
}

/* ---- gpu_metrics ---- */

static void fuzz_sysfs_check_metrics(const struct tele_sysfs_metrics *m, int rc) {
    static const enum tele_field fields[] = {TELE_F_TEMP, TELE_F_TEMP_HOTSPOT, TELE_F_TEMP_MEM,
                                             TELE_F_BUSY, TELE_F_MEM_BUSY,     TELE_F_POWER,
                                             TELE_F_SCLK, TELE_F_MCLK,         TELE_F_FAN_RPM};
    FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -EPROTONOSUPPORT);
    for (unsigned f = 0; f < TELE_F_COUNT; f++) {
        bool known = false;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
            known |= (unsigned)fields[i] == f;
        FUZZ_CHECK(!m->set[f] || (rc == 0 && known));
        FUZZ_CHECK(m->set[f] || m->f[f] == 0);
        FUZZ_CHECK(!m->set[f] || (isfinite(m->f[f]) && m->f[f] >= 0 && m->f[f] < UINT16_MAX));
    }
}

/* The table as the blob: nothing past its structure_size is read, so cutting the bytes there
 * or changing those beyond it changes nothing; the file reader agrees with the buffer parser. */
static void fuzz_sysfs_metrics(const uint8_t *data, size_t size) {
    static struct tele_sysfs_metrics m, again;
    int rc = tele_sysfs_metrics_parse(data, size, &m);
    fuzz_sysfs_check_metrics(&m, rc);
    if (size >= 4)
        FUZZ_CHECK(m.format_rev == data[2] && m.content_rev == data[3]);
    if (rc == 0) {
        size_t table = (size_t)data[0] | (size_t)data[1] << 8;
        FUZZ_CHECK(table >= 4 && table <= size);
        FUZZ_CHECK(tele_sysfs_metrics_parse(data, table, &again) == 0);
        FUZZ_CHECK(memcmp(&m, &again, sizeof(m)) == 0);
        uint8_t *copy = malloc(size);
        FUZZ_CHECK(copy != NULL);
        memcpy(copy, data, size);
        for (size_t i = table; i < size; i++)
            copy[i] ^= 0xa5;
        FUZZ_CHECK(tele_sysfs_metrics_parse(copy, size, &again) == 0);
        FUZZ_CHECK(memcmp(&m, &again, sizeof(m)) == 0);
        free(copy);
    }

    /* dev/gpu_metrics: the kernel hands out at most a page */
    char dev[TELE_PATH_MAX];
    static struct tele_gpu g;
    fuzz_sysfs_path(dev, sizeof(dev), "dev");
    tele_gpu_init(&g, "0000:03:00.0");
    tele_sysfs_metrics_read(dev, &g);
    rc = tele_sysfs_metrics_parse(data, size < 4096 ? size : 4096, &m);
    for (unsigned f = 0; f < TELE_F_COUNT; f++) {
        FUZZ_CHECK((g.src[f] != 0) == (rc == 0 && m.set[f]));
        FUZZ_CHECK(!g.src[f] || g.f[f] == m.f[f]);
    }
}

/* ---- the text files, through the tree ---- */

/* The input as tele_read_u64 takes it (every number file of the tree). */
struct fuzz_sysfs_u64 {
    bool ok;
    uint64_t v;
};

/* Field f: set when the number was read and is at most max, to it times mul over div (the
 * reader's own arithmetic, so the values compare equal). */
static void fuzz_sysfs_check_u64(const struct tele_gpu *g, enum tele_field f,
                                 const struct fuzz_sysfs_u64 *u, uint64_t max, double mul,
                                 double div) {
    FUZZ_CHECK((g->src[f] != 0) == (u->ok && u->v <= max));
    FUZZ_CHECK(!g->src[f] || g->f[f] == (double)u->v * mul / div);
}

/* Busy, clocks, hwmon and RAS of an awake card: every value from the one input. */
static void fuzz_sysfs_awake(const uint8_t *data, size_t size, const struct fuzz_sysfs_u64 *u) {
    static struct tele_sysfs_card c;
    static struct tele_gpu g;
    static struct fuzz_sysfs_text t;
    fuzz_sysfs_path(c.dev, sizeof(c.dev), "dev");
    fuzz_sysfs_path(c.hwmon, sizeof(c.hwmon), "hwmon");
    tele_gpu_init(&g, "0000:03:00.0");
    tele_sysfs_read_awake(&c, &g);
    fuzz_sysfs_check_u64(&g, TELE_F_BUSY, u, 100, 1, 1);
    fuzz_sysfs_check_u64(&g, TELE_F_MEM_BUSY, u, 100, 1, 1);
    fuzz_sysfs_check_u64(&g, TELE_F_POWER, u, UINT64_MAX, 1, 1e6);
    fuzz_sysfs_check_u64(&g, TELE_F_POWER_CAP, u, UINT64_MAX, 1e-6, 1);
    fuzz_sysfs_check_u64(&g, TELE_F_FAN_RPM, u, UINT64_MAX, 1, 1);
    FUZZ_CHECK((g.src[TELE_F_FAN_PCT] != 0) == (u->ok && u->v <= 255));
    FUZZ_CHECK(!g.src[TELE_F_FAN_PCT] || (g.f[TELE_F_FAN_PCT] >= 0 && g.f[TELE_F_FAN_PCT] <= 100));
    for (int f = TELE_F_TEMP; f <= TELE_F_TEMP_MEM; f++)
        FUZZ_CHECK(!g.src[f] || (u->ok && g.f[f] == (double)u->v / 1000.0));
    /* pp_dpm_sclk and pp_dpm_mclk: one file, so both or neither, from a line with '*' */
    const char *dpm = fuzz_sysfs_seen(&t, data, size, 4096);
    FUZZ_CHECK(g.src[TELE_F_SCLK] == g.src[TELE_F_MCLK]);
    FUZZ_CHECK(!g.src[TELE_F_SCLK] || g.f[TELE_F_SCLK] == g.f[TELE_F_MCLK]);
    FUZZ_CHECK(!g.src[TELE_F_SCLK] || (strchr(dpm, '*') && fuzz_sysfs_has_ci(dpm, "mhz")));
    FUZZ_CHECK(!g.src[TELE_F_SCLK] || (isfinite(g.f[TELE_F_SCLK]) && g.f[TELE_F_SCLK] >= 0));
    /* RAS: both counts or neither */
    const char *ras = fuzz_sysfs_seen(&t, data, size, 256);
    FUZZ_CHECK(g.src[TELE_F_ECC_UE] == g.src[TELE_F_ECC_CE]);
    FUZZ_CHECK(!g.src[TELE_F_ECC_UE] || (strstr(ras, "ue: ") && strstr(ras, "ce: ")));
}

/* Memory and PCIe link of any card. */
static void fuzz_sysfs_idle(const uint8_t *data, size_t size, const struct fuzz_sysfs_u64 *u) {
    static struct tele_gpu g;
    static struct fuzz_sysfs_text t;
    char dev[TELE_PATH_MAX];
    fuzz_sysfs_path(dev, sizeof(dev), "dev");
    tele_gpu_init(&g, "0000:03:00.0");
    tele_sysfs_read_idle_safe(dev, &g);
    fuzz_sysfs_check_u64(&g, TELE_F_VRAM_TOTAL, u, UINT64_MAX, 1, 1);
    FUZZ_CHECK(!g.src[TELE_F_VRAM_USED] && !g.src[TELE_F_GTT_TOTAL]); /* no such files */
    FUZZ_CHECK((g.src[TELE_F_PCIE_WIDTH] != 0) == (u->ok && u->v > 0));
    const char *speed = fuzz_sysfs_seen(&t, data, size, 64);
    double gen = g.f[TELE_F_PCIE_GEN];
    FUZZ_CHECK(!g.src[TELE_F_PCIE_GEN] ||
               (strstr(speed, " GT/s") && gen >= 1 && gen <= 6 && gen == (double)(int)gen));
}

/* power/runtime_status: its first line (of at most 31 bytes) decides. */
static void fuzz_sysfs_power(const uint8_t *data, size_t size) {
    static struct fuzz_sysfs_text t;
    char dev[TELE_PATH_MAX];
    fuzz_sysfs_path(dev, sizeof(dev), "dev");
    char *line = fuzz_sysfs_seen(&t, data, size, 32);
    line[strcspn(line, "\n")] = '\0';
    enum tele_power want = TELE_POWER_UNKNOWN;
    if (strcmp(line, "active") == 0)
        want = TELE_POWER_ACTIVE;
    else if (!strcmp(line, "suspended") || !strcmp(line, "suspending") || !strcmp(line, "resuming"))
        want = TELE_POWER_SUSPENDED;
    FUZZ_CHECK(tele_power_read(dev) == want);
    FUZZ_CHECK(tele_power_parse(line) == want);
}

/* The KFD node's properties and a process's VRAM file. */
static void fuzz_sysfs_kfd(const struct fuzz_sysfs_u64 *u) {
    static struct tele_sysfs_card cards[2];
    static struct tele_gpu out[2];
    char sys[TELE_PATH_MAX];
    fuzz_sysfs_path(sys, sizeof(sys), "sys");
    memset(cards, 0, sizeof(cards));
    snprintf(cards[0].pci, sizeof(cards[0].pci), "0000:03:00.0");
    snprintf(cards[1].pci, sizeof(cards[1].pci), "0001:c5:00.0");
    tele_sysfs_kfd_map(sys, cards, 2);
    for (int i = 0; i < 2; i++) {
        FUZZ_CHECK(cards[i].kfd_gpu_id == 0 || cards[i].kfd_gpu_id == FUZZ_SYSFS_GPU_ID_N);
        FUZZ_CHECK(cards[i].kfd_gpu_id || !cards[i].kfd_target);
    }
    FUZZ_CHECK(!(cards[0].kfd_gpu_id && cards[1].kfd_gpu_id)); /* one node, one address */
    cards[0].kfd_gpu_id = FUZZ_SYSFS_GPU_ID_N;
    cards[1].kfd_gpu_id = 0;
    tele_gpu_init(&out[0], cards[0].pci);
    tele_gpu_init(&out[1], cards[1].pci);
    tele_sysfs_kfd_vram(sys, cards, 2, out);
    FUZZ_CHECK(out[0].src[TELE_F_KFD_VRAM] && !out[1].src[TELE_F_KFD_VRAM]);
    FUZZ_CHECK(out[0].f[TELE_F_KFD_VRAM] == (u->ok ? (double)u->v : 0));
}

/* ---- pure text parsers ---- */

static void fuzz_sysfs_check_pci(const char *pci) {
    char again[16];
    FUZZ_CHECK(memchr(pci, '\0', 16) && strlen(pci) == 12);
    FUZZ_CHECK(tele_pci_norm(pci, again) && strcmp(again, pci) == 0);
}

/* KEY=value lookups into buffers of several sizes (cap 1 included). */
static void fuzz_sysfs_uevent(const char *text, size_t small) {
    static const char *const keys[] = {"PCI_SLOT_NAME", "DRIVER", "PCI_ID"};
    char out[64], pci[16];
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        size_t cap = k == 0 ? 1 + small % sizeof(out) : sizeof(out);
        memset(out, 'x', sizeof(out));
        if (tele_uevent_get(text, keys[k], out, cap)) {
            FUZZ_CHECK(memchr(out, '\0', cap) != NULL && strstr(text, keys[k]) != NULL);
            FUZZ_CHECK(!strchr(out, '\n'));
        } else {
            FUZZ_CHECK(out[0] == 'x');
        }
    }
    if (tele_uevent_pci(text, pci))
        fuzz_sysfs_check_pci(pci);
}

/* The first line as a PCI address, and numbers from the input as GC and KFD target versions. */
static void fuzz_sysfs_names(const uint8_t *data, size_t size, const char *text) {
    char line[64], pci[16], arch[24];
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(text, "\n"), text);
    if (tele_pci_norm(line, pci))
        fuzz_sysfs_check_pci(pci);
    uint32_t target = 0;
    memcpy(&target, data, size < sizeof(target) ? size : sizeof(target));
    size_t cap = 1 + (size > 4 ? data[4] % sizeof(arch) : 0);
    tele_sysfs_kfd_arch_from_target(target % 200000, arch, cap);
    FUZZ_CHECK(memchr(arch, '\0', cap) && (!arch[0] || arch[0] == 'g'));
    tele_sysfs_kfd_arch_from_target(target, arch, sizeof(arch));
    FUZZ_CHECK(!arch[0] || strncmp(arch, "gfx", 3) == 0);
    tele_sysfs_kfd_arch_from_gc(target & 0xff, target >> 8 & 0xff, target >> 16 & 0xff, arch,
                                sizeof(arch));
    FUZZ_CHECK(!arch[0] || strncmp(arch, "gfx", 3) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool ready;
    if (!ready) {
        fuzz_sysfs_setup();
        ready = true;
    }
    fuzz_sysfs_write(fuzz_sysfs_input, data, size);
    struct fuzz_sysfs_u64 u = {false, 0};
    u.ok = tele_read_u64(fuzz_sysfs_input, &u.v) == 0;

    fuzz_sysfs_metrics(data, size);
    fuzz_sysfs_awake(data, size, &u);
    fuzz_sysfs_idle(data, size, &u);
    fuzz_sysfs_power(data, size);
    fuzz_sysfs_kfd(&u);

    char *text = fuzz_cstring(data, size);
    fuzz_sysfs_uevent(text, size ? data[size - 1] : 0);
    fuzz_sysfs_names(data, size, text);
    free(text);
    return 0;
}

const char fuzz_target_name[] = "fuzz_sysfs";

/* Pieces of real sysfs text and gpu_metrics headers (v1.0 to v1.6, v2.0 to v2.4). */
const char *const fuzz_fragments[] = {
    "0: 500Mhz \n1: 2482Mhz *\n2: 2526Mhz \n",
    "3: 1249Mhz *\n",
    "0: 2.5GT/s, x1 619Mhz \n1: 16.0GT/s, x16 619Mhz *\n",
    "16.0 GT/s PCIe\n",
    "Unknown\n",
    "active\n",
    "suspended\n",
    "unsupported\n",
    "ue: 0\nce: 2\n",
    "de: 1\n",
    "Query currently inaccessible\n",
    "DRIVER=amdgpu\n",
    "PCI_SLOT_NAME=0000:03:00.0\n",
    "PCI_ID=1002:744C\nPCI_SUBSYS_ID=1DA2:E471\n",
    "MODALIAS=pci:v00001002d0000744Csv00001DA2sd0000E471bc03sc00i00\n",
    "location_id 768\n",
    "domain 0\n",
    "gfx_target_version 110000\n",
    "simd_count 192\n",
    "0x1002\n",
    "25753026560\n",
    "edge\n",
    "\x78\x00\x01\x03",             /* v1.3, 120 bytes */
    "\x50\x00\x01\x01",             /* v1.1 */
    "\x60\x00\x01",                 /* v1.0 needs a 0 content byte */
    "\x20\x01\x01\x04",             /* v1.4 */
    "\x80\x01\x01\x05",             /* v1.5 */
    "\x88\x01\x01\x06",             /* v1.6 */
    "\x60\x00\x02",                 /* v2.0 */
    "\x70\x00\x02\x01",             /* v2.1 */
    "\x80\x00\x02\x04",             /* v2.4 */
    "\xff\xff",                     /* unsupported */
    "\x43\x00\x53\x00\x4f\x00\x3e", /* temperatures */
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
