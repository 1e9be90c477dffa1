/* Remedies rules: loading the JSON files, and finding the rule for an event. */
#include "backend/kmsg/remedies.h"

#include "backend/core/errbuf.h"
#include "backend/core/json_file.h"
#include "backend/kmsg/kmsg.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REMEDIES_MAX_BYTES (1 << 20)

struct remedy_rule {
    int category; /* enum kmsg_category, or -1 for "*" */
    char match[REMEDY_MATCHES][96];
    int n_match;
    unsigned xid[REMEDY_XIDS];
    int n_xid;
    struct remedy r;
};

struct remedies {
    struct remedy_rule *rules;
    size_t n, cap;
    char origin[512];
};

/* Copy a JSON string member into dst; false when it is missing or not a string. */
static int remedies_str(struct json_object *o, const char *key, char *dst, size_t cap,
                        bool required, const char *where, char *err, size_t errlen) {
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || json_object_get_type(v) == json_type_null) {
        if (required)
            return errbuf_set(err, errlen, -EINVAL, "%s.%s: missing", where, key);
        dst[0] = '\0';
        return 0;
    }
    if (!json_object_is_type(v, json_type_string))
        return errbuf_set(err, errlen, -EINVAL, "%s.%s: not a string", where, key);
    const char *s = json_object_get_string(v);
    if (strlen(s) >= cap)
        return errbuf_set(err, errlen, -EINVAL, "%s.%s: longer than %zu bytes", where, key,
                          cap - 1);
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

/* An array member of strings (match, actions) into fixed slots. */
static int remedies_strs(struct json_object *o, const char *key, char *dst, size_t cap, int max,
                         int *n, const char *where, char *err, size_t errlen) {
    struct json_object *v = NULL;
    *n = 0;
    if (!json_object_object_get_ex(o, key, &v) || json_object_get_type(v) == json_type_null)
        return 0;
    if (!json_object_is_type(v, json_type_array))
        return errbuf_set(err, errlen, -EINVAL, "%s.%s: not an array of strings", where, key);
    size_t len = json_object_array_length(v);
    if (len > (size_t)max)
        return errbuf_set(err, errlen, -EINVAL, "%s.%s: more than %d entries", where, key, max);
    for (size_t i = 0; i < len; i++) {
        struct json_object *s = json_object_array_get_idx(v, i);
        if (!json_object_is_type(s, json_type_string) || !json_object_get_string(s)[0] ||
            strlen(json_object_get_string(s)) >= cap)
            return errbuf_set(err, errlen, -EINVAL,
                              "%s.%s[%zu]: not a non-empty string of at most %zu bytes", where, key,
                              i, cap - 1);
        memcpy(dst + (size_t)*n * cap, json_object_get_string(s),
               strlen(json_object_get_string(s)) + 1);
        ++*n;
    }
    return 0;
}

static int remedies_xids(struct json_object *o, struct remedy_rule *r, const char *where, char *err,
                         size_t errlen) {
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(o, "xid", &v) || json_object_get_type(v) == json_type_null)
        return 0;
    size_t len = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
    if (!json_object_is_type(v, json_type_array) || len > REMEDY_XIDS)
        return errbuf_set(err, errlen, -EINVAL, "%s.xid: not an array of at most %d numbers", where,
                          REMEDY_XIDS);
    for (size_t i = 0; i < len; i++) {
        struct json_object *x = json_object_array_get_idx(v, i);
        int64_t n = json_object_get_int64(x);
        if (!json_object_is_type(x, json_type_int) || n < 0 || n > 65535)
            return errbuf_set(err, errlen, -EINVAL, "%s.xid[%zu]: not an Xid number (0..65535)",
                              where, i);
        r->xid[r->n_xid++] = (unsigned)n;
    }
    return 0;
}

static const char *const remedies_keys[] = {"category", "match",       "xid",
                                            "title",    "explanation", "actions"};

static int remedies_rule(struct json_object *o, struct remedy_rule *r, const char *where, char *err,
                         size_t errlen) {
    char cat[32];
    memset(r, 0, sizeof(*r));
    if (!json_object_is_type(o, json_type_object))
        return errbuf_set(err, errlen, -EINVAL, "%s: not an object", where);
    json_object_object_foreach(o, key, val) {
        (void)val;
        bool known = false;
        for (size_t i = 0; i < sizeof(remedies_keys) / sizeof(remedies_keys[0]); i++)
            known |= strcmp(key, remedies_keys[i]) == 0;
        if (!known)
            return errbuf_set(err, errlen, -EINVAL, "%s: unknown key '%s'", where, key);
    }
    int rc = remedies_str(o, "category", cat, sizeof(cat), true, where, err, errlen);
    if (rc == 0 && strcmp(cat, "*") != 0 && (r->category = kmsg_category_from_name(cat)) <= 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s.category: '%s' is not one of ring_timeout, mes, gpu_reset, "
                          "page_fault, sq_intr, kfd, xid, fatal_other, driver_other, *",
                          where, cat);
    if (rc == 0 && strcmp(cat, "*") == 0)
        r->category = -1;
    if (rc == 0)
        rc = remedies_str(o, "title", r->r.title, sizeof(r->r.title), true, where, err, errlen);
    if (rc == 0)
        rc = remedies_str(o, "explanation", r->r.explanation, sizeof(r->r.explanation), false,
                          where, err, errlen);
    if (rc == 0)
        rc = remedies_strs(o, "match", &r->match[0][0], sizeof(r->match[0]), REMEDY_MATCHES,
                           &r->n_match, where, err, errlen);
    if (rc == 0)
        rc = remedies_strs(o, "actions", &r->r.actions[0][0], sizeof(r->r.actions[0]),
                           REMEDY_ACTIONS, &r->r.n_actions, where, err, errlen);
    if (rc == 0)
        rc = remedies_xids(o, r, where, err, errlen);
    return rc;
}

/* The rules of one parsed file, appended; *replace gets the file's "replace". */
static int remedies_add(struct remedies *rs, struct json_object *root, const char *shown,
                        bool *replace, char *err, size_t errlen) {
    struct json_object *rules = NULL, *rep = NULL, *ver = NULL;
    char where[64];
    if (!json_object_is_type(root, json_type_object) ||
        !json_object_object_get_ex(root, "rules", &rules) ||
        !json_object_is_type(rules, json_type_array))
        return errbuf_set(err, errlen, -EINVAL, "%s: expected {\"version\": 1, \"rules\": [...]}",
                          shown);
    if (json_object_object_get_ex(root, "version", &ver) && json_object_get_int(ver) != 1)
        return errbuf_set(err, errlen, -EINVAL, "%s: version: only version 1 is understood", shown);
    *replace = json_object_object_get_ex(root, "replace", &rep) && json_object_get_boolean(rep);
    size_t len = json_object_array_length(rules);
    for (size_t i = 0; i < len; i++) {
        if (rs->n == rs->cap) {
            size_t cap = rs->cap ? rs->cap * 2 : 32;
            struct remedy_rule *nr = realloc(rs->rules, cap * sizeof(*nr));
            if (!nr)
                return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown);
            rs->rules = nr;
            rs->cap = cap;
        }
        snprintf(where, sizeof(where), "rules[%zu]", i);
        char why[512];
        if (remedies_rule(json_object_array_get_idx(rules, i), &rs->rules[rs->n], where, why,
                          sizeof(why)) != 0)
            return errbuf_set(err, errlen, -EINVAL, "%s: %s", shown, why);
        rs->n++;
    }
    return 0;
}

static void remedies_origin_add(struct remedies *rs, const char *what) {
    size_t n = strlen(rs->origin);
    snprintf(rs->origin + n, sizeof(rs->origin) - n, "%s%s", n ? ", " : "", what);
}

static int remedies_add_file(struct remedies *rs, const char *path, bool *replace, char *err,
                             size_t errlen) {
    struct json_object *root = NULL;
    int rc = json_file_read(path, path, REMEDIES_MAX_BYTES, &root, err, errlen);
    if (rc == 0)
        rc = remedies_add(rs, root, path, replace, err, errlen);
    json_object_put(root);
    if (rc == 0)
        remedies_origin_add(rs, path);
    return rc;
}

/* The shipped rules: the installed file when there is one, else the built-in copy. */
static int remedies_add_shipped(struct remedies *rs, char *err, size_t errlen) {
    bool replace = false;
    const char *installed = RS_DATADIR "/remedies.json";
    if (access(installed, R_OK) == 0)
        return remedies_add_file(rs, installed, &replace, err, errlen);
    struct json_object *root = json_tokener_parse(remedies_builtin_json);
    int rc = root ? remedies_add(rs, root, "built-in remedies", &replace, err, errlen)
                  : errbuf_set(err, errlen, -EINVAL, "built-in remedies: invalid JSON");
    json_object_put(root);
    if (rc == 0)
        remedies_origin_add(rs, "built-in");
    return rc;
}

int remedies_load_file(struct remedies **out, const char *path, char *err, size_t errlen) {
    struct remedies *rs = calloc(1, sizeof(*rs));
    bool replace = false;
    *out = NULL;
    if (!rs)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    int rc = remedies_add_file(rs, path, &replace, err, errlen);
    if (rc != 0) {
        remedies_free(rs);
        return rc;
    }
    *out = rs;
    return 0;
}

int remedies_load(struct remedies **out, const char *path, char *err, size_t errlen) {
    struct remedies *rs = calloc(1, sizeof(*rs));
    char def[1024];
    bool replace = false;
    int rc = 0;
    *out = NULL;
    if (!rs)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (!path && json_file_config_dir(def, sizeof(def) - 16) == 0) {
        strcat(def, "/remedies.json");
        if (access(def, F_OK) == 0)
            path = def;
    }
    if (path)
        rc = remedies_add_file(rs, path, &replace, err, errlen);
    if (rc == 0 && !replace)
        rc = remedies_add_shipped(rs, err, errlen);
    if (rc != 0) {
        remedies_free(rs);
        return rc;
    }
    *out = rs;
    return 0;
}

static bool remedies_applies(const struct remedy_rule *r, const struct kmsg_event *e) {
    if (r->category >= 0 && r->category != e->category)
        return false;
    bool ok = r->n_match == 0;
    for (int k = 0; k < r->n_match && !ok; k++)
        ok = strstr(e->message, r->match[k]) != NULL;
    if (!ok || r->n_xid == 0)
        return ok;
    for (int k = 0; k < r->n_xid; k++)
        if ((e->has & KMSG_HAS(XID)) && e->xid == r->xid[k])
            return true;
    return false;
}

const struct remedy *remedies_find(const struct remedies *rs, const struct kmsg_event *e) {
    for (size_t i = 0; rs && e->category != KMSG_CAT_NONE && i < rs->n; i++)
        if (remedies_applies(&rs->rules[i], e))
            return &rs->rules[i].r;
    return NULL;
}

size_t remedies_count(const struct remedies *rs) {
    return rs ? rs->n : 0;
}

const char *remedies_origin(const struct remedies *rs) {
    return rs ? rs->origin : "";
}

void remedies_free(struct remedies *rs) {
    if (!rs)
        return;
    free(rs->rules);
    free(rs);
}
