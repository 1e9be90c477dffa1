/* Parsing of the training/dashboard flags into an engine configuration. */
#include "tui/cli_opts.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cli_train_usage[] =
    "usage: ringside [train] [--headless] [--jsonl FILE|-] [--data FILE | --synthetic-days N] "
    "[options]";

static const char cli_train_help[] =
    "Run the VPOC + MLP training loop, with the dashboard or headless.\n"
    "\n"
    "Data:\n"
    "  --data FILE              OHLCV(+VIX) CSV to train on (default: synthetic data)\n"
    "  --synthetic-days N       trading days of synthetic ES bars (default 60)\n"
    "  --seed S                 seed for synthetic data, init and shuffling (default 42)\n"
    "  --skip-bad-rows          skip (and count) invalid CSV rows instead of stopping\n"
    "  --session-start-hour H   trading day D starts at D-1 H:00 UTC (default 18; 0 = calendar)\n"
    "VPOC:\n"
    "  --chunk N                bars per VPOC chunk, 0 = whole session (default 500)\n"
    "  --profile close|range    volume at the close, or spread over low..high (default close)\n"
    "  --tick T                 price increment (default 0.25)\n"
    "  --value-area F           value-area fraction (default 0.70)\n"
    "Model:\n"
    "  --horizon N              forward-return horizon in bars (default 15)\n"
    "  --loss mse|bce           regression on the return, or its sign (default mse)\n"
    "  --hidden LIST            hidden layer widths (default 32,16)\n"
    "  --activation silu|relu   (default silu)\n"
    "  --lr X                   Adam learning rate (default 2e-4)\n"
    "  --weight-decay X         Adam L2 weight decay (default 0)\n"
    "  --batch N                mini-batch size (default 256)\n"
    "  --epochs N               epochs to run (default 10; 200 in the dashboard)\n"
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
    "  --threads N              CPU backend MLP threads (default 1)\n"
    "  --alloc-conf CONF        caching allocator, PYTORCH_HIP_ALLOC_CONF syntax\n"
    "                           (default $RINGSIDE_ALLOC_CONF), e.g. max_split_size_mb:128\n"
    "  --no-pre-cleanup         skip the safe cleanup between VPOC and training\n"
    "Dashboard:\n"
    "  -d, --delay N            refresh interval in tenths of a second (default 5)\n"
    "  --theme NAME|PATH        colour theme: a JSON file, or NAME from ./themes or the\n"
    "                           installed themes (default, mono)\n"
    "  --frames N               render N frames, then stop training and exit\n"
    "  -h, --help               show this help\n";

enum cli_opt_id {
    OPT_DATA = 256,
    OPT_SYNTH_DAYS,
    OPT_SEED,
    OPT_SKIP_BAD,
    OPT_START_HOUR,
    OPT_CHUNK,
    OPT_PROFILE,
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
    OPT_THREADS,
    OPT_ALLOC_CONF,
    OPT_NO_PRE_CLEANUP,
    OPT_FRAMES,
    OPT_THEME,
};

static const struct option cli_train_longopts[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"synthetic-days", required_argument, NULL, OPT_SYNTH_DAYS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"skip-bad-rows", no_argument, NULL, OPT_SKIP_BAD},
    {"session-start-hour", required_argument, NULL, OPT_START_HOUR},
    {"chunk", required_argument, NULL, OPT_CHUNK},
    {"profile", required_argument, NULL, OPT_PROFILE},
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
    {"threads", required_argument, NULL, OPT_THREADS},
    {"alloc-conf", required_argument, NULL, OPT_ALLOC_CONF},
    {"no-pre-cleanup", no_argument, NULL, OPT_NO_PRE_CLEANUP},
    {"frames", required_argument, NULL, OPT_FRAMES},
    {"theme", required_argument, NULL, OPT_THEME},
    {"delay", required_argument, NULL, 'd'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cli_usage_error(const char *cmd, const char *usage, const char *msg) {
    fprintf(stderr, "ringside%s%s: %s\n%s\nTry 'ringside%s%s --help'.\n", cmd[0] ? " " : "", cmd,
            msg, usage, cmd[0] ? " " : "", cmd);
    return CLI_EXIT_USAGE;
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

static int cli_int(const char *flag, const char *s, long lo, long hi, int *out, char *err,
                   size_t errlen) {
    long v;
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

/* One option; 0 or -EINVAL with err. */
static int cli_train_opt(int id, const char *v, struct cli_train_opts *o, char *err,
                         size_t errlen) {
    struct engine_conf *c = &o->conf;
    long l;
    int k = 0, rc;
    switch (id) {
    case OPT_DATA:
        return cli_copy("--data", c->data_path, sizeof(c->data_path), v, err, errlen);
    case OPT_SYNTH_DAYS:
        return cli_int("--synthetic-days", v, 3, 100000, &c->synthetic_days, err, errlen);
    case OPT_SEED:
        rc = cli_parse_long("--seed", v, 0, LONG_MAX, &l, err, errlen);
        c->seed = (uint64_t)l;
        return rc;
    case OPT_SKIP_BAD:
        c->skip_bad_rows = true;
        return 0;
    case OPT_START_HOUR:
        return cli_int("--session-start-hour", v, 0, 23, &c->session_start_hour, err, errlen);
    case OPT_CHUNK:
        return cli_int("--chunk", v, 0, 100000000, &c->chunk_bars, err, errlen);
    case OPT_PROFILE:
        rc = cli_enum("--profile", v, "close", "range", &k, err, errlen);
        c->vpoc.profile = k ? VPOC_RANGE : VPOC_CLOSE;
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
        return cli_copy("--jsonl", o->jsonl, sizeof(o->jsonl), v, err, errlen);
    case OPT_BACKEND:
        return cli_copy("--backend", c->backend, sizeof(c->backend), v, err, errlen);
    case OPT_DEVICE:
        return cli_int("--device", v, 0, TRACE_MAX_DEVICES - 1, &c->device, err, errlen);
    case OPT_THREADS:
        return cli_int("--threads", v, 1, 256, &c->threads, err, errlen);
    case OPT_ALLOC_CONF:
        return cli_copy("--alloc-conf", c->alloc_conf, sizeof(c->alloc_conf), v, err, errlen);
    case OPT_NO_PRE_CLEANUP:
        c->pre_cleanup = false;
        return 0;
    case OPT_FRAMES:
        return cli_int("--frames", v, 1, 100000000, &o->frames, err, errlen);
    case OPT_THEME:
        return cli_copy("--theme", o->theme, sizeof(o->theme), v, err, errlen);
    case 'd':
        return cli_int("--delay", v, 1, 600, &o->delay_ds, err, errlen);
    default:
        return errbuf_set(err, errlen, -EINVAL, "internal: unhandled option %d", id);
    }
}

static int cli_train_finish(struct cli_train_opts *o, bool epochs_set, char *err, size_t errlen) {
    struct engine_conf *c = &o->conf;
    if (!o->headless && !epochs_set)
        c->epochs = 200; /* about a minute on a CPU: long enough to watch */
    if (o->jsonl[0] && !o->headless)
        return errbuf_set(err, errlen, -EINVAL, "--jsonl needs --headless");
    if (o->headless && !o->jsonl[0])
        snprintf(o->jsonl, sizeof(o->jsonl), "-");
    if (o->frames && o->headless)
        return errbuf_set(err, errlen, -EINVAL, "--frames is for the dashboard, not --headless");
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

/* Flags that contradict each other are an error, not a silent choice. */
static int cli_train_conflicts(uint64_t seen, char *err, size_t errlen) {
    if ((seen & CLI_SEEN(OPT_DATA)) && (seen & CLI_SEEN(OPT_SYNTH_DAYS)))
        return errbuf_set(err, errlen, -EINVAL, "--data and --synthetic-days exclude each other");
    static const struct {
        int id;
        const char *flag;
    } arch[] = {{OPT_HIDDEN, "--hidden"}, {OPT_LOSS, "--loss"}, {OPT_ACT, "--activation"}};
    for (size_t i = 0; (seen & CLI_SEEN(OPT_RESUME)) && i < 3; i++)
        if (seen & CLI_SEEN(arch[i].id))
            return errbuf_set(err, errlen, -EINVAL,
                              "%s cannot be combined with --resume: the model's architecture "
                              "comes from the checkpoint",
                              arch[i].flag);
    return 0;
}

int cli_getopt_run(int argc, char **argv, const char *cmd, const char *usage, const char *help,
                   const char *shortopts, const struct option *longopts, cli_opt_fn on_opt,
                   void *ctx) {
    char err[512];
    opterr = 0;
    optind = 1;
    int id;
    while ((id = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (id == 'h') {
            printf("%s\n\n%s", usage, help);
            return 1;
        }
        if (id == '?' || id == ':') {
            snprintf(err, sizeof(err), "%s '%s'",
                     id == '?' ? "unknown option" : "missing value for", argv[optind - 1]);
            return cli_usage_error(cmd, usage, err);
        }
        if (on_opt(id, optarg, ctx, err, sizeof(err)) != 0)
            return cli_usage_error(cmd, usage, err);
    }
    if (optind < argc) {
        snprintf(err, sizeof(err), "unexpected argument '%s'", argv[optind]);
        return cli_usage_error(cmd, usage, err);
    }
    return 0;
}

/* Parser state for the training options. */
struct cli_train_ctx {
    struct cli_train_opts *o;
    bool epochs_set;
    uint64_t seen; /* bit (id - OPT_DATA) per long option given */
};

static int cli_train_on_opt(int id, const char *v, void *ctx, char *err, size_t errlen) {
    struct cli_train_ctx *t = ctx;
    t->epochs_set |= id == OPT_EPOCHS;
    if (id >= OPT_DATA && id - OPT_DATA < 64)
        t->seen |= CLI_SEEN(id);
    return cli_train_opt(id, v, t->o, err, errlen);
}

int cli_train_parse(int argc, char **argv, const char *cmd, struct cli_train_opts *o) {
    memset(o, 0, sizeof(*o));
    engine_conf_default(&o->conf);
    o->delay_ds = 5;
    o->sync_slow_ns = 1000000000ull;
    o->sync_timeout_ns = 30000000000ull;
    struct cli_train_ctx t = {.o = o};
    int rc = cli_getopt_run(argc, argv, cmd, cli_train_usage, cli_train_help, ":d:h",
                            cli_train_longopts, cli_train_on_opt, &t);
    if (rc != 0)
        return rc;
    char err[512];
    if (cli_train_conflicts(t.seen, err, sizeof(err)) != 0 ||
        cli_train_finish(o, t.epochs_set, err, sizeof(err)) != 0)
        return cli_usage_error(cmd, cli_train_usage, err);
    return 0;
}
