/* Inside the agent's HTTP server: its state, shared by the start and stop of its daemons
 * (agent_http.c), its listening sockets (agent_http_listen.c) and its requests
 * (agent_http_route.c). */
#ifndef RINGSIDE_TUI_AGENT_AGENT_HTTP_INTERNAL_H
#define RINGSIDE_TUI_AGENT_AGENT_HTTP_INTERNAL_H

#include "tui/agent/agent_http.h"
#include "tui/agent/agent_http_parse.h"
#include "tui/agent/http_addr.h"
#include "tui/agent/http_libs.h"
#include "tui/agent/http_ratelog.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define HTTP_BEARER  "Bearer "
#define HTTP_SAY_NS  10000000000ull /* a refusal's log line at most this often */
#define HTTP_RETRY_S 10             /* Retry-After of a refused follower */

enum http_route { HTTP_NONE, HTTP_METRICS, HTTP_EVENTS, HTTP_HEALTHZ, HTTP_CONTROL };

/* One request's state (MHD's per-request pointer): made when its target arrives
 * (agent_http_uri; else at its first call), freed when it completes. */
struct http_req {
    enum http_route route;
    enum http_target target; /* what its target says (agent_http_parse.h) */
    unsigned args;           /* its query's arguments */
    bool begun;              /* the access handler has seen it */
    bool head;               /* HEAD: the headers of the GET */
    bool answered;           /* a response is queued */
    unsigned retry_s;        /* the answer's Retry-After (0: none); the connection then closes */
    uint64_t body;           /* bytes of body seen */
};

struct agent_http {
    struct agent_http_conf conf;
    struct agent_http_handlers h;
    char bearer[sizeof(HTTP_BEARER) + AGENT_HTTP_TOKEN_BYTES]; /* the Authorization to match */
    struct MHD_Daemon *tcp, *unix_d;
    struct http_guard *guard;       /* the request deadline and the connection limits */
    struct http_quota *followers_q; /* the /events streams' places */
    struct http_throttle *auth;     /* wrong tokens, by address group */
    struct http_ratelog said_followers, said_auth; /* their log lines */
    unsigned max_followers, followers_per_address; /* as agent_http_limits says */
    unsigned port;
    bool unix_made; /* unix_path is ours to remove at stop (unix_dev/ino: the one we made) */
    dev_t unix_dev;
    ino_t unix_ino;
    int keepalive_ms; /* an /events stream's blank line after this long without data */
    atomic_bool stopping;
    atomic_uint_fast64_t requests, answered, unauthorized, refused;
    atomic_uint_fast64_t over_followers, over_follower_address, auth_failed, auth_backoff;
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

/* ---- the checks before a request's route (agent_http_admit.c) ---- */

/* c's client address as libmicrohttpd holds it (the connection's) and its length in *len: 0
 * with NULL, or for a family other than IPv4 and IPv6 (a UNIX socket's). */
const struct sockaddr *agent_http_peer(struct MHD_Connection *c, socklen_t *len);

/* The group of c's client (http_addr.h): true with *a, false for a UNIX socket's. */
bool agent_http_client(struct MHD_Connection *c, struct http_addr *a);

/* The request's form: 0 when it passes, else the status with why (one line): 400 for a path
 * with %00, two Host headers or a Host that is not host[:port]; 414 for a query of more than
 * AGENT_HTTP_MAX_ARGS arguments. */
unsigned agent_http_form(struct MHD_Connection *c, const struct http_req *r, char *why, size_t n);

/* The token (with one configured; 0 without): 0 when the request carries it; 429 with
 * r->retry_s when c's address group is held off (the token not looked at), 401 otherwise.
 * Wrong tokens are counted, held against the group (http_throttle.h) and logged (rate-limited);
 * the right one clears the group. */
unsigned agent_http_auth(struct agent_http *s, struct MHD_Connection *c, struct http_req *r,
                         char *why, size_t n);

/* A follower's place for a client of group a (NULL: none): 0 when taken (give it back with
 * agent_http_follower_give), else 503 (every place taken) or 429 (the group's share taken) with
 * r->retry_s and why, counted and logged (rate-limited). */
unsigned agent_http_follower_take(struct agent_http *s, const struct http_addr *a,
                                  struct http_req *r, char *why, size_t n);
void agent_http_follower_give(struct agent_http *s, const struct http_addr *a);

/* At the stop: a last line for the refusals and wrong tokens not yet in one. */
void agent_http_say_rest(struct agent_http *s);

/* MHD_OPTION_URI_LOG_CALLBACK (cls: the server): the request target as it came, before the
 * library splits and decodes it; the request's state (MHD's per-request pointer) is made here,
 * with the target's verdict (agent_http_parse.h). A query of more arguments than the agent
 * reads is cut short in place (the library would run out of its per-connection memory storing
 * them and close the connection without an answer); the request is then answered 414. */
void *agent_http_uri(void *cls, const char *uri, struct MHD_Connection *c);

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
