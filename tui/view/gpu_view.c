/* The GPU overlay's detail and diagnostics pages: every field of a GPU with the provider it
 * came from (n/a when none could read it), its allocator, rings and processes; and how each
 * provider fares. The reconciliation page is in gpu_view_recon.c. */
#include "tui/view/gpu_view.h"

#include "tui/view/gpu_view_internal.h"
#include "tui/view/ui_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gpu_view_fmt(char *buf, size_t n, enum tele_field f, double v) {
    const char *json = tele_field_json(f);
    size_t len = strlen(json);
    if (v < 0)
        v = 0;
    if (len > 6 && strcmp(json + len - 6, "_bytes") == 0) {
        ui_fmt_bytes(buf, n, (uint64_t)v);
    } else if (strstr(json, "bytes_per_s")) {
        char b[24];
        ui_fmt_bytes(b, sizeof(b), (uint64_t)v);
        snprintf(buf, n, "%s/s", b);
    } else {
        snprintf(buf, n, v == (double)(long long)v ? "%.0f" : "%.1f", v);
    }
}

const char *gpu_view_page_name(enum gpu_view_page page) {
    static const char *const names[] = {"details", "VRAM reconciliation", "providers"};
    return page < GPU_VIEW_PAGES ? names[page] : "?";
}

int gpu_view_training(const struct tele_snap *t, const struct engine_snap *es) {
    if (!t || !es || !es->dev.pci[0])
        return -1;
    const struct tele_gpu *g = tele_snap_find(t, es->dev.pci);
    return g ? g->index : -1;
}

int gpu_view_train_rank(const struct tele_snap *t, int gpu, const struct engine_snap *const *snaps,
                        unsigned n) {
    if (!t || gpu < 0 || (unsigned)gpu >= t->n_gpus)
        return -1;
    const struct tele_gpu *g = &t->gpus[gpu];
    for (unsigned k = 0; k < n; k++) {
        const struct engine_snap *s = snaps[k];
        if (!s)
            continue;
        if (s->dev.pci[0] ? strcmp(s->dev.pci, g->pci) == 0
                          : strcmp(s->backend, "cpu") != 0 && (int)s->device == g->index)
            return (int)k;
    }
    return -1;
}

void gpu_view_add(struct gpu_view_out *o, enum theme_role role, const char *fmt, ...) {
    if (o->n >= o->max)
        return;
    struct gpu_view_line *l = &o->lines[o->n++];
    l->role = role;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->text, sizeof(l->text), fmt, ap);
    va_end(ap);
}

const char *gpu_view_src(const struct tele_snap *t, uint8_t src) {
    return src && src <= t->n_prov ? t->prov[src - 1].name : "";
}

static void gpu_view_fields(struct gpu_view_out *o, const struct tele_snap *t,
                            const struct tele_gpu *g) {
    for (unsigned f = 0; f < TELE_F_COUNT; f++) {
        char v[40] = "n/a";
        if (g->src[f])
            gpu_view_fmt(v, sizeof(v), f, g->f[f]);
        gpu_view_add(o, g->src[f] ? THEME_TEXT : THEME_DIM, "  %-34s %-14s %s", tele_field_label(f),
                     v, gpu_view_src(t, g->src[f]));
    }
}

static void gpu_view_buddy(struct gpu_view_out *o, const struct tele_snap *t,
                           const struct tele_gpu *g) {
    const struct tele_buddy *b = &g->buddy;
    if (!g->buddy_src) {
        gpu_view_add(o, THEME_DIM, "VRAM allocator (drm_buddy): n/a%s%s",
                     g->vendor == TELE_VENDOR_AMD ? " - " : "",
                     g->vendor == TELE_VENDOR_AMD ? "debugfs amdgpu_vram_mm (root only)" : "");
        return;
    }
    char fr[24], lg[24], ch[24];
    ui_fmt_bytes(fr, sizeof(fr), b->free_bytes);
    ui_fmt_bytes(lg, sizeof(lg), b->largest_free_bytes);
    ui_fmt_bytes(ch, sizeof(ch), b->chunk_bytes);
    double frag = b->free_bytes ? 1.0 - (double)b->largest_free_bytes / (double)b->free_bytes : 0;
    gpu_view_add(o, THEME_TITLE,
                 "VRAM allocator (drm_buddy, %s): free %s in %llu blocks, largest %s, frag %.0f%%",
                 gpu_view_src(t, g->buddy_src), fr, (unsigned long long)b->free_blocks, lg,
                 frag * 100.0);
    for (int k = b->n_orders - 1; k >= 0; k--) {
        if (!b->order_blocks[k])
            continue;
        char sz[24], fb[24];
        ui_fmt_bytes(sz, sizeof(sz), b->chunk_bytes << k);
        ui_fmt_bytes(fb, sizeof(fb), b->order_free_bytes[k]);
        gpu_view_add(o, THEME_TEXT, "  order %2d  blocks of %-10s %8llu free  %s", k, sz,
                     (unsigned long long)b->order_blocks[k], fb);
    }
    (void)ch;
}

static void gpu_view_rings(struct gpu_view_out *o, const struct tele_snap *t,
                           const struct tele_gpu *g) {
    if (!g->rings_src)
        return;
    gpu_view_add(o, THEME_TITLE,
                 "Rings (fences, %s): a stalled ring's signaled count stopped "
                 "short of emitted",
                 gpu_view_src(t, g->rings_src));
    for (int k = 0; k < g->n_rings; k++) {
        const struct tele_ring *r = &g->rings[k];
        gpu_view_add(o, r->stalled ? THEME_ERROR : THEME_TEXT,
                     "  %-18s signaled %-12llu emitted %-12llu %s", r->name,
                     (unsigned long long)r->signaled, (unsigned long long)r->emitted,
                     r->stalled                 ? "STALLED"
                     : r->signaled < r->emitted ? "busy"
                                                : "idle");
    }
}

/* Every process on the GPU with its memory: ringside's own marked, and the watched job that
 * es is (ringside watch) marked as such. */
static void gpu_view_procs(struct gpu_view_out *o, const struct tele_snap *t,
                           const struct tele_gpu *g, const struct engine_snap *es) {
    if (!g->procs_src) {
        gpu_view_add(o, THEME_DIM, "Processes: n/a (no provider lists them for this GPU)");
        return;
    }
    gpu_view_add(o, THEME_TITLE, "Processes (%s): %d%s", gpu_view_src(t, g->procs_src), g->n_procs,
                 g->procs_more ? " listed, more not shown" : "");
    for (int k = 0; k < g->n_procs; k++) {
        const struct tele_proc *p = &g->procs[k];
        char vr[24] = "n/a", gt[24] = "n/a", busy[16] = "n/a";
        if (p->vram_valid)
            ui_fmt_bytes(vr, sizeof(vr), p->vram_bytes);
        if (p->gtt_valid)
            ui_fmt_bytes(gt, sizeof(gt), p->gtt_bytes);
        if (p->busy_valid)
            snprintf(busy, sizeof(busy), "%.0f%%", p->busy_pct);
        bool job = es && es->pid > 0 && p->pid == es->pid && !p->self;
        gpu_view_add(o, p->self || job ? THEME_ACCENT : THEME_TEXT,
                     "  %7d %-16s VRAM %-10s GTT %-10s busy %-5s%s", p->pid, p->name, vr, gt, busy,
                     p->self ? "  <- ringside"
                     : job   ? "  <- watched job (its events are shown)"
                             : "");
    }
}

static void gpu_view_detail(struct gpu_view_out *o, const struct tele_snap *t,
                            const struct tele_gpu *g, const struct engine_snap *es) {
    char card[16] = "n/a";
    if (g->card >= 0)
        snprintf(card, sizeof(card), "%d", g->card);
    gpu_view_add(o, THEME_TITLE, "GPU %d  %s  %s  %s  %s", g->index, g->pci,
                 tele_vendor_name(g->vendor), g->name[0] ? g->name : "name n/a",
                 g->arch[0] ? g->arch : "arch n/a");
    gpu_view_add(o, g->power == TELE_POWER_SUSPENDED ? THEME_WARN : THEME_DIM,
                 "  driver %s  card %s  power %s%s  (name: %s, arch: %s)",
                 g->driver[0] ? g->driver : "n/a", card, tele_power_name(g->power),
                 g->power == TELE_POWER_SUSPENDED ? " - not woken to be sampled" : "",
                 g->name_src ? gpu_view_src(t, g->name_src) : "n/a",
                 g->arch_src ? gpu_view_src(t, g->arch_src) : "n/a");
    gpu_view_add(o, THEME_DIM, "  %-34s %-14s %s", "field", "value", "source");
    gpu_view_fields(o, t, g);
    gpu_view_buddy(o, t, g);
    gpu_view_rings(o, t, g);
    gpu_view_procs(o, t, g, es);
}

/* A row of numbers per provider, then on the lines below what it reads or why it is not used
 * (a reason may be long: the overlay wraps it under itself). */
static void gpu_view_providers(struct gpu_view_out *o, const struct tele_snap *t) {
    gpu_view_add(o, THEME_TITLE, "%-9s %-12s %5s %9s %9s %9s", "provider", "status", "GPUs",
                 "last us", "mean us", "max us");
    for (unsigned k = 0; k < t->n_prov; k++) {
        const struct tele_prov_info *p = &t->prov[k];
        char caps[160] = "";
        for (unsigned b = 0; b < TELE_CAP_COUNT; b++)
            if (p->caps & (1u << b))
                snprintf(caps + strlen(caps), sizeof(caps) - strlen(caps), "%s%s",
                         caps[0] ? "," : "", tele_cap_name(b));
        double mean = p->samples ? (double)p->total_sample_ns / (double)p->samples / 1e3 : 0;
        enum theme_role r = p->status == TELE_OK      ? THEME_OK
                            : p->status == TELE_ERROR ? THEME_ERROR
                                                      : THEME_DIM;
        gpu_view_add(o, r, "%-9s %-12s %5u %9.1f %9.1f %9.1f", p->name, tele_status_name(p->status),
                     p->n_gpus, (double)p->last_sample_ns / 1e3, mean,
                     (double)p->max_sample_ns / 1e3);
        if (p->reason[0])
            gpu_view_add(o, r == THEME_OK ? THEME_TEXT : r, "%10s%s", "", p->reason);
        else if (caps[0])
            gpu_view_add(o, THEME_DIM, "%10sreads: %s", "", caps);
    }
    gpu_view_add(o, THEME_DIM,
                 "%llu samples so far; a field's source is the first provider "
                 "in this list that read it",
                 (unsigned long long)t->seq);
}

int gpu_view_lines(const struct tele_snap *t, const struct engine_snap *es, int gpu,
                   enum gpu_view_page page, struct gpu_view_line *out, int max) {
    struct gpu_view_out o = {out, 0, max};
    if (!t) {
        gpu_view_add(
            &o, THEME_DIM,
            "no telemetry in this run (a replay, --telemetry none, or none from the agent yet)");
        return o.n;
    }
    if (page == GPU_VIEW_PROVIDERS) {
        gpu_view_providers(&o, t);
        return o.n;
    }
    if (gpu < 0 || (unsigned)gpu >= t->n_gpus) {
        gpu_view_add(&o, THEME_DIM,
                     "no GPU found by any telemetry provider (see the providers "
                     "page for why)");
        return o.n;
    }
    if (page == GPU_VIEW_DETAIL)
        gpu_view_detail(&o, t, &t->gpus[gpu], es);
    else
        gpu_view_recon(&o, t, &t->gpus[gpu], es, gpu_view_training(t, es) == gpu);
    return o.n;
}
