/* The amdgpu gpu_metrics table: a versioned binary struct (metrics_table_header, then
 * gpu_metrics_vX_Y from drivers/gpu/drm/amd/include/kgd_pp_interface.h) read field by field at
 * the offsets of each layout, never past the bytes actually read. */
#include "backend/telemetry/tele_prov.h"
#include "backend/telemetry/tele_sysfs_internal.h"

#include <errno.h>
#include <string.h>

/* The kernel hands out at most a page. */
#define TELE_SYSFS_METRICS_MAX 4096

/* One uint16_t member: where it lies and how to turn it into tele units. */
struct tele_sysfs_metrics_field {
    enum tele_field f;
    uint16_t off;
    double scale;
};

struct tele_sysfs_metrics_layout {
    uint8_t format, content_min, content_max;
    const struct tele_sysfs_metrics_field *fields;
    size_t n;
};

/* Offsets are those of the kernel structs on a 64-bit little-endian host (natural alignment).
 * Where two members feed one field, the first supported one wins: current clocks before the
 * averages (SMU 13.0.4 APUs leave current_gfxclk unsupported). */

/* v1.0: system_clock_counter right after the header; dGPU units C, W, %, MHz, rpm. */
static const struct tele_sysfs_metrics_field tele_sysfs_metrics_v1_0[] = {
    {TELE_F_TEMP, 16, 1}, {TELE_F_TEMP_HOTSPOT, 18, 1}, {TELE_F_TEMP_MEM, 20, 1},
    {TELE_F_BUSY, 28, 1}, {TELE_F_MEM_BUSY, 30, 1},     {TELE_F_POWER, 34, 1},
    {TELE_F_SCLK, 54, 1}, {TELE_F_SCLK, 40, 1},         {TELE_F_MCLK, 58, 1},
    {TELE_F_MCLK, 44, 1}, {TELE_F_FAN_RPM, 72, 1},
};

/* v1.1 to v1.3 share their first 96 bytes; 1.2 and 1.3 only append members. */
static const struct tele_sysfs_metrics_field tele_sysfs_metrics_v1_1[] = {
    {TELE_F_TEMP, 4, 1},  {TELE_F_TEMP_HOTSPOT, 6, 1}, {TELE_F_TEMP_MEM, 8, 1},
    {TELE_F_BUSY, 16, 1}, {TELE_F_MEM_BUSY, 18, 1},    {TELE_F_POWER, 22, 1},
    {TELE_F_SCLK, 54, 1}, {TELE_F_SCLK, 40, 1},        {TELE_F_MCLK, 58, 1},
    {TELE_F_MCLK, 44, 1}, {TELE_F_FAN_RPM, 72, 1},
};

/* v1.4 (MI300): no edge sensor, curr_socket_power, current_gfxclk[0] of 8. */
static const struct tele_sysfs_metrics_field tele_sysfs_metrics_v1_4[] = {
    {TELE_F_TEMP_HOTSPOT, 4, 1}, {TELE_F_TEMP_MEM, 6, 1},  {TELE_F_POWER, 10, 1},
    {TELE_F_BUSY, 12, 1},        {TELE_F_MEM_BUSY, 14, 1}, {TELE_F_SCLK, 240, 1},
    {TELE_F_MCLK, 280, 1},
};

/* v1.5 adds jpeg_activity[32] and two NAK counters, v1.6 six throttle residencies. */
static const struct tele_sysfs_metrics_field tele_sysfs_metrics_v1_5[] = {
    {TELE_F_TEMP_HOTSPOT, 4, 1}, {TELE_F_TEMP_MEM, 6, 1},  {TELE_F_POWER, 10, 1},
    {TELE_F_BUSY, 12, 1},        {TELE_F_MEM_BUSY, 14, 1}, {TELE_F_SCLK, 312, 1},
    {TELE_F_MCLK, 352, 1},
};

static const struct tele_sysfs_metrics_field tele_sysfs_metrics_v1_6[] = {
    {TELE_F_TEMP_HOTSPOT, 4, 1}, {TELE_F_TEMP_MEM, 6, 1},  {TELE_F_POWER, 10, 1},
    {TELE_F_BUSY, 12, 1},        {TELE_F_MEM_BUSY, 14, 1}, {TELE_F_SCLK, 336, 1},
    {TELE_F_MCLK, 376, 1},
};

/* APU tables: temperatures in centidegrees, activity in centipercent, power in mW. */
static const struct tele_sysfs_metrics_field tele_sysfs_metrics_v2_0[] = {
    {TELE_F_TEMP, 16, 0.01}, {TELE_F_BUSY, 40, 0.01}, {TELE_F_POWER, 44, 0.001},
    {TELE_F_SCLK, 80, 1},    {TELE_F_SCLK, 68, 1},    {TELE_F_MCLK, 84, 1},
    {TELE_F_MCLK, 72, 1},
};

/* v2.1 to v2.4: the timestamp moved behind the activities; later versions only append. */
static const struct tele_sysfs_metrics_field tele_sysfs_metrics_v2_1[] = {
    {TELE_F_TEMP, 4, 0.01}, {TELE_F_BUSY, 28, 0.01}, {TELE_F_POWER, 40, 0.001},
    {TELE_F_SCLK, 76, 1},   {TELE_F_SCLK, 64, 1},    {TELE_F_MCLK, 80, 1},
    {TELE_F_MCLK, 68, 1},
};

#define TELE_SYSFS_METRICS_LAYOUT(fmt, lo, hi, arr)                                                \
    { fmt, lo, hi, arr, sizeof(arr) / sizeof(arr[0]) }

static const struct tele_sysfs_metrics_layout tele_sysfs_metrics_layouts[] = {
    TELE_SYSFS_METRICS_LAYOUT(1, 0, 0, tele_sysfs_metrics_v1_0),
    TELE_SYSFS_METRICS_LAYOUT(1, 1, 3, tele_sysfs_metrics_v1_1),
    TELE_SYSFS_METRICS_LAYOUT(1, 4, 4, tele_sysfs_metrics_v1_4),
    TELE_SYSFS_METRICS_LAYOUT(1, 5, 5, tele_sysfs_metrics_v1_5),
    TELE_SYSFS_METRICS_LAYOUT(1, 6, 6, tele_sysfs_metrics_v1_6),
    TELE_SYSFS_METRICS_LAYOUT(2, 0, 0, tele_sysfs_metrics_v2_0),
    TELE_SYSFS_METRICS_LAYOUT(2, 1, 4, tele_sysfs_metrics_v2_1),
};

static const struct tele_sysfs_metrics_layout *tele_sysfs_metrics_find(uint8_t format,
                                                                       uint8_t content) {
    size_t n = sizeof(tele_sysfs_metrics_layouts) / sizeof(tele_sysfs_metrics_layouts[0]);
    for (size_t i = 0; i < n; i++) {
        const struct tele_sysfs_metrics_layout *l = &tele_sysfs_metrics_layouts[i];
        if (l->format == format && content >= l->content_min && content <= l->content_max)
            return l;
    }
    return NULL;
}

int tele_sysfs_metrics_parse(const void *buf, size_t len, struct tele_sysfs_metrics *m) {
    const unsigned char *p = buf;
    uint16_t size;
    memset(m, 0, sizeof(*m));
    if (len < 4)
        return -EINVAL;
    memcpy(&size, p, sizeof(size));
    m->format_rev = p[2];
    m->content_rev = p[3];
    /* A table larger than what was read is a torn or truncated copy: trust none of it. */
    if (size < 4 || size > len)
        return -EINVAL;
    const struct tele_sysfs_metrics_layout *l = tele_sysfs_metrics_find(p[2], p[3]);
    if (!l)
        return -EPROTONOSUPPORT;
    for (size_t i = 0; i < l->n; i++) {
        const struct tele_sysfs_metrics_field *fd = &l->fields[i];
        uint16_t v;
        if ((size_t)fd->off + sizeof(v) > size || m->set[fd->f])
            continue;
        memcpy(&v, p + fd->off, sizeof(v));
        if (v == UINT16_MAX) /* the driver fills members the firmware lacks with 0xff */
            continue;
        m->f[fd->f] = v * fd->scale;
        m->set[fd->f] = true;
    }
    return 0;
}

void tele_sysfs_metrics_read(const char *dev, struct tele_gpu *g) {
    char path[TELE_PATH_MAX];
    unsigned char buf[TELE_SYSFS_METRICS_MAX];
    struct tele_sysfs_metrics m;
    if (tele_path(path, sizeof(path), dev, "gpu_metrics") < 0)
        return;
    ssize_t n = tele_read_bin(path, buf, sizeof(buf));
    if (n < 0 || tele_sysfs_metrics_parse(buf, (size_t)n, &m) < 0)
        return;
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        if (m.set[f] && !g->src[f])
            tele_set(g, (enum tele_field)f, m.f[f]);
}
