/* The config file: locating it, reading JSON with line/column errors, applying its keys, and
 * printing the effective options in the same format. */
#include "tui/config.h"

#include "backend/core/errbuf.h"
#include "backend/core/json_out.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int config_dir(char *out, size_t outlen) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, outlen, "%s/ringside", xdg);
    else if (home && home[0])
        n = snprintf(out, outlen, "%s/.config/ringside", home);
    else
        return -ENOENT;
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

void config_line_col(const char *text, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

/* The whole file into a NUL-terminated malloc'd buffer. 0 or -errno / -EFBIG with err. */
static int config_slurp(const char *path, const char *shown, size_t max_bytes, char **buf,
                        size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return errbuf_set(err, errlen, -errno, "%s: cannot open: %s", shown, strerror(errno));
    char *b = malloc(max_bytes + 1);
    size_t n = b ? fread(b, 1, max_bytes + 1, f) : 0;
    int rc = !b ? errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown) : 0;
    if (rc == 0 && ferror(f))
        rc = errbuf_set(err, errlen, -EIO, "%s: cannot read: %s", shown, strerror(errno));
    else if (rc == 0 && n > max_bytes)
        rc = errbuf_set(err, errlen, -EFBIG, "%s: larger than %zu KiB", shown, max_bytes >> 10);
    fclose(f);
    if (rc != 0) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

/* Parse buf; anything but whitespace after the value is an error too. */
static int config_parse(const char *buf, size_t n, const char *shown, struct json_object **out,
                        char *err, size_t errlen) {
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown);
    struct json_object *root = json_tokener_parse_ex(tok, buf, (int)n);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    const char *why =
        je == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(je);
    if (root) {
        while (end < n && strchr(" \t\r\n", buf[end]))
            end++;
        why = end < n ? "unexpected data after the JSON value" : NULL;
    }
    if (!why) {
        *out = root;
        return 0;
    }
    json_object_put(root);
    int line, col;
    config_line_col(buf, end, &line, &col);
    return errbuf_set(err, errlen, -EINVAL, "%s: invalid JSON at line %d, column %d: %s", shown,
                      line, col, why);
}

int config_json_read(const char *path, const char *shown, size_t max_bytes,
                     struct json_object **out, char *err, size_t errlen) {
    char *buf = NULL;
    size_t n = 0;
    int rc = config_slurp(path, shown, max_bytes, &buf, &n, err, errlen);
    if (rc != 0)
        return rc;
    rc = config_parse(buf, n, shown, out, err, errlen);
    free(buf);
    return rc;
}

/* One key through apply, with the file and key added to the reason. */
static int config_apply_key(const char *shown, const char *key, struct json_object *v,
                            config_apply_fn apply, void *ctx, char *err, size_t errlen) {
    struct config_value cv = {.kind = CONFIG_NULL};
    switch (json_object_get_type(v)) {
    case json_type_null:
        break;
    case json_type_boolean:
        cv = (struct config_value){.kind = CONFIG_BOOL, .flag = json_object_get_boolean(v)};
        break;
    case json_type_int:
    case json_type_double:
        cv = (struct config_value){.kind = CONFIG_NUMBER, .text = json_object_get_string(v)};
        break;
    case json_type_string:
        cv = (struct config_value){.kind = CONFIG_STRING, .text = json_object_get_string(v)};
        break;
    default:
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: key '%s': expected a number, a string, a boolean or null", shown,
                          key);
    }
    char why[512];
    int rc = apply(key, &cv, ctx, why, sizeof(why));
    if (rc == -ENOENT)
        return errbuf_set(err, errlen, -EINVAL, "%s: unknown key '%s' (see ringside train --help)",
                          shown, key);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "%s: key '%s': %s", shown, key, why);
    return 0;
}

static int config_apply_all(const char *shown, struct json_object *root, config_apply_fn apply,
                            void *ctx, char *err, size_t errlen) {
    if (!json_object_is_type(root, json_type_object))
        return errbuf_set(err, errlen, -EINVAL, "%s: expected a JSON object of options", shown);
    json_object_object_foreach(root, key, v) {
        int rc = config_apply_key(shown, key, v, apply, ctx, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* path with a leading $HOME/ shown as ~/. */
static void config_shown(const char *path, char *out, size_t outlen) {
    const char *home = getenv("HOME");
    size_t h = home ? strlen(home) : 0;
    if (h > 1 && strncmp(path, home, h) == 0 && path[h] == '/')
        snprintf(out, outlen, "~%s", path + h);
    else
        snprintf(out, outlen, "%s", path);
}

int config_load(const char *path, config_apply_fn apply, void *ctx, char *used, char *err,
                size_t errlen) {
    char def[ENGINE_PATH_MAX], shown[ENGINE_PATH_MAX + 8];
    used[0] = '\0';
    if (!path) {
        if (config_dir(def, sizeof(def) - 12) != 0)
            return 0; /* no home: no default file */
        strcat(def, "/config.json");
        if (access(def, F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR))
            return 0;
        path = def;
        config_shown(path, shown, sizeof(shown));
    } else {
        snprintf(shown, sizeof(shown), "%s", path);
    }
    struct json_object *root = NULL;
    int rc = config_json_read(path, shown, CONFIG_MAX_BYTES, &root, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(used, ENGINE_PATH_MAX, "%s", path);
    rc = config_apply_all(shown, root, apply, ctx, err, errlen);
    json_object_put(root);
    return rc;
}

/* ---- --print-config ---- */

static void config_put_str(struct json_object *j, const char *key, const char *s) {
    json_object_object_add(j, key, s && s[0] ? json_object_new_string(s) : NULL);
}

static void config_put_int(struct json_object *j, const char *key, int64_t v) {
    json_object_object_add(j, key, json_object_new_int64(v));
}

/* The shortest text that reads back as the same double. */
static void config_put_num(struct json_object *j, const char *key, double v) {
    json_object_object_add(j, key, json_out_double(v));
}

static void config_put_bool(struct json_object *j, const char *key, bool v) {
    json_object_object_add(j, key, json_object_new_boolean(v));
}

/* The replayed kernel log joins the engine's faults in "inject", last: its path may hold a
 * ':'. */
static void config_put_inject(struct json_object *j, const struct cli_train_opts *o) {
    if (!o->kmsg.inject[0])
        return;
    const char *faults = json_object_get_string(json_object_object_get(j, "inject"));
    char inject[TRACE_MAX_INJECT * 48 + KMSG_PATH_MAX + 8];
    snprintf(inject, sizeof(inject), "%s%skmsg:%s", faults ? faults : "", faults ? "," : "",
             o->kmsg.inject);
    config_put_str(j, "inject", inject);
}

/* How the run is shown: headless JSON lines, or the dashboard and what it watches for. */
static void config_put_dashboard(struct json_object *j, const struct cli_train_opts *o) {
    config_put_bool(j, "headless", o->headless);
    config_put_str(j, "jsonl", o->jsonl);
    config_put_int(j, "delay", o->delay_ds);
    if (o->frames > 0)
        config_put_int(j, "frames", o->frames);
    else
        json_object_object_add(j, "frames", NULL);
    config_put_str(j, "theme", o->theme);
    config_put_str(j, "record", o->record);
    config_put_num(j, "sync-slow", (double)o->sync_slow_ns / 1e9);
    config_put_num(j, "sync-timeout", (double)o->sync_timeout_ns / 1e9);
    config_put_inject(j, o);
}

static void config_put_tele(struct json_object *j, const struct tele_conf *t) {
    config_put_str(j, "telemetry", t->only);
    config_put_int(j, "telemetry-interval", (int64_t)(t->interval_ns / 1000000ull));
    config_put_str(j, "sysfs-root", t->roots.sys);
    config_put_str(j, "proc-root", t->roots.proc);
    config_put_str(j, "debugfs-root", t->roots.debugfs);
    config_put_str(j, "dev-root", t->roots.dev);
    config_put_str(j, "nvml-lib", t->roots.nvml_lib);
}

static void config_put_kmsg(struct json_object *j, const struct cli_train_opts *o) {
    config_put_str(j, "kmsg-file", o->kmsg.file);
    config_put_int(j, "kmsg-backlog", o->kmsg.backlog);
    config_put_str(j, "kmsg-rules", o->kmsg_rules);
    config_put_bool(j, "no-kmsg", o->kmsg.off);
}

int config_print(const struct cli_train_opts *o, FILE *out) {
    struct json_object *j = engine_conf_json(&o->conf);
    if (!j)
        return -ENOMEM;
    config_put_dashboard(j, o);
    config_put_tele(j, &o->tele);
    config_put_kmsg(j, o);
    const char *s = json_object_to_json_string_ext(
        j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = s && fprintf(out, "%s\n", s) > 0 && fflush(out) == 0 ? 0 : -EIO;
    json_object_put(j);
    return rc;
}
