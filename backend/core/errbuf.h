/* Human error text for the caller: every fallible call takes (char *err, size_t errlen). */
#ifndef RINGSIDE_BACKEND_CORE_ERRBUF_H
#define RINGSIDE_BACKEND_CORE_ERRBUF_H

#include <stdbool.h>
#include <stddef.h>

#define RS_EXIT_USAGE 2   /* the exit status for bad flags or bad input files */
#define RS_EXIT_STUCK 3   /* left while a thread was stuck (a hung call): no exit handlers ran */
#define RS_EXIT_INTR  130 /* a second SIGINT, SIGTERM or SIGHUP: left at once */

/* printf into err (if non-NULL and errlen > 0), control characters (from quoted input)
 * replaced so the message stays one line; returns rc so callers can
 * `return errbuf_set(err, errlen, -EINVAL, "...")`. */
int errbuf_set(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whether err ends with ": " and reason: a message of the form "context: reason" whose reason
 * is that text (a library's words for a known failure, say). */
bool errbuf_ends_with(const char *err, const char *reason);

#endif
