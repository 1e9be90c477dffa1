/* A UNIX socket made with its mode from the start (http_unix.h). */
#include "tui/agent/http_unix.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define HTTP_UNIX_PRIVATE "/.rs-XXXXXX" /* the private directory, beside the path */
#define HTTP_UNIX_BOUND   "/s"          /* the socket in it */

/* The private directory's template for path into dir (beside it: in path's directory). false
 * when the socket in it would not fit a UNIX socket address. */
static bool http_unix_template(const char *path, char *dir, size_t dirlen) {
    const char *slash = strrchr(path, '/');
    int n = slash ? snprintf(dir, dirlen, "%.*s" HTTP_UNIX_PRIVATE, (int)(slash - path), path)
                  : snprintf(dir, dirlen, "." HTTP_UNIX_PRIVATE);
    struct sockaddr_un sa;
    return n > 0 && (size_t)n + sizeof(HTTP_UNIX_BOUND) <= sizeof(sa.sun_path) &&
           (size_t)n < dirlen;
}

int http_unix_listen(const char *path, mode_t mode, int backlog, int *fd, struct stat *st,
                     char *err, size_t errlen) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path))
        return errbuf_set(err, errlen, -ENAMETOOLONG,
                          "cannot listen on %s: a UNIX socket path has at most %zu bytes", path,
                          sizeof(sa.sun_path) - 1);
    char dir[sizeof(sa.sun_path) + sizeof(HTTP_UNIX_PRIVATE)];
    if (!http_unix_template(path, dir, sizeof(dir)))
        return errbuf_set(err, errlen, -ENAMETOOLONG,
                          "cannot listen on %s: the socket is made first in a private directory "
                          "beside it (%s" HTTP_UNIX_BOUND "), which needs a path of at most %zu "
                          "bytes; give a shorter path",
                          path, dir, sizeof(sa.sun_path) - 1);
    if (!mkdtemp(dir)) /* mode 0700 */
        return errbuf_set(err, errlen, -errno, "cannot listen on %s: cannot make %s: %s", path, dir,
                          strerror(errno));
    size_t dl = strlen(dir); /* the template said it fits */
    memcpy(sa.sun_path, dir, dl);
    memcpy(sa.sun_path + dl, HTTP_UNIX_BOUND, sizeof(HTTP_UNIX_BOUND));
    int rc = 0, s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        rc = -errno;
    else if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        rc = -errno;
    else {
        /* link: never over anything that appeared at path meanwhile */
        if (chmod(sa.sun_path, mode) != 0 || listen(s, backlog) != 0 ||
            stat(sa.sun_path, st) != 0 || link(sa.sun_path, path) != 0)
            rc = -errno;
        unlink(sa.sun_path);
    }
    rmdir(dir);
    if (rc == 0) {
        *fd = s;
        return 0;
    }
    if (s >= 0)
        close(s);
    if (rc == -EEXIST)
        return errbuf_set(err, errlen, rc,
                          "cannot listen on %s: something appeared there meanwhile (not "
                          "replacing it)",
                          path);
    return errbuf_set(err, errlen, rc, "cannot listen on %s: %s", path, strerror(-rc));
}
