/* The rocm-smi provider's pure half: KFD SMI event numbers to panel text, and one device's
 * library readings to a telemetry record in the record's units. */
#include "backend/telemetry/tele_rsmi_internal.h"

#include <stdio.h>
#include <string.h>

/* Severity: a VM fault or an imminent reset loses work (error); after a reset, when throttled
 * or when queues are evicted the run goes on slower (warning); the rest is information.
 * Only the events whose kernel message is one word are subscribed: rocm-smi reads each event
 * as "%lx %63s", so a message with spaces (migration, page fault, eviction, restore, unmap)
 * would be split into further "events" whose numbers are words of the message. */
static const struct tele_rsmi_event tele_rsmi_events[] = {
    {TELE_RSMI_KFD_VMFAULT, "VM fault", SEV_ERROR, true},
    {TELE_RSMI_KFD_THERMAL_THROTTLE, "thermal throttling", SEV_WARNING, true},
    {TELE_RSMI_KFD_GPU_PRE_RESET, "GPU pre-reset", SEV_ERROR, true},
    {TELE_RSMI_KFD_GPU_POST_RESET, "GPU post-reset", SEV_WARNING, true},
    {TELE_RSMI_KFD_MIGRATE_START, "migration start", SEV_INFO, false},
    {TELE_RSMI_KFD_MIGRATE_END, "migration end", SEV_INFO, false},
    {TELE_RSMI_KFD_PAGE_FAULT_START, "page fault start", SEV_INFO, false},
    {TELE_RSMI_KFD_PAGE_FAULT_END, "page fault end", SEV_INFO, false},
    {TELE_RSMI_KFD_QUEUE_EVICTION, "queue eviction", SEV_WARNING, false},
    {TELE_RSMI_KFD_QUEUE_RESTORE, "queue restore", SEV_INFO, false},
    {TELE_RSMI_KFD_UNMAP_FROM_GPU, "unmap from GPU", SEV_INFO, false},
};

#define TELE_RSMI_N_EVENTS (sizeof(tele_rsmi_events) / sizeof(tele_rsmi_events[0]))

const struct tele_rsmi_event *tele_rsmi_event_find(uint32_t num) {
    for (size_t i = 0; i < TELE_RSMI_N_EVENTS; i++)
        if (tele_rsmi_events[i].num == num)
            return &tele_rsmi_events[i];
    return NULL;
}

uint64_t tele_rsmi_event_mask(void) {
    uint64_t mask = TELE_RSMI_KFD_MASK(TELE_RSMI_KFD_ALL_PROCESS);
    for (size_t i = 0; i < TELE_RSMI_N_EVENTS; i++)
        if (tele_rsmi_events[i].subscribed)
            mask |= TELE_RSMI_KFD_MASK(tele_rsmi_events[i].num);
    return mask;
}

/* The kernel writes a VM fault as "<pid in hex>:<task name>". */
static bool tele_rsmi_event_vmfault(const char *msg, char *out, size_t cap) {
    unsigned pid;
    int end = 0;
    if (sscanf(msg, "%x:%n", &pid, &end) != 1 || end == 0)
        return false;
    snprintf(out, cap, "KFD: VM fault (pid %u %s)", pid, msg + end);
    return true;
}

bool tele_rsmi_event_text(uint32_t num, const char *msg, char *out, size_t cap,
                          enum ev_severity *sev) {
    const struct tele_rsmi_event *e = tele_rsmi_event_find(num);
    out[0] = '\0';
    if (!e || !e->subscribed)
        return false;
    *sev = e->sev;
    if (num == TELE_RSMI_KFD_VMFAULT && tele_rsmi_event_vmfault(msg, out, cap))
        return true;
    if (msg[0])
        snprintf(out, cap, "KFD: %s (%s)", e->name, msg);
    else
        snprintf(out, cap, "KFD: %s", e->name);
    return true;
}

/* ---- readings ---- */

/* Bits 31..16 are reserved (ROCm 6.1 puts a partition id in 31..28), so only the documented
 * fields are taken. */
bool tele_rsmi_map_pci(uint64_t bdfid, char out[16]) {
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", (unsigned)(bdfid >> 32),
                     (unsigned)(bdfid >> 8) & 0xffu, (unsigned)(bdfid >> 3) & 0x1fu,
                     (unsigned)bdfid & 0x7u);
    if (n < 0 || n >= 16)
        return false;
    memcpy(out, buf, (size_t)n + 1);
    return true;
}

static void tele_rsmi_map_u64(struct tele_gpu *g, enum tele_field f, struct tele_rsmi_u64 v,
                              double scale) {
    if (v.ok)
        tele_set(g, f, (double)v.v * scale);
}

static void tele_rsmi_map_mem(const struct tele_rsmi_raw *r, struct tele_gpu *g) {
    static const enum tele_field total[TELE_RSMI_MEM_N] = {TELE_F_VRAM_TOTAL, TELE_F_VIS_VRAM_TOTAL,
                                                           TELE_F_GTT_TOTAL};
    static const enum tele_field used[TELE_RSMI_MEM_N] = {TELE_F_VRAM_USED, TELE_F_VIS_VRAM_USED,
                                                          TELE_F_GTT_USED};
    for (int i = 0; i < TELE_RSMI_MEM_N; i++) {
        tele_rsmi_map_u64(g, total[i], r->mem_total_bytes[i], 1.0);
        tele_rsmi_map_u64(g, used[i], r->mem_used_bytes[i], 1.0);
    }
}

/* A percentage above 100 is a misread, not a reading. */
static void tele_rsmi_map_pct(struct tele_gpu *g, enum tele_field f, struct tele_rsmi_u64 v) {
    if (v.ok && v.v <= 100)
        tele_set(g, f, (double)v.v);
}

/* The current level, when the index the library gave is one of the levels it listed. */
static bool tele_rsmi_map_level(const struct tele_rsmi_freqs *fr, uint64_t *v) {
    if (!fr->ok || fr->n == 0 || fr->n > TELE_RSMI_MAX_FREQS || fr->cur >= fr->n)
        return false;
    *v = fr->v[fr->cur];
    return true;
}

/* 2.5, 5, 8, 16, 32, 64 GT/s are PCIe generations 1 to 6. */
static void tele_rsmi_map_pcie(const struct tele_rsmi_raw *r, struct tele_gpu *g) {
    static const double gts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    uint64_t tps;
    if (!tele_rsmi_map_level(&r->pcie_tps, &tps))
        return;
    for (size_t i = 0; i < sizeof(gts) / sizeof(gts[0]); i++)
        if ((double)tps > gts[i] * 0.95e9 && (double)tps < gts[i] * 1.05e9)
            tele_set(g, TELE_F_PCIE_GEN, (double)(i + 1));
    if (r->pcie_lanes[r->pcie_tps.cur] > 0)
        tele_set(g, TELE_F_PCIE_WIDTH, r->pcie_lanes[r->pcie_tps.cur]);
}

static void tele_rsmi_map_gauges(const struct tele_rsmi_raw *r, struct tele_gpu *g) {
    static const enum tele_field temp[TELE_RSMI_TEMP_N] = {TELE_F_TEMP, TELE_F_TEMP_HOTSPOT,
                                                           TELE_F_TEMP_MEM};
    tele_rsmi_map_pct(g, TELE_F_BUSY, r->busy_pct);
    tele_rsmi_map_pct(g, TELE_F_MEM_BUSY, r->mem_busy_pct);
    for (int i = 0; i < TELE_RSMI_TEMP_N; i++)
        if (r->temp_mc[i].ok)
            tele_set(g, temp[i], (double)r->temp_mc[i].v / 1000.0);
    tele_rsmi_map_u64(g, TELE_F_POWER, r->power_uw, 1e-6);
    if (r->power_cap_uw.v > 0) /* 0: no cap set, not a cap of 0 W */
        tele_rsmi_map_u64(g, TELE_F_POWER_CAP, r->power_cap_uw, 1e-6);
    uint64_t hz;
    if (tele_rsmi_map_level(&r->sclk_hz, &hz))
        tele_set(g, TELE_F_SCLK, (double)hz / 1e6);
    if (tele_rsmi_map_level(&r->mclk_hz, &hz))
        tele_set(g, TELE_F_MCLK, (double)hz / 1e6);
}

static void tele_rsmi_map_rest(const struct tele_rsmi_raw *r, struct tele_gpu *g) {
    if (r->fan_rpm.ok && r->fan_rpm.v >= 0)
        tele_set(g, TELE_F_FAN_RPM, (double)r->fan_rpm.v);
    if (r->fan_speed.ok && r->fan_max.ok && r->fan_max.v > 0 && r->fan_speed.v >= 0 &&
        (uint64_t)r->fan_speed.v <= r->fan_max.v)
        tele_set(g, TELE_F_FAN_PCT, 100.0 * (double)r->fan_speed.v / (double)r->fan_max.v);
    tele_rsmi_map_pcie(r, g);
    tele_rsmi_map_u64(g, TELE_F_ECC_CE, r->ecc_ce, 1.0);
    tele_rsmi_map_u64(g, TELE_F_ECC_UE, r->ecc_ue, 1.0);
}

bool tele_rsmi_map_gpu(const struct tele_rsmi_raw *r, struct tele_gpu *g) {
    char pci[16];
    if (!tele_rsmi_map_pci(r->bdfid, pci))
        return false;
    tele_gpu_init(g, pci);
    g->vendor = TELE_VENDOR_AMD;
    g->power = r->power;
    snprintf(g->driver, sizeof(g->driver), "amdgpu");
    snprintf(g->name, sizeof(g->name), "%s", r->name);
    g->name_src = g->name[0] ? 1 : 0;
    tele_rsmi_map_mem(r, g);
    if (r->power == TELE_POWER_SUSPENDED)
        return true; /* the reader did not wake it for the rest */
    tele_rsmi_map_gauges(r, g);
    tele_rsmi_map_rest(r, g);
    return true;
}

static bool tele_rsmi_map_uses(const struct tele_rsmi_proc *p, uint32_t dv) {
    uint32_t n = p->n_gpus < TELE_MAX_GPUS ? p->n_gpus : TELE_MAX_GPUS;
    for (uint32_t i = 0; i < n; i++)
        if (p->gpus[i] == dv)
            return true;
    return false;
}

static void tele_rsmi_map_proc(const struct tele_rsmi_proc *p, int32_t self_pid,
                               struct tele_proc *out) {
    memset(out, 0, sizeof(*out));
    out->pid = (int32_t)p->pid;
    out->self = out->pid == self_pid;
    snprintf(out->name, sizeof(out->name), "%s", p->name);
    out->vram_valid = p->vram_ok && p->n_gpus == 1;
    out->vram_bytes = out->vram_valid ? p->vram_bytes : 0;
}

void tele_rsmi_map_procs(const struct tele_rsmi_procs *ps, uint32_t dv, int32_t self_pid,
                         struct tele_gpu *g) {
    if (!ps->ok)
        return;
    g->procs_src = 1;
    bool known = ps->complete;
    uint64_t sum = 0;
    for (size_t i = 0; i < ps->n && i < TELE_RSMI_MAX_PROCS; i++) {
        const struct tele_rsmi_proc *p = &ps->p[i];
        if (!tele_rsmi_map_uses(p, dv))
            continue;
        if (p->vram_ok && p->n_gpus == 1)
            sum += p->vram_bytes;
        else
            known = false;
        if (g->n_procs < TELE_MAX_PROCS)
            tele_rsmi_map_proc(p, self_pid, &g->procs[g->n_procs++]);
        else
            g->procs_more++;
    }
    if (known)
        tele_set(g, TELE_F_KFD_VRAM, (double)sum);
}
