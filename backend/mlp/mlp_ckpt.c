/* Checkpoint save/load in ringside's checksummed little-endian binary format.
 *
 * Layout (all integers little-endian, doubles as IEEE-754 binary64 bit patterns, LE):
 *
 *   off  size  field
 *     0     8  magic "RSIDEMLP"
 *     8     4  u32 version (1)
 *    12     4  u32 n_in (1..4096)
 *    16     4  u32 n_hidden (0..8)
 *    20    32  u32 hidden[8] (each 1..256 for i < n_hidden, 0 after)
 *    52     4  u32 act (0 silu, 1 relu)
 *    56     4  u32 loss (0 mse, 1 bce)
 *    60     4  i32 epoch
 *    64     8  i64 step
 *    72     8  u64 data_fingerprint
 *    80     8  f64 train_loss
 *    88     8  f64 val_loss
 *    96     8  f64 y_mean
 *   104     8  f64 y_std
 *   112  8*n_in  f64 norm_mean[n_in]
 *     .  8*n_in  f64 norm_std[n_in]
 *     .    40  f64 adam lr, beta1, beta2, eps, weight_decay
 *     .     8  i64 adam t
 *     .     8  u64 n_params (must equal mlp_param_count(arch))
 *     .   8*n  f64 params[n], then m[n], then v[n]
 *     .     4  u32 CRC-32 (crc32_update(0, ...)) of every preceding byte
 *
 * The size is therefore fixed by the architecture: 112 + 16 n_in + 56 + 24 n + 4 bytes. */
#include "backend/mlp/mlp_ckpt.h"

#include "backend/core/afile.h"
#include "backend/core/crc32.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MLP_CKPT_HEAD_BYTES  112u /* magic .. y_std */
#define MLP_CKPT_ADAM_BYTES  56u  /* adam conf, t, n_params */
#define MLP_CKPT_FIXED_BYTES (MLP_CKPT_HEAD_BYTES + MLP_CKPT_ADAM_BYTES + 4u)
#define MLP_CKPT_MAX_IN      4096u
#define MLP_CKPT_MAX_EPOCH   100000000          /* epochs a checkpoint can say it completed */
#define MLP_CKPT_MAX_STEP    (INT64_C(1) << 53) /* steps (and Adam's t) likewise */
/* Smallest valid file: n_in 1, no hidden layer, so 2 parameters. */
#define MLP_CKPT_MIN_BYTES (MLP_CKPT_FIXED_BYTES + 16u + 24u * 2u)

/* The architecture fields as stored, validated before they become ints. */
struct mlp_ckpt_raw_arch {
    uint32_t n_in, n_hidden, hidden[MLP_MAX_HIDDEN], act, loss;
};

int mlp_ckpt_alloc(struct mlp_ckpt *c, const struct mlp_arch *arch) {
    struct mlp_adam_conf conf;
    memset(c, 0, sizeof(*c));
    c->arch = *arch;
    size_t n_in = arch->n_in > 0 ? (size_t)arch->n_in : 1, n = mlp_param_count(arch);
    mlp_adam_conf_default(&conf);
    c->norm_mean = calloc(n_in, sizeof(double));
    c->norm_std = calloc(n_in, sizeof(double));
    c->params = calloc(n ? n : 1, sizeof(double));
    if (!c->norm_mean || !c->norm_std || !c->params || mlp_adam_init(&c->adam, &conf, n) != 0) {
        mlp_ckpt_fini(c);
        return -ENOMEM;
    }
    return 0;
}

void mlp_ckpt_fini(struct mlp_ckpt *c) {
    free(c->norm_mean);
    free(c->norm_std);
    free(c->params);
    mlp_adam_fini(&c->adam);
    memset(c, 0, sizeof(*c));
}

/* ---- validation shared by save and load ---- */

static int mlp_ckpt_arch_check(const struct mlp_ckpt_raw_arch *r, char *msg, size_t len) {
    if (r->n_in < 1 || r->n_in > MLP_CKPT_MAX_IN)
        return errbuf_set(msg, len, -1, "n_in %u not in 1..%u", r->n_in, MLP_CKPT_MAX_IN);
    if (r->n_hidden > MLP_MAX_HIDDEN)
        return errbuf_set(msg, len, -1, "%u hidden layers (at most %d)", r->n_hidden,
                          MLP_MAX_HIDDEN);
    for (uint32_t i = 0; i < MLP_MAX_HIDDEN; i++) {
        int used = i < r->n_hidden;
        if (used && (r->hidden[i] < 1 || r->hidden[i] > MLP_MAX_WIDTH))
            return errbuf_set(msg, len, -1, "hidden[%u] = %u not in 1..%d", i, r->hidden[i],
                              MLP_MAX_WIDTH);
        if (!used && r->hidden[i] != 0)
            return errbuf_set(msg, len, -1, "unused hidden[%u] = %u is not 0", i, r->hidden[i]);
    }
    if (r->act > MLP_ACT_RELU)
        return errbuf_set(msg, len, -1, "activation %u unknown", r->act);
    if (r->loss > MLP_LOSS_BCE)
        return errbuf_set(msg, len, -1, "loss %u unknown", r->loss);
    return 0;
}

static void mlp_ckpt_arch_to_raw(const struct mlp_arch *a, struct mlp_ckpt_raw_arch *r) {
    memset(r, 0, sizeof(*r));
    r->n_in = (uint32_t)a->n_in;
    r->n_hidden = a->n_hidden < 0 ? UINT32_MAX : (uint32_t)a->n_hidden;
    for (int i = 0; i < MLP_MAX_HIDDEN && i < a->n_hidden; i++)
        r->hidden[i] = (uint32_t)a->hidden[i];
    r->act = (uint32_t)a->act;
    r->loss = (uint32_t)a->loss;
}

static void mlp_ckpt_raw_to_arch(const struct mlp_ckpt_raw_arch *r, struct mlp_arch *a) {
    memset(a, 0, sizeof(*a));
    a->n_in = (int)r->n_in;
    a->n_hidden = (int)r->n_hidden;
    for (int i = 0; i < MLP_MAX_HIDDEN; i++)
        a->hidden[i] = (int)r->hidden[i];
    a->act = r->act == MLP_ACT_RELU ? MLP_ACT_RELU : MLP_ACT_SILU;
    a->loss = r->loss == MLP_LOSS_BCE ? MLP_LOSS_BCE : MLP_LOSS_MSE;
}

static size_t mlp_ckpt_file_bytes(const struct mlp_arch *a) {
    return MLP_CKPT_FIXED_BYTES + 16u * (size_t)a->n_in + 24u * mlp_param_count(a);
}

/* The largest file any valid architecture produces; bounds what load reads into memory. */
static size_t mlp_ckpt_max_bytes(void) {
    struct mlp_arch a = {.n_in = MLP_CKPT_MAX_IN, .n_hidden = MLP_MAX_HIDDEN};
    for (int i = 0; i < MLP_MAX_HIDDEN; i++)
        a.hidden[i] = MLP_MAX_WIDTH;
    return mlp_ckpt_file_bytes(&a);
}

/* ---- writing ---- */

struct mlp_ckpt_wr {
    FILE *fp;
    uint32_t crc;
    int failed;
};

static void mlp_ckpt_put(struct mlp_ckpt_wr *w, const unsigned char *b, size_t n) {
    w->crc = crc32_update(w->crc, b, n);
    if (fwrite(b, 1, n, w->fp) != n)
        w->failed = 1;
}

static void mlp_ckpt_enc(unsigned char *b, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void mlp_ckpt_put_u32(struct mlp_ckpt_wr *w, uint32_t v) {
    unsigned char b[4];
    mlp_ckpt_enc(b, v, 4);
    mlp_ckpt_put(w, b, 4);
}

static void mlp_ckpt_put_u64(struct mlp_ckpt_wr *w, uint64_t v) {
    unsigned char b[8];
    mlp_ckpt_enc(b, v, 8);
    mlp_ckpt_put(w, b, 8);
}

static void mlp_ckpt_put_f64s(struct mlp_ckpt_wr *w, const double *v, size_t n) {
    unsigned char buf[8 * 256];
    for (size_t done = 0; done < n;) {
        size_t k = n - done < 256 ? n - done : 256;
        for (size_t i = 0; i < k; i++) {
            uint64_t bits;
            memcpy(&bits, &v[done + i], 8);
            mlp_ckpt_enc(buf + 8 * i, bits, 8);
        }
        mlp_ckpt_put(w, buf, 8 * k);
        done += k;
    }
}

static void mlp_ckpt_write_body(struct mlp_ckpt_wr *w, const struct mlp_ckpt *c,
                                const struct mlp_ckpt_raw_arch *r) {
    const struct mlp_adam_conf *ac = &c->adam.conf;
    double head_f[4] = {c->train_loss, c->val_loss, c->y_mean, c->y_std};
    double conf_f[5] = {ac->lr, ac->beta1, ac->beta2, ac->eps, ac->weight_decay};
    size_t n_in = (size_t)c->arch.n_in, n = c->adam.n;
    mlp_ckpt_put(w, (const unsigned char *)MLP_CKPT_MAGIC, 8);
    mlp_ckpt_put_u32(w, MLP_CKPT_VERSION);
    mlp_ckpt_put_u32(w, r->n_in);
    mlp_ckpt_put_u32(w, r->n_hidden);
    for (int i = 0; i < MLP_MAX_HIDDEN; i++)
        mlp_ckpt_put_u32(w, r->hidden[i]);
    mlp_ckpt_put_u32(w, r->act);
    mlp_ckpt_put_u32(w, r->loss);
    mlp_ckpt_put_u32(w, (uint32_t)c->epoch);
    mlp_ckpt_put_u64(w, (uint64_t)c->step);
    mlp_ckpt_put_u64(w, c->data_fingerprint);
    mlp_ckpt_put_f64s(w, head_f, 4);
    mlp_ckpt_put_f64s(w, c->norm_mean, n_in);
    mlp_ckpt_put_f64s(w, c->norm_std, n_in);
    mlp_ckpt_put_f64s(w, conf_f, 5);
    mlp_ckpt_put_u64(w, (uint64_t)c->adam.t);
    mlp_ckpt_put_u64(w, (uint64_t)n);
    mlp_ckpt_put_f64s(w, c->params, n);
    mlp_ckpt_put_f64s(w, c->adam.m, n);
    mlp_ckpt_put_f64s(w, c->adam.v, n);
    mlp_ckpt_put_u32(w, w->crc);
}

int mlp_ckpt_save(const char *path, const struct mlp_ckpt *c, char *err, size_t errlen) {
    struct mlp_ckpt_raw_arch raw;
    char msg[128];
    mlp_ckpt_arch_to_raw(&c->arch, &raw);
    if (mlp_ckpt_arch_check(&raw, msg, sizeof(msg)) != 0)
        return errbuf_set(err, errlen, -EINVAL, "cannot save %s: %s", path, msg);
    if (!c->norm_mean || !c->norm_std || !c->params || !c->adam.m || !c->adam.v ||
        c->adam.n != mlp_param_count(&c->arch))
        return errbuf_set(err, errlen, -EINVAL, "cannot save %s: arrays do not match the arch",
                          path);
    struct afile af;
    int rc = afile_open(&af, path, err, errlen);
    if (rc != 0)
        return rc;
    struct mlp_ckpt_wr w = {.fp = af.fp};
    mlp_ckpt_write_body(&w, c, &raw);
    if (w.failed) {
        int e = errno ? errno : EIO;
        afile_abort(&af);
        return errbuf_set(err, errlen, -e, "cannot write %s: %s", path, strerror(e));
    }
    return afile_commit(&af, err, errlen);
}

/* ---- reading ---- */

struct mlp_ckpt_rd {
    const unsigned char *b;
    size_t pos;
};

static uint64_t mlp_ckpt_get(struct mlp_ckpt_rd *r, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->b[r->pos + (size_t)i] << (8 * i);
    r->pos += (size_t)bytes;
    return v;
}

static double mlp_ckpt_get_f64(struct mlp_ckpt_rd *r) {
    uint64_t bits = mlp_ckpt_get(r, 8);
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

static void mlp_ckpt_get_f64s(struct mlp_ckpt_rd *r, double *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        v[i] = mlp_ckpt_get_f64(r);
}

/* Read the whole file (or only its first 12 bytes when it is larger than any checkpoint). */
static int mlp_ckpt_slurp(const char *path, unsigned char **buf, size_t *len, size_t *size,
                          char *err, size_t errlen) {
    struct stat st;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return errbuf_set(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
    int e = fstat(fileno(fp), &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : EINVAL;
    if (e != 0) {
        fclose(fp);
        return errbuf_set(err, errlen, -e, "cannot read %s: %s", path,
                          e == EINVAL ? "not a regular file" : strerror(e));
    }
    *size = (size_t)st.st_size;
    *len = *size <= mlp_ckpt_max_bytes() ? *size : 12;
    *buf = malloc(*len ? *len : 1);
    int rc = 0;
    if (!*buf)
        rc = errbuf_set(err, errlen, -ENOMEM, "cannot read %s: out of memory", path);
    else if (fread(*buf, 1, *len, fp) != *len)
        rc = errbuf_set(err, errlen, -EIO, "cannot read %s: short read", path);
    fclose(fp);
    if (rc != 0) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

/* Magic, version and size bounds, in that order, so a foreign file is named as such. */
static int mlp_ckpt_check_prefix(const char *path, const unsigned char *b, size_t len, size_t size,
                                 char *err, size_t errlen) {
    struct mlp_ckpt_rd r = {b, 8};
    if (len >= 8 && memcmp(b, MLP_CKPT_MAGIC, 8) != 0)
        return errbuf_set(err, errlen, -EINVAL, "%s: not a ringside checkpoint (bad magic)", path);
    uint32_t version = len >= 12 ? (uint32_t)mlp_ckpt_get(&r, 4) : MLP_CKPT_VERSION;
    if (version != MLP_CKPT_VERSION)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: unsupported checkpoint version %u (this build reads %u)", path,
                          version, MLP_CKPT_VERSION);
    if (size < MLP_CKPT_MIN_BYTES)
        return errbuf_set(err, errlen, -EINVAL, "%s: truncated: %zu of at least %u bytes", path,
                          size, MLP_CKPT_MIN_BYTES);
    if (size > mlp_ckpt_max_bytes())
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: corrupt header: %zu bytes is more than any checkpoint (%zu)", path,
                          size, mlp_ckpt_max_bytes());
    return 0;
}

static void mlp_ckpt_read_raw_arch(struct mlp_ckpt_rd *r, struct mlp_ckpt_raw_arch *a) {
    a->n_in = (uint32_t)mlp_ckpt_get(r, 4);
    a->n_hidden = (uint32_t)mlp_ckpt_get(r, 4);
    for (int i = 0; i < MLP_MAX_HIDDEN; i++)
        a->hidden[i] = (uint32_t)mlp_ckpt_get(r, 4);
    a->act = (uint32_t)mlp_ckpt_get(r, 4);
    a->loss = (uint32_t)mlp_ckpt_get(r, 4);
}

/* The smallest standard deviation training writes (feat_norm_fit puts 1 for a column whose
 * deviation is below it). */
#define MLP_CKPT_MIN_STD 1e-12
#define MLP_CKPT_NOT_F32 "beyond float32's range (the model runs in float32)"

static bool mlp_ckpt_f32_ok(double v) {
    return isfinite(v) && fabs(v) <= FLT_MAX;
}

static int mlp_ckpt_bad_value(char *msg, size_t len, const char *field, size_t i, bool indexed,
                              double v, const char *why) {
    char name[48];
    why = isfinite(v) ? why : "not a finite number";
    if (indexed)
        snprintf(name, sizeof(name), "%s[%zu]", field, i);
    else
        snprintf(name, sizeof(name), "%s", field);
    return errbuf_set(msg, len, -1, "%s is %.6g: %s", name, v, why);
}

static int mlp_ckpt_check_std(double v, char *msg, size_t len, const char *field, size_t i,
                              bool indexed) {
    if (!mlp_ckpt_f32_ok(v))
        return mlp_ckpt_bad_value(msg, len, field, i, indexed, v, MLP_CKPT_NOT_F32);
    if (!(v >= MLP_CKPT_MIN_STD))
        return mlp_ckpt_bad_value(msg, len, field, i, indexed, v,
                                  "below 1e-12, the smallest standard deviation training writes");
    return 0;
}

/* Every number a model is made of can be run: the model runs in float32 (its parameters,
 * Adam's state and the normalised features are float32 on the device), so a finite double
 * past float32's range would become an infinity there and every output NaN; a standard
 * deviation below the floor training uses for a constant column (MLP_CKPT_MIN_STD) would make
 * the normalised features overflow the same way. A checksum guards against damage, not
 * against a file written that way. 0, or -1 with msg naming the field and its value. */
static int mlp_ckpt_check_values(const struct mlp_ckpt *c, char *msg, size_t len) {
    static const char f32[] = MLP_CKPT_NOT_F32;
    size_t n_in = (size_t)c->arch.n_in, n = c->adam.n;
    for (size_t i = 0; i < n; i++) {
        if (!mlp_ckpt_f32_ok(c->params[i]))
            return mlp_ckpt_bad_value(msg, len, "params", i, true, c->params[i], f32);
        if (!mlp_ckpt_f32_ok(c->adam.m[i]))
            return mlp_ckpt_bad_value(msg, len, "adam m", i, true, c->adam.m[i], f32);
        if (!mlp_ckpt_f32_ok(c->adam.v[i]) || c->adam.v[i] < 0)
            return mlp_ckpt_bad_value(msg, len, "adam v", i, true, c->adam.v[i],
                                      c->adam.v[i] < 0 ? "a second moment cannot be negative"
                                                       : f32);
    }
    for (size_t j = 0; j < n_in; j++) {
        if (!mlp_ckpt_f32_ok(c->norm_mean[j]))
            return mlp_ckpt_bad_value(msg, len, "norm_mean", j, true, c->norm_mean[j], f32);
        if (mlp_ckpt_check_std(c->norm_std[j], msg, len, "norm_std", j, true) != 0)
            return -1;
    }
    if (!mlp_ckpt_f32_ok(c->y_mean))
        return mlp_ckpt_bad_value(msg, len, "y_mean", 0, false, c->y_mean, f32);
    return mlp_ckpt_check_std(c->y_std, msg, len, "y_std", 0, false);
}

/* Decode everything after the architecture into c (already allocated for it). */
static int mlp_ckpt_read_body(struct mlp_ckpt_rd *r, struct mlp_ckpt *c, char *msg, size_t len) {
    size_t n_in = (size_t)c->arch.n_in, n = c->adam.n;
    struct mlp_adam_conf *ac = &c->adam.conf;
    c->epoch = (int32_t)(uint32_t)mlp_ckpt_get(r, 4);
    c->step = (int64_t)mlp_ckpt_get(r, 8);
    c->data_fingerprint = mlp_ckpt_get(r, 8);
    c->train_loss = mlp_ckpt_get_f64(r);
    c->val_loss = mlp_ckpt_get_f64(r);
    c->y_mean = mlp_ckpt_get_f64(r);
    c->y_std = mlp_ckpt_get_f64(r);
    mlp_ckpt_get_f64s(r, c->norm_mean, n_in);
    mlp_ckpt_get_f64s(r, c->norm_std, n_in);
    ac->lr = mlp_ckpt_get_f64(r);
    ac->beta1 = mlp_ckpt_get_f64(r);
    ac->beta2 = mlp_ckpt_get_f64(r);
    ac->eps = mlp_ckpt_get_f64(r);
    ac->weight_decay = mlp_ckpt_get_f64(r);
    c->adam.t = (int64_t)mlp_ckpt_get(r, 8);
    uint64_t n_file = mlp_ckpt_get(r, 8);
    if (n_file != n)
        return errbuf_set(msg, len, -1, "n_params %llu, the arch has %zu",
                          (unsigned long long)n_file, n);
    if (c->epoch < 0 || c->step < 0 || c->adam.t < 0)
        return errbuf_set(msg, len, -1, "negative epoch, step or adam t");
    if (c->epoch > MLP_CKPT_MAX_EPOCH || c->step > MLP_CKPT_MAX_STEP ||
        c->adam.t > MLP_CKPT_MAX_STEP)
        return errbuf_set(msg, len, -1, "epoch %d or step %lld beyond what a run reaches",
                          (int)c->epoch, (long long)c->step);
    mlp_ckpt_get_f64s(r, c->params, n);
    mlp_ckpt_get_f64s(r, c->adam.m, n);
    mlp_ckpt_get_f64s(r, c->adam.v, n);
    return 0;
}

/* Validate a fully read buffer of size bytes and decode it into c. */
static int mlp_ckpt_decode(const char *path, const unsigned char *b, size_t size,
                           struct mlp_ckpt *c, char *err, size_t errlen) {
    struct mlp_ckpt_rd r = {b, 12};
    struct mlp_ckpt_raw_arch raw;
    struct mlp_arch arch;
    char msg[128];
    uint32_t stored = (uint32_t)b[size - 4] | (uint32_t)b[size - 3] << 8 |
                      (uint32_t)b[size - 2] << 16 | (uint32_t)b[size - 1] << 24;
    int crc_ok = crc32_update(0, b, size - 4) == stored;
    mlp_ckpt_read_raw_arch(&r, &raw);
    if (mlp_ckpt_arch_check(&raw, msg, sizeof(msg)) != 0)
        goto bad_header;
    mlp_ckpt_raw_to_arch(&raw, &arch);
    size_t want = mlp_ckpt_file_bytes(&arch);
    /* A size that disagrees with the header is a truncation only if the checksum cannot tell
     * otherwise: with a damaged header the implied size is meaningless too. */
    if (size < want)
        return errbuf_set(err, errlen, -EINVAL, "%s: truncated or corrupt: %zu of %zu bytes%s",
                          path, size, want, crc_ok ? "" : " (checksum mismatch)");
    if (size > want)
        return errbuf_set(err, errlen, -EINVAL, "%s: %zu trailing bytes after the checkpoint%s",
                          path, size - want, crc_ok ? "" : " (checksum mismatch: corrupt)");
    if (!crc_ok)
        return errbuf_set(err, errlen, -EINVAL, "%s: checksum mismatch: the file is corrupt", path);
    if (mlp_ckpt_alloc(c, &arch) != 0)
        return errbuf_set(err, errlen, -ENOMEM, "cannot load %s: out of memory", path);
    if (mlp_ckpt_read_body(&r, c, msg, sizeof(msg)) != 0)
        goto bad_header;
    if (mlp_ckpt_check_values(c, msg, sizeof(msg)) != 0) { /* whole, but cannot be run */
        mlp_ckpt_fini(c);
        return errbuf_set(err, errlen, -EINVAL, "%s: %s", path, msg);
    }
    return 0;
bad_header:
    mlp_ckpt_fini(c);
    if (!crc_ok)
        return errbuf_set(err, errlen, -EINVAL, "%s: checksum mismatch: the file is corrupt", path);
    return errbuf_set(err, errlen, -EINVAL, "%s: corrupt header: %s", path, msg);
}

int mlp_ckpt_load(const char *path, struct mlp_ckpt *c, char *err, size_t errlen) {
    unsigned char *buf = NULL;
    size_t len = 0, size = 0;
    memset(c, 0, sizeof(*c));
    int rc = mlp_ckpt_slurp(path, &buf, &len, &size, err, errlen);
    if (rc != 0)
        return rc;
    rc = mlp_ckpt_check_prefix(path, buf, len, size, err, errlen);
    if (rc == 0)
        rc = mlp_ckpt_decode(path, buf, size, c, err, errlen);
    free(buf);
    return rc;
}
