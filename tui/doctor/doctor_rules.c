/* ringside doctor: known-bad combinations of GPU, ROCm, PyTorch, kernel and environment, as
 * data (tui/doctor/doctor_rules.json, built in; installed to share/ringside).
 *
 * Schema (version 1):
 *   {"version": 1, "comment": "...", "rules": [RULE, ...]}
 *   RULE: {
 *     "id":     "hipblas-alloc-gfx1100"   short name, the row's name (required, < 48 bytes)
 *     "title":  "..."                     one line (required)
 *     "status": "fail" | "warn"           (required)
 *     "when":   {                         every condition given must hold (required, non-empty)
 *        "vendor": "amd" | "nvidia"       a GPU of that vendor
 *        "arch":   ["gfx1100", "gfx11*"]  a GPU (of the vendor, when given) with an arch listed;
 *                                         an entry ending in '*' is a prefix
 *        "rocm", "torch", "kernel", "amdgpu", "nvidia":
 *                  [">=6.0", "<6.3"]      bounds on that version (<, <=, >, >=, =, !=); a
 *                                         version not found never matches
 *        "env":    {"NAME": "set" | "unset" | "=VALUE" | "!=VALUE"}   ("!=" holds when unset)
 *     }
 *     "remedy": "..."                     what to do (required)
 *     "source": "https://... or a named report and its entry"   where it is known from (required)
 *     "comment": "..."                    ignored
 *   }
 * Unknown keys are errors, so a typo never disables a condition silently. */
#include "backend/core/errbuf.h"
#include "backend/core/json_file.h"
#include "tui/doctor/doctor.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOCTOR_RULES_MAX_BYTES (1 << 20)
#define DOCTOR_RULE_ARCHS      12
#define DOCTOR_RULE_BOUNDS     4
#define DOCTOR_RULE_ENVS       4

/* The shipped rules, compiled in from tui/doctor/doctor_rules.json. */
extern const char doctor_rules_builtin_json[];

enum doctor_rules_fact { DR_ROCM, DR_TORCH, DR_KERNEL, DR_AMDGPU, DR_NVIDIA, DR_FACT_COUNT };

static const char *const doctor_rules_fact_keys[DR_FACT_COUNT] = {"rocm", "torch", "kernel",
                                                                  "amdgpu", "nvidia"};
static const char *const doctor_rules_fact_shown[DR_FACT_COUNT] = {"ROCm", "PyTorch", "kernel",
                                                                   "amdgpu", "NVIDIA driver"};

enum doctor_rules_op { DR_LT, DR_LE, DR_GT, DR_GE, DR_EQ, DR_NE };

struct doctor_rules_bound {
    enum doctor_rules_op op;
    char version[24];
};

enum doctor_rules_env_kind { DR_ENV_SET, DR_ENV_UNSET, DR_ENV_EQ, DR_ENV_NE };

struct doctor_rules_env {
    char name[64];
    enum doctor_rules_env_kind kind;
    char value[64];
};

struct doctor_rule {
    char id[48];
    char title[96];
    enum doctor_status status;
    int vendor; /* 0 any, 1 amd, 2 nvidia */
    char arch[DOCTOR_RULE_ARCHS][32];
    int n_arch;
    struct doctor_rules_bound bound[DR_FACT_COUNT][DOCTOR_RULE_BOUNDS];
    int n_bound[DR_FACT_COUNT];
    struct doctor_rules_env env[DOCTOR_RULE_ENVS];
    int n_env;
    char remedy[300];
    char source[200];
};

struct doctor_rules {
    struct doctor_rule *rules;
    size_t n;
};

/* A string member into dst; missing is an error when required. */
static int doctor_rules_str(struct json_object *o, const char *key, char *dst, size_t cap,
                            bool required, const char *where, char *err, size_t errlen) {
    struct json_object *v = NULL;
    dst[0] = '\0';
    if (!json_object_object_get_ex(o, key, &v) || json_object_get_type(v) == json_type_null)
        return required ? errbuf_set(err, errlen, -EINVAL, "%s: %s: missing", where, key) : 0;
    if (!json_object_is_type(v, json_type_string))
        return errbuf_set(err, errlen, -EINVAL, "%s: %s: not a string", where, key);
    const char *s = json_object_get_string(v);
    size_t n = strlen(s);
    if (n == 0 && required)
        return errbuf_set(err, errlen, -EINVAL, "%s: %s: empty", where, key);
    if (n >= cap)
        return errbuf_set(err, errlen, -EINVAL, "%s: %s: longer than %zu bytes", where, key,
                          cap - 1);
    memcpy(dst, s, n + 1);
    return 0;
}

static bool doctor_rules_known(const char *key, const char *const *keys, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    return false;
}

/* "<6.3", ">=5.7", "=2.5.1", "!=6.2": an operator, then digits and single dots. */
static bool doctor_rules_parse_bound(const char *s, struct doctor_rules_bound *b) {
    static const struct {
        const char *text;
        enum doctor_rules_op op;
    } ops[] = {{"<=", DR_LE}, {">=", DR_GE}, {"!=", DR_NE}, {"==", DR_EQ},
               {"<", DR_LT},  {">", DR_GT},  {"=", DR_EQ}};
    size_t skip = 0;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && !skip; i++)
        if (strncmp(s, ops[i].text, strlen(ops[i].text)) == 0) {
            b->op = ops[i].op;
            skip = strlen(ops[i].text);
        }
    const char *v = s + skip;
    size_t n = strlen(v);
    if (!skip || n == 0 || n >= sizeof(b->version) || !isdigit((unsigned char)v[0]) ||
        !isdigit((unsigned char)v[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)v[i]) && !(v[i] == '.' && v[i + 1] != '.'))
            return false;
    memcpy(b->version, v, n + 1);
    return true;
}

/* A list of strings (or one string) into the caller's slots through fn. */
static int doctor_rules_list(struct json_object *v, const char *what, int max, const char *where,
                             char *err, size_t errlen, struct json_object **items, int *n) {
    *n = 0;
    if (json_object_is_type(v, json_type_string)) {
        items[(*n)++] = v;
        return 0;
    }
    size_t len = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
    if (!json_object_is_type(v, json_type_array) || len == 0 || len > (size_t)max)
        return errbuf_set(err, errlen, -EINVAL, "%s: when.%s: not a list of 1 to %d strings", where,
                          what, max);
    for (size_t i = 0; i < len; i++) {
        items[i] = json_object_array_get_idx(v, i);
        if (!json_object_is_type(items[i], json_type_string))
            return errbuf_set(err, errlen, -EINVAL, "%s: when.%s[%zu]: not a string", where, what,
                              i);
    }
    *n = (int)len;
    return 0;
}

static int doctor_rules_env(struct json_object *v, struct doctor_rule *r, const char *where,
                            char *err, size_t errlen) {
    if (!json_object_is_type(v, json_type_object) || json_object_object_length(v) == 0 ||
        json_object_object_length(v) > DOCTOR_RULE_ENVS)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: when.env: not an object of 1 to %d \"NAME\": \"set|unset|=VALUE|"
                          "!=VALUE\" members",
                          where, DOCTOR_RULE_ENVS);
    json_object_object_foreach(v, name, cond) {
        struct doctor_rules_env *e = &r->env[r->n_env];
        const char *s =
            json_object_is_type(cond, json_type_string) ? json_object_get_string(cond) : NULL;
        if (!name[0] || strlen(name) >= sizeof(e->name) || strchr(name, '='))
            return errbuf_set(err, errlen, -EINVAL, "%s: when.env: '%.64s' is not a variable name",
                              where, name);
        snprintf(e->name, sizeof(e->name), "%s", name);
        const char *val = NULL;
        if (s && strcmp(s, "set") == 0)
            e->kind = DR_ENV_SET;
        else if (s && strcmp(s, "unset") == 0)
            e->kind = DR_ENV_UNSET;
        else if (s && strncmp(s, "!=", 2) == 0)
            e->kind = DR_ENV_NE, val = s + 2;
        else if (s && s[0] == '=')
            e->kind = DR_ENV_EQ, val = s + 1;
        else
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: when.env.%s: not \"set\", \"unset\", \"=VALUE\" or \"!=VALUE\"",
                              where, e->name);
        if (val && strlen(val) >= sizeof(e->value))
            return errbuf_set(err, errlen, -EINVAL, "%s: when.env.%s: value longer than %zu bytes",
                              where, e->name, sizeof(e->value) - 1);
        snprintf(e->value, sizeof(e->value), "%s", val ? val : "");
        r->n_env++;
    }
    return 0;
}

static int doctor_rules_when(struct json_object *w, struct doctor_rule *r, const char *where,
                             char *err, size_t errlen) {
    static const char *const keys[] = {"vendor", "arch",   "rocm",   "torch",
                                       "kernel", "amdgpu", "nvidia", "env"};
    struct json_object *items[DOCTOR_RULE_ARCHS];
    int n = 0;
    if (!w)
        return errbuf_set(err, errlen, -EINVAL, "%s: when: missing", where);
    if (!json_object_is_type(w, json_type_object) || json_object_object_length(w) == 0)
        return errbuf_set(err, errlen, -EINVAL, "%s: when: not an object with conditions", where);
    json_object_object_foreach(w, key, val) {
        int rc = 0;
        if (!doctor_rules_known(key, keys, sizeof(keys) / sizeof(keys[0])))
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: when: unknown key '%.48s' (known: vendor, arch, rocm, torch, "
                              "kernel, amdgpu, nvidia, env)",
                              where, key);
        if (strcmp(key, "vendor") == 0) {
            const char *s =
                json_object_is_type(val, json_type_string) ? json_object_get_string(val) : "";
            r->vendor = strcmp(s, "amd") == 0 ? 1 : strcmp(s, "nvidia") == 0 ? 2 : 0;
            if (!r->vendor)
                return errbuf_set(err, errlen, -EINVAL,
                                  "%s: when.vendor: not \"amd\" or \"nvidia\"", where);
        } else if (strcmp(key, "arch") == 0) {
            rc = doctor_rules_list(val, "arch", DOCTOR_RULE_ARCHS, where, err, errlen, items, &n);
            for (int i = 0; rc == 0 && i < n; i++) {
                const char *s = json_object_get_string(items[i]);
                if (!s[0] || strlen(s) >= sizeof(r->arch[0]) || (s[0] == '*'))
                    return errbuf_set(err, errlen, -EINVAL,
                                      "%s: when.arch[%d]: '%.40s' is not an arch or prefix*", where,
                                      i, s);
                snprintf(r->arch[r->n_arch++], sizeof(r->arch[0]), "%s", s);
            }
        } else if (strcmp(key, "env") == 0) {
            rc = doctor_rules_env(val, r, where, err, errlen);
        } else {
            int f = 0;
            while (strcmp(doctor_rules_fact_keys[f], key) != 0)
                f++;
            rc = doctor_rules_list(val, key, DOCTOR_RULE_BOUNDS, where, err, errlen, items, &n);
            for (int i = 0; rc == 0 && i < n; i++) {
                const char *s = json_object_get_string(items[i]);
                if (!doctor_rules_parse_bound(s, &r->bound[f][i]))
                    return errbuf_set(err, errlen, -EINVAL,
                                      "%s: when.%s: '%.40s' is not a version bound such as "
                                      "\"<6.3\" or \">=5.7\"",
                                      where, key, s);
                r->n_bound[f] = i + 1;
            }
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int doctor_rules_rule(struct json_object *o, size_t k, struct doctor_rule *r, char *err,
                             size_t errlen) {
    static const char *const keys[] = {"id",     "title",  "status", "when",
                                       "remedy", "source", "comment"};
    char where[96], status[8];
    struct json_object *when = NULL;
    memset(r, 0, sizeof(*r));
    snprintf(where, sizeof(where), "rules[%zu]", k);
    if (!json_object_is_type(o, json_type_object))
        return errbuf_set(err, errlen, -EINVAL, "%s: not an object", where);
    int rc = doctor_rules_str(o, "id", r->id, sizeof(r->id), true, where, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(where, sizeof(where), "rules[%zu] '%s'", k, r->id);
    json_object_object_foreach(o, key, val) {
        (void)val;
        if (!doctor_rules_known(key, keys, sizeof(keys) / sizeof(keys[0])))
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: unknown key '%.48s' (known: id, title, status, when, remedy, "
                              "source, comment)",
                              where, key);
    }
    rc = doctor_rules_str(o, "title", r->title, sizeof(r->title), true, where, err, errlen);
    if (rc == 0)
        rc = doctor_rules_str(o, "status", status, sizeof(status), true, where, err, errlen);
    if (rc == 0 && strcmp(status, "fail") != 0 && strcmp(status, "warn") != 0)
        rc = errbuf_set(err, errlen, -EINVAL, "%s: status: '%s' is not \"fail\" or \"warn\"", where,
                        status);
    r->status = strcmp(status, "fail") == 0 ? DOCTOR_FAIL : DOCTOR_WARN;
    if (rc == 0)
        rc = doctor_rules_str(o, "remedy", r->remedy, sizeof(r->remedy), true, where, err, errlen);
    if (rc == 0)
        rc = doctor_rules_str(o, "source", r->source, sizeof(r->source), true, where, err, errlen);
    if (rc == 0) {
        json_object_object_get_ex(o, "when", &when);
        rc = doctor_rules_when(when, r, where, err, errlen);
    }
    return rc;
}

/* The rules of one parsed file; shown names it in errors. */
static int doctor_rules_parse(struct doctor_rules *rs, struct json_object *root, const char *shown,
                              char *err, size_t errlen) {
    static const char *const keys[] = {"version", "comment", "rules"};
    struct json_object *rules = NULL, *ver = NULL;
    char why[384];
    if (!json_object_is_type(root, json_type_object) ||
        !json_object_object_get_ex(root, "rules", &rules) ||
        !json_object_is_type(rules, json_type_array))
        return errbuf_set(err, errlen, -EINVAL, "%s: expected {\"version\": 1, \"rules\": [...]}",
                          shown);
    json_object_object_foreach(root, key, val) {
        (void)val;
        if (!doctor_rules_known(key, keys, sizeof(keys) / sizeof(keys[0])))
            return errbuf_set(err, errlen, -EINVAL, "%s: unknown key '%.48s'", shown, key);
    }
    if (json_object_object_get_ex(root, "version", &ver) &&
        (!json_object_is_type(ver, json_type_int) || json_object_get_int(ver) != 1))
        return errbuf_set(err, errlen, -EINVAL, "%s: version: only version 1 is understood", shown);
    size_t len = json_object_array_length(rules);
    rs->rules = len ? calloc(len, sizeof(*rs->rules)) : NULL;
    if (len && !rs->rules)
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown);
    for (size_t i = 0; i < len; i++) {
        if (doctor_rules_rule(json_object_array_get_idx(rules, i), i, &rs->rules[i], why,
                              sizeof(why)) != 0)
            return errbuf_set(err, errlen, -EINVAL, "%s: %s", shown, why);
        for (size_t j = 0; j < i; j++)
            if (strcmp(rs->rules[j].id, rs->rules[i].id) == 0)
                return errbuf_set(err, errlen, -EINVAL, "%s: rules[%zu] '%s': id used twice", shown,
                                  i, rs->rules[i].id);
        rs->n++;
    }
    return 0;
}

int doctor_rules_load(struct doctor_rules **out, const char *path, char *err, size_t errlen) {
    struct doctor_rules *rs = calloc(1, sizeof(*rs));
    struct json_object *root = NULL;
    const char *installed = RS_DATADIR "/doctor_rules.json";
    int rc;
    *out = NULL;
    if (!rs)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (!path && access(installed, R_OK) == 0)
        path = installed;
    if (path) {
        rc = json_file_read(path, path, DOCTOR_RULES_MAX_BYTES, &root, err, errlen);
        if (rc == 0)
            rc = doctor_rules_parse(rs, root, path, err, errlen);
    } else {
        root = json_tokener_parse(doctor_rules_builtin_json);
        rc = root ? doctor_rules_parse(rs, root, "built-in doctor rules", err, errlen)
                  : errbuf_set(err, errlen, -EINVAL, "built-in doctor rules: invalid JSON");
    }
    json_object_put(root);
    if (rc != 0) {
        doctor_rules_free(rs);
        return rc;
    }
    *out = rs;
    return 0;
}

void doctor_rules_free(struct doctor_rules *rs) {
    if (!rs)
        return;
    free(rs->rules);
    free(rs);
}

static bool doctor_rules_arch_match(const struct doctor_rule *r, const char *arch) {
    if (r->n_arch == 0)
        return true;
    for (int i = 0; i < r->n_arch; i++) {
        size_t n = strlen(r->arch[i]);
        if (r->arch[i][n - 1] == '*' ? strncmp(arch, r->arch[i], n - 1) == 0
                                     : strcmp(arch, r->arch[i]) == 0)
            return true;
    }
    return false;
}

/* The first GPU the rule's vendor and arch conditions accept (or NULL). */
static const struct doctor_gpu *doctor_rules_gpu(const struct doctor_rule *r,
                                                 const struct doctor_env *e) {
    for (size_t i = 0; i < e->n_gpus && i < DOCTOR_MAX_GPUS; i++) {
        const struct doctor_gpu *g = &e->gpus[i];
        if ((r->vendor == 1 && !g->amd) || (r->vendor == 2 && !g->nvidia))
            continue;
        if (r->n_arch && !g->arch[0])
            continue;
        if (doctor_rules_arch_match(r, g->arch))
            return g;
    }
    return NULL;
}

static bool doctor_rules_bound_holds(const struct doctor_rules_bound *b, const char *v) {
    int c = doctor_version_cmp(v, b->version);
    switch (b->op) {
    case DR_LT:
        return c < 0;
    case DR_LE:
        return c <= 0;
    case DR_GT:
        return c > 0;
    case DR_GE:
        return c >= 0;
    case DR_EQ:
        return c == 0;
    case DR_NE:
        return c != 0;
    }
    return false;
}

static const char *doctor_rules_fact(const struct doctor_facts *f, int k) {
    switch (k) {
    case DR_ROCM:
        return f->rocm;
    case DR_TORCH:
        return f->torch;
    case DR_KERNEL:
        return f->kernel;
    case DR_AMDGPU:
        return f->amdgpu;
    default:
        return f->nvidia;
    }
}

static bool doctor_rules_env_holds(const struct doctor_rules_env *c, const struct doctor_env *e) {
    const char *v = doctor_getenv(e, c->name);
    switch (c->kind) {
    case DR_ENV_SET:
        return v != NULL;
    case DR_ENV_UNSET:
        return v == NULL;
    case DR_ENV_EQ:
        return v && strcmp(v, c->value) == 0;
    case DR_ENV_NE:
        return !v || strcmp(v, c->value) != 0;
    }
    return false;
}

static void doctor_rules_append(char *buf, size_t cap, bool *first, const char *piece) {
    size_t n = strlen(buf);
    if (n + 1 >= cap)
        return;
    snprintf(buf + n, cap - n, "%s%s", !n ? "" : *first ? " with " : " and ", piece);
    *first = false;
}

/* Whether r matches; what matched ("gfx1100 with ROCm 6.2.4 and PyTorch 2.5.1") into what. */
static bool doctor_rules_match(const struct doctor_rule *r, const struct doctor_env *e,
                               const struct doctor_facts *f, char *what, size_t cap) {
    const struct doctor_gpu *g = NULL;
    bool first = true;
    char piece[160];
    what[0] = '\0';
    if (r->vendor || r->n_arch) {
        if (!(g = doctor_rules_gpu(r, e)))
            return false;
        snprintf(what, cap, "%s", g->arch[0] ? g->arch : g->name[0] ? g->name : g->pci);
    }
    for (int k = 0; k < DR_FACT_COUNT; k++) {
        const char *v = doctor_rules_fact(f, k);
        if (r->n_bound[k] && !isdigit((unsigned char)v[0]))
            return false;
        for (int i = 0; i < r->n_bound[k]; i++)
            if (!doctor_rules_bound_holds(&r->bound[k][i], v))
                return false;
        if (r->n_bound[k]) {
            snprintf(piece, sizeof(piece), "%s %.64s", doctor_rules_fact_shown[k], v);
            doctor_rules_append(what, cap, &first, piece);
        }
    }
    for (int i = 0; i < r->n_env; i++) {
        const struct doctor_rules_env *c = &r->env[i];
        if (!doctor_rules_env_holds(c, e))
            return false;
        const char *v = doctor_getenv(e, c->name);
        if (v)
            snprintf(piece, sizeof(piece), "%s=%.80s", c->name, v);
        else
            snprintf(piece, sizeof(piece), "%s unset", c->name);
        doctor_rules_append(what, cap, &first, piece);
    }
    if (!what[0])
        snprintf(what, cap, "%s", r->title);
    return true;
}

void doctor_check_rules(const struct doctor_rules *rs, const struct doctor_env *e,
                        const struct doctor_facts *f, struct doctor_report *r) {
    static const char group[] = "known issues";
    size_t hits = 0;
    char what[256];
    if (!rs) {
        doctor_remedy(doctor_add(r, group, "known-bad combinations", DOCTOR_SKIP, "no rules"),
                      "the rules file could not be loaded");
        return;
    }
    for (size_t i = 0; i < rs->n; i++) {
        const struct doctor_rule *k = &rs->rules[i];
        if (!doctor_rules_match(k, e, f, what, sizeof(what)))
            continue;
        hits++;
        doctor_remedy(doctor_add(r, group, k->id, k->status, "%.*s", (int)sizeof(what) - 1, what),
                      "%.*s (source: %.*s)", (int)sizeof(k->remedy) - 1, k->remedy,
                      (int)sizeof(k->source) - 1, k->source);
    }
    if (hits == 0)
        doctor_add(r, group, "no known-bad combination", DOCTOR_OK, "%zu rule%s checked", rs->n,
                   rs->n == 1 ? "" : "s");
}
