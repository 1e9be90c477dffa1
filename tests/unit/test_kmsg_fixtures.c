/* The classifier against the kernel-log fixtures: real lines from public bug reports and lines
 * built from the kernel's format strings, each with hand-written expectations (NAME.expect),
 * and benign driver chatter that must not be flagged. */
#include "backend/core/ev.h"
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_json.h"
#include "backend/kmsg/kmsg_parse.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(kmsg_fixtures, .timeout = 60);

#define FIX_MAX_EVENTS 512

struct fix_run {
    struct kmsg_event ev[FIX_MAX_EVENTS];
    size_t n;
};

static void fix_push(struct fix_run *r, const struct kmsg_event *e) {
    cr_assert_lt(r->n, FIX_MAX_EVENTS, "too many events");
    r->ev[r->n++] = *e;
}

/* Classify a fixture log: its "# " header lines count as lines but are not log input. */
static void fix_classify(const char *path, struct fix_run *r) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s: cannot open", path);
    struct kmsg_classifier c;
    kmsg_classifier_init(&c, KMSG_SRC_FILE, false);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint32_t lineno = 0;
    struct kmsg_event out[2];
    r->n = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        struct kmsg_line l;
        lineno++;
        bool header = line[0] == '#';
        kmsg_parse_text(header ? "" : line, header ? 0 : (size_t)n, &l);
        int got = kmsg_classifier_feed(&c, &l, lineno, out);
        for (int i = 0; i < got; i++)
            fix_push(r, &out[i]);
    }
    if (kmsg_classifier_flush(&c, &out[0]))
        fix_push(r, &out[0]);
    free(line);
    fclose(f);
}

/* An expected value against the event's JSON value of the same key. */
static bool fix_same(struct json_object *want, struct json_object *got) {
    if (!got)
        return false;
    if (json_object_is_type(want, json_type_int))
        return json_object_is_type(got, json_type_int) &&
               json_object_get_int64(want) == json_object_get_int64(got);
    return strcmp(json_object_get_string(want), json_object_get_string(got)) == 0;
}

static void fix_check_event(const char *name, struct json_object *want, const struct fix_run *r,
                            bool *used) {
    int line = json_object_get_int(json_object_object_get(want, "line"));
    const struct kmsg_event *e = NULL;
    size_t k = 0;
    for (; k < r->n && !e; k++)
        if ((int)r->ev[k].line == line && !used[k])
            e = &r->ev[k];
    cr_expect_not_null(e, "%s:%d: expected %s, found no event", name, line,
                       json_object_to_json_string(want));
    if (!e)
        return;
    used[k - 1] = true;
    char buf[2048];
    size_t len = kmsg_json_members(e, buf + 1, sizeof(buf) - 3);
    buf[0] = '{';
    memcpy(buf + 1 + len, "}", 2);
    struct json_object *got = json_tokener_parse(buf);
    cr_assert_not_null(got, "%s:%d: the event's JSON does not parse: %s", name, line, buf);
    json_object_object_foreach(want, key, val) {
        cr_expect(fix_same(val, json_object_object_get(got, key)), "%s:%d: %s: expected %s, got %s",
                  name, line, key, json_object_get_string(val),
                  json_object_get_string(json_object_object_get(got, key)));
    }
    json_object_put(got);
}

/* Check one fixture; per-category counts of its expected events go to counts. */
static void fix_check(const char *dir, const char *base, unsigned *counts) {
    char log[1400], exp[1400];
    snprintf(log, sizeof(log), "%s/%s.log", dir, base);
    snprintf(exp, sizeof(exp), "%s/%s.expect", dir, base);
    static struct fix_run r;
    fix_classify(log, &r);
    bool used[FIX_MAX_EVENTS] = {false};
    FILE *f = fopen(exp, "r");
    cr_assert_not_null(f, "%s: missing (every fixture .log has a .expect)", exp);
    char *line = NULL;
    size_t cap = 0;
    int expno = 0;
    while (getline(&line, &cap, f) >= 0) {
        expno++;
        if (strspn(line, " \t\r\n") == strlen(line))
            continue;
        struct json_object *want = json_tokener_parse(line);
        cr_assert_not_null(want, "%s:%d: not JSON", exp, expno);
        fix_check_event(base, want, &r, used);
        int cat = kmsg_category_from_name(
            json_object_get_string(json_object_object_get(want, "category")));
        cr_expect_gt(cat, 0, "%s:%d: unknown category", exp, expno);
        if (cat > 0)
            counts[cat]++;
        json_object_put(want);
    }
    free(line);
    fclose(f);
    for (size_t k = 0; k < r.n; k++)
        cr_expect(used[k], "%s:%u: unexpected %s event: %s", base, r.ev[k].line,
                  kmsg_category_name(r.ev[k].category), r.ev[k].message);
}

/* Every fixture in a directory; returns how many. */
static int fix_dir(const char *rel, unsigned *counts) {
    char dir[1024];
    rs_test_fixture(rel, dir, sizeof(dir));
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: cannot open", dir);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".log") != 0)
            continue;
        char base[256];
        snprintf(base, sizeof(base), "%.*s", (int)(len - 4), de->d_name);
        fix_check(dir, base, counts);
        n++;
    }
    closedir(d);
    return n;
}

Test(kmsg_fixtures, real_reports_classify_as_expected) {
    unsigned counts[KMSG_CAT_COUNT] = {0};
    cr_expect_gt(fix_dir("kmsg/real", counts), 10);
    /* at least five real examples of every category */
    for (unsigned c = 1; c < KMSG_CAT_COUNT; c++)
        cr_expect_geq(counts[c], 5, "only %u real %s events", counts[c], kmsg_category_name(c));
}

Test(kmsg_fixtures, kernel_format_strings_classify_as_expected) {
    unsigned counts[KMSG_CAT_COUNT] = {0};
    cr_expect_geq(fix_dir("kmsg/kernel", counts), 3);
}

Test(kmsg_fixtures, benign_driver_chatter_is_not_flagged) {
    unsigned counts[KMSG_CAT_COUNT] = {0};
    cr_expect_geq(fix_dir("kmsg/benign", counts), 3);
    for (unsigned c = 1; c < KMSG_CAT_COUNT; c++)
        cr_expect_eq(counts[c], 0, "a benign fixture expects a %s event", kmsg_category_name(c));
}
