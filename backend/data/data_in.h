/* The bytes of a data file as a stream, whatever it was stored as: plain, gzip or zstd
 * (recognised by their first bytes, so a pipe works as a file does), decompressed as it is
 * read, never whole in memory. */
#ifndef RINGSIDE_BACKEND_DATA_DATA_IN_H
#define RINGSIDE_BACKEND_DATA_DATA_IN_H

#include <stddef.h>
#include <sys/types.h>

struct data_in;

/* Open path ("-": stdin). 0; -errno with err naming the file; -ENOTSUP when it is compressed
 * in a way this build cannot read (err says how to get it read). */
int data_in_open(const char *path, struct data_in **out, char *err, size_t errlen);

/* Up to n bytes into dst: the count, 0 at the end, or -errno (-EILSEQ: corrupt compressed
 * data) with err naming the file. */
ssize_t data_in_read(struct data_in *in, void *dst, size_t n, char *err, size_t errlen);

/* "plain", "gzip", "zstd". */
const char *data_in_kind(const struct data_in *in);

void data_in_close(struct data_in *in);

#endif
