/* The VRAM reconciliation page: one GPU's VRAM "used" as every source counts it, side by side,
 * and the differences between them explained - users distrust VRAM numbers because these
 * disagree, and each disagreement has a reason. */
#include "tui/view/gpu_view_internal.h"
#include "tui/view/ui_model.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *prov, *what;
} gpu_view_recon_what[] = {
    {"sysfs", "mem_info_vram_used: every buffer in VRAM (all processes, kernel, display)"},
    {"libdrm", "the kernel's VRAM heap usage (AMDGPU_INFO_MEMORY): the same counter"},
    {"rocm-smi", "rocm-smi-lib reads the same kernel counter"},
    {"nvml", "NVML: every process and context; the driver's reserved VRAM is not in it"},
};

static const char *gpu_view_recon_explain(const char *prov) {
    for (size_t i = 0; i < sizeof(gpu_view_recon_what) / sizeof(gpu_view_recon_what[0]); i++)
        if (strcmp(prov, gpu_view_recon_what[i].prov) == 0)
            return gpu_view_recon_what[i].what;
    return "";
}

/* One row: source, used, total (when has_total), what it counts. */
static void gpu_view_recon_row(struct gpu_view_out *o, const char *src, double used, bool has_total,
                               double total, const char *what) {
    char u[24], t[24] = "";
    ui_fmt_bytes(u, sizeof(u), used > 0 ? (uint64_t)used : 0);
    if (has_total)
        ui_fmt_bytes(t, sizeof(t), total > 0 ? (uint64_t)total : 0);
    gpu_view_add(o, THEME_TEXT, "  %-22s %11s %11s  %s", src, u, t, what);
}

static void gpu_view_recon_sources(struct gpu_view_out *o, const struct tele_snap *t,
                                   const struct tele_gpu *g) {
    for (unsigned k = 0; k < t->n_prov && k < TELE_MAX_PROVIDERS; k++)
        if (g->vram_by_valid & (1u << k))
            gpu_view_recon_row(o, t->prov[k].name, g->vram_used_by[k],
                               (g->vram_total_by_valid & (1u << k)) != 0, g->vram_total_by[k],
                               gpu_view_recon_explain(t->prov[k].name));
    char name[40];
    if (g->src[TELE_F_PROC_VRAM]) {
        snprintf(name, sizeof(name), "processes (%s)", gpu_view_src(t, g->src[TELE_F_PROC_VRAM]));
        gpu_view_recon_row(o, name, g->f[TELE_F_PROC_VRAM], false, 0,
                           "sum over the processes the provider lists");
    }
    if (g->src[TELE_F_KFD_VRAM]) {
        snprintf(name, sizeof(name), "KFD (%s)", gpu_view_src(t, g->src[TELE_F_KFD_VRAM]));
        gpu_view_recon_row(o, name, g->f[TELE_F_KFD_VRAM], false, 0,
                           "compute (KFD) allocations only: what ROCm programs asked for");
    }
    if (g->src[TELE_F_VRAM_RESERVED])
        gpu_view_recon_row(o, "driver reserved", g->f[TELE_F_VRAM_RESERVED], false, 0,
                           "kept by the driver: never available to programs");
    if (g->buddy_src && g->buddy.total_bytes >= g->buddy.free_bytes)
        gpu_view_recon_row(o, "drm_buddy (debugfs)",
                           (double)(g->buddy.total_bytes - g->buddy.free_bytes), true,
                           (double)g->buddy.total_bytes,
                           "blocks off the allocator's free lists, reservations included");
}

static void gpu_view_recon_engine(struct gpu_view_out *o, const struct tele_gpu *g,
                                  const struct engine_snap *es) {
    bool amd = g->vendor == TELE_VENDOR_AMD;
    if (es->dev.mem_valid && es->dev.mem_total_bytes >= es->dev.mem_free_bytes)
        gpu_view_recon_row(
            o, amd ? "hipMemGetInfo" : "hipMemGetInfo (CUDA)",
            (double)(es->dev.mem_total_bytes - es->dev.mem_free_bytes), true,
            (double)es->dev.mem_total_bytes,
            amd ? "ROCm's view: graphics clients' VRAM (the compositor) is not counted as used"
                : "total - free for this context: every process and the reservation");
    gpu_view_recon_row(o, "ringside pool reserved", (double)es->mem.reserved_bytes, false, 0,
                       "held from the runtime: every tool above counts it as used");
    gpu_view_recon_row(o, "ringside pool allocated", (double)es->mem.allocated_bytes, false, 0,
                       "live buffers inside the pool");
}

static void gpu_view_recon_diff(struct gpu_view_out *o, const char *what, double a, double b,
                                const char *why) {
    char d[24];
    double x = a - b;
    ui_fmt_bytes(d, sizeof(d), (uint64_t)(x < 0 ? -x : x));
    gpu_view_add(o, THEME_TEXT, "  %s%s %s: %s", x < 0 ? "-" : "", d, what, why);
}

/* The spread between the sources that read the device counter. */
static void gpu_view_recon_spread(struct gpu_view_out *o, const struct tele_gpu *g) {
    double lo = 0, hi = 0;
    int n = 0;
    for (unsigned k = 0; k < TELE_MAX_PROVIDERS; k++)
        if (g->vram_by_valid & (1u << k)) {
            double v = g->vram_used_by[k];
            lo = n == 0 || v < lo ? v : lo;
            hi = n == 0 || v > hi ? v : hi;
            n++;
        }
    if (n > 1)
        gpu_view_recon_diff(o, "between the device-wide sources", hi, lo,
                            hi > lo ? "sampled a few microseconds apart while memory changes"
                                    : "they agree");
}

static void gpu_view_recon_diffs(struct gpu_view_out *o, const struct tele_gpu *g,
                                 const struct engine_snap *es, bool training) {
    double dev = 0;
    bool has_dev = tele_get(g, TELE_F_VRAM_USED, &dev);
    gpu_view_add(o, THEME_TITLE, "Why they differ");
    gpu_view_recon_spread(o, g);
    if (has_dev && g->src[TELE_F_PROC_VRAM])
        gpu_view_recon_diff(o, "device used - processes", dev, g->f[TELE_F_PROC_VRAM],
                            dev >= g->f[TELE_F_PROC_VRAM]
                                ? "no process owns it: kernel, firmware, display, or processes "
                                  "this user cannot see"
                                : "shared buffers are counted in every process that maps them");
    if (has_dev && g->src[TELE_F_KFD_VRAM] && g->vendor == TELE_VENDOR_AMD)
        gpu_view_recon_diff(o, "device used - KFD", dev, g->f[TELE_F_KFD_VRAM],
                            "graphics (non-compute) and kernel VRAM: hipMemGetInfo on ROCm "
                            "does not see it");
    if (!training)
        return;
    gpu_view_recon_diff(o, "pool reserved - allocated", (double)es->mem.reserved_bytes,
                        (double)es->mem.allocated_bytes,
                        "idle in ringside's cache: free for ringside, used for everyone else "
                        "(c releases it)");
    if (es->dev.mem_valid && es->dev.mem_total_bytes >= es->dev.mem_free_bytes)
        gpu_view_recon_diff(o, "runtime used - pool reserved",
                            (double)(es->dev.mem_total_bytes - es->dev.mem_free_bytes),
                            (double)es->mem.reserved_bytes,
                            "the runtime's own context and every other process, as the runtime "
                            "counts them");
}

void gpu_view_recon(struct gpu_view_out *o, const struct tele_snap *t, const struct tele_gpu *g,
                    const struct engine_snap *es, bool training) {
    gpu_view_add(o, THEME_TITLE, "VRAM of GPU %d (%s, %s) as each source counts it", g->index,
                 g->pci, g->name[0] ? g->name : "name n/a");
    gpu_view_add(o, THEME_DIM, "  %-22s %11s %11s  %s", "source", "used", "total",
                 "what it counts");
    gpu_view_recon_sources(o, t, g);
    if (training)
        gpu_view_recon_engine(o, g, es);
    else
        gpu_view_add(o, THEME_DIM,
                     "  (ringside does not train on this GPU: no runtime or pool "
                     "numbers)");
    gpu_view_recon_diffs(o, g, es, training);
}
