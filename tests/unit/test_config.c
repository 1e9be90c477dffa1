/* Tests for the config file and --print-config: values applied, flags overriding them, every
 * error naming the file and key with exit status 2, and the printed configuration reading back
 * to itself; also the new dashboard flags' validation. */
#include "backend/core/json_file.h"
#include "backend/vpoc/vpoc.h"
#include "tests/support/rs_test.h"
#include "tui/cli/config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CFG_OUT_BYTES (1u << 16)

/* The test's scratch directory (HOME and XDG_CONFIG_HOME point inside it) and the last run. */
static char cfg_dir[1024];
static struct {
    int rc;
    char out[CFG_OUT_BYTES];
    char err[CFG_OUT_BYTES];
} cfg_res;

static const char *cfg_path(const char *rel) {
    static char bufs[4][1200];
    static unsigned next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof(bufs[0]), "%s/%s", cfg_dir, rel);
    return b;
}

static void cfg_init(void) {
    cr_assert_eq(rs_test_tmpdir(cfg_dir, sizeof(cfg_dir)), 0);
    cr_assert_eq(mkdir(cfg_path("home"), 0700), 0);
    cr_assert_eq(mkdir(cfg_path("xdg"), 0700), 0);
    cr_assert_eq(mkdir(cfg_path("xdg/ringside"), 0700), 0);
    setenv("HOME", cfg_path("home"), 1);
    setenv("XDG_CONFIG_HOME", cfg_path("xdg"), 1);
    unsetenv("RINGSIDE_ALLOC_CONF");
}

static void cfg_fini(void) {
    rs_test_rmtree(cfg_dir);
}

TestSuite(config, .init = cfg_init, .fini = cfg_fini, .timeout = 30);

/* Write text as dir/config.json (dir relative to the scratch directory). */
static const char *cfg_write(const char *dir, const char *text) {
    static char path[1200];
    cr_assert_eq(rs_test_write_file(cfg_path(dir), "config.json", text, path, sizeof(path)), 0);
    return path;
}

static int cfg_exec(const char *const *argv) {
    cfg_res.rc =
        rs_test_run(argv, cfg_res.out, sizeof(cfg_res.out), cfg_res.err, sizeof(cfg_res.err));
    cr_assert_neq(cfg_res.rc, -1, "could not start %s/ringside", RS_BINARY_DIR);
    cr_assert(!strstr(cfg_res.err, "runtime error:") && !strstr(cfg_res.err, "Sanitizer"),
              "sanitizer report from ringside:\n%s", cfg_res.err);
    return cfg_res.rc;
}
#define CFG_RUN(...) cfg_exec((const char *const[]){__VA_ARGS__, NULL})

static void cfg_expect_error(const char *const *needles) {
    cr_assert_eq(cfg_res.rc, 2, "exit %d, stderr: %s", cfg_res.rc, cfg_res.err);
    for (size_t i = 0; needles[i]; i++)
        cr_assert(strstr(cfg_res.err, needles[i]), "stderr lacks \"%s\":\n%s", needles[i],
                  cfg_res.err);
}
#define CFG_EXPECT_ERROR(...) cfg_expect_error((const char *const[]){__VA_ARGS__, NULL})

/* The last run's stdout as JSON (the caller puts it). */
static json_object *cfg_json(void) {
    cr_assert_eq(cfg_res.rc, 0, "exit %d, stderr: %s", cfg_res.rc, cfg_res.err);
    json_object *j = json_tokener_parse(cfg_res.out);
    cr_assert_not_null(j, "stdout is not JSON:\n%s", cfg_res.out);
    return j;
}

static json_object *cfg_key(json_object *j, const char *key) {
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(j, key, &v), "no key %s in\n%s", key, cfg_res.out);
    return v;
}

static int cfg_int(json_object *j, const char *key) {
    json_object *v = cfg_key(j, key);
    cr_assert(json_object_is_type(v, json_type_int), "%s is not an integer", key);
    return json_object_get_int(v);
}

static const char *cfg_str(json_object *j, const char *key) {
    json_object *v = cfg_key(j, key);
    cr_assert(json_object_is_type(v, json_type_string), "%s is not a string", key);
    return json_object_get_string(v);
}

Test(config, xdg_file_values_are_applied) {
    cfg_write("xdg/ringside", "{\"epochs\": 50, \"theme\": \"nord\", \"delay\": 3, "
                              "\"synthetic-days\": 30, \"skip-bad-rows\": true, \"hidden\": "
                              "\"64,32\", \"lr\": 3e-4, \"no-pre-cleanup\": false}");
    CFG_RUN("train", "--headless", "--print-config");
    json_object *j = cfg_json();
    cr_assert_eq(cfg_int(j, "epochs"), 50);
    cr_assert_str_eq(cfg_str(j, "theme"), "nord");
    cr_assert_eq(cfg_int(j, "delay"), 3);
    cr_assert_eq(cfg_int(j, "synthetic-days"), 30);
    cr_assert(json_object_get_boolean(cfg_key(j, "skip-bad-rows")));
    cr_assert_str_eq(cfg_str(j, "hidden"), "64,32");
    cr_assert_float_eq(json_object_get_double(cfg_key(j, "lr")), 3e-4, 1e-15);
    cr_assert_not(json_object_get_boolean(cfg_key(j, "no-pre-cleanup"))); /* false: not given */
    json_object_put(j);
}

Test(config, home_config_when_xdg_unset) {
    unsetenv("XDG_CONFIG_HOME");
    cr_assert_eq(mkdir(cfg_path("home/.config"), 0700), 0);
    cr_assert_eq(mkdir(cfg_path("home/.config/ringside"), 0700), 0);
    cfg_write("home/.config/ringside", "{\"seed\": 7, \"data\": null}");
    CFG_RUN("train", "--headless", "--print-config");
    json_object *j = cfg_json();
    cr_assert_eq(cfg_int(j, "seed"), 7);
    json_object_put(j);
}

Test(config, flags_override_the_file) {
    cfg_write("xdg/ringside", "{\"epochs\": 50, \"chunk\": 250, \"data\": \"/no/such.csv\"}");
    CFG_RUN("train", "--headless", "--epochs", "3", "--synthetic-days", "5", "--print-config");
    json_object *j = cfg_json();
    cr_assert_eq(cfg_int(j, "epochs"), 3);
    cr_assert_eq(cfg_int(j, "chunk"), 250);
    cr_assert_eq(cfg_int(j, "synthetic-days"), 5);
    /* --synthetic-days on the command line replaces the file's data */
    cr_assert(json_object_is_type(cfg_key(j, "data"), json_type_null));
    json_object_put(j);
}

/* Without a file: the documented defaults, and the keys are exactly the train flags. */
Test(config, defaults_and_keys) {
    static const char *const keys[] = {"data",
                                       "synthetic-days",
                                       "seed",
                                       "skip-bad-rows",
                                       "symbol",
                                       "columns",
                                       "tz",
                                       "continuous",
                                       "time-unit",
                                       "price-scale",
                                       "bar",
                                       "session-start-hour",
                                       "chunk",
                                       "profile",
                                       "vpoc-kernel",
                                       "tick",
                                       "value-area",
                                       "vpoc-refresh",
                                       "horizon",
                                       "loss",
                                       "hidden",
                                       "activation",
                                       "lr",
                                       "weight-decay",
                                       "batch",
                                       "epochs",
                                       "val-frac",
                                       "metric-every",
                                       "output",
                                       "name",
                                       "resume",
                                       "headless",
                                       "jsonl",
                                       "backend",
                                       "device",
                                       "devices",
                                       "comm-lib",
                                       "comm-timeout",
                                       "teardown-timeout",
                                       "threads",
                                       "alloc-conf",
                                       "no-pre-cleanup",
                                       "delay",
                                       "frames",
                                       "theme",
                                       "record",
                                       "sync-slow",
                                       "sync-timeout",
                                       "inject",
                                       "telemetry",
                                       "telemetry-interval",
                                       "sysfs-root",
                                       "proc-root",
                                       "debugfs-root",
                                       "dev-root",
                                       "nvml-lib",
                                       "kmsg-file",
                                       "kmsg-backlog",
                                       "kmsg-rules",
                                       "no-kmsg"};
    size_t nkeys = sizeof(keys) / sizeof(keys[0]);
    CFG_RUN("--print-config"); /* the dashboard's defaults */
    json_object *j = cfg_json();
    cr_assert_eq(json_object_object_length(j), (int)nkeys);
    for (size_t i = 0; i < nkeys; i++)
        cfg_key(j, keys[i]);
    cr_assert_eq(cfg_int(j, "epochs"), 0); /* until stopped */
    cr_assert_eq(cfg_int(j, "vpoc-refresh"), 1);
    cr_assert_str_eq(cfg_str(j, "vpoc-kernel"), "dense"); /* the pool follows the chunk */
    cr_assert_eq(cfg_int(j, "chunk"), 250);               /* + + is 1000 */
    cr_assert_eq(cfg_int(j, "delay"), 5);
    cr_assert_eq(cfg_int(j, "kmsg-backlog"), 0);
    cr_assert_eq(json_object_get_boolean(cfg_key(j, "no-kmsg")), 0);
    cr_assert_float_eq(json_object_get_double(cfg_key(j, "sync-slow")), 1.0, 1e-12);
    cr_assert_float_eq(json_object_get_double(cfg_key(j, "sync-timeout")), 30.0, 1e-12);
    cr_assert(json_object_is_type(cfg_key(j, "frames"), json_type_null));
    cr_assert(json_object_is_type(cfg_key(j, "jsonl"), json_type_null));
    json_object_put(j);
    CFG_RUN("train", "--headless", "--print-config");
    j = cfg_json();
    cr_assert_eq(cfg_int(j, "epochs"), 10);
    cr_assert_eq(cfg_int(j, "vpoc-refresh"), 0);
    cr_assert_str_eq(cfg_str(j, "vpoc-kernel"), "packed");
    cr_assert_eq(cfg_int(j, "chunk"), 500);
    cr_assert_str_eq(cfg_str(j, "jsonl"), "-");
    cr_assert_str_eq(cfg_str(j, "hidden"), "32,16");
    json_object_put(j);
}

/* Print, save, load with --config and print again: the same text. */
static void cfg_round_trip(const char *const *argv) {
    cfg_exec(argv);
    json_object *first = cfg_json();
    char saved[CFG_OUT_BYTES];
    snprintf(saved, sizeof(saved), "%s", cfg_res.out);
    const char *path = cfg_write(".", saved);
    CFG_RUN("train", "--config", path, "--print-config");
    json_object *second = cfg_json();
    cr_assert_str_eq(cfg_res.out, saved);
    cr_assert(json_object_equal(first, second));
    json_object_put(first);
    json_object_put(second);
}

Test(config, print_config_round_trips_headless) {
    cfg_round_trip((const char *const[]){"train",
                                         "--headless",
                                         "--lr",
                                         "0.0003",
                                         "--hidden",
                                         "8",
                                         "--sync-slow",
                                         "0.25",
                                         "--sync-timeout",
                                         "2.5",
                                         "--theme",
                                         "gruvbox",
                                         "--no-pre-cleanup",
                                         "--profile",
                                         "range",
                                         "--seed",
                                         "123",
                                         "--val-frac",
                                         "0.25",
                                         "--alloc-conf",
                                         "max_split_size_mb:64",
                                         "--print-config",
                                         NULL});
}

/* The dashboard's kernel and chunk are only defaults: a flag or the file sets either. */
Test(config, dashboard_vpoc_defaults_give_way) {
    CFG_RUN("--vpoc-kernel", "packed", "--chunk", "500", "--print-config");
    json_object *j = cfg_json();
    cr_assert_str_eq(cfg_str(j, "vpoc-kernel"), "packed");
    cr_assert_eq(cfg_int(j, "chunk"), 500);
    json_object_put(j);
    cfg_write("xdg/ringside", "{\"vpoc-kernel\": \"packed\", \"chunk\": 0}");
    CFG_RUN("--print-config");
    j = cfg_json();
    cr_assert_str_eq(cfg_str(j, "vpoc-kernel"), "packed");
    cr_assert_eq(cfg_int(j, "chunk"), 0);
    json_object_put(j);
    CFG_RUN("train", "--headless", "--vpoc-kernel", "dense", "--print-config");
    j = cfg_json();
    cr_assert_str_eq(cfg_str(j, "vpoc-kernel"), "dense");
    json_object_put(j);
    CFG_RUN("train", "--vpoc-kernel", "onehot");
    CFG_EXPECT_ERROR("--vpoc-kernel: 'onehot' is not one of packed, dense");
}

Test(config, print_config_round_trips_dashboard) {
    cfg_round_trip((const char *const[]){"train", "--frames", "7", "--record", "run.jsonl", "-d",
                                         "2", "--vpoc-refresh", "4", "--tick", "0.1",
                                         "--print-config", NULL});
    json_object *j = cfg_json();
    cr_assert_eq(cfg_int(j, "frames"), 7);
    cr_assert_str_eq(cfg_str(j, "record"), "run.jsonl");
    cr_assert_eq(cfg_int(j, "vpoc-refresh"), 4);
    cr_assert_float_eq(json_object_get_double(cfg_key(j, "tick")), 0.1, 1e-15);
    json_object_put(j);
}

/* A broken file: its content and what stderr must say right after the file's path (a key's
 * mistake is at its line and column: the value's, or the key's for a key that is not one). */
struct cfg_bad {
    char text[96];
    char want[192];
};

static struct cfg_bad cfg_bad_cases[] = {
    /* `{"epochs": "abc"}`: the value's quote is the 12th character */
    {"{\"epochs\": \"abc\"}",
     ":1:12: key 'epochs': --epochs: 'abc' is not an integer in [0, 1000000]"},
    {"{\"epoch\": 5}", ":1:2: unknown key 'epoch' (did you mean 'epochs'?)"},
    /* keys are long names, matched as flags are: exactly, never by a prefix */
    {"{\"epo\": 5}", ":1:2: unknown key 'epo' (did you mean 'epochs'?)"},
    {"{\"val\": 0.1}", ":1:2: unknown key 'val' (did you mean 'value-area' or 'val-frac'?)"},
    /* line 3 is `  "chunk": "x"`: two spaces, 7 for "chunk", ':', ' ', then the value at 12 */
    {"{\n  \"epochs\": 5,\n  \"chunk\": \"x\"\n}",
     ":3:12: key 'chunk': --chunk: 'x' is not an integer in [0, 1000000]"},
    {"{\"epochs\": 5,\n    \"epoc\": 1}", ":2:5: unknown key 'epoc' (did you mean 'epochs'?)"},
    /* "epochs" written with an escape is the key epochs: its value's quote is at 17 */
    {"{\"ep\\u006fchs\": \"x\"}", ":1:17: key 'epochs': --epochs: 'x' is not an integer"},
    /* the text "epochs": inside a string is no key: the key is the second one, its value at 38 */
    {"{\"theme\": \"\\\"epochs\\\": 1\", \"epochs\": \"x\"}",
     ":1:38: key 'epochs': --epochs: 'x' is not an integer"},
    /* line 2 is `  "chunk": x}`: two spaces, 7 for "chunk", ':' at 10, ' ' at 11, 'x' at 12 */
    {"{\"epochs\": 5,\n  \"chunk\": x}",
     ": invalid JSON at line 2, column 12: unexpected character"},
    /* 12 bytes and nothing closes the object: the error is just past the end */
    {"{\"epochs\": 5", ": invalid JSON at line 1, column 13: unexpected end of file"},
    {"{} {}", ": invalid JSON at line 1, column 4: unexpected character"},
    /* what a lenient parser lets through: single quotes, a trailing comma, a key twice (the
     * second would win silently), \u0000 (C strings would cut the value there) */
    {"{'epochs': 5}", ": invalid JSON at line 1, column 2: a string in single quotes"},
    {"{\"epochs\": 5,}", ": invalid JSON at line 1, column 14: unexpected character"},
    {"{\"epochs\": 5,\n \"epochs\": 6}",
     ": invalid JSON at line 2, column 2: a key given twice in one object"},
    {"{\"name\": \"a\\u0000b\"}", ": invalid JSON at line 1, column 10: \\u0000 in a string"},
    {"[1, 2]", ": expected a JSON object of options"},
    {"{\"help\": true}", ":1:10: key 'help': --help is for the command line only"},
    {"{\"config\": \"x.json\"}", ":1:12: key 'config': --config is for the command line only"},
    {"{\"print-config\": true}",
     ":1:18: key 'print-config': --print-config is for the command line"},
    {"{\"skip-bad-rows\": 1}",
     ":1:19: key 'skip-bad-rows': --skip-bad-rows takes no value: use true"},
    {"{\"epochs\": true}", ":1:12: key 'epochs': --epochs needs a value, not true"},
    {"{\"hidden\": [64, 32]}",
     ":1:12: key 'hidden': expected a number, a string, a boolean or null"},
    {"{\"sync-slow\": 0}",
     ":1:15: key 'sync-slow': --sync-slow: '0' is not a number in [0.001, 86400]"},
    {"{\"hidden\": \"0\"}", ":1:12: key 'hidden': "},
};

ParameterizedTestParameters(config, broken_files) {
    return cr_make_param_array(struct cfg_bad, cfg_bad_cases,
                               sizeof(cfg_bad_cases) / sizeof(cfg_bad_cases[0]));
}

ParameterizedTest(struct cfg_bad *c, config, broken_files) {
    const char *path = cfg_write("xdg/ringside", c->text);
    char want[1400];
    snprintf(want, sizeof(want), "ringside: %s%s", path, c->want);
    CFG_RUN("train", "--headless", "--print-config");
    CFG_EXPECT_ERROR(want, "; see 'ringside train --help'\n");
    cr_assert_eq(cfg_res.out[0], '\0', "printed a configuration anyway");
    cr_assert_eq(strchr(cfg_res.err, '\n'), cfg_res.err + strlen(cfg_res.err) - 1,
                 "not one line: %s", cfg_res.err);
}

Test(config, home_is_shown_as_tilde) {
    unsetenv("XDG_CONFIG_HOME");
    cr_assert_eq(mkdir(cfg_path("home/.config"), 0700), 0);
    cr_assert_eq(mkdir(cfg_path("home/.config/ringside"), 0700), 0);
    cfg_write("home/.config/ringside", "{\"epochs\": \"abc\"}");
    CFG_RUN("--print-config");
    CFG_EXPECT_ERROR(
        "ringside: ~/.config/ringside/config.json:1:12: key 'epochs': --epochs: 'abc'");
}

Test(config, explicit_file_must_exist) {
    const char *path = cfg_path("missing.json");
    CFG_RUN("train", "--config", path, "--print-config");
    CFG_EXPECT_ERROR(path, "cannot open: No such file or directory");
    CFG_RUN("train", "--config");
    CFG_EXPECT_ERROR("--config needs a value; see 'ringside train --help'");
}

Test(config, explicit_file_replaces_the_default) {
    cfg_write("xdg/ringside", "{\"epochs\": \"abc\"}"); /* broken, but not read */
    const char *path = cfg_write(".", "{\"batch\": 64}");
    CFG_RUN("train", "--headless", "--config", path, "--print-config");
    json_object *j = cfg_json();
    cr_assert_eq(cfg_int(j, "batch"), 64);
    json_object_put(j);
}

Test(config, help_works_with_a_broken_file) {
    cfg_write("xdg/ringside", "{oops");
    CFG_RUN("train", "--help");
    cr_assert_eq(cfg_res.rc, 0, "%s", cfg_res.err);
    cr_assert(strstr(cfg_res.out, "--print-config"));
    cr_assert(strstr(cfg_res.out, "--sync-timeout SECONDS"));
}

Test(config, resume_conflict_names_the_file) {
    const char *path = cfg_write("xdg/ringside", "{\"hidden\": \"8\"}");
    CFG_RUN("train", "--headless", "--resume", "x.rsmodel", "--print-config");
    CFG_EXPECT_ERROR("--hidden cannot be combined with --resume", path);
}

/* ---- the new flags ---- */

Test(config, record_is_for_the_dashboard) {
    CFG_RUN("train", "--headless", "--record", "r.jsonl");
    CFG_EXPECT_ERROR("--record is for the dashboard; headless mode writes --jsonl");
}

Test(config, sync_thresholds) {
    CFG_RUN("train", "--sync-slow", "5", "--sync-timeout", "2", "--print-config");
    CFG_EXPECT_ERROR("--sync-slow (5 s) must be less than --sync-timeout (2 s)");
    CFG_RUN("train", "--sync-timeout", "0.5"); /* below the default slow threshold, 1 s */
    CFG_EXPECT_ERROR("--sync-slow (1 s) must be less than --sync-timeout (0.5 s)");
    CFG_RUN("train", "--sync-slow", "0");
    CFG_EXPECT_ERROR("--sync-slow: '0' is not a number in [0.001, 86400]");
    CFG_RUN("train", "--sync-timeout", "1s");
    CFG_EXPECT_ERROR("--sync-timeout: '1s' is not a number");
    CFG_RUN("train", "--sync-slow", "0.5", "--sync-timeout", "90", "--print-config");
    json_object *j = cfg_json();
    cr_assert_float_eq(json_object_get_double(cfg_key(j, "sync-slow")), 0.5, 1e-12);
    cr_assert_float_eq(json_object_get_double(cfg_key(j, "sync-timeout")), 90.0, 1e-12);
    json_object_put(j);
}

/* A chunk size in the file is held to the flag's limit, the engine's VPOC_CHUNK_MAX. */
Test(config, chunk_limit_in_the_file) {
    char text[64], want[96];
    snprintf(text, sizeof(text), "{\"chunk\": %d}", VPOC_CHUNK_MAX + 1);
    cfg_write("xdg/ringside", text);
    CFG_RUN("train", "--headless", "--print-config");
    snprintf(want, sizeof(want), "'%d' is not an integer in [0, %d]", VPOC_CHUNK_MAX + 1,
             VPOC_CHUNK_MAX);
    CFG_EXPECT_ERROR("chunk", want);
    snprintf(text, sizeof(text), "{\"chunk\": %d}", VPOC_CHUNK_MAX);
    cfg_write("xdg/ringside", text);
    CFG_RUN("train", "--headless", "--print-config");
    json_object *j = cfg_json();
    cr_assert_eq(cfg_int(j, "chunk"), VPOC_CHUNK_MAX);
    json_object_put(j);
}

/* A number past 2^64 is said as the file writes it, out of range, not as json-c saturates it. */
Test(config, huge_number_said_as_written) {
    cfg_write("xdg/ringside", "{\"seed\": 123456789012345678901234567890}");
    CFG_RUN("train", "--headless", "--print-config");
    CFG_EXPECT_ERROR("seed", "123456789012345678901234567890");
    cr_assert(!strstr(cfg_res.err, "18446744073709551615"), "%s", cfg_res.err);
    cr_assert_eq(strchr(cfg_res.err, '\n'), cfg_res.err + strlen(cfg_res.err) - 1, "%s",
                 cfg_res.err);
}

/* A checkpoint name that is not printable UTF-8 (it goes into file names and JSON): refused,
 * from the file as from the flag, without echoing the bytes. */
Test(config, name_must_be_printable_utf8) {
    cfg_write("xdg/ringside", "{\"name\": \"m\\u0001x\"}");
    CFG_RUN("train", "--headless", "--synthetic-days", "3", "--epochs", "1", "--output",
            cfg_path("out"));
    CFG_EXPECT_ERROR("--name: byte 2 (0x01) is not printable UTF-8");
    cfg_write("xdg/ringside", "{}");
    CFG_RUN("train", "--headless", "--synthetic-days", "3", "--epochs", "1", "--output",
            cfg_path("out"), "--name", "m\xc3\x28");
    CFG_EXPECT_ERROR("--name: byte 2 (0xc3) is not printable UTF-8");
    CFG_RUN("train", "--headless", "--synthetic-days", "3", "--epochs", "1", "--output",
            cfg_path("out"), "--name", "mod\xc3\xa8le");
    cr_assert_eq(cfg_res.rc, 0, "%s", cfg_res.err);
}

Test(config, vpoc_refresh_range) {
    CFG_RUN("train", "--vpoc-refresh", "1000001");
    CFG_EXPECT_ERROR("--vpoc-refresh: '1000001' is not an integer in [0, 1000000]");
    CFG_RUN("train", "--vpoc-refresh", "-1");
    CFG_EXPECT_ERROR("--vpoc-refresh: '-1' is not an integer");
    CFG_RUN("train", "--headless", "--vpoc-refresh", "3", "--print-config");
    json_object *j = cfg_json();
    cr_assert_eq(cfg_int(j, "vpoc-refresh"), 3);
    json_object_put(j);
    CFG_RUN("--vpoc-refresh", "0", "--print-config"); /* the dashboard's 1 is only a default */
    j = cfg_json();
    cr_assert_eq(cfg_int(j, "vpoc-refresh"), 0);
    json_object_put(j);
}

/* ---- one configuration object everywhere ---- */

/* The "config" object of the first line of a recording (the caller puts it). */
static json_object *cfg_run_line_config(const char *path) {
    char line[8192] = "";
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_not_null(fgets(line, sizeof(line), f));
    fclose(f);
    json_object *run = json_tokener_parse(line), *c = NULL;
    cr_assert_not_null(run, "not JSON: %s", line);
    cr_assert(json_object_object_get_ex(run, "config", &c) && c, "no config in %s", line);
    json_object_get(c);
    json_object_put(run);
    return c;
}

/* Every key of part is in whole with the same value. */
static void cfg_expect_part(json_object *part, json_object *whole, const char *what) {
    json_object_object_foreach(part, key, v) {
        json_object *w = NULL;
        cr_assert(json_object_object_get_ex(whole, key, &w), "%s lacks %s", what, key);
        cr_assert(json_object_equal(v, w), "%s: %s is %s, not %s", what, key,
                  json_object_to_json_string(w), json_object_to_json_string(v));
    }
}

/* A short headless run with options of every kind (the output directory is the scratch's). */
#define CFG_TRAIN_FLAGS                                                                            \
    "train", "--headless", "--synthetic-days", "3", "--epochs", "1", "--backend", "cpu", "--lr",   \
        "0.0003", "--val-frac", "0.25", "--hidden", "8,4", "--alloc-conf", "max_split_size_mb:64", \
        "--inject", "slow-sync:forward:1", "--output", cfg_path("out")

/* The recording's run line and the checkpoint metadata hold the same configuration object,
 * in the config file's words; it is --print-config's less the front end's options, and read
 * back as a config file it gives the same options again. */
Test(config, recording_and_metadata_hold_the_printed_configuration) {
    const char *jsonl = cfg_path("run.jsonl");
    CFG_RUN(CFG_TRAIN_FLAGS, "--jsonl", jsonl);
    cr_assert_eq(cfg_res.rc, 0, "%s", cfg_res.err);
    json_object *rec = cfg_run_line_config(jsonl);
    json_object *meta = json_object_from_file(cfg_path("out/vpoc_mlp_metadata.json")), *mc = NULL;
    cr_assert(json_object_object_get_ex(meta, "config", &mc));
    cr_assert(json_object_equal(rec, mc), "recording %s, metadata %s",
              json_object_to_json_string(rec), json_object_to_json_string(mc));
    cr_assert_eq(json_object_object_length(rec), 41, "%s", json_object_to_json_string(rec));
    cr_assert_str_eq(cfg_str(rec, "hidden"), "8,4");
    cr_assert_str_eq(cfg_str(rec, "alloc-conf"), "max_split_size_mb:64");
    cr_assert_str_eq(cfg_str(rec, "inject"), "slow-sync:forward:1");
    cr_assert(json_object_is_type(cfg_key(rec, "data"), json_type_null));
    cr_assert_eq(json_object_get_double(cfg_key(rec, "val-frac")), 0.25);
    CFG_RUN(CFG_TRAIN_FLAGS, "--print-config");
    json_object *printed = cfg_json();
    cfg_expect_part(rec, printed, "--print-config");
    json_object_put(printed);
    const char *path = cfg_write(".", json_object_to_json_string(rec));
    CFG_RUN("train", "--headless", "--config", path, "--print-config");
    printed = cfg_json();
    cfg_expect_part(rec, printed, "--print-config of the recorded configuration");
    json_object_put(printed);
    json_object_put(meta);
    json_object_put(rec);
}

/* ---- the library functions ---- */

Test(config, line_col) {
    int line, col;
    json_file_line_col("ab\ncd\n", 4, &line, &col); /* 'd': line 2, its second column */
    cr_assert_eq(line, 2);
    cr_assert_eq(col, 2);
    json_file_line_col("ab\ncd\n", 0, &line, &col);
    cr_assert_eq(line, 1);
    cr_assert_eq(col, 1);
    json_file_line_col("ab\n", 3, &line, &col); /* just past the newline */
    cr_assert_eq(line, 2);
    cr_assert_eq(col, 1);
}

/* A top-level key's offsets: its quote and its value's first byte; never a nested object's key
 * or a string's text. */
Test(config, key_at) {
    static const char text[] = "{\"a\": {\"b\": 1}, \"s\": \"\\\"b\\\": 2\",\n \"b\" :\t[3]}";
    size_t k = 0, v = 0;
    cr_assert_eq(json_file_key_at(text, "a", &k, &v), 0);
    cr_assert_eq(k, 1);
    cr_assert_eq(v, 6);
    cr_assert_eq(json_file_key_at(text, "b", &k, &v), 0);
    cr_assert_eq(k, (size_t)(strstr(text, "\n \"b\"") - text) + 2, "%zu", k);
    cr_assert_eq(text[v], '[');
    cr_assert_eq(json_file_key_at(text, "c", &k, &v), -ENOENT);
    cr_assert_eq(json_file_key_at("{\"\\u0063\": 1}", "c", &k, &v), 0); /* an escaped name */
    cr_assert_eq(k, 1);
    cr_assert_eq(v, 11);
}

/* An apply callback that records the keys it sees. */
static int cfg_record_key(const char *key, const struct config_value *v, void *ctx, char *err,
                          size_t errlen) {
    char *seen = ctx;
    if (strcmp(key, "nope") == 0)
        return -ENOENT;
    snprintf(seen + strlen(seen), 256 - strlen(seen), "%s=%d:%s;", key, (int)v->kind,
             v->kind == CONFIG_BOOL ? (v->flag ? "T" : "F")
             : v->text              ? v->text
                                    : "");
    return 0;
}

Test(config, load_applies_keys_in_file_order) {
    const char *path = cfg_write(".", "{\"b\": 1.50, \"a\": \"x\", \"c\": false, \"d\": null}");
    char seen[256] = "", used[ENGINE_PATH_MAX], err[512];
    cr_assert_eq(config_load(path, cfg_record_key, seen, used, err, sizeof(err)), 0, "%s", err);
    /* numbers keep their text as written */
    cr_assert_str_eq(seen, "b=2:1.50;a=3:x;c=1:F;d=0:;");
    cr_assert_str_eq(used, path);
    cr_assert_eq(config_load(NULL, cfg_record_key, seen, used, err, sizeof(err)), 0);
    cr_assert_str_eq(used, ""); /* no default file: nothing read */
    path = cfg_write(".", "{\"nope\": 1}");
    cr_assert_eq(config_load(path, cfg_record_key, seen, used, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "unknown key 'nope'"), "%s", err);
}
