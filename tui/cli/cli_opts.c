/* Parsing of the training/dashboard flags into an engine configuration. */
#include "tui/cli/cli_opts.h"

#include "backend/core/errbuf.h"
#include "backend/data/data_csv.h"
#include "backend/vpoc/vpoc.h"
#include "tui/cli/cli_args.h"
#include "tui/cli/cli_optab.h"
#include "tui/cli/cli_tele.h"
#include "tui/cli/config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct option *cli_train_options(void) {
    return cli_optab_longopts(CLI_CMD_TRAIN);
}

static int cli_int(const char *flag, const char *s, long lo, long hi, int *out, char *err,
                   size_t errlen) {
    long v = 0;
    int rc = cli_parse_long(flag, s, lo, hi, &v, err, errlen);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

static int cli_enum(const char *flag, const char *s, const char *a, const char *b, int *out,
                    char *err, size_t errlen) {
    if (strcmp(s, a) == 0 || strcmp(s, b) == 0) {
        *out = strcmp(s, a) == 0 ? 0 : 1;
        return 0;
    }
    return errbuf_set(err, errlen, -EINVAL, "%s: '%s' is not one of %s, %s", flag, s, a, b);
}

/* Decimal seconds into nanoseconds. */
static int cli_seconds(const char *flag, const char *s, uint64_t *ns, char *err, size_t errlen) {
    double v = 0;
    int rc = cli_parse_double(flag, s, 0.001, 86400, &v, err, errlen);
    if (rc == 0)
        *ns = (uint64_t)llround(v * 1e9);
    return rc;
}

/* --inject kmsg:FILE: the kernel-log watcher replays FILE (one at a time). */
static int cli_inject_kmsg(const char *path, struct kmsg_conf *k, char *err, size_t errlen) {
    if (k->inject[0])
        return errbuf_set(err, errlen, -EINVAL, "--inject kmsg: given twice; one file at a time");
    if (!path[0])
        return errbuf_set(err, errlen, -EINVAL, "--inject kmsg: needs a file: kmsg:FILE");
    return cli_copy("--inject kmsg:FILE", k->inject, sizeof(k->inject), path, err, errlen);
}

/* --inject SPEC[,SPEC...]: kmsg:FILE to the kernel-log watcher, each other spec added to the
 * engine's list. Commas separate specs, so a kmsg: path cannot hold one (it may hold ':'). */
static int cli_inject(const char *v, struct cli_train_opts *o, char *err, size_t errlen) {
    struct engine_conf *c = &o->run.conf;
    char buf[KMSG_PATH_MAX + 512];
    if (cli_copy("--inject", buf, sizeof(buf), v, err, errlen) != 0)
        return -EINVAL;
    for (char *save = NULL, *spec = strtok_r(buf, ",", &save); spec;
         spec = strtok_r(NULL, ",", &save)) {
        if (strncmp(spec, "kmsg:", 5) == 0) {
            if (cli_inject_kmsg(spec + 5, &o->run.kmsg, err, errlen) != 0)
                return -EINVAL;
            continue;
        }
        if (c->n_inject >= TRACE_MAX_INJECT)
            return errbuf_set(err, errlen, -EINVAL, "--inject: at most %d faults",
                              TRACE_MAX_INJECT);
        if (trace_inject_parse(spec, &c->inject[c->n_inject], err, errlen) != 0)
            return -EINVAL;
        c->n_inject++;
    }
    return 0;
}

/* The telemetry flags, by their long names. */
static int cli_train_tele(int id, const char *v, struct cli_train_opts *o, char *err,
                          size_t errlen) {
    char flag[64];
    return cli_tele_opt(cli_optab_flag(id, flag, sizeof(flag)), v, &o->run.tele, err, errlen);
}

static int cli_train_opt(int id, const char *v, struct cli_train_opts *o, char *err,
                         size_t errlen) {
    struct engine_conf *c = &o->run.conf;
    long l = 0;
    int k = 0, rc;
    switch (id) {
    case CLI_O_TRAIN_DATA:
        return cli_copy("--data", c->data_path, sizeof(c->data_path), v, err, errlen);
    case CLI_O_TRAIN_SYNTHETIC_DAYS:
        return cli_int("--synthetic-days", v, 3, 100000, &c->synthetic_days, err, errlen);
    case CLI_O_TRAIN_SEED:
        if ((rc = cli_parse_long("--seed", v, 0, LONG_MAX, &l, err, errlen)) == 0)
            c->seed = (uint64_t)l;
        return rc;
    case CLI_O_TRAIN_SYMBOL:
        return cli_copy("--symbol", c->symbol, sizeof(c->symbol), v, err, errlen);
    case CLI_O_TRAIN_COLUMNS:
        return cli_copy("--columns", c->columns, sizeof(c->columns), v, err, errlen);
    case CLI_O_TRAIN_TZ:
        return cli_copy("--tz", c->tz, sizeof(c->tz), v, err, errlen);
    case CLI_O_TRAIN_CONTINUOUS:
        return cli_continuous(v, &c->continuous, err, errlen);
    case CLI_O_TRAIN_TIME_UNIT:
        return cli_data_text("--time-unit", v, c->time_unit, sizeof(c->time_unit), err, errlen);
    case CLI_O_TRAIN_PRICE_SCALE:
        return cli_data_text("--price-scale", v, c->price_scale, sizeof(c->price_scale), err,
                             errlen);
    case CLI_O_TRAIN_BAR:
        return cli_data_text("--bar", v, c->bar, sizeof(c->bar), err, errlen);
    case CLI_O_TRAIN_SKIP_BAD_ROWS:
        c->skip_bad_rows = true;
        return 0;
    case CLI_O_TRAIN_SESSION_START_HOUR:
        return cli_int("--session-start-hour", v, 0, 23, &c->session_start_hour, err, errlen);
    case CLI_O_TRAIN_CHUNK:
        return cli_int("--chunk", v, 0, VPOC_CHUNK_MAX, &c->chunk_bars, err, errlen);
    case CLI_O_TRAIN_PROFILE:
        rc = cli_enum("--profile", v, "close", "range", &k, err, errlen);
        c->vpoc.profile = k ? VPOC_RANGE : VPOC_CLOSE;
        return rc;
    case CLI_O_TRAIN_VPOC_KERNEL:
        rc = cli_enum("--vpoc-kernel", v, "packed", "dense", &k, err, errlen);
        c->vpoc_kernel = k ? COMPUTE_VPOC_DENSE : COMPUTE_VPOC_PACKED;
        return rc;
    case CLI_O_TRAIN_TICK:
        return cli_parse_double("--tick", v, 1e-9, 1e9, &c->vpoc.tick, err, errlen);
    case CLI_O_TRAIN_VALUE_AREA:
        return cli_parse_double("--value-area", v, 1e-6, 1, &c->vpoc.value_area, err, errlen);
    case CLI_O_TRAIN_HORIZON:
        return cli_int("--horizon", v, 1, 100000, &c->horizon, err, errlen);
    case CLI_O_TRAIN_LOSS:
        if (mlp_loss_parse(v, &c->arch.loss) != 0)
            return errbuf_set(err, errlen, -EINVAL, "--loss: '%s' is not one of mse, bce", v);
        return 0;
    case CLI_O_TRAIN_HIDDEN:
        return mlp_hidden_parse(v, &c->arch, err, errlen);
    case CLI_O_TRAIN_ACTIVATION:
        if (mlp_act_parse(v, &c->arch.act) != 0)
            return errbuf_set(err, errlen, -EINVAL, "--activation: '%s' is not one of silu, relu",
                              v);
        return 0;
    case CLI_O_TRAIN_LR:
        return cli_parse_double("--lr", v, 1e-12, 10, &c->adam.lr, err, errlen);
    case CLI_O_TRAIN_WEIGHT_DECAY:
        return cli_parse_double("--weight-decay", v, 0, 10, &c->adam.weight_decay, err, errlen);
    case CLI_O_TRAIN_BATCH:
        return cli_int("--batch", v, 1, 1 << 20, &c->batch, err, errlen);
    case CLI_O_TRAIN_EPOCHS:
        return cli_int("--epochs", v, 0, 1000000, &c->epochs, err, errlen);
    case CLI_O_TRAIN_VAL_FRAC:
        return cli_parse_double("--val-frac", v, 0.01, 0.9, &c->val_frac, err, errlen);
    case CLI_O_TRAIN_METRIC_EVERY:
        return cli_int("--metric-every", v, 1, 1000000, &c->metric_every, err, errlen);
    case CLI_O_TRAIN_OUTPUT:
        return cli_copy("--output", c->output_dir, sizeof(c->output_dir), v, err, errlen);
    case CLI_O_TRAIN_NAME:
        return cli_copy("--name", c->name, sizeof(c->name), v, err, errlen);
    case CLI_O_TRAIN_RESUME:
        return cli_copy("--resume", c->resume_path, sizeof(c->resume_path), v, err, errlen);
    case CLI_O_TRAIN_HEADLESS:
        o->headless = true;
        return 0;
    case CLI_O_TRAIN_JSONL:
        return cli_copy("--jsonl", o->run.jsonl, sizeof(o->run.jsonl), v, err, errlen);
    case CLI_O_TRAIN_BACKEND:
        return cli_copy("--backend", c->backend, sizeof(c->backend), v, err, errlen);
    case CLI_O_TRAIN_DEVICE:
        return cli_int("--device", v, 0, TRACE_MAX_DEVICES - 1, &c->device, err, errlen);
    case CLI_O_TRAIN_DEVICES:
        return engine_devices_parse(v, c, err, errlen);
    case CLI_O_TRAIN_COMM_LIB:
        return cli_copy("--comm-lib", c->comm_lib, sizeof(c->comm_lib), v, err, errlen);
    case CLI_O_TRAIN_COMM_TIMEOUT:
        return cli_parse_double("--comm-timeout", v, 0.001, 86400, &c->comm_timeout_s, err, errlen);
    case CLI_O_TRAIN_TEARDOWN_TIMEOUT:
        return cli_parse_double("--teardown-timeout", v, 0.001, 86400, &c->teardown_timeout_s, err,
                                errlen);
    case CLI_O_TRAIN_THREADS:
        return cli_int("--threads", v, 1, 256, &c->threads, err, errlen);
    case CLI_O_TRAIN_ALLOC_CONF:
        return cli_copy("--alloc-conf", c->alloc_conf, sizeof(c->alloc_conf), v, err, errlen);
    case CLI_O_TRAIN_NO_PRE_CLEANUP:
        c->pre_cleanup = false;
        return 0;
    case CLI_O_TRAIN_FRAMES:
        return cli_int("--frames", v, 1, 100000000, &o->view.frames, err, errlen);
    case CLI_O_TRAIN_THEME:
        return cli_copy("--theme", o->view.theme, sizeof(o->view.theme), v, err, errlen);
    case CLI_O_VIEW_DELAY:
        return cli_int("--delay", v, 1, 600, &o->view.delay_ds, err, errlen);
    case CLI_O_TRAIN_RECORD:
        return cli_copy("--record", o->run.record, sizeof(o->run.record), v, err, errlen);
    case CLI_O_TRAIN_SYNC_SLOW:
        return cli_seconds("--sync-slow", v, &o->run.sync_slow_ns, err, errlen);
    case CLI_O_TRAIN_SYNC_TIMEOUT:
        return cli_seconds("--sync-timeout", v, &o->run.sync_timeout_ns, err, errlen);
    case CLI_O_TRAIN_VPOC_REFRESH:
        return cli_int("--vpoc-refresh", v, 0, 1000000, &c->vpoc_refresh, err, errlen);
    case CLI_O_TELE_TELEMETRY:
    case CLI_O_TELE_TELEMETRY_INTERVAL:
    case CLI_O_TELE_SYSFS_ROOT:
    case CLI_O_TELE_PROC_ROOT:
    case CLI_O_TELE_DEBUGFS_ROOT:
    case CLI_O_TELE_DEV_ROOT:
    case CLI_O_TELE_NVML_LIB:
        return cli_train_tele(id, v, o, err, errlen);
    case CLI_O_TRAIN_KMSG_FILE:
        return cli_copy("--kmsg-file", o->run.kmsg.file, sizeof(o->run.kmsg.file), v, err, errlen);
    case CLI_O_TRAIN_KMSG_BACKLOG:
        return cli_int("--kmsg-backlog", v, 0, 1000000, &o->run.kmsg.backlog, err, errlen);
    case CLI_O_TRAIN_KMSG_RULES:
        return cli_copy("--kmsg-rules", o->run.kmsg_rules, sizeof(o->run.kmsg_rules), v, err,
                        errlen);
    case CLI_O_TRAIN_NO_KMSG:
        o->run.kmsg.off = true;
        return 0;
    case CLI_O_TRAIN_INJECT:
        return cli_inject(v, o, err, errlen);
    case CLI_O_TRAIN_CONFIG: /* read before the other flags, by cli_train_parse */
    case CLI_O_TRAIN_PRINT_CONFIG:
        return 0;
    default:
        return errbuf_set(err, errlen, -EINVAL, "internal: unhandled option %d", id);
    }
}

/* Parser state for the training options. */
struct cli_train_ctx {
    struct cli_train_opts *o;
    bool epochs_set, refresh_set, chunk_set, kernel_set, print_config;
    struct cli_seen seen;     /* the options given on the command line */
    struct cli_seen cfg_seen; /* ... and in the config file */
};

/* Defaults that differ between the dashboard and headless mode, and cross-flag rules. */
static int cli_train_modes(struct cli_train_ctx *t, char *err, size_t errlen) {
    struct cli_train_opts *o = t->o;
    if (!o->headless && !t->epochs_set)
        o->run.conf.epochs = 0; /* until stopped: the demo keeps training while it is watched */
    if (!o->headless && !t->refresh_set)
        o->run.conf.vpoc_refresh = 1; /* the memory and phase panels keep showing VPOC chunks */
    /* the dense kernel, so the pool shows what the chunk does, from 250 bars: + + is 4x that,
     * 1000 bars, still below a session's 1380 */
    if (!o->headless && !t->kernel_set)
        o->run.conf.vpoc_kernel = COMPUTE_VPOC_DENSE;
    if (!o->headless && !t->chunk_set)
        o->run.conf.chunk_bars = 250;
    if (o->run.record[0] && o->headless)
        return errbuf_set(err, errlen, -EINVAL,
                          "--record is for the dashboard; headless mode writes --jsonl");
    if (o->run.sync_slow_ns >= o->run.sync_timeout_ns)
        return errbuf_set(err, errlen, -EINVAL,
                          "--sync-slow (%g s) must be less than --sync-timeout (%g s)",
                          (double)o->run.sync_slow_ns / 1e9, (double)o->run.sync_timeout_ns / 1e9);
    return 0;
}

static int cli_train_finish(struct cli_train_ctx *t, char *err, size_t errlen) {
    struct cli_train_opts *o = t->o;
    struct engine_conf *c = &o->run.conf;
    if (cli_train_modes(t, err, errlen) != 0)
        return -EINVAL;
    if (o->run.jsonl[0] && !o->headless)
        return errbuf_set(err, errlen, -EINVAL, "--jsonl needs --headless");
    if (o->headless && !o->run.jsonl[0])
        snprintf(o->run.jsonl, sizeof(o->run.jsonl), "-");
    if (o->view.frames && o->headless)
        return errbuf_set(err, errlen, -EINVAL, "--frames is for the dashboard, not --headless");
    if (o->run.kmsg.off && o->run.kmsg.file[0])
        return errbuf_set(err, errlen, -EINVAL, "--no-kmsg and --kmsg-file exclude each other");
    const char *src = "--alloc-conf";
    if (!c->alloc_conf[0] && getenv("RINGSIDE_ALLOC_CONF")) {
        src = "RINGSIDE_ALLOC_CONF";
        if (cli_copy(src, c->alloc_conf, sizeof(c->alloc_conf), getenv(src), err, errlen))
            return -EINVAL;
    }
    char why[256];
    if (mem_conf_parse(c->alloc_conf, &c->alloc, why, sizeof(why)) != 0)
        return errbuf_set(err, errlen, -EINVAL, "%s: %s", src, why);
    return engine_conf_validate(c, err, errlen);
}

/* Whether --resume or option id came from the config file. */
static bool cli_train_from_cfg(const struct cli_train_ctx *t, int id) {
    return cli_seen_has(&t->cfg_seen, CLI_O_TRAIN_RESUME) || cli_seen_has(&t->cfg_seen, id);
}

/* Whether option id was given, on the command line or in the config file. */
static bool cli_train_given(const struct cli_train_ctx *t, int id) {
    return cli_seen_has(&t->seen, id) || cli_seen_has(&t->cfg_seen, id);
}

/* Flags that contradict each other are an error, not a silent choice; a flag overrides the
 * config file's data, and the architecture conflicts with --resume from either source. */
static int cli_train_conflicts(struct cli_train_ctx *t, char *err, size_t errlen) {
    bool data = cli_seen_has(&t->seen, CLI_O_TRAIN_DATA);
    bool days = cli_seen_has(&t->seen, CLI_O_TRAIN_SYNTHETIC_DAYS);
    if (data && days)
        return errbuf_set(err, errlen, -EINVAL, "--data and --synthetic-days exclude each other");
    if (days && !data)
        t->o->run.conf.data_path[0] = '\0';
    static const struct {
        int id;
        const char *flag;
    } arch[] = {{CLI_O_TRAIN_HIDDEN, "--hidden"},
                {CLI_O_TRAIN_LOSS, "--loss"},
                {CLI_O_TRAIN_ACTIVATION, "--activation"}};
    for (size_t i = 0; cli_train_given(t, CLI_O_TRAIN_RESUME) && i < 3; i++)
        if (cli_train_given(t, arch[i].id))
            return errbuf_set(err, errlen, -EINVAL,
                              "%s cannot be combined with --resume: the model's architecture "
                              "comes from the checkpoint%s%s",
                              arch[i].flag, cli_train_from_cfg(t, arch[i].id) ? "; see " : "",
                              cli_train_from_cfg(t, arch[i].id) ? t->o->run.config : "");
    return 0;
}

/* `watch` trains nothing: a data, training or compute flag (CLI_F_TRAINING) given to it is a
 * mistake, said as one, not a flag taken and ignored (a config file's keys are shared with
 * train: not these). */
static int cli_watch_refuses(const struct cli_train_ctx *t, char *err, size_t errlen) {
    size_t n;
    const struct cli_opt_row *rows = cli_optab_rows(&n);
    for (size_t i = 0; i < n; i++)
        if ((rows[i].flags & CLI_F_TRAINING) && cli_seen_has(&t->seen, rows[i].id))
            return errbuf_set(err, errlen, -EINVAL,
                              "--%s does not apply: watch trains nothing (it shows the jobs "
                              "that attach)",
                              rows[i].name);
    return 0;
}

static int cli_train_on_opt(int id, const char *v, void *ctx, char *err, size_t errlen) {
    struct cli_train_ctx *t = ctx;
    t->epochs_set |= id == CLI_O_TRAIN_EPOCHS;
    t->refresh_set |= id == CLI_O_TRAIN_VPOC_REFRESH;
    t->chunk_set |= id == CLI_O_TRAIN_CHUNK;
    t->kernel_set |= id == CLI_O_TRAIN_VPOC_KERNEL;
    t->print_config |= id == CLI_O_TRAIN_PRINT_CONFIG;
    cli_seen_add(&t->seen, id);
    return cli_train_opt(id, v, t->o, err, errlen);
}

/* A config file key: the same options as the flags, found by the same rule, through the same
 * code. */
static int cli_train_on_key(const char *key, const struct config_value *v, void *ctx, char *err,
                            size_t errlen) {
    const struct option *tables[] = {cli_optab_longopts(CLI_CMD_TRAIN), NULL};
    const struct option *op = cli_args_find(tables, key, strlen(key), NULL);
    if (!op) {
        cli_args_suggest(tables, key, strlen(key), "'", "'", err, errlen);
        return -ENOENT;
    }
    if (op->val == CLI_O_HELP || op->val == CLI_O_TRAIN_CONFIG ||
        op->val == CLI_O_TRAIN_PRINT_CONFIG)
        return errbuf_set(err, errlen, -EINVAL, "--%s is for the command line only", key);
    if (v->kind == CONFIG_NULL)
        return 0;
    if (op->has_arg == no_argument && v->kind != CONFIG_BOOL)
        return errbuf_set(err, errlen, -EINVAL, "--%s takes no value: use true or false", key);
    if (op->has_arg != no_argument && v->kind == CONFIG_BOOL)
        return errbuf_set(err, errlen, -EINVAL, "--%s needs a value, not %s", key,
                          v->flag ? "true" : "false");
    if (v->kind == CONFIG_BOOL && !v->flag)
        return 0;
    return cli_train_on_opt(op->val, v->text, ctx, err, errlen);
}

/* First pass over argv: only --config and --help matter, since the config file is applied
 * before the flags (and --help works whatever the file holds). Errors are the second pass's. */
static void cli_train_prescan(int argc, char **argv, const char **config, bool *help) {
    const struct option *tables[] = {cli_optab_longopts(CLI_CMD_TRAIN), NULL};
    struct cli_args a;
    cli_args_init(&a, argc, argv, cli_optab_shortopts(CLI_CMD_TRAIN), tables);
    char err[8];
    int id;
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id == CLI_O_TRAIN_CONFIG)
            *config = a.value;
        *help |= id == 'h' || id == CLI_O_HELP;
    }
}

static void cli_train_defaults(struct cli_train_opts *o) {
    memset(o, 0, sizeof(*o));
    engine_conf_default(&o->run.conf);
    o->view.delay_ds = 5;
    o->run.sync_slow_ns = 1000000000ull;
    o->run.sync_timeout_ns = 30000000000ull;
    tele_conf_default(&o->run.tele);
    kmsg_conf_default(&o->run.kmsg);
    const char *dev = getenv("RINGSIDE_KMSG_DEVICE"); /* e.g. a container's own copy */
    if (dev && *dev)
        snprintf(o->run.kmsg.kmsg_path, sizeof(o->run.kmsg.kmsg_path), "%s", dev);
}

int cli_train_parse(int argc, char **argv, const char *cmd, struct cli_train_opts *o) {
    cli_train_defaults(o);
    struct cli_train_ctx t = {.o = o};
    const char *config = NULL;
    bool help = false;
    char err[2048];
    cli_train_prescan(argc, argv, &config, &help);
    if (!help && config_load(config, cli_train_on_key, &t, o->run.config, err, sizeof(err)) != 0)
        return cli_usage_error(cmd, err);
    t.cfg_seen = t.seen;
    t.seen = (struct cli_seen){0};
    bool watch = strcmp(cmd, "watch") == 0;
    int rc = cli_getopt_run(argc, argv, cmd, CLI_CMD_TRAIN, false, cli_train_on_opt, &t);
    if (rc != 0)
        return rc;
    if ((watch && cli_watch_refuses(&t, err, sizeof(err)) != 0) ||
        cli_train_conflicts(&t, err, sizeof(err)) != 0 ||
        cli_train_finish(&t, err, sizeof(err)) != 0)
        return cli_usage_error(cmd, err);
    if (t.print_config && config_print(o, stdout) != 0) {
        fprintf(stderr, "ringside: cannot write the configuration to stdout\n");
        return RS_EXIT_USAGE;
    }
    return t.print_config ? 1 : 0; /* 1: printed, exit 0 */
}
