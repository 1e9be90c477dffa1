/* The --inject kmsg:FILE replay schedule: lines and their due times after the start. */
#include "backend/kmsg/kmsg_inject.h"

#include "backend/core/errbuf.h"
#include "backend/kmsg/kmsg_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A saved /dev/kmsg record, else a dmesg / journalctl text line (as the watcher reads files). */
static void kmsg_inject_parse_line(const char *text, size_t n, struct kmsg_line *out) {
    if (kmsg_parse_record(text, n, out) != 0)
        kmsg_parse_text(text, n, out);
}

/* Lines that feed nothing: blank ones, and a saved record's " KEY=VALUE" dictionary lines. */
static bool kmsg_inject_skip(const char *text, size_t n) {
    while (n > 0 && (text[n - 1] == '\r' || text[n - 1] == ' '))
        n--;
    return n == 0 || (text[0] == ' ' && memchr(text, '=', n) != NULL);
}

/* The gap from the previous timestamped line: 0 backwards, at most KMSG_INJECT_GAP_MAX_NS. */
static uint64_t kmsg_inject_gap(uint64_t prev_ns, uint64_t ts_ns) {
    uint64_t gap = ts_ns > prev_ns ? ts_ns - prev_ns : 0;
    return gap < KMSG_INJECT_GAP_MAX_NS ? gap : KMSG_INJECT_GAP_MAX_NS;
}

static int kmsg_inject_too_big(char *err, size_t errlen) {
    return errbuf_set(err, errlen, -EFBIG, "larger than the %u MiB allowed",
                      KMSG_INJECT_MAX_BYTES >> 20);
}

/* Index s->text (len bytes) into lines with due times. 0, -EFBIG or -ENOMEM with err. */
static int kmsg_inject_index(struct kmsg_inject *s, size_t len, char *err, size_t errlen) {
    size_t total = 0;
    if (len > KMSG_INJECT_MAX_BYTES)
        return kmsg_inject_too_big(err, errlen);
    for (const char *p = s->text, *end = s->text + len; p < end; total++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    if (total > KMSG_INJECT_MAX_LINES)
        return errbuf_set(err, errlen, -EFBIG, "%zu lines, more than the %u allowed", total,
                          KMSG_INJECT_MAX_LINES);
    if (total > 0 && !(s->lines = calloc(total, sizeof(*s->lines))))
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    uint64_t due = 0, prev_ts = 0;
    bool seen_ts = false;
    const char *p = s->text, *end = s->text + len;
    for (uint32_t lineno = 1; p < end; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        struct kmsg_line l;
        if (!kmsg_inject_skip(p, n)) {
            kmsg_inject_parse_line(p, n, &l);
            if (l.has_ts && seen_ts)
                due += kmsg_inject_gap(prev_ts, l.ts_ns);
            if (l.has_ts) {
                prev_ts = l.ts_ns;
                seen_ts = true;
            }
            s->lines[s->n++] = (struct kmsg_inject_line){.due_ns = due,
                                                         .off = (uint32_t)(p - s->text),
                                                         .len = (uint32_t)n,
                                                         .lineno = lineno};
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int kmsg_inject_parse(struct kmsg_inject *s, const char *buf, size_t n, char *err, size_t errlen) {
    memset(s, 0, sizeof(*s));
    if (n > KMSG_INJECT_MAX_BYTES) /* before copying it */
        return kmsg_inject_too_big(err, errlen);
    if (!(s->text = malloc(n + 1)))
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    memcpy(s->text, buf, n);
    s->text[n] = '\0';
    int rc = kmsg_inject_index(s, n, err, errlen);
    if (rc != 0)
        kmsg_inject_fini(s);
    return rc;
}

/* Up to cap bytes of fd into buf; the count read, or -errno. */
static ssize_t kmsg_inject_read(int fd, char *buf, size_t cap) {
    size_t got = 0;
    while (got < cap) {
        ssize_t k = read(fd, buf + got, cap - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* The whole regular file at path into *buf (malloc'ed, one spare byte for a NUL), its size in
 * *len; one byte past its size is asked for, so a file that grew past the limit since fstat is
 * still caught. 0 or -errno with err set. */
static int kmsg_inject_slurp(const char *path, char **buf, size_t *len, char *err, size_t errlen) {
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block the open */
    if (fd < 0)
        return errbuf_set(err, errlen, -errno, "%s", strerror(errno));
    int rc = 0;
    *buf = NULL;
    if (fstat(fd, &st) != 0)
        rc = errbuf_set(err, errlen, -errno, "%s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = errbuf_set(err, errlen, -EINVAL, "not a regular file");
    else if (st.st_size > (off_t)KMSG_INJECT_MAX_BYTES)
        rc = kmsg_inject_too_big(err, errlen);
    else if (!(*buf = malloc((size_t)st.st_size + 2)))
        rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
    ssize_t n = rc == 0 ? kmsg_inject_read(fd, *buf, (size_t)st.st_size + 1) : 0;
    close(fd);
    if (n < 0) {
        free(*buf);
        *buf = NULL;
        return errbuf_set(err, errlen, (int)n, "%s", strerror((int)-n));
    }
    *len = (size_t)n;
    return rc;
}

int kmsg_inject_load(struct kmsg_inject *s, const char *path, char *err, size_t errlen) {
    char why[160] = "";
    size_t len = 0;
    memset(s, 0, sizeof(*s));
    int rc = kmsg_inject_slurp(path, &s->text, &len, why, sizeof(why));
    if (rc == 0) {
        s->text[len] = '\0';
        rc = kmsg_inject_index(s, len, why, sizeof(why));
    }
    if (rc != 0) {
        kmsg_inject_fini(s);
        return errbuf_set(err, errlen, rc, "--inject kmsg:%s: %s", path, why);
    }
    return 0;
}

void kmsg_inject_fini(struct kmsg_inject *s) {
    free(s->text);
    free(s->lines);
    memset(s, 0, sizeof(*s));
}

const struct kmsg_inject_line *kmsg_inject_due(struct kmsg_inject *s, uint64_t t_ns) {
    if (s->next >= s->n || s->lines[s->next].due_ns > t_ns)
        return NULL;
    return &s->lines[s->next++];
}

uint64_t kmsg_inject_next_ns(const struct kmsg_inject *s) {
    return s->next < s->n ? s->lines[s->next].due_ns : UINT64_MAX;
}

uint64_t kmsg_inject_span_ns(const struct kmsg_inject *s) {
    return s->n > 0 ? s->lines[s->n - 1].due_ns : 0;
}

void kmsg_inject_line(const struct kmsg_inject *s, const struct kmsg_inject_line *l,
                      struct kmsg_line *out) {
    kmsg_inject_parse_line(s->text + l->off, l->len, out);
    out->has_ts = false;
    out->ts_ns = 0;
}
