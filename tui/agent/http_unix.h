/* A listening UNIX socket whose path never exists with a mode wider than asked. bind() makes
 * the socket file with the process's umask, and changing the umask for it would change it for
 * every thread's files too; so the socket is bound inside a private directory (mode 0700) made
 * beside the path, given its mode there, set listening, and only then linked into place. */
#ifndef RINGSIDE_TUI_AGENT_HTTP_UNIX_H
#define RINGSIDE_TUI_AGENT_HTTP_UNIX_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Listen on a new UNIX socket at path, mode mode (e.g. 0660) from the moment path exists:
 * nothing may be at path (a name that appears there meanwhile is not replaced: -EEXIST), and
 * path's directory must take a private directory of its own (".rs-XXXXXX", removed again
 * before the return, whatever the outcome) whose socket path "DIR/.rs-XXXXXX/s" fits a UNIX
 * socket address (107 bytes: else -ENAMETOOLONG). 0 with *fd (close-on-exec) and *st (the
 * socket file's, to recognise it later), or -errno with err, one line naming path. */
int http_unix_listen(const char *path, mode_t mode, int backlog, int *fd, struct stat *st,
                     char *err, size_t errlen);

#endif
