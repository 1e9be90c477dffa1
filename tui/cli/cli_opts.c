/* Parsing of the training/dashboard flags into an engine configuration. */
#include "tui/cli/cli_opts.h"

#include "backend/core/errbuf.h"
#include "backend/core/secret_file.h"
#include "backend/data/data_csv.h"
#include "backend/vpoc/vpoc.h"
#include "tui/cli/cli_args.h"
#include "tui/cli/cli_tele.h"
#include "tui/cli/config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char cli_train_usage[] =
    "usage: ringside [train] [--headless] [--jsonl FILE|-] [--data FILE | --synthetic-days N] "
    "[options]";
static const char cli_watch_usage[] = "usage: ringside watch [--socket PATH] [dashboard options]";

static const char cli_train_help[] =
    "Run the VPOC + MLP training loop, with the dashboard or headless.\n"
    "\n"
    "Data:\n"
    "  --data FILE              OHLCV(+VIX) CSV to train on (default: synthetic data)\n"
    "  --synthetic-days N       trading days of synthetic ES bars (default 60)\n"
    "  --seed S                 seed for synthetic data, init and shuffling (default 42)\n"
    "  --skip-bad-rows          skip (and count) invalid CSV rows instead of stopping\n"
    "  --symbol NAME            the instrument to train on, from a file of several (Databento)\n"
    "  --columns LIST           a file without a header: its columns, e.g.\n"
    "                           timestamp,open,high,low,close,volume (_ skips one)\n"
    "  --tz ZONE                the file's times are local to ZONE (IANA, e.g.\n"
    "                           America/Chicago), daylight saving included (default UTC)\n"
    "  --continuous front       several contracts in one file: the front month, rolled the\n"
    "                           day after the next contract trades more\n"
    "  --time-unit s|ms|us|ns   the unit of integer timestamps (default: by their digits)\n"
    "  --price-scale 1e-N       prices are integers in 1e-N units (default: Databento's\n"
    "                           fixed point from its layout, other files as written)\n"
    "  --bar LENGTH             aggregate the rows into bars of LENGTH (30s, 1m, 5m, 1h;\n"
    "                           default: ticks into 1m bars, bars as they are)\n"
    "  --session-start-hour H   trading day D starts at D-1 H:00 UTC (default 18; 0 = calendar)\n"
    "VPOC:\n"
    "  --chunk N                bars per VPOC chunk, 0 = whole session (default 500;\n"
    "                           250 in the dashboard, where + + makes it 1000)\n"
    "  --profile close|range    volume at the close, or spread over low..high (default close)\n"
    "  --vpoc-kernel packed|dense  packed: 8 bytes a bar, profiles on chip; dense: a bars x\n"
    "                           levels matrix a chunk from the pool, as PyTorch code does, so\n"
    "                           the pool follows the chunk (default packed; dense in the\n"
    "                           dashboard)\n"
    "  --tick T                 price increment (default 0.25)\n"
    "  --value-area F           value-area fraction (default 0.70)\n"
    "  --vpoc-refresh N         re-run VPOC every N epochs, 0 = only before training\n"
    "                           (default 0; 1 in the dashboard)\n"
    "Model:\n"
    "  --horizon N              forward-return horizon in bars (default 15)\n"
    "  --loss mse|bce           regression on the return, or its sign (default mse)\n"
    "  --hidden LIST            hidden layer widths (default 32,16)\n"
    "  --activation silu|relu   (default silu)\n"
    "  --lr X                   Adam learning rate (default 2e-4)\n"
    "  --weight-decay X         Adam L2 weight decay (default 0)\n"
    "  --batch N                mini-batch size (default 256)\n"
    "  --epochs N               epochs to run, 0 = until stopped (default 10; 0 in the\n"
    "                           dashboard); the best model by val loss is kept as well\n"
    "  --val-frac F             fraction of sessions (the last ones) to validate on (0.2)\n"
    "  --metric-every N         steps between metric events (default 20)\n"
    "Output:\n"
    "  --output DIR             checkpoint directory (default ./TRAINING)\n"
    "  --name NAME              checkpoint base name (default vpoc_mlp)\n"
    "  --resume FILE            continue training from a checkpoint (.rsmodel)\n"
    "  --headless               no dashboard: write JSON lines instead\n"
    "  --jsonl FILE|-           where headless JSON lines go (default -, stdout)\n"
    "Compute:\n"
    "  --backend auto|cpu|hip   compute backend (default auto: a GPU if any, else cpu)\n"
    "  --device N               GPU to train on (default 0)\n"
    "  --devices LIST|all       data-parallel training on several devices, e.g. 0,1 or 0-3\n"
    "                           (--batch is per device; cpu: simulated devices)\n"
    "  --comm-lib PATH          communication library (default libnccl.so.2 on NVIDIA,\n"
    "                           librccl.so.1 on AMD)\n"
    "  --comm-timeout SECONDS   joining the group and each collective (default 300)\n"
    "  --teardown-timeout SECONDS  the whole way out (a stop, a failed device, the end of\n"
    "                           training): past it the group is aborted, and 1 s later a\n"
    "                           call still stuck leaves the process, status 3 (default 30)\n"
    "  --threads N              CPU backend MLP threads (default 1)\n"
    "  --alloc-conf CONF        caching allocator, PYTORCH_HIP_ALLOC_CONF syntax\n"
    "                           (default $RINGSIDE_ALLOC_CONF), e.g. max_split_size_mb:128\n"
    "  --no-pre-cleanup         skip the safe cleanup between VPOC and training\n"
    "Dashboard:\n"
    "  -d, --delay N            refresh interval in tenths of a second (default 5)\n"
    "  --theme NAME|PATH        colour theme: a JSON file, or NAME from ./themes,\n"
    "                           $XDG_CONFIG_HOME/ringside/themes or the installed themes\n"
    "                           (default, mono, high-contrast, nord, gruvbox, solarized-dark)\n"
    "  --frames N               render N frames, then stop training and exit\n"
    "  --record FILE            also write the headless JSON lines to FILE\n"
    "  --sync-slow SECONDS      a sync in flight longer than this is slow (default 1;\n"
    "                           joining or leaving a group of devices: 5 at least)\n"
    "  --sync-timeout SECONDS   ... and longer than this is a HANG (default 30)\n"
    "  --inject SPEC[,SPEC]     rehearse a fault (repeatable): hang:PHASE:SECONDS (the first\n"
    "                           sync in PHASE waits that long; GPU: behind the hang kernel;\n"
    "                           comm-init, allreduce, barrier, teardown: the device holds\n"
    "                           back from the call that long; load, features: a device sync\n"
    "                           held in the phase), drop:devN (device N leaves mid-epoch),\n"
    "                           slow-sync:PHASE:MS (every sync in PHASE waits MS more),\n"
    "                           oom:vpoc|h2d (the next allocation meets a full device),\n"
    "                           error:PHASE:NAME (the next sync reports a runtime error:\n"
    "                           no-kernel-image, ecc, illegal-address, launch-timeout,\n"
    "                           launch-failure), write:checkpoint:N (the run's Nth\n"
    "                           checkpoint file, model or metadata, meets a full disk),\n"
    "                           stall:checkpoint:N (... blocks for good, as on a hung NFS);\n"
    "                           PHASE: vpoc, cleanup, forward, ...;\n"
    "                           any of these ending in :devN acts on device N alone;\n"
    "                           kmsg:FILE (FILE's lines reach the kernel-log watcher as if the\n"
    "                           kernel printed them, at their [seconds] stamps' pace, silences\n"
    "                           cut to 10 s; FILE cannot contain a comma)\n"
    "Telemetry (every GPU in the machine, whatever runs on it):\n" CLI_TELE_HELP
    "Kernel log (driver errors on the timeline and in the events):\n"
    "  --kmsg-file FILE         follow FILE or a FIFO (dmesg / journalctl -k text) instead of\n"
    "                           /dev/kmsg, e.g. journalctl -kf -o short-monotonic > FIFO\n"
    "  --kmsg-backlog N         also show the N kernel records before the start (default 0)\n"
    "  --kmsg-rules FILE        remedies to consult before the shipped ones (default\n"
    "                           $XDG_CONFIG_HOME/ringside/remedies.json, when it exists)\n"
    "  --no-kmsg                do not read the kernel log\n"
    "Configuration:\n"
    "  --config FILE            read defaults for these options from FILE (default\n"
    "                           $XDG_CONFIG_HOME/ringside/config.json, when it exists)\n"
    "  --print-config           print the effective options as JSON (a config file) and exit\n"
    "  -h, --help               show this help\n";

enum cli_opt_id {
    OPT_DATA = 256,
    OPT_SYNTH_DAYS,
    OPT_SEED,
    OPT_SKIP_BAD,
    OPT_SYMBOL,
    OPT_COLUMNS,
    OPT_TZ,
    OPT_CONTINUOUS,
    OPT_TIME_UNIT,
    OPT_PRICE_SCALE,
    OPT_BAR,
    OPT_START_HOUR,
    OPT_CHUNK,
    OPT_PROFILE,
    OPT_VPOC_KERNEL,
    OPT_TICK,
    OPT_VALUE_AREA,
    OPT_HORIZON,
    OPT_LOSS,
    OPT_HIDDEN,
    OPT_ACT,
    OPT_LR,
    OPT_WD,
    OPT_BATCH,
    OPT_EPOCHS,
    OPT_VAL_FRAC,
    OPT_METRIC_EVERY,
    OPT_OUTPUT,
    OPT_NAME,
    OPT_RESUME,
    OPT_HEADLESS,
    OPT_JSONL,
    OPT_BACKEND,
    OPT_DEVICE,
    OPT_DEVICES,
    OPT_COMM_LIB,
    OPT_COMM_TIMEOUT,
    OPT_TEARDOWN_TIMEOUT,
    OPT_THREADS,
    OPT_ALLOC_CONF,
    OPT_NO_PRE_CLEANUP,
    OPT_FRAMES,
    OPT_THEME,
    OPT_RECORD,
    OPT_SYNC_SLOW,
    OPT_SYNC_TIMEOUT,
    OPT_VPOC_REFRESH,
    OPT_CONFIG,
    OPT_PRINT_CONFIG,
    OPT_TELEMETRY,
    OPT_TELE_INTERVAL,
    OPT_SYSFS_ROOT,
    OPT_PROC_ROOT,
    OPT_DEBUGFS_ROOT,
    OPT_DEV_ROOT,
    OPT_NVML_LIB,
    OPT_KMSG_FILE,
    OPT_KMSG_BACKLOG,
    OPT_KMSG_RULES,
    OPT_NO_KMSG,
    OPT_INJECT,
};

static const struct option cli_train_longopts[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"synthetic-days", required_argument, NULL, OPT_SYNTH_DAYS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"skip-bad-rows", no_argument, NULL, OPT_SKIP_BAD},
    {"symbol", required_argument, NULL, OPT_SYMBOL},
    {"columns", required_argument, NULL, OPT_COLUMNS},
    {"tz", required_argument, NULL, OPT_TZ},
    {"continuous", required_argument, NULL, OPT_CONTINUOUS},
    {"time-unit", required_argument, NULL, OPT_TIME_UNIT},
    {"price-scale", required_argument, NULL, OPT_PRICE_SCALE},
    {"bar", required_argument, NULL, OPT_BAR},
    {"session-start-hour", required_argument, NULL, OPT_START_HOUR},
    {"chunk", required_argument, NULL, OPT_CHUNK},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"vpoc-kernel", required_argument, NULL, OPT_VPOC_KERNEL},
    {"tick", required_argument, NULL, OPT_TICK},
    {"value-area", required_argument, NULL, OPT_VALUE_AREA},
    {"horizon", required_argument, NULL, OPT_HORIZON},
    {"loss", required_argument, NULL, OPT_LOSS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"activation", required_argument, NULL, OPT_ACT},
    {"lr", required_argument, NULL, OPT_LR},
    {"weight-decay", required_argument, NULL, OPT_WD},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"val-frac", required_argument, NULL, OPT_VAL_FRAC},
    {"metric-every", required_argument, NULL, OPT_METRIC_EVERY},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"name", required_argument, NULL, OPT_NAME},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"headless", no_argument, NULL, OPT_HEADLESS},
    {"jsonl", required_argument, NULL, OPT_JSONL},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"comm-lib", required_argument, NULL, OPT_COMM_LIB},
    {"comm-timeout", required_argument, NULL, OPT_COMM_TIMEOUT},
    {"teardown-timeout", required_argument, NULL, OPT_TEARDOWN_TIMEOUT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"alloc-conf", required_argument, NULL, OPT_ALLOC_CONF},
    {"no-pre-cleanup", no_argument, NULL, OPT_NO_PRE_CLEANUP},
    {"frames", required_argument, NULL, OPT_FRAMES},
    {"theme", required_argument, NULL, OPT_THEME},
    {"record", required_argument, NULL, OPT_RECORD},
    {"sync-slow", required_argument, NULL, OPT_SYNC_SLOW},
    {"sync-timeout", required_argument, NULL, OPT_SYNC_TIMEOUT},
    {"vpoc-refresh", required_argument, NULL, OPT_VPOC_REFRESH},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"print-config", no_argument, NULL, OPT_PRINT_CONFIG},
    {"telemetry", required_argument, NULL, OPT_TELEMETRY},
    {"telemetry-interval", required_argument, NULL, OPT_TELE_INTERVAL},
    {"sysfs-root", required_argument, NULL, OPT_SYSFS_ROOT},
    {"proc-root", required_argument, NULL, OPT_PROC_ROOT},
    {"debugfs-root", required_argument, NULL, OPT_DEBUGFS_ROOT},
    {"dev-root", required_argument, NULL, OPT_DEV_ROOT},
    {"nvml-lib", required_argument, NULL, OPT_NVML_LIB},
    {"kmsg-file", required_argument, NULL, OPT_KMSG_FILE},
    {"kmsg-backlog", required_argument, NULL, OPT_KMSG_BACKLOG},
    {"kmsg-rules", required_argument, NULL, OPT_KMSG_RULES},
    {"no-kmsg", no_argument, NULL, OPT_NO_KMSG},
    {"inject", required_argument, NULL, OPT_INJECT},
    {"delay", required_argument, NULL, 'd'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

const struct option *cli_train_options(void) {
    return cli_train_longopts;
}

int cli_usage_error(const char *cmd, const char *msg) {
    char line[4608]; /* errbuf_set keeps it one line whatever the words quoted in msg hold */
    errbuf_set(line, sizeof(line), 0, "%s; see 'ringside %s --help'", msg, cmd[0] ? cmd : "train");
    fprintf(stderr, "ringside: %s\n", line);
    return RS_EXIT_USAGE;
}

int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out, char *err,
                   size_t errlen) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return errbuf_set(err, errlen, -EINVAL, "%s: '%s' is not an integer in [%ld, %ld]", flag, s,
                          lo, hi);
    *out = v;
    return 0;
}

int cli_parse_double(const char *flag, const char *s, double lo, double hi, double *out, char *err,
                     size_t errlen) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return errbuf_set(err, errlen, -EINVAL, "%s: '%s' is not a number in [%g, %g]", flag, s, lo,
                          hi);
    *out = v;
    return 0;
}

int cli_copy(const char *flag, char *dst, size_t cap, const char *src, char *err, size_t errlen) {
    if (strlen(src) >= cap)
        return errbuf_set(err, errlen, -ENAMETOOLONG, "%s: value longer than %zu bytes", flag,
                          cap - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

int cli_data_text(const char *flag, const char *v, char *dst, size_t cap, char *err,
                  size_t errlen) {
    int rc = data_csv_opt_check(flag, v, NULL, err, errlen);
    return rc != 0 ? rc : cli_copy(flag, dst, cap, v, err, errlen);
}

int cli_continuous(const char *v, bool *on, char *err, size_t errlen) {
    if (strcmp(v, "front") != 0)
        return errbuf_set(err, errlen, -EINVAL, "--continuous: '%s' is not front", v);
    *on = true;
    return 0;
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

/* One option; 0 or -EINVAL with err. */
/* The telemetry flags, by their long names. */
static int cli_train_tele(int id, const char *v, struct cli_train_opts *o, char *err,
                          size_t errlen) {
    char flag[48];
    for (const struct option *op = cli_train_longopts; op->name; op++)
        if (op->val == id) {
            snprintf(flag, sizeof(flag), "--%s", op->name);
            return cli_tele_opt(flag, v, &o->run.tele, err, errlen);
        }
    return errbuf_set(err, errlen, -EINVAL, "internal: unhandled option %d", id);
}

static int cli_train_opt(int id, const char *v, struct cli_train_opts *o, char *err,
                         size_t errlen) {
    struct engine_conf *c = &o->run.conf;
    long l = 0;
    int k = 0, rc;
    switch (id) {
    case OPT_DATA:
        return cli_copy("--data", c->data_path, sizeof(c->data_path), v, err, errlen);
    case OPT_SYNTH_DAYS:
        return cli_int("--synthetic-days", v, 3, 100000, &c->synthetic_days, err, errlen);
    case OPT_SEED:
        if ((rc = cli_parse_long("--seed", v, 0, LONG_MAX, &l, err, errlen)) == 0)
            c->seed = (uint64_t)l;
        return rc;
    case OPT_SYMBOL:
        return cli_copy("--symbol", c->symbol, sizeof(c->symbol), v, err, errlen);
    case OPT_COLUMNS:
        return cli_copy("--columns", c->columns, sizeof(c->columns), v, err, errlen);
    case OPT_TZ:
        return cli_copy("--tz", c->tz, sizeof(c->tz), v, err, errlen);
    case OPT_CONTINUOUS:
        return cli_continuous(v, &c->continuous, err, errlen);
    case OPT_TIME_UNIT:
        return cli_data_text("--time-unit", v, c->time_unit, sizeof(c->time_unit), err, errlen);
    case OPT_PRICE_SCALE:
        return cli_data_text("--price-scale", v, c->price_scale, sizeof(c->price_scale), err,
                             errlen);
    case OPT_BAR:
        return cli_data_text("--bar", v, c->bar, sizeof(c->bar), err, errlen);
    case OPT_SKIP_BAD:
        c->skip_bad_rows = true;
        return 0;
    case OPT_START_HOUR:
        return cli_int("--session-start-hour", v, 0, 23, &c->session_start_hour, err, errlen);
    case OPT_CHUNK:
        return cli_int("--chunk", v, 0, VPOC_CHUNK_MAX, &c->chunk_bars, err, errlen);
    case OPT_PROFILE:
        rc = cli_enum("--profile", v, "close", "range", &k, err, errlen);
        c->vpoc.profile = k ? VPOC_RANGE : VPOC_CLOSE;
        return rc;
    case OPT_VPOC_KERNEL:
        rc = cli_enum("--vpoc-kernel", v, "packed", "dense", &k, err, errlen);
        c->vpoc_kernel = k ? COMPUTE_VPOC_DENSE : COMPUTE_VPOC_PACKED;
        return rc;
    case OPT_TICK:
        return cli_parse_double("--tick", v, 1e-9, 1e9, &c->vpoc.tick, err, errlen);
    case OPT_VALUE_AREA:
        return cli_parse_double("--value-area", v, 1e-6, 1, &c->vpoc.value_area, err, errlen);
    case OPT_HORIZON:
        return cli_int("--horizon", v, 1, 100000, &c->horizon, err, errlen);
    case OPT_LOSS:
        if (mlp_loss_parse(v, &c->arch.loss) != 0)
            return errbuf_set(err, errlen, -EINVAL, "--loss: '%s' is not one of mse, bce", v);
        return 0;
    case OPT_HIDDEN:
        return mlp_hidden_parse(v, &c->arch, err, errlen);
    case OPT_ACT:
        if (mlp_act_parse(v, &c->arch.act) != 0)
            return errbuf_set(err, errlen, -EINVAL, "--activation: '%s' is not one of silu, relu",
                              v);
        return 0;
    case OPT_LR:
        return cli_parse_double("--lr", v, 1e-12, 10, &c->adam.lr, err, errlen);
    case OPT_WD:
        return cli_parse_double("--weight-decay", v, 0, 10, &c->adam.weight_decay, err, errlen);
    case OPT_BATCH:
        return cli_int("--batch", v, 1, 1 << 20, &c->batch, err, errlen);
    case OPT_EPOCHS:
        return cli_int("--epochs", v, 0, 1000000, &c->epochs, err, errlen);
    case OPT_VAL_FRAC:
        return cli_parse_double("--val-frac", v, 0.01, 0.9, &c->val_frac, err, errlen);
    case OPT_METRIC_EVERY:
        return cli_int("--metric-every", v, 1, 1000000, &c->metric_every, err, errlen);
    case OPT_OUTPUT:
        return cli_copy("--output", c->output_dir, sizeof(c->output_dir), v, err, errlen);
    case OPT_NAME:
        return cli_copy("--name", c->name, sizeof(c->name), v, err, errlen);
    case OPT_RESUME:
        return cli_copy("--resume", c->resume_path, sizeof(c->resume_path), v, err, errlen);
    case OPT_HEADLESS:
        o->headless = true;
        return 0;
    case OPT_JSONL:
        return cli_copy("--jsonl", o->run.jsonl, sizeof(o->run.jsonl), v, err, errlen);
    case OPT_BACKEND:
        return cli_copy("--backend", c->backend, sizeof(c->backend), v, err, errlen);
    case OPT_DEVICE:
        return cli_int("--device", v, 0, TRACE_MAX_DEVICES - 1, &c->device, err, errlen);
    case OPT_DEVICES:
        return engine_devices_parse(v, c, err, errlen);
    case OPT_COMM_LIB:
        return cli_copy("--comm-lib", c->comm_lib, sizeof(c->comm_lib), v, err, errlen);
    case OPT_COMM_TIMEOUT:
        return cli_parse_double("--comm-timeout", v, 0.001, 86400, &c->comm_timeout_s, err, errlen);
    case OPT_TEARDOWN_TIMEOUT:
        return cli_parse_double("--teardown-timeout", v, 0.001, 86400, &c->teardown_timeout_s, err,
                                errlen);
    case OPT_THREADS:
        return cli_int("--threads", v, 1, 256, &c->threads, err, errlen);
    case OPT_ALLOC_CONF:
        return cli_copy("--alloc-conf", c->alloc_conf, sizeof(c->alloc_conf), v, err, errlen);
    case OPT_NO_PRE_CLEANUP:
        c->pre_cleanup = false;
        return 0;
    case OPT_FRAMES:
        return cli_int("--frames", v, 1, 100000000, &o->view.frames, err, errlen);
    case OPT_THEME:
        return cli_copy("--theme", o->view.theme, sizeof(o->view.theme), v, err, errlen);
    case 'd':
        return cli_int("--delay", v, 1, 600, &o->view.delay_ds, err, errlen);
    case OPT_RECORD:
        return cli_copy("--record", o->run.record, sizeof(o->run.record), v, err, errlen);
    case OPT_SYNC_SLOW:
        return cli_seconds("--sync-slow", v, &o->run.sync_slow_ns, err, errlen);
    case OPT_SYNC_TIMEOUT:
        return cli_seconds("--sync-timeout", v, &o->run.sync_timeout_ns, err, errlen);
    case OPT_VPOC_REFRESH:
        return cli_int("--vpoc-refresh", v, 0, 1000000, &c->vpoc_refresh, err, errlen);
    case OPT_TELEMETRY:
    case OPT_TELE_INTERVAL:
    case OPT_SYSFS_ROOT:
    case OPT_PROC_ROOT:
    case OPT_DEBUGFS_ROOT:
    case OPT_DEV_ROOT:
    case OPT_NVML_LIB:
        return cli_train_tele(id, v, o, err, errlen);
    case OPT_KMSG_FILE:
        return cli_copy("--kmsg-file", o->run.kmsg.file, sizeof(o->run.kmsg.file), v, err, errlen);
    case OPT_KMSG_BACKLOG:
        return cli_int("--kmsg-backlog", v, 0, 1000000, &o->run.kmsg.backlog, err, errlen);
    case OPT_KMSG_RULES:
        return cli_copy("--kmsg-rules", o->run.kmsg_rules, sizeof(o->run.kmsg_rules), v, err,
                        errlen);
    case OPT_NO_KMSG:
        o->run.kmsg.off = true;
        return 0;
    case OPT_INJECT:
        return cli_inject(v, o, err, errlen);
    case OPT_CONFIG: /* read before the other flags, by cli_train_parse */
    case OPT_PRINT_CONFIG:
        return 0;
    default:
        return errbuf_set(err, errlen, -EINVAL, "internal: unhandled option %d", id);
    }
}

/* Parser state for the training options. */
struct cli_train_ctx {
    struct cli_train_opts *o;
    bool epochs_set, refresh_set, chunk_set, kernel_set, print_config;
    uint64_t seen;     /* bit (id - OPT_DATA) per long option given on the command line */
    uint64_t cfg_seen; /* ... and in the config file */
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

#define CLI_SEEN(id) (1ull << ((id)-OPT_DATA))

/* Whether --resume or option id came from the config file. */
static bool cli_train_from_cfg(const struct cli_train_ctx *t, int id) {
    return (t->cfg_seen & (CLI_SEEN(OPT_RESUME) | CLI_SEEN(id))) != 0;
}

/* Flags that contradict each other are an error, not a silent choice; a flag overrides the
 * config file's data, and the architecture conflicts with --resume from either source. */
static int cli_train_conflicts(struct cli_train_ctx *t, char *err, size_t errlen) {
    uint64_t seen = t->seen | t->cfg_seen;
    if ((t->seen & CLI_SEEN(OPT_DATA)) && (t->seen & CLI_SEEN(OPT_SYNTH_DAYS)))
        return errbuf_set(err, errlen, -EINVAL, "--data and --synthetic-days exclude each other");
    if ((t->seen & CLI_SEEN(OPT_SYNTH_DAYS)) && !(t->seen & CLI_SEEN(OPT_DATA)))
        t->o->run.conf.data_path[0] = '\0';
    static const struct {
        int id;
        const char *flag;
    } arch[] = {{OPT_HIDDEN, "--hidden"}, {OPT_LOSS, "--loss"}, {OPT_ACT, "--activation"}};
    for (size_t i = 0; (seen & CLI_SEEN(OPT_RESUME)) && i < 3; i++)
        if (seen & CLI_SEEN(arch[i].id))
            return errbuf_set(err, errlen, -EINVAL,
                              "%s cannot be combined with --resume: the model's architecture "
                              "comes from the checkpoint%s%s",
                              arch[i].flag, cli_train_from_cfg(t, arch[i].id) ? "; see " : "",
                              cli_train_from_cfg(t, arch[i].id) ? t->o->run.config : "");
    return 0;
}

/* `watch` trains nothing: a data, training or compute flag given to it is a mistake, said as
 * one, not a flag taken and ignored (a config file's keys are shared with train: not these). */
static int cli_watch_refuses(const struct cli_train_ctx *t, char *err, size_t errlen) {
    for (const struct option *lo = cli_train_longopts; lo->name; lo++) {
        int id = lo->val;
        bool training = (id >= OPT_DATA && id <= OPT_NO_PRE_CLEANUP && id != OPT_OUTPUT) ||
                        id == OPT_VPOC_REFRESH;
        if (training && (t->seen & CLI_SEEN(id)))
            return errbuf_set(err, errlen, -EINVAL,
                              "--%s does not apply: watch trains nothing (it shows the jobs "
                              "that attach)",
                              lo->name);
    }
    return 0;
}

int cli_getopt_run(int argc, char **argv, const char *cmd, const char *usage, const char *help,
                   const char *shortopts, const struct option *longopts, cli_opt_fn on_opt,
                   void *ctx) {
    bool operands = shortopts[0] == '-';
    const struct option *tables[] = {longopts, NULL};
    struct cli_args a;
    cli_args_init(&a, argc, argv, shortopts + strspn(shortopts, "-:"), tables);
    const char *stray = NULL; /* said after the options, so that --help after it still helps */
    char err[1024];
    int id;
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id < 0)
            return cli_usage_error(cmd, err);
        if (id == 'h') {
            printf("%s\n\n%s", usage, help);
            return 1;
        }
        if (id == CLI_ARGS_OPERAND && !operands) {
            stray = stray ? stray : a.value;
            continue;
        }
        if (on_opt(id, a.value, ctx, err, sizeof(err)) != 0)
            return cli_usage_error(cmd, err);
    }
    if (stray) {
        errbuf_set(err, sizeof(err), -EINVAL, "unexpected argument '%s'", stray);
        return cli_usage_error(cmd, err);
    }
    return 0;
}

static int cli_train_on_opt(int id, const char *v, void *ctx, char *err, size_t errlen) {
    struct cli_train_ctx *t = ctx;
    t->epochs_set |= id == OPT_EPOCHS;
    t->refresh_set |= id == OPT_VPOC_REFRESH;
    t->chunk_set |= id == OPT_CHUNK;
    t->kernel_set |= id == OPT_VPOC_KERNEL;
    t->print_config |= id == OPT_PRINT_CONFIG;
    if (id >= OPT_DATA && id - OPT_DATA < 64)
        t->seen |= CLI_SEEN(id);
    return cli_train_opt(id, v, t->o, err, errlen);
}

/* A config file key: the same options as the flags, found by the same rule, through the same
 * code. */
static int cli_train_on_key(const char *key, const struct config_value *v, void *ctx, char *err,
                            size_t errlen) {
    const struct option *tables[] = {cli_train_longopts, NULL};
    const struct option *op = cli_args_find(tables, key, strlen(key), NULL);
    if (!op) {
        cli_args_suggest(tables, key, strlen(key), "'", "'", err, errlen);
        return -ENOENT;
    }
    if (op->val == 'h' || op->val == OPT_CONFIG || op->val == OPT_PRINT_CONFIG)
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
    const struct option *tables[] = {cli_train_longopts, NULL};
    struct cli_args a;
    cli_args_init(&a, argc, argv, "d:h", tables);
    char err[8];
    int id;
    while ((id = cli_args_next(&a, err, sizeof(err))) != 0) {
        if (id == OPT_CONFIG)
            *config = a.value;
        *help |= id == 'h';
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
    t.seen = 0;
    bool watch = strcmp(cmd, "watch") == 0;
    const char *usage = watch ? cli_watch_usage : cli_train_usage;
    int rc = cli_getopt_run(argc, argv, cmd, usage, cli_train_help, ":d:h", cli_train_longopts,
                            cli_train_on_opt, &t);
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

void cli_view_defaults(struct cli_train_opts *o) {
    engine_conf_default(&o->run.conf);
    o->view.delay_ds = 5;
    o->view.sync_slow_ns = o->run.sync_slow_ns = 1000000000ull;
    o->view.sync_timeout_ns = o->run.sync_timeout_ns = 30000000000ull;
}

int cli_view_opt(struct cli_train_opts *o, int id, const char *v, char *err, size_t errlen) {
    long x = 0;
    int rc;
    switch (id) {
    case CLI_VIEW_FRAMES:
        if ((rc = cli_parse_long("--frames", v, 1, 100000000, &x, err, errlen)) == 0)
            o->view.frames = (int)x;
        return rc;
    case 'd':
        if ((rc = cli_parse_long("--delay", v, 1, 600, &x, err, errlen)) == 0)
            o->view.delay_ds = (int)x;
        return rc;
    case CLI_VIEW_THEME:
        return cli_copy("--theme", o->view.theme, sizeof(o->view.theme), v, err, errlen);
    default:
        return -ENOENT;
    }
}

int cli_token_read(const char *path, char *out, size_t cap, char *err, size_t errlen) {
    int fd = secret_file_open(path, "token file", true, err, errlen);
    if (fd < 0)
        return fd;
    char line[512];
    ssize_t got = read(fd, line, sizeof(line) - 1);
    close(fd);
    size_t len = got > 0 ? (size_t)got : 0, n = 0;
    while (n < len && line[n] != '\n' && line[n] != '\r')
        n++;
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    if (n == 0)
        return errbuf_set(err, errlen, -EINVAL, "%s: no token on its first line", path);
    if (n >= cap || n >= sizeof(line) - 1)
        return errbuf_set(err, errlen, -EINVAL, "%s: the token is longer than %zu bytes", path,
                          cap - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] <= ' ' || line[i] == 0x7f)
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: the token has a space or control character at byte %zu", path,
                              i + 1);
    if (n < CLI_TOKEN_MIN)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: a token of %zu characters is too easy to guess (at least %d; e.g. "
                          "head -c 24 /dev/urandom | base64 > FILE)",
                          path, n, CLI_TOKEN_MIN);
    memcpy(out, line, n);
    out[n] = '\0';
    return 0;
}
