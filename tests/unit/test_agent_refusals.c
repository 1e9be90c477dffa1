/* What the agent's HTTP server refuses, and how, and the pieces that decide it on their own: the
 * address groups (IPv6 by /64) and the guard's per-address limit over them. */
#include "tui/agent/http_addr.h"
#include "tui/agent/http_guard.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AR_S 1000000000ull

TestSuite(agent_refusals, .timeout = 120);

/* ---- the pieces, on their own ---- */

static struct http_addr ar_group(const char *text) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t len;
    if (strchr(text, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        cr_assert_eq(inet_pton(AF_INET6, text, &s6->sin6_addr), 1, "%s", text);
        len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        cr_assert_eq(inet_pton(AF_INET, text, &s4->sin_addr), 1, "%s", text);
        len = sizeof(*s4);
    }
    struct http_addr a;
    cr_assert(http_addr_group((struct sockaddr *)&ss, len, &a), "%s", text);
    return a;
}

/* IPv6 by /64 for every per-address limit; IPv4 alone, also when it comes mapped. */
Test(agent_refusals, addresses_group_ipv6_by_64) {
    static const struct {
        const char *a, *b;
        bool same;
    } cases[] = {
        {"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
        {"2001:db8:1:2::1", "2001:db8:1:3::1", false},
        {"fe80::1", "fe80::2", true},
        {"::1", "::2", true},
        {"127.0.0.2", "127.0.0.3", false},
        {"127.0.0.2", "::ffff:127.0.0.2", true},
        {"::ffff:127.0.0.2", "::ffff:127.0.0.3", false},
        {"::ffff:127.0.0.2", "::1", false},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct http_addr a = ar_group(cases[k].a), b = ar_group(cases[k].b);
        cr_assert_eq(http_addr_equal(&a, &b), cases[k].same, "%s and %s", cases[k].a, cases[k].b);
    }
    char name[HTTP_ADDR_NAME];
    struct http_addr a = ar_group("2001:db8:1:2:3:4:5:6");
    http_addr_format(&a, name, sizeof(name));
    cr_assert_str_eq(name, "2001:db8:1:2::/64");
    a = ar_group("::ffff:10.1.2.3");
    http_addr_format(&a, name, sizeof(name));
    cr_assert_str_eq(name, "10.1.2.3");
    http_addr_format(NULL, name, sizeof(name));
    cr_assert_str_eq(name, "the UNIX socket");
    struct sockaddr sa = {.sa_family = AF_UNIX};
    cr_assert_not(http_addr_group(&sa, sizeof(sa), &a));
    cr_assert_not(http_addr_group(NULL, 0, &a));
}

/* The guard's per-address limit counts a /64 as one address: two connections whose requests
 * arrived from 2001:db8:1:2::/64 fill a share of 2, a third from another address in it is
 * refused; one from the next /64 is not. */
Test(agent_refusals, the_connection_limit_counts_a_64_as_one_address) {
    struct http_guard *g;
    struct http_guard_conf gc = {10, 2, 10 * AR_S};
    cr_assert_eq(http_guard_create(&g, &gc), 0);
    static const char *const held[] = {"2001:db8:1:2::1", "2001:db8:1:2::2"};
    struct http_guard_conn *conn[2];
    int sv[2][2];
    for (int k = 0; k < 2; k++) {
        struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
        inet_pton(AF_INET6, held[k], &s6.sin6_addr);
        cr_assert(http_guard_admit(g, (struct sockaddr *)&s6, sizeof(s6)));
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[k]), 0);
        conn[k] = http_guard_open(g, sv[k][0], (struct sockaddr *)&s6, sizeof(s6));
        cr_assert_not_null(conn[k]);
        http_guard_done(g, conn[k]); /* a request that arrived: never pushed out */
    }
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "2001:db8:1:2:ffff::3", &s6.sin6_addr);
    cr_assert_not(http_guard_admit(g, (struct sockaddr *)&s6, sizeof(s6)), "the same /64");
    inet_pton(AF_INET6, "2001:db8:1:3::1", &s6.sin6_addr);
    cr_assert(http_guard_admit(g, (struct sockaddr *)&s6, sizeof(s6)), "the next /64");
    struct http_guard_stats st;
    http_guard_stats(g, &st);
    cr_assert_eq(st.over_address, 1);
    for (int k = 0; k < 2; k++) {
        http_guard_close(g, conn[k]);
        close(sv[k][0]);
        close(sv[k][1]);
    }
    http_guard_destroy(g);
}
