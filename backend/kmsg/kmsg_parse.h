/* Splitting kernel-log input into messages: /dev/kmsg records ("prio,seq,ts_usec,flags;msg"
 * with " KEY=VALUE" dictionary lines) and text lines in the dmesg and journalctl formats. */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_PARSE_H
#define RINGSIDE_BACKEND_KMSG_KMSG_PARSE_H

#include "backend/kmsg/kmsg.h"

#include <stddef.h>

/* One record as read(2) returns it from /dev/kmsg (one record per read, n bytes, not
 * NUL-terminated). Fills out (text points into buf). 0, or -EINVAL for a malformed header (out
 * then holds the whole buffer as text). */
int kmsg_parse_record(const char *buf, size_t n, struct kmsg_line *out);

/* One text line (no newline), in any of the forms `dmesg` (raw `<N>`, `[ sec.usec]`, `-T`
 * ctime, `-x` "kern  :err   : ", ISO time) and `journalctl -k` (short, short-iso,
 * short-monotonic, "HOST kernel: ") print, or a bare message. Prefixes are removed from
 * out->text; a `[ sec.usec]` stamp gives ts_ns (the kernel's clock); wall-clock stamps do
 * not. */
void kmsg_parse_text(const char *buf, size_t n, struct kmsg_line *out);

#endif
