/* Formatting of error text into caller-provided buffers. */
#include "backend/core/errbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int errbuf_set(char *err, size_t errlen, int rc, const char *fmt, ...) {
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        /* one line, whatever the input it quotes holds (a key with a newline, an escape) */
        for (unsigned char *p = (unsigned char *)err; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                *p = *p == '\t' ? ' ' : '?';
    }
    return rc;
}

bool errbuf_ends_with(const char *err, const char *reason) {
    size_t n = strlen(err), t = strlen(reason);
    return n >= t + 2 && strcmp(err + n - t, reason) == 0 && strncmp(err + n - t - 2, ": ", 2) == 0;
}
