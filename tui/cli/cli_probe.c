/* `ringside probe`: open every telemetry provider, say what each found (or why not), and print
 * one merged snapshot per GPU, as text or JSON. */
#include "backend/core/evring.h"
#include "backend/telemetry/tele_json.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_optab.h"
#include "tui/cli/cli_tele.h"
#include "tui/view/gpu_view.h"
#include "tui/view/ui_model.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct cli_probe_args {
    bool json, once;
    struct tele_conf tele;
};

static int cli_probe_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_probe_args *a = ctx;
    if (id == CLI_O_PROBE_JSON || id == CLI_O_PROBE_ONCE) {
        *(id == CLI_O_PROBE_JSON ? &a->json : &a->once) = true;
        return 0;
    }
    char flag[64];
    return cli_tele_opt(cli_optab_flag(id, flag, sizeof(flag)), v, &a->tele, err, n);
}

static int cli_probe_parse(int argc, char **argv, struct cli_probe_args *a) {
    memset(a, 0, sizeof(*a));
    tele_conf_default(&a->tele);
    return cli_getopt_run(argc, argv, "probe", CLI_CMD_PROBE, false, cli_probe_opt, a);
}

static const char *cli_probe_src(const struct tele_snap *s, uint8_t src) {
    return src && src <= s->n_prov ? s->prov[src - 1].name : "";
}

static void cli_probe_text_providers(const struct tele_snap *s) {
    printf("providers:\n");
    for (unsigned k = 0; k < s->n_prov; k++) {
        const struct tele_prov_info *p = &s->prov[k];
        if (p->status == TELE_UNAVAILABLE)
            printf("  %-9s unavailable  %s\n", p->name, p->reason);
        else
            printf("  %-9s %-12s %u GPU(s), sample %.1f us (max %.1f)%s%s\n", p->name,
                   tele_status_name(p->status), p->n_gpus, (double)p->last_sample_ns / 1e3,
                   (double)p->max_sample_ns / 1e3, p->reason[0] ? "  " : "", p->reason);
    }
}

static void cli_probe_text_gpu(const struct tele_snap *s, const struct tele_gpu *g) {
    printf("\nGPU %d  %s  %s  %s  (%s)%s\n", g->index, g->pci, tele_vendor_name(g->vendor),
           g->name[0] ? g->name : "n/a", g->arch[0] ? g->arch : "arch n/a",
           g->power == TELE_POWER_SUSPENDED ? "  [suspended: not woken]" : "");
    char v[48];
    for (unsigned f = 0; f < TELE_F_COUNT; f++) {
        if (!g->src[f])
            continue;
        gpu_view_fmt(v, sizeof(v), f, g->f[f]);
        printf("  %-34s %-14s %s\n", tele_field_label(f), v, cli_probe_src(s, g->src[f]));
    }
    if (g->buddy_src) {
        char fr[24], lg[24];
        ui_fmt_bytes(fr, sizeof(fr), g->buddy.free_bytes);
        ui_fmt_bytes(lg, sizeof(lg), g->buddy.largest_free_bytes);
        printf("  %-34s free %s, largest %s, %llu blocks  %s\n", "VRAM allocator (drm_buddy)", fr,
               lg, (unsigned long long)g->buddy.free_blocks, cli_probe_src(s, g->buddy_src));
    }
    for (int k = 0; g->rings_src && k < g->n_rings; k++)
        printf("  ring %-18s signaled %llu emitted %llu%s\n", g->rings[k].name,
               (unsigned long long)g->rings[k].signaled, (unsigned long long)g->rings[k].emitted,
               g->rings[k].stalled ? "  STALLED" : "");
    for (int k = 0; g->procs_src && k < g->n_procs; k++) {
        const struct tele_proc *p = &g->procs[k];
        char vr[24] = "n/a";
        if (p->vram_valid)
            ui_fmt_bytes(vr, sizeof(vr), p->vram_bytes);
        printf("  pid %-8d %-16s VRAM %-10s%s  %s\n", p->pid, p->name, vr, p->self ? " (us)" : "",
               cli_probe_src(s, g->procs_src));
    }
}

static void cli_probe_events(struct evring *ring, bool json) {
    struct ev evs[64];
    size_t n;
    while ((n = evring_drain(ring, evs, 64)) > 0)
        for (size_t i = 0; i < n; i++)
            fprintf(json ? stderr : stdout, "%sevent: %s\n", json ? "ringside probe: " : "\n",
                    evs[i].u.text.text);
}

int cli_probe(int argc, char **argv) {
    struct cli_probe_args a;
    int rc = cli_probe_parse(argc, argv, &a);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    struct evring *ring = NULL;
    struct tele *t = NULL;
    char err[512];
    if (evring_create(&ring, 256) != 0)
        return 1;
    if ((rc = tele_create(&t, &a.tele, ring, err, sizeof(err))) != 0) {
        evring_destroy(ring);
        return cli_usage_error("probe", err);
    }
    tele_sample_now(t);
    if (!a.once) {
        struct timespec d = {(time_t)(a.tele.interval_ns / 1000000000ull),
                             (long)(a.tele.interval_ns % 1000000000ull)};
        while (nanosleep(&d, &d) != 0 && errno == EINTR)
            ;
        tele_sample_now(t);
    }
    const struct tele_snap *s = tele_snap_read(t, NULL);
    if (a.json) {
        rc = tele_json_write(stdout, s, false) == 0 ? 0 : 1;
    } else {
        cli_probe_text_providers(s);
        if (s->n_gpus == 0)
            printf("\nno GPU found by any provider\n");
        for (unsigned i = 0; i < s->n_gpus; i++)
            cli_probe_text_gpu(s, &s->gpus[i]);
    }
    cli_probe_events(ring, a.json);
    tele_destroy(t);
    evring_destroy(ring);
    return fflush(stdout) == 0 ? rc : 1;
}
