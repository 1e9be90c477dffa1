/* The attach client over https:// against a TLS server of the test's own (GnuTLS, the
 * certificate of tests/fixtures/tls for "localhost"): a stream followed when the CA given
 * vouches for the certificate and the name matches, and a refusal that names the URL, before
 * any request (and so the token) goes out, when no CA, another CA or another name is given. */
#include "backend/core/mono.h"
#include "tests/support/rs_test.h"
#include "tui/agent/http_client.h"
#include "tui/agent/remote.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define TT_WAIT_MS 5000 /* the longest any await here takes before the test fails */

/* The stream an agent sends: its run line, then the summary that ends the run. */
static const char tt_stream[] =
    "HTTP/1.0 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n"
    "{\"type\":\"run\",\"version\":1,\"ringside\":\"0.1.0\",\"host\":\"gpu-box\",\"backend\":"
    "\"cpu\",\"device\":\"CPU (test)\",\"arch\":\"x86_64\",\"devices\":1,\"start_ns\":1000000000,"
    "\"start_wall_ns\":1700000000000000000,\"epochs\":2,\"chunk\":250,\"config\":{}}\n"
    "{\"type\":\"summary\",\"state\":\"completed\",\"epochs\":2,\"steps\":40,\"train_loss\":0.5,"
    "\"val_loss\":0.25,\"best_val_loss\":0.2}\n";

/* One connection served over TLS: the handshake, the request head read, tt_stream sent. */
struct tt_server {
    int lfd;
    unsigned port;
    pthread_t thread;
    gnutls_certificate_credentials_t cred;
    char req[2048]; /* the request head, "" when none came */
    int handshake;  /* gnutls_handshake's result */
};

static struct tt_server tt;

/* The request head into tt.req (NUL-terminated), until its blank line or the client leaves. */
static void tt_read_request(gnutls_session_t s) {
    size_t n = 0;
    while (n + 1 < sizeof(tt.req) && !strstr(tt.req, "\r\n\r\n")) {
        ssize_t r = gnutls_record_recv(s, tt.req + n, sizeof(tt.req) - n - 1);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
            continue;
        if (r <= 0)
            return; /* the client refused the certificate and left, or closed */
        n += (size_t)r;
        tt.req[n] = '\0';
    }
}

static void *tt_serve(void *arg) {
    (void)arg;
    int fd = accept(tt.lfd, NULL, NULL);
    if (fd < 0)
        return NULL;                            /* shut down: the test is over */
    struct timeval tv = {TT_WAIT_MS / 1000, 0}; /* a client that stalls cannot hold the test */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    gnutls_session_t s;
    gnutls_init(&s, GNUTLS_SERVER);
    gnutls_set_default_priority(s);
    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, tt.cred);
    gnutls_transport_set_int(s, fd);
    do
        tt.handshake = gnutls_handshake(s);
    while (tt.handshake < 0 && !gnutls_error_is_fatal(tt.handshake));
    if (tt.handshake == 0) {
        tt_read_request(s);
        if (tt.req[0])
            gnutls_record_send(s, tt_stream, sizeof(tt_stream) - 1);
        gnutls_bye(s, GNUTLS_SHUT_WR);
    }
    gnutls_deinit(s);
    close(fd);
    return NULL;
}

static void tt_setup(void) {
    char cert[4200], key[4200];
    memset(&tt, 0, sizeof(tt));
    cr_assert_eq(gnutls_certificate_allocate_credentials(&tt.cred), 0);
    cr_assert_eq(gnutls_certificate_set_x509_key_file(
                     tt.cred, rs_test_fixture("tls/server.pem", cert, sizeof(cert)),
                     rs_test_fixture("tls/server.key", key, sizeof(key)), GNUTLS_X509_FMT_PEM),
                 0);
    tt.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    cr_assert_eq(bind(tt.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(tt.lfd, 4), 0);
    cr_assert_eq(getsockname(tt.lfd, (struct sockaddr *)&sa, &len), 0);
    tt.port = ntohs(sa.sin_port);
    cr_assert_eq(pthread_create(&tt.thread, NULL, tt_serve, NULL), 0);
}

static void tt_teardown(void) {
    shutdown(tt.lfd, SHUT_RDWR);
    pthread_join(tt.thread, NULL);
    close(tt.lfd);
    gnutls_certificate_free_credentials(tt.cred);
}

TestSuite(remote_tls, .init = tt_setup, .fini = tt_teardown, .timeout = 30);

/* remote_open on https://HOST:port with cacert (a fixture, or "" for the system's CAs) and a
 * token: its result, err filled, *out the source when it opened. */
static int tt_open(const char *host, const char *cacert, struct source **out, char *err,
                   size_t errlen) {
    struct remote_conf c;
    remote_conf_default(&c);
    snprintf(c.url, sizeof(c.url), "https://%s:%u", host, tt.port);
    snprintf(c.token, sizeof(c.token), "s3cret-token");
    c.timeout_ms = TT_WAIT_MS;
    if (cacert[0])
        rs_test_fixture(cacert, c.cacert, sizeof(c.cacert));
    *out = NULL;
    return remote_open(out, &c, err, errlen);
}

/* The server's side once it is done: the handshake went through, and no request came (the
 * client left on seeing the certificate, before its token went out). */
static void tt_assert_no_request(void) {
    tt_teardown();
    cr_assert_eq(tt.handshake, 0, "%s", gnutls_strerror(tt.handshake));
    cr_assert_str_eq(tt.req, "");
    tt_setup(); /* for the suite's teardown */
}

Test(remote_tls, a_certificate_the_ca_given_vouches_for) {
    struct source *src = NULL;
    char err[512] = "";
    cr_assert_eq(tt_open("localhost", "tls/ca.pem", &src, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(src->run.host, "gpu-box");
    uint64_t deadline = mono_now_ns() + TT_WAIT_MS * 1000000ull;
    while (!src->ops->done(src) && mono_now_ns() < deadline) {
        struct ev evs[16];
        struct pollfd pf = {src->ops->wake_fd(src), POLLIN, 0};
        poll(&pf, 1, 50);
        src->ops->drain(src, evs, 16);
    }
    cr_assert(src->ops->done(src), "status '%s'", src->ops->status(src));
    cr_assert_str_eq(src->ops->status(src), "the agent's run finished");
    src->ops->destroy(src);
    tt_teardown();
    cr_assert(strncmp(tt.req, "GET /events?since=0 HTTP/1.0\r\n", 30) == 0, "%s", tt.req);
    cr_assert(strstr(tt.req, "\r\nAuthorization: Bearer s3cret-token\r\n"), "%s", tt.req);
    tt_setup();
}

Test(remote_tls, a_certificate_no_ca_given_vouches_for_is_refused) {
    struct source *src = NULL;
    char err[512] = "", want[128];
    cr_assert_eq(tt_open("localhost", "", &src, err, sizeof(err)), HTTP_E_CERT, "%s", err);
    cr_assert_null(src);
    snprintf(want, sizeof(want),
             "https://localhost:%u/events: the server's certificate is not "
             "trusted (",
             tt.port);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "%s", err);
    cr_assert(strstr(err, "; give the certificate of the CA that signed it with --cacert FILE"),
              "%s", err);
    tt_assert_no_request();
}

Test(remote_tls, a_certificate_another_ca_signed_is_refused) {
    struct source *src = NULL;
    char err[512] = "";
    cr_assert_eq(tt_open("localhost", "tls/other-ca.pem", &src, err, sizeof(err)), HTTP_E_CERT,
                 "%s", err);
    cr_assert(strstr(err, "the server's certificate is not trusted"), "%s", err);
    cr_assert(strstr(err, "; is it signed by a CA of --cacert, for the URL's host name?"), "%s",
              err);
    tt_assert_no_request();
}

/* The certificate names localhost only: the same server by its address is someone else. */
Test(remote_tls, a_certificate_for_another_name_is_refused) {
    struct source *src = NULL;
    char err[512] = "", want[128];
    cr_assert_eq(tt_open("127.0.0.1", "tls/ca.pem", &src, err, sizeof(err)), HTTP_E_CERT, "%s",
                 err);
    snprintf(want, sizeof(want), "https://127.0.0.1:%u/events: the server's certificate", tt.port);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "%s", err);
    tt_assert_no_request();
}
