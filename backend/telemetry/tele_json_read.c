/* Reading tele_json_write's text back (a remote agent's telemetry): every member checked for
 * its type, absent or null meaning "not read", every array bounded by the snapshot's limits. */
#include "backend/core/errbuf.h"
#include "backend/core/json_text.h"
#include "backend/telemetry/tele_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A read in progress: the first error sticks and later reads are no-ops. at is the path of the
 * object being read ("gpus[1].buddy"), for messages. */
struct tele_jr {
    char *why;
    size_t whylen;
    int rc;
};

static void tele_jr_fail(struct tele_jr *t, const char *at, const char *key, const char *what) {
    if (t->rc == 0)
        t->rc = errbuf_set(t->why, t->whylen, -EINVAL, "%s%s%s: %s", at, at[0] && key[0] ? "." : "",
                           key, what);
}

/* Member key of o when present and not null, else NULL. */
static json_object *tele_jr_get(struct tele_jr *t, const json_object *o, const char *key) {
    json_object *v = NULL;
    if (t->rc != 0 || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

/* Member key of type want, or NULL (absent, null, or an error when of another type). */
static json_object *tele_jr_typed(struct tele_jr *t, const json_object *o, const char *at,
                                  const char *key, json_type want, const char *what) {
    json_object *v = tele_jr_get(t, o, key);
    if (v && !json_object_is_type(v, want)) {
        tele_jr_fail(t, at, key, what);
        return NULL;
    }
    return v;
}

static bool tele_jr_is_num(const json_object *v) {
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

/* The member key when it is a number; NULL when absent, or not a number (t then fails). */
static json_object *tele_jr_number(struct tele_jr *t, const json_object *o, const char *at,
                                   const char *key) {
    json_object *v = tele_jr_get(t, o, key);
    if (v && !tele_jr_is_num(v)) {
        tele_jr_fail(t, at, key, "not a number");
        return NULL;
    }
    return v;
}

/* A number (integer or not): true with *out when present. */
static bool tele_jr_num(struct tele_jr *t, const json_object *o, const char *at, const char *key,
                        double *out) {
    json_object *v = tele_jr_number(t, o, at, key);
    if (!v)
        return false;
    *out = json_object_get_double(v);
    return true;
}

/* A count or a byte size: a number >= 0 (a large one may be written as a double). */
static bool tele_jr_u64(struct tele_jr *t, const json_object *o, const char *at, const char *key,
                        uint64_t *out) {
    json_object *v = tele_jr_number(t, o, at, key);
    if (!v)
        return false;
    if (json_object_is_type(v, json_type_int)) {
        if (json_object_get_int64(v) < 0) {
            tele_jr_fail(t, at, key, "negative");
            return false;
        }
        *out = json_object_get_uint64(v);
        return true;
    }
    double d = json_object_get_double(v);
    if (!(d >= 0) || d >= 18446744073709551616.0) {
        tele_jr_fail(t, at, key, "out of range");
        return false;
    }
    *out = (uint64_t)d;
    return true;
}

/* An integer in [lo, hi]. */
static bool tele_jr_int(struct tele_jr *t, const json_object *o, const char *at, const char *key,
                        int64_t lo, int64_t hi, int64_t *out) {
    json_object *v = tele_jr_typed(t, o, at, key, json_type_int, "not an integer");
    if (!v)
        return false;
    int64_t x = json_object_get_int64(v);
    if (x < lo || x > hi) {
        tele_jr_fail(t, at, key, "out of range");
        return false;
    }
    *out = x;
    return true;
}

/* A string copied into dst (cut to fit); true when present. */
static bool tele_jr_str(struct tele_jr *t, const json_object *o, const char *at, const char *key,
                        char *dst, size_t cap) {
    json_object *v = tele_jr_typed(t, o, at, key, json_type_string, "not a string");
    if (v)
        snprintf(dst, cap, "%s", json_object_get_string(v));
    return v != NULL;
}

static bool tele_jr_bool(struct tele_jr *t, const json_object *o, const char *at, const char *key) {
    json_object *v = tele_jr_typed(t, o, at, key, json_type_boolean, "not a boolean");
    return v && json_object_get_boolean(v);
}

/* A sample time written in microseconds, back to nanoseconds. */
static uint64_t tele_jr_us(struct tele_jr *t, const json_object *o, const char *at,
                           const char *key) {
    double us = 0;
    if (!tele_jr_num(t, o, at, key, &us))
        return 0;
    if (!(us >= 0) || us > 1.8e16) {
        tele_jr_fail(t, at, key, "out of range");
        return 0;
    }
    return (uint64_t)llround(us * 1e3);
}

/* ---- providers ---- */

static void tele_jr_status(struct tele_jr *t, const json_object *o, const char *at,
                           enum tele_status *out) {
    char name[32] = "";
    if (!tele_jr_str(t, o, at, "status", name, sizeof(name)))
        return;
    for (int s = TELE_OK; s <= TELE_ERROR; s++)
        if (strcmp(name, tele_status_name((enum tele_status)s)) == 0) {
            *out = (enum tele_status)s;
            return;
        }
    tele_jr_fail(t, at, "status", "unknown value");
}

/* Capability names into bits; names this ringside does not know are ignored. */
static uint32_t tele_jr_caps(struct tele_jr *t, const json_object *o, const char *at) {
    json_object *a = tele_jr_typed(t, o, at, "capabilities", json_type_array, "not an array");
    uint32_t caps = 0;
    size_t n = a ? json_object_array_length(a) : 0;
    for (size_t i = 0; t->rc == 0 && i < n; i++) {
        json_object *v = json_object_array_get_idx(a, i);
        if (!json_object_is_type(v, json_type_string)) {
            tele_jr_fail(t, at, "capabilities", "not an array of strings");
            break;
        }
        for (unsigned b = 0; b < TELE_CAP_COUNT; b++)
            if (strcmp(json_object_get_string(v), tele_cap_name(b)) == 0)
                caps |= 1u << b;
    }
    return caps;
}

static void tele_jr_provider(struct tele_jr *t, const json_object *o, const char *at,
                             struct tele_prov_info *p) {
    if (!json_object_is_type(o, json_type_object)) {
        tele_jr_fail(t, at, "", "not an object");
        return;
    }
    int64_t n = 0;
    tele_jr_str(t, o, at, "name", p->name, sizeof(p->name));
    tele_jr_status(t, o, at, &p->status);
    tele_jr_str(t, o, at, "reason", p->reason, sizeof(p->reason));
    p->caps = tele_jr_caps(t, o, at);
    if (tele_jr_int(t, o, at, "gpus", 0, UINT32_MAX, &n))
        p->n_gpus = (unsigned)n;
    tele_jr_u64(t, o, at, "samples", &p->samples);
    p->last_sample_ns = tele_jr_us(t, o, at, "last_sample_us");
    p->max_sample_ns = tele_jr_us(t, o, at, "max_sample_us");
}

static void tele_jr_providers(struct tele_jr *t, const json_object *root, struct tele_snap *s) {
    json_object *a = tele_jr_typed(t, root, "", "providers", json_type_array, "not an array");
    size_t n = a ? json_object_array_length(a) : 0;
    for (size_t i = 0; t->rc == 0 && i < n && s->n_prov < TELE_MAX_PROVIDERS; i++) {
        char at[96];
        snprintf(at, sizeof(at), "providers[%zu]", i);
        tele_jr_provider(t, json_object_array_get_idx(a, i), at, &s->prov[s->n_prov++]);
    }
}

/* ---- GPUs ---- */

/* One GPU being read: where its values came from ("sources"), for src[]. */
struct tele_jr_gpu {
    const struct tele_snap *s;
    const json_object *o;
    json_object *sources; /* or NULL */
    char at[32];
};

/* The provider index + 1 named for key in "sources"; 1 when none is named or the name is not a
 * listed provider (the value is there: it must stay valid). */
static uint8_t tele_jr_src(struct tele_jr *t, const struct tele_jr_gpu *g, const char *key) {
    char name[sizeof(((struct tele_prov_info *)0)->name)] = "";
    char at[96];
    snprintf(at, sizeof(at), "%s.sources", g->at);
    if (!g->sources || !tele_jr_str(t, g->sources, at, key, name, sizeof(name)))
        return 1;
    for (unsigned k = 0; k < g->s->n_prov; k++)
        if (strcmp(g->s->prov[k].name, name) == 0)
            return (uint8_t)(k + 1);
    return 1;
}

static void tele_jr_identity(struct tele_jr *t, const struct tele_jr_gpu *j, struct tele_gpu *g) {
    char name[16] = "";
    int64_t n = 0;
    if (tele_jr_str(t, j->o, j->at, "vendor", name, sizeof(name)))
        g->vendor = strcmp(name, "amd") == 0      ? TELE_VENDOR_AMD
                    : strcmp(name, "nvidia") == 0 ? TELE_VENDOR_NVIDIA
                                                  : TELE_VENDOR_UNKNOWN;
    if (tele_jr_str(t, j->o, j->at, "name", g->name, sizeof(g->name)))
        g->name_src = tele_jr_src(t, j, "name");
    if (tele_jr_str(t, j->o, j->at, "arch", g->arch, sizeof(g->arch)))
        g->arch_src = tele_jr_src(t, j, "arch");
    tele_jr_str(t, j->o, j->at, "driver", g->driver, sizeof(g->driver));
    if (tele_jr_int(t, j->o, j->at, "card", -1, INT32_MAX, &n))
        g->card = (int)n;
    if (tele_jr_str(t, j->o, j->at, "power_state", name, sizeof(name))) {
        g->power = strcmp(name, "active") == 0      ? TELE_POWER_ACTIVE
                   : strcmp(name, "suspended") == 0 ? TELE_POWER_SUSPENDED
                                                    : TELE_POWER_UNKNOWN;
        g->power_src = g->power == TELE_POWER_UNKNOWN ? 0 : tele_jr_src(t, j, "power_state");
    }
}

static void tele_jr_fields(struct tele_jr *t, const struct tele_jr_gpu *j, struct tele_gpu *g) {
    for (unsigned f = 0; t->rc == 0 && f < TELE_F_COUNT; f++)
        if (tele_jr_num(t, j->o, j->at, tele_field_json(f), &g->f[f]))
            g->src[f] = tele_jr_src(t, j, tele_field_json(f));
}

static void tele_jr_order(struct tele_jr *t, const json_object *e, const char *at,
                          struct tele_buddy *b) {
    int64_t k = -1;
    if (!json_object_is_type(e, json_type_object)) {
        tele_jr_fail(t, at, "", "not an object");
        return;
    }
    if (!tele_jr_int(t, e, at, "order", 0, INT32_MAX, &k) || k >= TELE_BUDDY_ORDERS)
        return; /* an order this build has no room for */
    tele_jr_u64(t, e, at, "free_bytes", &b->order_free_bytes[k]);
    tele_jr_u64(t, e, at, "blocks", &b->order_blocks[k]);
    if (k + 1 > b->n_orders)
        b->n_orders = (int)k + 1;
}

static void tele_jr_buddy(struct tele_jr *t, const struct tele_jr_gpu *j, struct tele_gpu *g) {
    json_object *o = tele_jr_typed(t, j->o, j->at, "buddy", json_type_object, "not an object");
    if (!o)
        return;
    char at[96];
    snprintf(at, sizeof(at), "%s.buddy", j->at);
    struct tele_buddy *b = &g->buddy;
    tele_jr_u64(t, o, at, "chunk_bytes", &b->chunk_bytes);
    tele_jr_u64(t, o, at, "total_bytes", &b->total_bytes);
    tele_jr_u64(t, o, at, "free_bytes", &b->free_bytes);
    tele_jr_u64(t, o, at, "largest_free_bytes", &b->largest_free_bytes);
    tele_jr_u64(t, o, at, "free_blocks", &b->free_blocks);
    json_object *a = tele_jr_typed(t, o, at, "orders", json_type_array, "not an array");
    size_t n = a ? json_object_array_length(a) : 0;
    for (size_t i = 0; t->rc == 0 && i < n; i++) {
        char eat[160];
        snprintf(eat, sizeof(eat), "%s.orders[%zu]", at, i);
        tele_jr_order(t, json_object_array_get_idx(a, i), eat, b);
    }
    b->valid = true;
    g->buddy_src = tele_jr_src(t, j, "buddy");
}

static void tele_jr_ring(struct tele_jr *t, const json_object *o, const char *at,
                         struct tele_ring *r) {
    if (!json_object_is_type(o, json_type_object)) {
        tele_jr_fail(t, at, "", "not an object");
        return;
    }
    tele_jr_str(t, o, at, "name", r->name, sizeof(r->name));
    tele_jr_u64(t, o, at, "signaled", &r->signaled);
    tele_jr_u64(t, o, at, "emitted", &r->emitted);
    r->stalled = tele_jr_bool(t, o, at, "stalled");
}

static void tele_jr_rings(struct tele_jr *t, const struct tele_jr_gpu *j, struct tele_gpu *g) {
    json_object *a = tele_jr_typed(t, j->o, j->at, "rings", json_type_array, "not an array");
    if (!a)
        return;
    size_t n = json_object_array_length(a);
    for (size_t i = 0; t->rc == 0 && i < n && g->n_rings < TELE_MAX_RINGS; i++) {
        char at[96];
        snprintf(at, sizeof(at), "%s.rings[%zu]", j->at, i);
        tele_jr_ring(t, json_object_array_get_idx(a, i), at, &g->rings[g->n_rings++]);
    }
    g->rings_src = tele_jr_src(t, j, "rings");
}

static void tele_jr_proc(struct tele_jr *t, const json_object *o, const char *at,
                         struct tele_proc *p) {
    int64_t pid = 0;
    if (!json_object_is_type(o, json_type_object)) {
        tele_jr_fail(t, at, "", "not an object");
        return;
    }
    if (tele_jr_int(t, o, at, "pid", INT32_MIN, INT32_MAX, &pid))
        p->pid = (int32_t)pid;
    tele_jr_str(t, o, at, "name", p->name, sizeof(p->name));
    p->vram_valid = tele_jr_u64(t, o, at, "vram_bytes", &p->vram_bytes);
    p->gtt_valid = tele_jr_u64(t, o, at, "gtt_bytes", &p->gtt_bytes);
    p->busy_valid = tele_jr_num(t, o, at, "busy_pct", &p->busy_pct);
    p->self = tele_jr_bool(t, o, at, "self");
}

static void tele_jr_procs(struct tele_jr *t, const struct tele_jr_gpu *j, struct tele_gpu *g) {
    json_object *a = tele_jr_typed(t, j->o, j->at, "processes", json_type_array, "not an array");
    int64_t more = 0;
    if (tele_jr_int(t, j->o, j->at, "processes_unlisted", 0, UINT32_MAX, &more))
        g->procs_more = (uint32_t)more;
    if (!a)
        return;
    size_t n = json_object_array_length(a);
    for (size_t i = 0; t->rc == 0 && i < n && g->n_procs < TELE_MAX_PROCS; i++) {
        char at[96];
        snprintf(at, sizeof(at), "%s.processes[%zu]", j->at, i);
        tele_jr_proc(t, json_object_array_get_idx(a, i), at, &g->procs[g->n_procs++]);
    }
    if (n > TELE_MAX_PROCS) { /* listed there, not here: counted as unlisted */
        uint64_t total = (uint64_t)g->procs_more + (n - TELE_MAX_PROCS);
        g->procs_more = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
    }
    g->procs_src = tele_jr_src(t, j, "processes");
}

/* {"<provider>":{"used_bytes":N,"total_bytes":N|null},...}: names not listed are ignored. */
static void tele_jr_vram_by(struct tele_jr *t, const struct tele_jr_gpu *j, struct tele_gpu *g) {
    json_object *o =
        tele_jr_typed(t, j->o, j->at, "vram_by_source", json_type_object, "not an object");
    for (unsigned k = 0; o && t->rc == 0 && k < j->s->n_prov; k++) {
        char at[96];
        json_object *e = tele_jr_get(t, o, j->s->prov[k].name);
        snprintf(at, sizeof(at), "%s.vram_by_source.%s", j->at, j->s->prov[k].name);
        if (!e)
            continue;
        if (!json_object_is_type(e, json_type_object)) {
            tele_jr_fail(t, at, "", "not an object");
            return;
        }
        if (tele_jr_num(t, e, at, "used_bytes", &g->vram_used_by[k]))
            g->vram_by_valid |= (uint8_t)(1u << k);
        if (tele_jr_num(t, e, at, "total_bytes", &g->vram_total_by[k]))
            g->vram_total_by_valid |= (uint8_t)(1u << k);
    }
}

static void tele_jr_gpu(struct tele_jr *t, const struct tele_snap *s, const json_object *o,
                        unsigned i, struct tele_gpu *g) {
    struct tele_jr_gpu j = {.s = s, .o = o};
    snprintf(j.at, sizeof(j.at), "gpus[%u]", i);
    if (!json_object_is_type(o, json_type_object)) {
        tele_jr_fail(t, j.at, "", "not an object");
        return;
    }
    char pci[sizeof(g->pci)] = "";
    int64_t index = i;
    tele_jr_str(t, o, j.at, "pci", pci, sizeof(pci));
    tele_gpu_init(g, pci);
    tele_jr_int(t, o, j.at, "index", 0, INT32_MAX, &index);
    g->index = (int)index;
    j.sources = tele_jr_typed(t, o, j.at, "sources", json_type_object, "not an object");
    tele_jr_identity(t, &j, g);
    tele_jr_fields(t, &j, g);
    tele_jr_buddy(t, &j, g);
    tele_jr_rings(t, &j, g);
    tele_jr_procs(t, &j, g);
    tele_jr_vram_by(t, &j, g);
}

static void tele_jr_gpus(struct tele_jr *t, const json_object *root, struct tele_snap *s) {
    json_object *a = tele_jr_typed(t, root, "", "gpus", json_type_array, "not an array");
    size_t n = a ? json_object_array_length(a) : 0;
    for (size_t i = 0; t->rc == 0 && i < n && s->n_gpus < TELE_MAX_GPUS; i++) {
        s->n_gpus++;
        tele_jr_gpu(t, s, json_object_array_get_idx(a, i), (unsigned)i, &s->gpus[i]);
    }
}

int tele_json_read_object(const json_object *o, struct tele_snap *s, char *why, size_t whylen) {
    memset(s, 0, sizeof(*s));
    if (!o || !json_object_is_type(o, json_type_object))
        return errbuf_set(why, whylen, -EINVAL, "telemetry is not a JSON object");
    struct tele_jr t = {why, whylen, 0};
    tele_jr_providers(&t, o, s);
    tele_jr_gpus(&t, o, s);
    if (t.rc != 0)
        memset(s, 0, sizeof(*s)); /* nothing half-read */
    return t.rc;
}

int tele_json_read(const char *text, size_t len, struct tele_snap *s, char *why, size_t whylen) {
    memset(s, 0, sizeof(*s));
    json_object *o = NULL;
    int rc = json_text_parse(text, len, &o, why, whylen);
    if (rc == 0)
        rc = tele_json_read_object(o, s, why, whylen);
    json_object_put(o);
    return rc;
}
