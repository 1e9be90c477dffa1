/* Memory panel: the caching allocator's numbers with their history, and the segment map with
 * the largest free block picked out; with several training devices, one column per device side
 * by side where they fit, else the selected device (keys 1-9). */
#include "tui/dashboard/panel.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/chart.h"
#include "tui/view/gpu_view.h"
#include "tui/view/ui_devices.h"

#include <stdio.h>
#include <string.h>

#define PANEL_MEMORY_COL_MIN 34 /* a device's column beside others */

/* bytes as text, or "n/a" where the source has no allocator numbers (a CPU job). */
static void panel_memory_bytes(const struct engine_snap *s, char *buf, size_t n, uint64_t bytes) {
    if (s->na & ENGINE_NA_MEM)
        snprintf(buf, n, "n/a");
    else
        ui_fmt_bytes(buf, n, bytes);
}

/* The largest free block of the listed layout: segment and block index, or -1. */
static void panel_memory_largest(const struct mem_layout *l, int *seg, int *blk) {
    uint64_t best = 0;
    *seg = *blk = -1;
    for (uint32_t i = 0; i < l->n_listed; i++)
        for (uint32_t b = 0; b < l->seg[i].n_blocks; b++)
            if (!l->seg[i].blocks[b].allocated && l->seg[i].blocks[b].size_bytes > best) {
                best = l->seg[i].blocks[b].size_bytes;
                *seg = (int)i;
                *blk = (int)b;
            }
}

/* Which block covers byte offset off of segment i (-1: none listed there): the first that
 * does. */
static int panel_memory_block_at(const struct mem_layout *l, uint32_t i, uint64_t off) {
    for (uint32_t b = 0; b < l->seg[i].n_blocks; b++) {
        const struct mem_block_info *bl = &l->seg[i].blocks[b];
        if (off >= bl->offset_bytes && off < bl->offset_bytes + bl->size_bytes)
            return (int)b;
    }
    return -1;
}

/* Whether segment i's blocks lie in offset order without overlapping, as the pool lists them:
 * then one block at most covers an offset, and a walk along them finds it. */
static bool panel_memory_in_order(const struct mem_layout *l, uint32_t i) {
    const struct mem_block_info *bl = l->seg[i].blocks;
    for (uint32_t b = 1; b < l->seg[i].n_blocks; b++)
        if (bl[b].offset_bytes < bl[b - 1].offset_bytes + bl[b - 1].size_bytes ||
            bl[b - 1].offset_bytes + bl[b - 1].size_bytes < bl[b - 1].offset_bytes)
            return false;
    return true;
}

/* The block covering off (>= the previous cell's offset) by a walk from *walk, the first block
 * that could still: panel_memory_block_at's answer for blocks in order. */
static int panel_memory_block_walk(const struct mem_layout *l, uint32_t i, uint64_t off,
                                   uint32_t *walk) {
    const struct mem_block_info *bl = l->seg[i].blocks;
    while (*walk < l->seg[i].n_blocks && off >= bl[*walk].offset_bytes + bl[*walk].size_bytes)
        (*walk)++;
    return *walk < l->seg[i].n_blocks && off >= bl[*walk].offset_bytes ? (int)*walk : -1;
}

static void panel_memory_segment(WINDOW *win, int y, int x0, int width, const struct mem_layout *l,
                                 uint32_t i, int big_seg, int big_blk, const struct ui_frame *f) {
    char sz[24];
    ui_fmt_bytes(sz, sizeof(sz), l->seg[i].size_bytes);
    w_text(win, y, x0, 10, THEME_DIM, f, "%9s", sz);
    struct w_row row;
    w_row_begin(&row, win, y, x0 + 10, f);
    bool in_order = panel_memory_in_order(l, i);
    uint32_t walk = 0;
    for (int x = 0; x < width; x++) {
        uint64_t off = l->seg[i].size_bytes * (uint64_t)x / (uint64_t)width;
        int b =
            in_order ? panel_memory_block_walk(l, i, off, &walk) : panel_memory_block_at(l, i, off);
        bool used = b >= 0 && l->seg[i].blocks[b].allocated;
        bool big = (int)i == big_seg && b == big_blk;
        enum theme_role r = used ? THEME_SEG_USED : big ? THEME_SEG_LARGEST : THEME_SEG_FREE;
        w_row_putc(&row, r, used ? '#' : big ? '~' : '.');
    }
    w_row_end(&row);
}

/* VRAM fragmentation as the driver sees it (drm_buddy via debugfs) on the GPU the loop trains
 * on, beside the pool's own: the pool can be tidy while the device is not. Returns the next
 * row. */
static int panel_memory_driver(struct panel *p, int y, int gpu, const struct ui_frame *f) {
    if (!f->tele || gpu < 0 || (unsigned)gpu >= f->tele->n_gpus)
        return y;
    const struct tele_gpu *g = &f->tele->gpus[gpu];
    if (!g->buddy_src) {
        if (g->vendor == TELE_VENDOR_AMD)
            w_text(p->win, y++, 1, p->w - 2, THEME_DIM, f,
                   "driver (drm_buddy): n/a - debugfs amdgpu_vram_mm is readable by root only");
        return y;
    }
    const struct tele_buddy *b = &g->buddy;
    char fr[24], lg[24];
    ui_fmt_bytes(fr, sizeof(fr), b->free_bytes);
    ui_fmt_bytes(lg, sizeof(lg), b->largest_free_bytes);
    double frag = b->free_bytes ? 1.0 - (double)b->largest_free_bytes / (double)b->free_bytes : 0;
    w_text(p->win, y++, 1, p->w - 2, frag > 0.5 ? THEME_WARN : THEME_DIM, f,
           "driver (drm_buddy): free %s in %llu blocks, largest %s, frag %.0f%%", fr,
           (unsigned long long)b->free_blocks, lg, frag * 100.0);
    return y;
}

/* The telemetry GPU that rank k trains on, or -1. */
static int panel_memory_gpu(const struct ui_frame *f, unsigned k) {
    if (f->n_snaps <= 1)
        return f->tele_train;
    for (unsigned i = 0; f->tele && i < f->tele->n_gpus; i++)
        if (gpu_view_train_rank(f->tele, (int)i, f->snaps, f->n_snaps) == (int)k)
            return (int)i;
    return -1;
}

/* Rows of the full form besides the history: the title, the numbers, the VPOC peak, the
 * driver's line and the segment map (with its "more" line). */
static int panel_memory_fixed_rows(const struct engine_snap *sn, int w, const struct ui_frame *f) {
    (void)w;
    int gpu = f->n_snaps <= 1 ? f->tele_train : -1;
    bool driver = f->tele && gpu >= 0 && (unsigned)gpu < f->tele->n_gpus &&
                  (f->tele->gpus[gpu].buddy_src || f->tele->gpus[gpu].vendor == TELE_VENDOR_AMD);
    return 2 + sn->has_vpoc_peak + driver + (int)sn->layout.n_listed +
           (sn->layout.n_segments > sn->layout.n_listed);
}

/* The pool's bytes as a chart of rows x width at (y, x): allocated filled, reserved above it
 * shaded, against 0 up to the most reserved; the numbers at the left. One row: a sparkline of
 * the allocated bytes. */
static void panel_memory_bytes_chart(struct panel *p, int y, int x, int rows, int width,
                                     const struct ui_frame *f) {
    double a[UI_SERIES], r[UI_SERIES];
    int cw = width - 12;
    if (cw < 4)
        return;
    size_t n = ui_series_last(&f->model->allocated, a, (size_t)cw);
    size_t nr = ui_series_last(&f->model->reserved, r, (size_t)cw);
    bool both = nr == n;
    double lo, hi;
    chart_scale(both ? r : a, n, chart_span_of(both ? r : a, n, 0.1), 0, &lo, &hi);
    lo = 0; /* bytes from nothing up: a change shows at its true size */
    char now[24] = "-", res[24] = "-", top[24] = "-";
    if (n > 0) {
        ui_fmt_bytes(now, sizeof(now), (uint64_t)a[n - 1]);
        ui_fmt_bytes(res, sizeof(res), (uint64_t)(both ? r[n - 1] : 0));
        ui_fmt_bytes(top, sizeof(top), (uint64_t)hi);
    }
    w_text(p->win, y, x, 12, THEME_DIM, f, "%-11s", "allocated");
    if (rows == 1) {
        w_spark(p->win, y, x + 12, cw, a, n, chart_span_of(a, n, 0.1), THEME_ACCENT, f);
        return;
    }
    w_text(p->win, y + 1, x, 12, THEME_ACCENT, f, "%-11s", now);
    if (rows >= 4 && both) {
        w_text(p->win, y + 2, x, 12, THEME_DIM, f, "%-11s", "reserved");
        w_text(p->win, y + 3, x, 12, THEME_DIM, f, "%-11s", res);
    }
    if (rows >= 6)
        w_text(p->win, y + rows - 1, x, 11, THEME_DIM, f, "top %s", top);
    struct w_chart_data d = {a,         both ? r : NULL, n, lo, hi, THEME_ACCENT,
                             THEME_DIM, THEME_ACCENT,    -1};
    w_chart(p->win, y, x + 12, rows, cw, &d, f);
}

/* Fragmentation as a chart (0 up, at least 10 points tall), or a sparkline in one row. */
static void panel_memory_frag_chart(struct panel *p, int y, int x, int rows, int width,
                                    const struct ui_frame *f) {
    double v[UI_SERIES];
    int cw = width - 12;
    if (cw < 4)
        return;
    size_t n = ui_series_last(&f->model->frag, v, (size_t)cw);
    double lo, hi;
    chart_scale(v, n, 0.1, 0, &lo, &hi);
    lo = 0;
    w_text(p->win, y, x, 12, THEME_DIM, f, "%-11s", "frag");
    if (rows == 1) {
        w_spark(p->win, y, x + 12, cw, v, n, 0.1, THEME_WARN, f);
        return;
    }
    if (n > 0)
        w_text(p->win, y + 1, x, 12, THEME_WARN, f, "%.0f%%", v[n - 1] * 100.0);
    if (rows >= 6)
        w_text(p->win, y + rows - 1, x, 11, THEME_DIM, f, "top %.0f%%", hi * 100.0);
    struct w_chart_data d = {v, NULL, n, lo, hi, THEME_WARN, THEME_WARN, THEME_WARN, -1};
    w_chart(p->win, y, x + 12, rows, cw, &d, f);
}

#define PANEL_MEMORY_STACK_ROWS 16 /* from this tall the two charts go one above the other */

/* The pool's history: its bytes and fragmentation side by side, rows tall, or one above the
 * other (the bytes two thirds) where they are tall enough. */
static void panel_memory_history(struct panel *p, int y, int rows, int w,
                                 const struct ui_frame *f) {
    if (rows >= PANEL_MEMORY_STACK_ROWS) {
        int top = rows * 2 / 3;
        panel_memory_bytes_chart(p, y, 1, top, w, f);
        panel_memory_frag_chart(p, y + top, 1, rows - top, w, f);
        return;
    }
    int half = w / 2;
    panel_memory_bytes_chart(p, y, 1, rows, half - 1, f);
    panel_memory_frag_chart(p, y, 1 + half, rows, w - half, f);
}

/* One device's pool in full: rank k's snapshot sn (the history series are the first
 * device's, so they show with it alone); dev names the device in the title ("" for a run on
 * one device). */
static void panel_memory_full(struct panel *p, const struct engine_snap *sn, unsigned k,
                              const char *dev, const struct ui_frame *f) {
    const struct mem_stats *m = &sn->mem;
    const struct mem_layout *l = &sn->layout;
    char info[96], al[24], re[24], lf[24];
    if (m->n_oom) /* a refusal is the fact to see first */
        snprintf(info, sizeof(info), "%sOOM %llu  frag %.0f%%", dev, (unsigned long long)m->n_oom,
                 m->frag * 100.0);
    else if (sn->na & ENGINE_NA_MEM)
        snprintf(info, sizeof(info), "%sfrag n/a", dev);
    else
        snprintf(info, sizeof(info), "%sfrag %.0f%%", dev, m->frag * 100.0);
    w_title(p->win, "memory pool", info, p->focused, f);
    panel_memory_bytes(sn, al, sizeof(al), m->allocated_bytes);
    panel_memory_bytes(sn, re, sizeof(re), m->reserved_bytes);
    panel_memory_bytes(sn, lf, sizeof(lf), m->largest_free_bytes);
    int w = p->w - 2;
    if (sn->na & ENGINE_NA_MEM) /* this one sent no allocator lines: no counts either */
        w_text(p->win, 1, 1, w, THEME_TEXT, f, "alloc n/a  reserved n/a  largest free n/a");
    else if (w >= 90)
        w_text(p->win, 1, 1, w, THEME_TEXT, f,
               "allocated %s  reserved %s  largest free %s  free blocks %u  segments %u", al, re,
               lf, m->free_blocks, m->segments);
    else
        w_text(p->win, 1, 1, w, THEME_TEXT, f,
               "alloc %s  reserved %s  largest free %s  %u free/%u seg", al, re, lf, m->free_blocks,
               m->segments);
    int y = 2;
    if (p->h >= 5 && w >= 50 && k == 0) {
        int rows = p->h - panel_memory_fixed_rows(sn, p->w, f); /* the history takes the rest */
        panel_memory_history(p, y, rows < 1 ? 1 : rows, w, f);
        y += rows < 1 ? 1 : rows;
    }
    if (sn->has_vpoc_peak && y < p->h - 1) {
        char pa[24], pr[24], chunk[24];
        const struct mem_stats *pk = &sn->vpoc_peak, *b0 = &sn->vpoc_base;
        ui_fmt_bytes(pa, sizeof(pa),
                     pk->allocated_bytes > b0->allocated_bytes
                         ? pk->allocated_bytes - b0->allocated_bytes
                         : 0);
        ui_fmt_bytes(pr, sizeof(pr), pk->reserved_bytes);
        if (sn->vpoc_peak_chunk > 0)
            snprintf(chunk, sizeof(chunk), "chunk %d", sn->vpoc_peak_chunk);
        else
            snprintf(chunk, sizeof(chunk), "whole sessions");
        unsigned blocks =
            pk->active_blocks > b0->active_blocks ? pk->active_blocks - b0->active_blocks : 0;
        if (sn->vpoc_matrix_bytes) { /* the dense kernel: its matrix follows the chunk */
            char mx[24], bars[24];
            uint64_t added = pk->allocated_bytes > b0->allocated_bytes
                                 ? pk->allocated_bytes - b0->allocated_bytes
                                 : 0;
            ui_fmt_bytes(mx, sizeof(mx), sn->vpoc_matrix_bytes);
            ui_fmt_bytes(bars, sizeof(bars),
                         added > sn->vpoc_matrix_bytes ? added - sn->vpoc_matrix_bytes : 0);
            w_text(p->win, y++, 1, w, THEME_DIM, f,
                   "VPOC peak (%s, dense): +%s matrix, +%s bars, reserved %s, frag %.0f%%", chunk,
                   mx, bars, pr, pk->frag * 100.0);
        } else {
            w_text(p->win, y++, 1, w, THEME_DIM, f,
                   "VPOC peak (%s): +%s in +%u blocks, reserved %s, frag %.0f%%", chunk, pa, blocks,
                   pr, pk->frag * 100.0);
        }
    }
    if (y < p->h - 1)
        y = panel_memory_driver(p, y, panel_memory_gpu(f, k), f);
    int big_seg, big_blk;
    panel_memory_largest(l, &big_seg, &big_blk);
    for (uint32_t i = 0; i < l->n_listed && y < p->h; i++, y++)
        panel_memory_segment(p->win, y, 1, w - 12, l, i, big_seg, big_blk, f);
    if (y < p->h && l->n_segments > l->n_listed)
        w_text(p->win, y, 1, w, THEME_DIM, f, "... %u more segments", l->n_segments - l->n_listed);
}

/* Rank k's pool in a cell of h rows and w columns at (y0, x): the device and its numbers on
 * two rows, then its segment map as far as it goes, the segments left out counted. */
static void panel_memory_column(struct panel *p, int y0, int x, int h, int w, unsigned k,
                                const struct ui_frame *f) {
    const struct engine_snap *sn = f->snaps[k];
    const struct mem_stats *m = &sn->mem;
    const struct mem_layout *l = &sn->layout;
    char al[24], re[24], lf[24], nm[96];
    panel_memory_bytes(sn, al, sizeof(al), m->allocated_bytes);
    panel_memory_bytes(sn, re, sizeof(re), m->reserved_bytes);
    panel_memory_bytes(sn, lf, sizeof(lf), m->largest_free_bytes);
    ui_devices_name(f->run, k, true, nm, sizeof(nm));
    w_text(p->win, y0, x, w, k == f->gpu ? THEME_TITLE : THEME_TEXT, f, "%s%s alloc %s res %s", nm,
           k == f->gpu ? "*" : " ", al, re);
    int y = y0 + 1, end = y0 + h < p->h ? y0 + h : p->h;
    if (y < end && (sn->na & ENGINE_NA_MEM))
        w_text(p->win, y++, x, w, THEME_DIM, f, "  free n/a  frag n/a");
    else if (y < end)
        w_text(p->win, y++, x, w,
               m->n_oom        ? THEME_ERROR
               : m->frag > 0.5 ? THEME_WARN
                               : THEME_DIM,
               f, "  free %s  frag %.0f%%%s", lf, m->frag * 100.0, m->n_oom ? "  OOM" : "");
    int big_seg, big_blk;
    panel_memory_largest(l, &big_seg, &big_blk);
    /* the segments that fit, keeping the last row for the count of the rest */
    uint32_t fit = end - y > 0 ? (uint32_t)(end - y) : 0;
    if (l->n_segments > fit && fit > 0)
        fit--;
    uint32_t i = 0;
    for (; i < l->n_listed && i < fit && w - 10 >= 4; i++, y++)
        panel_memory_segment(p->win, y, x, w - 10, l, i, big_seg, big_blk, f);
    if (y < end && l->n_segments > i)
        w_text(p->win, y, x, w, THEME_DIM, f, "  +%u more segments", l->n_segments - i);
}

/* Several devices side by side, in as many rows of cells as the panel's rows allow (each
 * cell at least the two rows of numbers): all of them where they fit, else a window around
 * the selected one and "+N more" in the title. */
static void panel_memory_grid(struct panel *p, unsigned n, unsigned cols,
                              const struct ui_frame *f) {
    int w = p->w - 2, rows = p->h - 1;
    unsigned grid = (n + cols - 1) / cols, fit = rows >= 2 ? (unsigned)rows / 2 : 1;
    grid = grid < fit ? grid : fit;
    unsigned shown, first = ui_devices_window(n, cols * grid, f->gpu, &shown);
    char more[24], info[96];
    ui_devices_more(n - shown, more, sizeof(more));
    snprintf(info, sizeof(info), "%u devices%s%s", n, more[0] ? "  " : "", more);
    w_title(p->win, "memory pool", info, p->focused, f);
    unsigned per_row = (shown + grid - 1) / grid; /* spread evenly over the grid's rows */
    int cw = (w - (int)(per_row - 1)) / (int)per_row, ch = rows / (int)grid;
    for (unsigned c = 0; c < shown; c++)
        panel_memory_column(p, 1 + (int)(c / per_row) * ch, 1 + (int)(c % per_row) * (cw + 1), ch,
                            cw, first + c, f);
}

/* Whether no device shown has allocator numbers (watched CPU jobs): then the panel is the
 * n/a line and why, not a chart or a grid of n/a. */
static bool panel_memory_none(const struct ui_frame *f) {
    unsigned n = f->n_snaps ? f->n_snaps : 1;
    for (unsigned k = 0; k < n; k++) {
        const struct engine_snap *s = k < f->n_snaps && f->snaps[k] ? f->snaps[k] : f->snap;
        if (!(s->na & ENGINE_NA_MEM))
            return false;
    }
    return true;
}

/* The pool of jobs that sent no allocator lines: n/a for every number, and why. */
static void panel_memory_draw_none(struct panel *p, const struct ui_frame *f) {
    int w = p->w - 2;
    unsigned n = f->n_snaps ? f->n_snaps : 1;
    char info[32] = "";
    if (n > 1)
        snprintf(info, sizeof(info), "%u devices", n);
    w_title(p->win, "memory pool", info, p->focused, f);
    w_text(p->win, 1, 1, w, THEME_TEXT, f,
           w >= 60 ? "allocated n/a  reserved n/a  largest free n/a  frag n/a"
                   : "alloc n/a  reserved n/a  largest free n/a");
    if (p->h < 3)
        return;
    const char *why = strstr(f->snap->backend, "cpu") ? "a CPU job has no caching allocator"
                                                      : "none from the job yet";
    char line[256];
    snprintf(line, sizeof(line), "no allocator lines: %s", why);
    char cut[256];
    ui_devices_fit(cut, sizeof(cut), line, w);
    w_text(p->win, 2, 1, w, THEME_DIM, f, "%s", cut);
}

static void panel_memory_draw(struct panel *p, const struct ui_frame *f) {
    unsigned n = f->n_snaps;
    if (panel_memory_none(f)) {
        panel_memory_draw_none(p, f);
        return;
    }
    if (n <= 1) { /* one device: as it always was */
        panel_memory_full(p, f->snap, 0, "", f);
        return;
    }
    unsigned cols = ui_devices_columns(p->w - 2, PANEL_MEMORY_COL_MIN, n);
    if (cols < 2) { /* no room beside each other: the selected device */
        unsigned k = f->gpu < n ? f->gpu : 0;
        char dev[128], nm[96];
        ui_devices_name(f->run, k, true, nm, sizeof(nm));
        snprintf(dev, sizeof(dev), "%s  +%u more (1-9)  ", nm, n - 1);
        panel_memory_full(p, f->snaps[k], k, dev, f);
        return;
    }
    panel_memory_grid(p, n, cols, f);
}

/* The full form with a one-row history; several devices: two rows a device, in rows of as many
 * as fit side by side. */
static int panel_memory_rows(const struct panel *p, const struct ui_frame *f, int w) {
    (void)p;
    unsigned n = f->n_snaps;
    if (panel_memory_none(f))
        return 3; /* the title, the n/a line and why */
    if (n <= 1)
        return panel_memory_fixed_rows(f->snap, w, f) + 1;
    unsigned cols = ui_devices_columns(w - 2, PANEL_MEMORY_COL_MIN, n);
    if (cols < 2)
        return panel_memory_fixed_rows(f->snaps[f->gpu < n ? f->gpu : 0], w, f) + 1;
    unsigned grid = (n + cols - 1) / cols;
    return 1 + (int)grid * 4;
}

const struct panel_ops panel_memory_ops = {
    .name = "memory",
    .title = "memory pool",
    .help = "pool bytes, fragmentation; map: # used . free ~ largest",
    .min_h = 3,
    .pref_h = 8,
    .column = 0,
    .grow = true,
    .rows = panel_memory_rows,
    .draw = panel_memory_draw,
    .key = NULL,
};
