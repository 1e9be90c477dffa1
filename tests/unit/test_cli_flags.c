/* Tests of how every ringside command reads its flags, through the built binary: a flag error
 * is one line on stderr with exit status 2 and nothing on stdout, long names match exactly
 * (never by a prefix) with a suggestion for a name that is not one, a value follows '=' or
 * comes as the next word, and short options keep working. */
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLAGS_OUT_BYTES (1u << 16)

/* The scratch directory (HOME and XDG_CONFIG_HOME inside it: no user config file is read) and
 * the last run's results. */
static char flags_dir[1024];
static struct {
    int rc;
    char out[FLAGS_OUT_BYTES];
    char err[FLAGS_OUT_BYTES];
} flags_res;

static void flags_init(void) {
    cr_assert_eq(rs_test_tmpdir(flags_dir, sizeof(flags_dir)), 0);
    setenv("HOME", flags_dir, 1);
    setenv("XDG_CONFIG_HOME", flags_dir, 1);
}

static void flags_fini(void) {
    rs_test_rmtree(flags_dir);
}

TestSuite(cli_flags, .init = flags_init, .fini = flags_fini, .timeout = 60);

static void flags_exec(const char *const *argv) {
    flags_res.rc = rs_test_run(argv, flags_res.out, sizeof(flags_res.out), flags_res.err,
                               sizeof(flags_res.err));
    cr_assert_neq(flags_res.rc, -1, "could not start %s/ringside", RS_BINARY_DIR);
    cr_assert(!strstr(flags_res.err, "runtime error:") && !strstr(flags_res.err, "Sanitizer"),
              "sanitizer report from ringside:\n%s", flags_res.err);
}
#define FLAGS_RUN(...) flags_exec((const char *const[]){__VA_ARGS__, NULL})

/* The last run was a usage error whose whole stderr is the line want (its newline included). */
static void flags_expect_line(const char *want) {
    cr_assert_eq(flags_res.rc, 2, "exit status %d, want 2; stderr:\n%s", flags_res.rc,
                 flags_res.err);
    cr_assert_str_eq(flags_res.out, "", "stdout not empty on a usage error");
    cr_assert_str_eq(flags_res.err, want);
}

/* The last run was a usage error: one line, the --help hint of cmd at its end, the needles. */
static void flags_expect_error(const char *cmd, const char *const *needles) {
    cr_assert_eq(flags_res.rc, 2, "exit status %d; stderr:\n%s", flags_res.rc, flags_res.err);
    cr_assert_str_eq(flags_res.out, "");
    char *nl = strchr(flags_res.err, '\n');
    cr_assert(nl && nl[1] == '\0', "want one line, got:\n%s", flags_res.err);
    char hint[96];
    snprintf(hint, sizeof(hint), "; see 'ringside %s --help'\n", cmd);
    size_t n = strlen(flags_res.err), h = strlen(hint);
    cr_assert(n > h && strcmp(flags_res.err + n - h, hint) == 0, "no \"%s\" at the end: %s", hint,
              flags_res.err);
    cr_assert_eq(strncmp(flags_res.err, "ringside: ", 10), 0, "%s", flags_res.err);
    for (size_t i = 0; needles[i]; i++)
        cr_assert(strstr(flags_res.err, needles[i]), "stderr lacks \"%s\": %s", needles[i],
                  flags_res.err);
}
#define FLAGS_EXPECT_ERROR(cmd, ...)                                                               \
    flags_expect_error(cmd, (const char *const[]){__VA_ARGS__, NULL})

/* The value of "key": in the last run's --print-config output, as text up to the comma. */
static const char *flags_printed(const char *key) {
    static char v[64];
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\": ", key);
    cr_assert_eq(flags_res.rc, 0, "exit status %d; stderr:\n%s", flags_res.rc, flags_res.err);
    const char *p = strstr(flags_res.out, pat);
    cr_assert(p, "no %s in\n%s", key, flags_res.out);
    p += strlen(pat);
    size_t n = strcspn(p, ",\n");
    snprintf(v, sizeof(v), "%.*s", (int)n, p);
    return v;
}

/* ---- one representative error from every command: one line, status 2, empty stdout ---- */

/* Arrays, not pointers: Criterion hands a parameter to a test in another process. */
struct flags_case {
    char argv[8][40]; /* up to the first "" */
    char line[160];
};

static struct flags_case flags_cases[] = {
    {{"--nosuch"}, "ringside: unknown option '--nosuch'; see 'ringside train --help'\n"},
    {{"train", "--epochs", "x"},
     "ringside: --epochs: 'x' is not an integer in [0, 1000000]; see 'ringside train --help'\n"},
    {{"vpoc", "--chunk", "-1"},
     "ringside: --chunk: '-1' is not an integer in [0, 1000000]; see 'ringside vpoc --help'\n"},
    {{"predict", "--model"}, "ringside: --model needs a value; see 'ringside predict --help'\n"},
    {{"export", "--format", "pt", "a.rsmodel", "--out", "a.onnx"},
     "ringside: --format: 'pt' is not one of onnx, safetensors; see 'ringside export --help'\n"},
    {{"synth", "--days", "x"},
     "ringside: --days: 'x' is not an integer in [1, 100000]; see 'ringside synth --help'\n"},
    {{"watch", "--socket="}, "ringside: --socket: '' is empty; see 'ringside watch --help'\n"},
    {{"replay", "--speed", "0"},
     "ringside: --speed: '0' is not a number in [0.1, 100]; see 'ringside replay --help'\n"},
    {{"probe", "--json=yes"},
     "ringside: --json takes no value (not 'yes'); see 'ringside probe --help'\n"},
    {{"kmsg", "classify", "--rules"},
     "ringside: --rules needs a value; see 'ringside kmsg --help'\n"},
    {{"doctor", "--timeout", "x"},
     "ringside: --timeout: 'x' is not a number in [1, 3600]; see 'ringside doctor --help'\n"},
    {{"agent", "--listen", "bad"},
     "ringside: --listen: 'bad': no port: give ADDR:PORT (e.g. 127.0.0.1:9464); see 'ringside "
     "agent --help'\n"},
    {{"attach", "--timeout", "x"},
     "ringside: --timeout: 'x' is not an integer in [1, 3600]; see 'ringside attach --help'\n"},
    {{"attach"}, "ringside: URL is required; see 'ringside attach --help'\n"},
    {{"frob"}, "ringside: unknown command 'frob'; see 'ringside --help'\n"},
};

ParameterizedTestParameters(cli_flags, every_command_says_one_line) {
    return cr_make_param_array(struct flags_case, flags_cases,
                               sizeof(flags_cases) / sizeof(flags_cases[0]));
}

ParameterizedTest(struct flags_case *c, cli_flags, every_command_says_one_line) {
    const char *argv[9] = {NULL};
    for (size_t i = 0; i < 8 && c->argv[i][0]; i++)
        argv[i] = c->argv[i];
    flags_exec(argv);
    flags_expect_line(c->line);
}

/* A word with a newline in it cannot split the line. */
Test(cli_flags, a_quoted_newline_stays_on_the_line) {
    FLAGS_RUN("train", "--epochs", "1\n2");
    FLAGS_EXPECT_ERROR("train", "--epochs: '1");
}

/* --help is not an error: the usage and help on stdout, exit 0, nothing on stderr. */
Test(cli_flags, help_is_unchanged) {
    static const char *const cmds[] = {"train",  "vpoc",  "predict", "export", "synth", "watch",
                                       "replay", "probe", "kmsg",    "doctor", "agent", "attach"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        char want[64];
        snprintf(want, sizeof(want), "usage: ringside %s", cmds[i]);
        FLAGS_RUN(cmds[i], "--help");
        cr_assert_eq(flags_res.rc, 0, "%s --help: exit %d", cmds[i], flags_res.rc);
        cr_assert_str_eq(flags_res.err, "", "%s --help wrote to stderr", cmds[i]);
        cr_assert(strncmp(flags_res.out, want, strlen(want)) == 0 ||
                      strncmp(flags_res.out, "usage: ringside [train]", 23) == 0,
                  "%s --help:\n%.200s", cmds[i], flags_res.out);
        cr_assert(strstr(flags_res.out, "--help"), "%s --help lists no options", cmds[i]);
    }
    FLAGS_RUN("--help");
    cr_assert_eq(flags_res.rc, 0);
    cr_assert_eq(strncmp(flags_res.out, "usage: ringside [COMMAND]", 25), 0, "%s", flags_res.out);
    FLAGS_RUN("vpoc", "stray", "--help"); /* help after a stray word still helps */
    cr_assert_eq(flags_res.rc, 0, "%s", flags_res.err);
}

/* ---- the matching rule ---- */

/* A value after '=' or as the next word; a value that starts with '-' is still the value. */
Test(cli_flags, a_value_after_equals_or_as_the_next_word) {
    FLAGS_RUN("train", "--headless", "--epochs=7", "--print-config");
    cr_assert_str_eq(flags_printed("epochs"), "7");
    FLAGS_RUN("train", "--headless", "--epochs", "8", "--print-config");
    cr_assert_str_eq(flags_printed("epochs"), "8");
    FLAGS_RUN("train", "--headless", "--name=a=b", "--print-config"); /* the first '=' splits */
    cr_assert_str_eq(flags_printed("name"), "\"a=b\"");
    FLAGS_RUN("train", "--headless", "--chunk", "-1");
    FLAGS_EXPECT_ERROR("train", "--chunk: '-1' is not an integer");
    FLAGS_RUN("agent", "--listen=nowhere"); /* the agent's own flags: the same */
    FLAGS_EXPECT_ERROR("agent", "--listen: 'nowhere': no port");
}

/* Short options: -d N, -dN, -h; -V at the top. */
Test(cli_flags, short_options) {
    FLAGS_RUN("train", "-d", "6", "--print-config");
    cr_assert_str_eq(flags_printed("delay"), "6");
    FLAGS_RUN("-d4", "--print-config");
    cr_assert_str_eq(flags_printed("delay"), "4");
    FLAGS_RUN("train", "-h");
    cr_assert_eq(flags_res.rc, 0);
    cr_assert_eq(strncmp(flags_res.out, "usage: ringside [train]", 23), 0);
    FLAGS_RUN("-V");
    cr_assert_eq(flags_res.rc, 0);
    cr_assert_eq(strncmp(flags_res.out, "ringside ", 9), 0, "%s", flags_res.out);
    FLAGS_RUN("train", "-d");
    flags_expect_line("ringside: -d needs a value; see 'ringside train --help'\n");
    FLAGS_RUN("train", "-x");
    flags_expect_line("ringside: unknown option '-x'; see 'ringside train --help'\n");
}

/* A prefix of one name only is not that name: it is refused, the name suggested. */
Test(cli_flags, a_unique_prefix_is_refused_with_the_name) {
    FLAGS_RUN("train", "--headless", "--epo", "7", "--print-config");
    flags_expect_line(
        "ringside: unknown option '--epo' (did you mean --epochs?); see 'ringside train --help'\n");
    FLAGS_RUN("kmsg", "classify", "--rul", "x.json", "-");
    flags_expect_line(
        "ringside: unknown option '--rul' (did you mean --rules?); see 'ringside kmsg --help'\n");
    FLAGS_RUN("watch", "--sock", "x.sock");
    flags_expect_line("ringside: unknown option '--sock' (did you mean --socket?); see "
                      "'ringside watch --help'\n");
    FLAGS_RUN("agent", "--lis", "127.0.0.1:0");
    flags_expect_line("ringside: unknown option '--lis' (did you mean --listen?); see "
                      "'ringside agent --help'\n");
    FLAGS_RUN("train", "--epochz", "3"); /* a slip of the keyboard */
    FLAGS_EXPECT_ERROR("train", "unknown option '--epochz' (did you mean --epochs?)");
}

/* A prefix of several names: every candidate, in the one line; the agent's and train's flags
 * are one command line, so both are candidates. */
Test(cli_flags, an_ambiguous_prefix_lists_the_candidates) {
    FLAGS_RUN("train", "--s", "1");
    FLAGS_EXPECT_ERROR("train", "unknown option '--s' (did you mean --", "--synthetic-days",
                       "--seed", "--skip-bad-rows", "--symbol", "--session-start-hour",
                       "--sync-slow", "--sync-timeout or --sysfs-root?)");
    FLAGS_RUN("agent", "--t");
    FLAGS_EXPECT_ERROR("agent", "unknown option '--t' (did you mean --", "--token-file", "--train",
                       "--tls-cert", "--tls-key", "--tick", "--threads", "--theme", "--telemetry");
    FLAGS_RUN("watch", "--so", "x");
    FLAGS_EXPECT_ERROR("watch", "unknown option '--so' (did you mean --socket?)");
}

/* A flag that takes no value is refused one given with '='. */
Test(cli_flags, a_value_for_a_flag_without_one) {
    FLAGS_RUN("train", "--headless=1");
    flags_expect_line(
        "ringside: --headless takes no value (not '1'); see 'ringside train --help'\n");
    FLAGS_RUN("agent", "--train=yes");
    flags_expect_line(
        "ringside: --train takes no value (not 'yes'); see 'ringside agent --help'\n");
}

/* Operands: in order among the options, "--" ends the options, one FILE for kmsg. */
Test(cli_flags, operands) {
    FLAGS_RUN("kmsg", "classify", "-", "--all"); /* standard input is /dev/null */
    cr_assert_eq(flags_res.rc, 0, "%s", flags_res.err);
    FLAGS_RUN("kmsg", "classify", "--all", "--", "-");
    cr_assert_eq(flags_res.rc, 0, "%s", flags_res.err);
    FLAGS_RUN("kmsg", "classify", "a.log", "b.log");
    flags_expect_line("ringside: unexpected argument 'b.log' (one FILE at a time); see 'ringside "
                      "kmsg --help'\n");
    FLAGS_RUN("vpoc", "--data", "x.csv", "--", "--chunk");
    flags_expect_line("ringside: unexpected argument '--chunk'; see 'ringside vpoc --help'\n");
}

/* The config file: the same names, matched the same way, its errors at a line and column. */
Test(cli_flags, config_keys_follow_the_same_rule) {
    char path[1200];
    cr_assert_eq(rs_test_write_file(flags_dir, "c.json", "{\n  \"epochs\": 9,\n  \"dela\": 3\n}",
                                    path, sizeof(path)),
                 0);
    FLAGS_RUN("train", "--config", path, "--print-config");
    char want[1400];
    snprintf(want, sizeof(want),
             "ringside: %s:3:3: unknown key 'dela' (did you mean 'delay'?); see 'ringside train "
             "--help'\n",
             path);
    flags_expect_line(want);
    cr_assert_eq(rs_test_write_file(flags_dir, "c.json", "{\"epochs\": 9, \"delay\": 3}", path,
                                    sizeof(path)),
                 0);
    FLAGS_RUN("train", "--config", path, "--print-config");
    cr_assert_str_eq(flags_printed("epochs"), "9");
    cr_assert_str_eq(flags_printed("delay"), "3");
}
