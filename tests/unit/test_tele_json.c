/* Telemetry JSON read back: tele_json_write's text through tele_json_read gives the snapshot
 * again (values, sources, validity); absent fields stay invalid, bad input is refused with a
 * reason, and arrays over the limits are cut without overrunning anything. */
#include "backend/telemetry/tele.h"
#include "backend/telemetry/tele_json.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(tele_json, .timeout = 30);

/* The text tele_json_write gives for s (malloc'd). */
static char *tele_json_test_text(const struct tele_snap *s, size_t *len) {
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    cr_assert(f);
    cr_assert_eq(tele_json_write(f, s, false), 0);
    cr_assert_eq(fclose(f), 0);
    return text;
}

static void tele_json_test_prov(struct tele_snap *s, const char *name, enum tele_status st,
                                const char *reason, uint32_t caps) {
    struct tele_prov_info *p = &s->prov[s->n_prov++];
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->status = st;
    snprintf(p->reason, sizeof(p->reason), "%s", reason);
    p->caps = caps;
}

/* Two providers (sysfs ok, nvml unavailable) and two GPUs, one full, one nearly empty. */
static void tele_json_test_snap(struct tele_snap *s) {
    memset(s, 0, sizeof(*s));
    tele_json_test_prov(s, "sysfs", TELE_OK, "", TELE_CAP(MEMORY) | TELE_CAP(THERMAL));
    s->prov[0].n_gpus = 2;
    s->prov[0].samples = 1234;
    s->prov[0].last_sample_ns = 151000;
    s->prov[0].max_sample_ns = 2500000;
    tele_json_test_prov(s, "debugfs", TELE_ERROR, "permission denied", TELE_CAP(BUDDY));
    s->n_gpus = 2;
    struct tele_gpu *g = &s->gpus[0];
    tele_gpu_init(g, "0000:03:00.0");
    g->index = 0;
    g->vendor = TELE_VENDOR_AMD;
    g->power = TELE_POWER_ACTIVE;
    g->power_src = 1;
    snprintf(g->name, sizeof(g->name), "Radeon RX 7900 XTX");
    g->name_src = 1;
    snprintf(g->arch, sizeof(g->arch), "gfx1100");
    g->arch_src = 2;
    snprintf(g->driver, sizeof(g->driver), "amdgpu");
    g->card = 1;
    g->f[TELE_F_VRAM_TOTAL] = 25753026560.0, g->src[TELE_F_VRAM_TOTAL] = 1;
    g->f[TELE_F_VRAM_USED] = 1073741824.0, g->src[TELE_F_VRAM_USED] = 2;
    g->f[TELE_F_TEMP] = 47.5, g->src[TELE_F_TEMP] = 1;
    g->f[TELE_F_BUSY] = 0, g->src[TELE_F_BUSY] = 1; /* 0 and valid */
    g->vram_used_by[0] = 1073741824.0, g->vram_total_by[0] = 25753026560.0;
    g->vram_used_by[1] = 1073745920.0;
    g->vram_by_valid = 3, g->vram_total_by_valid = 1;
    g->buddy = (struct tele_buddy){.valid = true,
                                   .chunk_bytes = 4096,
                                   .total_bytes = 1ull << 34,
                                   .free_bytes = 1ull << 33,
                                   .largest_free_bytes = 1ull << 30,
                                   .free_blocks = 77,
                                   .n_orders = 3,
                                   .order_free_bytes = {4096, 16384, 0},
                                   .order_blocks = {1, 2, 0}};
    g->buddy_src = 2;
    g->n_rings = 2;
    g->rings[0] = (struct tele_ring){"gfx_0.0.0", 100, 105, true};
    g->rings[1] = (struct tele_ring){"sdma0", 7, 7, false};
    g->rings_src = 2;
    g->n_procs = 2;
    g->procs[0] = (struct tele_proc){.pid = 4242,
                                     .name = "ringside",
                                     .vram_bytes = 1 << 20,
                                     .vram_valid = true,
                                     .busy_pct = 12.5,
                                     .busy_valid = true,
                                     .self = true};
    g->procs[1] =
        (struct tele_proc){.pid = 7, .name = "Xorg", .gtt_bytes = 4096, .gtt_valid = true};
    g->procs_src = 1;
    g->procs_more = 3;
    tele_gpu_init(&s->gpus[1], "0000:c5:00.0");
    s->gpus[1].index = 1;
    s->gpus[1].vendor = TELE_VENDOR_NVIDIA;
}

static void tele_json_test_same_gpu(const struct tele_gpu *a, const struct tele_gpu *b) {
    cr_assert_str_eq(b->pci, a->pci);
    cr_assert_eq(b->index, a->index);
    cr_assert_eq(b->vendor, a->vendor);
    cr_assert_eq(b->power, a->power);
    cr_assert_eq(b->power_src, a->power_src);
    cr_assert_str_eq(b->name, a->name);
    cr_assert_eq(b->name_src, a->name_src);
    cr_assert_str_eq(b->arch, a->arch);
    cr_assert_eq(b->arch_src, a->arch_src);
    cr_assert_str_eq(b->driver, a->driver);
    cr_assert_eq(b->card, a->card);
    for (unsigned f = 0; f < TELE_F_COUNT; f++) {
        cr_assert_eq(b->src[f], a->src[f], "%s: src %u, want %u", tele_field_json(f), b->src[f],
                     a->src[f]);
        if (a->src[f])
            cr_assert_eq(b->f[f], a->f[f], "%s", tele_field_json(f));
    }
    cr_assert_eq(b->vram_by_valid, a->vram_by_valid);
    cr_assert_eq(b->vram_total_by_valid, a->vram_total_by_valid);
    for (unsigned k = 0; k < TELE_MAX_PROVIDERS; k++) {
        if (a->vram_by_valid & (1u << k))
            cr_assert_eq(b->vram_used_by[k], a->vram_used_by[k]);
        if (a->vram_total_by_valid & (1u << k))
            cr_assert_eq(b->vram_total_by[k], a->vram_total_by[k]);
    }
}

static void tele_json_test_same_lists(const struct tele_gpu *a, const struct tele_gpu *b) {
    cr_assert_eq(b->buddy_src, a->buddy_src);
    cr_assert_eq(b->buddy.valid, a->buddy.valid);
    if (a->buddy_src) {
        cr_assert_eq(b->buddy.chunk_bytes, a->buddy.chunk_bytes);
        cr_assert_eq(b->buddy.total_bytes, a->buddy.total_bytes);
        cr_assert_eq(b->buddy.free_bytes, a->buddy.free_bytes);
        cr_assert_eq(b->buddy.largest_free_bytes, a->buddy.largest_free_bytes);
        cr_assert_eq(b->buddy.free_blocks, a->buddy.free_blocks);
        cr_assert_eq(b->buddy.n_orders, a->buddy.n_orders);
        cr_assert_arr_eq(b->buddy.order_free_bytes, a->buddy.order_free_bytes,
                         sizeof(a->buddy.order_free_bytes));
        cr_assert_arr_eq(b->buddy.order_blocks, a->buddy.order_blocks,
                         sizeof(a->buddy.order_blocks));
    }
    cr_assert_eq(b->rings_src, a->rings_src);
    cr_assert_eq(b->n_rings, a->n_rings);
    for (int k = 0; k < a->n_rings; k++) {
        cr_assert_str_eq(b->rings[k].name, a->rings[k].name);
        cr_assert_eq(b->rings[k].signaled, a->rings[k].signaled);
        cr_assert_eq(b->rings[k].emitted, a->rings[k].emitted);
        cr_assert_eq(b->rings[k].stalled, a->rings[k].stalled);
    }
    cr_assert_eq(b->procs_src, a->procs_src);
    cr_assert_eq(b->n_procs, a->n_procs);
    cr_assert_eq(b->procs_more, a->procs_more);
    for (int k = 0; k < a->n_procs; k++) {
        const struct tele_proc *p = &a->procs[k], *q = &b->procs[k];
        cr_assert_eq(q->pid, p->pid);
        cr_assert_str_eq(q->name, p->name);
        cr_assert_eq(q->vram_valid, p->vram_valid);
        cr_assert_eq(q->vram_bytes, p->vram_bytes);
        cr_assert_eq(q->gtt_valid, p->gtt_valid);
        cr_assert_eq(q->gtt_bytes, p->gtt_bytes);
        cr_assert_eq(q->busy_valid, p->busy_valid);
        cr_assert_eq(q->busy_pct, p->busy_pct);
        cr_assert_eq(q->self, p->self);
    }
}

Test(tele_json, round_trip) {
    static struct tele_snap in, out;
    tele_json_test_snap(&in);
    size_t len = 0;
    char *text = tele_json_test_text(&in, &len);
    char why[256] = "";
    cr_assert_eq(tele_json_read(text, len, &out, why, sizeof(why)), 0, "%s", why);
    free(text);
    cr_assert_eq(out.n_prov, in.n_prov);
    for (unsigned k = 0; k < in.n_prov; k++) {
        const struct tele_prov_info *p = &in.prov[k], *q = &out.prov[k];
        cr_assert_str_eq(q->name, p->name);
        cr_assert_eq(q->status, p->status);
        cr_assert_str_eq(q->reason, p->reason);
        cr_assert_eq(q->caps, p->caps);
        cr_assert_eq(q->n_gpus, p->n_gpus);
        cr_assert_eq(q->samples, p->samples);
        cr_assert_eq(q->last_sample_ns, p->last_sample_ns);
        cr_assert_eq(q->max_sample_ns, p->max_sample_ns);
    }
    cr_assert_eq(out.n_gpus, in.n_gpus);
    for (unsigned i = 0; i < in.n_gpus; i++) {
        tele_json_test_same_gpu(&in.gpus[i], &out.gpus[i]);
        tele_json_test_same_lists(&in.gpus[i], &out.gpus[i]);
    }
    cr_assert_eq(out.t_ns, 0); /* not in the text */
}

Test(tele_json, pretty_text_reads_too) {
    static struct tele_snap in, out;
    tele_json_test_snap(&in);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(tele_json_write(f, &in, true), 0);
    fclose(f);
    char why[256] = "";
    cr_assert_eq(tele_json_read(text, len, &out, why, sizeof(why)), 0, "%s", why);
    free(text);
    tele_json_test_same_gpu(&in.gpus[0], &out.gpus[0]);
}

Test(tele_json, object_variant) {
    static struct tele_snap in, out;
    tele_json_test_snap(&in);
    size_t len = 0;
    char *text = tele_json_test_text(&in, &len);
    json_object *o = json_tokener_parse(text);
    free(text);
    cr_assert(o);
    char why[256] = "";
    cr_assert_eq(tele_json_read_object(o, &out, why, sizeof(why)), 0, "%s", why);
    json_object_put(o);
    cr_assert_eq(out.n_gpus, 2);
    cr_assert_eq(out.gpus[0].f[TELE_F_TEMP], 47.5);
}

Test(tele_json, absent_and_null_fields_stay_invalid) {
    static struct tele_snap s;
    const char *text = "{\"providers\":[{\"name\":\"sysfs\"}],\"gpus\":[{\"pci\":\"0000:03:00.0\","
                       "\"temp_c\":null,\"vendor\":null,\"buddy\":null,\"rings\":null}]}";
    char why[256] = "";
    cr_assert_eq(tele_json_read(text, strlen(text), &s, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(s.n_prov, 1);
    cr_assert_eq(s.prov[0].status, TELE_OK);
    cr_assert_eq(s.prov[0].caps, 0);
    cr_assert_eq(s.n_gpus, 1);
    const struct tele_gpu *g = &s.gpus[0];
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        cr_assert_eq(g->src[f], 0, "%s", tele_field_json(f));
    cr_assert_eq(g->card, -1);
    cr_assert_eq(g->vendor, TELE_VENDOR_UNKNOWN);
    cr_assert_eq(g->power, TELE_POWER_UNKNOWN);
    cr_assert_eq(g->name_src + g->arch_src + g->power_src, 0);
    cr_assert_eq(g->buddy_src + g->rings_src + g->procs_src, 0);
    cr_assert_not(g->buddy.valid);
    cr_assert_eq(g->vram_by_valid, 0);
    cr_assert_eq(g->index, 0); /* its position when absent */
}

Test(tele_json, a_value_without_a_known_source_stays_valid) {
    static struct tele_snap s;
    const char *text = "{\"providers\":[{\"name\":\"sysfs\"},{\"name\":\"nvml\"}],\"gpus\":[{"
                       "\"pci\":\"0000:03:00.0\",\"temp_c\":50,\"power_w\":80.5,\"fan_rpm\":900,"
                       "\"sources\":{\"temp_c\":\"nvml\",\"power_w\":\"gone\"}}]}";
    char why[256] = "";
    cr_assert_eq(tele_json_read(text, strlen(text), &s, why, sizeof(why)), 0, "%s", why);
    const struct tele_gpu *g = &s.gpus[0];
    cr_assert_eq(g->src[TELE_F_TEMP], 2);
    cr_assert_eq(g->src[TELE_F_POWER], 1);   /* an unknown provider */
    cr_assert_eq(g->src[TELE_F_FAN_RPM], 1); /* no source named */
    cr_assert_eq(g->f[TELE_F_POWER], 80.5);
}

Test(tele_json, unknown_members_are_ignored) {
    static struct tele_snap s;
    const char *text = "{\"version\":3,\"providers\":[{\"name\":\"x\",\"new\":[1]}],\"gpus\":[{"
                       "\"pci\":\"0000:03:00.0\",\"warp_drive\":{\"on\":true},\"temp_c\":40}]}";
    char why[256] = "";
    cr_assert_eq(tele_json_read(text, strlen(text), &s, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(s.gpus[0].f[TELE_F_TEMP], 40);
}

struct tele_json_test_bad { /* arrays: the parameters are copied into each test's process */
    char text[128];
    char why[64]; /* a piece of the reason */
};

ParameterizedTestParameters(tele_json, malformed) {
    static struct tele_json_test_bad p[] = {
        {"", "cut short"},
        {"{\"gpus\":[", "cut short"},
        {"{\"gpus\":]}", "invalid JSON"},
        {"[1,2]", "not a JSON object"},
        {"{} {}", "text after the object"},
        {"{\"gpus\":{}}", "gpus: not an array"},
        {"{\"gpus\":[7]}", "gpus[0]: not an object"},
        {"{\"gpus\":[{\"temp_c\":\"hot\"}]}", "gpus[0].temp_c: not a number"},
        {"{\"gpus\":[{\"card\":1.5}]}", "gpus[0].card: not an integer"},
        {"{\"gpus\":[{\"pci\":3}]}", "gpus[0].pci: not a string"},
        {"{\"gpus\":[{\"rings\":[{\"signaled\":-1}]}]}", "gpus[0].rings[0].signaled: negative"},
        {"{\"gpus\":[{\"processes\":[{\"self\":1}]}]}", "gpus[0].processes[0].self: not a boolean"},
        {"{\"gpus\":[{\"buddy\":{\"orders\":[{\"order\":\"x\"}]}}]}",
         "gpus[0].buddy.orders[0].order: not an integer"},
        {"{\"providers\":[{\"status\":\"great\"}]}", "providers[0].status: unknown value"},
        {"{\"providers\":[{\"capabilities\":[1]}]}", "providers[0].capabilities: not an array"},
        {"{\"providers\":[{\"last_sample_us\":-5}]}", "providers[0].last_sample_us: out of range"},
        {"{\"providers\":[{\"name\":\"a\"}],\"gpus\":[{\"vram_by_source\":{\"a\":3}}]}",
         "gpus[0].vram_by_source.a: not an object"},
    };
    return cr_make_param_array(struct tele_json_test_bad, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct tele_json_test_bad *p, tele_json, malformed) {
    static struct tele_snap s;
    char why[256] = "";
    memset(&s, 0x5a, sizeof(s));
    cr_assert_eq(tele_json_read(p->text, strlen(p->text), &s, why, sizeof(why)), -EINVAL,
                 "'%s' was taken", p->text);
    cr_assert(strstr(why, p->why), "'%s': why is '%s', want '%s'", p->text, why, p->why);
    cr_assert_eq(s.n_gpus, 0); /* nothing half-read */
    cr_assert_eq(s.n_prov, 0);
}

/* A JSON array of n copies of item, in a growing buffer. */
static void tele_json_test_array(FILE *f, const char *key, unsigned n, const char *item) {
    fprintf(f, "\"%s\":[", key);
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", item);
    fprintf(f, "]");
}

Test(tele_json, over_limit_arrays_are_cut) {
    static struct tele_snap s;
    char *text = NULL, name[64];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "{");
    tele_json_test_array(f, "providers", TELE_MAX_PROVIDERS + 3,
                         "{\"name\":\"a-very-long-provider-name-indeed\"}");
    fprintf(f, ",\"gpus\":[");
    for (unsigned i = 0; i < TELE_MAX_GPUS + 4; i++) {
        fprintf(f, "%s{\"pci\":\"0000:%02x:00.0\",\"processes_unlisted\":5,", i ? "," : "", i);
        tele_json_test_array(f, "rings", TELE_MAX_RINGS + 5, "{\"name\":\"r\",\"signaled\":1}");
        fprintf(f, ",");
        tele_json_test_array(f, "processes", TELE_MAX_PROCS + 7, "{\"pid\":1,\"name\":\"p\"}");
        fprintf(f,
                ",\"buddy\":{\"orders\":[{\"order\":39,\"blocks\":2},{\"order\":40,\"blocks\":9},"
                "{\"order\":100000,\"blocks\":9}]}}");
    }
    fprintf(f, "]}");
    fclose(f);
    char why[256] = "";
    cr_assert_eq(tele_json_read(text, len, &s, why, sizeof(why)), 0, "%s", why);
    free(text);
    cr_assert_eq(s.n_prov, TELE_MAX_PROVIDERS);
    snprintf(name, sizeof(name), "%.*s", (int)sizeof(s.prov[0].name) - 1,
             "a-very-long-provider-name-indeed");
    cr_assert_str_eq(s.prov[0].name, name); /* cut to fit */
    cr_assert_eq(s.n_gpus, TELE_MAX_GPUS);
    const struct tele_gpu *g = &s.gpus[TELE_MAX_GPUS - 1];
    cr_assert_str_eq(g->pci, "0000:0f:00.0");
    cr_assert_eq(g->n_rings, TELE_MAX_RINGS);
    cr_assert_eq(g->n_procs, TELE_MAX_PROCS);
    cr_assert_eq(g->procs_more, 5 + 7); /* listed there, counted here */
    cr_assert_eq(g->buddy.n_orders, TELE_BUDDY_ORDERS);
    cr_assert_eq(g->buddy.order_blocks[39], 2);
}
