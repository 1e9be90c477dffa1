/* The agent and attach binaries from outside: the warning for a token file or TLS key others
 * can read, the TLS options' pairing, and the signals that stop the agent (a second one during
 * the stop leaves at once, 130). */
#include "backend/core/mono.h"
#include "tests/support/rs_test.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define AC_WAIT_MS 10000 /* the longest any await here takes before the test fails */
#define AC_TOKEN   "a-token-of-this-test-0123456789\n"

static char ac_dir[4096];
static char ac_out[1 << 16], ac_err[1 << 16];

static void ac_init(void) {
    cr_assert_eq(rs_test_tmpdir(ac_dir, sizeof(ac_dir)), 0);
}

static void ac_fini(void) {
    rs_test_rmtree(ac_dir);
}

TestSuite(agent_cli, .init = ac_init, .fini = ac_fini, .timeout = 30);

/* The test's token file, with mode; its path. */
static const char *ac_token(mode_t mode) {
    static char path[4200];
    cr_assert_eq(rs_test_write_file(ac_dir, "token", AC_TOKEN, path, sizeof(path)), 0);
    cr_assert_eq(chmod(path, mode), 0);
    return path;
}

static size_t ac_count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* attach and agent with a token file of each mode: one warning line when its group or others
 * may read or change it, none otherwise; the rest of the run as without it (here: an error
 * after the warning, exit 2). */
Test(agent_cli, a_token_file_others_can_read_is_warned_of_once) {
    static const struct {
        mode_t mode;
        const char *said; /* NULL: no warning */
    } cases[] = {
        {0600, NULL},
        {0400, NULL},
        {0700, NULL},
        {0640, "can be read by other users (mode 0640): chmod 600 it"},
        {0604, "can be read by other users (mode 0604)"},
        {0620, "can be changed by other users (mode 0620)"},
        {0666, "can be read and changed by other users (mode 0666)"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *path = ac_token(cases[k].mode);
        const char *attach[] = {"attach", "http://127.0.0.1:1", "--token-file", path, NULL};
        const char *agent[] = {"agent", "--token-file", path, "--listen", "nowhere", NULL};
        const char *const *argvs[] = {attach, agent};
        for (int a = 0; a < 2; a++) {
            int rc = rs_test_run(argvs[a], ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
            cr_assert_eq(rc, 2, "%s, mode %04o: exit %d: %s", argvs[a][0], (unsigned)cases[k].mode,
                         rc, ac_err);
            size_t warned = ac_count(ac_err, "warning: the token file");
            cr_assert_eq(warned, cases[k].said ? 1u : 0u, "%s, mode %04o: %s", argvs[a][0],
                         (unsigned)cases[k].mode, ac_err);
            if (cases[k].said)
                cr_assert(strstr(ac_err, cases[k].said), "%s", ac_err);
        }
    }
}

/* The fixture tls/NAME copied into the test's directory with mode; its path. */
static const char *ac_tls_file(const char *name, mode_t mode) {
    static char path[4200];
    char src[4096], text[4096];
    rs_test_fixture(name, src, sizeof(src));
    FILE *f = fopen(src, "r");
    cr_assert_not_null(f, "%s", src);
    size_t len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    cr_assert_eq(rs_test_write_file(ac_dir, "key.pem", text, path, sizeof(path)), 0);
    cr_assert_eq(chmod(path, mode), 0);
    return path;
}

/* A TLS key file others may read or change: one warning line, as for the token file (here the
 * key is not the certificate's: refused after the warning, exit 2). */
Test(agent_cli, a_tls_key_file_others_can_read_is_warned_of_once) {
    static const struct {
        mode_t mode;
        const char *said; /* NULL: no warning */
    } cases[] = {
        {0600, NULL},
        {0640, "can be read by other users (mode 0640): chmod 600 it"},
        {0620, "can be changed by other users (mode 0620)"},
    };
    char cert[4096];
    rs_test_fixture("tls/cert.pem", cert, sizeof(cert));
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *key = ac_tls_file("tls/other-key.pem", cases[k].mode);
        const char *argv[] = {"agent", "--tls-cert", cert, "--tls-key", key, NULL};
        int rc = rs_test_run(argv, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
        cr_assert_eq(rc, 2, "mode %04o: exit %d: %s", (unsigned)cases[k].mode, rc, ac_err);
        cr_assert(strstr(ac_err, "not the key of the certificate"), "%s", ac_err);
        cr_assert_eq(ac_count(ac_err, "warning: the TLS key file"), cases[k].said ? 1u : 0u,
                     "mode %04o: %s", (unsigned)cases[k].mode, ac_err);
        if (cases[k].said)
            cr_assert(strstr(ac_err, cases[k].said), "%s", ac_err);
    }
}

/* The last run's stderr is one usage line: "ringside: ...; see 'ringside agent --help'". */
static void ac_expect_usage_line(void) {
    static const char hint[] = "; see 'ringside agent --help'\n";
    size_t n = strlen(ac_err), h = sizeof(hint) - 1;
    cr_assert_eq(ac_count(ac_err, "\n"), 1, "not one line: %s", ac_err);
    cr_assert_eq(strncmp(ac_err, "ringside: ", 10), 0, "%s", ac_err);
    cr_assert(n > h && strcmp(ac_err + n - h, hint) == 0, "no hint at the end: %s", ac_err);
    cr_assert_str_eq(ac_out, "", "stdout not empty on a usage error");
}

/* --tls-cert and --tls-key go together, and only with a TCP listener: each refusal is one line
 * saying so, exit 2, before a file is read. */
Test(agent_cli, tls_options_go_together) {
    static const char *const cases[][9] = {
        {"--tls-cert", "/nowhere/c.pem", NULL},
        {"--tls-key", "/nowhere/k.pem", NULL},
        {"--tls-cert", "/nowhere/c.pem", "--tls-key", "/nowhere/k.pem", "--listen", "none",
         "--unix", "/nowhere/agent.sock"},
    };
    static const char *const said[] = {
        "--tls-cert without --tls-key: give both --tls-cert FILE and --tls-key FILE",
        "--tls-key without --tls-cert: give both",
        "--tls-cert with --listen none: TLS is for the TCP listener",
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *argv[10] = {"agent"};
        for (int i = 0; i < 8 && cases[k][i]; i++)
            argv[i + 1] = cases[k][i];
        int rc = rs_test_run(argv, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
        cr_assert_eq(rc, 2, "case %zu: exit %d: %s", k, rc, ac_err);
        cr_assert(strstr(ac_err, said[k]), "case %zu: %s", k, ac_err);
        ac_expect_usage_line();
    }
    const char *help[] = {"agent", "--help", NULL};
    cr_assert_eq(rs_test_run(help, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err)), 0);
    cr_assert(strstr(ac_out, "  --tls-cert FILE ") && strstr(ac_out, "  --tls-key FILE "), "%s",
              ac_out);
}

/* attach's --cacert must name a file it can read: otherwise one line naming it, exit 2, before
 * any connection. */
Test(agent_cli, attach_an_unreadable_cacert_is_a_usage_error) {
    char missing[4200];
    snprintf(missing, sizeof(missing), "%s/no-such-ca.pem", ac_dir);
    const struct {
        const char *path, *said;
    } cases[] = {
        {missing, "No such file or directory"},
        {ac_dir, "not a regular file (give a PEM file of certificates)"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *argv[] = {"attach", "https://127.0.0.1:1", "--cacert", cases[k].path, NULL};
        int rc = rs_test_run(argv, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
        char want[4400];
        snprintf(want, sizeof(want), "ringside attach: --cacert %s: %s\n", cases[k].path,
                 cases[k].said);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", cases[k].path, rc, ac_err);
        cr_assert_str_eq(ac_err, want);
    }
}

/* A token for plain http:// to another machine is warned of, once, before the connection (here
 * refused: exit 2); over loopback or https:// it is not. */
Test(agent_cli, attach_warns_of_a_token_in_clear) {
    static const struct {
        const char *url;
        bool warned;
        const char *host;
    } cases[] = {
        {"http://0.0.0.0:1", true, "0.0.0.0"},
        {"http://127.0.0.1:1", false, "127.0.0.1"},
        {"https://0.0.0.0:1", false, "0.0.0.0"},
    };
    const char *token = ac_token(0600);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *argv[] = {"attach", cases[k].url, "--token-file", token, NULL};
        int rc = rs_test_run(argv, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
        cr_assert_eq(rc, 2, "%s: exit %d: %s", cases[k].url, rc, ac_err);
        cr_assert_eq(ac_count(ac_err, "crosses the network in clear"), cases[k].warned ? 1u : 0u,
                     "%s: %s", cases[k].url, ac_err);
        char refused[96];
        snprintf(refused, sizeof(refused),
                 "ringside attach: cannot connect to %s:1: Connection "
                 "refused\n",
                 cases[k].host);
        cr_assert(strstr(ac_err, refused), "%s: %s", cases[k].url, ac_err);
    }
}

/* The limits' options: a bad value is one line naming the option, exit 2. */
Test(agent_cli, bad_limit_values_are_usage_errors) {
    static const char *const cases[][3] = {
        {"--request-timeout", "0", "--request-timeout: '0' is not a number in [0.1, 3600]"},
        {"--request-timeout", "ten", "--request-timeout: 'ten' is not a number"},
        {"--max-per-address", "0", "--max-per-address: '0' is not an integer in [1, 4096]"},
        {"--max-per-address", "9999", "--max-per-address: '9999' is not an integer"},
        {"--max-followers", "0", "--max-followers: '0' is not an integer in [1, 4095]"},
        {"--max-followers", "256", "--max-followers 256 must be below --max-connections 256"},
        {"--max-followers-per-address", "x", "--max-followers-per-address: 'x' is not an integer"},
        {"--max-followers-per-address", "64",
         "--max-followers-per-address 64 must be below --max-per-address 64"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *argv[] = {"agent", cases[k][0], cases[k][1], NULL};
        int rc = rs_test_run(argv, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
        cr_assert_eq(rc, 2, "%s %s: exit %d: %s", cases[k][0], cases[k][1], rc, ac_err);
        cr_assert(strstr(ac_err, cases[k][2]), "%s", ac_err);
        ac_expect_usage_line();
    }
}

/* ---- signals ---- */

struct ac_agent {
    pid_t pid;
    int err; /* its stderr */
    char log[1 << 14];
    size_t len;
};

/* Read the agent's stderr until needle is in it (false after AC_WAIT_MS or at its end). */
static bool ac_await(struct ac_agent *a, const char *needle) {
    uint64_t deadline = mono_now_ns() + AC_WAIT_MS * 1000000ull;
    while (!strstr(a->log, needle)) {
        uint64_t now = mono_now_ns();
        struct pollfd pf = {a->err, POLLIN, 0};
        if (now >= deadline || poll(&pf, 1, (int)((deadline - now) / 1000000) + 1) < 0)
            return false;
        if (!(pf.revents & (POLLIN | POLLHUP)))
            continue;
        ssize_t n = read(a->err, a->log + a->len, sizeof(a->log) - a->len - 1);
        if (n <= 0)
            return false;
        a->len += (size_t)n;
        a->log[a->len] = '\0';
    }
    return true;
}

/* The agent without a training loop, telemetry or kernel log, on a free loopback port; back
 * once it serves. */
static void ac_start(struct ac_agent *a) {
    char exe[4200];
    snprintf(exe, sizeof(exe), "%s/ringside", RS_BINARY_DIR);
    int pe[2];
    cr_assert_eq(pipe(pe), 0);
    memset(a, 0, sizeof(*a));
    a->pid = fork();
    cr_assert_geq(a->pid, 0);
    if (a->pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(pe[1], 2);
        close(pe[0]);
        execl(exe, exe, "agent", "--listen", "127.0.0.1:0", "--telemetry", "none", "--no-kmsg",
              (char *)NULL);
        _exit(127);
    }
    close(pe[1]);
    a->err = pe[0];
    cr_assert(ac_await(a, "serving http://127.0.0.1:"), "the agent did not start: %s", a->log);
}

/* Its exit status (128 + N when killed by signal N). */
static int ac_wait(struct ac_agent *a) {
    int st = 0;
    while (waitpid(a->pid, &st, 0) < 0 && errno == EINTR)
        ;
    ac_await(a, "\x01"); /* the rest of its stderr, to its end */
    close(a->err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One SIGTERM: a clean stop, exit 0. */
Test(agent_cli, sigterm_stops_the_agent_cleanly) {
    struct ac_agent a;
    ac_start(&a);
    cr_assert_eq(kill(a.pid, SIGTERM), 0);
    cr_assert_eq(ac_wait(&a), 0, "%s", a.log);
    cr_assert(strstr(a.log, "Terminated: stopping"), "%s", a.log);
    cr_assert(strstr(a.log, "ringside agent: stopped"), "%s", a.log);
}

/* A second signal while the agent stops: it leaves at once with 130. Both come while the
 * agent is held stopped (SIGSTOP), so the second is certain to find the stop begun and not
 * finished: SIGINT begins it, SIGTERM (read after it) ends it. */
Test(agent_cli, a_second_sigterm_while_stopping_exits_130) {
    struct ac_agent a;
    ac_start(&a);
    cr_assert_eq(kill(a.pid, SIGSTOP), 0);
    int st = 0;
    cr_assert_eq(waitpid(a.pid, &st, WUNTRACED), a.pid);
    cr_assert(WIFSTOPPED(st));
    cr_assert_eq(kill(a.pid, SIGINT), 0);
    cr_assert_eq(kill(a.pid, SIGTERM), 0);
    cr_assert_eq(kill(a.pid, SIGCONT), 0);
    cr_assert_eq(ac_wait(&a), 130, "%s", a.log);
    cr_assert(strstr(a.log, "Interrupt: stopping"), "%s", a.log);
    cr_assert(strstr(a.log, "second Terminated: exiting immediately"), "%s", a.log);
    cr_assert_null(strstr(a.log, "ringside agent: stopped"), "%s", a.log);
}

/* ---- a line too long for attach ---- */

/* One connection on lfd: the request read, head then a line of fill bytes of n and tail sent
 * (or as much as the client takes before it closes). */
struct ac_long {
    int lfd;
    const char *head, *tail;
    size_t n;
};

static void *ac_long_serve(void *arg) {
    struct ac_long *l = arg;
    int fd = accept(l->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char req[2048];
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, AC_WAIT_MS) == 1 && read(fd, req, sizeof(req)) > 0) {
        static char fill[65536];
        memset(fill, 'x', sizeof(fill));
        bool ok = send(fd, l->head, strlen(l->head), MSG_NOSIGNAL) >= 0;
        for (size_t sent = 0; ok && sent < l->n;) {
            size_t k = l->n - sent < sizeof(fill) ? l->n - sent : sizeof(fill);
            ssize_t w = send(fd, fill, k, MSG_NOSIGNAL);
            ok = w > 0;
            sent += ok ? (size_t)w : 0;
        }
        if (ok)
            send(fd, l->tail, strlen(l->tail), MSG_NOSIGNAL);
    }
    close(fd);
    return NULL;
}

/* A status line or a header line over libcurl's 100 KiB came out as "Out of memory", a run line
 * over 1 MiB as "Argument list too long": one line now says which line was too long and the
 * limit, exit 2. */
Test(agent_cli, attach_says_which_line_was_too_long) {
    static const struct {
        const char *head, *tail;
        size_t n;
        const char *said;
    } cases[] = {
        {"HTTP/1.0 200 OK", "\r\n\r\n", 200 * 1024,
         "the answer's status line or one of its header lines is over 102400 bytes (100 KiB), "
         "the longest libcurl takes"},
        {"HTTP/1.0 200 OK\r\nX-Long: ", "\r\n\r\n", 200 * 1024,
         "the answer's status line or one of its header lines is over 102400 bytes (100 KiB), "
         "the longest libcurl takes"},
        {"HTTP/1.0 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n{\"type\":\"run\",\"x\":\"",
         "\"}\n", 3u << 20,
         "the stream's first line (the run line) is over 1048576 bytes (1 MiB), the longest "
         "line attach reads"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct ac_long l = {socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), cases[k].head,
                            cases[k].tail, cases[k].n};
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        cr_assert_eq(bind(l.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        cr_assert_eq(listen(l.lfd, 1), 0);
        cr_assert_eq(getsockname(l.lfd, (struct sockaddr *)&sa, &len), 0);
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, ac_long_serve, &l), 0);
        char url[64];
        snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(sa.sin_port));
        const char *argv[] = {"attach", url, "--frames", "1", NULL};
        int rc = rs_test_run(argv, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
        pthread_join(t, NULL);
        close(l.lfd);
        cr_assert_eq(rc, 2, "case %zu: exit %d: %s", k, rc, ac_err);
        cr_assert_eq(ac_count(ac_err, "\n"), 1u, "case %zu: %s", k, ac_err);
        cr_assert(strncmp(ac_err, "ringside attach: ", 17) == 0, "%s", ac_err);
        cr_assert(strstr(ac_err, cases[k].said), "case %zu: '%s' lacks '%s'", k, ac_err,
                  cases[k].said);
        cr_assert_null(strstr(ac_err, "Argument list too long"), "%s", ac_err);
    }
}

/* --log FILE where someone planted a FIFO (the agent would wait on it before it starts) or a
 * link (it would write through it): refused in one line, exit 2, the link's target not made. */
Test(agent_cli, a_planted_log_is_refused) {
    char fifo[4200], link_path[4200], target[4200];
    snprintf(fifo, sizeof(fifo), "%s/log.fifo", ac_dir);
    snprintf(link_path, sizeof(link_path), "%s/log.link", ac_dir);
    snprintf(target, sizeof(target), "%s/target", ac_dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(symlink(target, link_path), 0);
    const char *const paths[] = {fifo, link_path};
    const char *const said[] = {"a FIFO is there, not a regular file", "a symbolic link is there"};
    for (size_t k = 0; k < 2; k++) {
        const char *argv[] = {"agent", "--log", paths[k], "--listen", "127.0.0.1:0", NULL};
        int rc = rs_test_run(argv, ac_out, sizeof(ac_out), ac_err, sizeof(ac_err));
        cr_assert_eq(rc, 2, "case %zu: exit %d: %s", k, rc, ac_err);
        cr_assert(strstr(ac_err, said[k]) && strstr(ac_err, "--log"), "case %zu: %s", k, ac_err);
        cr_assert_eq(ac_count(ac_err, "\n"), 1, "not one line: %s", ac_err);
        cr_assert_str_eq(ac_out, "");
    }
    cr_assert_eq(access(target, F_OK), -1, "the link's target was created");
}
