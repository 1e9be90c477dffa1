/* Shared by the GPU overlay's page builders. */
#ifndef RINGSIDE_TUI_VIEW_GPU_VIEW_INTERNAL_H
#define RINGSIDE_TUI_VIEW_GPU_VIEW_INTERNAL_H

#include "tui/view/gpu_view.h"

#include <stdbool.h>

struct gpu_view_out {
    struct gpu_view_line *lines;
    int n, max;
};

/* Append a line (dropped when full). */
void gpu_view_add(struct gpu_view_out *o, enum theme_role role, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The provider name behind a source byte, "" for none. */
const char *gpu_view_src(const struct tele_snap *t, uint8_t src);

/* The reconciliation page: VRAM used as every source counts it, and why they differ. training:
 * es describes the engine on this GPU. */
void gpu_view_recon(struct gpu_view_out *o, const struct tele_snap *t, const struct tele_gpu *g,
                    const struct engine_snap *es, bool training);

#endif
