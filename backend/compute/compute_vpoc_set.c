/* The packed VPOC path: sessions packed once, laid out on the device chunk by chunk, profiled
 * by one launch a chunk across every session. */
#include "backend/compute/compute.h"
#include "backend/compute/compute_vpoc_internal.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct compute_vpoc_set {
    struct vpoc_params params;
    size_t start, stride, n; /* the sessions: start + i * stride, i < n */
    size_t chunk;            /* as asked: 0 = whole sessions */
    size_t n_slabs;
    void **slabs; /* one pool buffer a chunk: the offsets (int64_t[n + 1]), then the words */
    struct vpoc_pack_session *sess; /* host copy of the session table */
    void *d_sess, *d_acc;
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
    if (rc == 0 && (!imgs || !s->slabs))
        rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (rc == 0 && s->n_slabs > 0) {
        size_t sb = s->n * sizeof(*s->sess);
        rc = compute_alloc(c, sb, &s->d_sess, err, errlen);
        rc = rc ? rc : compute_alloc(c, levels * sizeof(int64_t), &s->d_acc, err, errlen);
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
                            struct compute_vpoc_set **out, char *err, size_t errlen) {
    *out = NULL;
    if (stride == 0)
        return errbuf_set(err, errlen, -EINVAL, "VPOC: session stride 0");
    struct compute_vpoc_set *s = calloc(1, sizeof(*s));
    if (!s)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    s->params = *p;
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
    free(s->slabs);
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

int compute_vpoc_set_enqueue(struct compute *c, struct compute_vpoc_set *s,
                             struct compute_event *ev, char *err, size_t errlen) {
    const struct compute_ops *ops = c->ops;
    int rc = ev ? ops->event_record(c, &ev[0]) : 0;
    for (size_t j = 0; rc == 0 && j < s->n_slabs; j++) {
        struct compute_vpoc_launch a = {
            .words = (const int64_t *)s->slabs[j] + s->n + 1,
            .first = s->slabs[j],
            .sessions = s->d_sess,
            .n_sessions = s->n,
            .max_levels = s->max_levels,
            .acc = s->d_acc,
            .first_chunk = j == 0,
            .last_chunk = j + 1 == s->n_slabs,
            .params = s->params,
            .out = s->out,
        };
        rc = ops->vpoc_pass(c, &a);
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
    int rc =
        compute_vpoc_wait(c, compute_vpoc_set_enqueue(c, s, ev, err, errlen), peak, err, errlen);
    return rc ? rc : compute_vpoc_set_collect(c, s, res, err, errlen);
}

int compute_vpoc_all(struct compute *c, const struct vpoc_bar *bars, const struct data_sessions *ss,
                     const struct vpoc_params *p, size_t chunk, struct vpoc_result *res, char *err,
                     size_t errlen) {
    struct compute_vpoc_set *set = NULL;
    int rc = compute_vpoc_set_create(c, bars, ss, 0, 1, p, chunk, &set, err, errlen);
    rc = rc ? rc : compute_vpoc_set_run(c, set, res, NULL, NULL, err, errlen);
    compute_vpoc_set_destroy(c, set);
    return rc;
}
