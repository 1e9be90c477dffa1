/* One NVML sample of one GPU: memory, gauges, link, ECC counters and the compute processes,
 * converted to the record's units; a call that fails leaves its field unset. */
#include "backend/core/mono.h"
#include "backend/telemetry/tele_nvml_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TELE_NVML_OK TELE_NVML_SUCCESS

/* VRAM_USED is NVML's used as it reports it: with the v2 call that excludes the driver's
 * reserved memory (shown as VRAM_RESERVED); the v1 fallback includes it and reserved is then
 * not known. A v2 failure is remembered so the sample does not pay for it every time. */
static void tele_nvml_sample_mem(const struct tele_nvml_fns *fn, struct tele_nvml_dev *d,
                                 struct tele_gpu *g) {
    if (fn->get_mem_v2 && !d->mem_v1_only) {
        struct tele_nvml_mem_v2 m;
        memset(&m, 0, sizeof(m));
        m.version = TELE_NVML_MEM_V2_VERSION;
        if (fn->get_mem_v2(d->h, &m) == TELE_NVML_OK) {
            tele_set(g, TELE_F_VRAM_TOTAL, (double)m.total);
            tele_set(g, TELE_F_VRAM_USED, (double)m.used);
            tele_set(g, TELE_F_VRAM_RESERVED, (double)m.reserved);
            return;
        }
    }
    struct tele_nvml_mem_v1 m;
    if (fn->get_mem_v1 && fn->get_mem_v1(d->h, &m) == TELE_NVML_OK) {
        d->mem_v1_only = true;
        tele_set(g, TELE_F_VRAM_TOTAL, (double)m.total);
        tele_set(g, TELE_F_VRAM_USED, (double)m.used);
    }
}

/* Utilisation (%), temperature (C), power and its enforced cap (NVML: mW). */
static void tele_nvml_sample_gauges(const struct tele_nvml_fns *fn, tele_nvml_device_t h,
                                    struct tele_gpu *g) {
    struct tele_nvml_util u;
    unsigned int v;
    if (fn->get_util && fn->get_util(h, &u) == TELE_NVML_OK) {
        tele_set(g, TELE_F_BUSY, u.gpu);
        tele_set(g, TELE_F_MEM_BUSY, u.memory);
    }
    if (fn->get_temp && fn->get_temp(h, TELE_NVML_TEMPERATURE_GPU, &v) == TELE_NVML_OK)
        tele_set(g, TELE_F_TEMP, v);
    if (fn->get_power && fn->get_power(h, &v) == TELE_NVML_OK)
        tele_set(g, TELE_F_POWER, v / 1000.0);
    if (fn->get_power_limit && fn->get_power_limit(h, &v) == TELE_NVML_OK)
        tele_set(g, TELE_F_POWER_CAP, v / 1000.0);
}

/* Clocks (MHz; SCLK is the SM clock). */
static void tele_nvml_sample_clocks(const struct tele_nvml_fns *fn, tele_nvml_device_t h,
                                    struct tele_gpu *g) {
    unsigned int v;
    if (fn->get_clock && fn->get_clock(h, TELE_NVML_CLOCK_SM, &v) == TELE_NVML_OK)
        tele_set(g, TELE_F_SCLK, v);
    if (fn->get_clock && fn->get_clock(h, TELE_NVML_CLOCK_MEM, &v) == TELE_NVML_OK)
        tele_set(g, TELE_F_MCLK, v);
}

/* The fan (% of its maximum); boards without one, as the SXM H100, answer NOT_SUPPORTED. */
static void tele_nvml_sample_fan(const struct tele_nvml_fns *fn, struct tele_nvml_dev *d,
                                 struct tele_gpu *g) {
    unsigned int v;
    int rc = d->no_fan || !fn->get_fan ? TELE_NVML_ERROR_NOT_SUPPORTED : fn->get_fan(d->h, &v);
    d->no_fan = rc == TELE_NVML_ERROR_NOT_SUPPORTED;
    if (rc == TELE_NVML_OK)
        tele_set(g, TELE_F_FAN_PCT, v);
}

/* The current link (it trains down when idle) and the rates, as the background thread last read
 * them (NVML: KB/s, taken as KiB as nvtop does). */
static void tele_nvml_sample_link(struct tele_nvml *s, struct tele_nvml_dev *d,
                                  struct tele_gpu *g) {
    pthread_mutex_lock(&s->w.mu);
    if (d->link_gen_valid)
        tele_set(g, TELE_F_PCIE_GEN, d->link_gen);
    if (d->link_width_valid)
        tele_set(g, TELE_F_PCIE_WIDTH, d->link_width);
    if (d->tx_valid)
        tele_set(g, TELE_F_PCIE_TX, d->tx_kb_per_s * 1024.0);
    if (d->rx_valid)
        tele_set(g, TELE_F_PCIE_RX, d->rx_kb_per_s * 1024.0);
    pthread_mutex_unlock(&s->w.mu);
}

/* Errors since the driver loaded (volatile counters); NOT_SUPPORTED where ECC is off. */
static void tele_nvml_sample_ecc(const struct tele_nvml_fns *fn, struct tele_nvml_dev *d,
                                 struct tele_gpu *g) {
    unsigned long long n;
    tele_nvml_device_t h = d->h;
    if (!fn->get_ecc || d->no_ecc)
        return;
    int rc = fn->get_ecc(h, TELE_NVML_MEMORY_ERROR_CORRECTED, TELE_NVML_VOLATILE_ECC, &n);
    d->no_ecc = rc == TELE_NVML_ERROR_NOT_SUPPORTED;
    if (rc == TELE_NVML_OK)
        tele_set(g, TELE_F_ECC_CE, (double)n);
    if (fn->get_ecc(h, TELE_NVML_MEMORY_ERROR_UNCORRECTED, TELE_NVML_VOLATILE_ECC, &n) ==
        TELE_NVML_OK)
        tele_set(g, TELE_F_ECC_UE, (double)n);
}

/* Room for want entries of the widest layout, plus headroom for processes that start between
 * the size query and the next call. */
static int tele_nvml_sample_grow(struct tele_nvml_dev *d, unsigned int want) {
    unsigned int cap = want + 8;
    void *p = realloc(d->procs, (size_t)cap * sizeof(struct tele_nvml_proc_v3_cc));
    if (!p)
        return -ENOMEM;
    d->procs = p;
    d->procs_cap = cap;
    return 0;
}

static int tele_nvml_sample_proc_list(const struct tele_nvml_fns *fn, struct tele_nvml_dev *d,
                                      unsigned int *count) {
    if (!fn->get_procs)
        return -ENOTSUP;
    for (int tries = 0; tries < 3; tries++) {
        unsigned int n = d->procs_cap;
        int rc = fn->get_procs(d->h, &n, d->procs);
        if (rc == TELE_NVML_OK) {
            *count = n < d->procs_cap ? n : d->procs_cap;
            return 0;
        }
        if (rc != TELE_NVML_ERROR_INSUFFICIENT_SIZE || tele_nvml_sample_grow(d, n) < 0)
            return -EIO;
    }
    return -EAGAIN; /* the list kept growing */
}

static void tele_nvml_sample_proc(const struct tele_ctx *ctx, const struct tele_nvml_proc_v1 *e,
                                  struct tele_proc *p) {
    memset(p, 0, sizeof(*p));
    p->pid = (int32_t)e->pid;
    p->self = (pid_t)e->pid == ctx->self_pid;
    /* Not available under MIG without privileges and on WDDM. */
    p->vram_valid = e->used_gpu_memory != TELE_NVML_VALUE_NOT_AVAILABLE;
    p->vram_bytes = p->vram_valid ? e->used_gpu_memory : 0;
    char rel[32], path[TELE_PATH_MAX + 32];
    snprintf(rel, sizeof(rel), "%u/comm", e->pid);
    if (tele_path(path, sizeof(path), ctx->roots->proc, rel) == 0)
        tele_read_line(path, p->name, sizeof(p->name));
}

/* Compute processes only: the graphics list is a second slow call for what a training box
 * does not run. PROC_VRAM sums every process NVML reports, listed or not. */
static void tele_nvml_sample_procs(struct tele_nvml *s, struct tele_nvml_dev *d,
                                   struct tele_gpu *g) {
    unsigned int count;
    if (tele_nvml_sample_proc_list(&s->fn, d, &count) < 0)
        return;
    g->procs_src = 1;
    double sum = 0;
    bool known = count == 0;
    for (unsigned int i = 0; i < count; i++) {
        /* pid and usedGpuMemory sit at the same offsets in every layout */
        struct tele_nvml_proc_v1 e;
        memcpy(&e, d->procs + (size_t)i * s->fn.proc_stride, sizeof(e));
        if (e.used_gpu_memory != TELE_NVML_VALUE_NOT_AVAILABLE) {
            sum += (double)e.used_gpu_memory;
            known = true;
        }
        if (g->n_procs < TELE_MAX_PROCS)
            tele_nvml_sample_proc(s->ctx, &e, &g->procs[g->n_procs++]);
        else
            g->procs_more++;
    }
    if (known)
        tele_set(g, TELE_F_PROC_VRAM, sum);
}

/* The slow fields' last answers into g. */
static void tele_nvml_slow_copy(const struct tele_gpu *slow, struct tele_gpu *g) {
    static const enum tele_field fields[] = {TELE_F_ECC_CE, TELE_F_ECC_UE, TELE_F_PROC_VRAM};
    double v;
    for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
        if (tele_get(slow, fields[k], &v))
            tele_set(g, fields[k], v);
    memcpy(g->procs, slow->procs, (size_t)slow->n_procs * sizeof(slow->procs[0]));
    g->n_procs = slow->n_procs;
    g->procs_src = slow->procs_src;
    g->procs_more = slow->procs_more;
}

void tele_nvml_sample_dev(struct tele_nvml *s, struct tele_nvml_dev *d, struct tele_gpu *g) {
    tele_gpu_init(g, d->pci);
    g->vendor = TELE_VENDOR_NVIDIA;
    snprintf(g->driver, sizeof(g->driver), "nvidia");
    snprintf(g->name, sizeof(g->name), "%s", d->name);
    snprintf(g->arch, sizeof(g->arch), "%s", d->arch);
    g->name_src = g->name[0] ? 1 : 0;
    g->arch_src = g->arch[0] ? 1 : 0;
    tele_nvml_sample_mem(&s->fn, d, g);
    tele_nvml_sample_gauges(&s->fn, d->h, g);
    tele_nvml_sample_clocks(&s->fn, d->h, g);
    tele_nvml_sample_fan(&s->fn, d, g);
    tele_nvml_sample_link(s, d, g);
    uint64_t now = mono_now_ns();
    if (d->slow_ns == 0 || now - d->slow_ns >= TELE_NVML_SLOW_NS) {
        tele_gpu_init(&d->slow, d->pci);
        tele_nvml_sample_ecc(&s->fn, d, &d->slow);
        tele_nvml_sample_procs(s, d, &d->slow);
        d->slow_ns = now ? now : 1;
    }
    tele_nvml_slow_copy(&d->slow, g);
}
