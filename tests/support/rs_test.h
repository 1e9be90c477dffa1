/* Helpers shared by the unit tests: temp dirs, fixture paths, running the ringside binary. */
#ifndef RINGSIDE_TESTS_SUPPORT_RS_TEST_H
#define RINGSIDE_TESTS_SUPPORT_RS_TEST_H

#include <stddef.h>

/* A fresh directory under $TMPDIR (or /tmp); the path is written to out. Returns 0 or -errno. */
int rs_test_tmpdir(char *out, size_t outlen);

/* Remove a directory tree created by rs_test_tmpdir (best effort). */
void rs_test_rmtree(const char *dir);

/* Write text to dir/name and put the full path in out. Returns 0 or -errno. */
int rs_test_write_file(const char *dir, const char *name, const char *text, char *out,
                       size_t outlen);

/* Entries of dir whose name holds ".tmp." (afile's temp files); 0 when dir cannot be read. */
int rs_test_count_tmp(const char *dir);

/* "<fixtures>/rel" into out. */
const char *rs_test_fixture(const char *rel, char *out, size_t outlen);

/* Run the built ringside binary with argv (NULL-terminated, without argv[0]); stdin from
 * /dev/null; capture stdout and stderr (each truncated to its buffer, NUL-terminated).
 * Returns the exit status (0..255), or 128 + signal number when killed by a signal, or -1
 * when it could not be started. */
int rs_test_run(const char *const *argv, char *out, size_t outlen, char *errb, size_t errlen);

/* rs_test_run with a bound: a child still running limit_ms after its start is killed and -2
 * returned (the test then fails: the bound is never what the test waits for). */
int rs_test_run_within(const char *const *argv, int limit_ms, char *out, size_t outlen, char *errb,
                       size_t errlen);

/* fn(ctx, out) run in a child that has become nobody (uid and gid 65534), its out[0, len)
 * copied back: what an unprivileged user sees, for a test that runs as root (which passes every
 * permission check). fn starts from a zeroed out and makes no Criterion call. 0; -EPERM when the
 * child could not become nobody; -EIO when it did not report. */
int rs_test_as_nobody(void (*fn)(void *ctx, void *out), void *ctx, void *out, size_t len);

#endif
