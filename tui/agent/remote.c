/* The attach source: a reader thread follows the agent's /events stream (reconnecting with
 * since= the last event it queued) and hands events, layouts, summaries and status lines to the
 * UI thread, which rebuilds the snapshot from them as a replay does; a control thread sends the
 * loop's keys back as POST /control. The UI thread never waits on the network. This file opens
 * it (the first connection and its run line, then the threads); remote_internal.h lists the
 * others. */
#include "tui/agent/remote.h"

#include "backend/core/errbuf.h"
#include "tui/agent/agent_status.h"
#include "tui/agent/remote_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

void remote_conf_default(struct remote_conf *c) {
    memset(c, 0, sizeof(*c));
    c->timeout_ms = 10000;
    c->retry_ms = 1000;
}

static int remote_alloc(struct remote **out, const struct remote_conf *c) {
    struct remote *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->wake_fd = -1;
    r->conf = *c;
    if (r->conf.timeout_ms < 0)
        r->conf.timeout_ms = 0;
    if (r->conf.retry_ms <= 0)
        r->conf.retry_ms = 1000;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cond, &ca);
    pthread_condattr_destroy(&ca);
    r->q = malloc(REMOTE_QUEUE_EVENTS * sizeof(*r->q));
    r->st = malloc(REMOTE_STATE_ITEMS * sizeof(*r->st));
    r->back = calloc(1, sizeof(*r->back));
    r->mid = calloc(1, sizeof(*r->mid));
    r->front = calloc(1, sizeof(*r->front));
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!r->q || !r->st || !r->back || !r->mid || !r->front || r->wake_fd < 0) {
        int rc = r->wake_fd < 0 ? -errno : -ENOMEM;
        remote_free(r);
        return rc;
    }
    r->src = (struct source){.ops = &remote_ops, .priv = r};
    *out = r;
    return 0;
}

/* The run line fills src.run: the agent's run, shown as live from the URL. */
static void remote_first_run(struct remote *r) {
    struct run_info *run = &r->src.run;
    *run = r->item.run;
    run->replay = false;
    snprintf(run->origin, sizeof(run->origin), "%.*s", (int)sizeof(run->origin) - 1, r->conf.url);
    r->run_start_ns = run->start_ns;
    replay_snap_init(&r->rs, run, &r->item.extra);
    remote_control_off(r);
}

static int remote_start(struct remote *r, char *err, size_t errlen) {
    int rc;
    r->reader_running = r->control_running = true;
    if ((rc = pthread_create(&r->reader, NULL, remote_reader, r)) != 0) {
        r->reader_running = r->control_running = false;
        return errbuf_set(err, errlen, -rc, "cannot start a thread: %s", strerror(rc));
    }
    if ((rc = pthread_create(&r->control, NULL, remote_controller, r)) != 0) {
        r->control_running = false;
        remote_stop(&r->src);
        pthread_join(r->reader, NULL);
        return errbuf_set(err, errlen, -rc, "cannot start a thread: %s", strerror(rc));
    }
    return 0;
}

bool remote_token_in_clear(const struct remote_conf *c) {
    struct http_url u;
    char why[256];
    return c->token[0] && http_url_parse(c->url, &u, why, sizeof(why)) == 0 && !u.tls &&
           !http_url_loopback(&u);
}

int remote_open(struct source **out, const struct remote_conf *c, char *err, size_t errlen) {
    *out = NULL;
    struct remote *r = NULL;
    int rc = remote_alloc(&r, c);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "%s", strerror(-rc));
    if ((rc = http_url_parse(c->url, &r->url, err, errlen)) != 0)
        goto fail;
    if (r->url.unix_path[0])
        snprintf(r->peer, sizeof(r->peer), "unix:%s", r->url.unix_path);
    else
        snprintf(r->peer, sizeof(r->peer), "%s%s%s:%u", strchr(r->url.host, ':') ? "[" : "",
                 r->url.host, strchr(r->url.host, ':') ? "]" : "", r->url.port);
    if (r->url.unix_path[0])
        snprintf(r->where, sizeof(r->where), "%.580s /events", r->peer);
    else
        snprintf(r->where, sizeof(r->where), "%s://%.300s%.250s/events",
                 r->url.tls ? "https" : "http", r->peer, r->url.base);
    if ((rc = remote_connect(r, 0, &r->first, err, errlen)) != 0 ||
        (rc = remote_read_run(r, r->first, &r->item, err, errlen)) != 0)
        goto fail;
    remote_first_run(r);
    if ((rc = remote_start(r, err, errlen)) != 0)
        goto fail;
    *out = &r->src;
    return 0;
fail:
    remote_free(r);
    return rc;
}
