/* Latest-value snapshot between one writer and one reader (triple buffer): the writer never
 * waits for the reader and the reader never holds a lock while it renders. */
#ifndef RINGSIDE_BACKEND_CORE_SNAP_H
#define RINGSIDE_BACKEND_CORE_SNAP_H

#include <stdbool.h>
#include <stddef.h>

struct snap;

/* Three zeroed buffers of payload_bytes. 0 or -ENOMEM. */
int snap_create(struct snap **out, size_t payload_bytes);
void snap_destroy(struct snap *s);

/* Writer: its private buffer, to fill completely before snap_publish(). */
void *snap_write_begin(struct snap *s);

/* Writer: make the buffer from snap_write_begin() the latest value. */
void snap_publish(struct snap *s);

/* Reader: the latest published value (or the zeroed initial buffer); *fresh says whether it
 * changed since the last call. Valid until the reader's next snap_read(). */
const void *snap_read(struct snap *s, bool *fresh);

#endif
