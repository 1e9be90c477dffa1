/* The VPOC path of whole data sets: sessions packed once, laid out on the device chunk by
 * chunk, profiled by one launch a chunk across every session, with the packed kernel or the
 * dense one. */
#include "backend/compute/compute.h"
#include "backend/compute/compute_vpoc_internal.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct compute_vpoc_set {
    struct vpoc_params params;
    enum compute_vpoc_kernel kernel;
    size_t start, stride, n; /* the sessions: start + i * stride, i < n */
    size_t chunk;            /* as asked: 0 = whole sessions */
    size_t n_slabs;
    void **slabs;       /* one pool buffer a chunk: the offsets (int64_t[n + 1]), then the words */
    size_t *slab_words; /* words in each chunk */
    struct compute_pool_peek peak;  /* dense: the pool at the last pass's high-water mark, */
    uint64_t scratch_bytes;         /* ... the volume matrix live then (its block) */
    uint64_t scratch_asked;         /* ... and the bytes it asked for */
    struct vpoc_pack_session *sess; /* host copy of the session table */
    void *d_sess, *d_acc;
    void *d_turns; /* packed passes of several launches: uint32_t[n] (vpoc_pass's turns), zero
                      before turn 0; else NULL */
    uint32_t turn; /* the next launch's number over d_turns */
    int max_levels;
    struct vpoc_result *out; /* host: the last pass's results, set order */
    size_t *unpacked;        /* set indexes of the sessions profiled one by one */
    size_t n_unpacked;
    const struct vpoc_bar *bars; /* borrowed: packed at creation, read again by collect */
    const struct data_sessions *ss;
};

/* Pack every session of the set into words (set order, session after session); fills the
 * session table, the acc offsets and the unpacked list. *longest: the most bars of a packed
 * session; *levels: the total levels of the packed ones. */
static void vpoc_set_pack(struct compute_vpoc_set *s, uint64_t *words, size_t *word_at,
                          size_t *longest, size_t *levels) {
    size_t w = 0, acc = 0;
    *longest = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct data_session *ds = &s->ss->s[s->start + i * s->stride];
        struct vpoc_pack_session *ps = &s->sess[i];
        word_at[i] = w;
        if (ds->n == 0 ||
            vpoc_pack_session(s->bars + ds->first, ds->n, &s->params, words + w, ps)) {
            ps->levels = 0;
            s->unpacked[s->n_unpacked++] = i;
            continue;
        }
        ps->acc_off = (int64_t)acc;
        acc += (size_t)ps->levels;
        w += ds->n;
        if (ds->n > *longest)
            *longest = ds->n;
        if (ps->levels > s->max_levels)
            s->max_levels = ps->levels;
    }
    *levels = acc;
}

/* Bars of set session i in chunk j (none for an unpacked session). */
static size_t vpoc_set_take(const struct compute_vpoc_set *s, size_t i, size_t j, size_t chunk) {
    size_t nb = s->sess[i].levels ? (size_t)s->sess[i].bars : 0, a = j * chunk;
    return nb > a ? (nb - a < chunk ? nb - a : chunk) : 0;
}

/* Build chunk j's host image (offsets, then words) in img; returns its word count. */
static size_t vpoc_set_slab_image(const struct compute_vpoc_set *s, size_t j, size_t chunk,
                                  const uint64_t *words, const size_t *word_at, int64_t *img) {
    int64_t *first = img;
    uint64_t *dst = (uint64_t *)(img + s->n + 1);
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t take = vpoc_set_take(s, i, j, chunk);
        first[i] = (int64_t)m;
        memcpy(dst + m, words + word_at[i] + j * chunk, take * sizeof(uint64_t));
        m += take;
    }
    first[s->n] = (int64_t)m;
    return m;
}

/* Allocate and upload every chunk (host images kept in imgs until the caller's sync). */
static int vpoc_set_upload(struct compute *c, struct compute_vpoc_set *s, size_t chunk,
                           const uint64_t *words, const size_t *word_at, int64_t **imgs, char *err,
                           size_t errlen) {
    size_t head = (s->n + 1) * sizeof(int64_t);
    for (size_t j = 0; j < s->n_slabs; j++) {
        size_t cap = 0;
        for (size_t i = 0; i < s->n; i++)
            cap += vpoc_set_take(s, i, j, chunk);
        if (!(imgs[j] = malloc(head + cap * sizeof(uint64_t))))
            return errbuf_set(err, errlen, -ENOMEM, "out of memory");
        size_t m = vpoc_set_slab_image(s, j, chunk, words, word_at, imgs[j]);
        size_t bytes = head + m * sizeof(uint64_t);
        s->slab_words[j] = m;
        int rc = compute_alloc(c, bytes, &s->slabs[j], err, errlen);
        if (rc != 0)
            return rc;
        if ((rc = c->ops->copy_h2d(c, s->slabs[j], imgs[j], bytes)) != 0)
            return errbuf_set(err, errlen, rc, "VPOC upload of chunk %zu failed on %s: %s", j,
                              c->ops->name, c->ops->strerror(rc));
    }
    return 0;
}

static int vpoc_set_fill(struct compute *c, struct compute_vpoc_set *s, char *err, size_t errlen) {
    size_t total = 0;
    for (size_t i = 0; i < s->n; i++)
        total += s->ss->s[s->start + i * s->stride].n;
    uint64_t *words = malloc((total ? total : 1) * sizeof(*words));
    size_t *word_at = malloc((s->n ? s->n : 1) * sizeof(*word_at));
    int rc = words && word_at ? 0 : errbuf_set(err, errlen, -ENOMEM, "out of memory");
    size_t longest = 0, levels = 0;
    if (rc == 0)
        vpoc_set_pack(s, words, word_at, &longest, &levels);
    size_t chunk = s->chunk && s->chunk < longest ? s->chunk : longest;
    s->n_slabs = longest ? (longest + chunk - 1) / chunk : 0;
    int64_t **imgs = calloc(s->n_slabs ? s->n_slabs : 1, sizeof(*imgs));
    s->slabs = calloc(s->n_slabs ? s->n_slabs : 1, sizeof(*s->slabs));
    s->slab_words = calloc(s->n_slabs ? s->n_slabs : 1, sizeof(*s->slab_words));
    if (rc == 0 && (!imgs || !s->slabs || !s->slab_words))
        rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (rc == 0 && s->n_slabs > 0) {
        size_t sb = s->n * sizeof(*s->sess);
        rc = compute_alloc(c, sb, &s->d_sess, err, errlen);
        rc = rc ? rc : compute_alloc(c, levels * sizeof(int64_t), &s->d_acc, err, errlen);
        bool turns = s->n_slabs > 1 && s->kernel == COMPUTE_VPOC_PACKED;
        if (rc == 0 && turns)
            rc = compute_alloc(c, s->n * sizeof(uint32_t), &s->d_turns, err, errlen);
        if (rc == 0 && turns && (rc = c->ops->memset0(c, s->d_turns, s->n * sizeof(uint32_t))) != 0)
            errbuf_set(err, errlen, rc, "VPOC setup failed on %s: %s", c->ops->name,
                       c->ops->strerror(rc));
        if (rc == 0 && (rc = c->ops->copy_h2d(c, s->d_sess, s->sess, sb)) != 0)
            errbuf_set(err, errlen, rc, "VPOC upload failed on %s: %s", c->ops->name,
                       c->ops->strerror(rc));
        rc = rc ? rc : vpoc_set_upload(c, s, chunk, words, word_at, imgs, err, errlen);
    }
    int src = compute_sync(c, SYNC_OP_STREAM); /* the host images may go now */
    if (rc == 0 && src != 0)
        rc = errbuf_set(err, errlen, src, "VPOC upload failed on %s: %s", c->ops->name,
                        c->ops->strerror(src));
    for (size_t j = 0; imgs && j < s->n_slabs; j++)
        free(imgs[j]);
    free(imgs);
    free(words);
    free(word_at);
    return rc;
}

int compute_vpoc_set_create(struct compute *c, const struct vpoc_bar *bars,
                            const struct data_sessions *ss, size_t start, size_t stride,
                            const struct vpoc_params *p, size_t chunk,
                            enum compute_vpoc_kernel kernel, struct compute_vpoc_set **out,
                            char *err, size_t errlen) {
    *out = NULL;
    if (stride == 0)
        return errbuf_set(err, errlen, -EINVAL, "VPOC: session stride 0");
    if ((unsigned)kernel >= COMPUTE_VPOC_KERNEL_COUNT)
        return errbuf_set(err, errlen, -EINVAL, "VPOC: kernel %d does not exist", (int)kernel);
    struct compute_vpoc_set *s = calloc(1, sizeof(*s));
    if (!s)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    s->params = *p;
    s->kernel = kernel;
    s->start = start;
    s->stride = stride;
    s->n = start < ss->n ? (ss->n - start + stride - 1) / stride : 0;
    s->chunk = chunk;
    s->bars = bars;
    s->ss = ss;
    size_t n1 = s->n ? s->n : 1;
    s->sess = calloc(n1, sizeof(*s->sess));
    s->out = calloc(n1, sizeof(*s->out));
    s->unpacked = calloc(n1, sizeof(*s->unpacked));
    int rc = s->sess && s->out && s->unpacked ? vpoc_set_fill(c, s, err, errlen)
                                              : errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (rc != 0) {
        compute_vpoc_set_destroy(c, s);
        return rc;
    }
    *out = s;
    return 0;
}

void compute_vpoc_set_destroy(struct compute *c, struct compute_vpoc_set *s) {
    if (!s)
        return;
    for (size_t j = 0; s->slabs && j < s->n_slabs; j++)
        compute_free(c, s->slabs[j]);
    compute_free(c, s->d_sess);
    compute_free(c, s->d_acc);
    compute_free(c, s->d_turns);
    free(s->slabs);
    free(s->slab_words);
    free(s->sess);
    free(s->out);
    free(s->unpacked);
    free(s);
}

size_t compute_vpoc_set_launches(const struct compute_vpoc_set *s) {
    return s->n_slabs;
}

size_t compute_vpoc_set_chunk(const struct compute_vpoc_set *s) {
    return s->chunk;
}

size_t compute_vpoc_set_sessions(const struct compute_vpoc_set *s) {
    return s->n;
}

void compute_vpoc_set_scratch(const struct compute_vpoc_set *s, uint64_t *bytes, uint32_t *blocks,
                              uint64_t *asked_bytes) {
    *bytes = s->scratch_bytes;
    *blocks = s->scratch_bytes ? 1 : 0;
    *asked_bytes = s->scratch_bytes ? s->scratch_asked : 0;
}

/* A dense launch's volume matrix, a->n_words rows of a->max_levels int64, from the pool into
 * a->dense; the pool at the pass's high-water mark goes into s->peak. 0, or -ENOMEM with err
 * set (the pool's numbers, or a matrix over COMPUTE_VPOC_DENSE_MAX_BYTES). */
static int vpoc_set_dense_take(struct compute *c, struct compute_vpoc_set *s,
                               struct compute_vpoc_launch *a, size_t j, char *err, size_t errlen) {
    size_t row = (size_t)a->max_levels * sizeof(int64_t);
    if (a->n_words > COMPUTE_VPOC_DENSE_MAX_BYTES / row)
        return errbuf_set(err, errlen, -ENOMEM,
                          "VPOC dense kernel: chunk %zu's volume matrix, %zu bars x %d levels "
                          "(%.0f MiB), is over %zu MiB: use a smaller --chunk",
                          j, a->n_words, a->max_levels,
                          (double)a->n_words * (double)row / 1048576.0,
                          COMPUTE_VPOC_DENSE_MAX_BYTES >> 20);
    struct mem_stats before, at;
    mem_pool_stats(c->pool, &before);
    int rc = compute_alloc(c, a->n_words * row, &a->dense, err, errlen);
    if (rc != 0)
        return rc;
    mem_pool_stats(c->pool, &at);
    if (at.allocated_bytes > s->peak.stats.allocated_bytes) {
        s->peak.stats = at;
        mem_pool_layout(c->pool, &s->peak.layout);
        s->scratch_bytes = at.allocated_bytes - before.allocated_bytes;
        s->scratch_asked = (uint64_t)a->n_words * row;
    }
    return 0;
}

int compute_vpoc_set_enqueue(struct compute *c, struct compute_vpoc_set *s,
                             struct compute_event *ev, char *err, size_t errlen) {
    const struct compute_ops *ops = c->ops;
    bool dense = s->kernel == COMPUTE_VPOC_DENSE;
    int rc = ev ? ops->event_record(c, &ev[0]) : 0;
    memset(&s->peak.stats, 0, sizeof(s->peak.stats));
    s->scratch_bytes = 0;
    for (size_t j = 0; rc == 0 && j < s->n_slabs; j++) {
        struct compute_vpoc_launch a = {
            .words = (const int64_t *)s->slabs[j] + s->n + 1,
            .first = s->slabs[j],
            .sessions = s->d_sess,
            .n_sessions = s->n,
            .max_levels = s->max_levels,
            .acc = s->d_acc,
            .turns = s->d_turns,
            .turn = s->turn,
            .first_chunk = j == 0,
            .last_chunk = j + 1 == s->n_slabs,
            .params = s->params,
            .out = s->out,
            .n_words = s->slab_words[j],
        };
        if (dense && (rc = vpoc_set_dense_take(c, s, &a, j, err, errlen)) != 0)
            return rc; /* err says why: the pool's numbers, or the matrix's size */
        rc = dense ? ops->vpoc_dense_pass(c, &a) : ops->vpoc_pass(c, &a);
        /* Back to the pool's cache once queued, as PyTorch frees a tensor whose kernels are
         * queued: the stream runs in order, so the block's next user comes after this launch. */
        if (dense)
            compute_free(c, a.dense);
        /* A number for every launch queued, none for one that failed: a pass cut short leaves
         * the turns where the next launch's number finds them. */
        s->turn += rc == 0;
        if (rc == 0 && ev)
            rc = ops->event_record(c, &ev[j + 1]);
        if (rc != 0)
            return errbuf_set(err, errlen, rc, "VPOC launch %zu of %zu failed on %s: %s", j + 1,
                              s->n_slabs, ops->name, ops->strerror(rc));
    }
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "VPOC event failed on %s: %s", ops->name,
                          ops->strerror(rc));
    return 0;
}

int compute_vpoc_set_collect(struct compute *c, struct compute_vpoc_set *s, struct vpoc_result *res,
                             char *err, size_t errlen) {
    for (size_t i = 0; i < s->n; i++)
        if (s->sess[i].levels)
            res[s->start + i * s->stride] = s->out[i];
    for (size_t u = 0; u < s->n_unpacked; u++) {
        size_t k = s->start + s->unpacked[u] * s->stride;
        const struct data_session *ds = &s->ss->s[k];
        size_t chunk = s->chunk ? s->chunk : ds->n;
        int rc = compute_vpoc_session(c, s->bars + ds->first, ds->n, &s->params, chunk, &res[k],
                                      NULL, NULL, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int compute_vpoc_set_run(struct compute *c, struct compute_vpoc_set *s, struct vpoc_result *res,
                         struct compute_event *ev, struct compute_pool_peek *peak, char *err,
                         size_t errlen) {
    bool dense = s->kernel == COMPUTE_VPOC_DENSE; /* its peak was taken during the enqueue */
    int rc = compute_vpoc_wait(c, compute_vpoc_set_enqueue(c, s, ev, err, errlen),
                               dense ? NULL : peak, err, errlen);
    if (rc == 0 && dense && peak)
        *peak = s->peak;
    return rc ? rc : compute_vpoc_set_collect(c, s, res, err, errlen);
}

static const char *const compute_vpoc_kernel_names[COMPUTE_VPOC_KERNEL_COUNT] = {
    [COMPUTE_VPOC_PACKED] = "packed",
    [COMPUTE_VPOC_DENSE] = "dense",
};

const char *compute_vpoc_kernel_name(enum compute_vpoc_kernel k) {
    return (unsigned)k < COMPUTE_VPOC_KERNEL_COUNT ? compute_vpoc_kernel_names[k] : "?";
}

int compute_vpoc_kernel_parse(const char *s, enum compute_vpoc_kernel *out) {
    for (unsigned k = 0; k < COMPUTE_VPOC_KERNEL_COUNT; k++)
        if (strcmp(s, compute_vpoc_kernel_names[k]) == 0) {
            *out = (enum compute_vpoc_kernel)k;
            return 0;
        }
    return -EINVAL;
}

int compute_vpoc_all(struct compute *c, const struct vpoc_bar *bars, const struct data_sessions *ss,
                     const struct vpoc_params *p, size_t chunk, enum compute_vpoc_kernel kernel,
                     struct vpoc_result *res, char *err, size_t errlen) {
    struct compute_vpoc_set *set = NULL;
    int rc = compute_vpoc_set_create(c, bars, ss, 0, 1, p, chunk, kernel, &set, err, errlen);
    rc = rc ? rc : compute_vpoc_set_run(c, set, res, NULL, NULL, err, errlen);
    compute_vpoc_set_destroy(c, set);
    return rc;
}
