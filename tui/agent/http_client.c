/* The attach client over libcurl's multi interface: a transfer moves only while a reader waits
 * for it (curl_multi_perform, then curl_multi_poll until the reader's deadline), its callbacks
 * feed an http_recv, and a flag with curl_multi_wakeup cuts a wait short from another thread. */
#include "tui/agent/http_client.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "tui/agent/http_libs.h"
#include "tui/agent/http_recv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RS_VERSION
#define RS_VERSION "dev"
#endif

#define HTTP_URL_MAX     1024
#define HTTP_POLL_MAX_MS 60000 /* a wait without a deadline, between looks at the flag */

_Static_assert(HTTP_HEAD_LINE_MAX == CURL_MAX_HTTP_HEADER, "libcurl's longest head line");

struct http_conn {
    CURLM *multi;
    CURL *easy;
    struct curl_slist *headers;
    int timeout_ms;
    const struct http_url *u; /* the caller's, during http_request only */
    struct http_recv rx;
    uint64_t got; /* bytes through the callbacks */
    bool done;    /* the transfer ended, with result */
    CURLcode result;
    int rx_rc; /* a callback refused the answer: this, with rx_why */
    char rx_why[160];
    atomic_bool stop;       /* http_conn_shutdown was called */
    char where[300];        /* "host:port" or the socket path */
    char url[HTTP_URL_MAX]; /* the request's URL without its query, for messages */
    char curl_why[CURL_ERROR_SIZE];
};

/* ---- libcurl, once per process ---- */

/* At the first request: remote_open's, made before attach starts any thread (and libcurl 7.84
 * and later make curl_global_init safe among threads anyway). */

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_global_rc;

static void http_global_init(void) {
    http_global_rc = curl_fn.curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- the callbacks ---- */

static size_t http_on_head(char *p, size_t size, size_t n, void *arg) {
    struct http_conn *c = arg;
    n *= size;
    c->got += n;
    c->rx_rc = http_recv_head(&c->rx, p, n, c->rx_why, sizeof(c->rx_why));
    return c->rx_rc == 0 ? n : 0; /* 0: the transfer fails */
}

static size_t http_on_body(char *p, size_t size, size_t n, void *arg) {
    struct http_conn *c = arg;
    n *= size;
    c->got += n;
    c->rx_rc = http_recv_body(&c->rx, p, n);
    if (c->rx_rc != 0)
        snprintf(c->rx_why, sizeof(c->rx_why), "out of memory");
    return c->rx_rc == 0 ? n : 0;
}

/* ---- driving the transfer ---- */

static uint64_t http_deadline(int timeout_ms) {
    return timeout_ms > 0 ? mono_now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
}

static void http_reap(struct http_conn *c) {
    CURLMsg *m;
    int left;
    while ((m = curl_fn.curl_multi_info_read(c->multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE) {
            c->done = true;
            c->result = m->data.result;
            c->rx.ended = c->result == CURLE_OK;
        }
}

/* Move the transfer on until bytes came, it ended, deadline (ns, 0 = none) passed or it was
 * shut: 0, -ETIMEDOUT, -ECANCELED, or -EIO when libcurl fails. */
static int http_pump(struct http_conn *c, uint64_t deadline) {
    uint64_t before = c->got;
    for (;;) {
        if (atomic_load(&c->stop))
            return -ECANCELED;
        int running = 0;
        if (curl_fn.curl_multi_perform(c->multi, &running) != CURLM_OK)
            return -EIO;
        http_reap(c);
        if (c->got != before || c->done)
            return 0;
        int ms = HTTP_POLL_MAX_MS;
        if (deadline) {
            uint64_t now = mono_now_ns();
            if (now >= deadline)
                return -ETIMEDOUT;
            uint64_t left_ms = (deadline - now + 999999) / 1000000;
            ms = left_ms < (uint64_t)ms ? (int)left_ms : ms;
        }
        if (curl_fn.curl_multi_poll(c->multi, NULL, 0, ms, NULL) != CURLM_OK)
            return -EIO;
    }
}

/* The system's errno for a transfer that failed (-EIO when libcurl has none). */
static int http_os_errno(struct http_conn *c) {
    long e = 0;
    if (curl_fn.curl_easy_getinfo(c->easy, CURLINFO_OS_ERRNO, &e) != CURLE_OK || e <= 0)
        return c->result == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
    return (int)-e;
}

/* How the ended transfer went, for a reader: 0, or -errno. */
static int http_end_rc(struct http_conn *c) {
    if (c->rx_rc != 0)
        return c->rx_rc;
    return c->result == CURLE_OK ? 0 : http_os_errno(c);
}

/* libcurl's words for what failed. */
static const char *http_curl_why(const struct http_conn *c) {
    return c->curl_why[0] ? c->curl_why : curl_fn.curl_easy_strerror(c->result);
}

/* ---- the request ---- */

/* Nothing that would end a header line or split the request line. */
static bool http_clean(const char *s, bool spaces) {
    for (; *s; s++)
        if ((unsigned char)*s < ' ' || *s == 0x7f || (!spaces && *s == ' '))
            return false;
    return true;
}

/* Add the header prefix + value ("Content-Type:" alone: the one libcurl would add is left out). */
static bool http_add_header(struct http_conn *c, const char *prefix, const char *value) {
    size_t n = strlen(prefix) + strlen(value) + 1;
    char *h = malloc(n);
    struct curl_slist *l = NULL;
    if (h) {
        snprintf(h, n, "%s%s", prefix, value);
        l = curl_fn.curl_slist_append(c->headers, h); /* a copy */
        free(h);
    }
    if (l)
        c->headers = l;
    return l != NULL;
}

/* The options of the request; false when libcurl refused one (or out of memory). */
static bool http_setup(struct http_conn *c, const struct http_url *u, const char *method,
                       const char *full_url, const char *accept, const char *token,
                       const char *cacert) {
    CURL *e = c->easy;
    bool ok = (!accept || http_add_header(c, "Accept: ", accept)) &&
              (!token[0] || http_add_header(c, "Authorization: Bearer ", token));
    ok = ok && (strcmp(method, "POST") != 0 || http_add_header(c, "Content-Type:", ""));
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_URL, full_url) == CURLE_OK;
    ok = ok && (!u->unix_path[0] ||
                curl_fn.curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, u->unix_path) == CURLE_OK);
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_0) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_USERAGENT, "ringside/" RS_VERSION) == CURLE_OK;
    ok = ok &&
         curl_fn.curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK; /* none, whatever the env */
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->curl_why) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_on_head) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_HEADERDATA, c) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_on_body) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_WRITEDATA, c) == CURLE_OK;
    if (strcmp(method, "POST") == 0) /* an empty body, with its Content-Length: 0 */
        ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_POSTFIELDS, "") == CURLE_OK &&
             curl_fn.curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L) == CURLE_OK;
    else if (strcmp(method, "GET") != 0)
        ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) == CURLE_OK;
    if (c->timeout_ms > 0)
        ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms) ==
                       CURLE_OK;
    if (!u->tls)
        return ok;
    /* the peer's certificate and name verified (libcurl's defaults, said here), TLS 1.2 on */
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK;
    ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK;
    ok = ok &&
         curl_fn.curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) == CURLE_OK;
    if (cacert && cacert[0]) /* that file's CAs only, not the system's as well */
        ok = ok && curl_fn.curl_easy_setopt(e, CURLOPT_CAINFO, cacert) == CURLE_OK &&
             curl_fn.curl_easy_setopt(e, CURLOPT_CAPATH, NULL) == CURLE_OK;
    return ok;
}

/* Why a transfer ended before its answer's head: -errno with why. */
static int http_fail(struct http_conn *c, const char *cacert, char *why, size_t whylen) {
    const char *w = c->where, *url = c->url;
    switch (c->rx_rc ? CURLE_WRITE_ERROR : c->result) {
    case CURLE_WRITE_ERROR:
        return errbuf_set(why, whylen, c->rx_rc ? c->rx_rc : -EIO, "%s: %s", w,
                          c->rx_rc ? c->rx_why : http_curl_why(c));
    case CURLE_COULDNT_RESOLVE_HOST:
        return errbuf_set(why, whylen, -EHOSTUNREACH, "cannot resolve '%s'", c->u->host);
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT: { /* CONNECTTIMEOUT: the only limit libcurl is given */
        int rc = c->result == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : http_os_errno(c);
        return errbuf_set(why, whylen, rc, "cannot connect to %s: %s", w,
                          rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
    }
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS:
        return errbuf_set(why, whylen, HTTP_E_CERT,
                          "%s: the server's certificate is not trusted (%s)", url,
                          http_curl_why(c));
    case CURLE_SSL_CACERT_BADFILE:
        return errbuf_set(why, whylen, -EINVAL, "%s: cannot load the CA certificates of %s (%s)",
                          url, cacert && cacert[0] ? cacert : "the system", http_curl_why(c));
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
        return errbuf_set(why, whylen, -EPROTO,
                          "%s: the TLS handshake failed (%s): is the agent serving https://?", url,
                          http_curl_why(c));
    case CURLE_UNSUPPORTED_PROTOCOL: /* HTTP/0.9: not an answer's status line */
    case CURLE_WEIRD_SERVER_REPLY:
        return errbuf_set(why, whylen, -EPROTO, "%s: not an HTTP response", w);
    case CURLE_GOT_NOTHING:
        return errbuf_set(why, whylen, -EPROTO, "%s: the connection closed without an answer", w);
    default:
        return errbuf_set(why, whylen, http_os_errno(c), "%s: %s", w, http_curl_why(c));
    }
}

/* The deadline passed before the answer's head: -ETIMEDOUT with what was waited for. */
static int http_timed_out(struct http_conn *c, char *why, size_t whylen) {
    long sent = 0;
    curl_off_t connected = 0;
    curl_fn.curl_easy_getinfo(c->easy, CURLINFO_REQUEST_SIZE, &sent);
    curl_fn.curl_easy_getinfo(c->easy, CURLINFO_CONNECT_TIME_T, &connected);
    if (sent > 0)
        return errbuf_set(why, whylen, -ETIMEDOUT,
                          "%s: timed out waiting for the answer (none in %.1f s)", c->where,
                          c->timeout_ms / 1e3);
    if (c->u->tls && connected > 0)
        return errbuf_set(why, whylen, -ETIMEDOUT,
                          "%s: timed out in the TLS handshake (%.1f s): is the agent serving "
                          "https://?",
                          c->url, c->timeout_ms / 1e3);
    return errbuf_set(why, whylen, -ETIMEDOUT, "cannot connect to %s: timed out", c->where);
}

/* Send the request and read the answer's head by deadline: 0, or -errno with why. */
static int http_run_head(struct http_conn *c, const char *cacert, char *why, size_t whylen) {
    uint64_t deadline = http_deadline(c->timeout_ms);
    int rc = 0;
    while (!c->rx.head_done && !c->done && rc == 0)
        rc = http_pump(c, deadline);
    if (c->rx.head_done && !c->rx_rc)
        return 0;
    if (rc == -ETIMEDOUT)
        return http_timed_out(c, why, whylen);
    if (rc != 0)
        return errbuf_set(why, whylen, rc, "%s: %s", c->where, strerror(-rc));
    if (c->result == CURLE_OK && !c->rx_rc) /* ended without a head: nothing libcurl lets by */
        return errbuf_set(why, whylen, -EPROTO, "%s: not an HTTP response", c->where);
    return http_fail(c, cacert, why, whylen);
}

/* A connection for the request, its handles made: NULL when out of memory. */
static struct http_conn *http_conn_new(const struct http_url *u, int timeout_ms) {
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    http_recv_init(&c->rx);
    atomic_init(&c->stop, false);
    c->u = u;
    c->timeout_ms = timeout_ms;
    c->easy = curl_fn.curl_easy_init();
    c->multi = curl_fn.curl_multi_init();
    if (!c->easy || !c->multi) {
        http_close(c);
        return NULL;
    }
    return c;
}

/* "scheme://host:port/base/path?query" (http://localhost/path?query for a unix: URL) into out:
 * false when it does not fit. */
static bool http_full_url(const struct http_url *u, const char *path_query, char *out, size_t n) {
    int len = u->unix_path[0]
                  ? snprintf(out, n, "http://localhost%s", path_query)
                  : snprintf(out, n, strchr(u->host, ':') ? "%s://[%s]:%u%s%s" : "%s://%s:%u%s%s",
                             u->tls ? "https" : "http", u->host, u->port, u->base, path_query);
    return len >= 0 && (size_t)len < n;
}

int http_request(struct http_conn **out, const struct http_url *u, const char *method,
                 const char *path_query, const char *accept, const char *token, const char *cacert,
                 int timeout_ms, int *status, char *why, size_t whylen) {
    char full[HTTP_URL_MAX];
    *out = NULL;
    *status = 0;
    token = token ? token : "";
    if (path_query[0] != '/' || !http_clean(path_query, false) || !http_clean(method, false) ||
        !http_clean(token, false) || (accept && !http_clean(accept, true)))
        return errbuf_set(why, whylen, -EINVAL, "a bad request: a control character or space");
    if (!http_full_url(u, path_query, full, sizeof(full)))
        return errbuf_set(why, whylen, -E2BIG, "the request's URL is over %d bytes", HTTP_URL_MAX);
    int rc = http_libs_client(why, whylen);
    if (rc != 0)
        return rc;
    pthread_once(&http_once, http_global_init);
    if (http_global_rc != CURLE_OK)
        return errbuf_set(why, whylen, -ENOMEM, "libcurl: %s",
                          curl_fn.curl_easy_strerror(http_global_rc));
    struct http_conn *c = http_conn_new(u, timeout_ms);
    if (!c)
        return errbuf_set(why, whylen, -ENOMEM, "out of memory");
    http_url_where(u, c->where, sizeof(c->where));
    snprintf(c->url, sizeof(c->url), "%.*s", (int)strcspn(full, "?"), full);
    if (!http_setup(c, u, method, full, accept, token, cacert) ||
        curl_fn.curl_multi_add_handle(c->multi, c->easy) != CURLM_OK) {
        http_close(c);
        return errbuf_set(why, whylen, -ENOMEM, "libcurl refused the request's options");
    }
    rc = http_run_head(c, cacert, why, whylen);
    if (rc != 0) {
        http_close(c);
        return rc;
    }
    long code = 0;
    curl_fn.curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code);
    c->u = NULL;
    *status = (int)code;
    *out = c;
    return 0;
}

/* ---- reading the body ---- */

int http_read_line(struct http_conn *c, const char **line, size_t *len, size_t max_line) {
    for (;;) {
        int rc = http_recv_line(&c->rx, line, len, max_line);
        if (rc != 0)
            return rc;
        if (c->done)
            return http_end_rc(c);
        if ((rc = http_pump(c, http_deadline(c->timeout_ms))) != 0)
            return rc;
    }
}

int http_read_body(struct http_conn *c, char **out, size_t *len, size_t max) {
    *out = NULL;
    *len = 0;
    while (!c->done) {
        if (http_recv_held(&c->rx) > max)
            return -E2BIG;
        int rc = http_pump(c, http_deadline(c->timeout_ms));
        if (rc != 0)
            return rc;
    }
    int rc = http_end_rc(c);
    return rc != 0 ? rc : http_recv_take(&c->rx, out, len, max);
}

void http_conn_shutdown(struct http_conn *c) {
    if (!c)
        return;
    atomic_store(&c->stop, true);
    curl_fn.curl_multi_wakeup(c->multi);
}

void http_close(struct http_conn *c) {
    if (!c)
        return;
    if (c->multi && c->easy)
        curl_fn.curl_multi_remove_handle(c->multi, c->easy);
    if (c->easy)
        curl_fn.curl_easy_cleanup(c->easy);
    if (c->multi)
        curl_fn.curl_multi_cleanup(c->multi);
    curl_fn.curl_slist_free_all(c->headers);
    http_recv_fini(&c->rx);
    free(c);
}

const char *http_head_too_long(const char *why) {
    static const CURLcode big[] = {
        CURLE_OUT_OF_MEMORY,
#if LIBCURL_VERSION_NUM >= 0x080600
        CURLE_TOO_LARGE,
#endif
    };
    if (http_libs_client(NULL, 0) != 0) /* no libcurl: no request got as far as its words */
        return NULL;
    for (size_t k = 0; k < sizeof(big) / sizeof(big[0]); k++)
        if (errbuf_ends_with(why, curl_fn.curl_easy_strerror(big[k])))
            return curl_fn.curl_easy_strerror(big[k]);
    return NULL;
}
