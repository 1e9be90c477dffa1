/* UTF-8 text checked as RFC 3629 defines it: no overlong forms, no surrogates, nothing past
 * U+10FFFF. */
#ifndef RINGSIDE_BACKEND_CORE_UTF8_H
#define RINGSIDE_BACKEND_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the NUL-terminated s is valid UTF-8 holding no control character (below U+0020, or
 * U+007F); false with *bad_at (when not NULL) the offset of the first byte that is not. */
bool utf8_printable(const char *s, size_t *bad_at);

#endif
