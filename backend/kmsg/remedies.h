/* What is known to help with a kernel-log event: rules from a JSON file (data, not code)
 * mapping a category, and optionally message substrings or Xid numbers, to a title, an
 * explanation and actions. The user's file ($XDG_CONFIG_HOME/ringside/remedies.json, or
 * --kmsg-rules FILE) is consulted before the shipped one. */
#ifndef RINGSIDE_BACKEND_KMSG_REMEDIES_H
#define RINGSIDE_BACKEND_KMSG_REMEDIES_H

#include "backend/kmsg/kmsg.h"

#include <stddef.h>

#define REMEDY_ACTIONS 6
#define REMEDY_MATCHES 8
#define REMEDY_XIDS    16

struct remedy {
    char title[96];
    char explanation[768];
    char actions[REMEDY_ACTIONS][200];
    int n_actions;
};

struct remedies;

/* Load the rules: path (must exist) or, when NULL, the user's default file if it exists;
 * then the shipped rules (the installed remedies.json, else the copy built in), unless the
 * user's file says "replace": true. 0, or -errno with err "FILE: rules[K].key: reason" or
 * "FILE: invalid JSON at line L, column C: why". */
int remedies_load(struct remedies **out, const char *path, char *err, size_t errlen);

/* Check a rules file (for tests and `kmsg classify --rules`): as remedies_load with only that
 * file. */
int remedies_load_file(struct remedies **out, const char *path, char *err, size_t errlen);

/* The first rule that applies to e (its category or "*", any of its substrings in the
 * message, any of its Xid numbers), or NULL. */
const struct remedy *remedies_find(const struct remedies *r, const struct kmsg_event *e);

/* Rules loaded, and where from ("~/.config/ringside/remedies.json, built-in"). */
size_t remedies_count(const struct remedies *r);
const char *remedies_origin(const struct remedies *r);

void remedies_free(struct remedies *r);

/* The shipped rules, compiled in from backend/kmsg/remedies.json. */
extern const char remedies_builtin_json[];

#endif
