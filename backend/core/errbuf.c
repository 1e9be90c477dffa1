/* Formatting of error text into caller-provided buffers. */
#include "backend/core/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int errbuf_set(char *err, size_t errlen, int rc, const char *fmt, ...) {
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}
