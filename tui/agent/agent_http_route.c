/* The agent's requests (see agent_http.h): each routed, checked (its form, Host, token, method,
 * size: agent_http_admit.c for the first three) and answered on its connection's thread;
 * /events streams from the log, each holding a follower's place. */
#include "backend/core/mono.h"
#include "tui/agent/agent_http_internal.h"
#include "tui/agent/agent_http_parse.h"
#include "tui/agent/http_guard.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_BLOCK          (64 * 1024) /* an /events response's buffer */
#define HTTP_WAIT_MS        1000        /* an /events wait, between looks at stopping */
#define HTTP_CT_TEXT        "text/plain; charset=utf-8"
#define HTTP_CT_PROM        "text/plain; version=0.0.4; charset=utf-8"
#define HTTP_CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define HTTP_CT_NDJSON      "application/x-ndjson"
#define HTTP_CT_JSON        "application/json"

/* One /events response's state, freed with the response. */
struct http_stream {
    struct agent_http *s;
    struct agent_follow *f;
    bool follow;
    bool has_addr; /* its follower place was taken for addr (else for no address) */
    struct http_addr addr;
};

/* ---- responses ---- */

static enum http_route http_route_of(const char *url) {
    static const struct {
        const char *path;
        enum http_route route;
    } routes[] = {{"/metrics", HTTP_METRICS},
                  {"/events", HTTP_EVENTS},
                  {"/healthz", HTTP_HEALTHZ},
                  {"/control", HTTP_CONTROL}};
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        if (strcmp(url, routes[i].path) == 0)
            return routes[i].route;
    return HTTP_NONE;
}

/* The connection's guard record (set when it opened), or NULL. */
static struct http_guard_conn *http_guard_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        mhd_fn.MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The request is answered: it arrived in time, and its deadline no longer runs. */
static void http_request_arrived(struct agent_http *s, struct MHD_Connection *c) {
    http_guard_done(s->guard, http_guard_of(c));
}

/* Queue resp (released here) with the content type and the headers every answer has; counted
 * (a refusal that MHD could not send, as when a body runs over the limit part-way, closes the
 * connection: refused all the same). */
static enum MHD_Result http_queue(struct agent_http *s, struct MHD_Connection *c,
                                  struct http_req *r, unsigned status, struct MHD_Response *resp,
                                  const char *ctype) {
    http_request_arrived(s, c);
    if (!resp)
        return MHD_NO;
    mhd_fn.MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    mhd_fn.MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    mhd_fn.MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (status == MHD_HTTP_UNAUTHORIZED)
        mhd_fn.MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                       "Bearer realm=\"ringside\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        mhd_fn.MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                       r->route == HTTP_CONTROL ? "POST" : "GET, HEAD");
    if (r->retry_s > 0) { /* a refusal by a limit: its place is freed at once */
        char retry[24];
        snprintf(retry, sizeof(retry), "%u", r->retry_s);
        mhd_fn.MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry);
        mhd_fn.MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    enum MHD_Result ok = mhd_fn.MHD_queue_response(c, status, resp);
    mhd_fn.MHD_destroy_response(resp);
    r->answered = true;
    if (ok == MHD_YES)
        atomic_fetch_add(&s->requests, 1);
    if (ok == MHD_YES && status < 400)
        atomic_fetch_add(&s->answered, 1);
    if (status == MHD_HTTP_UNAUTHORIZED)
        atomic_fetch_add(&s->unauthorized, 1);
    else if (status >= 400 && status < 500)
        atomic_fetch_add(&s->refused, 1);
    return ok;
}

static struct MHD_Response *http_copy(const char *text, size_t len) {
    return mhd_fn.MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
}

/* {"ok":true,"message":text} or {"ok":false,"error":text}, and a newline. */
static struct MHD_Response *http_json(bool ok, const char *text) {
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "ok", json_object_new_boolean(ok));
    json_object_object_add(o, ok ? "message" : "error", json_object_new_string(text));
    size_t len;
    const char *j = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    struct MHD_Response *resp = NULL;
    char *body = j ? malloc(len + 1) : NULL;
    if (body) {
        memcpy(body, j, len);
        body[len] = '\n';
        resp = mhd_fn.MHD_create_response_from_buffer(len + 1, body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(body);
    }
    json_object_put(o);
    return resp;
}

/* A refusal: a line of text, or the JSON error on /control. */
static enum MHD_Result http_refuse(struct agent_http *s, struct MHD_Connection *c,
                                   struct http_req *r, unsigned status, const char *msg) {
    if (r->route == HTTP_CONTROL)
        return http_queue(s, c, r, status, http_json(false, msg), HTTP_CT_JSON);
    char line[512];
    int n = snprintf(line, sizeof(line), "%s\n", msg);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
    return http_queue(s, c, r, status, http_copy(line, len), HTTP_CT_TEXT);
}

/* ---- checks ---- */

static bool http_method_ok(enum http_route route, const char *method) {
    if (route == HTTP_CONTROL)
        return strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* Without a token, a browser page of another site could read a loopback agent's /events through
 * a DNS name it points here (DNS rebinding): over TCP, /events and /control then answer only a
 * request that names the agent by address (/metrics and /healthz, which tell nothing of the
 * run's content, still answer scrapers and health checks that use a name). */
static bool http_host_ok(const struct agent_http *s, struct MHD_Connection *c) {
    if (s->conf.token[0])
        return true;
    const union MHD_ConnectionInfo *ci =
        mhd_fn.MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
    if (ci && ci->daemon == s->unix_d)
        return true; /* a UNIX socket: no browser gets there */
    const char *host = mhd_fn.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    return !host || http_host_is_address(host);
}

/* The first call of a request (headers read): the refusals that need no body. MHD_YES to go on
 * to the body and the answer. */
static enum MHD_Result http_begin(struct agent_http *s, struct MHD_Connection *c,
                                  struct http_req *r, const char *method) {
    char why[256];
    unsigned status = agent_http_form(c, r, why, sizeof(why));
    if (status)
        return http_refuse(s, c, r, status, why);
    if ((r->route == HTTP_EVENTS || r->route == HTTP_CONTROL) && !http_host_ok(s, c))
        return http_refuse(s, c, r, MHD_HTTP_MISDIRECTED_REQUEST,
                           "misdirected: without a token the agent serves /events only to "
                           "requests that name it by address (an IP or localhost), not by a DNS "
                           "name; use the address, or start the agent with --token-file");
    if (r->route != HTTP_METRICS && (status = agent_http_auth(s, c, r, why, sizeof(why))))
        return http_refuse(s, c, r, status, why);
    if (r->route == HTTP_NONE)
        return http_refuse(s, c, r, MHD_HTTP_NOT_FOUND,
                           "not found: the agent serves /metrics, /events, /healthz and /control");
    if (!http_method_ok(r->route, method))
        return http_refuse(s, c, r, MHD_HTTP_METHOD_NOT_ALLOWED,
                           r->route == HTTP_CONTROL ? "method not allowed: POST only"
                                                    : "method not allowed: GET or HEAD only");
    if (r->route == HTTP_CONTROL && (!s->conf.allow_control || !s->h.control))
        return http_refuse(s, c, r, MHD_HTTP_FORBIDDEN,
                           "control is off: start the agent with --allow-control and --token-file");
    const char *cl =
        mhd_fn.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t len;
    if (cl && (!http_parse_u64(cl, &len) || len > s->conf.max_request_bytes))
        return http_refuse(s, c, r, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
    return MHD_YES;
}

/* ---- routes ---- */

static enum MHD_Result http_metrics(struct agent_http *s, struct MHD_Connection *c,
                                    struct http_req *r) {
    if (!s->h.metrics)
        return http_refuse(s, c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "no metrics here");
    const char *accept =
        mhd_fn.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    bool om = accept && strstr(accept, "application/openmetrics-text");
    char *text = NULL;
    size_t len = 0;
    int rc = s->h.metrics(s->h.ctx, om, &text, &len);
    if (rc < 0) {
        free(text);
        char msg[160];
        snprintf(msg, sizeof(msg), "cannot write the metrics: %s", strerror(-rc));
        return http_refuse(s, c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
    }
    struct MHD_Response *resp =
        mhd_fn.MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text);
    return http_queue(s, c, r, MHD_HTTP_OK, resp, om ? HTTP_CT_OPENMETRICS : HTTP_CT_PROM);
}

static enum MHD_Result http_healthz(struct agent_http *s, struct MHD_Connection *c,
                                    struct http_req *r) {
    char why[512] = "ok";
    bool ok = !s->h.health || s->h.health(s->h.ctx, why, sizeof(why) - 1);
    why[sizeof(why) - 2] = '\0';
    size_t n = strlen(why);
    why[n++] = '\n';
    return http_queue(s, c, r, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, http_copy(why, n),
                      HTTP_CT_TEXT);
}

/* The stream's next bytes: what the log has, a blank line after a quiet spell, or the end (the
 * log closed and read, follow=0 and nothing pending, the server stopping). */
static ssize_t http_stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    struct http_stream *st = cls;
    if (!st->follow) {
        long n = agent_follow_read(st->f, buf, max, 0);
        return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
    }
    int keepalive_ms = st->s->keepalive_ms;
    uint64_t quiet_until = mono_now_ns() + (uint64_t)keepalive_ms * 1000000u;
    for (;;) {
        if (atomic_load(&st->s->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        long n = agent_follow_read(st->f, buf, max,
                                   keepalive_ms < HTTP_WAIT_MS ? keepalive_ms : HTTP_WAIT_MS);
        if (n > 0)
            return (ssize_t)n;
        if (n < 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (mono_now_ns() >= quiet_until) {
            buf[0] = '\n';
            return 1;
        }
    }
}

static void http_stream_free(void *cls) {
    struct http_stream *st = cls;
    /* the place first: once the count says a follower left, its place is free */
    agent_http_follower_give(st->s, st->has_addr ? &st->addr : NULL);
    atomic_fetch_sub(&st->s->followers, 1); /* before the log's: the count agrees with it */
    agent_follow_close(st->f);
    free(st);
}

static enum MHD_Result http_events(struct agent_http *s, struct MHD_Connection *c,
                                   struct http_req *r) {
    const char *since_s = mhd_fn.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
    const char *follow_s = mhd_fn.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
    uint64_t since = 0;
    if (since_s && !http_parse_u64(since_s, &since))
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST,
                           "bad since: give the last event number seen (a decimal number)");
    if (follow_s && strcmp(follow_s, "0") != 0 && strcmp(follow_s, "1") != 0)
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST, "bad follow: give 0 or 1");
    if (!s->h.log)
        return http_refuse(s, c, r, MHD_HTTP_SERVICE_UNAVAILABLE, "no events here");
    if (r->head)
        return http_queue(s, c, r, MHD_HTTP_OK, http_copy("", 0), HTTP_CT_NDJSON);
    struct http_addr addr;
    bool has_addr = agent_http_client(c, &addr);
    char why[256];
    unsigned status = agent_http_follower_take(s, has_addr ? &addr : NULL, r, why, sizeof(why));
    if (status)
        return http_refuse(s, c, r, status, why);
    struct http_stream *st = calloc(1, sizeof(*st));
    if (st && agent_follow_open(&st->f, s->h.log, since) < 0) {
        free(st);
        st = NULL;
    }
    if (!st) {
        agent_http_follower_give(s, has_addr ? &addr : NULL);
        return MHD_NO;
    }
    st->has_addr = has_addr;
    st->addr = addr;
    st->s = s;
    st->follow = !follow_s || strcmp(follow_s, "1") == 0;
    atomic_fetch_add(&s->followers, 1);
    struct MHD_Response *resp = mhd_fn.MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, HTTP_BLOCK, http_stream_read, st, http_stream_free);
    if (!resp)
        http_stream_free(st);
    return http_queue(s, c, r, MHD_HTTP_OK, resp, HTTP_CT_NDJSON);
}

static enum MHD_Result http_control(struct agent_http *s, struct MHD_Connection *c,
                                    struct http_req *r) {
    const char *name = mhd_fn.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "cmd");
    const char *arg_s = mhd_fn.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "arg");
    char msg[512];
    int64_t arg = 0;
    int cmd = http_cmd_of(name, msg, sizeof(msg));
    if (cmd < 0 || !http_cmd_arg((unsigned)cmd, arg_s, &arg, msg, sizeof(msg)))
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST, msg);
    msg[0] = '\0';
    int rc = s->h.control(s->h.ctx, (enum ev_cmd_id)cmd, arg, msg, sizeof(msg));
    if (rc < 0 && !msg[0])
        snprintf(msg, sizeof(msg), "%s: %s", ev_cmd_name((unsigned)cmd), strerror(-rc));
    else if (rc == 0 && !msg[0])
        snprintf(msg, sizeof(msg), "%s: done", ev_cmd_name((unsigned)cmd));
    unsigned status = rc == 0         ? MHD_HTTP_OK
                      : rc == -EINVAL ? MHD_HTTP_BAD_REQUEST
                                      : MHD_HTTP_CONFLICT;
    return http_queue(s, c, r, status, http_json(rc == 0, msg), HTTP_CT_JSON);
}

/* A query argument whose decoded value holds a NUL (%00): C strings would cut it short. */
static enum MHD_Result http_nul_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t key_size, const char *value, size_t value_size) {
    (void)kind;
    bool *bad = cls;
    if (strlen(key) != key_size || (value && strlen(value) != value_size))
        *bad = true;
    return MHD_YES;
}

static enum MHD_Result http_serve(struct agent_http *s, struct MHD_Connection *c,
                                  struct http_req *r) {
    bool nul = false;
    mhd_fn.MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, http_nul_arg, &nul);
    if (nul)
        return http_refuse(s, c, r, MHD_HTTP_BAD_REQUEST,
                           "a query argument holds a NUL byte (%00): refused rather than cut");
    switch (r->route) {
    case HTTP_METRICS:
        return http_metrics(s, c, r);
    case HTTP_EVENTS:
        return http_events(s, c, r);
    case HTTP_HEALTHZ:
        return http_healthz(s, c, r);
    case HTTP_CONTROL:
        return http_control(s, c, r);
    case HTTP_NONE:
        break;
    }
    return MHD_NO; /* refused in http_begin */
}

/* ---- MHD's request callbacks ---- */

void *agent_http_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)cls;
    (void)c;
    struct http_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL; /* made at the first call instead, without the target's verdict */
    r->target = http_target_check(uri, AGENT_HTTP_MAX_ARGS, &r->args);
    /* Both libmicrohttpd 0.9 and 1.0 call this on the request line in their own buffer, before
     * they split the query at the '?' they found; a query ended right after it has no
     * arguments to store. The request itself is answered 414 from the verdict. */
    char *query = r->target == HTTP_TARGET_ARGS ? strchr(uri, '?') : NULL;
    if (query)
        query[1] = '\0';
    return r;
}

enum MHD_Result agent_http_access(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    struct agent_http *s = cls;
    struct http_req *r = *req_cls;
    if (!r || !r->begun) {
        if (!r && !(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        *req_cls = r;
        r->begun = true;
        r->route = http_route_of(url);
        r->head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
        return http_begin(s, c, r, method);
    }
    if (*upload_data_size > 0) { /* a body: counted, never looked at */
        r->body += *upload_data_size;
        *upload_data_size = 0;
        if (!r->answered && r->body > s->conf.max_request_bytes) /* no Content-Length */
            return http_refuse(s, c, r, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
        return MHD_YES;
    }
    if (r->answered)
        return MHD_YES;
    return http_serve(s, c, r);
}

void agent_http_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                          enum MHD_RequestTerminationCode toe) {
    struct agent_http *s = cls;
    free(*req_cls);
    *req_cls = NULL;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) /* kept alive: the next request's clock */
        http_guard_next(s->guard, http_guard_of(c));
}
