/* The JSON form of a telemetry snapshot (`ringside probe --json`): providers with their status,
 * and one object per merged GPU; a field no provider read is absent, never 0. */
#include "backend/telemetry/tele_json.h"

#include "backend/core/json_out.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *tele_json_src(const struct tele_snap *s, uint8_t src) {
    return src && src <= s->n_prov ? s->prov[src - 1].name : NULL;
}

static json_object *tele_json_num(double v) {
    if (v == floor(v) && fabs(v) < 9.0e15)
        return json_object_new_int64((int64_t)v);
    return json_out_double(v);
}

static json_object *tele_json_providers(const struct tele_snap *s) {
    json_object *a = json_object_new_array();
    for (unsigned k = 0; k < s->n_prov; k++) {
        const struct tele_prov_info *p = &s->prov[k];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(p->name));
        json_object_object_add(o, "status", json_object_new_string(tele_status_name(p->status)));
        json_object_object_add(o, "reason",
                               p->reason[0] ? json_object_new_string(p->reason) : NULL);
        json_object *caps = json_object_new_array();
        for (unsigned b = 0; b < TELE_CAP_COUNT; b++)
            if (p->caps & (1u << b))
                json_object_array_add(caps, json_object_new_string(tele_cap_name(b)));
        json_object_object_add(o, "capabilities", caps);
        json_object_object_add(o, "gpus", json_object_new_int((int)p->n_gpus));
        json_object_object_add(o, "samples", json_object_new_int64((int64_t)p->samples));
        json_object_object_add(o, "last_sample_us",
                               json_out_double((double)p->last_sample_ns / 1e3));
        json_object_object_add(o, "max_sample_us", json_out_double((double)p->max_sample_ns / 1e3));
        json_object_array_add(a, o);
    }
    return a;
}

static json_object *tele_json_buddy(const struct tele_buddy *b) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "chunk_bytes", json_object_new_int64((int64_t)b->chunk_bytes));
    json_object_object_add(o, "total_bytes", json_object_new_int64((int64_t)b->total_bytes));
    json_object_object_add(o, "free_bytes", json_object_new_int64((int64_t)b->free_bytes));
    json_object_object_add(o, "largest_free_bytes",
                           json_object_new_int64((int64_t)b->largest_free_bytes));
    json_object_object_add(o, "free_blocks", json_object_new_int64((int64_t)b->free_blocks));
    json_object *orders = json_object_new_array();
    for (int k = 0; k < b->n_orders && k < TELE_BUDDY_ORDERS; k++) {
        json_object *e = json_object_new_object();
        json_object_object_add(e, "order", json_object_new_int(k));
        json_object_object_add(e, "free_bytes",
                               json_object_new_int64((int64_t)b->order_free_bytes[k]));
        json_object_object_add(e, "blocks", json_object_new_int64((int64_t)b->order_blocks[k]));
        json_object_array_add(orders, e);
    }
    json_object_object_add(o, "orders", orders);
    return o;
}

static json_object *tele_json_rings(const struct tele_gpu *g) {
    json_object *a = json_object_new_array();
    for (int k = 0; k < g->n_rings && k < TELE_MAX_RINGS; k++) {
        const struct tele_ring *r = &g->rings[k];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(r->name));
        json_object_object_add(o, "signaled", json_object_new_int64((int64_t)r->signaled));
        json_object_object_add(o, "emitted", json_object_new_int64((int64_t)r->emitted));
        json_object_object_add(o, "stalled", json_object_new_boolean(r->stalled));
        json_object_array_add(a, o);
    }
    return a;
}

static json_object *tele_json_procs(const struct tele_gpu *g) {
    json_object *a = json_object_new_array();
    for (int k = 0; k < g->n_procs && k < TELE_MAX_PROCS; k++) {
        const struct tele_proc *p = &g->procs[k];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "pid", json_object_new_int(p->pid));
        json_object_object_add(o, "name", json_object_new_string(p->name));
        json_object_object_add(
            o, "vram_bytes", p->vram_valid ? json_object_new_int64((int64_t)p->vram_bytes) : NULL);
        json_object_object_add(o, "gtt_bytes",
                               p->gtt_valid ? json_object_new_int64((int64_t)p->gtt_bytes) : NULL);
        json_object_object_add(o, "busy_pct", p->busy_valid ? json_out_double(p->busy_pct) : NULL);
        json_object_object_add(o, "self", json_object_new_boolean(p->self));
        json_object_array_add(a, o);
    }
    return a;
}

static void tele_json_src_add(json_object *srcs, const struct tele_snap *s, const char *key,
                              uint8_t src) {
    const char *name = tele_json_src(s, src);
    if (name)
        json_object_object_add(srcs, key, json_object_new_string(name));
}

static json_object *tele_json_sources(const struct tele_snap *s, const struct tele_gpu *g) {
    json_object *o = json_object_new_object();
    tele_json_src_add(o, s, "name", g->name_src);
    tele_json_src_add(o, s, "arch", g->arch_src);
    tele_json_src_add(o, s, "power_state", g->power_src);
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        tele_json_src_add(o, s, tele_field_json(f), g->src[f]);
    tele_json_src_add(o, s, "buddy", g->buddy_src);
    tele_json_src_add(o, s, "rings", g->rings_src);
    tele_json_src_add(o, s, "processes", g->procs_src);
    return o;
}

/* VRAM used/total as each provider read it: the reconciliation's raw material. */
static json_object *tele_json_vram_by(const struct tele_snap *s, const struct tele_gpu *g) {
    json_object *o = json_object_new_object();
    for (unsigned k = 0; k < s->n_prov && k < TELE_MAX_PROVIDERS; k++) {
        if (!(g->vram_by_valid & (1u << k)))
            continue;
        json_object *e = json_object_new_object();
        json_object_object_add(e, "used_bytes", tele_json_num(g->vram_used_by[k]));
        json_object_object_add(
            e, "total_bytes",
            (g->vram_total_by_valid & (1u << k)) ? tele_json_num(g->vram_total_by[k]) : NULL);
        json_object_object_add(o, s->prov[k].name, e);
    }
    return o;
}

static json_object *tele_json_str(const char *v) {
    return v[0] ? json_object_new_string(v) : NULL;
}

static json_object *tele_json_gpu(const struct tele_snap *s, const struct tele_gpu *g) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "index", json_object_new_int(g->index));
    json_object_object_add(o, "pci", json_object_new_string(g->pci));
    json_object_object_add(o, "vendor",
                           g->vendor == TELE_VENDOR_UNKNOWN
                               ? NULL
                               : json_object_new_string(tele_vendor_name(g->vendor)));
    json_object_object_add(o, "name", tele_json_str(g->name));
    json_object_object_add(o, "arch", tele_json_str(g->arch));
    json_object_object_add(o, "driver", tele_json_str(g->driver));
    json_object_object_add(o, "card", g->card >= 0 ? json_object_new_int(g->card) : NULL);
    json_object_object_add(
        o, "power_state",
        g->power == TELE_POWER_UNKNOWN ? NULL : json_object_new_string(tele_power_name(g->power)));
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        json_object_object_add(o, tele_field_json(f), g->src[f] ? tele_json_num(g->f[f]) : NULL);
    json_object_object_add(o, "buddy", g->buddy_src ? tele_json_buddy(&g->buddy) : NULL);
    json_object_object_add(o, "rings", g->rings_src ? tele_json_rings(g) : NULL);
    json_object_object_add(o, "processes", g->procs_src ? tele_json_procs(g) : NULL);
    json_object_object_add(o, "processes_unlisted",
                           g->procs_src ? json_object_new_int((int)g->procs_more) : NULL);
    json_object_object_add(o, "vram_by_source", tele_json_vram_by(s, g));
    json_object_object_add(o, "sources", tele_json_sources(s, g));
    return o;
}

json_object *tele_json_object(const struct tele_snap *s) {
    json_object *root = json_object_new_object();
    json_object_object_add(root, "providers", tele_json_providers(s));
    json_object *gpus = json_object_new_array();
    for (unsigned i = 0; i < s->n_gpus; i++)
        json_object_array_add(gpus, tele_json_gpu(s, &s->gpus[i]));
    json_object_object_add(root, "gpus", gpus);
    return root;
}

int tele_json_write(FILE *out, const struct tele_snap *s, bool pretty) {
    json_object *root = tele_json_object(s);
    int flags =
        JSON_C_TO_STRING_NOSLASHESCAPE |
        (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);
    const char *text = json_object_to_json_string_ext(root, flags);
    int rc = fprintf(out, "%s\n", text) < 0 ? -1 : 0;
    json_object_put(root);
    return rc;
}
