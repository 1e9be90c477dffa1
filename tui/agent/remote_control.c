/* The attach source's control thread: the loop's keys, queued by the UI, sent to the agent
 * as POST /control, each answer said in the events panel. */
#include "tui/agent/remote_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REMOTE_CONTROL_BODY 65536

/* The answer's {"ok":..,"message":..|"error":..} into text; true when ok. */
static bool remote_answer(int status, const char *body, char *text, size_t n) {
    json_object *o = json_tokener_parse(body);
    json_object *ok = NULL, *msg = NULL;
    bool good = false;
    if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "ok", &ok) &&
        json_object_is_type(ok, json_type_boolean)) {
        good = json_object_get_boolean(ok);
        if (json_object_object_get_ex(o, good ? "message" : "error", &msg) &&
            json_object_is_type(msg, json_type_string))
            snprintf(text, n, "%s", json_object_get_string(msg));
        else
            snprintf(text, n, "%s", good ? "done" : "refused");
    } else if (status == 401)
        snprintf(text, n, "401 Unauthorized: the agent does not take the token given");
    else
        snprintf(text, n, "the agent answered HTTP %d", status);
    json_object_put(o);
    return good && status == 200;
}

static void remote_send(struct remote *r, const struct remote_cmd *cmd) {
    char path[96], why[512], text[EV_TEXT_BYTES];
    const char *name = ev_cmd_name(cmd->cmd);
    if (ev_cmd_arg(cmd->cmd) != EV_ARG_NONE)
        snprintf(path, sizeof(path), "/control?cmd=%s&arg=%lld", name, (long long)cmd->arg);
    else
        snprintf(path, sizeof(path), "/control?cmd=%s", name);
    struct http_conn *c = NULL;
    int status = 0;
    bool ok = false;
    int rc = http_request(&c, &r->url, "POST", path, "application/json", r->conf.token,
                          r->conf.cacert, r->conf.timeout_ms, &status, why, sizeof(why));
    if (rc == 0) {
        char *body = NULL;
        size_t len = 0;
        remote_track(r, &r->cconn, c);
        rc = http_read_body(c, &body, &len, REMOTE_CONTROL_BODY);
        remote_track(r, &r->cconn, NULL);
        if (rc == 0)
            ok = remote_answer(status, body, text, sizeof(text));
        else
            snprintf(why, sizeof(why), "reading the answer: %s", strerror(-rc));
        free(body);
        http_close(c);
    }
    pthread_mutex_lock(&r->mu);
    if (rc != 0 && !r->stopping)
        remote_log_locked(r, SEV_WARNING, "attach: %s failed: %s", name, why);
    else if (rc == 0)
        remote_log_locked(r, ok ? SEV_INFO : SEV_WARNING, "agent: %s: %s", name, text);
    pthread_mutex_unlock(&r->mu);
}

void *remote_controller(void *arg) {
    struct remote *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stopping && r->n_cmds == 0)
            pthread_cond_wait(&r->cond, &r->mu);
        if (r->stopping)
            break;
        struct remote_cmd cmd = r->cmds[0];
        memmove(&r->cmds[0], &r->cmds[1], --r->n_cmds * sizeof(r->cmds[0]));
        pthread_mutex_unlock(&r->mu);
        remote_send(r, &cmd);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    remote_thread_exit(r, &r->control_running);
    return NULL;
}
