/* GPU panel: every GPU in the machine from telemetry (VRAM, GTT, busy, temperature, power,
 * clock; n/a where no provider could read a value), every one the loop trains on marked, and
 * the runtime's and the pools' share. Enter or g opens the GPU overlay. */
#include "tui/dashboard/panel.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/gpu_view.h"
#include "tui/view/ui_devices.h"
#include "tui/view/wrap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PANEL_GPU_FAULT_NS 600000000000ull /* how long a GPU row shows a kernel-log failure */

/* The panel's own state. */
struct panel_gpu {
    int scroll;   /* first GPU shown */
    int selected; /* the selected GPU: the overlay's */
};

static int panel_gpu_create(struct panel *p) {
    p->priv = calloc(1, sizeof(struct panel_gpu));
    return p->priv ? 0 : -ENOMEM;
}

static void panel_gpu_destroy(struct panel *p) {
    free(p->priv);
}

int panel_gpu_selected(const struct panel *p) {
    const struct panel_gpu *g = p->ops == &panel_gpu_ops ? p->priv : NULL;
    return g ? g->selected : 0;
}

void panel_gpu_select(struct panel *p, int gpu) {
    struct panel_gpu *g = p->ops == &panel_gpu_ops ? p->priv : NULL;
    if (g)
        g->selected = gpu < 0 ? 0 : gpu;
}

/* A field as short text, "n/a" when unread. */
static void panel_gpu_val(char *buf, size_t n, const struct tele_gpu *g, enum tele_field f,
                          const char *unit) {
    double v;
    if (tele_get(g, f, &v))
        snprintf(buf, n, "%.0f%s", v, unit);
    else
        snprintf(buf, n, "n/a");
}

/* VRAM "used/total", or n/a. */
static bool panel_gpu_vram(const struct tele_gpu *g, char *buf, size_t n, double *frac) {
    double used, total;
    snprintf(buf, n, "VRAM n/a");
    if (!tele_get(g, TELE_F_VRAM_USED, &used) || !tele_get(g, TELE_F_VRAM_TOTAL, &total) ||
        total <= 0)
        return false;
    char u[16], t[16];
    ui_fmt_bytes(u, sizeof(u), (uint64_t)used);
    ui_fmt_bytes(t, sizeof(t), (uint64_t)total);
    snprintf(buf, n, "%s/%s", u, t);
    *frac = used / total;
    return true;
}

/* One GPU: the name, then what fits of VRAM bar, VRAM, GTT, and always busy, temperature,
 * power and clock (the row narrows in the two-column layout). */
static void panel_gpu_row(struct panel *p, int y, const struct tele_gpu *g, bool train, bool sel,
                          const struct ui_frame *f) {
    int w = p->w - 2, name_w = w >= 110 ? 24 : 18;
    enum theme_role role = sel && p->focused ? THEME_ACCENT : THEME_TEXT;
    w_text(p->win, y, 1, name_w + 3, role, f, "%c%d %-*.*s", train ? '*' : ' ', g->index, name_w,
           name_w, g->name[0] ? g->name : g->pci);
    /* a kernel-log failure on this GPU in the last 10 minutes: its letter in the margin */
    struct ui_mark mk;
    uint64_t since = f->now_ns > PANEL_GPU_FAULT_NS ? f->now_ns - PANEL_GPU_FAULT_NS : 0;
    if (ui_model_pci_mark(f->model, g->pci, since, &mk) && mk.severity >= SEV_WARNING)
        w_text(p->win, y, 0, 1, mk.severity == SEV_ERROR ? THEME_ERROR : THEME_WARN, f, "%c",
               kmsg_category_letter(mk.category));
    int x = name_w + 5;
    if (g->power == TELE_POWER_SUSPENDED) {
        w_text(p->win, y, x, w - x + 1, THEME_DIM, f, "suspended (not woken to be sampled)");
        return;
    }
    char vram[40], gtt[24] = "GTT n/a", busy[8], temp[8], pw[12], clk[12];
    double frac = 0, gu;
    bool has_bar = panel_gpu_vram(g, vram, sizeof(vram), &frac);
    if (tele_get(g, TELE_F_GTT_USED, &gu)) {
        char b[16];
        ui_fmt_bytes(b, sizeof(b), (uint64_t)gu);
        snprintf(gtt, sizeof(gtt), "GTT %s", b);
    }
    panel_gpu_val(busy, sizeof(busy), g, TELE_F_BUSY, "%");
    panel_gpu_val(temp, sizeof(temp), g, TELE_F_TEMP, "C");
    panel_gpu_val(pw, sizeof(pw), g, TELE_F_POWER, "W");
    panel_gpu_val(clk, sizeof(clk), g, TELE_F_SCLK, "MHz");
    int room = w + 1 - x - 26; /* what is left beside busy/temp/power/clock */
    int bar = has_bar && room >= 16 + 20 + 15 ? 16 : has_bar && room >= 8 + 20 + 15 ? 8 : 0;
    if (bar) {
        w_bar(p->win, y, x, bar, frac, THEME_GAUGE, f);
        x += bar + 1;
        room -= bar + 1;
    }
    bool show_gtt = room >= 20 + 15;
    w_text(p->win, y, x, w + 1 - x, THEME_TEXT, f, "%-19s %-*s%5s %5s %5s %8s", vram,
           show_gtt ? 15 : 0, show_gtt ? gtt : "", busy, temp, pw, clk);
}

/* Why there is no GPU list: the first providers' reasons. */
/* Why no GPU shows: telemetry off, or each provider's reason. */
static void panel_gpu_why_text(const struct ui_frame *f, char *buf, size_t n) {
    char why[512] = "";
    const struct tele_snap *t = f->tele;
    for (unsigned k = 0; t && k < t->n_prov && strlen(why) < sizeof(why) - 40; k++)
        if (t->prov[k].reason[0])
            snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s: %s", why[0] ? "; " : "",
                     t->prov[k].name, t->prov[k].reason);
    snprintf(buf, n, "telemetry: %s%s",
             !t ? "off (replay, --telemetry none, or none from the agent yet)" : "no GPU found - ",
             why);
}

#define PANEL_GPU_WHY_ROWS 3 /* the reason wraps over at most this many rows */

/* The reason, wrapped over up to rows rows of width w (continuations indented 2), the last
 * row shown ending in ".. g" where more follows (the GPU overlay has it all); returns the rows
 * it takes (draws only with win). */
static int panel_gpu_why(WINDOW *win, int y, int w, int rows, const struct ui_frame *f) {
    char why[640];
    struct wrap_line lines[PANEL_GPU_WHY_ROWS];
    panel_gpu_why_text(f, why, sizeof(why));
    rows = rows > PANEL_GPU_WHY_ROWS ? PANEL_GPU_WHY_ROWS : rows < 1 ? 1 : rows;
    int n = wrap_text(why, w, 2, lines, rows), shown = n < rows ? n : rows;
    for (int k = 0; win && k < shown; k++) {
        bool cut = k == shown - 1 && n > shown;
        int len =
            cut && lines[k].len > w - lines[k].indent - 5 ? w - lines[k].indent - 5 : lines[k].len;
        w_text(win, y + k, 1 + lines[k].indent, w - lines[k].indent, THEME_DIM, f, "%.*s%s", len,
               why + lines[k].off, cut ? " .. g" : "");
    }
    return shown;
}

/* Several training devices: their pools summed (those with allocator numbers; n/a when none
 * has), and the devices by index, or watched jobs by name. */
static void panel_gpu_train_many(struct panel *p, int y, const struct ui_frame *f) {
    uint64_t res = 0, live = 0;
    unsigned measured = 0;
    bool jobs = f->run->watch && f->run->ranks[0].valid;
    char pools[64] = "n/a", pool[24], alloc[24], devs[160] = "";
    for (unsigned k = 0; k < f->n_snaps; k++) {
        if (!(f->snaps[k]->na & ENGINE_NA_MEM)) {
            res += f->snaps[k]->mem.reserved_bytes;
            live += f->snaps[k]->mem.allocated_bytes;
            measured++;
        }
        size_t at = strlen(devs);
        char nm[96];
        if (jobs)
            ui_devices_name(f->run, k, false, nm, sizeof(nm));
        else
            snprintf(nm, sizeof(nm), "%u", ui_dev_index(f->run, k));
        if (at + strlen(nm) + 8 < sizeof(devs))
            snprintf(devs + at, sizeof(devs) - at, "%s%s", k ? (jobs ? ", " : ",") : "", nm);
    }
    if (measured) {
        ui_fmt_bytes(pool, sizeof(pool), res);
        ui_fmt_bytes(alloc, sizeof(alloc), live);
        snprintf(pools, sizeof(pools), "%s (%s live)", pool, alloc);
    }
    if (jobs)
        w_text(p->win, y, 1, p->w - 2, THEME_DIM, f, "%u jobs training (%s): pools %s%s",
               f->n_snaps, devs, pools, measured ? "" : " (no allocator lines)");
    else
        w_text(p->win, y, 1, p->w - 2, THEME_DIM, f, "*training on %u devices (%s): pools %s",
               f->n_snaps, devs, pools);
}

/* The runtime's and the pool's numbers for the device the loop runs on. */
static void panel_gpu_train(struct panel *p, int y, const struct ui_frame *f) {
    if (f->n_snaps > 1) {
        panel_gpu_train_many(p, y, f);
        return;
    }
    const struct engine_snap *s = f->snap;
    char pool[64] = "n/a", runtime[48] = "n/a", a[24], b[24];
    if (!(s->na & ENGINE_NA_MEM)) {
        ui_fmt_bytes(a, sizeof(a), s->mem.reserved_bytes);
        ui_fmt_bytes(b, sizeof(b), s->mem.allocated_bytes);
        snprintf(pool, sizeof(pool), "%s (%s live)", a, b);
    }
    if (s->dev.mem_valid && s->dev.mem_total_bytes >= s->dev.mem_free_bytes) {
        ui_fmt_bytes(a, sizeof(a), s->dev.mem_total_bytes - s->dev.mem_free_bytes);
        ui_fmt_bytes(b, sizeof(b), s->dev.mem_total_bytes);
        snprintf(runtime, sizeof(runtime), "%s/%s", a, b); /* used/total */
    }
    w_text(p->win, y, 1, p->w - 2, THEME_DIM, f, "%straining: pool %s, runtime %s on %s",
           f->tele_train >= 0 ? "*" : "", pool, runtime, s->dev.name);
}

/* The title: the backend, the GPUs, "+N more" for those scrolled out of view (up and down
 * reach them), and the Enter hint while focused and there is room. */
static void panel_gpu_title(struct panel *p, unsigned n, unsigned hidden,
                            const struct ui_frame *f) {
    char info[96], more[32] = "";
    if (hidden) {
        ui_devices_more(hidden, more, sizeof(more));
        snprintf(more + strlen(more), sizeof(more) - strlen(more), " (up/down)");
    }
    int at = snprintf(info, sizeof(info), "%s  %u GPU%s%s%s", f->run->backend, n, n == 1 ? "" : "s",
                      more[0] ? "  " : "", more);
    if (p->focused && at + 16 <= p->w - 14) /* as w_title shows info */
        snprintf(info + at, sizeof(info) - (size_t)at, "  Enter: details");
    w_title(p->win, "GPU", info, p->focused, f);
}

static void panel_gpu_draw(struct panel *p, const struct ui_frame *f) {
    struct panel_gpu *g = p->priv;
    const struct tele_snap *t = f->tele;
    unsigned n = t ? t->n_gpus : 0;
    int rows = p->h - 2; /* one row kept for the training line */
    if (g->selected >= (int)n)
        g->selected = n ? (int)n - 1 : 0;
    if (g->selected < g->scroll)
        g->scroll = g->selected;
    if (rows > 0 && g->selected >= g->scroll + rows)
        g->scroll = g->selected - rows + 1;
    int y = 1;
    if (n == 0 && y < p->h - 1)
        y += panel_gpu_why(p->win, y, p->w - 2, p->h - 2, f);
    unsigned shown = 0;
    for (unsigned i = (unsigned)g->scroll; i < n && y < p->h - 1; i++, y++, shown++)
        panel_gpu_row(p, y, &t->gpus[i],
                      f->n_snaps > 1 ? gpu_view_train_rank(t, (int)i, f->snaps, f->n_snaps) >= 0
                                     : (int)i == f->tele_train,
                      (int)i == g->selected, f);
    if (y < p->h)
        panel_gpu_train(p, p->h - 1, f);
    panel_gpu_title(p, n, n - shown, f);
}

static unsigned panel_gpu_key(struct panel *p, int ch, const struct ui_frame *f) {
    struct panel_gpu *g = p->priv;
    int n = f->tele ? (int)f->tele->n_gpus : 0;
    if (ch == '\n' || ch == KEY_ENTER)
        return PANEL_HANDLED | PANEL_OPEN_GPU_OVERLAY;
    if (ch == KEY_UP || ch == KEY_DOWN) {
        g->selected += ch == KEY_UP ? -1 : 1;
        g->selected = g->selected < 0 ? 0 : g->selected >= n ? (n ? n - 1 : 0) : g->selected;
        return PANEL_HANDLED;
    }
    return PANEL_IGNORED;
}

/* A row a GPU (or the reason there is none, wrapped), and the training line. */
static int panel_gpu_rows(const struct panel *p, const struct ui_frame *f, int w) {
    (void)p;
    unsigned n = f->tele ? f->tele->n_gpus : 0;
    /* the reason a row where a row is short, else as much as three rows hold */
    return 2 + (n ? (int)n : panel_gpu_why(NULL, 0, w - 2, w < 100 ? 1 : PANEL_GPU_WHY_ROWS, f));
}

const struct panel_ops panel_gpu_ops = {
    .name = "gpu",
    .title = "GPU",
    .help = "every GPU: VRAM, GTT, busy, temp, power, clock (* = training); Enter/g: details",
    .min_h = 3,
    .pref_h = 6,
    .column = 0,
    .rows = panel_gpu_rows,
    .create = panel_gpu_create,
    .destroy = panel_gpu_destroy,
    .draw = panel_gpu_draw,
    .key = panel_gpu_key,
};
