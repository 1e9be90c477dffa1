/* A protocol-buffers encoder (the wire format: varints, fixed-width and length-delimited
 * fields) into a growing byte buffer, enough to write a message without a generated library. A
 * nested message is encoded into a buffer of its own and added with pbuf_msg. */
#ifndef RINGSIDE_BACKEND_CORE_PBUF_H
#define RINGSIDE_BACKEND_CORE_PBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pbuf {
    uint8_t *b; /* owned; NULL until the first byte */
    size_t n, cap;
    bool oom; /* an allocation failed: the content is incomplete, every later call is a no-op */
};

void pbuf_fini(struct pbuf *p);

/* Field `field` as a varint (int32, int64, enum, bool: negative values take 10 bytes, as
 * protobuf encodes them). */
void pbuf_varint(struct pbuf *p, uint32_t field, int64_t v);
/* Field `field` as length-delimited bytes (bytes, string, packed repeated, a message). */
void pbuf_bytes(struct pbuf *p, uint32_t field, const void *data, size_t len);
void pbuf_str(struct pbuf *p, uint32_t field, const char *s);
/* Field `field` holding the message encoded in sub (whose oom carries over). */
void pbuf_msg(struct pbuf *p, uint32_t field, const struct pbuf *sub);

#endif
