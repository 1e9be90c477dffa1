/* The amdgpu sysfs text files, one reader per group: memory, PCIe link, busy, clocks, hwmon
 * sensors and RAS error counts (Documentation/gpu/amdgpu/driver-misc.rst, thermal.rst). */
#include "backend/telemetry/tele_prov.h"
#include "backend/telemetry/tele_sysfs_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Large enough for any of these files: pp_dpm_* lists at most a few dozen levels. */
#define TELE_SYSFS_READ_TEXT 4096

bool tele_sysfs_read_u64(const char *dir, const char *name, uint64_t *out) {
    char path[TELE_PATH_MAX];
    return tele_path(path, sizeof(path), dir, name) == 0 && tele_read_u64(path, out) == 0;
}

static bool tele_sysfs_read_file(const char *dir, const char *name, char *buf, size_t cap) {
    char path[TELE_PATH_MAX];
    return tele_path(path, sizeof(path), dir, name) == 0 && tele_read_text(path, buf, cap) >= 0;
}

/* dir/name times scale into field f, when readable and a number. */
static void tele_sysfs_read_set(const char *dir, const char *name, struct tele_gpu *g,
                                enum tele_field f, double scale) {
    uint64_t v;
    if (tele_sysfs_read_u64(dir, name, &v))
        tele_set(g, f, (double)v * scale);
}

/* "16.0 GT/s PCIe" -> generation 4; "Unknown" (link down, device in D3cold) -> false. */
static bool tele_sysfs_read_pcie_gen(const char *text, double *gen) {
    static const double gts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    char *end;
    double v = strtod(text, &end);
    if (end == text || strncmp(end, " GT/s", 5) != 0)
        return false;
    for (size_t i = 0; i < sizeof(gts) / sizeof(gts[0]); i++)
        if (fabs(v - gts[i]) < 0.01) {
            *gen = (double)(i + 1);
            return true;
        }
    return false;
}

/* Never dev/pcie_bw: the driver counts PCIe traffic for a whole second inside that read. */
static void tele_sysfs_read_pcie(const char *dev, struct tele_gpu *g) {
    char text[64];
    double gen;
    uint64_t width;
    if (tele_sysfs_read_file(dev, "current_link_speed", text, sizeof(text)) &&
        tele_sysfs_read_pcie_gen(text, &gen))
        tele_set(g, TELE_F_PCIE_GEN, gen);
    /* 0 lanes is what the PCI core shows for a link it cannot read: not a width. */
    if (tele_sysfs_read_u64(dev, "current_link_width", &width) && width > 0)
        tele_set(g, TELE_F_PCIE_WIDTH, (double)width);
}

void tele_sysfs_read_idle_safe(const char *dev, struct tele_gpu *g) {
    static const struct {
        const char *file;
        enum tele_field f;
    } mem[] = {
        {"mem_info_vram_total", TELE_F_VRAM_TOTAL},
        {"mem_info_vram_used", TELE_F_VRAM_USED},
        {"mem_info_vis_vram_total", TELE_F_VIS_VRAM_TOTAL},
        {"mem_info_vis_vram_used", TELE_F_VIS_VRAM_USED},
        {"mem_info_gtt_total", TELE_F_GTT_TOTAL},
        {"mem_info_gtt_used", TELE_F_GTT_USED},
    };
    for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++)
        tele_sysfs_read_set(dev, mem[i].file, g, mem[i].f, 1.0);
    tele_sysfs_read_pcie(dev, g);
}

/* The current level of a pp_dpm_* list ("1: 2482Mhz *"): the line marked with '*'. */
static bool tele_sysfs_read_dpm(const char *text, double *mhz) {
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        const char *colon = memchr(line, ':', len);
        if (colon && memchr(line, '*', len)) {
            char *end;
            const char *num = colon + 1 + strspn(colon + 1, " \t");
            unsigned long long v = strtoull(num, &end, 10);
            if (!isdigit((unsigned char)*num) || strncasecmp(end, "mhz", 3) != 0)
                return false; /* strtoull would take "-5" as a huge number */
            *mhz = (double)v;
            return true;
        }
        line += len + (line[len] == '\n');
    }
    return false;
}

static void tele_sysfs_read_clock(const char *dev, const char *name, struct tele_gpu *g,
                                  enum tele_field f) {
    char text[TELE_SYSFS_READ_TEXT];
    double mhz;
    if (tele_sysfs_read_file(dev, name, text, sizeof(text)) && tele_sysfs_read_dpm(text, &mhz))
        tele_set(g, f, mhz);
}

/* Which field tempN_input is: its label when the driver gives one, else amdgpu's fixed order
 * (temp1 edge, temp2 junction, temp3 mem). -1: a sensor not shown. */
static int tele_sysfs_read_temp_field(const char *hwmon, int n) {
    static const enum tele_field by_index[] = {TELE_F_TEMP, TELE_F_TEMP_HOTSPOT, TELE_F_TEMP_MEM};
    char name[32], label[32], path[TELE_PATH_MAX];
    snprintf(name, sizeof(name), "temp%d_label", n);
    if (tele_path(path, sizeof(path), hwmon, name) < 0)
        return -1;
    if (tele_read_line(path, label, sizeof(label)) < 0)
        return n <= 3 ? (int)by_index[n - 1] : -1;
    if (strcmp(label, "edge") == 0)
        return TELE_F_TEMP;
    if (strcmp(label, "junction") == 0)
        return TELE_F_TEMP_HOTSPOT;
    if (strcmp(label, "mem") == 0)
        return TELE_F_TEMP_MEM;
    return -1;
}

static void tele_sysfs_read_temps(const char *hwmon, struct tele_gpu *g) {
    for (int n = 1; n <= 8; n++) {
        char name[32];
        uint64_t mc;
        snprintf(name, sizeof(name), "temp%d_input", n);
        if (!tele_sysfs_read_u64(hwmon, name, &mc))
            continue;
        int f = tele_sysfs_read_temp_field(hwmon, n);
        if (f >= 0 && !g->src[f])
            tele_set(g, (enum tele_field)f, (double)mc / 1000.0); /* millidegrees */
    }
}

/* hwmon sysfs-interface units: millidegrees C, microwatts, rpm, pwm 0..255. */
static void tele_sysfs_read_hwmon(const char *hwmon, struct tele_gpu *g) {
    uint64_t v;
    if (!hwmon[0])
        return;
    tele_sysfs_read_temps(hwmon, g);
    /* Newer SMUs drop power1_average (or fail its read) and offer power1_input instead. */
    if (tele_sysfs_read_u64(hwmon, "power1_average", &v) ||
        tele_sysfs_read_u64(hwmon, "power1_input", &v))
        tele_set(g, TELE_F_POWER, (double)v / 1e6);
    tele_sysfs_read_set(hwmon, "power1_cap", g, TELE_F_POWER_CAP, 1e-6);
    tele_sysfs_read_set(hwmon, "fan1_input", g, TELE_F_FAN_RPM, 1.0);
    if (tele_sysfs_read_u64(hwmon, "pwm1", &v) && v <= 255)
        tele_set(g, TELE_F_FAN_PCT, (double)v * 100.0 / 255.0);
}

/* "ue: N\nce: M\n" (newer kernels add "de: K"); false unless both counts parse. */
static bool tele_sysfs_read_ras_file(const char *dir, const char *name, uint64_t *ue,
                                     uint64_t *ce) {
    char text[256];
    if (!tele_sysfs_read_file(dir, name, text, sizeof(text)))
        return false;
    const char *u = strstr(text, "ue: "), *c = strstr(text, "ce: ");
    char *end_u, *end_c;
    if (!u || !c)
        return false;
    if (!isdigit((unsigned char)u[4]) || !isdigit((unsigned char)c[4]))
        return false; /* no sign: strtoull would take "-1" as a huge count */
    *ue = strtoull(u + 4, &end_u, 10);
    *ce = strtoull(c + 4, &end_c, 10);
    return end_u != u + 4 && end_c != c + 4;
}

/* Sum every ras/<block>_err_count. A read queries the blocks' error registers. */
static void tele_sysfs_read_ras(const char *dev, struct tele_gpu *g) {
    char dir[TELE_PATH_MAX];
    if (tele_path(dir, sizeof(dir), dev, "ras") < 0)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    uint64_t sum_ue = 0, sum_ce = 0;
    bool any = false;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        uint64_t ue, ce;
        if (len <= 10 || strcmp(e->d_name + len - 10, "_err_count") != 0 ||
            !tele_sysfs_read_ras_file(dir, e->d_name, &ue, &ce))
            continue;
        sum_ue += ue;
        sum_ce += ce;
        any = true;
    }
    closedir(d);
    if (any) {
        tele_set(g, TELE_F_ECC_UE, (double)sum_ue);
        tele_set(g, TELE_F_ECC_CE, (double)sum_ce);
    }
}

void tele_sysfs_read_awake(const struct tele_sysfs_card *c, struct tele_gpu *g) {
    uint64_t pct;
    if (tele_sysfs_read_u64(c->dev, "gpu_busy_percent", &pct) && pct <= 100)
        tele_set(g, TELE_F_BUSY, (double)pct);
    if (tele_sysfs_read_u64(c->dev, "mem_busy_percent", &pct) && pct <= 100)
        tele_set(g, TELE_F_MEM_BUSY, (double)pct);
    tele_sysfs_read_clock(c->dev, "pp_dpm_sclk", g, TELE_F_SCLK);
    tele_sysfs_read_clock(c->dev, "pp_dpm_mclk", g, TELE_F_MCLK);
    tele_sysfs_read_hwmon(c->hwmon, g);
    tele_sysfs_read_ras(c->dev, g);
}
