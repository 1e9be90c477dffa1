/* Telemetry records: field and enum names, defaults, and the per-PCI-address merge of the
 * providers' records into one snapshot. */
#include "backend/telemetry/tele_internal.h"
#include "backend/telemetry/tele_prov.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tele_field_jsons[] = {
#define X(id, json, label) json,
    TELE_FIELDS(X)
#undef X
};

static const char *const tele_field_labels[] = {
#define X(id, json, label) label,
    TELE_FIELDS(X)
#undef X
};

static const char *const tele_cap_names[] = {
#define X(id, name) name,
    TELE_CAPS(X)
#undef X
};

const char *tele_field_json(unsigned f) {
    return f < TELE_F_COUNT ? tele_field_jsons[f] : "?";
}

const char *tele_field_label(unsigned f) {
    return f < TELE_F_COUNT ? tele_field_labels[f] : "?";
}

int tele_field_from_json(const char *name) {
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        if (strcmp(name, tele_field_jsons[f]) == 0)
            return (int)f;
    return -1;
}

const char *tele_cap_name(unsigned bit) {
    return bit < TELE_CAP_COUNT ? tele_cap_names[bit] : "?";
}

const char *tele_vendor_name(enum tele_vendor v) {
    return v == TELE_VENDOR_AMD ? "amd" : v == TELE_VENDOR_NVIDIA ? "nvidia" : "unknown";
}

const char *tele_power_name(enum tele_power p) {
    return p == TELE_POWER_ACTIVE ? "active" : p == TELE_POWER_SUSPENDED ? "suspended" : "unknown";
}

const char *tele_status_name(enum tele_status s) {
    return s == TELE_OK ? "ok" : s == TELE_UNAVAILABLE ? "unavailable" : "error";
}

void tele_conf_default(struct tele_conf *c) {
    memset(c, 0, sizeof(*c));
    snprintf(c->roots.sys, sizeof(c->roots.sys), "/sys");
    snprintf(c->roots.proc, sizeof(c->roots.proc), "/proc");
    snprintf(c->roots.debugfs, sizeof(c->roots.debugfs), "/sys/kernel/debug");
    snprintf(c->roots.dev, sizeof(c->roots.dev), "/dev");
    snprintf(c->roots.nvml_lib, sizeof(c->roots.nvml_lib), "libnvidia-ml.so.1");
    c->interval_ns = 500000000ull;
}

void tele_gpu_init(struct tele_gpu *g, const char *pci) {
    memset(g, 0, sizeof(*g));
    if (!pci || !tele_pci_norm(pci, g->pci))
        snprintf(g->pci, sizeof(g->pci), "%s", pci ? pci : "");
    g->card = -1;
    g->index = -1;
}

const struct tele_gpu *tele_snap_find(const struct tele_snap *s, const char *pci) {
    char key[16];
    if (!pci || !tele_pci_norm(pci, key))
        return NULL;
    for (unsigned i = 0; i < s->n_gpus; i++)
        if (strcmp(s->gpus[i].pci, key) == 0)
            return &s->gpus[i];
    return NULL;
}

void tele_merge_begin(struct tele_snap *s) {
    s->n_gpus = 0;
}

static struct tele_gpu *tele_merge_slot(struct tele_snap *s, const char *pci) {
    for (unsigned i = 0; i < s->n_gpus; i++)
        if (strcmp(s->gpus[i].pci, pci) == 0)
            return &s->gpus[i];
    if (s->n_gpus >= TELE_MAX_GPUS)
        return NULL;
    struct tele_gpu *g = &s->gpus[s->n_gpus++];
    tele_gpu_init(g, pci);
    return g;
}

static void tele_merge_str(char *dst, size_t cap, uint8_t *dst_src, const char *v, uint8_t src) {
    if (*dst_src || !v[0])
        return;
    snprintf(dst, cap, "%s", v);
    *dst_src = src;
}

static void tele_merge_lists(struct tele_gpu *g, const struct tele_gpu *r, uint8_t src) {
    if (!g->buddy_src && r->buddy.valid) {
        g->buddy = r->buddy;
        g->buddy_src = src;
    }
    if (!g->rings_src && r->rings_src) {
        memcpy(g->rings, r->rings, sizeof(g->rings));
        g->n_rings = r->n_rings;
        g->rings_src = src;
    }
    if (!g->procs_src && r->procs_src) {
        memcpy(g->procs, r->procs, sizeof(g->procs));
        g->n_procs = r->n_procs;
        g->procs_more = r->procs_more;
        g->procs_src = src;
    }
}

static void tele_merge_one(struct tele_gpu *g, unsigned prov, const struct tele_gpu *r) {
    uint8_t src = (uint8_t)(prov + 1);
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        if (r->src[f] && !g->src[f]) {
            g->f[f] = r->f[f];
            g->src[f] = src;
        }
    if (r->src[TELE_F_VRAM_USED] && prov < TELE_MAX_PROVIDERS) {
        g->vram_used_by[prov] = r->f[TELE_F_VRAM_USED];
        g->vram_by_valid |= (uint8_t)(1u << prov);
        if (r->src[TELE_F_VRAM_TOTAL]) {
            g->vram_total_by[prov] = r->f[TELE_F_VRAM_TOTAL];
            g->vram_total_by_valid |= (uint8_t)(1u << prov);
        }
    }
    if (g->vendor == TELE_VENDOR_UNKNOWN)
        g->vendor = r->vendor;
    if (g->card < 0)
        g->card = r->card;
    if (!g->power_src && r->power != TELE_POWER_UNKNOWN) {
        g->power = r->power;
        g->power_src = src;
    }
    tele_merge_str(g->name, sizeof(g->name), &g->name_src, r->name, src);
    tele_merge_str(g->arch, sizeof(g->arch), &g->arch_src, r->arch, src);
    if (!g->driver[0])
        snprintf(g->driver, sizeof(g->driver), "%s", r->driver);
    tele_merge_lists(g, r, src);
}

size_t tele_merge_add(struct tele_snap *s, unsigned prov, const struct tele_gpu *recs, size_t n) {
    size_t lost = 0;
    for (size_t i = 0; i < n; i++) {
        struct tele_gpu *g = tele_merge_slot(s, recs[i].pci);
        if (!g) {
            lost++;
            continue;
        }
        tele_merge_one(g, prov, &recs[i]);
    }
    return lost;
}

static int tele_merge_cmp(const void *a, const void *b) {
    return strcmp(((const struct tele_gpu *)a)->pci, ((const struct tele_gpu *)b)->pci);
}

void tele_merge_end(struct tele_snap *s) {
    qsort(s->gpus, s->n_gpus, sizeof(s->gpus[0]), tele_merge_cmp);
    for (unsigned i = 0; i < s->n_gpus; i++)
        s->gpus[i].index = (int)i;
}
