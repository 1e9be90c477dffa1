/* libFuzzer target for the DRM fdinfo parser and the per-process aggregation: arbitrary bytes as
 * one fdinfo text and, split at form feeds, as the clients of two samples, with invariants. */
#include "backend/telemetry/tele_fdinfo_internal.h"
#include "backend/telemetry/tele_prov.h"
#include "tests/fuzz/fuzz_target.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_FDINFO_CLIENTS 48            /* clients of one sample, at most */
#define FUZZ_FDINFO_SELF    102           /* the pid marked as this process */
#define FUZZ_FDINFO_T0      1000000000ull /* the first sample's time, ns */

/* What one run keeps: the parsed clients (a copy survives the aggregation's sorting). */
struct fuzz_fdinfo_run {
    struct tele_fdinfo_client clients[FUZZ_FDINFO_CLIENTS];
    struct tele_fdinfo_client copy[FUZZ_FDINFO_CLIENTS];
    size_t n;
    struct tele_gpu out[TELE_MAX_GPUS];
};

static void fuzz_fdinfo_check_str(const char *s, size_t cap) {
    FUZZ_CHECK(memchr(s, '\0', cap) != NULL);
}

/* "" or an address in tele_pci_norm's canonical form. */
static void fuzz_fdinfo_check_pci(const char *pci) {
    char again[16];
    fuzz_fdinfo_check_str(pci, 16);
    if (!pci[0])
        return;
    FUZZ_CHECK(strlen(pci) == 12);
    FUZZ_CHECK(tele_pci_norm(pci, again) && strcmp(again, pci) == 0);
}

/* A region's value: valid exactly when a key of some rank gave it, 0 otherwise. */
static void fuzz_fdinfo_check_region(uint64_t bytes, bool valid, uint8_t rank) {
    FUZZ_CHECK(rank <= 3);
    FUZZ_CHECK(valid == (rank > 0));
    FUZZ_CHECK(valid || bytes == 0);
}

static void fuzz_fdinfo_check_engines(const struct tele_fdinfo_client *c) {
    FUZZ_CHECK(c->n_engines >= 0 && c->n_engines <= TELE_FDINFO_ENGINES);
    for (int i = 0; i < c->n_engines; i++) {
        const struct tele_fdinfo_engine *e = &c->engines[i];
        fuzz_fdinfo_check_str(e->name, sizeof(e->name));
        FUZZ_CHECK(e->capacity >= 1);
        for (int j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(c->engines[j].name, e->name) != 0);
    }
}

/* tele_fdinfo_parse on a NUL-terminated text: its return, and values only for keys present. */
static int fuzz_fdinfo_parse(const char *text, struct tele_fdinfo_client *c) {
    int rc = tele_fdinfo_parse(text, c);
    FUZZ_CHECK(rc == 0 || rc == -ENODEV || rc == -EINVAL);
    fuzz_fdinfo_check_pci(c->pdev);
    FUZZ_CHECK(rc != 0 || c->pdev[0]);
    FUZZ_CHECK(rc != -EINVAL || !c->pdev[0]);
    FUZZ_CHECK(rc == -ENODEV || strstr(text, "drm-driver") != NULL);
    fuzz_fdinfo_check_region(c->vram_bytes, c->vram_valid, c->vram_rank);
    fuzz_fdinfo_check_region(c->gtt_bytes, c->gtt_valid, c->gtt_rank);
    FUZZ_CHECK(!c->vram_valid || strstr(text, "vram") != NULL);
    FUZZ_CHECK(!c->gtt_valid || strstr(text, "gtt") != NULL);
    FUZZ_CHECK(!c->has_client_id || strstr(text, "drm-client-id") != NULL);
    FUZZ_CHECK(!c->evicted_valid || strstr(text, "amd-evicted-vram") != NULL);
    FUZZ_CHECK(c->n_engines == 0 || strstr(text, "drm-engine-") != NULL);
    fuzz_fdinfo_check_engines(c);
    return rc;
}

/* Distinct pids among the clients of device pci (a dup()ed client does not add one). */
static size_t fuzz_fdinfo_pids(const struct fuzz_fdinfo_run *r, size_t n, const char *pci) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(r->copy[i].pdev, pci) != 0)
            continue;
        size_t j = 0;
        while (j < i && (strcmp(r->copy[j].pdev, pci) != 0 || r->copy[j].pid != r->copy[i].pid))
            j++;
        count += j == i;
    }
    return count;
}

static void fuzz_fdinfo_check_proc(const struct tele_proc *p, bool first) {
    fuzz_fdinfo_check_str(p->name, sizeof(p->name));
    FUZZ_CHECK(p->self == (p->pid == FUZZ_FDINFO_SELF));
    FUZZ_CHECK(p->vram_valid || p->vram_bytes == 0);
    FUZZ_CHECK(p->gtt_valid || p->gtt_bytes == 0);
    FUZZ_CHECK(!(first && p->busy_valid)); /* no history on a first sample */
    if (p->busy_valid)
        FUZZ_CHECK(!isnan(p->busy_pct) && p->busy_pct >= 0 && p->busy_pct <= 100);
}

/* One device record of an aggregation over the n clients in r->copy. */
static void fuzz_fdinfo_check_gpu(const struct fuzz_fdinfo_run *r, size_t n,
                                  const struct tele_gpu *g, bool first) {
    fuzz_fdinfo_check_pci(g->pci);
    FUZZ_CHECK(g->pci[0] && g->vendor == TELE_VENDOR_AMD && g->procs_src == 1);
    FUZZ_CHECK(g->n_procs >= 0 && g->n_procs <= TELE_MAX_PROCS);
    FUZZ_CHECK((size_t)g->n_procs + g->procs_more == fuzz_fdinfo_pids(r, n, g->pci));
    double vram = 0;
    bool any_vram = false;
    for (int i = 0; i < g->n_procs; i++) {
        const struct tele_proc *p = &g->procs[i];
        fuzz_fdinfo_check_proc(p, first);
        FUZZ_CHECK(i == 0 || g->procs[i - 1].vram_bytes >= p->vram_bytes);
        vram += (double)p->vram_bytes;
        any_vram |= p->vram_valid;
    }
    double proc_vram;
    if (tele_get(g, TELE_F_PROC_VRAM, &proc_vram)) {
        FUZZ_CHECK(any_vram || g->n_procs == 0 || g->procs_more > 0);
        FUZZ_CHECK(g->procs_more > 0 || proc_vram == vram);
    } else {
        FUZZ_CHECK(!any_vram && g->n_procs > 0);
    }
}

/* Aggregate the first n clients of r (copied first, since the aggregation sorts them). */
static void fuzz_fdinfo_aggregate(struct fuzz_fdinfo_run *r, struct tele_fdinfo_hist *h, size_t n,
                                  uint64_t now_ns, size_t cap, bool first) {
    size_t n_out = 99;
    memcpy(r->copy, r->clients, n * sizeof(r->clients[0]));
    int rc = tele_fdinfo_aggregate(h, r->clients, n, now_ns, FUZZ_FDINFO_SELF, r->out, cap, &n_out);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(n_out <= cap && n_out <= h->n_known && h->n_known <= TELE_MAX_GPUS);
    for (size_t i = 0; i < n_out; i++) {
        fuzz_fdinfo_check_gpu(r, n, &r->out[i], first);
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(r->out[j].pci, r->out[i].pci) != 0);
    }
}

/* The second sample: the same clients with their engine counters moved by the input's bytes
 * (forwards, or backwards for an odd byte), the last one gone when the input's size is odd. */
static size_t fuzz_fdinfo_advance(struct fuzz_fdinfo_run *r, const uint8_t *data, size_t size) {
    memcpy(r->clients, r->copy, r->n * sizeof(r->clients[0]));
    for (size_t k = 0; k < r->n; k++)
        for (int j = 0; j < r->clients[k].n_engines; j++) {
            uint8_t b = data[(k * 7 + (size_t)j) % size];
            uint64_t *ns = &r->clients[k].engines[j].ns;
            *ns = b & 1 ? *ns / 2 : *ns + (uint64_t)b * 3000000u;
        }
    return r->n - (r->n > 0 && size % 2 == 1);
}

/* Split text at form feeds (in place) and parse each piece as one process's client. */
static void fuzz_fdinfo_clients(struct fuzz_fdinfo_run *r, char *text) {
    r->n = 0;
    for (char *p = text; r->n < FUZZ_FDINFO_CLIENTS;) {
        size_t len = strcspn(p, "\f");
        bool last = p[len] == '\0';
        p[len] = '\0';
        struct tele_fdinfo_client *c = &r->clients[r->n];
        if (fuzz_fdinfo_parse(p, c) == 0) {
            c->pid = 100 + (int32_t)(len % 5);
            c->fd = (int32_t)r->n + 3;
            memcpy(c->comm, p, len < sizeof(c->comm) - 1 ? len : sizeof(c->comm) - 1);
            r->n++;
        }
        if (last)
            break;
        p += len + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static struct fuzz_fdinfo_run r; /* 100 KiB: kept off the stack */
    char *text = fuzz_cstring(data, size);

    /* the whole input as one fdinfo text */
    struct tele_fdinfo_client one;
    fuzz_fdinfo_parse(text, &one);

    /* its pieces as the clients of two samples, into as many records as the first byte says */
    fuzz_fdinfo_clients(&r, text);
    size_t cap = size ? 1 + data[0] % TELE_MAX_GPUS : TELE_MAX_GPUS;
    struct tele_fdinfo_hist h;
    memset(&h, 0, sizeof(h));
    fuzz_fdinfo_aggregate(&r, &h, r.n, FUZZ_FDINFO_T0, cap, true);
    if (size) {
        size_t n2 = fuzz_fdinfo_advance(&r, data, size);
        uint64_t dt = (uint64_t)data[size - 1] * 10000000u; /* 0: no time passed */
        fuzz_fdinfo_aggregate(&r, &h, n2, FUZZ_FDINFO_T0 + dt, TELE_MAX_GPUS, false);
    }
    tele_fdinfo_hist_fini(&h);
    free(text);
    return 0;
}

const char fuzz_target_name[] = "fuzz_fdinfo";

/* Pieces of real fdinfo text (amdgpu_show_fdinfo(), drm_show_fdinfo(), fs/proc/fd.c). */
const char *const fuzz_fragments[] = {
    "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1089\n",
    "drm-driver:\tamdgpu\n",
    "drm-driver:\ti915\n",
    "drm-pdev:\t0000:03:00.0\n",
    "drm-pdev:\t0000:C5:00.0\n",
    "drm-client-id:\t57\n",
    "pasid:\t32773\n",
    "drm-memory-vram:\t8388608 KiB\n",
    "drm-memory-gtt: \t262144 KiB\n",
    "drm-memory-cpu: \t0 KiB\n",
    "drm-total-vram:\t8704 MiB\n",
    "drm-resident-vram:\t8192 MiB\n",
    "drm-resident-gtt:\t256 MiB\n",
    "drm-shared-vram:\t0\n",
    "drm-purgeable-gtt:\t0\n",
    "drm-total-cpu:\t0\n",
    "amd-memory-visible-vram:\t98304 KiB\n",
    "amd-evicted-vram:\t524288 KiB\n",
    "amd-requested-vram:\t8912896 KiB\n",
    "amd-requested-gtt:\t262144 KiB\n",
    "drm-engine-gfx:\t1873521934821 ns\n",
    "drm-engine-compute:\t84113452203 ns\n",
    "drm-engine-dma:\t6120448817 ns\n",
    "drm-engine-enc_1:\t12 ns\n",
    "drm-engine-capacity-compute:\t4\n",
    "drm-engine-capacity-video:\t0\n",
    "eventfd-count:                0\neventfd-id: 12\n",
    "\f",
    " KiB",
    " MiB",
    "18446744073709551615",
    "drm-",
    ":\t",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
