/* libFuzzer target for the config file: arbitrary bytes as the file of `ringside train --config
 * FILE --headless`, through the real option parser; the options are checked when accepted (and
 * printed, read back and printed the same), the message on stderr when refused. */
#include "backend/engine/engine.h"
#include "backend/memory/mem_conf.h"
#include "tests/fuzz/fuzz_target.h"
#include "tui/cli/cli_opts.h"
#include "tui/cli/config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_CONFIG_OUT (64 * 1024)

/* The per-process files: the config, its --print-config form, and what went to stderr. */
static char fuzz_config_path[64], fuzz_config_rt_path[64], fuzz_config_err_path[64];
static FILE *fuzz_config_err; /* stands in for stderr while the parser runs */
static char fuzz_config_out[FUZZ_CONFIG_OUT + 1];

static void fuzz_config_write(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(fclose(f) == 0);
}

/* cli_train_parse on `train --config path --headless`, with what it writes to stderr captured
 * into fuzz_config_out (the C stream only: libFuzzer and the sanitizers keep the real fd 2). */
static int fuzz_config_parse(const char *path, struct cli_train_opts *o, size_t *out_len) {
    char a0[] = "train", a1[] = "--config", a3[] = "--headless";
    char a2[64];
    snprintf(a2, sizeof(a2), "%s", path);
    char *argv[] = {a0, a1, a2, a3, NULL}; /* fresh for each parse */
    FUZZ_CHECK(fseek(fuzz_config_err, 0, SEEK_SET) == 0);
    FUZZ_CHECK(ftruncate(fileno(fuzz_config_err), 0) == 0);
    FILE *real = stderr;
    stderr = fuzz_config_err;
    int rc = cli_train_parse(4, argv, "train", o);
    stderr = real;
    FUZZ_CHECK(fflush(fuzz_config_err) == 0);
    long n = ftell(fuzz_config_err);
    FUZZ_CHECK(n >= 0 && n <= FUZZ_CONFIG_OUT);
    FUZZ_CHECK(fseek(fuzz_config_err, 0, SEEK_SET) == 0);
    *out_len = fread(fuzz_config_out, 1, (size_t)n, fuzz_config_err);
    FUZZ_CHECK(*out_len == (size_t)n);
    fuzz_config_out[n] = '\0';
    return rc;
}

static int fuzz_config_count(const char *s, char ch) {
    int n = 0;
    for (; *s; s++)
        n += *s == ch;
    return n;
}

/* Once: the files and stderr's stand-in. */
static void fuzz_config_init(void) {
    long pid = (long)getpid();
    snprintf(fuzz_config_path, sizeof(fuzz_config_path), "/tmp/fuzz_config_%ld.json", pid);
    snprintf(fuzz_config_rt_path, sizeof(fuzz_config_rt_path), "/tmp/fuzz_config_%ld_rt.json", pid);
    snprintf(fuzz_config_err_path, sizeof(fuzz_config_err_path), "/tmp/fuzz_config_%ld.err", pid);
    fuzz_config_err = fopen(fuzz_config_err_path, "w+");
    FUZZ_CHECK(fuzz_config_err != NULL);
    unsetenv("RINGSIDE_ALLOC_CONF");
}

/* Accepted options: what cli_train_parse promises for a headless run. */
static void fuzz_config_check_opts(const struct cli_train_opts *o) {
    char err[512];
    FUZZ_CHECK(engine_conf_validate(&o->run.conf, err, sizeof(err)) == 0);
    FUZZ_CHECK(strcmp(o->run.config, fuzz_config_path) == 0);
    FUZZ_CHECK(o->headless && o->run.jsonl[0] != '\0');
    FUZZ_CHECK(o->view.frames == 0 && o->run.record[0] == '\0');
    FUZZ_CHECK(o->run.sync_slow_ns < o->run.sync_timeout_ns);
    FUZZ_CHECK(!(o->run.kmsg.off && o->run.kmsg.file[0]));
    const struct mem_conf *a = &o->run.conf.alloc;
    FUZZ_CHECK(a->gc_threshold >= 0.0 && a->gc_threshold < 1.0 && a->round_bytes == 512);
    struct mem_conf again;
    FUZZ_CHECK(mem_conf_parse(o->run.conf.alloc_conf, &again, err, sizeof(err)) == 0);
    FUZZ_CHECK(again.max_split_size_bytes == a->max_split_size_bytes);
}

/* --print-config's output, read back as the config file, prints the same. */
static void fuzz_config_round_trip(const struct cli_train_opts *o) {
    FILE *f = fopen(fuzz_config_rt_path, "w+");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(config_print(o, f) == 0);
    long n = ftell(f);
    FUZZ_CHECK(n > 0 && n < FUZZ_CONFIG_OUT);
    char *first = malloc((size_t)n + 1);
    FUZZ_CHECK(first != NULL);
    rewind(f);
    FUZZ_CHECK(fread(first, 1, (size_t)n, f) == (size_t)n);
    first[n] = '\0';
    FUZZ_CHECK(fclose(f) == 0);

    struct cli_train_opts *back = malloc(sizeof(*back));
    FUZZ_CHECK(back != NULL);
    size_t out_len;
    FUZZ_CHECK(fuzz_config_parse(fuzz_config_rt_path, back, &out_len) == 0 && out_len == 0);
    f = fopen(fuzz_config_rt_path, "w+");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(config_print(back, f) == 0);
    FUZZ_CHECK(ftell(f) == n);
    rewind(f);
    char *second = malloc((size_t)n + 1);
    FUZZ_CHECK(second != NULL);
    FUZZ_CHECK(fread(second, 1, (size_t)n, f) == (size_t)n);
    second[n] = '\0';
    FUZZ_CHECK(fclose(f) == 0);
    FUZZ_CHECK(memcmp(first, second, (size_t)n) == 0);
    free(second);
    free(first);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_config_err)
        fuzz_config_init();
    fuzz_config_write(fuzz_config_path, data, size);
    struct cli_train_opts *o = malloc(sizeof(*o));
    FUZZ_CHECK(o != NULL);
    size_t out_len;
    int rc = fuzz_config_parse(fuzz_config_path, o, &out_len);
    if (rc == 0) {
        FUZZ_CHECK(out_len == 0);
        fuzz_config_check_opts(o);
        fuzz_config_round_trip(o);
    } else {
        /* one line, "ringside: MSG; see 'ringside train --help'\n", whatever the file quotes */
        static const char hint[] = "; see 'ringside train --help'\n";
        FUZZ_CHECK(rc == RS_EXIT_USAGE);
        FUZZ_CHECK(strncmp(fuzz_config_out, "ringside: ", 10) == 0);
        FUZZ_CHECK(out_len > 10 + sizeof(hint) - 1);
        FUZZ_CHECK(strcmp(fuzz_config_out + out_len - (sizeof(hint) - 1), hint) == 0);
        FUZZ_CHECK(strlen(fuzz_config_out) == out_len);
        FUZZ_CHECK(fuzz_config_count(fuzz_config_out, '\n') == 1);
    }
    free(o);
    return 0;
}

const char fuzz_target_name[] = "fuzz_config";

/* Pieces of real config files (keys are the long flags of `ringside train`). */
const char *const fuzz_fragments[] = {
    "{\"epochs\": 50, \"theme\": \"nord\", \"delay\": 3}",
    "{\"seed\": 7, \"data\": null}",
    "{\"epochs\": 50, \"chunk\": 250, \"data\": \"/no/such.csv\"}",
    "\"synthetic-days\": 30",
    "\"skip-bad-rows\": true",
    "\"session-start-hour\": 23",
    "\"profile\": \"range\"",
    "\"tick\": 0.25",
    "\"value-area\": 0.7",
    "\"horizon\": 5",
    "\"loss\": \"bce\"",
    "\"hidden\": \"64,32\"",
    "\"activation\": \"relu\"",
    "\"lr\": 1e-3",
    "\"weight-decay\": 0",
    "\"batch\": 1048576",
    "\"val-frac\": 0.9",
    "\"metric-every\": 10",
    "\"output\": \"runs\"",
    "\"name\": \"vpoc_mlp\"",
    "\"resume\": \"ckpt.rsmodel\"",
    "\"jsonl\": \"-\"",
    "\"backend\": \"hip\"",
    "\"threads\": 256",
    "\"alloc-conf\": \"max_split_size_mb:128,garbage_collection_threshold:0.8\"",
    "\"no-pre-cleanup\": false",
    "\"frames\": 3",
    "\"record\": \"x.jsonl\"",
    "\"sync-slow\": 30",
    "\"sync-timeout\": 0.001",
    "\"telemetry\": \"sysfs\"",
    "\"telemetry-interval\": 50",
    "\"sysfs-root\": \"/\"",
    "\"kmsg-file\": \"dmesg.txt\"",
    "\"no-kmsg\": true",
    "\"vpoc-refresh\": 0",
    "\"print-config\": true",
    "9223372036854775808",
    "\"\\u0000\"",
    "[64, 32]",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
