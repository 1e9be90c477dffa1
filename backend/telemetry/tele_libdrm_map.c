/* The libdrm provider's pure half: one sample's ioctl answers (and the previous sample's) to a
 * telemetry record, counter rates and the VRAM-lost decision, plus the small text parsers and
 * the reason open gives when it finds no GPU. */
#include "backend/telemetry/tele_libdrm_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* struct drm_amdgpu_heap_info, in bytes. max_allocation is the largest single VRAM buffer the
 * driver would accept (3/4 of the usable heap in amdgpu_info_ioctl). */
static void tele_libdrm_map_mem(const struct drm_amdgpu_memory_info *m, struct tele_gpu *g) {
    tele_set(g, TELE_F_VRAM_TOTAL, (double)m->vram.total_heap_size);
    tele_set(g, TELE_F_VRAM_USABLE, (double)m->vram.usable_heap_size);
    tele_set(g, TELE_F_VRAM_USED, (double)m->vram.heap_usage);
    tele_set(g, TELE_F_VRAM_MAX_ALLOC, (double)m->vram.max_allocation);
    tele_set(g, TELE_F_VIS_VRAM_TOTAL, (double)m->cpu_accessible_vram.total_heap_size);
    tele_set(g, TELE_F_VIS_VRAM_USED, (double)m->cpu_accessible_vram.heap_usage);
    tele_set(g, TELE_F_GTT_TOTAL, (double)m->gtt.total_heap_size);
    tele_set(g, TELE_F_GTT_USED, (double)m->gtt.heap_usage);
}

static void tele_libdrm_map_sensors(const struct tele_libdrm_raw *r, struct tele_gpu *g) {
    if (r->sclk_ok)
        tele_set(g, TELE_F_SCLK, r->sclk_mhz);
    if (r->mclk_ok)
        tele_set(g, TELE_F_MCLK, r->mclk_mhz);
    if (r->temp_ok)
        tele_set(g, TELE_F_TEMP, r->temp_mc / 1000.0);
    if (r->load_ok && r->load_pct <= 100) /* more than 100 % is a misread */
        tele_set(g, TELE_F_BUSY, r->load_pct);
    if (r->power_ok)
        tele_set(g, TELE_F_POWER, r->power_w);
}

/* Growth per second of a counter read in both samples; a counter that went backwards (the
 * driver was reloaded) gives no rate. */
static void tele_libdrm_map_rate(struct tele_gpu *g, enum tele_field f, bool prev_ok, uint64_t prev,
                                 bool cur_ok, uint64_t cur, double dt_s) {
    if (prev_ok && cur_ok && dt_s > 0 && cur >= prev)
        tele_set(g, f, (double)(cur - prev) / dt_s);
}

static void tele_libdrm_map_rates(const struct tele_libdrm_raw *p, const struct tele_libdrm_raw *c,
                                  struct tele_gpu *g) {
    if (p->t_ns == 0 || c->t_ns <= p->t_ns)
        return; /* the first sample, or the first after a suspension */
    double dt_s = (double)(c->t_ns - p->t_ns) / 1e9;
    tele_libdrm_map_rate(g, TELE_F_EVICTIONS, p->evictions_ok, p->evictions, c->evictions_ok,
                         c->evictions, dt_s);
    tele_libdrm_map_rate(g, TELE_F_BYTES_MOVED, p->bytes_moved_ok, p->bytes_moved,
                         c->bytes_moved_ok, c->bytes_moved, dt_s);
    tele_libdrm_map_rate(g, TELE_F_CPU_FAULTS, p->cpu_faults_ok, p->cpu_faults, c->cpu_faults_ok,
                         c->cpu_faults, dt_s);
}

/* The driver increments vram_lost_counter when a reset could not keep VRAM (amdgpu_device.c
 * amdgpu_inc_vram_lost): every buffer a process had there is garbage from then on. */
static void tele_libdrm_map_lost(struct tele_libdrm_hist *h, const struct tele_libdrm_raw *c,
                                 struct tele_gpu *g, struct tele_libdrm_lost *lost) {
    if (!c->vram_lost_ok)
        return;
    tele_set(g, TELE_F_VRAM_LOST, c->vram_lost);
    if (h->vram_lost_ok && c->vram_lost > h->vram_lost)
        *lost = (struct tele_libdrm_lost){true, h->vram_lost, c->vram_lost};
    h->vram_lost = c->vram_lost;
    h->vram_lost_ok = true;
}

void tele_libdrm_map(struct tele_libdrm_hist *h, const struct tele_libdrm_raw *cur,
                     struct tele_gpu *g, struct tele_libdrm_lost *lost) {
    memset(lost, 0, sizeof(*lost));
    g->power = cur->power;
    if (cur->power == TELE_POWER_SUSPENDED) {
        /* Runtime suspend moves buffers out of VRAM: a rate across the gap would show that
         * move as activity. The VRAM-lost baseline stays: a reset can happen meanwhile. */
        memset(&h->prev, 0, sizeof(h->prev));
        return;
    }
    if (cur->mem_ok)
        tele_libdrm_map_mem(&cur->mem, g);
    tele_libdrm_map_sensors(cur, g);
    tele_libdrm_map_rates(&h->prev, cur, g);
    tele_libdrm_map_lost(h, cur, g, lost);
    h->prev = *cur;
}

void tele_libdrm_map_lost_text(const struct tele_libdrm_lost *lost, char *out, size_t cap) {
    snprintf(out, cap, "VRAM lost (counter %u -> %u): the GPU was reset and VRAM contents are gone",
             (unsigned)lost->from, (unsigned)lost->to);
}

int tele_libdrm_map_none(const char *dri, int err, const char *err_path, const char *note,
                         char *reason, size_t cap) {
    if (err == -EACCES || err == -EPERM) {
        snprintf(reason, cap, "permission denied: %s (add the user to the render group)", err_path);
        return err;
    }
    if (note && note[0])
        snprintf(reason, cap, "no amdgpu render node under %s (%s)", dri, note);
    else
        snprintf(reason, cap, "no amdgpu render node under %s", dri);
    return -ENODEV;
}
