/* Files that hold a secret (a bearer token, a TLS private key) or sit beside one (its
 * certificate), read at start-up: only a regular file is taken (a FIFO would hold the start-up
 * waiting for a writer), and a secret that other users can read or change gets one warning line
 * on stderr. */
#ifndef RINGSIDE_BACKEND_CORE_SECRET_FILE_H
#define RINGSIDE_BACKEND_CORE_SECRET_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* Open path for reading, without blocking on a FIFO. With secret, when its group or others may
 * read or change it, one line on stderr: "ringside: warning: the WHAT PATH can be read by other
 * users (mode 0640): chmod 600 it" (what: "token file"). The descriptor, or -errno / -EINVAL
 * (not a regular file) with err "PATH: why". */
int secret_file_open(const char *path, const char *what, bool secret, char *err, size_t errlen);

/* secret_file_open, then the whole file, at most max_bytes: *out a malloc'd copy with a NUL
 * after its *len bytes (release it with secret_file_free). 0, or secret_file_open's errors,
 * -ENODATA (empty), -EFBIG (over max_bytes) or -errno, with err "PATH: why". */
int secret_file_read(const char *path, const char *what, bool secret, size_t max_bytes, char **out,
                     size_t *len, char *err, size_t errlen);

/* Overwrite len bytes of p with zeros (a write the compiler keeps), then free it. NULL: a
 * no-op. */
void secret_file_free(char *p, size_t len);

#endif
