/* Inside the agent's HTTP server: its state, shared by the start and stop of its daemons
 * (agent_http.c), its listening sockets (agent_http_listen.c) and its requests
 * (agent_http_route.c). */
#ifndef RINGSIDE_TUI_AGENT_AGENT_HTTP_INTERNAL_H
#define RINGSIDE_TUI_AGENT_AGENT_HTTP_INTERNAL_H

#include "tui/agent/agent_http.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define HTTP_BEARER "Bearer "

struct agent_http {
    struct agent_http_conf conf;
    struct agent_http_handlers h;
    char bearer[sizeof(HTTP_BEARER) + AGENT_HTTP_TOKEN_BYTES]; /* the Authorization to match */
    struct MHD_Daemon *tcp, *unix_d;
    struct http_guard *guard; /* the request deadline and the connection limits */
    unsigned port;
    bool unix_made; /* unix_path is ours to remove at stop (unix_dev/ino: the one we made) */
    dev_t unix_dev;
    ino_t unix_ino;
    int keepalive_ms; /* an /events stream's blank line after this long without data */
    atomic_bool stopping;
    atomic_uint_fast64_t requests, answered, unauthorized, refused;
    atomic_uint connections, followers;
};

/* A listening TCP socket on spec (the listen option's "ADDR:PORT"): *out, the port it got (the
 * chosen one for port 0) and whether it is IPv6. 0, or -errno with err ("cannot listen on
 * SPEC: ..."). */
int agent_http_tcp_listen(const char *spec, int *out, unsigned *port, bool *v6, char *err,
                          size_t errlen);

/* A listening UNIX socket at path, mode 0660 from the moment it exists (http_unix.h; a stale
 * socket there is replaced, anything else is not): *out, and s->unix_made, unix_dev and unix_ino
 * set for agent_http_unix_remove. 0, or -errno with err. */
int agent_http_unix_listen(struct agent_http *s, const char *path, int *out, char *err,
                           size_t errlen);

/* Remove the UNIX socket agent_http_unix_listen made, if it is still the one at the path. */
void agent_http_unix_remove(const struct agent_http *s);

/* MHD's access handler (cls: the server): each call of each request, on its connection's
 * thread; routes it, checks it, answers it. */
enum MHD_Result agent_http_access(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls);

/* MHD_OPTION_NOTIFY_COMPLETED (cls: the server): a request ended; its state is freed, and on a
 * connection kept alive the deadline runs again for the next request. */
void agent_http_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                          enum MHD_RequestTerminationCode toe);

#endif
