/* GPU panel: the device the loop runs on, its memory, and the pool's share of it. */
#include "tui/panel.h"
#include "tui/widgets.h"

#include <stdio.h>

static void panel_gpu_draw(struct panel *p, const struct ui_frame *f) {
    const struct engine_snap *s = f->snap;
    char info[48];
    snprintf(info, sizeof(info), "%s  device %u/%u", f->run->backend, f->gpu + 1,
             f->run->n_devices);
    w_title(p->win, "GPU", info, p->focused, f);
    int w = p->w - 2;
    w_text(p->win, 1, 1, w, THEME_TEXT, f, "%u  %s  (%s)", f->gpu, s->dev.name, s->dev.arch);
    if (p->h < 3)
        return;
    char used[24], total[24], pool[24];
    ui_fmt_bytes(pool, sizeof(pool), s->mem.reserved_bytes);
    if (s->dev.mem_valid && s->dev.mem_total_bytes > 0) {
        uint64_t u = s->dev.mem_total_bytes - s->dev.mem_free_bytes;
        ui_fmt_bytes(used, sizeof(used), u);
        ui_fmt_bytes(total, sizeof(total), s->dev.mem_total_bytes);
        w_text(p->win, 2, 1, 5, THEME_DIM, f, "mem");
        int bar = w - 40 > 10 ? (w - 40 < 40 ? w - 40 : 40) : 10;
        w_bar(p->win, 2, 5, bar, (double)u / (double)s->dev.mem_total_bytes, THEME_GAUGE, f);
        w_text(p->win, 2, 6 + bar, w - bar - 6, THEME_TEXT, f, "%s / %s  pool %s", used, total,
               pool);
    } else {
        w_text(p->win, 2, 1, w, THEME_TEXT, f, "mem n/a  pool %s", pool);
    }
    if (p->h >= 4)
        w_text(p->win, 3, 1, w, THEME_DIM, f,
               "telemetry: unavailable - no telemetry provider in this build (GTT, "
               "utilisation, temperature, power, clocks: n/a)");
}

const struct panel_ops panel_gpu_ops = {
    .name = "gpu",
    .title = "GPU",
    .help = "device, memory used/total, the pool's share, telemetry",
    .min_h = 3,
    .pref_h = 4,
    .column = 0,
    .draw = panel_gpu_draw,
    .key = NULL,
};
