/* A classified event as one JSON object (the `kmsg classify` output and the JSON lines). */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_JSON_H
#define RINGSIDE_BACKEND_KMSG_KMSG_JSON_H

#include "backend/kmsg/kmsg.h"

#include <stddef.h>

/* Write e's fields (only those it has; "ts" is seconds or null) as the members of a JSON
 * object, without the braces, into buf: `"line":3,"ts":12.5,"vendor":"amdgpu",...` with the
 * message last. Returns the length (truncated output stays valid up to the last whole
 * member). */
size_t kmsg_json_members(const struct kmsg_event *e, char *buf, size_t cap);

/* Append s to buf[*len..cap) as a JSON string (quotes included). False when it did not fit
 * (*len then unchanged). */
bool kmsg_json_string(char *buf, size_t cap, size_t *len, const char *s);

#endif
