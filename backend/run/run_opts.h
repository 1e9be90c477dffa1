/* The options of a live run, whichever front end starts it: the loop's configuration, where
 * its lines go, the watchdog's thresholds, telemetry and the kernel log. The command line and
 * the config file fill it; the run owner (run.h) reads it. */
#ifndef RINGSIDE_BACKEND_RUN_RUN_OPTS_H
#define RINGSIDE_BACKEND_RUN_RUN_OPTS_H

#include "backend/engine/engine.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/telemetry/tele.h"

#include <stdint.h>

struct json_object;

struct run_opts {
    struct engine_conf conf;
    char jsonl[ENGINE_PATH_MAX];      /* --jsonl: headless JSON lines, "" = none, "-" = stdout */
    char record[ENGINE_PATH_MAX];     /* --record FILE: the dashboard also writes JSON lines */
    char config[ENGINE_PATH_MAX];     /* the config file that was read, "" = none */
    uint64_t sync_slow_ns;            /* --sync-slow SECONDS (default 1 s) */
    uint64_t sync_timeout_ns;         /* --sync-timeout SECONDS (default 30 s) */
    struct tele_conf tele;            /* --telemetry, --telemetry-interval, the root directories */
    struct kmsg_conf kmsg;            /* --kmsg-file, --kmsg-backlog, --no-kmsg */
    char kmsg_rules[ENGINE_PATH_MAX]; /* --kmsg-rules FILE: remedies before the shipped ones */
};

/* The options as one JSON object whose keys are the long flag names (engine_conf_json's object
 * with the run's own options added: jsonl, record, sync-slow, sync-timeout, the telemetry and
 * kernel-log flags, a replayed kernel log at the end of inject). Options that are not set are
 * null. The hang bundle embeds it; --print-config adds the dashboard's. NULL when out of
 * memory. */
struct json_object *run_opts_json(const struct run_opts *o);

#endif
