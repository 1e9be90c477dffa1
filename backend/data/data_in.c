/* Plain, gzip (zlib) and zstd (libzstd) input behind one read call. The first bytes decide;
 * they are kept and given back as the start of the stream. Several gzip members, or zstd
 * frames, one after another read as one stream, as gunzip and zstd -d read them. */
#include "backend/data/data_in.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RS_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef RS_HAVE_ZSTD
#include <zstd.h>
#endif

#define DATA_IN_BUF (64u * 1024u) /* compressed bytes read at a time */

enum data_in_kind { DATA_IN_PLAIN, DATA_IN_GZIP, DATA_IN_ZSTD };

struct data_in {
    const char *name; /* for messages */
    FILE *fp;
    enum data_in_kind kind;
    uint8_t *buf;      /* compressed input (or, plain, the peeked first bytes) */
    size_t len, pos;   /* its bytes and how far they are used */
    bool eof;          /* the file has no more bytes */
    bool done;         /* the decompressed stream has ended */
    size_t zs_pending; /* zstd: the current frame's bytes still to come (0 between frames) */
#ifdef RS_HAVE_ZLIB
    z_stream z;
    bool z_live;
#endif
#ifdef RS_HAVE_ZSTD
    ZSTD_DStream *zs;
#endif
};

static const char *const data_in_names[] = {"plain", "gzip", "zstd"};

const char *data_in_kind(const struct data_in *in) {
    return data_in_names[in->kind];
}

/* Refill buf from the file once it is used up. 0, or -errno. */
static int data_in_fill(struct data_in *in, char *err, size_t errlen) {
    if (in->pos < in->len || in->eof)
        return 0;
    in->len = fread(in->buf, 1, DATA_IN_BUF, in->fp);
    in->pos = 0;
    if (in->len == 0) {
        if (ferror(in->fp))
            return errbuf_set(err, errlen, -EIO, "%s: read error: %s", in->name,
                              strerror(errno ? errno : EIO));
        in->eof = true;
    }
    return 0;
}

static ssize_t data_in_plain(struct data_in *in, uint8_t *dst, size_t n, char *err, size_t errlen) {
    int rc = data_in_fill(in, err, errlen);
    if (rc != 0)
        return rc;
    size_t k = in->len - in->pos < n ? in->len - in->pos : n;
    memcpy(dst, in->buf + in->pos, k);
    in->pos += k;
    return (ssize_t)k;
}

#ifdef RS_HAVE_ZLIB
static ssize_t data_in_gzip(struct data_in *in, uint8_t *dst, size_t n, char *err, size_t errlen) {
    in->z.next_out = dst;
    in->z.avail_out = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
    while (in->z.avail_out == n && !in->done) {
        int rc = data_in_fill(in, err, errlen);
        if (rc != 0)
            return rc;
        if (in->eof && in->pos == in->len) {
            if (in->z.total_in > 0 && in->z_live)
                return errbuf_set(err, errlen, -EILSEQ, "%s: the gzip data ends early", in->name);
            in->done = true;
            break;
        }
        in->z.next_in = in->buf + in->pos;
        in->z.avail_in = (uInt)(in->len - in->pos);
        int zr = inflate(&in->z, Z_NO_FLUSH);
        in->pos = in->len - in->z.avail_in;
        if (zr == Z_STREAM_END) { /* another member may follow */
            inflateReset(&in->z);
            in->z.total_in = 0;
            continue;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            return errbuf_set(err, errlen, -EILSEQ, "%s: corrupt gzip data (%s)", in->name,
                              in->z.msg ? in->z.msg : "inflate failed");
    }
    return (ssize_t)(n - in->z.avail_out);
}
#endif

#ifdef RS_HAVE_ZSTD
static ssize_t data_in_zstd(struct data_in *in, uint8_t *dst, size_t n, char *err, size_t errlen) {
    ZSTD_outBuffer out = {dst, n, 0};
    while (out.pos == 0 && !in->done) {
        int rc = data_in_fill(in, err, errlen);
        if (rc != 0)
            return rc;
        if (in->eof && in->pos == in->len) {
            if (in->zs_pending != 0)
                return errbuf_set(err, errlen, -EILSEQ, "%s: the zstd data ends early", in->name);
            in->done = true;
            break;
        }
        ZSTD_inBuffer zin = {in->buf, in->len, in->pos};
        size_t r = ZSTD_decompressStream(in->zs, &out, &zin);
        in->pos = zin.pos;
        if (ZSTD_isError(r))
            return errbuf_set(err, errlen, -EILSEQ, "%s: corrupt zstd data (%s)", in->name,
                              ZSTD_getErrorName(r));
        in->zs_pending = r;
    }
    return (ssize_t)out.pos;
}
#endif

ssize_t data_in_read(struct data_in *in, void *dst, size_t n, char *err, size_t errlen) {
    if (n == 0)
        return 0;
    switch (in->kind) {
#ifdef RS_HAVE_ZLIB
    case DATA_IN_GZIP:
        return data_in_gzip(in, dst, n, err, errlen);
#endif
#ifdef RS_HAVE_ZSTD
    case DATA_IN_ZSTD:
        return data_in_zstd(in, dst, n, err, errlen);
#endif
    default:
        return data_in_plain(in, dst, n, err, errlen);
    }
}

/* Set up the decompressor the first bytes call for. */
static int data_in_start(struct data_in *in, char *err, size_t errlen) {
    const uint8_t *b = in->buf;
    if (in->len >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        in->kind = DATA_IN_GZIP;
    else if (in->len >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd)
        in->kind = DATA_IN_ZSTD;
    else
        return 0;
#ifdef RS_HAVE_ZLIB
    if (in->kind == DATA_IN_GZIP) {
        if (inflateInit2(&in->z, 15 + 16) != Z_OK)
            return errbuf_set(err, errlen, -ENOMEM, "%s: cannot start gzip", in->name);
        in->z_live = true;
        return 0;
    }
#endif
#ifdef RS_HAVE_ZSTD
    if (in->kind == DATA_IN_ZSTD) {
        in->zs = ZSTD_createDStream();
        if (!in->zs)
            return errbuf_set(err, errlen, -ENOMEM, "%s: cannot start zstd", in->name);
        return 0;
    }
#endif
    return errbuf_set(err, errlen, -ENOTSUP,
                      "%s: %s-compressed, and this build reads no %s (decompress it first, or "
                      "rebuild with %s installed)",
                      in->name, data_in_names[in->kind], data_in_names[in->kind],
                      in->kind == DATA_IN_GZIP ? "zlib1g-dev" : "libzstd-dev");
}

void data_in_close(struct data_in *in) {
    if (!in)
        return;
#ifdef RS_HAVE_ZLIB
    if (in->z_live)
        inflateEnd(&in->z);
#endif
#ifdef RS_HAVE_ZSTD
    if (in->zs)
        ZSTD_freeDStream(in->zs);
#endif
    if (in->fp && in->fp != stdin)
        fclose(in->fp);
    free(in->buf);
    free(in);
}

int data_in_open(const char *path, struct data_in **out, char *err, size_t errlen) {
    *out = NULL;
    struct data_in *in = calloc(1, sizeof(*in));
    if (!in || !(in->buf = malloc(DATA_IN_BUF))) {
        free(in);
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", path);
    }
    bool is_stdin = strcmp(path, "-") == 0;
    in->name = is_stdin ? "<stdin>" : path;
    in->fp = is_stdin ? stdin : fopen(path, "rb");
    if (!in->fp) {
        int e = errno;
        data_in_close(in);
        return errbuf_set(err, errlen, -e, "cannot open %s: %s", path, strerror(e));
    }
    int rc = data_in_fill(in, err, errlen);
    rc = rc ? rc : data_in_start(in, err, errlen);
    if (rc != 0) {
        data_in_close(in);
        return rc;
    }
    *out = in;
    return 0;
}
