/* The protocol-buffers wire format: a key is (field << 3) | wire type, then the value. */
#include "backend/core/pbuf.h"

#include <stdlib.h>
#include <string.h>

enum { PBUF_VARINT = 0, PBUF_LEN = 2 };

void pbuf_fini(struct pbuf *p) {
    free(p->b);
    memset(p, 0, sizeof(*p));
}

static bool pbuf_room(struct pbuf *p, size_t more) {
    if (p->oom)
        return false;
    if (p->n + more <= p->cap)
        return true;
    size_t cap = p->cap ? p->cap : 64;
    while (cap < p->n + more)
        cap *= 2;
    uint8_t *b = realloc(p->b, cap);
    if (!b) {
        p->oom = true;
        return false;
    }
    p->b = b;
    p->cap = cap;
    return true;
}

static void pbuf_raw_varint(struct pbuf *p, uint64_t v) {
    if (!pbuf_room(p, 10))
        return;
    do {
        uint8_t byte = (uint8_t)(v & 0x7f);
        v >>= 7;
        p->b[p->n++] = (uint8_t)(byte | (v ? 0x80 : 0));
    } while (v);
}

void pbuf_varint(struct pbuf *p, uint32_t field, int64_t v) {
    pbuf_raw_varint(p, (uint64_t)field << 3 | PBUF_VARINT);
    pbuf_raw_varint(p, (uint64_t)v);
}

void pbuf_bytes(struct pbuf *p, uint32_t field, const void *data, size_t len) {
    pbuf_raw_varint(p, (uint64_t)field << 3 | PBUF_LEN);
    pbuf_raw_varint(p, len);
    if (len && pbuf_room(p, len)) {
        memcpy(p->b + p->n, data, len);
        p->n += len;
    }
}

void pbuf_str(struct pbuf *p, uint32_t field, const char *s) {
    pbuf_bytes(p, field, s, strlen(s));
}

void pbuf_msg(struct pbuf *p, uint32_t field, const struct pbuf *sub) {
    if (sub->oom)
        p->oom = true;
    pbuf_bytes(p, field, sub->b, sub->n);
}
