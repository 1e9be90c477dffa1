/* The configuration file ($XDG_CONFIG_HOME/ringside/config.json or --config FILE): defaults
 * for the train/dashboard flags, and --print-config, which writes the effective options back
 * in the same format. */
#ifndef RINGSIDE_TUI_CLI_CONFIG_H
#define RINGSIDE_TUI_CLI_CONFIG_H

#include "tui/cli/cli_opts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct json_object;

#define CONFIG_MAX_BYTES (1u << 20) /* a config file larger than this is an error */

enum config_kind {
    CONFIG_NULL,   /* null: leave the option as it is */
    CONFIG_BOOL,   /* true/false: give a flag that takes no value, or not */
    CONFIG_NUMBER, /* text: the number as written in the file */
    CONFIG_STRING, /* text: the string */
};

/* One key's value. */
struct config_value {
    enum config_kind kind;
    const char *text; /* NUMBER, STRING */
    bool flag;        /* BOOL */
};

/* Applies one key (a long flag name without dashes, matched as cli_args matches a flag: by
 * its exact name): 0; -ENOENT when no such key exists, err holding what to suggest instead
 * (" (did you mean 'epochs'?)") or ""; any other negative errno with err holding the reason
 * (e.g. "--epochs: 'x' is not ..."). */
typedef int (*config_apply_fn)(const char *key, const struct config_value *v, void *ctx, char *err,
                               size_t errlen);

/* Read the config file and apply each key, in file order. path NULL: the default file
 * (json_file_config_dir()/config.json), silently skipped when it does not exist; otherwise the file
 * must exist. used (ENGINE_PATH_MAX bytes) gets the path read, "" when none. 0, or -errno with
 * err "FILE:LINE:COL: key 'K': reason" (at the value), "FILE:LINE:COL: unknown key 'K'" with
 * the suggestion (at the key), or "FILE: invalid JSON at line L, column C: why" (FILE is shown
 * with ~ for $HOME). */
int config_load(const char *path, config_apply_fn apply, void *ctx, char *used, char *err,
                size_t errlen);

/* The effective options as one pretty JSON object whose keys are the long flag names:
 * engine_conf_json's object with the front end's options (headless, dashboard, telemetry,
 * kernel log) added. Options that are not set (no --data, --resume, --frames, ...) are null.
 * Loading the output as a config file gives the same options. 0, or -ENOMEM / -EIO. */
int config_print(const struct cli_train_opts *o, FILE *out);

#endif
