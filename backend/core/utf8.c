/* UTF-8 validation (RFC 3629, table 3-7 of the Unicode standard). */
#include "backend/core/utf8.h"

#include <stdint.h>

/* The length of the well-formed sequence at p (1..4), or 0. */
static size_t utf8_seq(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    /* the lead byte gives the length and the range of the second byte */
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlong form */
        hi = c == 0xed ? 0x9f : 0xbf; /* no surrogate */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing past U+10FFFF */
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

bool utf8_printable(const char *s, size_t *bad_at) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        size_t n = utf8_seq(p + i);
        if (n == 0 || p[i] < 0x20 || p[i] == 0x7f) {
            if (bad_at)
                *bad_at = i;
            return false;
        }
        i += n;
    }
    return true;
}
