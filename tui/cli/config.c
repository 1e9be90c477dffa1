/* The config file: locating it, reading JSON with line/column errors, applying its keys, and
 * printing the effective options in the same format. */
#include "tui/cli/config.h"

#include "backend/core/errbuf.h"
#include "backend/core/json_file.h"
#include "backend/core/json_out.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        if (json_file_config_dir(def, sizeof(def) - 12) != 0)
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
    int rc = json_file_read(path, shown, CONFIG_MAX_BYTES, &root, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(used, ENGINE_PATH_MAX, "%s", path);
    rc = config_apply_all(shown, root, apply, ctx, err, errlen);
    json_object_put(root);
    return rc;
}

/* ---- --print-config ---- */

int config_print(const struct cli_train_opts *o, FILE *out) {
    struct json_object *j = run_opts_json(&o->run);
    if (!j)
        return -ENOMEM;
    /* how the run is shown: headless JSON lines, or the dashboard */
    json_out_put_bool(j, "headless", o->headless);
    json_out_put_int(j, "delay", o->view.delay_ds);
    if (o->view.frames > 0)
        json_out_put_int(j, "frames", o->view.frames);
    else
        json_object_object_add(j, "frames", NULL);
    json_out_put_str(j, "theme", o->view.theme);
    const char *s = json_object_to_json_string_ext(
        j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = s && fprintf(out, "%s\n", s) > 0 && fflush(out) == 0 ? 0 : -EIO;
    json_object_put(j);
    return rc;
}
