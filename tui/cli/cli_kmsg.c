/* `ringside kmsg classify`: classify a kernel log (or a runtime's stderr) and print one JSON
 * object per recognised event, or with --all one per input line. */
#include "backend/core/errbuf.h"
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_json.h"
#include "backend/kmsg/kmsg_lines.h"
#include "backend/kmsg/kmsg_parse.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/kmsg/remedies.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_args.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_KMSG_WINDOW 64 /* lines held while a group is open (> KMSG_GROUP_SPAN) */

/* What one input line prints: its event, "none", "part_of" a group, or nothing yet. */
struct cli_kmsg_slot {
    enum { CLI_SLOT_WAIT, CLI_SLOT_NONE, CLI_SLOT_PART, CLI_SLOT_EVENT } kind;
    uint32_t part_of;
    char json[2048];
};

struct cli_kmsg {
    bool all;
    const char *rules_path;
    const char *input;
    struct remedies *rules;
    struct kmsg_classifier cls;
    uint32_t lineno;  /* lines read */
    uint32_t printed; /* lines whose output is out (they are printed in input order) */
    struct cli_kmsg_slot slots[CLI_KMSG_WINDOW];
};

static int cli_kmsg_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_kmsg *k = ctx;
    if (id == CLI_ARGS_OPERAND && k->input)
        return errbuf_set(err, n, -EINVAL, "unexpected argument '%s' (one FILE at a time)", v);
    if (id == CLI_ARGS_OPERAND)
        k->input = v;
    else if (id == CLI_O_KMSG_ALL)
        k->all = true;
    else if (id == CLI_O_KMSG_RULES)
        k->rules_path = v;
    return 0;
}

static struct cli_kmsg_slot *cli_kmsg_slot(struct cli_kmsg *k, uint32_t line) {
    return &k->slots[line % CLI_KMSG_WINDOW];
}

/* Print every line whose output is known, in order, up to the first still waiting. */
static void cli_kmsg_print_ready(struct cli_kmsg *k) {
    while (k->printed < k->lineno) {
        uint32_t line = k->printed + 1;
        struct cli_kmsg_slot *s = cli_kmsg_slot(k, line);
        if (s->kind == CLI_SLOT_WAIT)
            break;
        if (s->kind == CLI_SLOT_EVENT)
            printf("%s\n", s->json);
        else if (k->all && s->kind == CLI_SLOT_PART)
            printf("{\"line\":%u,\"category\":\"none\",\"part_of\":%u}\n", line, s->part_of);
        else if (k->all)
            printf("{\"line\":%u,\"category\":\"none\"}\n", line);
        s->kind = CLI_SLOT_WAIT;
        k->printed = line;
    }
}

/* An event's object (and its folded lines' part_of) into their slots. */
static void cli_kmsg_event(struct cli_kmsg *k, const struct kmsg_event *e) {
    struct cli_kmsg_slot *s = cli_kmsg_slot(k, e->line);
    char members[1600];
    size_t len = kmsg_json_members(e, members, sizeof(members));
    const struct remedy *r = remedies_find(k->rules, e);
    char title[256] = "";
    size_t tn = 0;
    if (r)
        kmsg_json_string(title, sizeof(title), &tn, r->title);
    snprintf(s->json, sizeof(s->json), "{%.*s%s%s}", (int)len, members, r ? ",\"remedy\":" : "",
             title);
    s->kind = CLI_SLOT_EVENT;
    uint32_t n = 0;
    const uint32_t *folded = e->lines > 1 ? kmsg_classifier_folded(&k->cls, &n) : NULL;
    for (uint32_t i = 0; i < n; i++) {
        struct cli_kmsg_slot *f = cli_kmsg_slot(k, folded[i]);
        f->kind = CLI_SLOT_PART;
        f->part_of = e->line;
    }
}

/* A " KEY=VALUE" line after a /dev/kmsg record belongs to it. */
static bool cli_kmsg_dict_line(const char *s, size_t n) {
    return n > 1 && s[0] == ' ' && memchr(s, '=', n) != NULL && !memchr(s, ';', n);
}

/* Whether the open group holds line (as its first line or a folded one). */
static bool cli_kmsg_in_group(const struct cli_kmsg *k, uint32_t line) {
    const struct kmsg_event *p = kmsg_classifier_pending(&k->cls);
    if (!p)
        return false;
    if (p->line == line)
        return true;
    for (uint32_t i = 0; i < k->cls.n_folded; i++)
        if (k->cls.folded[i] == line)
            return true;
    return false;
}

static void cli_kmsg_line(void *ctx, const char *s, size_t n) {
    struct cli_kmsg *k = ctx;
    struct kmsg_line l;
    struct kmsg_event ev[2];
    k->lineno++;
    cli_kmsg_slot(k, k->lineno)->kind = CLI_SLOT_WAIT;
    if (cli_kmsg_dict_line(s, n) && k->lineno > 1)
        kmsg_parse_text("", 0, &l);
    else if (kmsg_parse_record(s, n, &l) != 0)
        kmsg_parse_text(s, n, &l);
    int got = kmsg_classifier_feed(&k->cls, &l, k->lineno, ev);
    for (int i = 0; i < got; i++)
        cli_kmsg_event(k, &ev[i]);
    struct cli_kmsg_slot *mine = cli_kmsg_slot(k, k->lineno);
    if (mine->kind == CLI_SLOT_WAIT && !cli_kmsg_in_group(k, k->lineno))
        mine->kind = CLI_SLOT_NONE;
    cli_kmsg_print_ready(k);
}

static int cli_kmsg_open(const char *path) {
    if (strcmp(path, "-") == 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        errno = EISDIR;
        return -1;
    }
    return fd;
}

static int cli_kmsg_run(struct cli_kmsg *k) {
    int fd = cli_kmsg_open(k->input);
    if (fd < 0) {
        fprintf(stderr, "ringside kmsg: %s: %s\n", k->input, strerror(errno));
        return RS_EXIT_USAGE;
    }
    static struct kmsg_lines lines;
    kmsg_lines_init(&lines);
    kmsg_classifier_init(&k->cls, KMSG_SRC_FILE, false);
    ssize_t r;
    while ((r = kmsg_lines_read(&lines, fd, cli_kmsg_line, k)) != 0) {
        if (r == -EINTR)
            continue;
        if (r < 0) {
            fprintf(stderr, "ringside kmsg: %s: %s\n", k->input, strerror((int)-r));
            if (fd > 0)
                close(fd);
            return RS_EXIT_USAGE;
        }
    }
    kmsg_lines_finish(&lines, cli_kmsg_line, k);
    struct kmsg_event last;
    const struct kmsg_event *open = kmsg_classifier_pending(&k->cls);
    uint32_t first = open ? open->line : 0, n_folded = k->cls.n_folded;
    uint32_t folded[KMSG_GROUP_SPAN];
    memcpy(folded, k->cls.folded, sizeof(folded));
    if (kmsg_classifier_flush(&k->cls, &last))
        cli_kmsg_event(k, &last);
    else if (first) /* a group that never became a failure: its lines are plain lines */
        for (uint32_t i = 0; i <= n_folded; i++)
            cli_kmsg_slot(k, i ? folded[i - 1] : first)->kind = CLI_SLOT_NONE;
    cli_kmsg_print_ready(k);
    if (fd > 0)
        close(fd);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ringside kmsg: cannot write the output: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

int cli_kmsg(int argc, char **argv) {
    static struct cli_kmsg k;
    memset(&k, 0, sizeof(k));
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        if (argc < 2)
            return cli_usage_error("kmsg", "missing verb 'classify'");
        return cli_optab_help(CLI_CMD_KMSG, stdout) == 0 ? 0 : 1;
    }
    if (strcmp(argv[1], "classify") != 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "unknown verb '%.60s' (the verb is classify)", argv[1]);
        return cli_usage_error("kmsg", msg);
    }
    /* "-": FILE, the one operand, comes to cli_kmsg_opt wherever it stands */
    int rc = cli_getopt_run(argc - 1, argv + 1, "kmsg", CLI_CMD_KMSG, true, cli_kmsg_opt, &k);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    if (!k.input)
        k.input = "-";
    char err[1024];
    if ((k.rules_path ? remedies_load(&k.rules, k.rules_path, err, sizeof(err))
                      : remedies_load(&k.rules, NULL, err, sizeof(err))) != 0) {
        fprintf(stderr, "ringside kmsg: %s\n", err);
        return RS_EXIT_USAGE;
    }
    rc = cli_kmsg_run(&k);
    remedies_free(k.rules);
    return rc;
}
